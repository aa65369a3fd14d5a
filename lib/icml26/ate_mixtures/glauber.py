"""Glauber (heat-bath, random-scan) dynamics: exact sparse kernel, exact evolution, spectral gap, MC sampler.

Section 2 of the brief: one step picks ``i ~ Unif[n]`` and resamples ``x_i ~ mu(. | x_{-i})``. On
{0,1}^n the kernel moves ``x -> x^i`` (coordinate ``i`` flipped) with probability
``(1/n) mu(x^i) / (mu(x) + mu(x^i))`` and stays otherwise (the "stay" mass sits on the diagonal).
``P`` is reversible w.r.t. ``mu`` and, being an average of projections, positive semi-definite.

Distributions are row vectors: ``nu_{t+1} = nu_t P``, computed as ``P^T @ nu_t`` with a CSR copy of
``P^T`` (several distributions at once as the columns of a matrix).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .models import Mixture, check_exact_n


def _as_distribution(mu) -> np.ndarray:
    """A probability vector on {0,1}^n from a Mixture or an array; checks length 2^n and the simplex."""
    if isinstance(mu, Mixture):
        check_exact_n(mu.n)
        return mu.mu
    v = np.asarray(mu, dtype=float)
    if v.ndim != 1 or v.size < 2 or (v.size & (v.size - 1)):
        raise ValueError(f"a distribution on {{0,1}}^n must be a vector of length 2^n, got shape {v.shape}")
    check_exact_n(int(np.log2(v.size)))
    if not np.all(np.isfinite(v)) or np.any(v < 0) or abs(v.sum() - 1) > 1e-9:
        raise ValueError("a distribution must be finite, non-negative and sum to 1")
    return v


def n_of(mu: np.ndarray) -> int:
    return int(np.log2(mu.size))


def glauber_matrix(mu) -> sp.csr_matrix:
    """The heat-bath Glauber kernel ``P`` of ``mu`` as a ``(2^n, 2^n)`` CSR matrix (n*2^n + 2^n non-zeros)."""
    mu = _as_distribution(mu)
    n, N = n_of(mu), mu.size
    x = np.arange(N)
    rows, cols, vals = [], [], []
    stay = np.ones(N)
    for i in range(n):
        y = x ^ (1 << i)
        s = mu + mu[y]
        with np.errstate(invalid="ignore", divide="ignore"):
            flip = np.where(s > 0, mu[y] / s, 0.0) / n
        rows.append(x), cols.append(y), vals.append(flip)
        stay -= flip
    rows.append(x), cols.append(x), vals.append(stay)
    P = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(N, N))
    P.sort_indices()
    return P


def evolve(P: sp.spmatrix, nu0: np.ndarray, steps: int, record=None, target: np.ndarray | None = None,
           block: int = 32):
    """Exact evolution ``nu_t = nu_0 P^t`` (row-vector convention) by sparse mat-vec / mat-mat.

    ``nu0`` is ``(N,)`` or ``(N, R)`` (R distributions as columns). ``record``: the times at which to
    keep something (default: only ``steps``). With ``target`` (e.g. ``mu``) the total-variation distance
    ``TV(nu_t, target)`` per column is kept instead of the distribution, which needs no extra memory.
    Columns are evolved in blocks of ``block`` (cache locality). Returns ``(times, out)`` with ``out[j]``
    the recorded item at ``times[j]``.
    """
    if steps < 0:
        raise ValueError("steps must be non-negative")
    times = np.unique(np.asarray([steps] if record is None else record, dtype=int))
    if times.size and (times[0] < 0 or times[-1] > steps):
        raise ValueError("record times must lie in [0, steps]")
    PT = sp.csr_matrix(P.T)
    V0 = np.asarray(nu0, dtype=float)
    if V0.ndim == 2 and V0.shape[1] > block:  # column blocks stay in cache: several times faster
        parts = [evolve(P, V0[:, j:j + block], steps, times, target, block)[1] for j in range(0, V0.shape[1], block)]
        return times, np.concatenate(parts, axis=-1)
    V = np.array(V0, order="C", copy=True)  # C order: scipy's sparse @ dense is far slower on F order
    out, want = [], set(times.tolist())
    for t in range(steps + 1):
        if t in want:
            out.append(tv(V, target) if target is not None else V.copy())
        if t < steps:
            V = PT @ V
    return times, np.asarray(out)


def evolve_continuous(P: sp.spmatrix, nu0: np.ndarray, times, target: np.ndarray, block: int = 64,
                      distance=None) -> np.ndarray:
    """``TV(nu_0 H_t, target)`` of the continuous-time chain ``H_t = exp(t (P - I))`` (a rate-1 Poisson clock
    of Glauber steps: ``t`` counts expected steps, as in the discrete ``P^t``), at evenly spaced ``times``.
    ``distance(nu, target)`` (columnwise, default :func:`tv`) replaces TV, e.g. by KL.

    This is the semigroup an MLSI governs: ``d/dt Ent(f_t) = -E(f_t, log f_t)`` for the Dirichlet form of ``P``.
    ``nu0`` is ``(N,)`` or ``(N, R)``; columns go through :func:`scipy.sparse.linalg.expm_multiply` in blocks of
    ``block`` so that memory stays ``len(times) x N x block``. Returns ``(len(times), R)`` (or ``(len(times),)``).
    """
    times = np.asarray(times, dtype=float)
    if times.ndim != 1 or times.size < 2 or times[0] < 0:
        raise ValueError("times must be a 1-d grid of at least two non-negative times")
    if not np.allclose(np.diff(times), times[1] - times[0]) or times[1] <= times[0]:
        raise ValueError("times must be evenly spaced and increasing (expm_multiply's grid)")
    V0 = np.asarray(nu0, dtype=float)
    single = V0.ndim == 1
    V0 = V0[:, None] if single else V0
    A = sp.csr_matrix((P - sp.identity(P.shape[0], format="csr")).T)
    out = []
    for j in range(0, V0.shape[1], block):
        V = spla.expm_multiply(A, V0[:, j:j + block], start=times[0], stop=times[-1], num=times.size, endpoint=True)
        out.append(np.stack([(tv if distance is None else distance)(v, target) for v in V]))
    res = np.concatenate(out, axis=-1)
    return res[:, 0] if single else res


def tv(nu: np.ndarray, mu: np.ndarray) -> np.ndarray | float:
    """Total-variation distance ``(1/2) sum_x |nu(x) - mu(x)|`` (columnwise for a matrix ``nu``)."""
    nu = np.asarray(nu, dtype=float)
    mu = np.asarray(mu, dtype=float)
    if mu.ndim != 1 or nu.shape[0] != mu.shape[0] or nu.ndim > 2:
        raise ValueError(f"tv: nu must be (N,) or (N, R) and mu (N,), got {nu.shape} and {mu.shape}")
    if not (np.all(np.isfinite(nu)) and np.all(np.isfinite(mu))):
        raise ValueError("tv: distributions must be finite")
    d = np.abs(nu - (mu[:, None] if nu.ndim == 2 and mu.ndim == 1 else mu)).sum(axis=0) / 2
    return float(d) if np.ndim(d) == 0 else d


def spectral_gap(mu, P: sp.spmatrix | None = None, tol: float = 1e-10) -> float:
    """Spectral gap ``1 - lambda_2`` of the Glauber kernel of ``mu`` (requires ``mu > 0``).

    Uses ``scipy.sparse.linalg.eigsh`` on the symmetrised ``S = D^{1/2} P D^{-1/2}`` (``D = diag(mu)``)
    with the known top eigenvector ``sqrt(mu)`` deflated; ``P`` is PSD, so ``lambda_2`` is the largest
    remaining eigenvalue. Small chains use a dense eigen-solver.
    """
    mu = _as_distribution(mu)
    if np.any(mu <= 0):
        raise ValueError("the spectral gap needs a fully supported mu (mu(x) > 0 for all x)")
    P = glauber_matrix(mu) if P is None else P
    d = np.sqrt(mu)
    S = sp.diags(d) @ P @ sp.diags(1.0 / d)
    S = (S + S.T) / 2  # exact symmetry up to rounding (reversibility)
    if mu.size <= 256:
        ev = np.linalg.eigvalsh(S.toarray())
        return float(1.0 - ev[-2])
    v = d / np.linalg.norm(d)
    op = spla.LinearOperator(S.shape, matvec=lambda z: S @ z - v * (v @ z), dtype=float)
    v0 = np.random.default_rng(0).standard_normal(mu.size)
    lam = spla.eigsh(op, k=1, which="LA", tol=tol, v0=v0 - v * (v @ v0), return_eigenvectors=False)
    return float(1.0 - lam[0])


def lumped_chain(model: Mixture) -> np.ndarray:
    """Exact law of ``|x|`` (number of ones) under Glauber dynamics of an exchangeable mixture, any ``n``.

    When ``mu(x)`` depends on ``|x|`` only (M1 with equal marginals, M3), ``|x_t|`` is a birth-death
    chain on ``{0..n}``: from ``j`` ones, a one is picked with probability ``j/n`` and becomes 0 with the
    heat-bath probability ``w(j-1)/(w(j)+w(j-1))``, ``w(j) = mu(x)`` for ``|x| = j``; a zero becomes 1
    likewise. Returns the ``(n+1, n+1)`` row-stochastic matrix (no enumeration, so no limit on ``n``).
    """
    logw = model.log_weight_by_ones()
    if logw is None:
        raise ValueError("lumped_chain needs an exchangeable mixture (mu(x) a function of |x| only)")
    n = model.n
    j = np.arange(n + 1)
    Q = np.zeros((n + 1, n + 1))
    down = (j[1:] / n) / (1.0 + np.exp(logw[1:] - logw[:-1]))   # j -> j-1, j = 1..n
    up = ((n - j[:-1]) / n) / (1.0 + np.exp(logw[:-1] - logw[1:]))  # j -> j+1, j = 0..n-1
    Q[j[1:], j[1:] - 1] = down
    Q[j[:-1], j[:-1] + 1] = up
    Q[j, j] = 1.0 - Q.sum(axis=1)
    return Q


def relaxation_time(mu, P: sp.spmatrix | None = None) -> float:
    """``1 / spectral_gap``: the time scale of the slowest mode (exponential in n for bimodal mixtures)."""
    return 1.0 / spectral_gap(mu, P)


@dataclass
class GlauberSampler:
    """Vectorised Monte-Carlo Glauber dynamics: ``C`` independent chains of a :class:`Mixture`, any ``n``.

    Each step, every chain picks its own site ``i ~ Unif[n]`` and resamples it from the mixture's exact
    conditional ``mu(x_i | x_{-i})`` (heat bath, random scan); per-component sufficient statistics are
    updated incrementally, so a step costs O(C k). One *sweep* is ``n`` steps. The benchmark times it against
    the same algorithm as a numba ``@njit`` loop over chains (``benchmarks/bench_ate_mixtures.py``); the
    per-chain Python loops of ``icml26.ate_mixtures._reference`` are test oracles (not public API).
    """

    model: Mixture
    X: np.ndarray
    rng: np.random.Generator

    def __post_init__(self):
        X = np.asarray(self.X)
        if X.ndim != 2 or X.shape[1] != self.model.n:
            raise ValueError(f"chains must be a (C, n={self.model.n}) array, got shape {X.shape}")
        if not np.isin(X, (0, 1)).all():
            raise ValueError("chain states must be 0/1")
        self.X = X.astype(np.uint8, copy=True)
        self.stats = self.model.mc_init(self.X)

    def step(self, sites: np.ndarray | None = None, uniforms: np.ndarray | None = None) -> None:
        """One heat-bath update per chain (sites and uniforms drawn here unless given)."""
        C, n = self.X.shape
        if sites is None:
            sites = self.rng.integers(0, n, size=C)
        if uniforms is None:
            uniforms = self.rng.random(C)
        p1 = self.model.mc_prob_one(self.stats, self.X, sites)
        new = (uniforms < p1).view(np.uint8)
        self.stats = self.model.mc_update(self.stats, self.X, sites, new)

    def sweep(self, n_sweeps: int = 1) -> np.ndarray:
        """``n_sweeps * n`` steps; the random sites and uniforms of a sweep are drawn in one call each."""
        C, n = self.X.shape
        for _ in range(int(n_sweeps)):
            sites = self.rng.integers(0, n, size=(n, C))
            uniforms = self.rng.random((n, C))
            for s in range(n):
                self.step(sites[s], uniforms[s])
        return self.X
