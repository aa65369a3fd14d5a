"""Mixing times at any n from exact lumped chains: the rate that MLSI buys over a Poincare inequality.

For an *exchangeable* distribution on {0,1}^n (``mu(x)`` a function of ``|x|`` only: M1 with equal
marginals, the Curie-Weiss mixtures, :class:`UniformLevel`) and an exchangeable start (a law that is
uniform on each level set ``{|x| = j}``, e.g. a point mass at ``0^n`` or ``1^n``), the law of ``x_t``
under Glauber dynamics stays exchangeable, and ``|x_t|`` is the birth-death chain of
:func:`~icml26.ate_mixtures.lumped_chain`. Both the law and ``mu`` are uniform within each level set, so

    ``TV(law x_t, mu) = TV(law |x_t|, law |x| under mu)``  and  ``KL(law x_t || mu) = KL(law |x_t| || mu_|x|)``

exactly, at any n, with ``n + 1`` states instead of ``2^n``.

Why it matters here. From a start with ``D_0 = KL(start || mu) ~ n`` (a mode centre: ``log(1/mu(1^n)) ~ n``),
entropy contraction at rate ``1/(c n)`` (ATE or MLSI components, T*) gives ``t ~ c n log(D_0/eps^2) =
O(n log n)`` steps, while a Poincare inequality (chi-square contraction at the gap ``~1/n``, with
``chi^2(start || mu) ~ 1/mu(1^n) = e^{Theta(n)}``) only gives ``t ~ n log(1/mu_min) = O(n^2)``. This is our
reading of what the MLSI hypothesis of the paper's sampling theorem adds over the Poincare results it
extends [KLV24, HMRW24]; the theorem's own rate was not available to us.

:class:`UniformLevel` is the negative control of the slope test: ``mu(x) ∝ 1 / C(n, |x|)`` makes ``|x|`` uniform
on ``{0..n}`` and its lumped chain an unbiased random walk, so Glauber needs ``Theta(n^2)`` steps. Its gap is
``Theta(1/n^2)`` (``n * gap -> 0``): it has no n-free *Poincare* inequality either, so it is an ``n^2`` control of
the test, not an instance of "Poincare without MLSI".

The paper's regime, MLSI without a uniform log-Sobolev inequality, is the mixture of product components with
marginals ``delta_n = 1/n`` (``ProductMixture.symmetric(n, 1 - 1/n)``): a product measure is 1-ATE (hence MLSI
with an n-free constant) whatever its marginals, while the log-Sobolev constant of ``Bern(delta)`` is of order
``1/log(1/delta)``, so no LSI holds uniformly in n. From the middle level (:func:`level_start`) its start has
``D_0 ~ n log n``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp, rel_entr

from .glauber import lumped_chain
from .models import Mixture, _check_n, states


class UniformLevel(Mixture):
    """``mu(x) = 1 / ((n+1) C(n, |x|))``: ``|x|`` uniform on ``{0..n}`` (one component; gap ``Theta(1/n^2)``, so no
    n-free Poincare inequality and no n-free MLSI).

    The negative control of the rate claims: its Glauber chain lumps to an unbiased walk on ``|x|``.
    """

    def __init__(self, n: int):
        self.n = _check_n(n)
        self.weights = np.array([1.0])
        self.weights.setflags(write=False)

    def log_weight_by_ones(self) -> np.ndarray:
        j = np.arange(self.n + 1)
        return -(gammaln(self.n + 1) - gammaln(j + 1) - gammaln(self.n - j + 1)) - math.log(self.n + 1)

    def _component_probs(self) -> np.ndarray:
        ones = states(self.n).sum(axis=1)
        return np.exp(self.log_weight_by_ones()[ones])[None, :]

    def _sample_components(self, a, rng):
        out = np.zeros((a.size, self.n), dtype=np.uint8)
        for r, j in enumerate(rng.integers(0, self.n + 1, size=a.size)):
            out[r, rng.choice(self.n, size=int(j), replace=False)] = 1
        return out


def level_law(model: Mixture) -> np.ndarray:
    """The law of ``|x|`` under an exchangeable ``model`` (length ``n + 1``), any ``n``."""
    logw = model.log_weight_by_ones()
    if logw is None:
        raise ValueError("level_law needs an exchangeable mixture (mu(x) a function of |x| only)")
    n = model.n
    j = np.arange(n + 1)
    logp = logw + gammaln(n + 1) - gammaln(j + 1) - gammaln(n - j + 1)
    return np.exp(logp - logsumexp(logp))


def corner_start(n: int, weights=(0.5, 0.5)) -> np.ndarray:
    """Law of ``|x|`` for the start ``w_1 delta_{1^n} + w_2 delta_{0^n}`` (the mode centres, with the
    mixture's weights: a data set with the right proportions, each point at its mode's extreme)."""
    n = _check_n(n)
    w = np.asarray(weights, dtype=float)
    if w.shape != (2,) or np.any(w < 0) or not math.isclose(w.sum(), 1.0):
        raise ValueError("weights must be two non-negative numbers summing to 1")
    s = np.zeros(n + 1)
    s[n], s[0] = w[0], w[1]
    return s


def level_start(n: int, level: int | None = None) -> np.ndarray:
    """Law of ``|x|`` for the uniform law on the level set ``{|x| = level}`` (default ``n // 2``, the middle
    level): an exchangeable start. For the symmetric mixture ``ProductMixture.symmetric(n, p)`` with ``n`` even
    the middle level is mapped to itself by ``x -> 1 - x``, so the chain from it ends in each mode with
    probability 1/2: the mixture weights are right, as from a balanced data set."""
    n = _check_n(n)
    level = n // 2 if level is None else int(level)
    if not 0 <= level <= n:
        raise ValueError(f"level must lie in 0..{n}")
    s = np.zeros(n + 1)
    s[level] = 1.0
    return s


def lumped_mixing_time(model: Mixture, start: np.ndarray, target_tv: float, horizon: int,
                       kl_level: float | None = None) -> dict[str, float]:
    """First ``t`` with ``TV(law x_t, mu) <= target_tv`` (and, with ``kl_level``, first ``t`` with
    ``KL <= kl_level``) from an exchangeable start given as the law of ``|x_0|``; exact at any n.

    The tridiagonal chain is stepped as three vector operations per step. Returns ``t_tv`` and ``t_kl``
    (``inf`` when not reached within ``horizon`` steps), the start's ``tv0`` and ``kl0`` (nats).
    """
    if not 0 < target_tv < 1:
        raise ValueError("target_tv must lie in (0, 1)")
    if horizon < 1:
        raise ValueError("horizon must be a positive number of steps")
    n = model.n
    v = np.asarray(start, dtype=float)
    if v.shape != (n + 1,) or np.any(v < 0) or not math.isclose(v.sum(), 1.0, abs_tol=1e-12):
        raise ValueError(f"start must be a probability vector on {{0..{n}}} (the law of |x_0|)")
    stat = level_law(model)
    Q = lumped_chain(model)
    stay, up, down = np.diag(Q).copy(), np.diag(Q, 1).copy(), np.diag(Q, -1).copy()
    tv = lambda u: 0.5 * float(np.abs(u - stat).sum())
    # levels whose stationary mass underflows to 0 (the middle levels of a separated mixture at n ~ 2000) are left
    # out of the KL sum when the evolved law has no mass there either (below 1e-300), which is the case here
    pos = stat > 0

    def kl(u):
        if np.any(u[~pos] > 1e-300):
            return math.inf
        return float(np.sum(rel_entr(u[pos], stat[pos])))
    out = {"tv0": tv(v), "kl0": kl(v), "t_tv": math.inf, "t_kl": math.inf if kl_level is not None else math.nan}
    t = 0
    while True:
        if math.isinf(out["t_tv"]) and tv(v) <= target_tv:
            out["t_tv"] = float(t)
        if kl_level is not None and math.isinf(out["t_kl"]) and kl(v) <= kl_level:
            out["t_kl"] = float(t)
        done = not math.isinf(out["t_tv"]) and (kl_level is None or not math.isinf(out["t_kl"]))
        if done or t >= horizon:
            return out
        nv = v * stay
        nv[1:] += v[:-1] * up
        nv[:-1] += v[1:] * down
        v = nv
        t += 1


def rate_vs_n(make_model, ns, start, target_tv: float, horizon_factor: float, kl_level: float | None = None,
              horizon_power: int = 2) -> dict[str, np.ndarray]:
    """Exact mixing times against ``n`` for ``make_model(n)`` from ``start(n)`` (law of ``|x_0|``), within a
    horizon of ``horizon_factor * n**horizon_power`` steps."""
    rows = [lumped_mixing_time(make_model(int(n)), start(int(n)), target_tv, int(horizon_factor * n ** horizon_power),
                               kl_level) for n in ns]
    return {"n": np.asarray(ns, dtype=float), **{key: np.asarray([r[key] for r in rows]) for key in rows[0]}}


def tail_slope(ns, t, last: int = 3) -> float:
    """Log-log slope of ``t`` against ``n`` over the ``last`` largest ``n`` (the local growth exponent)."""
    ns, t = np.asarray(ns, dtype=float), np.asarray(t, dtype=float)
    if ns.shape != t.shape or ns.size < 2:
        raise ValueError("need matching arrays of at least two (n, t) points")
    if not (np.all(np.isfinite(t)) and np.all(t > 0) and np.all(ns > 0)):
        raise ValueError("mixing times must be positive and finite (a chain that never mixed has t = inf)")
    k = min(int(last), ns.size)
    return float(np.polyfit(np.log(ns[-k:]), np.log(t[-k:]), 1)[0])


def fit_rates(ns, t) -> dict[str, float]:
    """Least-squares fits ``t = a n log n`` and ``t = a n^2`` (relative residuals) with their RMS relative errors."""
    ns, t = np.asarray(ns, dtype=float), np.asarray(t, dtype=float)
    out = {}
    for name, base in (("a n log n", ns * np.log(ns)), ("a n^2", ns ** 2)):
        a = float(np.sum(base / t) / np.sum((base / t) ** 2))
        out[name] = a
        out[f"{name} rms rel. error"] = float(np.sqrt(np.mean(((t - a * base) / t) ** 2)))
    return out
