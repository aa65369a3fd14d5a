"""The Invariant Contamination Ratio and its estimators (paper §3, Eq. 4-5, App. B.5-B.6, App. D).

For a representation ``h = h(a(x0))`` under random perturbations ``a`` (augmentation, then noise):

* invariant component ``s(x0) = E_a[h | x0]``, residual ``xi = h - s(x0)``;
  law of total covariance ``Sigma_h = Sigma_s + Sigma_xi``;
* Fisher directions ``Sigma_s v = lambda Sigma_xi v`` (Eq. 4: generalised eigenproblem, each image its own class);
* ``ICR = 1 / (1 + mean_i lambda_i) = d / (d + Tr(Sigma_xi^{-1} Sigma_s))`` (Eq. 5), all ``d`` eigenvalues.

Estimators: the paper's two-view estimator (App. B.6) ``Sigma_xi = Cov(h1 - h2) / 2``,
``Sigma_s = Cov((h1 + h2) / 2) - Cov(h1 - h2) / 4`` and its V-view generalisation (within/between
scatter, unbiased).

**Regulariser** (paper footnote 2: ``Sigma_xi + tau I``; the paper gives no value). ``tau I`` is not
congruent with a linear map of the features, so it breaks the invariance ``ICR(Ah) = ICR(h)`` the paper
relies on (criterion (ii)). The default here regularises *relative to the feature covariance*,
``Sigma_xi + tau_rel Sigma_h`` with ``Sigma_h = Sigma_s + Sigma_xi``: it transforms like ``Sigma_xi`` under
``h -> A h``, so the invariance is exact, and each regularised eigenvalue is the exact monotone map
``lambda / (1 + tau_rel (1 + lambda))`` of the unregularised one. ``reg="isotropic"`` keeps the
``tau_rel Tr(Sigma_xi) / d * I`` form for comparison.

**Range.** Both estimators read ``Sigma_s_hat = B - Sigma_xi_hat / V`` with ``B`` positive semi-definite,
so every plug-in ``lambda_i >= -1/V`` and the plug-in ICR lies in ``(0, V / (V - 1)]``, not ``(0, 1]``: on
features with no invariant part it can exceed 1, but less often than not: the finite-sample law
(:func:`predicted_plugin_icr`) puts the expected plug-in trace at ``(kappa - 1) d / V > 0`` when ``Sigma_s = 0``, so the
plug-in ICR sits mostly *below* 1 (the chapter's check E1 measures the share above 1). ``clip=True`` clips the
plug-in ``lambda`` at 0 (ICR <= 1, biased low when ``Sigma_s`` is small); ``debias=True`` applies our
inverse-Wishart correction (:func:`debiased_trace`), clamped so that ICR <= 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

REGULARISERS = ("covariance", "isotropic")


@dataclass(frozen=True)
class ICRResult:
    """One ICR estimate with its ingredients.

    ``icr`` is the reported value (bias-corrected when ``debiased``); ``icr_plugin`` the plug-in value of
    Eq. 5 from the (regularised, optionally clipped) ``eigenvalues``.
    """

    icr: float
    icr_plugin: float
    eigenvalues: np.ndarray  # plug-in generalised eigenvalues (regularised; clipped at 0 when clip=True), descending
    sigma_s: np.ndarray
    sigma_xi: np.ndarray
    tau: float
    reg: str
    n_samples: int
    n_views: int
    dof: int
    debiased: bool = False

    @property
    def d(self) -> int:
        return int(self.sigma_s.shape[0])

    @property
    def trace_s(self) -> float:
        return float(np.trace(self.sigma_s))

    @property
    def trace_xi(self) -> float:
        return float(np.trace(self.sigma_xi))

    @property
    def fisher_trace(self) -> float:
        """Plug-in ``Tr(Sigma_xi^{-1} Sigma_s) = sum_i lambda_i``."""
        return float(self.eigenvalues.sum())

    @property
    def upper_bound(self) -> float:
        """``V / (V - 1)``: the largest value the plug-in ICR can take (module docstring)."""
        return self.n_views / (self.n_views - 1)


def as_array(x, name: str, ndim: int) -> np.ndarray:
    """A float64 copy of an array or tensor, checked for its number of dimensions and for NaN/infinity."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-d array, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return a


def fisher_eigenvalues(sigma_s, sigma_xi) -> np.ndarray:
    """Generalised eigenvalues of ``Sigma_s v = lambda Sigma_xi v``, descending (Eq. 4).

    LAPACK's generalised symmetric solver (``scipy.linalg.eigh(a, b)``: Cholesky of ``b``, then a symmetric
    eigenproblem). Pass a regularised ``sigma_xi`` (:func:`regularised_residual`) where it may be singular.
    """
    s = as_array(sigma_s, "sigma_s", 2)
    xi = as_array(sigma_xi, "sigma_xi", 2)
    if s.shape != xi.shape or s.shape[0] != s.shape[1]:
        raise ValueError(f"sigma_s and sigma_xi must be square and of the same shape, got {s.shape}, {xi.shape}")
    try:
        lam = sla.eigh((s + s.T) / 2, (xi + xi.T) / 2, eigvals_only=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError("the residual covariance (regularised) is not positive definite: use more samples/views "
                         "or a positive tau_rel") from None
    return lam[::-1]


def regularised_residual(sigma_s, sigma_xi, *, tau_rel: float = 1e-4, reg: str = "covariance",
                         tau: float | None = None) -> tuple[np.ndarray, float]:
    """The regularised residual covariance and the tau used (module docstring, "Regulariser").

    ``reg="covariance"``: ``Sigma_xi + tau_rel (Sigma_s + Sigma_xi)`` (exactly congruence-invariant);
    ``reg="isotropic"``: ``Sigma_xi + tau_rel Tr(Sigma_xi)/d I``. An explicit absolute ``tau`` gives
    ``Sigma_xi + tau I`` whatever ``reg`` (``tau=0``: unregularised).
    """
    s = as_array(sigma_s, "sigma_s", 2)
    xi = as_array(sigma_xi, "sigma_xi", 2)
    d = xi.shape[0]
    if tau is not None:
        if tau < 0:
            raise ValueError(f"tau must be >= 0, got {tau}")
        return (xi + tau * np.eye(d) if tau else xi), float(tau)
    if reg not in REGULARISERS:
        raise ValueError(f"unknown regulariser {reg!r}; valid: {REGULARISERS}")
    if not tau_rel >= 0:
        raise ValueError(f"tau_rel must be >= 0, got {tau_rel}")
    if reg == "covariance":
        return xi + tau_rel * (s + xi), float(tau_rel)
    tau_abs = tau_rel * float(np.trace(xi)) / d
    return xi + tau_abs * np.eye(d), tau_abs


def icr_from_covariances(sigma_s, sigma_xi, *, tau_rel: float = 1e-4, reg: str = "covariance",
                         tau: float | None = None, clip: bool = False) -> tuple[float, np.ndarray, float]:
    """``ICR = d / (d + sum_i lambda_i)`` (Eq. 5) from given covariances; returns ``(icr, lambdas, tau)``.

    Regularisation as in :func:`regularised_residual`; ``tau=0`` gives the exact, unregularised value.
    """
    b, tau_used = regularised_residual(sigma_s, sigma_xi, tau_rel=tau_rel, reg=reg, tau=tau)
    d = b.shape[0]
    lam = fisher_eigenvalues(sigma_s, b)
    if clip:
        lam = np.clip(lam, 0.0, None)
    return float(d / (d + lam.sum())), lam, tau_used


def decompose_two_view(h1, h2) -> tuple[np.ndarray, np.ndarray]:
    """App. B.6: ``Sigma_xi = Cov(h1 - h2) / 2``, ``Sigma_s = Cov((h1 + h2) / 2) - Cov(h1 - h2) / 4``."""
    a, b = as_array(h1, "features_view1", 2), as_array(h2, "features_view2", 2)
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
    """V-view estimator for ``views`` of shape ``(N, V, d)`` (law of total covariance, brief §3.2 item 2).

    ``Sigma_xi = SS_within / (N (V - 1))``, ``Sigma_s = Cov(view means) - Sigma_xi / V`` (both unbiased).
    With V = 2 it equals the two-view estimator up to the centring of ``h1 - h2`` (mean ``m``):
    ``Sigma_xi^(2) = N/(N-1) (Sigma_xi^(V) - m m^T / 2)`` and ``Sigma_s^(2) = Sigma_s^(V) + (Sigma_xi^(V) - Sigma_xi^(2)) / 2``.
    """
    h = as_array(views, "views", 3)
    n, v, d = h.shape
    if v < 2:
        raise ValueError(f"need at least 2 views per image, got {v}")
    if n < 2:
        raise ValueError(f"need at least 2 images, got {n}")
    if n * (v - 1) < d:
        raise ValueError(
            f"{n} images x {v} views give a residual covariance of rank <= N(V-1) = {n * (v - 1)} < d = {d}: "
            f"it is singular; use V >= {math.ceil(d / n) + 1} views per image (or >= {math.ceil(d / (v - 1))} images)")
    return within_between(h)


def within_between(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Sigma_s, Sigma_xi)`` of the V-view estimator, without the input checks of :func:`decompose_views`."""
    n, v, d = h.shape
    means = h.mean(axis=1)
    centred = (h - means[:, None, :]).reshape(n * v, d)
    sigma_xi = centred.T @ centred / (n * (v - 1))
    sigma_s = np.cov(means, rowvar=False) - sigma_xi / v
    return sigma_s, sigma_xi


def kappa(d: int, dof: int) -> float:
    """Inverse-Wishart mean factor ``E[Sigma_xi_hat^{-1}] = kappa Sigma_xi^{-1}``, ``kappa = m / (m - d - 1)``."""
    if dof <= d + 1:
        raise ValueError(f"the inverse-Wishart mean needs more residual degrees of freedom ({dof}) than d + 1 = {d + 1}")
    return dof / (dof - d - 1)


def debiased_trace(trace_plugin: float, d: int, n_views: int, dof: int) -> float:
    """Remove the inverse-Wishart bias of the plug-in ``Tr(Sigma_xi_hat^{-1} Sigma_s_hat)`` [our derivation].

    Both estimators have the form ``Sigma_s_hat = B - Sigma_xi_hat / V`` with ``E B = Sigma_s + Sigma_xi / V``
    (``B = Cov(t)``, V = 2, for the two-view estimator; ``B = Cov(view means)`` for V views), so
    ``Tr(Sigma_xi_hat^{-1} Sigma_s_hat) = Tr(Sigma_xi_hat^{-1} B) - d / V``. For Gaussian features ``B`` and
    ``Sigma_xi_hat`` are independent and ``E Sigma_xi_hat^{-1} = kappa Sigma_xi^{-1}``, ``kappa = m / (m - d - 1)``
    with ``m`` = the residual degrees of freedom (``N - 1`` two-view, ``N (V - 1)`` V-view). Hence
    ``E[plug-in] = kappa (T + d / V) - d / V`` and ``T_hat = (plug-in + d / V) / kappa - d / V`` is unbiased;
    it is clamped at 0 so that ICR stays in (0, 1].
    """
    k = kappa(d, dof)
    return max(0.0, (trace_plugin + d / n_views) / k - d / n_views)


def plugin_mean_lambda_bias(trace: float, d: int, n_views: int, dof: int) -> float:
    """Expected excess of the plug-in mean eigenvalue over the true one, ``(kappa - 1)(T/d + 1/V)``.

    The finite-sample law of :func:`debiased_trace`, per dimension: it does not vanish at ``T = 0``.
    """
    return (kappa(d, dof) - 1) * (trace / d + 1 / n_views)


def predicted_plugin_shift(icr_value: float, trace: float, d: int, n_views: int, dof: int) -> float:
    """First-order shift of the plug-in ICR, ``E[ICR_plugin] - ICR ~ -ICR^2 (kappa - 1)(T/d + 1/V)``.

    From ``ICR = d / (d + T)``, ``dICR/dT = -ICR^2 / d`` applied to the trace bias of :func:`debiased_trace`.
    """
    return -icr_value ** 2 * plugin_mean_lambda_bias(trace, d, n_views, dof)


def predicted_plugin_icr(trace: float, d: int, n_views: int, dof: int) -> float:
    """Expected plug-in ICR at true Fisher trace ``T``: ``d / (d + kappa (T + d/V) - d/V)`` [our finite-sample law].

    The expectation of the plug-in trace put into Eq. 5; to first order it is ``ICR + predicted_plugin_shift``.
    In Monte Carlo on Gaussian features with ``N >= 4d`` it matches the mean of the two-view plug-in ICR to within
    the tolerance of the chapter's claim B1 (0.01; the measured maximum is glued there), closer than the first-order form.
    """
    k = kappa(d, dof)
    return d / (d + k * (trace + d / n_views) - d / n_views)


def _finish(s, xi, n: int, v: int, dof: int, tau_rel, reg, tau, clip: bool, debias: bool) -> ICRResult:
    if clip and debias:
        raise ValueError("clip and debias are exclusive: the bias correction applies to the unclipped trace")
    value, lam, tau_used = icr_from_covariances(s, xi, tau_rel=tau_rel, reg=reg, tau=tau, clip=clip)
    plug = value
    if debias:
        d = s.shape[0]
        value = d / (d + debiased_trace(float(lam.sum()), d, v, dof))
    return ICRResult(float(value), float(plug), lam, s, xi, tau_used, "absolute" if tau is not None else reg,
                     int(n), int(v), int(dof), bool(debias))


def icr(features_view1, features_view2, *, tau_rel: float = 1e-4, reg: str = "covariance", tau: float | None = None,
        clip: bool = False, debias: bool = False) -> ICRResult:
    """The paper's two-view ICR estimate (Eq. 5 with App. B.6) from ``(N, d)`` features of two views.

    ``debias=True`` applies :func:`debiased_trace` (our correction, not the paper's); ``reg``/``tau_rel``/``tau``
    as in :func:`regularised_residual`.
    """
    s, xi = decompose_two_view(features_view1, features_view2)
    n = int(np.shape(features_view1)[0])
    return _finish(s, xi, n, 2, n - 1, tau_rel, reg, tau, clip, debias)


def icr_multiview(views, *, tau_rel: float = 1e-4, reg: str = "covariance", tau: float | None = None,
                  clip: bool = False, debias: bool = False) -> ICRResult:
    """ICR from ``V >= 2`` views per image, ``views`` of shape ``(N, V, d)`` (options as in :func:`icr`)."""
    s, xi = decompose_views(views)
    n, v, _ = np.shape(views)
    return _finish(s, xi, n, v, n * (v - 1), tau_rel, reg, tau, clip, debias)


def trace_ratio(sigma_s, sigma_xi) -> float:
    """Baseline ``Tr(Sigma_xi) / Tr(Sigma_s)``: not invariant to linear maps of the features (§3.2 item 4)."""
    return float(np.trace(sigma_xi) / np.trace(sigma_s))


def l2_normalise(h: np.ndarray) -> np.ndarray:
    """Unit-norm features along the last axis (paper Fig. 7 uses these for the traces)."""
    return h / np.maximum(np.linalg.norm(h, axis=-1, keepdims=True), 1e-12)


def alignment(views, normalise: bool = True) -> float:
    """Alignment loss ``E ||h(a1 x) - h(a2 x)||^2`` of views 0 and 1 (paper Eq. 6 with alpha = 2, App. B.3; the
    Fig. 10 baseline). ``normalise=False`` is the paper's Eq. 6 on the raw features, which grows with feature
    *expansion* (the paper's explanation of Fig. 10: "the overall feature variance grows"). With ``normalise=True``
    (l2-normalised features, as the paper's Fig. 7 traces) the expansion is divided out and, since
    ``h1 - h2 = xi1 - xi2``, it is the residual energy: ``E ||h1 - h2||^2 = 2 Tr Sigma_xi`` of the normalised features
    (the sample value is ``2 Tr Sigma_xi_hat`` of the two-view estimator up to the factor ``(N - 1) / N`` and the
    squared mean difference), so it rises with residual energy whatever happens to the invariant part."""
    h = as_array(views, "views", 3)
    if normalise:
        h = l2_normalise(h)
    return float(((h[:, 0] - h[:, 1]) ** 2).sum(-1).mean())


def normalised_traces(views) -> tuple[float, float]:
    """``(Tr Sigma_s, Tr Sigma_xi)`` of l2-normalised features (paper Fig. 7/8)."""
    h = as_array(views, "views", 3)
    if h.shape[0] < 2 or h.shape[1] < 2:
        raise ValueError(f"need at least 2 images and 2 views, got shape {h.shape}")
    s, xi = within_between(l2_normalise(h))
    return float(np.trace(s)), float(np.trace(xi))


def lda_fisher_eigenvalues(views) -> np.ndarray:
    """The same Fisher eigenvalues through scikit-learn's LDA (``solver="eigen"``, image id as class label).

    sklearn solves ``S_b w = mu S_w w`` with biased within/between scatter; for V views of N images
    ``lambda = mu N (V - 1) / (V (N - 1)) - 1/V`` maps its eigenvalues onto those of the unregularised V-view
    estimator (a peer cross-check of :func:`fisher_eigenvalues`; descending).
    """
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    h = as_array(views, "views", 3)
    n, v, d = h.shape
    x = h.reshape(n * v, d)
    y = np.repeat(np.arange(n), v)
    lda = LinearDiscriminantAnalysis(solver="eigen").fit(x, y)
    w = lda.scalings_  # all d generalised eigenvectors, normalised w^T S_w w = I
    st = np.cov(x, rowvar=False, bias=True)
    mu = np.einsum("ij,ik,kj->j", w, st, w) - 1.0  # w^T (S_t - S_w) w
    return np.sort(mu * n * (v - 1) / (v * (n - 1)) - 1.0 / v)[::-1]


def prop_d1_fixed_data(sigma_xx, b, sigma_xi) -> dict[str, object]:
    """Prop. D.1's toy under the *fixed-data* reading [our derivation]: the data ``x0 ~ N(0, sigma_xx)`` are fixed,
    an encoder's invariant part is ``s = B x0`` and its residual ``xi ~ N(0, sigma_xi)`` is independent of ``x0``;
    ``h = s + xi``. Then ``Sigma_s = B Sigma_xx B^T``, ``Sigma_xh = Sigma_xx B^T``, ``Sigma_hh = Sigma_s + Sigma_xi`` and
    the Bayes-optimal linear reconstruction loss of App. D is ``L* = Tr Sigma_xx - Tr(Sigma_xh Sigma_hh^-1 Sigma_hx)``;
    ICR is Eq. 5. (The paper's proof instead holds ``x0 = A s + C xi`` with ``A``, ``C`` fixed, so ``Sigma_xx`` moves
    with ``Sigma_s``.) Returns ``sigma_s``, ``lstar`` and ``icr``."""
    sxx, bm, sxi = (np.asarray(m, float) for m in (sigma_xx, b, sigma_xi))
    if sxx.ndim != 2 or sxx.shape[0] != sxx.shape[1] or bm.ndim != 2 or bm.shape[1] != sxx.shape[0]:
        raise ValueError(f"need square sigma_xx (D, D) and b (d, D), got {sxx.shape} and {bm.shape}")
    if sxi.shape != (bm.shape[0], bm.shape[0]):
        raise ValueError(f"sigma_xi must be ({bm.shape[0]}, {bm.shape[0]}), got {sxi.shape}")
    ss = bm @ sxx @ bm.T
    sxh = sxx @ bm.T
    lstar = float(np.trace(sxx) - np.trace(sxh @ np.linalg.solve(ss + sxi, sxh.T)))
    d = bm.shape[0]
    return dict(sigma_s=ss, lstar=lstar, icr=float(d / (d + np.trace(np.linalg.solve(sxi, ss)))))
