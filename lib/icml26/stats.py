"""Statistics over seeds for method comparisons (DESIGN.md, "The claims ledger (contract v3)").

A comparison claim is measured over >= 3 seeds at ``book``. `over_seeds` turns the per-seed values
into a `SeedSummary`: the mean, its standard error and a confidence interval of the mean, from which
the ledger reads the claim's verdict (the whole interval inside the claim's region, wholly outside it,
or straddling it).

The interval (``method``):

* ``t``: the Student-t interval ``mean +- t_{(1+c)/2, n-1} * sem`` (`scipy.stats.t`), at every n >= 2.
  A percentile bootstrap of 3 seeds can never leave their min-max, far too narrow (with 3 seeds the 95 %
  t multiplier is 4.30 standard errors), and even at 10 seeds it under-covers (about 0.89 for a nominal
  0.95 on normal data), so a 10th seed could flip a verdict by changing the method alone. DESIGN.md
  allows a bootstrap from 10 seeds; the book keeps t everywhere (`bootstrap_interval` is there for a
  chapter with many seeds of a skewed metric, named as such);
* ``point``: one value, or all values equal: no spread was measured (the table shows ``n``). The
  ledger reads no negative verdict from one seed;
* ``undefined``: a non-finite value (a diverged seed): the mean is NaN and no verdict can be read.

`paired_difference` does the same for per-seed differences of two methods run on the same seeds, the
usual way to test "A beats B". `intersection_union` reads one claim over several settings ("in every setting").
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .checks import python_scalar

BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 0
INTERVAL_METHODS = ("t", "bootstrap", "point", "undefined")


@dataclass(frozen=True)
class SeedSummary:
    """Per-seed values and their mean, standard error and confidence interval of the mean."""

    values: tuple[float, ...]
    mean: float
    sem: float
    ci_low: float
    ci_high: float
    confidence: float
    method: str = "t"

    @property
    def n(self) -> int:
        return len(self.values)

    def to_json(self) -> dict:
        def num(x: float):
            return x if math.isfinite(x) else str(x)

        return {"n": self.n, "mean": num(self.mean), "sem": num(self.sem), "ci_low": num(self.ci_low),
                "ci_high": num(self.ci_high), "confidence": self.confidence, "interval": self.method,
                "values": [num(v) for v in self.values]}

    def text(self) -> str:
        """How the claims table shows it: ``0.123 ± 0.004 [0.115, 0.131] (n=5, t)``: mean ± standard
        error, the interval of the mean at `confidence`, the number of values and the interval's method."""
        if self.n == 1:
            return f"{self.mean:.4g} (n=1)"
        return (f"{self.mean:.4g} ± {self.sem:.2g} [{self.ci_low:.4g}, {self.ci_high:.4g}] "
                f"(n={self.n}, {self.method})")

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


def t_interval(mean: float, sem: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Student-t interval of a mean: ``mean +- t_{(1+confidence)/2, n-1} * sem``."""
    from scipy import stats

    if n < 2:
        raise ValueError(f"a t interval needs at least 2 values, got {n}")
    half = float(stats.t.ppf((1 + confidence) / 2, df=n - 1)) * sem
    return mean - half, mean + half


def over_seeds(values: Sequence[float], confidence: float = 0.95) -> SeedSummary:
    """Mean, standard error and confidence interval of the mean of one value per seed (module docstring).

    A NaN (a diverged seed) is kept: the mean and the interval are then NaN, and no verdict is read.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    arr = _as_values(values, "over_seeds")
    mean = float(arr.mean())
    if not np.all(np.isfinite(arr)):
        nan = float("nan")
        return SeedSummary(tuple(float(v) for v in arr), nan, nan, nan, nan, confidence, "undefined")
    if arr.size == 1:
        return SeedSummary((mean,), mean, float("nan"), mean, mean, confidence, "point")
    sem = float(arr.std(ddof=1) / math.sqrt(arr.size))
    if np.ptp(arr) == 0:
        low = high = mean
        method = "point"
    else:
        low, high = t_interval(mean, sem, arr.size, confidence)
        method = "t"
    return SeedSummary(tuple(float(v) for v in arr), mean, sem, low, high, confidence, method)


def bootstrap_interval(values: Sequence[float], confidence: float = 0.95) -> SeedSummary:
    """A percentile-bootstrap interval of the mean (`scipy.stats.bootstrap`, fixed generator), for many
    seeds of a skewed metric; it under-covers at small n, which is why `over_seeds` uses Student-t."""
    arr = _as_values(values, "bootstrap_interval")
    if arr.size < 10 or not np.all(np.isfinite(arr)):
        raise ValueError(f"bootstrap_interval needs >= 10 finite values, got {arr.size}")
    from scipy import stats

    res = stats.bootstrap((arr,), np.mean, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                          method="percentile", rng=np.random.default_rng(BOOTSTRAP_SEED))
    sem = float(arr.std(ddof=1) / math.sqrt(arr.size))
    return SeedSummary(tuple(float(v) for v in arr), float(arr.mean()), sem, float(res.confidence_interval.low),
                       float(res.confidence_interval.high), confidence, "bootstrap")


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> SeedSummary:
    """`over_seeds` of a[i] - b[i]: method a minus method b, seed by seed."""
    x, y = _as_values(a, "paired_difference(a)"), _as_values(b, "paired_difference(b)")
    if x.shape != y.shape:
        raise ValueError(f"paired_difference: a has {x.size} seeds, b has {y.size}; pair them seed by seed")
    return over_seeds(x - y, confidence)


def intersection_union(summaries: Mapping[Hashable, SeedSummary], bound: float | None = None,
                       upper: bool = False) -> tuple[Hashable, SeedSummary]:
    """The one setting whose interval decides the intersection-union test of "the mean is >= ``bound`` in every
    setting" (``upper``: "<= ``bound``"), one `SeedSummary` per setting. Returns ``(key, summary)``:

    * an undefined setting (a non-finite interval end) first: no verdict can be read;
    * else, when ``bound`` is given, a setting whose interval lies wholly on the wrong side of it, the farthest
      (the lowest upper end for "at least", the highest lower end for "at most"): the claim is not met;
    * else the least favourable setting (the lowest lower end, or the highest upper end).

    The returned interval lies inside the region iff every setting's does, and wholly outside it iff some setting's
    does (given ``bound``; without it a setting wholly outside may be passed over for one that straddles, which
    reads inconclusive where the test says not met, never the reverse). Each setting keeps its own mean: the
    per-seed worst over settings, or the setting with the smallest mean, would bias the reading by the noise."""
    if not summaries:
        raise ValueError("intersection_union needs at least one setting")
    undefined = [k for k, v in summaries.items() if not (math.isfinite(v.ci_low) and math.isfinite(v.ci_high))]
    if undefined:
        return undefined[0], summaries[undefined[0]]
    if bound is not None:
        if upper:
            out = [k for k, v in summaries.items() if v.ci_low > bound]
            pick = max(out, key=lambda k: summaries[k].ci_low) if out else None
        else:
            out = [k for k, v in summaries.items() if v.ci_high < bound]
            pick = min(out, key=lambda k: summaries[k].ci_high) if out else None
        if pick is not None:
            return pick, summaries[pick]
    key = (max(summaries, key=lambda k: summaries[k].ci_high) if upper
           else min(summaries, key=lambda k: summaries[k].ci_low))
    return key, summaries[key]
