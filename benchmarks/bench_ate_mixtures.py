"""Glauber kernels of the ate-mixtures chapter, each against the best honest peer of the same algorithm.

* One sweep (n single-site heat-bath updates per chain) of the vectorised Monte-Carlo sampler
  :class:`icml26.ate_mixtures.GlauberSampler` over 16384 chains at n = 32, against the same algorithm
  (incremental per-component log-likelihoods, O(k) per update) compiled with numba ``@njit``, one chain at a
  time, on the same chains, one thread. No PyPI package samples this mixture's Glauber dynamics (brief
  Section 6), so a jitted loop is the fastest honest reference. numba is pinned in ``constraints.txt`` and
  installed with the ``bench`` extra (``make install``); the recorded result names the numba version it ran with.
* One exact evolution step ``nu -> nu P`` on {0,1}^12 for 256 distributions: scipy CSR sparse mat-mat
  against the matrix-free alternative on the cube: ``nu`` viewed as a ``(2,) * n`` array, each neighbour term
  ``flip_i(y^i) nu(y^i)`` read through ``np.flip`` of one axis (a view, no copy; revision 7 replaced the fancy-index
  gather ``V[x ^ 2^i]``, which copied the 4096 x 256 block n times), same float64 arithmetic, one thread.
  ``results/bench/ate-mixtures.json`` still holds the gather peer's ratio until ``make bench`` is rerun from a
  committed tree.

Run: ``pytest benchmarks/bench_ate_mixtures.py -o addopts="" -p no:nbval`` (``make bench``).
"""
from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from icml26.ate_mixtures import GlauberSampler, ProductMixture, glauber_matrix
from icml26.timing import interleaved_best, record_bench

N_SITES = 32
CHAINS = 16384


def _model(n: int = N_SITES) -> ProductMixture:
    return ProductMixture.symmetric(n, 0.85)


def _chains(c: int, seed: int = 0) -> np.ndarray:
    return _model().sample_states(c, np.random.default_rng(seed))


def _numba_sweep():
    import numba

    @numba.njit(cache=False)
    def sweep(X, L, l1, l0, marg, logw, seed):
        np.random.seed(seed)
        C, n = X.shape
        k = L.shape[0]
        rest = np.empty(k)
        for c in range(C):
            for _ in range(n):
                i = np.random.randint(n)
                top = -np.inf
                for a in range(k):
                    rest[a] = L[a, c] - (l1[a, i] if X[c, i] else l0[a, i]) + logw[a]
                    top = max(top, rest[a])
                num = 0.0
                den = 0.0
                for a in range(k):
                    w = np.exp(rest[a] - top)
                    num += w * marg[a, i]
                    den += w
                new = 1 if np.random.random() < num / den else 0
                if new != X[c, i]:
                    for a in range(k):
                        L[a, c] += (l1[a, i] - l0[a, i]) if new else (l0[a, i] - l1[a, i])
                    X[c, i] = new
        return X

    return numba, sweep


def _numba_state(model, X):
    l1, l0 = np.log(model.marginals), np.log1p(-model.marginals)
    L = np.stack([np.where(X.astype(bool), l1[a], l0[a]).sum(axis=1) for a in range(model.k)])
    return X.copy(), L, l1, l0, np.ascontiguousarray(model.marginals), np.log(model.weights)


def _flip_step(model: ProductMixture):
    """The matrix-free evolution step: returns ``step(V) = (nu P)`` for the columns of V, and its tables.

    ``V`` (``(2^n, C)``) is viewed as a ``(2,) * n + (C,)`` array, in which flipping coordinate ``i`` of the state
    (``x -> x ^ 2^i``) is reversing axis ``n - 1 - i``: ``np.flip`` gives that as a view (no copy, unlike a fancy-index
    gather ``V[x ^ 2^i]``), and each site costs one multiply into a preallocated buffer and one in-place add."""
    mu, n = model.mu, model.n
    x = np.arange(mu.size)
    shape = (2,) * n
    into = [(mu / (mu + mu[x ^ (1 << i)]) / n).reshape(shape + (1,)) for i in range(n)]   # P(y^i -> y), on the cube
    stay = (1.0 - sum((mu[x ^ (1 << i)] / (mu + mu[x ^ (1 << i)]) / n) for i in range(n)))[:, None]

    def step(V):
        out = stay * V
        cube, acc = V.reshape(shape + (V.shape[1],)), out.reshape(shape + (V.shape[1],))
        buf = np.empty_like(cube)
        for i in range(n):
            np.multiply(into[i], np.flip(cube, axis=n - 1 - i), out=buf)
            np.add(acc, buf, out=acc)
        return out

    return step


def test_sweep_vectorised(benchmark):
    sampler = GlauberSampler(_model(), _chains(CHAINS), np.random.default_rng(1))
    benchmark.group = f"one Glauber sweep, n = {N_SITES}, {CHAINS} chains"
    benchmark(sampler.sweep, 1)


def test_sweep_numba(benchmark):
    _, sweep = _numba_sweep()
    state = _numba_state(_model(), _chains(CHAINS))
    sweep(*state, 0)  # compile
    benchmark.group = f"one Glauber sweep, n = {N_SITES}, {CHAINS} chains"
    benchmark(lambda: sweep(*state, 1))


def test_ratio_vectorised_vs_numba():
    numba, sweep = _numba_sweep()
    model = _model()
    X = _chains(CHAINS)
    # same dynamics: the law of |x| after 4 sweeps from 0^n agrees between the two (Monte Carlo, 16384 chains)
    zeros = np.zeros((CHAINS, N_SITES), dtype=np.uint8)
    a = GlauberSampler(model, zeros, np.random.default_rng(3))
    a.sweep(4)
    state = _numba_state(model, zeros)
    for s in range(4):
        sweep(*state, 10 + s)
    ha = np.bincount(a.X.sum(axis=1), minlength=N_SITES + 1) / CHAINS
    hb = np.bincount(state[0].sum(axis=1), minlength=N_SITES + 1) / CHAINS
    assert np.abs(ha - hb).sum() / 2 < 0.05
    sampler = GlauberSampler(model, X, np.random.default_rng(1))
    state = _numba_state(model, X)
    sweep(*state, 0)
    with threadpool_limits(1):
        best = interleaved_best({"vectorised": lambda: sampler.sweep(1), "numba": lambda: sweep(*state, 1)}, rounds=5)
    print(f"\nGlauber sweep, n = {N_SITES}, {CHAINS} chains: vectorised numpy {best['vectorised'] * 1e3:.1f} ms, "
          f"numba @njit loop {best['numba'] * 1e3:.1f} ms (ours / peer = {best['vectorised'] / best['numba']:.2f})")
    record_bench("ate-mixtures", "Glauber sweep (16384 chains, n = 32)", "vectorised numpy sampler", best["vectorised"],
                 f"same algorithm, numba {numba.__version__} @njit loop over chains", best["numba"], rounds=5,
                 note="incremental O(k) updates on both sides, random sites and uniforms drawn inside each; one thread")


def test_exact_evolution_step_csr(benchmark):
    model = ProductMixture.symmetric(12, 0.92)
    PT = glauber_matrix(model).T.tocsr()
    V = np.ascontiguousarray(np.random.default_rng(0).dirichlet(np.ones(PT.shape[0]), size=256).T)
    benchmark.group = "exact evolution step nu P, n = 12, 256 distributions"
    benchmark(lambda: PT @ V)


def test_exact_evolution_step_flip(benchmark):
    model = ProductMixture.symmetric(12, 0.92)
    step = _flip_step(model)
    V = np.ascontiguousarray(np.random.default_rng(0).dirichlet(np.ones(model.mu.size), size=256).T)
    benchmark.group = "exact evolution step nu P, n = 12, 256 distributions"
    benchmark(lambda: step(V))


def test_ratio_sparse_vs_flip_evolution():
    model = ProductMixture.symmetric(12, 0.92)
    PT = glauber_matrix(model).T.tocsr()
    step = _flip_step(model)
    V = np.ascontiguousarray(np.random.default_rng(0).dirichlet(np.ones(PT.shape[0]), size=256).T)
    assert np.allclose(PT @ V, step(V), rtol=1e-12, atol=1e-15)
    with threadpool_limits(1):
        best = interleaved_best({"sparse": lambda: PT @ V, "flip": lambda: step(V)}, rounds=7)
    print(f"\nexact evolution step, n = 12, 256 columns: scipy CSR {best['sparse'] * 1e3:.2f} ms, matrix-free numpy axis-flip "
          f"view {best['flip'] * 1e3:.2f} ms (ours / peer = {best['sparse'] / best['flip']:.2f})")
    record_bench("ate-mixtures", "exact evolution step nu P (n = 12, 256 distributions)", "scipy CSR mat-mat",
                 best["sparse"], "matrix-free numpy axis-flip view (np.flip on the (2,)*n cube, no copy)", best["flip"], rounds=7,
                 note="same float64 sums (n + 1 terms per state); one thread")
