"""Stain optics: Beer-Lambert rendering with the Ruifrok-Johnston H/E/DAB matrix (brief 5.1) [ours].

An optical density (OD) image is a per-pixel mix of three stain vectors,
``OD = O_H h + O_E e + O_D d`` (rows of ``skimage.color.rgb_from_hed``), and the transmitted
image is ``I = 255 exp(-OD)`` (natural log, as skimage's `rgb2hed` assumes). `deconvolve` inverts it
with skimage's `rgb2hed`, so densities rendered here round-trip through the real library.
"""
from __future__ import annotations

import numpy as np
from skimage.color import rgb2hed, rgb_from_hed

STAINS = np.asarray(rgb_from_hed, dtype=float)  # rows: hematoxylin, eosin, DAB (unit-free OD per unit density)
LOG_ADJUST = -np.log(1e-6)
"""skimage's densities are natural-log OD divided by ln(1e6); ours are natural-log OD."""


def check_stain_matrix(stains: np.ndarray) -> np.ndarray:
    """Validate a (3, 3) stain matrix: finite, rows non-negative, well conditioned (invertible)."""
    stains = np.asarray(stains, dtype=float)
    if stains.shape != (3, 3):
        raise ValueError(f"stain matrix must be (3, 3) (rows H, E, DAB), got {stains.shape}")
    if not np.all(np.isfinite(stains)):
        raise ValueError("stain matrix contains NaN or inf")
    if np.linalg.cond(stains) > 1e6:
        raise ValueError(f"stain matrix is singular (condition number {np.linalg.cond(stains):.3g}): "
                         "the stains cannot be separated")
    return stains


def jitter_stains(rng: np.random.Generator, amount: float = 0.05) -> np.ndarray:
    """Per-slide stain variation: each stain vector perturbed by +-`amount` (relative), renormalised."""
    if not 0 <= amount < 0.5:
        raise ValueError(f"stain jitter must be in [0, 0.5), got {amount}")
    s = STAINS * (1 + rng.uniform(-amount, amount, size=STAINS.shape))
    s = s / np.linalg.norm(s, axis=1, keepdims=True) * np.linalg.norm(STAINS, axis=1, keepdims=True)
    return check_stain_matrix(s)


def render_od(densities: np.ndarray, stains: np.ndarray = STAINS) -> np.ndarray:
    """RGB image in [0, 1] from stain densities (..., 3) [H, E, DAB]: I = exp(-densities @ stains)."""
    densities = np.asarray(densities, dtype=float)
    if densities.shape[-1] != 3:
        raise ValueError(f"densities must end with 3 channels (H, E, DAB), got {densities.shape}")
    if not np.all(np.isfinite(densities)):
        raise ValueError("densities contain NaN or inf")
    stains = check_stain_matrix(stains)
    od = densities @ stains
    return np.exp(-od)


def deconvolve(rgb: np.ndarray) -> np.ndarray:
    """Stain densities (..., 3) [H, E, DAB] of an RGB image in [0, 1] via `skimage.color.rgb2hed`.

    skimage clips the image at 1e-6, takes ``log(rgb) / log(1e-6) @ hed_from_rgb`` and clips negative
    densities at 0; we rescale by ``LOG_ADJUST`` to natural-log OD units, so this is the exact inverse
    of `render_od` with the default stain matrix (for non-negative densities).
    """
    rgb = np.asarray(rgb, dtype=float)
    if rgb.ndim != 3 or rgb.shape[-1] != 3:
        raise ValueError(f"expected an (H, W, 3) RGB image, got {rgb.shape}")
    return rgb2hed(rgb) * LOG_ADJUST


def to_od(rgb: np.ndarray) -> np.ndarray:
    """Per-channel optical density -log(I) of an RGB image in (0, 1] (the encoders' input)."""
    return -np.log(np.clip(rgb, 1e-4, 1.0))
