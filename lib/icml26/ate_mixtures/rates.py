"""Mixing times at any n from exact lumped chains: the rate that MLSI buys over a Poincare inequality.

For an *exchangeable* distribution on {0,1}^n (``mu(x)`` a function of ``|x|`` only: M1 with equal
marginals, the Curie-Weiss mixtures, :class:`UniformLevel`) and an exchangeable start (a law that is
uniform on each level set ``{|x| = j}``, e.g. a point mass at ``0^n`` or ``1^n``), the law of ``x_t``
under Glauber dynamics stays exchangeable, and ``|x_t|`` is the birth-death chain of
:func:`~icml26.ate_mixtures.lumped_chain`. Both the law and ``mu`` are uniform within each level set, so

    ``TV(law x_t, mu) = TV(law |x_t|, law |x| under mu)``  and  ``KL(law x_t || mu) = KL(law |x_t| || mu_|x|)``

exactly, at any n, with ``n + 1`` states instead of ``2^n``.

Why it matters here. From a start with ``D_0 = KL(start || mu) ~ n`` (a mode centre: ``log(1/mu(1^n)) ~ n``),
entropy contraction at rate ``1/(c n)`` (ATE or MLSI components, T*) *bounds* the mixing time by ``c n log(D_0/eps^2) =
O(n log n)`` steps, while a Poincare inequality (chi-square contraction at the gap ``~1/n``, with
``chi^2(start || mu) ~ 1/mu(1^n) = e^{Theta(n)}``) only bounds it by ``~ n log(1/mu_min) = O(n^2)``. Both are upper bounds
on the same true time, so the comparison is between bounds: :func:`bound_times` divides each by the exact mixing time,
and the entropy bound's ratio stays flat in ``n`` while the Poincare bound's grows like ``n / log n``. This is our
reading of what the MLSI hypothesis of the paper's sampling theorem adds over the Poincare results it extends
[KLV24, HMRW24]; the theorem's own rate was not available to us.

:class:`UniformLevel` (``mu(x) ∝ 1 / C(n, |x|)``: ``|x|`` uniform on ``{0..n}``, its lumped chain an unbiased random walk,
gap ``Theta(1/n^2)``) checks the lumped chain against enumeration on a third kind of exchangeable law.

The paper's regime, MLSI without a uniform log-Sobolev inequality, is the mixture of product components with
marginals ``delta_n = 1/n`` (``ProductMixture.symmetric(n, 1 - 1/n)``): a product measure is 1-ATE (hence MLSI
with an n-free constant) whatever its marginals, while the log-Sobolev constant of ``Bern(delta)`` is of order
``1/log(1/delta)``, so no LSI holds uniformly in n. From the middle level (:func:`level_start`) its start has
``D_0 ~ n log n`` and ``log chi^2_0 ~ n log n``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

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


def level_log_law(model: Mixture) -> np.ndarray:
    """``log P(|x| = j)`` under an exchangeable ``model`` (length ``n + 1``), any ``n``, in log space: the middle levels
    of a separated mixture at ``n`` in the thousands have probabilities far below the smallest double."""
    logw = model.log_weight_by_ones()
    if logw is None:
        raise ValueError("level_law needs an exchangeable mixture (mu(x) a function of |x| only)")
    n = model.n
    j = np.arange(n + 1)
    logp = logw + gammaln(n + 1) - gammaln(j + 1) - gammaln(n - j + 1)
    return logp - logsumexp(logp)


def level_law(model: Mixture) -> np.ndarray:
    """The law of ``|x|`` under an exchangeable ``model`` (length ``n + 1``), any ``n``."""
    return np.exp(level_log_law(model))


def _log_divergences(start: np.ndarray, log_stat: np.ndarray, chi2: bool = True) -> tuple[float, float]:
    """``KL(start || stat)`` and (with ``chi2``) ``log chi^2(start || stat)`` computed in log space (``stat`` given by its
    logs), finite whenever ``start`` is supported where ``stat`` is, however small ``stat`` is there."""
    s = start > 0
    if not np.all(np.isfinite(log_stat[s])):
        return math.inf, math.inf
    logv = np.log(start[s])
    kl = float(np.sum(start[s] * (logv - log_stat[s])))
    if not chi2:
        return kl, math.nan
    S = float(logsumexp(2 * logv - log_stat[s]))  # log sum v^2/stat = log(1 + chi^2)
    log_chi2 = S + math.log(-math.expm1(-S)) if S > 0 else -math.inf
    return kl, log_chi2


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

    The tridiagonal chain is stepped as three vector operations per step; divergences use the log of the stationary
    law (:func:`level_log_law`), so they stay finite where its mass underflows. Returns ``t_tv`` and ``t_kl``
    (``inf`` when not reached within ``horizon`` steps), and the start's ``tv0``, ``kl0`` (nats) and ``log_chi2_0``
    (the log of its chi-square divergence, what a Poincare bound starts from).
    """
    if not 0 < target_tv < 1:
        raise ValueError("target_tv must lie in (0, 1)")
    if horizon < 1:
        raise ValueError("horizon must be a positive number of steps")
    n = model.n
    v = np.asarray(start, dtype=float)
    if v.shape != (n + 1,) or np.any(v < 0) or not math.isclose(v.sum(), 1.0, abs_tol=1e-12):
        raise ValueError(f"start must be a probability vector on {{0..{n}}} (the law of |x_0|)")
    log_stat = level_log_law(model)
    stat = np.exp(log_stat)
    Q = lumped_chain(model)
    stay, up, down = np.diag(Q).copy(), np.diag(Q, 1).copy(), np.diag(Q, -1).copy()
    tv = lambda u: 0.5 * float(np.abs(u - stat).sum())
    kl0, log_chi2_0 = _log_divergences(v, log_stat)
    out = {"tv0": tv(v), "kl0": kl0, "log_chi2_0": log_chi2_0, "t_tv": math.inf,
           "t_kl": math.inf if kl_level is not None else math.nan}
    t = 0
    while True:
        if math.isinf(out["t_tv"]) and tv(v) <= target_tv:
            out["t_tv"] = float(t)
        if kl_level is not None and math.isinf(out["t_kl"]) and _log_divergences(v, log_stat, chi2=False)[0] <= kl_level:
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
    """Log-log slope of ``t`` against ``n`` over the ``last`` largest ``n`` (the local growth exponent;
    :func:`~icml26.ate_mixtures.loglog_slope` on the tail)."""
    from .experiments import loglog_slope

    ns, t = np.asarray(ns, dtype=float), np.asarray(t, dtype=float)
    if ns.shape != t.shape or ns.size < 2:
        raise ValueError("need matching arrays of at least two (n, t) points")
    k = min(int(last), ns.size)
    return loglog_slope(ns[-k:], t[-k:])


def bound_times(rates: dict[str, np.ndarray], target_tv: float, c: float = 1.0, c_poincare: float = 1.0) -> dict[str, np.ndarray]:
    """The mixing times the two kinds of bound give from each start of :func:`rate_vs_n` (``K = 0``: starts with the
    mixture's weights), against ``n``:

    * entropy (ATE/MLSI, T* with ``c``): ``D_t <= e^{-t/(c n)} D_0`` and Pinsker give ``t_E = c n log(D_0 / (2 eps^2))``;
    * Poincare (components with ``Var <= c_P n E(f, f)``): ``chi^2_t <= e^{-2t/(c_P n)} chi^2_0`` (the continuous-time rate,
      generous to this bound in discrete time) and ``TV <= sqrt(chi^2)/2`` give ``t_P = (c_P n / 2) log(chi^2_0 / (4 eps^2))``.

    ``D_0 ~ n`` from a mode centre but ``log chi^2_0 ~ log(1/mu_min) ~ n``, so ``t_E = O(n log n)`` and ``t_P = O(n^2)``:
    the comparison of bounds the paper's extension of [KLV24, HMRW24] from Poincare to MLSI components is about.
    Returns ``entropy``, ``poincare`` and their ratios to the exact ``t_tv`` (``entropy_ratio``, ``poincare_ratio``).
    """
    if not 0 < target_tv < 1 or not (c > 0 and c_poincare > 0):
        raise ValueError("target_tv must lie in (0, 1) and the constants must be positive")
    n = np.asarray(rates["n"], dtype=float)
    ent = c * n * np.log(np.asarray(rates["kl0"], dtype=float) / (2 * target_tv ** 2))
    poi = 0.5 * c_poincare * n * (np.asarray(rates["log_chi2_0"], dtype=float) - math.log(4 * target_tv ** 2))
    t = np.asarray(rates["t_tv"], dtype=float)
    return {"n": n, "entropy": ent, "poincare": poi, "entropy_ratio": ent / t, "poincare_ratio": poi / t}


FIT_LAWS = {"a n": lambda n: n, "a n log n": lambda n: n * np.log(n), "a n^2": lambda n: n ** 2}
"""The one-parameter growth laws :func:`fit_laws` compares."""


def fit_laws(ns, t, laws=("a n log n", "a n^2")) -> dict[str, float]:
    """Least-squares fits ``t = a base(n)`` for each law in ``laws`` (keys of :data:`FIT_LAWS`), minimising the relative
    residuals ``sum ((t - a base)/t)^2``; returns each ``a`` and its RMS relative error (``"<law> rms rel. error"``)."""
    ns, t = np.asarray(ns, dtype=float), np.asarray(t, dtype=float)
    if ns.shape != t.shape or ns.size == 0 or not (np.all(np.isfinite(t)) and np.all(t > 0) and np.all(ns > 0)):
        raise ValueError(f"fit_laws: values must be positive and finite (an unreached time is inf), got {t}")
    out = {}
    for name in laws:
        base = FIT_LAWS[name](ns)
        a = float(np.sum(base / t) / np.sum((base / t) ** 2))
        out[name] = a
        out[f"{name} rms rel. error"] = float(np.sqrt(np.mean(((t - a * base) / t) ** 2)))
    return out
