"""T-dependent step-size / momentum / batch schedules of Theorems 1-7 (brief §3), paper beta convention.

Each horizon T is a fresh run with eta(T), beta(T), B0(T) (brief Pitfalls). Betas here are the paper's
weights on the NEW gradient; the simulator uses them directly, the torch optimizers need
:func:`icml26.lion.optim.paper_betas_to_std`. We use beta1 = beta2 = beta (allowed by every theorem's
constraint beta2^2 <= beta1 <= sqrt(beta2), and the brief's simplest faithful choice).
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


@dataclass(frozen=True)
class Schedule:
    """eta, paper betas (weights on the new gradient), initial batch B0 and weight decay lambda."""

    eta: float
    beta1: float
    beta2: float
    batch0: int = 1
    weight_decay: float = 0.0


def theorem_schedule(method: str, T: int, d: int, n: int = 1, *, c_eta: float = 1.0, c_beta: float = 0.5,
                     c_batch: float = 1.0, mv_eta: str = "dT") -> Schedule:
    """Schedule of ``method`` (a key of :data:`METHODS`) at horizon T, dimension d, n nodes.

    lion    (Thm 1): beta = c_beta T^{-1/2},           eta = c_eta d^{-1/2} T^{-3/4}
    lion_vr (Thm 2): beta = c_beta T^{-2/3},           eta = c_eta d^{-1/2} T^{-2/3},  B0 = c_batch T^{1/3}
    dist    (Thm 3): beta = c_beta (n/T)^{1/2},        eta = c_eta n^{1/4} d^{-1/2} T^{-3/4}
    dist_vr (Thm 4): beta = c_beta n^{1/3} T^{-2/3},   eta = c_eta n^{1/3} d^{-1/2} T^{-2/3},  B0 = c_batch n^{-2/3} T^{1/3}
    mv, sign_mv (Thm 5): beta = 1/2, eta = c_eta (dT)^{-1/2} (mv_eta="dT") or c_eta n^{-1/2} (mv_eta="n")
    uu      (Thm 6): eta = c_eta (dT)^{-1/2}, beta = c_beta (n/T)^{1/3}  (our re-derivation: the minimiser
                     (2 n eta^2 d)^{1/3} of sigma^2 beta/n + eta^2 d/beta^2 in bound B6, constant absorbed)
    uu_vr   (Thm 7): beta = c_beta T^{-1/2}, eta = c_eta (dT)^{-1/2}, B0 = 1 (Thm 7 states no B0)
    Betas are capped at 1 and B0 is at least 1 (rounded up).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {tuple(METHODS)}")
    check_positive_int(T, "T")
    check_positive_int(d, "d")
    check_positive_int(n, "n")
    for name, c in (("c_eta", c_eta), ("c_beta", c_beta), ("c_batch", c_batch)):
        if not (math.isfinite(c) and c > 0):
            raise ValueError(f"{name} must be a finite positive number, got {c!r}")
    batch0 = 1
    if method == "lion":
        beta, eta = c_beta * T ** -0.5, c_eta * d ** -0.5 * T ** -0.75
    elif method == "lion_vr":
        beta, eta = c_beta * T ** (-2 / 3), c_eta * d ** -0.5 * T ** (-2 / 3)
        batch0 = math.ceil(c_batch * T ** (1 / 3))
    elif method == "dist":
        beta, eta = c_beta * (n / T) ** 0.5, c_eta * n ** 0.25 * d ** -0.5 * T ** -0.75
    elif method == "dist_vr":
        beta, eta = c_beta * n ** (1 / 3) * T ** (-2 / 3), c_eta * n ** (1 / 3) * d ** -0.5 * T ** (-2 / 3)
        batch0 = math.ceil(c_batch * n ** (-2 / 3) * T ** (1 / 3))
    elif method in ("mv", "sign_mv"):
        if mv_eta not in ("dT", "n"):
            raise ValueError(f"mv_eta must be 'dT' or 'n', got {mv_eta!r}")
        beta = 0.5
        eta = c_eta * (d * T) ** -0.5 if mv_eta == "dT" else c_eta * n ** -0.5
    elif method == "uu":
        beta, eta = c_beta * (n / T) ** (1 / 3), c_eta * (d * T) ** -0.5
    else:  # uu_vr
        beta, eta = c_beta * T ** -0.5, c_eta * (d * T) ** -0.5
    beta = min(1.0, beta)
    return Schedule(eta=eta, beta1=beta, beta2=beta, batch0=max(1, batch0))
