"""Downstream and auxiliary metrics (paper §2.5, brief §5.3): linear probe, memorisation ratio,
nearest-neighbour retrieval by invariant vs residual features."""
from __future__ import annotations

import numpy as np
import torch


def _np(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def linear_probe(train_feats, train_y, test_feats, test_y, *, C: float = 1.0, max_iter: int = 2000) -> float:
    """Test accuracy of a multinomial logistic regression on standardised features (paper §2.5: sklearn
    logistic regression on training-set features; hyper-parameters fixed across sigma)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    xtr, xte = _np(train_feats), _np(test_feats)
    if xtr.ndim != 2 or xte.ndim != 2 or xtr.shape[1] != xte.shape[1]:
        raise ValueError(f"features must be (n, d) with the same d, got {xtr.shape} and {xte.shape}")
    if len(train_y) != len(xtr) or len(test_y) != len(xte):
        raise ValueError("labels and features differ in length")
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=max_iter))
    clf.fit(xtr, train_y)
    return float(clf.score(xte, test_y))


def nn_distances(samples, train) -> tuple[np.ndarray, np.ndarray]:
    """Pixel-space distances of each sample to its nearest and second-nearest training image."""
    s = torch.as_tensor(_np(samples)).reshape(len(samples), -1)
    t = torch.as_tensor(_np(train)).reshape(len(train), -1)
    if len(t) < 2:
        raise ValueError("the memorisation ratio test needs at least 2 training images")
    if s.shape[1] != t.shape[1]:
        raise ValueError(f"samples and training images differ in size: {s.shape[1]} vs {t.shape[1]} pixels")
    d = torch.cdist(s, t)
    two = d.topk(2, dim=1, largest=False).values
    return two[:, 0].numpy(), two[:, 1].numpy()


def memorization_ratio(samples, train, *, threshold: float = 1 / 3) -> float:
    """Fraction of generated samples with ``||x - NN1|| / ||x - NN2|| < threshold`` (ratio test of
    Yoon et al. 2023 / Gu et al. 2023; stand-in for the paper's SSCD cosine > 0.6, §2.5)."""
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    d1, d2 = nn_distances(samples, train)
    return float(np.mean(d1 / np.maximum(d2, 1e-12) < threshold))


def class_agreement_at_k(queries, query_y, keys, key_y, k: int = 5, exclude_self: bool = False) -> float:
    """Mean fraction of the ``k`` cosine nearest neighbours that share the query's label (Fig. 1 analogue)."""
    q, kk = _np(queries), _np(keys)
    q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    kk = kk / np.maximum(np.linalg.norm(kk, axis=1, keepdims=True), 1e-12)
    sim = q @ kk.T
    if exclude_self:
        np.fill_diagonal(sim, -np.inf)
    nn = np.argsort(-sim, axis=1)[:, :k]
    return float(np.mean(np.asarray(key_y)[nn] == np.asarray(query_y)[:, None]))
