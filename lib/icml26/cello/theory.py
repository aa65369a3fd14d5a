"""Numerical checks of the reconstructed theory (brief 3, all [ours]).

T1 micro-lesion dilution: an oracle that averages the m lesion cells has ``d'_cell = Delta sqrt(m)/sigma``;
one that averages the P cells of the patch holding the lesion has ``d'_patch = Delta m/(sigma sqrt P)``;
slide AUC = Phi(d'/sqrt 2) for equal-variance Gaussians. T3: PCA drops a low-variance discriminative
direction that a protein regression keeps.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import norm
from sklearn.decomposition import PCA
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import roc_auc_score


def oracle_auc(d_prime: float) -> float:
    """AUC = Phi(d'/sqrt 2) for two equal-variance Gaussians d' apart (brief T1)."""
    return float(norm.cdf(d_prime / np.sqrt(2)))


def dilution_monte_carlo(m: int, P: int, delta: float, sigma: float, n_slides: int, seed: int = 0) -> dict:
    """Monte Carlo of T1 at feature level: cell scores x_c = mu_0 + Delta 1[lesion] + sigma eps.

    Returns the oracle cell and patch AUCs and their Phi(d'/sqrt 2) predictions."""
    if not 1 <= m <= P:
        raise ValueError(f"need 1 <= m <= P, got m={m}, P={P}")
    rng = np.random.default_rng(seed)
    y = np.arange(n_slides) % 2
    cells = rng.normal(0, sigma, (n_slides, P))
    cells[y == 1, :m] += delta                      # the lesion patch: its first m cells are lesion cells
    cell_stat = cells[:, :m].mean(1)                # oracle cell pooling: the m lesion positions
    patch_stat = cells.mean(1)                      # oracle patch pooling: the patch that holds them
    d_cell, d_patch = delta * np.sqrt(m) / sigma, delta * m / (sigma * np.sqrt(P))
    return dict(cell=float(roc_auc_score(y, cell_stat)), patch=float(roc_auc_score(y, patch_stat)),
                cell_theory=oracle_auc(d_cell), patch_theory=oracle_auc(d_patch), d_cell=float(d_cell), d_patch=float(d_patch))


def pca_vs_protein_probe(n: int = 4000, dim: int = 20, k: int = 5, sigma_s: float = 0.5, nuisance: float = 3.0,
                         seed: int = 0) -> dict:
    """T3 toy: x = u s + B n + e with a small-variance abnormality s and large nuisances n (k dims).

    PCA(k) keeps the nuisance directions; a linear regression of the protein p = s + eta on x
    recovers a direction ~ Sigma^{-1} u. Returns the probe AUCs of the abnormal class on held-out data."""
    rng = np.random.default_rng(seed)
    u = np.zeros(dim)
    u[-1] = 1.0
    B = np.zeros((dim, k))
    B[np.arange(k), np.arange(k)] = 1.0
    y = rng.random(n) < 0.5
    s = sigma_s * (2 * y - 1) + 0.1 * rng.standard_normal(n)
    x = s[:, None] * u + (nuisance * rng.standard_normal((n, k))) @ B.T + 0.3 * rng.standard_normal((n, dim))
    p = s + 0.1 * rng.standard_normal(n)
    tr, te = slice(0, n // 2), slice(n // 2, n)
    z = PCA(k, random_state=seed).fit(x[tr])
    clf = LogisticRegression(max_iter=2000).fit(z.transform(x[tr]), y[tr])
    pca_auc = roc_auc_score(y[te], clf.decision_function(z.transform(x[te])))
    reg = LinearRegression().fit(x[tr], p[tr])
    prot_auc = roc_auc_score(y[te], reg.predict(x[te]))
    return dict(pca=float(pca_auc), protein=float(prot_auc), coef=reg.coef_)
