"""T-dependent step-size / momentum / batch / weight-decay schedules of Theorems 1-7 (brief §2-3).

Betas are the paper's weights on the NEW gradient; the simulator uses them directly, the torch
optimizers need :func:`icml26.lion.optim.paper_betas_to_std`. Each horizon T is a fresh run with
eta(T), beta(T), B0(T), lambda(T) (brief Pitfalls).

beta1 (the interpolation weight of v_t) is set by a power of beta2, ``beta1 = beta2 ** beta1_power``:

* ``beta1_power = 1/2`` (default): beta1 = sqrt(beta2), the upper end of every theorem's band and Lion's
  own default ratio ((0.9, 0.99) standard = (0.1, 0.01) paper, 0.1 = sqrt(0.01));
* ``beta1_power = 1``: beta1 = beta2, which makes v_t = m_t: the run is Signum (momentum signSGD), and
  the VR variant is sign-STORM;
* ``beta1_power = 2``: beta1 = beta2^2, the lower end of Theorem 1's band beta2^2 <= beta1 <= sqrt(beta2).

The bands (brief §2): Thms 1, 3, 5: [beta2^2, sqrt(beta2)]; Thm 2: [beta2, sqrt(beta2)]; Thms 4, 7:
beta1 <= sqrt(beta2). A power outside a theorem's band is allowed with ``strict=False`` (a deliberately
broken hypothesis, e.g. beta1 = beta2^2 for Lion-VR) and refused otherwise.

Weight decay: ``weight_decay="theorem"`` uses the largest lambda the theorem allows, lambda = 1/(2 eta T)
(Thms 1-5; with ||x_1||_inf <= eta), and lambda = min(sqrt(L)/(T sqrt(eta G)), 1/(2 eta T)) for Thms
6-7 (brief §2; the Thm 6 condition is our reading: it shares Thm 7's compression argument). A number
is a constant lambda (0: none).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ._checks import check_positive_int

#: method -> (aggregation rule, variance reduction, theorem)
METHODS: dict[str, tuple[str, bool, str]] = {
    "lion": ("avg_sign", False, "Thm 1"),
    "lion_vr": ("avg_sign", True, "Thm 2"),
    "dist": ("avg_sign", False, "Thm 3"),
    "dist_vr": ("avg_sign", True, "Thm 4"),
    "mv": ("mv", False, "Thm 5"),
    "uu": ("uu", False, "Thm 6"),
    "uu_vr": ("uu", True, "Thm 7"),
    "sign_mv": ("sign_mv", False, "Liu et al. 2024 (Thm 5 schedule)"),
}

#: whether a VR method signs the STORM-corrected interpolation v = (1-beta1) m + beta1 g + (1-beta1)(g - gh).
#: The LaTeX reading (third-party audit of v1) puts the correction into v only for the distributed VR
#: variants (Thm 4, and per node in Thm 7); centralised Lion-VR (Thm 2) signs the plain interpolation.
STORM_INTERPOLATION: dict[str, bool] = {"lion_vr": False, "dist_vr": True, "uu_vr": True}

#: the band of beta1_power (beta1 = beta2^p) each theorem allows: (smallest p, largest p)
BETA1_BANDS: dict[str, tuple[float, float]] = {
    "lion": (0.5, 2.0), "lion_vr": (0.5, 1.0), "dist": (0.5, 2.0), "dist_vr": (0.5, math.inf),
    "mv": (0.5, 2.0), "uu": (0.5, math.inf), "uu_vr": (0.5, math.inf), "sign_mv": (0.5, 2.0),
}


@dataclass(frozen=True)
class Schedule:
    """eta, paper betas (weights on the new gradient), initial batch B0 and weight decay lambda."""

    eta: float
    beta1: float
    beta2: float
    batch0: int = 1
    weight_decay: float = 0.0


def theorem_weight_decay(method: str, eta: float, T: int, G: float = 1.0, L: float = 1.0) -> float:
    """The largest weight decay the theorem of ``method`` allows at step size eta and horizon T."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {tuple(METHODS)}")
    bound = 1.0 / (2.0 * eta * T)
    if method in ("uu", "uu_vr"):
        bound = min(bound, math.sqrt(L) / (T * math.sqrt(eta * G)))
    return bound


def theorem_schedule(method: str, T: int, d: int, n: int = 1, *, c_eta: float = 1.0, c_beta: float = 0.5,
                     c_batch: float = 1.0, mv_eta: str = "dT", beta1_power: float = 0.5,
                     weight_decay: float | str = 0.0, G: float = 1.0, eta: float | None = None,
                     strict: bool = True) -> Schedule:
    """Schedule of ``method`` (a key of :data:`METHODS`) at horizon T, dimension d, n nodes.

    beta2 and eta (paper convention, brief §2):

    lion    (Thm 1): beta2 = c_beta T^{-1/2},           eta = c_eta d^{-1/2} T^{-3/4}
    lion_vr (Thm 2): beta2 = c_beta T^{-2/3},           eta = c_eta d^{-1/2} T^{-2/3},  B0 = c_batch T^{1/3}
    dist    (Thm 3): beta2 = c_beta (n/T)^{1/2},        eta = c_eta n^{1/4} d^{-1/2} T^{-3/4}     (T >= n)
    dist_vr (Thm 4): beta2 = c_beta n^{1/3} T^{-2/3},   eta = c_eta n^{1/3} d^{-1/2} T^{-2/3},
                     B0 = c_batch n^{-2/3} T^{1/3}                                               (T >= n^2)
    mv, sign_mv (Thm 5): beta2 = 1/2, eta = c_eta (dT)^{-1/2} (mv_eta="dT") or c_eta n^{-1/2} (mv_eta="n")
    uu      (Thm 6): eta = c_eta min{(dT)^{-1/2}, d^{-1/5} n^{2/5} T^{-3/5}}, beta2 = c_beta (n eh^2 d)^{1/3}
                     with eh the min without c_eta (our re-derivation: the minimiser (2 n eta^2 d)^{1/3} of
                     sigma^2 beta/n + eta^2 d/beta^2 in bound B6, constant absorbed; the second step size
                     balances B6's branch d^{1/10} n^{-1/5} T^{-1/5} and is the smaller one exactly when
                     T > d^3 n^4, where that branch dominates; below it beta2 = c_beta (n/T)^{1/3})
    uu_vr   (Thm 7): beta2 = c_beta T^{-1/2}, eta = c_eta (dT)^{-1/2}, B0 = 1 (Thm 7 states no B0)

    beta1 = beta2 ** beta1_power (module docstring); ``weight_decay`` is "theorem" (the theorem's
    largest lambda, with bound G of assumption bg1 for Thms 6-7) or a constant; ``eta`` overrides the
    step size (a fixed-eta experiment: the theorem's schedule is then broken on purpose, and the
    weight decay "theorem" uses this eta). With ``strict`` (default) a momentum weight above 1, a
    beta1_power outside the theorem's band, or a horizon outside Thm 3/4's domain (T >= n, T >= n^2)
    raises ``ValueError``.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {tuple(METHODS)}")
    check_positive_int(T, "T")
    check_positive_int(d, "d")
    check_positive_int(n, "n")
    for name, c in (("c_eta", c_eta), ("c_beta", c_beta), ("c_batch", c_batch), ("G", G)):
        if not (math.isfinite(c) and c > 0):
            raise ValueError(f"{name} must be a finite positive number, got {c!r}")
    if not (math.isfinite(beta1_power) and beta1_power > 0):
        raise ValueError(f"beta1_power must be a finite positive number, got {beta1_power!r}")
    if strict:
        low, high = BETA1_BANDS[method]
        if not (low <= beta1_power <= high):
            raise ValueError(f"{method}: beta1 = beta2^{beta1_power:g} lies outside the band of "
                             f"{METHODS[method][2]} (powers {low:g}..{high:g}); pass strict=False to break it on purpose")
        if method == "dist" and T < n:
            raise ValueError(f"Thm 3 needs T >= n, got T = {T}, n = {n}")
        if method == "dist_vr" and T < n * n:
            raise ValueError(f"Thm 4 needs T >= n^2, got T = {T}, n = {n}")
    batch0 = 1
    if method == "lion":
        beta, step = c_beta * T ** -0.5, c_eta * d ** -0.5 * T ** -0.75
    elif method == "lion_vr":
        beta, step = c_beta * T ** (-2 / 3), c_eta * d ** -0.5 * T ** (-2 / 3)
        batch0 = math.ceil(c_batch * T ** (1 / 3))
    elif method == "dist":
        beta, step = c_beta * (n / T) ** 0.5, c_eta * n ** 0.25 * d ** -0.5 * T ** -0.75
    elif method == "dist_vr":
        beta, step = c_beta * n ** (1 / 3) * T ** (-2 / 3), c_eta * n ** (1 / 3) * d ** -0.5 * T ** (-2 / 3)
        batch0 = math.ceil(c_batch * n ** (-2 / 3) * T ** (1 / 3))
    elif method in ("mv", "sign_mv"):
        if mv_eta not in ("dT", "n"):
            raise ValueError(f"mv_eta must be 'dT' or 'n', got {mv_eta!r}")
        beta = 0.5
        step = c_eta * (d * T) ** -0.5 if mv_eta == "dT" else c_eta * n ** -0.5
    elif method == "uu":
        base = min((d * T) ** -0.5, d ** -0.2 * n ** 0.4 * T ** -0.6)
        beta, step = c_beta * (n * base * base * d) ** (1 / 3), c_eta * base
    else:  # uu_vr
        beta, step = c_beta * T ** -0.5, c_eta * (d * T) ** -0.5
    if beta > 1.0:
        if strict:
            raise ValueError(f"{method}: beta2 = {beta:.3g} > 1 at T = {T}, n = {n} (use a larger T or smaller c_beta)")
        beta = 1.0
    if eta is not None:
        if not (math.isfinite(eta) and eta > 0):
            raise ValueError(f"eta must be a finite positive number, got {eta!r}")
        step = float(eta)
    if weight_decay == "theorem":
        wd = theorem_weight_decay(method, step, T, G=G)
    elif isinstance(weight_decay, (int, float)) and math.isfinite(weight_decay) and weight_decay >= 0:
        wd = float(weight_decay)
    else:
        raise ValueError(f"weight_decay must be 'theorem' or a finite number >= 0, got {weight_decay!r}")
    return Schedule(eta=step, beta1=beta ** beta1_power, beta2=beta, batch0=max(1, batch0), weight_decay=wd)

