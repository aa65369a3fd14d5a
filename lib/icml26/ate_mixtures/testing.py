"""Identity testing in the coordinate-conditional sampling model (brief Sections 2-3, F5).

The visible ``mu`` is explicit; the hidden ``pi`` is reached through i.i.d. samples and a
*coordinate oracle* ``(x, i) -> y_i ~ pi(. | x_{-i})``. Decide ``pi = mu`` against ``TV(pi, mu) >= eps``.

By the weak-ATE inequality (I4), ``KL(pi||mu) <= c L_mu[pi/mu] + KL(rho_pi || rho)``: a discrepancy is
either *local* (seen by the oracle, I5) or a *mixture-weight* discrepancy (seen by the posterior
component labels of samples, I2). Hence three testers:

* ``T_loc`` (BCSV23-style): ``x ~ pi``, ``i ~ Unif[n]``, ``r`` oracle draws; statistic = mean over
  queries of the unbiased estimate of ``chi^2(pi(.|x_{-i}) || mu(.|x_{-i}))``;
* ``T_w``: ``x ~ pi``, ``a ~ p_mu(.|x)`` (posterior under the *visible* mixture), Pearson chi-square
  of the label counts against ``rho`` (assumes computable posteriors, true for exact enumeration);
* ``T_mix``: reject if either rejects at level ``alpha/2``.

Thresholds are the ``1-alpha`` (resp. ``1-alpha/2``) quantiles of the statistics simulated under the
null ``pi = mu``. The paper's own tester and its query complexity are not available to us: these are
our stand-ins built on the decomposition I4.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .models import Mixture

TESTERS = ("T_loc", "T_w", "T_mix")


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


def _draw(mu: np.ndarray, shape, rng) -> np.ndarray:
    cdf = np.cumsum(mu)
    return np.minimum(np.searchsorted(cdf, rng.random(shape) * cdf[-1], side="right"), mu.size - 1)


def weight_statistic(visible: Mixture, hidden: Mixture, n_w: int, trials: int, rng) -> np.ndarray:
    """T_w statistic for ``trials`` independent tests: Pearson chi-square of posterior labels vs ``rho``."""
    _check_pair(visible, hidden)
    x = _draw(hidden.mu, (trials, n_w), rng)
    cpost = np.cumsum(visible.posterior[:, x], axis=0)  # (k, trials, n_w)
    a = (rng.random((trials, n_w))[None] > cpost).sum(axis=0)
    a = np.minimum(a, visible.k - 1)
    counts = np.stack([(a == j).sum(axis=1) for j in range(visible.k)], axis=1)
    expected = n_w * visible.weights
    keep = expected > 0
    return (((counts - expected) ** 2)[:, keep] / expected[keep]).sum(axis=1)


def local_statistic(visible: Mixture, hidden: Mixture, n_loc: int, r: int, trials: int, rng) -> np.ndarray:
    """T_loc statistic: mean over queries of the unbiased ``chi^2`` estimate of the site conditionals.

    For query ``(x, i)`` with ``c`` ones among ``r`` oracle draws from ``Bern(q)``, ``q = pi(x_i=1|x_{-i})``,
    and ``p = mu(x_i=1|x_{-i})``: ``[c(c-1)/(r(r-1)) - 2pc/r + p^2] / (p(1-p))`` is unbiased for
    ``(q-p)^2/(p(1-p)) = chi^2(Bern(q)||Bern(p))``.
    """
    _check_pair(visible, hidden)
    n = visible.n
    x = _draw(hidden.mu, (trials, n_loc), rng)
    i = rng.integers(0, n, size=(trials, n_loc))
    x1 = x | (1 << i)
    x0 = x1 ^ (1 << i)
    q = hidden.mu[x1] / (hidden.mu[x0] + hidden.mu[x1])
    p = visible.mu[x1] / (visible.mu[x0] + visible.mu[x1])
    c = rng.binomial(r, q)
    est = (c * (c - 1) / (r * (r - 1)) - 2 * p * c / r + p ** 2) / np.maximum(p * (1 - p), 1e-12)
    return est.mean(axis=1)


def statistics(visible: Mixture, hidden: Mixture, budget: TesterBudget, trials: int, rng) -> dict[str, np.ndarray]:
    return {
        "T_loc": local_statistic(visible, hidden, budget.n_loc, budget.r, trials, rng),
        "T_w": weight_statistic(visible, hidden, budget.n_w, trials, rng),
    }


def calibrate(visible: Mixture, budget: TesterBudget, n_null: int, rng) -> dict[str, float]:
    """Thresholds from ``n_null`` simulations under the null (hidden = visible)."""
    if n_null < 20:
        raise ValueError("calibration needs at least 20 null simulations")
    s = statistics(visible, visible, budget, n_null, rng)
    a = budget.alpha
    return {
        "T_loc": float(np.quantile(s["T_loc"], 1 - a)),
        "T_w": float(np.quantile(s["T_w"], 1 - a)),
        "T_loc/2": float(np.quantile(s["T_loc"], 1 - a / 2)),
        "T_w/2": float(np.quantile(s["T_w"], 1 - a / 2)),
    }


def rejection_rates(visible: Mixture, hidden: Mixture, budget: TesterBudget, thresholds: dict[str, float],
                    trials: int, rng) -> dict[str, float]:
    """Fraction of ``trials`` independent tests that reject, for T_loc, T_w and T_mix."""
    s = statistics(visible, hidden, budget, trials, rng)
    loc = s["T_loc"] > thresholds["T_loc"]
    w = s["T_w"] > thresholds["T_w"]
    mix = (s["T_loc"] > thresholds["T_loc/2"]) | (s["T_w"] > thresholds["T_w/2"])
    return {"T_loc": float(loc.mean()), "T_w": float(w.mean()), "T_mix": float(mix.mean())}


def weight_shift(visible: Mixture, delta: float) -> Mixture:
    """Family A: the same components with weights ``(rho_1 + delta, rho_2 - delta)`` (k = 2)."""
    from .models import ProductMixture

    if visible.k != 2 or not isinstance(visible, ProductMixture):
        raise ValueError("weight_shift is defined for two-component product mixtures")
    w = visible.weights + np.array([delta, -delta])
    return ProductMixture(w, visible.marginals)


def local_perturbation(visible: Mixture, delta: float, coords=(0, 1)) -> Mixture:
    """Family B: component 1's marginals at ``coords`` lowered by ``delta`` (weights unchanged)."""
    from .models import ProductMixture

    if not isinstance(visible, ProductMixture):
        raise ValueError("local_perturbation is defined for product mixtures")
    marg = visible.marginals.copy()
    marg[0, list(coords)] -= delta
    return ProductMixture(visible.weights, marg)
