"""Reference implementations of one Glauber sweep, per chain in pure Python (test oracles).

Not public API: the unit tests check that :class:`~icml26.ate_mixtures.GlauberSampler`, the recomputing
:func:`naive_glauber_sweep` and the incremental :func:`incremental_python_sweep` (the O(k)-per-update algorithm,
one chain at a time) implement the same dynamics. The benchmark's peer is that incremental algorithm compiled
with numba ``@njit`` (``benchmarks/bench_ate_mixtures.py``), not these loops.
"""
from __future__ import annotations

import math

import numpy as np


def naive_glauber_sweep(model, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The straightforward baseline: a Python loop over chains and steps, recomputing the conditional.

    Same dynamics as :class:`GlauberSampler` for a :class:`ProductMixture` (random scan, heat bath),
    written the way one would first write it (O(nk) per update).
    """
    X = np.array(X, dtype=np.uint8, copy=True)
    C, n = X.shape
    marg = model.marginals.tolist()
    w = model.weights.tolist()
    for c in range(C):
        row = X[c].tolist()
        for _ in range(n):
            i = int(rng.integers(n))
            num, den = 0.0, 0.0
            for a in range(len(w)):
                lik = w[a]
                for j in range(n):
                    if j != i:
                        lik *= marg[a][j] if row[j] else 1.0 - marg[a][j]
                num += lik * marg[a][i]
                den += lik
            row[i] = 1 if rng.random() < num / den else 0
        X[c] = row
    return X


def incremental_python_sweep(model, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per-chain Python loop keeping per-component log-likelihoods: O(k) per update, the same algorithm
    as the vectorised sampler, one chain and one site at a time (a test oracle)."""
    X = np.array(X, dtype=np.uint8, copy=True)
    C, n = X.shape
    l1, l0 = np.log(model.marginals).tolist(), np.log1p(-model.marginals).tolist()
    marg, logw, k = model.marginals.tolist(), np.log(model.weights).tolist(), model.k
    for c in range(C):
        row = X[c].tolist()
        L = [sum(l1[a][j] if row[j] else l0[a][j] for j in range(n)) for a in range(k)]
        for _ in range(n):
            i = int(rng.integers(n))
            rest = [L[a] - (l1[a][i] if row[i] else l0[a][i]) + logw[a] for a in range(k)]
            top = max(rest)
            w = [math.exp(r - top) for r in rest]
            new = 1 if rng.random() < sum(w[a] * marg[a][i] for a in range(k)) / sum(w) else 0
            if new != row[i]:
                for a in range(k):
                    L[a] += (l1[a][i] - l0[a][i]) if new else (l0[a][i] - l1[a][i])
                row[i] = new
        X[c] = row
    return X
