"""Numerical ATE and MLSI constants of a distribution on {0,1}^n by exact enumeration.

The paper's sampling theorem (Theorem 4 in the arXiv version's numbering, as reported by the brief's
[M] sources; not checked against the PDF) assumes components satisfying a modified log-Sobolev
inequality (MLSI); its testing results assume ATE (Definition 2). For a given ``mu`` on {0,1}^n:

* ATE constant: ``c_ATE = sup_{f > 0} Ent_mu[f] / L_mu[f]`` (Definition 2, ``L`` without 1/n);
* MLSI constant of random-scan Glauber, normalised like the brief's "1/(c n)-MLSI":
  ``c_MLSI = sup_{f > 0} Ent_mu[f] / (n E_mu(f, log f))``, i.e. ``Ent <= c n E(f, log f)``.

Both ratios are scale-invariant in ``f`` (0-homogeneous: ``Ent``, ``L`` and ``E(f, log f)`` are each
1-homogeneous) and tend, as ``f -> 1``, to the Poincare limits
``1 / (n gap)`` (ATE) and ``1 / (2 n gap)`` (MLSI). :func:`functional_constant` maximises the ratio
over ``g = log f`` with L-BFGS-B and exact gradients from several starts (the Poincare direction, tilts
in the number of ones, random fields). The result is a *lower bound* on the true supremum (a local
optimum of a non-concave ratio), which is how the chapter uses it and says so. Since
``Cov_{mu_i}(f, log f) >= Ent_{mu_i} f`` site by site, ``n E(f, log f) >= L[f]`` and ``c_MLSI <= c_ATE``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.optimize import minimize

from .glauber import _as_distribution, glauber_matrix, n_of

KINDS = ("ate", "mlsi")
_NOISE = 1e-12


def _pairs_all(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 2^{n-1})`` arrays of the states with ``x_i = 0`` and their partners with ``x_i = 1``."""
    x = np.arange(2 ** n)
    x0 = np.stack([x[((x >> i) & 1) == 0] for i in range(n)])
    return x0, x0 | (1 << np.arange(n))[:, None]


def _scatter(x0, x1, a0, a1, size: int) -> np.ndarray:
    return np.bincount(x0.ravel(), a0.ravel(), size) + np.bincount(x1.ravel(), a1.ravel(), size)


def _ent_and_grad(mu: np.ndarray, f: np.ndarray, logf: np.ndarray) -> tuple[float, np.ndarray]:
    """``Ent_mu[f]`` and its gradient in ``f``: ``mu (log f - log E_mu f)``."""
    mean = float(mu @ f)
    return float(mu @ (f * logf) - mean * np.log(mean)), mu * (logf - np.log(mean))


def _local_and_grad(mu, f, logf, x0, x1) -> tuple[float, np.ndarray]:
    """``L_mu[f]`` (Definition 1) and its gradient in ``f``; pair term ``mu0 phi(f0) + mu1 phi(f1) - s phi(fbar)``."""
    m0, m1, f0, f1 = mu[x0], mu[x1], f[x0], f[x1]
    s = m0 + m1
    fbar = (m0 * f0 + m1 * f1) / s
    lf0, lf1, lb = logf[x0], logf[x1], np.log(fbar)
    val = float(np.sum(m0 * f0 * lf0 + m1 * f1 * lf1 - s * fbar * lb))
    return val, _scatter(x0, x1, m0 * (lf0 - lb), m1 * (lf1 - lb), f.size)


def _mlsi_and_grad(mu, f, logf, x0, x1) -> tuple[float, np.ndarray]:
    """``n E_mu(f, log f)`` of random-scan heat-bath Glauber and its gradient in ``f``.

    Edge ``{x0, x1}`` has weight ``mu0 mu1 / (n (mu0 + mu1))``; the factor ``n`` cancels it.
    """
    w = mu[x0] * mu[x1] / (mu[x0] + mu[x1])
    f0, f1 = f[x0], f[x1]
    d, dl = f0 - f1, logf[x0] - logf[x1]
    val = float(np.sum(w * d * dl))
    # d/df0 of (f0 - f1)(log f0 - log f1) = dl + d/f0; in g = log f the chain rule multiplies by f
    return val, _scatter(x0, x1, w * (dl + d / f0), w * (-dl - d / f1), f.size)


def ratio(mu, g: np.ndarray, kind: str) -> float:
    """``Ent/L`` (``kind="ate"``) or ``Ent/(n E(f, log f))`` (``"mlsi"``) at ``f = exp(g)``."""
    mu = _as_distribution(mu)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    g = np.asarray(g, dtype=float)
    if g.shape != mu.shape or not np.all(np.isfinite(g)):
        raise ValueError(f"g must be a finite vector of length {mu.size}")
    return -_objective(g - g.max(), mu, kind, *_pairs_all(n_of(mu)), n_of(mu))[0]


def _objective(g, mu, kind, x0, x1, n):
    logf = np.maximum(g - g.max(), -600.0)  # f = exp(g) up to scale (the ratio is scale-invariant), no underflow
    f = np.exp(logf)
    e, ge = _ent_and_grad(mu, f, logf)
    if kind == "ate":
        d, gd = _local_and_grad(mu, f, logf, x0, x1)
    else:
        d, gd = _mlsi_and_grad(mu, f, logf, x0, x1)
    # both sides are sums of terms of order E_mu f; below 1e-12 of it they are rounding noise (an f that varies only
    # on states of negligible mass, e.g. the middle levels of a star-like component), and their ratio is meaningless
    if d <= _NOISE * float(mu @ f) or e <= _NOISE * float(mu @ f):
        return 0.0, np.zeros_like(g)
    r = e / d
    grad_f = (ge - r * gd) / d
    return -r, -(grad_f * f)  # chain rule through f = exp(g) (the shift by max g is scale-free)


@dataclass
class ConstantEstimate:
    """Result of :func:`functional_constant`: the best ratio found, the Poincare limit and every start's value."""

    kind: str
    value: float
    poincare_limit: float
    starts: dict[str, float]
    g: np.ndarray
    """``log f`` of the function that attains ``value`` (``ratio(mu, g, kind) == value``, asserted)."""
    success: dict[str, bool] | None = None
    """Each start's L-BFGS-B ``success`` flag (False: stopped at ``maxiter`` or on a line-search failure)."""
    nit: dict[str, int] | None = None
    """Each start's L-BFGS-B iteration count."""
    best_start: str = ""
    """The start whose result is ``value``."""


def functional_constant(mu, kind: str = "ate", rng: np.random.Generator | None = None, random_starts: int = 2,
                        maxiter: int = 300, scales=(0.5, 2.0, 6.0), spike_states=(),
                        spike_heights=(2.0, 10.0)) -> ConstantEstimate:
    """Estimate ``sup_f Ent/L`` (ATE) or ``sup_f Ent/(n E(f, log f))`` (MLSI) of ``mu`` by optimisation.

    Starts: the slowest Glauber eigenfunction at small amplitude (ratio = Poincare limit), tilts
    ``g = s (2|x| - n)/n`` for ``s`` in ``scales`` (both signs), ``random_starts`` Gaussian fields, and spikes
    ``g = h 1_{x}`` of each height in ``spike_heights`` at each state index in ``spike_states`` (the functions that
    attain the ATE constant of a star-like measure, :class:`~icml26.ate_mixtures.PairPenaltyMixture`).
    Returns a lower bound on the supremum (``value``), with ``poincare_limit`` = ``1/(n gap)`` (ATE) or
    ``1/(2 n gap)`` (MLSI) computed from the exact spectral gap.
    """
    mu = _as_distribution(mu)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if np.any(mu <= 0):
        raise ValueError("functional constants need a fully supported mu")
    if random_starts < 0 or maxiter < 1:
        raise ValueError("random_starts must be >= 0 and maxiter >= 1")
    rng = np.random.default_rng(0) if rng is None else rng
    n = n_of(mu)
    x0, x1 = _pairs_all(n)
    P = glauber_matrix(mu)
    # one eigen-solve gives both the spectral gap and the slowest eigenfunction: the top two eigenpairs of
    # S = D^1/2 P D^-1/2 are (1, sqrt(mu)) and (1 - gap, v); phi = v / sqrt(mu) is P's slowest right eigenvector
    d = np.sqrt(mu)
    S = sp.diags(d) @ P @ sp.diags(1.0 / d)
    S = ((S + S.T) / 2).tocsr()
    if mu.size <= 256:
        vals, vecs = np.linalg.eigh(S.toarray())
        vals, vecs = vals[-2:], vecs[:, -2:]
    else:
        vals, vecs = spla.eigsh(S, k=2, which="LA", tol=1e-10, v0=np.random.default_rng(0).standard_normal(mu.size))
        order = np.argsort(vals)
        vals, vecs = vals[order], vecs[:, order]
    gap = float(1.0 - vals[0])
    limit = (1.0 if kind == "ate" else 0.5) / (n * gap)
    phi2 = vecs[:, 0] / d
    starts: dict[str, np.ndarray] = {
        "Poincare direction": 1e-3 * phi2 / np.abs(phi2).max(),
        "eigenfunction, amplitude 1": phi2 / np.abs(phi2).max(),
    }
    ones = np.array([bin(x).count("1") for x in range(mu.size)], dtype=float)
    for s in scales:
        for sign in (1, -1):
            starts[f"tilt {sign * s:+g}"] = sign * s * (2 * ones - n) / n
    for r in range(random_starts):
        starts[f"random {r}"] = rng.standard_normal(mu.size)
    for x in spike_states:
        if not 0 <= int(x) < mu.size:
            raise ValueError(f"spike state {x} is not a state of the cube of dimension {n}")
        for h in spike_heights:
            starts[f"spike {h:g} at {int(x)}"] = np.where(np.arange(mu.size) == int(x), float(h), 0.0)
    best_val, best_g, best_name, values, success, nit = -np.inf, None, "", {}, {}, {}
    for name, g0 in starts.items():
        res = minimize(_objective, g0, args=(mu, kind, x0, x1, n), jac=True, method="L-BFGS-B",
                       options=dict(maxiter=maxiter, gtol=1e-10, ftol=1e-13))
        # the start itself can beat L-BFGS-B's end point (the _NOISE guard returns 0 with a zero gradient): keep
        # whichever function produced the value, so that the reported g attains the reported constant
        at_end, at_start = -float(res.fun), -_objective(g0, mu, kind, x0, x1, n)[0]
        val, g_val = (at_end, res.x) if at_end >= at_start else (at_start, np.asarray(g0, dtype=float))
        values[name], success[name], nit[name] = val, bool(res.success), int(res.nit)
        if val > best_val:
            best_val, best_g, best_name = val, g_val, name
    check = ratio(mu, best_g, kind)
    if not np.isclose(check, best_val, rtol=1e-9, atol=1e-12):
        raise AssertionError(f"functional_constant: the returned g gives {check!r}, not the reported value {best_val!r}")
    return ConstantEstimate(kind, float(best_val), float(limit), values, np.asarray(best_g, dtype=float), success, nit, best_name)
