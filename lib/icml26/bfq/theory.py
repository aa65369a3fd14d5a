"""Closed forms for Gaussian behaviour data and the fixed points of L_BC (brief Sec. 3).

For ``a ~ N(mu, s^2)`` in BFQ's convention (t = 0 data): ``a_t ~ N((1 - t) mu, sigma_t^2)``,
``sigma_t^2 = (1 - t)^2 s^2 + t^2``, marginal velocity
``v(x, t) = -mu + (t - (1 - t) s^2)/sigma_t^2 (x - (1 - t) mu)`` and exact flow map
``pi(x, r, t) = (1 - r) mu + sigma_r/sigma_t (x - (1 - t) mu)``.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

x, r, m, t, mu = sp.symbols("x r m t mu", real=True)
s = sp.Symbol("s", positive=True)


def sigma(tt):
    return sp.sqrt((1 - tt) ** 2 * s ** 2 + tt ** 2)


def velocity_sym():
    """``v(x, t)`` for ``a ~ N(mu, s^2)``."""
    return -mu + (t - (1 - t) * s ** 2) / sigma(t) ** 2 * (x - (1 - t) * mu)


def flow_map_sym(xx=x, rr=r, tt=t):
    """``pi(x, r, t)`` for ``a ~ N(mu, s^2)``."""
    return (1 - rr) * mu + sigma(rr) / sigma(tt) * (xx - (1 - tt) * mu)


def euler_slope(K: int, s_value: float) -> float:
    """Slope d x_0 / d x_1 of K-step Euler on the exact Gaussian velocity (mu = 0): prod_k (1 - h k(t_k))."""
    if K < 1:
        raise ValueError(f"K must be >= 1, got {K}")
    h, c = 1.0 / K, 1.0
    for k in range(K):
        tk = 1.0 - k * h
        sig2 = (1 - tk) ** 2 * s_value ** 2 + tk ** 2
        c *= 1.0 - h * (tk - (1 - tk) * s_value ** 2) / sig2
    return c


# ------------------------------------------------------------------ the linear-Gaussian fixed point
_POWERS = [(i, j) for i in range(4) for j in range(4) if i + j <= 3]


def _features(rr, tt):
    return np.stack([rr ** i * tt ** j for i, j in _POWERS], -1)


def linear_gaussian_fixed_point(lam: float, s_value: float = 0.5, iters: int = 400, n: int = 20_000,
                                delta_max: float = 1e-3, seed: int = 1) -> dict:
    """Fixed point of L_BC for a linear flow-map policy on ``a ~ N(0, s^2)`` (brief Appendix A).

    ``u(x, r, t) = alpha(r, t) x`` with ``alpha`` a cubic polynomial in (r, t), so ``pi = c(r, t) x`` with
    ``c = 1 - (t - r) alpha``. Each iteration draws a batch, builds the stop-gradient two-hop target with
    the current weights, and solves the least-squares problem of the Bernoulli(lambda)-mixed rows
    (composition rows with prob 1 - lambda, boundary rows with prob lambda), damped by 1/2.
    Returns the one-step slope ``c(0, 1)`` (exact: ``s``; identity: 1) and its trajectory.
    """
    if not 0 <= lam <= 1:
        raise ValueError(f"lambda must be in [0, 1], got {lam}")
    if not 0 < delta_max < 1:
        raise ValueError(f"delta_max must be in (0, 1), got {delta_max}")
    rng = np.random.default_rng(seed)
    w = np.zeros(len(_POWERS))
    c = lambda w, rr, tt: 1 - (tt - rr) * (_features(rr, tt) @ w)
    zero, one = np.zeros(1), np.ones(1)
    trajectory = []
    for _ in range(iters):
        a = rng.normal(size=n) * s_value
        e = rng.normal(size=n)
        rr, mm, tt = np.sort(rng.random((n, 3)), 1).T
        xt = (1 - tt) * a + tt * e
        target = c(w, rr, mm) * c(w, mm, tt) * xt
        A1 = -(tt - rr)[:, None] * _features(rr, tt) * xt[:, None]
        b1 = target - xt
        D = rng.random(n) * delta_max
        A2 = _features(tt - D, tt) * xt[:, None]
        b2 = e - a
        xi = rng.random(n) < lam
        sol = np.linalg.lstsq(np.where(xi[:, None], A2, A1), np.where(xi, b2, b1), rcond=None)[0]
        w = 0.5 * w + 0.5 * sol
        trajectory.append(float(c(w, zero, one)[0]))
    return {"slope": trajectory[-1], "trajectory": np.array(trajectory), "weights": w}
