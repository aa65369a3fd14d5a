"""Comparisons a claim's measured value is held to (DESIGN.md, "The claims ledger").

Each check knows how to describe itself (for the claims table) and to decide a measured value.
A NaN, an infinity where a finite number is expected, or a missing value never passes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any


def python_scalar(value: Any) -> Any:
    """A NumPy/torch scalar (0-d) as the Python number it holds; anything else unchanged.

    Tested before any ``isinstance(value, float)``: ``np.float64`` is a float subclass whose repr
    (``np.float64(0.5)``) neither JSON nor myst-nb's glue formatting accepts.
    """
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def _as_float(value: Any) -> float:
    """A real number from a Python/NumPy/torch/sympy scalar; anything else is a `TypeError`."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number; use is_true()")
    value = python_scalar(value)
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot compare {value!r} as a number") from exc


def _finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))


class Check:
    """Base class: `holds(measured)` decides, `describe()` reads like 'x <= -0.2'."""

    def holds(self, measured: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class AtMost(Check):
    bound: float

    def holds(self, measured: Any) -> bool:
        x = _as_float(measured)
        return _finite(x) and x <= self.bound

    def describe(self) -> str:
        return f"<= {self.bound:g}"


@dataclass(frozen=True)
class AtLeast(Check):
    bound: float

    def holds(self, measured: Any) -> bool:
        x = _as_float(measured)
        return _finite(x) and x >= self.bound

    def describe(self) -> str:
        return f">= {self.bound:g}"


@dataclass(frozen=True)
class Between(Check):
    low: float
    high: float

    def __post_init__(self):
        if not self.low <= self.high:
            raise ValueError(f"between({self.low}, {self.high}): low must not exceed high")

    def holds(self, measured: Any) -> bool:
        x = _as_float(measured)
        return _finite(x) and self.low <= x <= self.high

    def describe(self) -> str:
        return f"in [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class CloseTo(Check):
    target: float
    atol: float = 0.0
    rtol: float = 0.0

    def __post_init__(self):
        if self.atol < 0 or self.rtol < 0 or (self.atol == 0 and self.rtol == 0):
            raise ValueError("close_to needs a positive atol or rtol (use equals() for exact values)")

    def holds(self, measured: Any) -> bool:
        x = _as_float(measured)
        return _finite(x) and abs(x - self.target) <= self.atol + self.rtol * abs(self.target)

    def describe(self) -> str:
        tol = " + ".join(t for t in (f"{self.atol:g}" if self.atol else "", f"{self.rtol:g}*|target|" if self.rtol else "") if t)
        return f"= {self.target:g} +/- {tol}"


@dataclass(frozen=True)
class Equals(Check):
    """Exact equality, for symbolic results (sympy Rationals, integers, strings)."""

    expected: Any

    def holds(self, measured: Any) -> bool:
        try:
            import sympy

            if isinstance(measured, sympy.Basic) or isinstance(self.expected, sympy.Basic):
                return bool(sympy.simplify(sympy.sympify(measured) - sympy.sympify(self.expected)) == 0)
        except ImportError:  # pragma: no cover
            pass
        if isinstance(measured, Real) and isinstance(measured, float) and math.isnan(measured):
            return False
        return measured == self.expected

    def describe(self) -> str:
        return f"== {self.expected}"


@dataclass(frozen=True)
class IsTrue(Check):
    def holds(self, measured: Any) -> bool:
        measured = python_scalar(measured)
        if not isinstance(measured, bool):
            raise TypeError(f"is_true() expects a boolean, got {measured!r}")
        return measured

    def describe(self) -> str:
        return "is true"


def at_most(bound: float) -> AtMost:
    """measured <= bound."""
    return AtMost(float(bound))


def at_least(bound: float) -> AtLeast:
    """measured >= bound."""
    return AtLeast(float(bound))


def between(low: float, high: float) -> Between:
    """low <= measured <= high."""
    return Between(float(low), float(high))


def close_to(target: float, atol: float = 0.0, rtol: float = 0.0) -> CloseTo:
    """|measured - target| <= atol + rtol * |target|."""
    return CloseTo(float(target), float(atol), float(rtol))


def equals(expected: Any) -> Equals:
    """measured == expected exactly (sympy-aware)."""
    return Equals(expected)


def is_true() -> IsTrue:
    """measured is the boolean True."""
    return IsTrue()
