"""Training curves and the book's convergence rule (DESIGN.md, "Power before a negative verdict", (3)).

A chapter records each trained model's curve with `Chapter.curve` (steps and a loss or validation
metric, one row per seed) and links the claims that rest on that model to it (``curves=`` in
`Chapter.declare`). A claim linked to a curve that has not converged is capped at ``inconclusive``:
a model still improving says nothing about the paper.

The rule (`converged`), declared here once for every chapter:

    Take the last fifth of the curve (by step, at least `MIN_TAIL_POINTS` points). Fit a least-squares
    line to it. Its *remaining improvement* is the decrease (for a metric to minimise; the increase for
    one to maximise) that line predicts across the tail's span of steps. The curve has converged when
    that improvement is at most ``rtol * |mean of the tail| + atol`` (default: 1 % of the tail's level).

A line fitted over the whole tail resists the step-to-step noise of stochastic training better than a
first-versus-last comparison, and it measures exactly what matters for a verdict: how much better the
model would still get at the same rate. A curve with several seeds has converged when every seed's has.
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
    """The rule applied to one seed's curve: the improvement the tail's line predicts, and the allowance."""

    improvement: float
    allowance: float
    tail_points: int

    @property
    def converged(self) -> bool:
        return math.isfinite(self.improvement) and self.improvement <= self.allowance


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
        return CurveVerdict(float("inf"), 0.0, 0)
    start = x[-1] - TAIL_FRACTION * (x[-1] - x[0])
    tail = x >= start
    if tail.sum() < MIN_TAIL_POINTS:
        tail[-MIN_TAIL_POINTS:] = True
    tx, ty = x[tail], y[tail]
    slope = float(np.polyfit(tx, ty, 1)[0])
    improvement = (-slope if minimize else slope) * float(tx[-1] - tx[0])
    allowance = rtol * abs(float(ty.mean())) + atol
    return CurveVerdict(improvement, allowance, int(tail.sum()))


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
        return [tail_improvement(self.steps, row, self.minimize, self.rtol, self.atol) for row in self.values]

    @property
    def converged(self) -> bool:
        return all(v.converged for v in self.verdicts())

    def describe(self) -> str:
        """One line for the claims table: which seeds have converged and how much improvement is left."""
        verdicts = self.verdicts()
        worst = max(verdicts, key=lambda v: v.improvement - v.allowance)
        state = "converged" if self.converged else f"not converged ({sum(not v.converged for v in verdicts)} of {len(verdicts)} seeds)"
        return (f"curve {self.name}: {state}; the last fifth's line still gains {worst.improvement:.3g} "
                f"(allowed {worst.allowance:.3g})")

    def to_json(self) -> dict:
        verdicts = self.verdicts()
        return {"name": self.name, "label": self.label, "minimize": self.minimize, "rtol": self.rtol, "atol": self.atol,
                "steps": list(self.steps), "values": [list(r) for r in self.values], "converged": self.converged,
                "improvement": [v.improvement if math.isfinite(v.improvement) else str(v.improvement) for v in verdicts],
                "allowance": [v.allowance for v in verdicts]}

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
