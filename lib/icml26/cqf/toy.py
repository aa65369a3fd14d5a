"""The closed-form toy of §3.2 (brief): document types with HQ masses a_t and LQ masses b_t.

CQF(k) keeps the types of largest likelihood ratio r_t = a_t / b_t until LQ mass k, a fraction of the
boundary type (Eq. 4.1 on types): c_t = 1[r_t >= tau] b_t / k. The HQ loss of an infinite-capacity model
trained on CQF(k) is H(a) + KL(a || c(k)) (T3). Exact rationals are handled in the notebook with SymPy;
this module is the float version for plots and the interactive panel.
"""
from __future__ import annotations

import numpy as np

TOY_TYPES = ("QA", "prose", "chat", "spam")
TOY_A = (0.5, 0.2, 0.3, 0.0)     # Orca-like
TOY_B = (0.05, 0.2, 0.4, 0.35)   # the web (MISINFO counted with SPAM)


def cqf_composition(a, b, k: float) -> np.ndarray:
    """c(k): the LQ mass kept by CQF(k), type by type, normalised (ties in r broken by order)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if not (0 < k <= 1):
        raise ValueError(f"k must lie in (0, 1], got {k}")
    if np.any(b <= 0) and np.any((b <= 0) & (a > 0)):
        raise ValueError("an HQ type absent from the web cannot be selected")
    r = np.where(b > 0, a / np.where(b > 0, b, 1), np.inf)
    order = np.argsort(-r, kind="stable")
    kept = np.zeros_like(b)
    left = k
    for t in order:
        take = min(b[t], left)
        kept[t] = take
        left -= take
        if left <= 1e-15:
            break
    return kept / kept.sum()


def kl(a, c) -> float:
    """KL(a || c) in nats (inf when c misses a type of a)."""
    a, c = np.asarray(a, float), np.asarray(c, float)
    m = a > 0
    if np.any(c[m] <= 0):
        return float("inf")
    return float(np.sum(a[m] * np.log(a[m] / c[m])))


def kl_curve(a, b, ks) -> np.ndarray:
    return np.array([kl(a, cqf_composition(a, b, k)) for k in ks])


def k_star(a, b) -> float:
    """argmin_k KL(a || CQF(k)) (grid search on (0, 1]; the notebook derives K / (1 - a_j) exactly)."""
    ks = np.linspace(1e-4, 1, 100001)
    return float(ks[np.argmin(kl_curve(a, b, ks))])
