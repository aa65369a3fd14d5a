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


def local_query_moments(visible: Mixture, hidden: Mixture, r: int) -> tuple[float, float]:
    """Exact mean and variance of one T_loc query's unbiased chi-square estimate when the oracle is ``hidden``.

    Averages over ``x ~ pi`` (all ``2^n`` states) and ``i ~ Unif[n]`` the closed-form conditional moments
    given ``(x, i)`` (law of total variance); the mean is ``E_{x~pi, i} chi^2(pi(.|x_{-i}) || mu(.|x_{-i}))``
    (0 under the null).
    """
    _check_pair(visible, hidden)
    if r < 2:
        raise ValueError("r must be >= 2")
    n, N = visible.n, visible.mu.size
    x = np.arange(N)[:, None]
    i = np.arange(n)[None, :]
    x1 = x | (1 << i)
    x0 = x1 ^ (1 << i)
    q = hidden.mu[x1] / (hidden.mu[x0] + hidden.mu[x1])
    p = visible.mu[x1] / (visible.mu[x0] + visible.mu[x1])
    m_cond, v_cond = _chi2_estimate_moments(p, q, int(r))
    w = hidden.mu[:, None] / n
    mean = float(np.sum(w * m_cond))
    return mean, float(np.sum(w * (v_cond + m_cond ** 2)) - mean ** 2)


def local_budget(visible: Mixture, hidden: Mixture, r: int, alpha: float, power: float = 0.8) -> float:
    """Queries T_loc needs for ``power`` at level ``alpha`` (normal approximation of the mean of i.i.d. queries):
    ``N = ((z_{1-alpha} sigma_0 + z_power sigma_1) / m_1)^2`` with the exact moments of :func:`local_query_moments`."""
    m0, v0 = local_query_moments(visible, visible, r)
    m1, v1 = local_query_moments(visible, hidden, r)
    if m1 - m0 <= 0:
        return float("inf")
    za, zb = sps.norm.ppf(1 - alpha), sps.norm.ppf(power)
    return float(((za * np.sqrt(v0) + zb * np.sqrt(v1)) / (m1 - m0)) ** 2)


def oracle_calls(visible: Mixture, hidden: Mixture, rs, alpha: float, power: float = 0.8) -> tuple[float, int, float]:
    """Fewest oracle calls ``N r`` for T_loc to reach ``power``, over the draws per query ``r`` in ``rs``:
    returns ``(calls, best r, queries N at that r)`` (normal approximation, exact moments)."""
    best = (math.inf, 0, math.inf)
    for r in rs:
        N = local_budget(visible, hidden, int(r), alpha, power)
        if N * r < best[0]:
            best = (N * r, int(r), N)
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
