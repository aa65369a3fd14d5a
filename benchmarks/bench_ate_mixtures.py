"""Glauber sampler kernels of the ate-mixtures chapter.

* one sweep (n single-site heat-bath updates per chain) of the vectorised Monte-Carlo sampler
  :class:`icml26.ate_mixtures.GlauberSampler` over 16384 chains, against the same algorithm (incremental
  per-component statistics, O(k) per update) written as a per-chain Python loop
  (``_reference.incremental_python_sweep``): the asserted, recorded ratio is vectorisation alone, with no
  algorithmic saving mixed in. The O(nk) loop that recomputes each conditional is printed for context.
* one exact evolution step ``nu -> nu P`` on {0,1}^12 for 256 distributions: scipy CSR sparse mat-mat
  against a dense BLAS mat-mat with the same kernel (recorded), and the n = 14 step on its own.

No PyPI package implements mixture Glauber dynamics on the hypercube (brief Section 6; numba, for a
jitted loop, is not in this environment), so the peer is the same algorithm in plain Python. Run:
``pytest benchmarks/bench_ate_mixtures.py -o addopts="" -p no:nbval`` (``make bench``).
"""
from __future__ import annotations


import numpy as np
import pytest

from icml26.ate_mixtures import GlauberSampler, ProductMixture, glauber_matrix
from icml26.ate_mixtures._reference import incremental_python_sweep, naive_glauber_sweep
from icml26.timing import interleaved_best, record_bench

N_SITES = 32
CHAINS = 16384
NAIVE_CHAINS = 64


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
    benchmark.pedantic(incremental_python_sweep, args=(model, X, rng), rounds=3, iterations=1)


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
    best = interleaved_best({"fast": lambda: sampler.sweep(1), "incr": lambda: incremental_python_sweep(model, X, rng),
                             "naive": lambda: naive_glauber_sweep(model, X, rng)}, rounds=3)
    rate_fast = CHAINS * N_SITES / best["fast"]
    rate_incr = NAIVE_CHAINS * N_SITES / best["incr"]
    rate_naive = NAIVE_CHAINS * N_SITES / best["naive"]
    ratio = rate_fast / rate_incr
    print(f"\nGlauber sweep, n = {N_SITES}: vectorised {rate_fast:.3g} chain-sites/s ({CHAINS} chains); "
          f"same algorithm as a Python loop {rate_incr:.3g} chain-sites/s, ratio = {ratio:.0f}x; "
          f"O(nk) recomputing loop {rate_naive:.3g} chain-sites/s ({rate_fast / rate_naive:.0f}x, for context)")
    record_bench("ate-mixtures", "Glauber sweep (chain-sites)", "vectorised sampler", best["fast"] / (CHAINS * N_SITES),
                 "same algorithm, per-chain Python loop", best["incr"] / (NAIVE_CHAINS * N_SITES), rounds=3,
                 note="seconds per chain-site update, incremental O(k) updates on both sides; no PyPI package "
                      "samples this mixture's Glauber dynamics (numba not available here)")
    assert ratio >= 10


def test_ratio_sparse_vs_dense_evolution():
    model = ProductMixture.symmetric(12, 0.92)
    PT = glauber_matrix(model).T.tocsr()
    D = PT.toarray()
    V = np.ascontiguousarray(np.random.default_rng(0).dirichlet(np.ones(PT.shape[0]), size=256).T)
    assert np.allclose(PT @ V, D @ V)
    best = interleaved_best({"sparse": lambda: PT @ V, "dense": lambda: D @ V}, rounds=5)
    print(f"\nexact evolution step, n = 12, 256 columns: sparse {best['sparse'] * 1e3:.2f} ms, dense BLAS "
          f"{best['dense'] * 1e3:.2f} ms, ratio {best['dense'] / best['sparse']:.1f}x")
    record_bench("ate-mixtures", "exact evolution step nu P (n = 12, 256 distributions)", "scipy CSR mat-mat",
                 best["sparse"], "dense numpy (BLAS) mat-mat", best["dense"], rounds=5,
                 note="the kernel has n + 1 non-zeros per row; one thread")
    assert best["dense"] / best["sparse"] >= 2
