"""Closed forms and numerical prototypes behind the chapter's Theory section (brief §3).

* `las_quantiles`: Monte Carlo quantiles of LAS's anchor r.
* `fixed_point_one_step_std`: the 1-D linear-Gaussian stop-gradient fixed point (brief Appendix A, our
  analysis, not the paper's): with ``A ~ N(0, s^2)`` and ``f(x, t) = c(t) x``, ``c(1) = 1``, iterate the
  least-squares fit of ``f(x_t, t)`` to the stop-gradient target ``f(x_r, r)`` (same noise). With LAS the
  fixed point is close to the posterior mean (one-step std far below s); with ``r = t + delta`` it is
  close to the flow map (std near s).
* `flow_map_slope`, `posterior_mean_slope`: ``s / sigma_t`` and ``t s^2 / sigma_t^2`` with
  ``sigma_t^2 = t^2 s^2 + (1 - t)^2``.
"""
from __future__ import annotations

import numpy as np
import torch

from .sampler import LASSampler


def sigma_t(t, s: float = 1.0):
    return np.sqrt(np.asarray(t) ** 2 * s ** 2 + (1 - np.asarray(t)) ** 2)


def flow_map_slope(t, s: float = 1.0):
    """Exact ODE flow map of the 1-D Gaussian from time t to 1: ``x_1 = (s / sigma_t) x_t``."""
    return s / sigma_t(t, s)


def posterior_mean_slope(t, s: float = 1.0):
    """``E[A | x_t] = (t s^2 / sigma_t^2) x_t``."""
    return np.asarray(t) * s ** 2 / sigma_t(t, s) ** 2


def las_quantiles(sampler: LASSampler | None = None, n: int = 200_000, qs=(0.05, 0.25, 0.5, 0.75, 0.95),
                  seed: int = 0) -> dict[float, float]:
    """Monte Carlo quantiles of the LAS anchor r (brief §2.3: 0.317 / 0.861 / 0.968 / 0.991 / 0.998)."""
    sampler = sampler or LASSampler()
    r = sampler.anchor(n, torch.Generator().manual_seed(seed)).double().numpy()
    return {float(q): float(np.quantile(r, q)) for q in qs}


def fixed_point_one_step_std(mode="LAS", s: float = 1.0, deg: int = 4, iters: int = 300, n: int = 20_000,
                             damping: float = 0.3, seed: int = 0, sampler: LASSampler | None = None,
                             t_eval: float = 0.01) -> float:
    """One-step sample std at ``t_eval`` of the stop-gradient fixed point (brief Appendix A).

    ``mode``: ``"LAS"`` (the anchor of `sampler`, default `LASSampler()`) or a float delta for
    ``r = min(t + delta, 1)``. ``f(x, t) = c(t) x`` with ``c(t) = 1 + (1 - t) sum_k w_k t^k`` so that
    ``f(x, 1) = x``; each iteration regresses ``f(x_t, t) - x_t`` on the stop-gradient target.
    """
    if not s > 0:
        raise ValueError(f"s must be > 0, got {s}")
    rng = np.random.default_rng(seed)
    sampler = sampler or LASSampler()
    gen = torch.Generator().manual_seed(seed + 1)

    def features(t):
        return np.stack([(1 - t) * t ** k for k in range(deg)], -1)

    w = np.zeros(deg)
    for _ in range(iters):
        t = rng.random(n) * 0.99 + 0.01
        if mode == "LAS":
            r = sampler.anchor(n, gen).double().numpy()
        else:
            r = np.minimum(t + float(mode), 1.0)
        a = rng.normal(size=n) * s
        e = rng.normal(size=n)
        xt, xr = t * a + (1 - t) * e, r * a + (1 - r) * e
        y = (1 + features(r) @ w) * xr
        w = (1 - damping) * w + damping * np.linalg.lstsq(features(t) * xt[:, None], y - xt, rcond=None)[0]
    c0 = 1 + features(np.array([t_eval])) @ w
    return float(abs(c0[0]) * sigma_t(t_eval, s))
