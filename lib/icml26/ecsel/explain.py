"""Closed-form explanations of a fitted signomial (paper Sec. 4, Theorem 3.2; brief Sec. 2.4 and 3.3).

For one class c with terms ``z_k(x) = alpha_k prod_j x_j**beta_kj`` (``alpha (K,)``, ``beta (K, m)``):

* elasticity ``E_j(x) = d log z / d log x_j = sum_k (z_k / z) beta_kj`` (constant ``beta_j`` for K = 1);
* counterfactual scaling ``x_j -> q x_j``: ``z_new(x) = sum_k q**beta_kj z_k(x)`` (no re-prediction);
* decision-boundary sensitivity ``d (z_c - z_c') / d log x_j = sum_k z_ck beta_ckj - sum_k z_c'k beta_c'kj``;
* local attribution to a baseline b: ``phi_j = beta_j log(x_j / b_j)`` (K = 1, exact: sums to
  ``log z(x) - log z(b)`` and equals the exact Shapley value); for K > 1 the first-order version
  ``phi_j = E_j(x*) (log x_j - log x*_j)`` at an expansion point x*.

Inputs are the model's own features (for a classifier with the [1, 10] map: the mapped x~).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from .feynman import design_matrix


def _check(alpha, beta, X):
    alpha = np.atleast_1d(np.asarray(alpha, float))
    beta = np.atleast_2d(np.asarray(beta, float))
    X = np.atleast_2d(np.asarray(X, float))
    if beta.shape[0] != alpha.shape[0] or X.shape[1] != beta.shape[1]:
        raise ValueError(f"shapes do not match: alpha {alpha.shape}, beta {beta.shape}, X {X.shape}")
    if not np.all(X > 0):
        raise ValueError("explanations of a signomial need strictly positive inputs x > 0")
    return alpha, beta, X


def term_values(alpha, beta, X) -> np.ndarray:
    """``z_k(x)`` for every row of X: (n, K)."""
    alpha, beta, X = _check(alpha, beta, X)
    return design_matrix(X, beta) * alpha


def elasticity(alpha, beta, X) -> np.ndarray:
    """Global elasticity ``E_j(x) = sum_k z_k(x) beta_kj / z(x)`` (n, m); needs z(x) != 0 (pitfall 7)."""
    zk = term_values(alpha, beta, X)
    z = zk.sum(1, keepdims=True)
    if np.any(z == 0):
        raise ValueError("elasticity d log|z| / d log x is undefined where z(x) = 0 (brief pitfall 7)")
    return (zk @ np.atleast_2d(beta)) / z


def counterfactual(alpha, beta, X, j: int, q) -> np.ndarray:
    """``z(x with x_j -> q x_j) = sum_k q**beta_kj z_k(x)`` for each q (array (len(q), n) or (n,))."""
    zk = term_values(alpha, beta, X)
    beta = np.atleast_2d(np.asarray(beta, float))
    q = np.asarray(q, float)
    return (q[..., None, None] ** beta[:, j] * zk).sum(-1)


def boundary_sensitivity(alpha_c, beta_c, alpha_d, beta_d, X) -> np.ndarray:
    """``d (z_c - z_d) / d log x_j`` (n, m): which class gains when x_j grows (D1/D2)."""
    zc = term_values(alpha_c, beta_c, X)
    zd = term_values(alpha_d, beta_d, X)
    return zc @ np.atleast_2d(beta_c) - zd @ np.atleast_2d(beta_d)


def attribution(alpha, beta, x, baseline, expansion=None) -> np.ndarray:
    """Local attribution ``phi_j`` of ``log z(x) - log z(b)`` (m,).

    K = 1: ``beta_j log(x_j / b_j)`` (exact). K > 1: ``E_j(x*) log(x_j / b_j)`` with x* = ``expansion``
    (default: the baseline), a first-order decomposition with an O(|log x - log b|^2) completeness residual.
    """
    alpha, beta, X = _check(alpha, beta, np.vstack([x, baseline]))
    x, b = X
    if beta.shape[0] == 1:
        return beta[0] * np.log(x / b)
    xstar = b if expansion is None else np.asarray(expansion, float)
    return elasticity(alpha, beta, xstar[None])[0] * np.log(x / b)


def log_score(alpha, beta, X) -> np.ndarray:
    """``log z(x)``; z must be > 0 (log-space attributions are defined only there, brief pitfall 7)."""
    z = term_values(alpha, beta, X).sum(1)
    if np.any(z <= 0):
        raise ValueError(f"log z needs z(x) > 0; {int(np.sum(z <= 0))} of {len(z)} rows have z <= 0 "
                         "(read explanations per term or from class differences there)")
    return np.log(z)


def exact_shapley(value: Callable[[np.ndarray], float], x, baseline) -> np.ndarray:
    """Exact Shapley values of the game ``v(S) = value(x_S, b_rest)`` by enumerating all 2^m coalitions."""
    x = np.asarray(x, float)
    b = np.asarray(baseline, float)
    m = len(x)
    if m > 14:
        raise ValueError(f"exact Shapley enumerates 2^m coalitions; m = {m} is too many")
    cache = {}
    for mask in itertools.product((0, 1), repeat=m):
        cache[mask] = value(np.where(np.array(mask, bool), x, b))
    phi = np.zeros(m)
    for j in range(m):
        for mask, v in cache.items():
            if mask[j]:
                continue
            s = sum(mask)
            with_j = mask[:j] + (1,) + mask[j + 1:]
            weight = math.factorial(s) * math.factorial(m - s - 1) / math.factorial(m)
            phi[j] += weight * (cache[with_j] - v)
    return phi
