"""Downstream and auxiliary metrics (paper §2.5, brief §5.3): linear probe, memorisation ratio,
nearest-neighbour retrieval by invariant vs residual features."""
from __future__ import annotations

import numpy as np
import torch

from .estimators import as_array


def linear_probe(train_feats, train_y, test_feats, test_y, *, C: float = 1.0, max_iter: int = 2000) -> float:
    """Test accuracy of a multinomial logistic regression on standardised features (paper §2.5: sklearn
    logistic regression on training-set features; hyper-parameters fixed across sigma)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    xtr, xte = as_array(train_feats, "train_feats", 2), as_array(test_feats, "test_feats", 2)
    if xtr.shape[1] != xte.shape[1]:
        raise ValueError(f"train and test features differ in dimension: {xtr.shape} and {xte.shape}")
    if len(train_y) != len(xtr) or len(test_y) != len(xte):
        raise ValueError("labels and features differ in length")
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=max_iter))
    clf.fit(xtr, train_y)
    return float(clf.score(xte, test_y))


def nn_distances(samples, train) -> tuple[np.ndarray, np.ndarray]:
    """Pixel-space distances of each sample to its nearest and second-nearest training image."""
    s = torch.as_tensor(as_array(samples.reshape(len(samples), -1), "samples", 2))
    t = torch.as_tensor(as_array(train.reshape(len(train), -1), "train", 2))
    if len(t) < 2:
        raise ValueError("the memorisation ratio test needs at least 2 training images")
    if s.shape[1] != t.shape[1]:
        raise ValueError(f"samples and training images differ in size: {s.shape[1]} vs {t.shape[1]} pixels")
    two = torch.cdist(s, t).topk(2, dim=1, largest=False).values
    return two[:, 0].numpy(), two[:, 1].numpy()


def memorised_fraction(d1: np.ndarray, d2: np.ndarray, threshold: float = 1 / 3) -> float:
    """Fraction of samples with ``d1 / d2 < threshold`` from precomputed NN distances (see
    :func:`memorization_ratio`)."""
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    return float(np.mean(np.asarray(d1) / np.maximum(np.asarray(d2), 1e-12) < threshold))


def memorization_ratio(samples, train, *, threshold: float = 1 / 3) -> float:
    """Fraction of generated samples with ``||x - NN1|| / ||x - NN2|| < threshold`` (ratio test of
    Yoon et al. 2023 / Gu et al. 2023; stand-in for the paper's SSCD cosine > 0.6, §2.5)."""
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    return memorised_fraction(*nn_distances(samples, train), threshold)


def class_agreement_at_k(queries, query_y, keys=None, key_y=None, k: int = 5) -> float:
    """Mean fraction of the ``k`` cosine nearest neighbours that share the query's label (Fig. 1 analogue).

    Without ``keys`` the queries are their own key set and each query's own entry is left out.
    scikit-learn's ``NearestNeighbors(metric="cosine")`` (brute force).
    """
    from sklearn.neighbors import NearestNeighbors

    q = as_array(queries, "queries", 2)
    qy = np.asarray(query_y)
    if len(qy) != len(q):
        raise ValueError("query labels and queries differ in length")
    self_keys = keys is None
    kk, ky = (q, qy) if self_keys else (as_array(keys, "keys", 2), np.asarray(key_y))
    if len(ky) != len(kk) or kk.shape[1] != q.shape[1]:
        raise ValueError(f"keys {kk.shape} / key labels {len(ky)} do not match the queries {q.shape}")
    if not 1 <= k < len(kk):
        raise ValueError(f"k must be in [1, {len(kk) - 1}], got {k}")
    nn = NearestNeighbors(n_neighbors=k + int(self_keys), metric="cosine", algorithm="brute").fit(kk)
    idx = nn.kneighbors(q, return_distance=False)
    if self_keys:  # drop the query itself (ties aside it is its own nearest neighbour)
        idx = np.array([[j for j in row if j != i][:k] for i, row in enumerate(idx)])
    return float(np.mean(ky[idx] == qy[:, None]))
