"""The Invariant Contamination Ratio and its estimators (paper §3, Eq. 5, App. B.5-B.6, App. D).

For a representation ``h = h(a(x0))`` under random perturbations ``a`` (augmentation, then noise):

* invariant component ``s(x0) = E_a[h | x0]``, residual ``xi = h - s(x0)``;
  law of total covariance ``Sigma_h = Sigma_s + Sigma_xi``;
* Fisher directions ``Sigma_s v = lambda Sigma_xi v`` (generalised eigenproblem, each image its own class);
* ``ICR = 1 / (1 + mean_i lambda_i) = d / (d + Tr(Sigma_xi^{-1} Sigma_s))`` (Eq. 5), all ``d`` eigenvalues.

Estimators: the paper's two-view estimator (App. B.6) ``Sigma_xi = Cov(h1 - h2) / 2``,
``Sigma_s = Cov((h1 + h2) / 2) - Cov(h1 - h2) / 4`` and its V-view generalisation (within/between
scatter, unbiased). In practice ``Sigma_xi`` is replaced by ``Sigma_xi + tau I`` with a small ``tau``
(here relative, ``tau = tau_rel Tr(Sigma_xi) / d``). ``Sigma_s`` estimated as a difference can be
indefinite; by default the plug-in trace form of Eq. 5 is used as is (``clip=False``); ``clip=True`` clips
the plug-in ``lambda`` at 0, which biases ICR downwards when ``Sigma_s`` is small (the chapter measures this).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla


@dataclass(frozen=True)
class ICRResult:
    """One ICR estimate with its ingredients."""

    icr: float
    eigenvalues: np.ndarray  # generalised eigenvalues lambda_i (clipped at 0 when clip=True), descending
    sigma_s: np.ndarray
    sigma_xi: np.ndarray
    tau: float
    n_samples: int
    n_views: int

    @property
    def d(self) -> int:
        return int(self.sigma_s.shape[0])

    @property
    def trace_s(self) -> float:
        return float(np.trace(self.sigma_s))

    @property
    def trace_xi(self) -> float:
        return float(np.trace(self.sigma_xi))


def _as_features(x, name: str, ndim: int) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-d array, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return a


def fisher_eigenvalues(sigma_s, sigma_xi, *, tau: float = 0.0) -> np.ndarray:
    """Generalised eigenvalues of ``Sigma_s v = lambda (Sigma_xi + tau I) v``, descending (Eq. 4).

    Solved by LAPACK's generalised symmetric solver (``scipy.linalg.eigh(a, b)``: Cholesky of ``b``, then a
    symmetric eigenproblem).
    """
    s = _as_features(sigma_s, "sigma_s", 2)
    xi = _as_features(sigma_xi, "sigma_xi", 2)
    if s.shape != xi.shape or s.shape[0] != s.shape[1]:
        raise ValueError(f"sigma_s and sigma_xi must be square and of the same shape, got {s.shape}, {xi.shape}")
    d = s.shape[0]
    b = xi + tau * np.eye(d) if tau else xi
    try:
        lam = sla.eigh((s + s.T) / 2, (b + b.T) / 2, eigvals_only=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError("the residual covariance (+ tau I) is not positive definite: use more samples/views "
                         "or a positive tau") from None
    return lam[::-1]


def icr_from_covariances(sigma_s, sigma_xi, *, tau: float | None = None, tau_rel: float = 1e-4,
                         clip: bool = False) -> tuple[float, np.ndarray, float]:
    """``ICR = d / (d + sum_i lambda_i)`` (Eq. 5) from given covariances; returns ``(icr, lambdas, tau)``.

    ``tau`` defaults to ``tau_rel * Tr(Sigma_xi) / d``; ``tau=0`` gives the exact, unregularised value.
    """
    xi = _as_features(sigma_xi, "sigma_xi", 2)
    d = xi.shape[0]
    if tau is None:
        if tau_rel < 0:
            raise ValueError(f"tau_rel must be >= 0, got {tau_rel}")
        tau = tau_rel * float(np.trace(xi)) / d
    if tau < 0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    lam = fisher_eigenvalues(sigma_s, xi, tau=tau)
    if clip:
        lam = np.clip(lam, 0.0, None)
    return float(d / (d + lam.sum())), lam, float(tau)


def decompose_two_view(h1, h2) -> tuple[np.ndarray, np.ndarray]:
    """App. B.6: ``Sigma_xi = Cov(h1 - h2) / 2``, ``Sigma_s = Cov((h1 + h2) / 2) - Cov(h1 - h2) / 4``."""
    a, b = _as_features(h1, "features_view1", 2), _as_features(h2, "features_view2", 2)
    if a.shape != b.shape:
        raise ValueError(f"the two views must have the same shape, got {a.shape} and {b.shape}")
    n, d = a.shape
    if n < d + 1:
        raise ValueError(
            f"the two-view estimator needs at least d + 1 = {d + 1} samples for a non-singular residual "
            f"covariance of {d}-d features, got {n}; use more images or icr_multiview with "
            f"V >= {math.ceil(d / n) + 1} views per image")
    t, diff = (a + b) / 2, a - b
    cov_d = np.cov(diff, rowvar=False)
    return np.cov(t, rowvar=False) - cov_d / 4, cov_d / 2


def decompose_views(views) -> tuple[np.ndarray, np.ndarray]:
    """V-view estimator for ``views`` of shape ``(N, V, d)`` (brief §3.2 item 2).

    ``Sigma_xi = SS_within / (N (V - 1))``, ``Sigma_s = Cov(view means) - Sigma_xi / V`` (both unbiased);
    with V = 2 it equals the two-view estimator up to the centring of ``h1 - h2``.
    """
    h = _as_features(views, "views", 3)
    n, v, d = h.shape
    if v < 2:
        raise ValueError(f"need at least 2 views per image, got {v}")
    if n < 2:
        raise ValueError(f"need at least 2 images, got {n}")
    if n * (v - 1) < d:
        raise ValueError(
            f"{n} images x {v} views give a residual covariance of rank <= N(V-1) = {n * (v - 1)} < d = {d}: "
            f"it is singular; use V >= {math.ceil(d / n) + 1} views per image (or >= {math.ceil(d / (v - 1))} images)")
    return _within_between(h)


def _within_between(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, v, d = h.shape
    means = h.mean(axis=1)
    centred = (h - means[:, None, :]).reshape(n * v, d)
    sigma_xi = centred.T @ centred / (n * (v - 1))
    sigma_s = np.cov(means, rowvar=False) - sigma_xi / v
    return sigma_s, sigma_xi


def debiased_trace(trace_plugin: float, d: int, n_views: int, dof: int) -> float:
    """Remove the inverse-Wishart bias of the plug-in ``Tr(Sigma_xi_hat^{-1} Sigma_s_hat)`` [our derivation].

    Both estimators have the form ``Sigma_s_hat = B - Sigma_xi_hat / V`` with ``E B = Sigma_s + Sigma_xi / V``
    (``B = Cov(t)``, V = 2, for the two-view estimator; ``B = Cov(view means)`` for V views), so
    ``Tr(Sigma_xi_hat^{-1} Sigma_s_hat) = Tr(Sigma_xi_hat^{-1} B) - d / V``. For Gaussian features ``B`` and
    ``Sigma_xi_hat`` are independent and ``E Sigma_xi_hat^{-1} = kappa Sigma_xi^{-1}``, ``kappa = m / (m - d - 1)``
    with ``m`` = the residual degrees of freedom (``N - 1`` two-view, ``N (V - 1)`` V-view). Hence
    ``E[plug-in] = kappa (T + d / V) - d / V`` and ``T_hat = (plug-in + d / V) / kappa - d / V`` is unbiased;
    it is clamped at 0 so that ICR stays in (0, 1]. The plug-in bias, ``~ d^2 / (V m)``, does not vanish when
    ``Sigma_s = 0``: it is what separates the two-view from the many-view estimate at large sigma.
    """
    if dof <= d + 1:
        raise ValueError(f"the bias correction needs more residual degrees of freedom ({dof}) than d + 1 = {d + 1}")
    kappa = dof / (dof - d - 1)
    return max(0.0, (trace_plugin + d / n_views) / kappa - d / n_views)


def _finish(s, xi, n: int, v: int, dof: int, tau, tau_rel, clip: bool, debias: bool) -> ICRResult:
    if clip and debias:
        raise ValueError("clip and debias are exclusive: the bias correction applies to the unclipped trace")
    value, lam, tau = icr_from_covariances(s, xi, tau=tau, tau_rel=tau_rel, clip=clip)
    if debias:
        d = s.shape[0]
        value = d / (d + debiased_trace(float(lam.sum()), d, v, dof))
    return ICRResult(float(value), lam, s, xi, tau, int(n), int(v))


def icr(features_view1, features_view2, *, tau: float | None = None, tau_rel: float = 1e-4,
        clip: bool = False, debias: bool = False) -> ICRResult:
    """The paper's two-view ICR estimate (Eq. 5 with App. B.6) from ``(N, d)`` features of two views.

    ``debias=True`` applies :func:`debiased_trace` (our correction, not the paper's).
    """
    s, xi = decompose_two_view(features_view1, features_view2)
    n = int(np.shape(features_view1)[0])
    return _finish(s, xi, n, 2, n - 1, tau, tau_rel, clip, debias)


def icr_multiview(views, *, tau: float | None = None, tau_rel: float = 1e-4, clip: bool = False,
                  debias: bool = False) -> ICRResult:
    """ICR from ``V >= 2`` views per image, ``views`` of shape ``(N, V, d)`` (``debias`` as in :func:`icr`)."""
    s, xi = decompose_views(views)
    n, v, _ = np.shape(views)
    return _finish(s, xi, n, v, n * (v - 1), tau, tau_rel, clip, debias)


def trace_ratio(sigma_s, sigma_xi) -> float:
    """Baseline ``Tr(Sigma_xi) / Tr(Sigma_s)``: not invariant to linear maps of the features (§3.2 item 4)."""
    return float(np.trace(sigma_xi) / np.trace(sigma_s))


def alignment(views) -> float:
    """Alignment loss ``E ||h(a1 x) - h(a2 x)||^2`` on l2-normalised features (paper Fig. 10 baseline)."""
    h = l2_normalise(_as_features(views, "views", 3))
    return float(((h[:, 0] - h[:, 1]) ** 2).sum(-1).mean())


def l2_normalise(h: np.ndarray) -> np.ndarray:
    """Unit-norm features along the last axis (paper Fig. 7 uses these for the traces)."""
    return h / np.maximum(np.linalg.norm(h, axis=-1, keepdims=True), 1e-12)


def normalised_traces(views) -> tuple[float, float]:
    """``(Tr Sigma_s, Tr Sigma_xi)`` of l2-normalised features (paper Fig. 7/8)."""
    h = _as_features(views, "views", 3)
    if h.shape[0] < 2 or h.shape[1] < 2:
        raise ValueError(f"need at least 2 images and 2 views, got shape {h.shape}")
    s, xi = _within_between(l2_normalise(h))
    return float(np.trace(s)), float(np.trace(xi))
