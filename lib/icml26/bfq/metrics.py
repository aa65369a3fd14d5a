"""Sample-quality metrics of the toys: POT's sliced Wasserstein-2 distance."""
from __future__ import annotations

import numpy as np


def sliced_w2(x: np.ndarray, y: np.ndarray, projections: int = 256, seed: int = 0) -> float:
    """Sliced W2 between two point clouds (``ot.sliced_wasserstein_distance``, p = 2), fixed projections."""
    import ot

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"point clouds must be (n, d) with the same d, got {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("point clouds contain NaN or inf")
    return float(ot.sliced_wasserstein_distance(x, y, n_projections=projections, p=2, seed=seed))
