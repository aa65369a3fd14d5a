"""Glauber sampler kernels of the ate-mixtures chapter.

* one sweep (n single-site heat-bath updates per chain) of the vectorised Monte-Carlo sampler
  :class:`icml26.ate_mixtures.GlauberSampler` over 16384 chains, against the straightforward per-chain,
  per-site Python loop :func:`icml26.ate_mixtures.naive_glauber_sweep` (which recomputes each conditional
  from the product formula, O(nk) per update), in chain-site updates per second; a stronger loop with
  incremental statistics (O(k) per update) is timed alongside for context;
* one exact evolution step ``nu -> nu P`` of a distribution on {0,1}^14 (16384 states, sparse kernel),
  for one distribution and for 256 at once (the data-based TV experiments).

No PyPI package implements mixture Glauber dynamics on the hypercube (brief Section 6), so the peer is
the plain Python loop. Run: ``pytest benchmarks/bench_ate_mixtures.py -o addopts="" -p no:nbval``
(``make bench``). The ratio test prints (and bounds) vectorised / loop throughput.
"""
from __future__ import annotations


import numpy as np
import pytest

from icml26.ate_mixtures import GlauberSampler, ProductMixture, glauber_matrix, naive_glauber_sweep
from icml26.timing import interleaved_best, record_bench

N_SITES = 32
CHAINS = 16384
NAIVE_CHAINS = 64


def incremental_python_sweep(model: ProductMixture, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A stronger loop baseline: per-chain Python loop that keeps per-component log-likelihoods
    (O(k) per update, like the vectorised sampler), reported for context, not asserted."""
    import math

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


def _model(n: int = N_SITES) -> ProductMixture:
    return ProductMixture.symmetric(n, 0.85)


def _chains(c: int, seed: int = 0) -> np.ndarray:
    return _model().sample_states(c, np.random.default_rng(seed))


def test_sweep_vectorised(benchmark):
    sampler = GlauberSampler(_model(), _chains(CHAINS), np.random.default_rng(1))
    benchmark.group = f"one Glauber sweep, n = {N_SITES}"
    benchmark.extra_info["chain_sites"] = CHAINS * N_SITES
    benchmark(sampler.sweep, 1)


def test_sweep_python_loop(benchmark):
    model, X, rng = _model(), _chains(NAIVE_CHAINS), np.random.default_rng(1)
    benchmark.group = f"one Glauber sweep, n = {N_SITES}"
    benchmark.extra_info["chain_sites"] = NAIVE_CHAINS * N_SITES
    benchmark.pedantic(naive_glauber_sweep, args=(model, X, rng), rounds=3, iterations=1)


@pytest.mark.parametrize("columns", [1, 256])
def test_exact_evolution_step_n14(benchmark, columns):
    model = ProductMixture.symmetric(14, 0.92)
    PT = glauber_matrix(model).T.tocsr()
    V = np.ascontiguousarray(np.random.default_rng(0).dirichlet(np.ones(PT.shape[0]), size=columns).T)
    benchmark.group = "exact evolution step nu P, n = 14 (16384 states)"
    benchmark(lambda: PT @ V)


def test_ratio_vectorised_vs_python_loop():
    model = _model()
    sampler = GlauberSampler(model, _chains(CHAINS), np.random.default_rng(1))
    X, rng = _chains(NAIVE_CHAINS), np.random.default_rng(2)
    sampler.sweep(1)
    best = interleaved_best({"fast": lambda: sampler.sweep(1), "slow": lambda: naive_glauber_sweep(model, X, rng),
                             "incr": lambda: incremental_python_sweep(model, X, rng)}, rounds=3)
    rate_fast = CHAINS * N_SITES / best["fast"]
    rate_slow = NAIVE_CHAINS * N_SITES / best["slow"]
    rate_incr = NAIVE_CHAINS * N_SITES / best["incr"]
    ratio = rate_fast / rate_slow
    print(f"\nGlauber sweep, n = {N_SITES}: vectorised {rate_fast:.3g} chain-sites/s ({CHAINS} chains); "
          f"straightforward Python loop {rate_slow:.3g} chain-sites/s, ratio = {ratio:.0f}x; "
          f"Python loop with incremental statistics {rate_incr:.3g} chain-sites/s, ratio = {rate_fast / rate_incr:.0f}x")
    record_bench("ate-mixtures", "Glauber sweep (chain-sites)", "vectorised sampler", best["fast"] / (CHAINS * N_SITES),
                 "straightforward Python loop", best["slow"] / (NAIVE_CHAINS * N_SITES), rounds=3,
                 note="seconds per chain-site update; no PyPI package samples this mixture's Glauber dynamics")
    assert ratio >= 50
