"""Identity testing in the coordinate-conditional sampling model (brief Sections 2-3, F5).

The visible ``mu`` is explicit; the hidden ``pi`` is reached through i.i.d. samples and a
*coordinate oracle* ``(x, i) -> y_i ~ pi(. | x_{-i})``. Decide ``pi = mu`` against ``TV(pi, mu) >= eps``.

By the weak-ATE inequality (I4), ``KL(pi||mu) <= c L_mu[pi/mu] + KL(rho_pi || rho)``: a discrepancy is
either *local* (seen by the oracle, I5) or a *mixture-weight* discrepancy (seen by the posterior
component labels of samples, I2). Hence our testers:

* ``T_loc`` (our chi-square stand-in for an oracle tester): ``x ~ pi``, ``i ~ Unif[n]``, ``r`` oracle draws;
  statistic = mean over queries of the unbiased estimate of ``chi^2(pi(.|x_{-i}) || mu(.|x_{-i}))``. It is
  *not* BCSV23's tester: BCSV23's bound, as the research brief recalls it (unverified here), is ``O~(n/eps)``
  queries, while this one costs ``n^{3/2}/eps^2``
  oracle calls on a local discrepancy (the chapter's F5b derivation);
* ``T_w``: ``x ~ pi``, ``a ~ p_mu(.|x)`` (posterior under the *visible* mixture), Pearson chi-square
  of the label counts against ``rho`` (assumes computable posteriors, true for exact enumeration);
* ``T_mix``: the union, reject if either rejects at level ``alpha/2``;
* ``T_comb``: Fisher's combination ``-2 (log p_loc + log p_w)`` of the two null-calibrated p-values (the two
  statistics use independent samples), one threshold at level ``alpha``: no ``alpha/2`` split.

Thresholds are the ``1-alpha`` (resp. ``1-alpha/2``) quantiles of the statistics simulated under the
null ``pi = mu``. The paper's own tester and its query complexity are not available to us: these are
our stand-ins built on the decomposition I4.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from .models import Mixture, ProductMixture, sample_indices

TESTERS = ("T_loc", "T_w", "T_mix", "T_comb")
T_W_CHI2 = "T_w (chi2 threshold)"
"""T_w with the asymptotic chi-square quantile as threshold (what the noncentral chi-square predicts)."""


@dataclass(frozen=True)
class TesterBudget:
    """Samples/queries per test: ``n_w`` labelled samples for T_w; ``n_loc`` queries x ``r`` draws for T_loc."""

    n_w: int = 200
    n_loc: int = 400
    r: int = 8
    alpha: float = 0.1

    def __post_init__(self):
        if self.n_w < 1 or self.n_loc < 1:
            raise ValueError("budgets must be positive")
        if self.r < 2:
            raise ValueError("the unbiased chi-square estimate needs r >= 2 oracle draws per query")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must lie in (0, 1)")


def _check_pair(visible: Mixture, hidden: Mixture):
    if visible.n != hidden.n:
        raise ValueError(f"visible and hidden live on different cubes: n = {visible.n} vs {hidden.n}")


def weight_statistic(visible: Mixture, hidden: Mixture, n_w: int, trials: int, rng) -> np.ndarray:
    """T_w statistic for ``trials`` independent tests: Pearson chi-square of posterior labels vs ``rho``
    (``scipy.stats.chisquare`` of the label counts against ``n_w rho``)."""
    _check_pair(visible, hidden)
    x = sample_indices(hidden.mu, (trials, n_w), rng)
    cpost = np.cumsum(visible.posterior[:, x], axis=0)  # (k, trials, n_w)
    a = (rng.random((trials, n_w))[None] > cpost).sum(axis=0)
    a = np.minimum(a, visible.k - 1)
    counts = np.stack([(a == j).sum(axis=1) for j in range(visible.k)], axis=1)
    keep = visible.weights > 0
    expected = n_w * visible.weights[keep] / visible.weights[keep].sum()
    return sps.chisquare(counts[:, keep], np.broadcast_to(expected, counts[:, keep].shape), axis=1).statistic


def local_statistic(visible: Mixture, hidden: Mixture, n_loc: int, r: int, trials: int, rng) -> np.ndarray:
    """T_loc statistic: mean over queries of the unbiased ``chi^2`` estimate of the site conditionals.

    For query ``(x, i)`` with ``c`` ones among ``r`` oracle draws from ``Bern(q)``, ``q = pi(x_i=1|x_{-i})``,
    and ``p = mu(x_i=1|x_{-i})``: ``[c(c-1)/(r(r-1)) - 2pc/r + p^2] / (p(1-p))`` is unbiased for
    ``(q-p)^2/(p(1-p)) = chi^2(Bern(q)||Bern(p))``.
    """
    _check_pair(visible, hidden)
    n = visible.n
    x = sample_indices(hidden.mu, (trials, n_loc), rng)
    i = rng.integers(0, n, size=(trials, n_loc))
    x1 = x | (1 << i)
    x0 = x1 ^ (1 << i)
    q = hidden.mu[x1] / (hidden.mu[x0] + hidden.mu[x1])
    p = visible.mu[x1] / (visible.mu[x0] + visible.mu[x1])
    c = rng.binomial(r, q)
    est = (c * (c - 1) / (r * (r - 1)) - 2 * p * c / r + p ** 2) / np.maximum(p * (1 - p), 1e-12)
    return est.mean(axis=1)


def statistics(visible: Mixture, hidden: Mixture, budget: TesterBudget, trials: int, rng) -> dict[str, np.ndarray]:
    """Both statistics (``T_loc``, ``T_w``) for ``trials`` independent tests of ``hidden`` against ``visible``."""
    return {
        "T_loc": local_statistic(visible, hidden, budget.n_loc, budget.r, trials, rng),
        "T_w": weight_statistic(visible, hidden, budget.n_w, trials, rng),
    }


def null_pvalue(null: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``(1 + #{null >= s}) / (1 + len(null))``: the p-value of statistics ``s`` against a sorted null sample."""
    null = np.asarray(null)
    return (1.0 + null.size - np.searchsorted(null, s, side="left")) / (1.0 + null.size)


def fisher_statistic(thresholds: dict, s: dict[str, np.ndarray]) -> np.ndarray:
    """T_comb: Fisher's ``-2 (log p_loc + log p_w)`` with each p-value from the null sample kept by :func:`calibrate`."""
    return -2.0 * (np.log(null_pvalue(thresholds["null T_loc"], s["T_loc"]))
                   + np.log(null_pvalue(thresholds["null T_w"], s["T_w"])))


def calibrate(visible: Mixture, budget: TesterBudget, n_null: int, rng) -> dict:
    """Thresholds from ``n_null`` simulations under the null (hidden = visible): the ``1-alpha`` quantiles of
    T_loc, T_w and T_comb, the ``1-alpha/2`` ones the union T_mix uses, and the sorted null samples
    (keys ``"null T_loc"``, ``"null T_w"``) that give T_comb's p-values."""
    if n_null < 20:
        raise ValueError("calibration needs at least 20 null simulations")
    s = statistics(visible, visible, budget, n_null, rng)
    a = budget.alpha
    out = {
        "T_loc": float(np.quantile(s["T_loc"], 1 - a)),
        "T_w": float(np.quantile(s["T_w"], 1 - a)),
        "T_loc/2": float(np.quantile(s["T_loc"], 1 - a / 2)),
        "T_w/2": float(np.quantile(s["T_w"], 1 - a / 2)),
        "null T_loc": np.sort(s["T_loc"]),
        "null T_w": np.sort(s["T_w"]),
    }
    out["T_comb"] = float(np.quantile(fisher_statistic(out, s), 1 - a))
    return out


def rejections(visible: Mixture, hidden: Mixture, budget: TesterBudget, thresholds: dict,
               trials: int, rng) -> dict[str, np.ndarray]:
    """Per-test reject decisions (boolean arrays of length ``trials``) of T_loc, T_w, T_mix, T_comb, and of T_w
    at the asymptotic threshold ``chi2_{k-1}(1 - alpha)`` (key :data:`T_W_CHI2`)."""
    s = statistics(visible, hidden, budget, trials, rng)
    return {
        "T_loc": s["T_loc"] > thresholds["T_loc"],
        "T_w": s["T_w"] > thresholds["T_w"],
        "T_mix": (s["T_loc"] > thresholds["T_loc/2"]) | (s["T_w"] > thresholds["T_w/2"]),
        "T_comb": fisher_statistic(thresholds, s) > thresholds["T_comb"],
        T_W_CHI2: s["T_w"] > sps.chi2.ppf(1 - budget.alpha, visible.k - 1),
    }


def rejection_rates(visible: Mixture, hidden: Mixture, budget: TesterBudget, thresholds: dict,
                    trials: int, rng) -> dict[str, float]:
    """Fraction of ``trials`` independent tests that reject, for each tester of :data:`TESTERS`."""
    r = rejections(visible, hidden, budget, thresholds, trials, rng)
    return {t: float(r[t].mean()) for t in TESTERS}


def label_law(visible: Mixture, hidden: Mixture) -> np.ndarray:
    """``rho_pi(a) = sum_x pi(x) p_mu(a|x)``: the law of T_w's labels when ``x ~ pi`` (posterior of ``mu``)."""
    _check_pair(visible, hidden)
    return visible.posterior @ hidden.mu


def weight_power_ncx2(visible: Mixture, hidden: Mixture, n_w: int, alpha: float) -> float:
    """Asymptotic power of T_w at the ``chi2_{k-1}(1-alpha)`` threshold: ``P(ncx2(k-1, lambda) > threshold)``.

    ``lambda = n_w sum_a (rho_pi(a) - rho_a)^2 / rho_a`` (Pearson noncentrality; ``4 n_w d^2`` for a
    weight shift ``(1/2 + d, 1/2 - d)`` of ``rho = (1/2, 1/2)`` with perfectly separated components).
    """
    rho, rp = visible.weights, label_law(visible, hidden)
    lam = n_w * float(np.sum((rp - rho) ** 2 / rho))
    df = visible.k - 1
    thr = sps.chi2.ppf(1 - alpha, df)
    return float(sps.ncx2.sf(thr, df, lam)) if lam > 0 else float(sps.chi2.sf(thr, df))


def weight_power_exact(visible: Mixture, hidden: Mixture, n_w: int, threshold: float) -> float:
    """Exact power of T_w for ``k = 2``: the label count is ``Bin(n_w, rho_pi(1))``, the statistic
    ``(c - n_w rho_1)^2 / (n_w rho_1 rho_2)``; rejects when it exceeds ``threshold``."""
    if visible.k != 2:
        raise ValueError("the exact T_w power is implemented for k = 2 components")
    rho, rp = visible.weights, label_law(visible, hidden)
    c = np.arange(n_w + 1)
    stat = (c - n_w * rho[0]) ** 2 / (n_w * rho[0]) + ((n_w - c) - n_w * rho[1]) ** 2 / (n_w * rho[1])
    return float(sps.binom.pmf(c, n_w, rp[0])[stat > threshold].sum())


def _chi2_estimate_moments(p: np.ndarray, q: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the unbiased estimate ``[U - 2pV + p^2]/(p(1-p))`` of ``(q-p)^2/(p(1-p))``,
    ``U = c(c-1)/(r(r-1))``, ``V = c/r``, ``c ~ Bin(r, q)``, in closed form from the binomial factorial
    moments ``E[c^(j)] = r^(j) q^j`` (``c^(j)`` the falling factorial)."""
    f1, f2 = r * q, r * (r - 1) * q ** 2
    f3, f4 = r * (r - 1) * (r - 2) * q ** 3, r * (r - 1) * (r - 2) * (r - 3) * q ** 4
    rr = r * (r - 1)
    var_u = (f4 + 4 * f3 + 2 * f2) / rr ** 2 - q ** 4          # (c(c-1))^2 = c^(4) + 4 c^(3) + 2 c^(2)
    cov_uv = (f3 + 2 * f2) / (rr * r) - q ** 3                  # c^2 (c-1) = c^(3) + 2 c^(2)
    var_v = (f2 + f1) / r ** 2 - q ** 2
    den = np.maximum(p * (1 - p), 1e-12)
    var = (var_u - 4 * p * cov_uv + 4 * p ** 2 * var_v) / den ** 2
    return (q - p) ** 2 / den, np.maximum(var, 0.0)


def _query_table(visible: Mixture, hidden: Mixture) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``(p, q)`` pairs of T_loc's queries and their probabilities: ``p = mu(x_i = 1 | x_{-i})``,
    ``q = pi(x_i = 1 | x_{-i})`` for ``x ~ pi``, ``i ~ Unif[n]`` (a query's moments depend on ``(p, q)`` only, and
    structured models have few distinct pairs, so every ``r`` costs a pass over the pairs, not over ``n 2^n`` queries)."""
    _check_pair(visible, hidden)
    n, N = visible.n, visible.mu.size
    x = np.arange(N)[:, None]
    i = np.arange(n)[None, :]
    x1 = x | (1 << i)
    x0 = x1 ^ (1 << i)
    q = hidden.mu[x1] / (hidden.mu[x0] + hidden.mu[x1])
    p = visible.mu[x1] / (visible.mu[x0] + visible.mu[x1])
    w = np.broadcast_to(hidden.mu[:, None] / n, p.shape)
    pairs, inverse = np.unique(np.round(p.ravel(), 14) + 1j * np.round(q.ravel(), 14), return_inverse=True)
    return pairs.real.copy(), pairs.imag.copy(), np.bincount(inverse.ravel(), weights=w.ravel(), minlength=pairs.size)


def local_query_moments(visible: Mixture, hidden: Mixture, r: int) -> tuple[float, float]:
    """Exact mean and variance of one T_loc query's unbiased chi-square estimate when the oracle is ``hidden``.

    Averages over ``x ~ pi`` (all ``2^n`` states) and ``i ~ Unif[n]`` the closed-form conditional moments
    given ``(x, i)`` (law of total variance); the mean is ``E_{x~pi, i} chi^2(pi(.|x_{-i}) || mu(.|x_{-i}))``
    (0 under the null).
    """
    return _table_moments(_query_table(visible, hidden), r)


def _table_moments(table: tuple[np.ndarray, np.ndarray, np.ndarray], r: int) -> tuple[float, float]:
    """Mean and variance of one query's estimate over a :func:`_query_table` (law of total variance)."""
    if r < 2:
        raise ValueError("r must be >= 2")
    p, q, w = table
    m_cond, v_cond = _chi2_estimate_moments(p, q, int(r))
    mean = float(np.sum(w * m_cond))
    return mean, float(np.sum(w * (v_cond + m_cond ** 2)) - mean ** 2)


_STIRLING2 = {1: (1,), 2: (1, 1), 3: (1, 3, 1), 4: (1, 7, 6, 1), 5: (1, 15, 25, 10, 1), 6: (1, 31, 90, 65, 15, 1)}
"""Stirling numbers of the second kind ``S(k, j)``, ``j = 1..k``: ``c^k = sum_j S(k, j) c^(j)`` (falling factorials)."""


def _table_skewness(table: tuple[np.ndarray, np.ndarray, np.ndarray], r: int) -> float:
    """Skewness of one query's estimate over a :func:`_query_table`, exactly: the estimate is ``a c^2 + b c + g`` in the
    count ``c ~ Bin(r, q)`` (:func:`_chi2_estimate_moments`), whose raw moments up to order 6 follow from the binomial
    factorial moments ``E[c^(j)] = r^(j) q^j``."""
    mean, var = _table_moments(table, r)
    p, q, w = table
    r = int(r)
    den = np.maximum(p * (1 - p), 1e-12)
    a, b, g = 1.0 / (r * (r - 1) * den), (-1.0 / (r * (r - 1)) - 2 * p / r) / den, p ** 2 / den - mean  # centred at the mean
    falling = np.cumprod([float(r - j) for j in range(6)])                      # r^(1), ..., r^(6)
    M = {k: sum(S * falling[j] * q ** (j + 1) for j, S in enumerate(_STIRLING2[k])) for k in range(1, 7)}
    M[0] = np.ones_like(q)
    cube = (a ** 3 * M[6] + 3 * a ** 2 * b * M[5] + (3 * a ** 2 * g + 3 * a * b ** 2) * M[4] + (b ** 3 + 6 * a * b * g) * M[3]
            + (3 * b ** 2 * g + 3 * a * g ** 2) * M[2] + 3 * b * g ** 2 * M[1] + g ** 3 * M[0])
    return float(np.sum(w * cube)) / var ** 1.5


def _skewed_power(N, null: tuple[float, float, float], alt: tuple[float, float, float], level: float) -> np.ndarray:
    """Power of T_loc (the mean of ``N`` queries) at ``level`` with the skewness of the query estimate taken into account:
    Cornish-Fisher for the null quantile that calibration finds, Edgeworth for the alternative's tail. ``null`` and ``alt`` are
    (mean, variance, skewness) of one query."""
    (m0, v0, g0), (m1, v1, g1) = null, alt
    sN = np.sqrt(np.asarray(N, dtype=float))
    z = sps.norm.ppf(1 - level)
    thr = m0 + np.sqrt(v0) / sN * (z + (z * z - 1) * g0 / (6 * sN))
    u = (thr - m1) * sN / np.sqrt(v1)
    return np.clip(sps.norm.sf(u) + sps.norm.pdf(u) * (u * u - 1) * g1 / (6 * sN), 0.0, 1.0)


def _skewed_queries(null, alt, level: float, power) -> np.ndarray:
    """The fewest queries ``N >= 1`` with :func:`_skewed_power` at least ``power``, by bisection in ``log N``; the moments
    (each a tuple of arrays) and ``power`` broadcast together. Assumes a positive mean signal (``alt[0] > null[0]``)."""
    null = tuple(np.asarray(x, dtype=float) for x in null)
    alt = tuple(np.asarray(x, dtype=float) for x in alt)
    power = np.asarray(power, dtype=float)
    shape = np.broadcast_shapes(power.shape, *(x.shape for x in null + alt))
    if np.any(np.broadcast_to(alt[0] - null[0], shape) <= 0):
        raise ValueError("T_loc needs a positive mean signal")
    lo, hi = np.zeros(shape), np.full(shape, 1.0)
    while np.any(short := _skewed_power(np.exp(hi), null, alt, level) < power):      # bracket
        hi = np.where(short, hi + 2.0, hi)
        if np.any(hi > 60):
            raise ValueError("T_loc cannot reach this power with fewer than e^60 queries")
    done = _skewed_power(1.0, null, alt, level) >= power
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        ok = _skewed_power(np.exp(mid), null, alt, level) >= power
        lo, hi = np.where(ok, lo, mid), np.where(ok, mid, hi)
    return np.where(done, 1.0, np.exp(hi))


def _queries_for(null: tuple[float, float], alt: tuple[float, float], level: float, power: float) -> float:
    """``N = ((z_{1-level} sigma_0 + z_power sigma_1) / (m_1 - m_0))^2`` (normal approximation of a mean of i.i.d. queries)."""
    (m0, v0), (m1, v1) = null, alt
    if m1 - m0 <= 0:
        return math.inf
    za, zb = sps.norm.ppf(1 - level), sps.norm.ppf(power)
    top = za * np.sqrt(v0) + zb * np.sqrt(v1)
    return float((top / (m1 - m0)) ** 2) if top > 0 else 0.0  # top <= 0: the power is reached as N -> 0


def local_budget(visible: Mixture, hidden: Mixture, r: int, alpha: float, power: float = 0.8) -> float:
    """Queries T_loc needs for ``power`` at level ``alpha`` (normal approximation of the mean of i.i.d. queries):
    ``N = ((z_{1-alpha} sigma_0 + z_power sigma_1) / m_1)^2`` with the exact moments of :func:`local_query_moments`."""
    return _queries_for(local_query_moments(visible, visible, r), local_query_moments(visible, hidden, r), alpha, power)


def oracle_calls(visible: Mixture, hidden: Mixture, rs, alpha: float, power: float = 0.8) -> tuple[float, int, float]:
    """Fewest oracle calls ``N r`` for T_loc to reach ``power``, over the draws per query ``r`` in ``rs``:
    returns ``(calls, best r, queries N at that r)`` (normal approximation, exact moments)."""
    best = (math.inf, 0, math.inf)
    null, alt = _query_table(visible, visible), _query_table(visible, hidden)
    for r in rs:
        N = _queries_for(_table_moments(null, int(r)), _table_moments(alt, int(r)), alpha, power)
        if N * r < best[0]:
            best = (N * r, int(r), N)
    return best


@dataclass(frozen=True)
class MixBudget:
    """The fewest samples plus oracle calls with which T_mix reaches a power (:func:`mix_budget`).

    ``n_w`` and ``n_loc`` are the closed forms' real-valued solutions (e.g. 11.6 queries), not rounded: ``total`` is a
    smooth function of ``n`` for the growth tests (C7p, C7pk); a simulated tester rounds them up (C7z)."""

    total: float
    n_w: float
    n_loc: float
    r: int


def mix_budget(visible: Mixture, hidden: Mixture, alpha: float, power: float = 0.8, rs=(2, 4, 8, 16, 32, 64, 128),
               grid: int = 200, min_expected: float = 5.0) -> MixBudget:
    """The smallest total budget ``N_w + N (1 + r)`` (labelled samples for T_w, plus ``N`` samples and ``N r`` oracle
    calls for T_loc) with which the union T_mix (each part at level ``alpha/2``, independent samples) reaches ``power``
    against ``hidden``: no budget is chosen by us, the split and ``r`` (over ``rs``) are optimised.

    T_w's power is the noncentral chi-square one (:func:`weight_power_ncx2`), counted only from ``min_expected`` expected
    labels per component on (below that the chi-square approximation credits a test of a handful of labels with a power of
    about its level, which the discrete test does not have: T_w is then given no power, its samples still counted); T_loc's
    is the normal approximation with exact moments corrected for the query estimate's skewness (Cornish-Fisher for the null
    quantile, Edgeworth for the alternative, :func:`_skewed_power`: at level ``alpha/2`` and the few queries of the fewest
    budget the plain normal approximation overstates the power); the union's power is ``1 - (1 - p_w)(1 - p_loc)``.
    ``N_w`` runs over 0 and a geometric grid up to the size at which T_w alone has the power; for each, the T_loc queries
    that complete the power.
    """
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise ValueError("power and alpha must lie in (0, 1)")
    level = alpha / 2
    rho, rp = visible.weights, label_law(visible, hidden)
    shift = float(np.sum((rp - rho) ** 2 / rho))
    df = visible.k - 1
    thr = sps.chi2.ppf(1 - level, df)
    nw_min = min_expected / float(rho.min())  # Pearson's rule of thumb: at least `min_expected` expected labels per cell
    p_w = lambda nw: np.where(np.asarray(nw) >= nw_min, sps.ncx2.sf(thr, df, np.asarray(nw, dtype=float) * shift), 0.0)
    # the T_w size that reaches the power alone (doubling, then bisection on the monotone ncx2 power)
    hi = nw_min
    while shift > 0 and p_w(hi) < power and hi < 1e12:
        hi *= 2
    if shift > 0 and p_w(hi) >= power:
        lo = max(hi / 2, nw_min)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if p_w(mid) < power else (lo, mid)
        nw_alone = hi
    else:
        nw_alone = math.inf
    best = MixBudget(nw_alone, nw_alone, 0.0, 0)
    null, alt = _query_table(visible, visible), _query_table(visible, hidden)
    top = nw_alone if np.isfinite(nw_alone) else 1e6
    nw = np.r_[0.0, np.geomspace(nw_min, max(top, nw_min), grid)]
    pw = p_w(nw)
    nw, pw = nw[pw < power], pw[pw < power]
    need = np.maximum(1 - (1 - power) / (1 - pw), level)  # the power T_loc must add (at least its level: N >= 1 query)
    rs = np.asarray([int(r) for r in rs])
    mom0 = np.array([(*_table_moments(null, r), _table_skewness(null, r)) for r in rs])   # (R, 3): mean, var, skewness
    mom1 = np.array([(*_table_moments(alt, r), _table_skewness(alt, r)) for r in rs])
    keep = mom1[:, 0] - mom0[:, 0] > 0
    if np.any(keep) and nw.size:
        col = lambda m: tuple(m[keep, j][:, None] for j in range(3))
        N = _skewed_queries(col(mom0), col(mom1), level, need[None, :])      # (R', G): every r and N_w at once
        total = nw[None, :] + N * (1 + rs[keep][:, None])
        i, j = np.unravel_index(int(np.argmin(total)), total.shape)
        if total[i, j] < best.total:
            best = MixBudget(float(total[i, j]), float(nw[j]), float(N[i, j]), int(rs[keep][i]))
    return best


def weight_shift(visible: Mixture, delta: float) -> Mixture:
    """Family A: the same components with ``delta`` of weight moved from the last component to the first."""
    if not isinstance(visible, ProductMixture) or visible.k < 2:
        raise ValueError("weight_shift is defined for product mixtures of at least two components")
    shift = np.zeros(visible.k)
    shift[0], shift[-1] = delta, -delta
    return ProductMixture(visible.weights + shift, visible.marginals)


def local_perturbation(visible: Mixture, delta: float, coords=(0, 1)) -> Mixture:
    """Family B: component 1's marginals at ``coords`` lowered by ``delta`` (weights unchanged)."""
    if not isinstance(visible, ProductMixture):
        raise ValueError("local_perturbation is defined for product mixtures")
    marg = visible.marginals.copy()
    marg[0, list(coords)] -= delta
    return ProductMixture(visible.weights, marg)


def split_perturbation(visible: Mixture, delta: float, coords=(0, 1)) -> Mixture:
    """Family C: half of each kind, a weight shift ``delta/2`` and component 1's marginals at ``coords``
    lowered by ``delta/2``, so that ``KL(pi||mu)`` splits between the local term and the weight term (I4):
    the worst case for the union T_mix, which spends ``alpha/2`` on each part (T_comb combines them instead)."""
    return local_perturbation(weight_shift(visible, delta / 2), delta / 2, coords)
