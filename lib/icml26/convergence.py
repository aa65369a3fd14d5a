"""Training curves and the book's convergence rule (DESIGN.md, "Power before a negative verdict", (3)).

A chapter records each trained model's curve with `Chapter.curve` (steps and a loss or validation
metric, one row per seed) and links the claims that rest on that model to it (``curves=`` in
`Chapter.declare`). A claim linked to a curve that has not converged is capped at ``inconclusive``:
a model still improving says nothing about the paper.

The rule (`tail_improvement`), declared here once for every chapter:

    Average the seeds' curves. Take the last fifth of it (by step, at least `MIN_TAIL_POINTS` points)
    and fit a least-squares line. Its *remaining improvement* is the decrease (for a metric to minimise;
    the increase for one to maximise) that the line predicts across the tail's span of steps, with its
    standard error. The curve has **not converged** when the improvement exceeds the allowance
    ``rtol * |mean of the tail| + atol`` (default: 1 % of the tail's level) by more than two standard
    errors (still improving, beyond noise), or when it *worsens* by that much (a loss rising at the end:
    diverging, or past its best). Otherwise it has converged.

A line fitted over the whole tail resists the step-to-step noise of stochastic training better than a
first-versus-last comparison, and it measures exactly what matters for a verdict: how much better the
model would still get at the same rate. The two standard errors keep a flat but noisy curve from being
called unconverged (a one-sided false alarm of about 2.5 %); `atol`, in the metric's own units, is the
allowance for a metric that converges to zero. The seed-mean curve is judged (the claims rest on the
mean over seeds); `TrainingCurve.describe` also reports how many single seeds pass the rule.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TAIL_FRACTION = 0.2
MIN_TAIL_POINTS = 3
DEFAULT_RTOL = 0.01


@dataclass(frozen=True)
class CurveVerdict:
    """The rule applied to one curve: the improvement the tail's line predicts, its standard error, and the
    allowance."""

    improvement: float
    stderr: float
    allowance: float
    tail_points: int

    @property
    def improving(self) -> bool:
        """Still improving beyond the allowance, by more than two standard errors."""
        return not math.isfinite(self.improvement) or self.improvement - 2 * self.stderr > self.allowance

    @property
    def worsening(self) -> bool:
        """Getting worse beyond the allowance, by more than two standard errors."""
        return math.isfinite(self.improvement) and -self.improvement - 2 * self.stderr > self.allowance

    @property
    def converged(self) -> bool:
        return not (self.improving or self.worsening)


def tail_improvement(steps: Sequence[float], values: Sequence[float], minimize: bool = True, rtol: float = DEFAULT_RTOL,
                     atol: float = 0.0) -> CurveVerdict:
    """The convergence rule (module docstring) on one curve."""
    x, y = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"a curve needs one value per step, got {x.shape} steps and {y.shape} values")
    if x.size < 2 * MIN_TAIL_POINTS:
        raise ValueError(f"a curve needs at least {2 * MIN_TAIL_POINTS} points to judge convergence, got {x.size}")
    if np.any(np.diff(x) <= 0):
        raise ValueError("a curve's steps must increase strictly")
    if not np.all(np.isfinite(y)):
        return CurveVerdict(float("inf"), 0.0, 0.0, 0)
    start = x[-1] - TAIL_FRACTION * (x[-1] - x[0])
    tail = x >= start
    if tail.sum() < MIN_TAIL_POINTS:
        tail[-MIN_TAIL_POINTS:] = True
    tx, ty = x[tail], y[tail]
    from scipy import stats

    fit = stats.linregress(tx, ty)
    span = float(tx[-1] - tx[0])
    improvement = (-fit.slope if minimize else fit.slope) * span
    stderr = float(fit.stderr) * span if np.isfinite(fit.stderr) else 0.0
    allowance = rtol * abs(float(ty.mean())) + atol
    return CurveVerdict(float(improvement), stderr, allowance, int(tail.sum()))


@dataclass(frozen=True)
class TrainingCurve:
    """A model's training curve: steps, values (seeds x steps), what it measures and the rule's verdict."""

    name: str
    steps: tuple[float, ...]
    values: tuple[tuple[float, ...], ...]
    label: str
    minimize: bool
    rtol: float
    atol: float

    @classmethod
    def build(cls, name: str, steps, values, label: str = "loss", minimize: bool = True, rtol: float = DEFAULT_RTOL,
              atol: float = 0.0) -> "TrainingCurve":
        if not isinstance(name, str) or not name:
            raise ValueError(f"a curve needs a non-empty name, got {name!r}")
        if rtol < 0 or atol < 0:
            raise ValueError(f"curve {name}: rtol and atol must be >= 0, got {rtol}, {atol}")
        arr = np.asarray(values, dtype=float)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise ValueError(f"curve {name}: values must be one row per seed (seeds x steps), got shape {arr.shape}")
        curve = cls(name, tuple(float(s) for s in steps), tuple(tuple(float(v) for v in row) for row in arr), label,
                    bool(minimize), float(rtol), float(atol))
        for row in curve.values:
            tail_improvement(curve.steps, row, curve.minimize, curve.rtol, curve.atol)  # validates the shape
        return curve

    def verdicts(self) -> list[CurveVerdict]:
        """The rule on each seed's curve (reported; the claims rest on `verdict`, the seed mean's)."""
        return [tail_improvement(self.steps, row, self.minimize, self.rtol, self.atol) for row in self.values]

    def verdict(self) -> CurveVerdict:
        """The rule on the seed-mean curve."""
        return tail_improvement(self.steps, np.mean(np.asarray(self.values), axis=0), self.minimize, self.rtol, self.atol)

    @property
    def converged(self) -> bool:
        return self.verdict().converged

    def describe(self) -> str:
        """One line for the claims table: the verdict on the seed mean, how much improvement is left."""
        v = self.verdict()
        state = "converged" if v.converged else ("not converged, worsening" if v.worsening else "not converged")
        seeds = "" if len(self.values) == 1 else f" ({sum(x.converged for x in self.verdicts())} of {len(self.values)} single seeds pass)"
        return (f"curve {self.name}: {state}{seeds}; the last fifth's line still gains {v.improvement:.3g} "
                f"+- {v.stderr:.2g} (allowed {v.allowance:.3g})")

    def to_json(self) -> dict:
        v = self.verdict()
        return {"name": self.name, "label": self.label, "minimize": self.minimize, "rtol": self.rtol, "atol": self.atol,
                "steps": list(self.steps), "values": [list(r) for r in self.values], "converged": v.converged,
                "worsening": v.worsening, "improvement": v.improvement if math.isfinite(v.improvement) else str(v.improvement),
                "stderr": v.stderr, "allowance": v.allowance,
                "seeds_converged": [x.converged for x in self.verdicts()]}

    def plot(self, ax=None):
        """Draw the curve (every seed) in the book's style, the judged last fifth shaded, the verdict in the title."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.2))
        steps = np.asarray(self.steps)
        for i, row in enumerate(self.values):
            ax.plot(steps, row, lw=1.2, alpha=0.85, label=f"seed {i}" if len(self.values) > 1 else None)
        ax.axvspan(steps[-1] - TAIL_FRACTION * (steps[-1] - steps[0]), steps[-1], color="0.85", zorder=0,
                   label="last fifth (judged)")
        ax.set(xlabel="training step", ylabel=self.label,
               title=f"{self.name}: {'converged' if self.converged else 'NOT converged'}")
        ax.legend(fontsize=8)
        return ax
