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
                                delta_max: float = 1e-3, seed: int = 1, w0: np.ndarray | None = None) -> dict:
    """Fixed point of L_BC for a linear flow-map policy on ``a ~ N(0, s^2)`` (brief Appendix A).

    ``u(x, r, t) = alpha(r, t) x`` with ``alpha`` a cubic polynomial in (r, t), so ``pi = c(r, t) x`` with
    ``c = 1 - (t - r) alpha``. Each iteration draws a batch, builds the stop-gradient two-hop target with
    the current weights, and solves the least-squares problem of the Bernoulli(lambda)-mixed rows
    (composition rows with prob 1 - lambda, boundary rows with prob lambda), damped by 1/2.
    Returns the one-step slope ``c(0, 1)`` (exact: ``s``; identity: 1) and its trajectory.
    ``w0``: the starting weights (default zeros: the identity map ``c = 1``, which composition alone
    never leaves: ``lambda = 0`` started there stays there exactly, so that start tests nothing).
    """
    if not 0 <= lam <= 1:
        raise ValueError(f"lambda must be in [0, 1], got {lam}")
    if not 0 < delta_max < 1:
        raise ValueError(f"delta_max must be in (0, 1), got {delta_max}")
    rng = np.random.default_rng(seed)
    w = np.zeros(len(_POWERS)) if w0 is None else np.asarray(w0, dtype=np.float64).copy()
    if w.shape != (len(_POWERS),):
        raise ValueError(f"w0 must have {len(_POWERS)} weights, got shape {w.shape}")
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


def random_start_slopes(lam: float, starts: int, s_value: float = 0.5, iters: int = 100, n: int = 5000,
                        scale: float = 1.0, seed: int = 11) -> np.ndarray:
    """The one-step slope ``c(0, 1)`` reached from ``starts`` random weight vectors ``w0 ~ N(0, scale^2)``
    (non-finite results, a divergence, are returned as ``inf``). With ``lambda = 0`` only composition acts,
    which every semigroup ``c(r, t) = g(r)/g(t)`` satisfies: the map is *unidentified*, the end point
    depends on the start."""
    if starts < 1:
        raise ValueError(f"starts must be >= 1, got {starts}")
    rng = np.random.default_rng(seed)
    out = []
    for k in range(starts):
        w0 = rng.normal(scale=scale, size=len(_POWERS))
        with np.errstate(all="ignore"):
            slope = linear_gaussian_fixed_point(lam, s_value, iters=iters, n=n, seed=seed + 1 + k, w0=w0)["slope"]
        out.append(slope if np.isfinite(slope) else np.inf)
    return np.array(out)


# ------------------------------------------------------------------ the library's losses on the exact map
def exact_map_losses(s_value: float = 0.5, mu: float = 0.3, n: int = 20_000, seed: int = 0) -> dict:
    """`FlowMapPolicy`'s own composition and boundary losses evaluated on the *exact* Gaussian flow map.

    A `FlowMapPolicy` whose network is replaced by the exact average velocity
    ``u(x, r, t) = (x - pi(x, r, t)) / (t - r)`` (``v(x, t)`` at ``r = t``) for ``a ~ N(mu, s^2)``. The
    library's ``composition_loss`` must vanish on it (the true map is its zero) and its ``boundary_loss``
    must equal the irreducible CFM variance ``E_t[Var(eps - a | a_t)] = E_t[1 + s^2 - k(t)^2 / sigma_t^2]``,
    ``k(t) = t - (1 - t) s^2`` (computed here by quadrature). Returns both losses and that variance.
    """
    import torch
    from scipy.integrate import quad

    from .flowmap import FlowMapPolicy

    sd, m = float(s_value), float(mu)

    def sig(tt):
        return torch.sqrt((1 - tt) ** 2 * sd ** 2 + tt ** 2)

    class Exact(FlowMapPolicy):
        def _raw(self, a_t, r, t, s, emb=None):
            r = torch.as_tensor(r, dtype=a_t.dtype).expand_as(a_t)
            t = torch.as_tensor(t, dtype=a_t.dtype).expand_as(a_t)
            centred = a_t - (1 - t) * m
            v = -m + (t - (1 - t) * sd ** 2) / sig(t) ** 2 * centred
            pi = (1 - r) * m + sig(r) / sig(t) * centred
            d = t - r
            return torch.where(d > 0, (a_t - pi) / torch.where(d > 0, d, torch.ones_like(d)), v)

    policy = Exact([0], 1, 0, (4,), 4).double()
    gen = torch.Generator().manual_seed(seed)
    a = (m + sd * torch.randn(1, n, 1, generator=gen, dtype=torch.float64))
    empty = torch.zeros(1, n, 0, dtype=torch.float64)
    torch_default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # the losses draw their noise and times in the default dtype
    try:
        comp = float(policy.composition_loss(a, empty, gen)[0])
        bnd = float(policy.boundary_loss(a, empty, gen)[0])
    finally:
        torch.set_default_dtype(torch_default)
    irreducible = quad(lambda tt: 1 + sd ** 2 - (tt - (1 - tt) * sd ** 2) ** 2 / ((1 - tt) ** 2 * sd ** 2 + tt ** 2), 0, 1)[0]
    return {"composition": comp, "boundary": bnd, "irreducible": irreducible}
