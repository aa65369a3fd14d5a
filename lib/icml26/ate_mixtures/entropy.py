"""Entropy functionals of Section 3 of the brief, computed exactly on {0,1}^n.

* ``Ent_mu[f] = E_mu[phi(f)] - phi(E_mu f)``, ``phi(u) = u log u`` (so ``Ent_mu[nu/mu] = KL(nu||mu)``);
* the local functional (Definition 1) ``L_mu[f] = sum_i E_{x~mu}[ Ent_{mu(.|x_{-i})} f ]`` (no 1/n);
* c-ATE (Definition 2): ``Ent_mu[f] <= c L_mu[f]`` for all ``f >= 0``;
* the Glauber Dirichlet form ``E_mu(f, g)`` (MLSI uses ``E_mu(f, log f)``).

:func:`mixture_identities` evaluates both sides of I1-I6 and of the T* recursion, all of which are
our re-derivation (labelled [R] in the brief), not statements copied from the paper.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import rel_entr, xlogy

from .glauber import _as_distribution, glauber_matrix, n_of
from .models import Mixture


def phi(u: np.ndarray) -> np.ndarray:
    """``u log u`` with ``0 log 0 = 0`` (``scipy.special.xlogy(u, u)``)."""
    return xlogy(u, u)


def _check_f(f, size: int) -> np.ndarray:
    f = np.asarray(f, dtype=float)
    if f.shape != (size,):
        raise ValueError(f"f must be a vector of length {size}, got shape {f.shape}")
    if not np.all(np.isfinite(f)) or np.any(f < 0):
        raise ValueError("f must be finite and non-negative")
    return f


def entropy(mu, f) -> float:
    """``Ent_mu[f] = E_mu[f log f] - E_mu[f] log E_mu[f]``."""
    mu = _as_distribution(mu)
    f = _check_f(f, mu.size)
    return float(mu @ phi(f) - phi(mu @ f))


def _prob_pair(nu, mu, what: str) -> tuple[np.ndarray, np.ndarray]:
    nu, mu = np.asarray(nu, dtype=float), np.asarray(mu, dtype=float)
    if nu.ndim != 1 or nu.shape != mu.shape:
        raise ValueError(f"{what}: nu and mu must be 1-d arrays of the same length, got {nu.shape} and {mu.shape}")
    for name, v in (("nu", nu), ("mu", mu)):
        if not np.all(np.isfinite(v)) or np.any(v < 0) or abs(v.sum() - 1) > 1e-9:
            raise ValueError(f"{what}: {name} must be a probability vector (finite, >= 0, summing to 1)")
    return nu, mu


def kl(nu, mu) -> float:
    """``KL(nu || mu)`` for probability vectors (``inf`` if ``nu`` is not absolutely continuous);
    ``scipy.special.rel_entr`` elementwise."""
    nu, mu = _prob_pair(nu, mu, "kl")
    return float(np.sum(rel_entr(nu, mu)))


def density(nu, mu) -> np.ndarray:
    """``f = nu / mu`` (0 where ``mu = 0``)."""
    nu, mu = _prob_pair(nu, mu, "density")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mu > 0, nu / np.where(mu > 0, mu, 1.0), 0.0)


def _pairs(n: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    """States with ``x_i = 0`` and their partners with ``x_i = 1``."""
    x = np.arange(2 ** n)
    x0 = x[((x >> i) & 1) == 0]
    return x0, x0 | (1 << i)


def local_functional(mu, f) -> float:
    """Definition 1: ``L_mu[f] = sum_i E_{x~mu}[ Ent_{mu(.|x_{-i})} f ]``.

    On {0,1}^n the conditional law ``mu(.|x_{-i})`` lives on the pair ``{x^{i<-0}, x^{i<-1}}`` with
    weights proportional to ``mu``; pair ``(x0, x1)`` carries outer mass ``mu(x0) + mu(x1)``.
    """
    mu = _as_distribution(mu)
    f = _check_f(f, mu.size)
    n, total = n_of(mu), 0.0
    for i in range(n):
        x0, x1 = _pairs(n, i)
        s = mu[x0] + mu[x1]
        ok = s > 0
        w0, w1 = mu[x0][ok] / s[ok], mu[x1][ok] / s[ok]
        f0, f1 = f[x0][ok], f[x1][ok]
        ent = w0 * phi(f0) + w1 * phi(f1) - phi(w0 * f0 + w1 * f1)
        total += float(np.sum(s[ok] * ent))
    return total


def _kl_bern(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``KL(Bern(q) || Bern(p))``, elementwise (``scipy.special.rel_entr``)."""
    return rel_entr(q, p) + rel_entr(1 - q, 1 - p)


def local_kl(pi, mu) -> float:
    """(I5) ``sum_i E_{x~pi} KL(pi(.|x_{-i}) || mu(.|x_{-i}))``: what a coordinate oracle can probe."""
    pi, mu = _as_distribution(pi), _as_distribution(mu)
    n, total = n_of(mu), 0.0
    for i in range(n):
        x0, x1 = _pairs(n, i)
        sp_, sm = pi[x0] + pi[x1], mu[x0] + mu[x1]
        ok = sp_ > 0
        q, p = pi[x1][ok] / sp_[ok], mu[x1][ok] / sm[ok]
        total += float(np.sum(sp_[ok] * _kl_bern(q, p)))
    return total


def dirichlet_form(mu, f, g) -> float:
    """Glauber Dirichlet form ``E_mu(f, g) = (1/2) sum_{x,y} mu(x) P(x,y) (f(x)-f(y)) (g(x)-g(y))``.

    For {0,1}^n each edge ``{x, x^i}`` has weight ``mu(x) mu(x^i) / (n (mu(x) + mu(x^i)))`` (half a
    harmonic mean: concave and 1-homogeneous, hence superadditive over mixtures; remark under I3).
    """
    mu = _as_distribution(mu)
    f, g = np.asarray(f, dtype=float), np.asarray(g, dtype=float)
    if f.shape != mu.shape or g.shape != mu.shape:
        raise ValueError(f"f and g must be vectors of length {mu.size}, got shapes {f.shape} and {g.shape}")
    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(g))):
        raise ValueError("f and g must be finite")
    n, total = n_of(mu), 0.0
    for i in range(n):
        x0, x1 = _pairs(n, i)
        s = mu[x0] + mu[x1]
        ok = s > 0
        w = mu[x0][ok] * mu[x1][ok] / (n * s[ok])
        total += float(np.sum(w * (f[x0][ok] - f[x1][ok]) * (g[x0][ok] - g[x1][ok])))
    return total


def component_law(model: Mixture, nu) -> np.ndarray:
    """``rho_nu(a) = sum_x nu(x) p(a|x)``: the component label's law when ``x ~ nu``, ``a ~ p(.|x)`` (I2)."""
    nu, _ = _prob_pair(nu, model.mu, "component_law")
    return model.posterior @ nu


def between_entropy(model: Mixture, f) -> float:
    """``Ent_{a~rho}[E_{mu_a} f]``: the between-component term of the chain rule I1."""
    means = model.components @ _check_f(f, model.mu.size)
    return float(model.weights @ phi(means) - phi(model.weights @ means))


def ate_constant_lower_bound(mu, nu) -> float:
    """``KL(nu||mu) / L_mu[nu/mu]``: any valid ATE constant of ``mu`` is at least this."""
    mu = _as_distribution(mu)
    return kl(nu, mu) / local_functional(mu, density(nu, mu))


def tstar_bound(t, n: int, m, k: int, mu_min: float, c: float = 1.0):
    """(T*) ``E TV(pi P^t, mu) <= sqrt((exp(-t/(c n)) log(1/mu_min) + (k-1)/m) / 2)``.

    Our self-contained special case of the paper's Theorem 4: mixture of ``k`` c-ATE components,
    ``pi`` the empirical distribution of ``m`` i.i.d. samples, random-scan Glauber for ``t`` steps.
    """
    t, m = np.asarray(t, dtype=float), np.asarray(m, dtype=float)
    if not 0 < mu_min <= 1:
        raise ValueError("mu_min must lie in (0, 1]")
    if not (np.isfinite(c) and c > 0):
        raise ValueError(f"the ATE constant c must be positive and finite, got {c}")
    if int(n) != n or n < 1 or int(k) != k or k < 1:
        raise ValueError(f"n and k must be positive integers, got n = {n}, k = {k}")
    if np.any(t < 0):
        raise ValueError("t must be >= 0")
    if np.any(m < 1):
        raise ValueError("m must be >= 1")
    return np.sqrt((np.exp(-t / (c * n)) * np.log(1.0 / mu_min) + (k - 1) / m) / 2)


def empirical_constant(t, n: int, m: int, k: int, mu_min: float, tv) -> float:
    """The smallest constant ``c`` for which T*'s right-hand side (:func:`tstar_bound`) stays at or above the
    measured ``E TV`` curve ``tv`` at every time ``t``: what the data demand of ``c``, to set beside the proven constant.

    At each ``t > 0`` the bound holds iff ``exp(-t/(c n)) >= R(t) = (2 tv^2 - (k-1)/m) / log(1/mu_min)``: any ``c``
    where ``R <= 0`` (the curve is at its floor), ``c >= t / (n log(1/R))`` where ``0 < R < 1``, and no finite ``c``
    where ``R >= 1``. Returns the largest of these lower limits (``0.0`` when the curve is at or below its floor
    throughout, ``inf`` when no ``c`` works). A proven ``c`` far above this value means the bound is loose and
    its check cannot tell that constant from a smaller one.
    """
    t, tv = np.asarray(t, dtype=float), np.asarray(tv, dtype=float)
    if t.shape != tv.shape or t.ndim != 1:
        raise ValueError(f"t and tv must be 1-d arrays of one length, got shapes {t.shape} and {tv.shape}")
    if not np.all(np.isfinite(tv)) or np.any(tv < 0):
        raise ValueError("tv must be finite and non-negative")
    tstar_bound(t, n, m, k, mu_min)  # validates n, m, k, mu_min, t
    R = (2 * tv ** 2 - (k - 1) / m) / np.log(1.0 / mu_min)
    if np.any(R[t == 0] > 1):
        return math.inf
    live = (t > 0) & (R > 0)
    if np.any(R[live] >= 1):
        return math.inf
    return float(np.max(t[live] / (n * -np.log(R[live])), initial=0.0))


def entropy_form_constant(times, n: int, m: int, k: int, kl) -> float:
    """The smallest ``c`` with ``kl(t) <= exp(-t/(c n)) kl(0) + (k-1)/m`` at every time: what a measured
    ``E KL(pi H_t || mu)`` curve demands of the constant in the entropy form of T* (before Pinsker).
    ``0.0`` when the curve is under ``(k-1)/m`` at every ``t > 0``."""
    times, kl = np.asarray(times, dtype=float), np.asarray(kl, dtype=float)
    if times.shape != kl.shape or times.ndim != 1 or times[0] != 0:
        raise ValueError("times (starting at 0) and kl must be 1-d arrays of one length")
    excess = kl - (k - 1) / m
    live = (times > 0) & (excess > 0)
    if np.any(excess[live] >= kl[0]):
        return math.inf
    return float(np.max(times[live] / (n * np.log(kl[0] / excess[live])), initial=0.0))


def mlsi_form_bound(times, n: int, c: float, D0: float, K) -> np.ndarray:
    """The MLSI form of T* for one start, in continuous time: ``D_t <= e^{-t/(c n)} D_0 + (1 - e^{-t/(c n)}) max_{s<=t} K_s``.

    ``D_t = KL(nu H_t || mu)`` and ``K_t = KL(rho_{nu H_t} || rho)`` (I2). For ``c``-MLSI components (``Ent <= c n E(f, log f)``)
    on the binary cube, superadditivity of the Dirichlet form (q = 2) and the chain rule I1 give
    ``d/dt D_t <= -(D_t - K_t)/(c n)``; Gronwall with ``K`` replaced by its running maximum gives this bound.
    """
    times, K = np.asarray(times, dtype=float), np.asarray(K, dtype=float)
    if times.ndim != 1 or K.shape != times.shape or np.any(np.diff(times) <= 0) or times[0] != 0:
        raise ValueError("times (increasing, starting at 0) and K must be 1-d arrays of one length")
    if not (np.isfinite(c) and c > 0) or not np.isfinite(D0) or D0 < 0 or not np.all(np.isfinite(K)):
        raise ValueError("c must be positive and D0, K finite")
    e = np.exp(-times / (c * n))
    return e * D0 + (1 - e) * np.maximum.accumulate(K)


def mlsi_form_constant(times, n: int, D, K) -> float:
    """The smallest ``c`` under which a measured curve ``D`` stays at or below :func:`mlsi_form_bound` at every time:
    what one start demands of the MLSI constant. At ``t > 0`` the bound holds iff ``e^{-t/(c n)} >= R_t =
    (D_t - Kbar_t)/(D_0 - Kbar_t)`` (``Kbar`` the running maximum of ``K``): any ``c`` where ``R_t <= 0``, else
    ``c >= t / (n log(1/R_t))``; ``inf`` where ``R_t >= 1``. A start at the function that attains the MLSI constant
    demands that constant in the limit ``t -> 0``, so this resolves the constant where a data-based start need not."""
    times, D, K = (np.asarray(a, dtype=float) for a in (times, D, K))
    mlsi_form_bound(times, n, 1.0, float(D[0]) if D.size else 0.0, K)  # validates the grid and K
    if D.shape != times.shape or not np.all(np.isfinite(D)):
        raise ValueError("D must be a finite curve on the time grid")
    Kbar = np.maximum.accumulate(K)
    head = D[0] - Kbar
    live = (times > 0) & (D > Kbar)
    if np.any(live & (head <= 0)) or np.any(D[live] - Kbar[live] >= head[live]):
        return math.inf
    R = (D[live] - Kbar[live]) / head[live]
    return float(np.max(times[live] / (n * -np.log(R)), initial=0.0))


IDENTITY_KEYS = frozenset({"I1 chain rule (error)", "I2 between term = KL(rho_nu||rho) (error)",
                           "I5 L_mu[pi/mu] = sum_i E_pi KL_i (error)"})
"""The keys of :func:`mixture_identities` that are identities (errors); the others are inequality slacks."""


def mixture_identities(model: Mixture, nu, c: float = 1.0, P=None) -> dict[str, float]:
    """Both sides of I1-I6 and of the T* recursion for one density ``f = nu/mu`` (brief Section 3).

    Returns *errors* (``|lhs - rhs|``) for the identities (keys in :data:`IDENTITY_KEYS`) and *slacks*
    (``rhs - lhs``, >= 0 when the inequality holds) for the inequalities. ``c`` is the ATE constant of the components (1 for products).
    """
    mu = model.mu
    n = model.n
    nu = _as_distribution(nu)
    f = density(nu, mu)
    P = glauber_matrix(mu) if P is None else P
    ent = entropy(mu, f)
    within = float(sum(r * entropy(comp, f) for r, comp in zip(model.weights, model.components)))
    between = between_entropy(model, f)
    rho_nu = component_law(model, nu)
    K = kl(rho_nu, model.weights)
    L = local_functional(mu, f)
    L_comp = float(sum(r * local_functional(comp, f) for r, comp in zip(model.weights, model.components)))
    nuP = P.T @ nu
    D1 = kl(nuP, mu)
    logf = np.log(np.where(f > 0, f, 1.0))
    out = {
        "I1 chain rule (error)": abs(ent - (within + between)),
        "I2 between term = KL(rho_nu||rho) (error)": abs(between - K),
        "I5 L_mu[pi/mu] = sum_i E_pi KL_i (error)": abs(L - local_kl(nu, mu)),
        "I3 superadditivity of L (slack)": L - L_comp,
        "I4 weak ATE (slack)": (c * L + K) - ent,
        "I6 one-step decay, any mu (slack)": (ent - L / n) - D1,
        "T* recursion (slack)": ((1 - 1 / (c * n)) * ent + K / (c * n)) - D1,
        "ATE of each component (slack)": min(c * local_functional(comp, f) - entropy(comp, f) for comp in model.components),
    }
    if np.all(f > 0):  # MLSI Dirichlet form needs log f
        mix = dirichlet_form(mu, f, logf)
        comps = sum(r * dirichlet_form(comp, f, logf) for r, comp in zip(model.weights, model.components))
        out["Dirichlet form E(f, log f) superadditive, q = 2 (slack)"] = mix - comps
    return out
