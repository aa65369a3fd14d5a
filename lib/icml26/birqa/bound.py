"""The anchored pointwise error bound (our clean version of the paper's Theorem 1; brief 3.2).

Anchors a in S with accurate predictions |y~_a - y_a| <= eps; hinge ranking loss per ordered pair
l(j, a) = [lambda - sgn(y_a - y_j)(y~_a - y~_j)]_+. **Coverage**: sample j has anchors a+ and a- with
y_j < y_{a+} <= y_j + eta and y_j - eta <= y_{a-} < y_j. Then

    |y~_j - y_j| <= eps + eta - lambda + max(l(j, a+), l(j, a-))                      (B)

chained from three inequalities (hinge, anchor accuracy, spacing). Over a mini-batch with mean anchored
loss L over its P pairs, max l <= P L, so max_j |y~_j - y_j| <= eps + eta - lambda + P L (B-batch).
Without coverage no bound holds: the ICLR reviewers' counter-example (y = (5, 8, 10, 14), y~ = (4, 9, 9, 44),
S = {2, 3}, eps = 1, lambda = 2) has no anchor above y_4 and an error of 30.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np


def hinge(y_j, y_a, p_j, p_a, lam):
    """l(j, a) = [lambda - sgn(y_a - y_j)(p_a - p_j)]_+ (broadcasting)."""
    return np.maximum(0.0, lam - np.sign(y_a - y_j) * (p_a - p_j))


@dataclass
class BoundCheck:
    covered: np.ndarray         # [n] bool: anchors on both sides
    error: np.ndarray           # [n] |y~_j - y_j|
    bound: np.ndarray           # [n] right-hand side of (B) (inf where uncovered)
    eps_hat: float              # max anchor error
    eta_hat: float              # largest spacing gap over covered samples
    mean_loss: float            # mean hinge over the P pairs (sample, anchor) with y_j != y_a
    pairs: int
    lam: float

    @property
    def violations(self) -> int:
        return int(np.sum(self.covered & (self.error > self.bound + 1e-9)))

    @property
    def coverage(self) -> float:
        return float(self.covered.mean())

    @property
    def batch_bound(self) -> float:
        return self.eps_hat + self.eta_hat - self.lam + self.pairs * self.mean_loss

    @property
    def max_covered_error(self) -> float:
        return float(self.error[self.covered].max()) if self.covered.any() else float("nan")


def anchored_bound(y, pred, y_anchor, pred_anchor, lam: float, warn: bool = True) -> BoundCheck:
    """Evaluate (B) for every sample of a batch against an anchor set (1-D arrays, MOS units).

    Raises ValueError for fewer than 2 anchors or mismatched lengths; warns when the anchor set leaves
    a sample uncovered (no anchor above or below it), where (B) does not apply.
    """
    y, pred = np.asarray(y, float), np.asarray(pred, float)
    ya, pa = np.asarray(y_anchor, float), np.asarray(pred_anchor, float)
    if y.shape != pred.shape or ya.shape != pa.shape or y.ndim != 1 or ya.ndim != 1:
        raise ValueError("y/pred and y_anchor/pred_anchor must be matching 1-D arrays")
    if ya.size < 2:
        raise ValueError(f"the anchored bound needs at least 2 anchors (one above and one below), got {ya.size}")
    if lam < 0:
        raise ValueError(f"lambda must be >= 0, got {lam}")
    eps_hat = float(np.abs(pa - ya).max())
    diff = ya[None, :] - y[:, None]                        # [n, A]
    above, below = diff > 0, diff < 0
    covered = above.any(1) & below.any(1)
    l = hinge(y[:, None], ya[None, :], pred[:, None], pa[None, :], lam)
    up = np.where(above, diff, np.inf).argmin(1)
    lo = np.where(below, -diff, np.inf).argmin(1)
    rows = np.arange(len(y))
    eta = np.where(covered, np.maximum(diff[rows, up], -diff[rows, lo]), np.inf)
    bound = np.where(covered, eps_hat + eta - lam + np.maximum(l[rows, up], l[rows, lo]), np.inf)
    valid = diff != 0
    if warn and not covered.all():
        warnings.warn(f"anchor set leaves {int((~covered).sum())} of {len(y)} samples uncovered (no anchor above or "
                      "below): the anchored bound does not apply to them", stacklevel=2)
    return BoundCheck(covered, np.abs(pred - y), bound, eps_hat, float(eta[covered].max()) if covered.any() else float("nan"),
                      float(l[valid].mean()) if valid.any() else 0.0, int(valid.sum()), float(lam))


def stratified_anchors(mos: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` anchor indices, one drawn from each of ``k`` MOS-quantile bins (spans the MOS range)."""
    mos = np.asarray(mos, float)
    if k < 2:
        raise ValueError(f"need at least 2 anchors, got {k}")
    edges = np.quantile(mos, np.linspace(0, 1, k + 1))
    bins = np.clip(np.searchsorted(edges, mos, side="right") - 1, 0, k - 1)
    return np.array([rng.choice(np.flatnonzero(bins == b)) if (bins == b).any() else rng.integers(len(mos))
                     for b in range(k)])


COUNTER_EXAMPLE = dict(y=(5.0, 8.0, 10.0, 14.0), pred=(4.0, 9.0, 9.0, 44.0), anchors=(1, 2), eps=1.0, lam=2.0)
"""The ICLR reviewers' counter-example (0-based anchor indices {1, 2} = the paper's S = {2, 3})."""
