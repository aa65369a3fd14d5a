"""Statistics over seeds for method comparisons (DESIGN.md, "Strength").

A comparison claim of kind ``paper`` is measured over >= 3 seeds at ``book``. `over_seeds` turns the
per-seed values into a `SeedSummary`: the mean (what the claim's check tests), its standard error and a
bootstrap confidence interval of the mean (`scipy.stats.bootstrap`, percentile method, fixed generator
so the interval is the same run after run). `paired_difference` does the same for per-seed differences
of two methods run on the same seeds, the usual way to test "A beats B".
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .checks import python_scalar

BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class SeedSummary:
    """Per-seed values and their mean, standard error and bootstrap interval of the mean."""

    values: tuple[float, ...]
    mean: float
    sem: float
    ci_low: float
    ci_high: float
    confidence: float

    @property
    def n(self) -> int:
        return len(self.values)

    def to_json(self) -> dict:
        def num(x: float):
            return x if math.isfinite(x) else str(x)

        return {"n": self.n, "mean": num(self.mean), "sem": num(self.sem), "ci_low": num(self.ci_low),
                "ci_high": num(self.ci_high), "confidence": self.confidence, "values": [num(v) for v in self.values]}

    def text(self) -> str:
        """How the claims table shows it: ``0.123 ± 0.004 [0.115, 0.131] (n=5)``."""
        if self.n == 1:
            return f"{self.mean:.4g} (n=1)"
        return f"{self.mean:.4g} ± {self.sem:.2g} [{self.ci_low:.4g}, {self.ci_high:.4g}] (n={self.n})"

    def __str__(self) -> str:
        return self.text()


def _as_values(values: Sequence[float], name: str) -> np.ndarray:
    try:
        arr = np.asarray([float(python_scalar(v)) for v in values], dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: per-seed values must be numbers, got {values!r}") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: need at least one per-seed value, got {values!r}")
    return arr


def over_seeds(values: Sequence[float], confidence: float = 0.95) -> SeedSummary:
    """Mean, standard error and bootstrap CI of the mean of one value per seed.

    A NaN (a diverged seed) is kept: the mean is then NaN and no check passes on it.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    arr = _as_values(values, "over_seeds")
    mean = float(arr.mean())
    if arr.size == 1 or not np.all(np.isfinite(arr)):
        sem = float("nan")
        low = high = mean
    else:
        sem = float(arr.std(ddof=1) / math.sqrt(arr.size))
        if np.ptp(arr) == 0:
            low = high = mean
        else:
            from scipy import stats

            res = stats.bootstrap((arr,), np.mean, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                                  method="percentile", rng=np.random.default_rng(BOOTSTRAP_SEED))
            low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return SeedSummary(tuple(float(v) for v in arr), mean, sem, low, high, confidence)


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> SeedSummary:
    """`over_seeds` of a[i] - b[i]: method a minus method b, seed by seed."""
    x, y = _as_values(a, "paired_difference(a)"), _as_values(b, "paired_difference(b)")
    if x.shape != y.shape:
        raise ValueError(f"paired_difference: a has {x.size} seeds, b has {y.size}; pair them seed by seed")
    return over_seeds(x - y, confidence)
