"""Claim regions: the test a claim's measured value is held to (DESIGN.md, "The claims ledger (contract v3)").

Each check knows how to describe itself (for the claims table), to decide a single value (`holds`),
and, for a number, where an *interval* of the measured mean lies against its region (`position`):
``inside`` (the whole interval in the region), ``outside`` (wholly outside it), ``straddles`` (the
region's boundary cuts it) or ``undefined`` (a NaN). The ledger reads a claim's verdict from that.
A NaN, an infinity where a finite number is expected, or a missing value never passes.

Checks serialise (`to_json` / `check_from_json`) so that a results file records each claim's region as
declared, and two declarations can be compared (`loosens`: the new region strictly contains the old).
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
    """A real number from a Python/NumPy/torch/sympy scalar; anything else (a boolean, a string) is a `TypeError`."""
    value = python_scalar(value)
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number; use is_true()")
    if isinstance(value, (str, bytes)):
        raise TypeError(f"cannot compare the string {value!r} as a number")
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot compare {value!r} as a number") from exc


def _finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))


INSIDE, OUTSIDE, STRADDLES, UNDEFINED = "inside", "outside", "straddles", "undefined"
POSITIONS = (INSIDE, OUTSIDE, STRADDLES, UNDEFINED)


class Check:
    """Base class: `holds(measured)` decides, `describe()` reads like 'x <= -0.2'.

    A numeric check has a `region()`, the closed interval ``(low, high)`` of values it accepts (with
    infinities); a non-numeric one (`equals` on a symbol, `is_true`) has none and decides point values.
    """

    def holds(self, measured: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def region(self) -> tuple[float, float] | None:
        return None

    def to_json(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def position(self, low: Any, high: Any | None = None) -> str:
        """Where the interval ``[low, high]`` (a point when ``high`` is None) lies against the region.

        ``undefined`` for a NaN or an infinity (no verdict is read from them). A value the check cannot
        compare (a string against a number, a number against `is_true`) is a `TypeError`: a bug in the
        chapter, never a verdict."""
        region = self.region()
        if high is None or region is None:
            if high is not None and python_scalar(low) != python_scalar(high):
                return STRADDLES  # an interval against a non-numeric check: no verdict from it
            x = python_scalar(low)
            if isinstance(x, float) and not math.isfinite(x):
                return UNDEFINED
            return INSIDE if self.holds(x) else OUTSIDE
        lo, hi = _as_float(low), _as_float(high)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return UNDEFINED
        if lo > hi:
            raise ValueError(f"interval [{lo}, {hi}]: low exceeds high")
        r_lo, r_hi = region
        if r_lo <= lo and hi <= r_hi:
            return INSIDE
        if hi < r_lo or lo > r_hi:
            return OUTSIDE
        return STRADDLES

    def loosens(self, old: "Check") -> bool:
        """Whether this region strictly contains `old`'s (a weaker test than the one declared before)."""
        new_r, old_r = self.region(), old.region()
        if new_r is None or old_r is None:
            return False
        return new_r[0] <= old_r[0] and old_r[1] <= new_r[1] and new_r != old_r

    def check_bounds(self, bounds: tuple[float, float], what: str) -> None:
        """Raise when the region cannot be reached inside a metric's ``bounds``, or holds for every value
        in them (a claim that cannot fail)."""
        region = self.region()
        lo, hi = (float(b) for b in bounds)
        if not lo <= hi:
            raise ValueError(f"{what}: bounds {bounds} must be (low, high) with low <= high")
        if region is None:
            return
        if region[1] < lo or region[0] > hi:
            raise ValueError(f"{what}: the region ({self.describe()}) cannot be reached by a metric bounded in "
                             f"[{lo:g}, {hi:g}]: no system could pass it")
        if region[0] <= lo and hi <= region[1]:
            raise ValueError(f"{what}: the region ({self.describe()}) holds for every value in [{lo:g}, {hi:g}]: "
                             "a claim that cannot fail")

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

    def region(self) -> tuple[float, float]:
        return (-math.inf, self.bound)

    def to_json(self) -> dict:
        return {"check": "at_most", "bound": self.bound}


@dataclass(frozen=True)
class AtLeast(Check):
    bound: float

    def holds(self, measured: Any) -> bool:
        x = _as_float(measured)
        return _finite(x) and x >= self.bound

    def describe(self) -> str:
        return f">= {self.bound:g}"

    def region(self) -> tuple[float, float]:
        return (self.bound, math.inf)

    def to_json(self) -> dict:
        return {"check": "at_least", "bound": self.bound}


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

    def region(self) -> tuple[float, float]:
        return (self.low, self.high)

    def to_json(self) -> dict:
        return {"check": "between", "low": self.low, "high": self.high}


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

    def region(self) -> tuple[float, float]:
        tol = self.atol + self.rtol * abs(self.target)
        return (self.target - tol, self.target + tol)

    def to_json(self) -> dict:
        return {"check": "close_to", "target": self.target, "atol": self.atol, "rtol": self.rtol}


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
        if hasattr(measured, "tolist") and not isinstance(measured, (int, float)):  # an array: compare its values
            measured = measured.tolist()
        if isinstance(measured, list) and isinstance(self.expected, tuple):
            measured = tuple(measured)
        return bool(measured == self.expected)

    def describe(self) -> str:
        return f"== {self.expected}"

    def region(self) -> tuple[float, float] | None:
        if isinstance(self.expected, bool) or not isinstance(python_scalar(self.expected), (int, float)):
            return None
        x = float(python_scalar(self.expected))
        return (x, x) if math.isfinite(x) else None

    def to_json(self) -> dict:
        expected = python_scalar(self.expected)
        return {"check": "equals", "expected": expected if isinstance(expected, (bool, int, float, str)) else str(expected)}


@dataclass(frozen=True)
class IsTrue(Check):
    def holds(self, measured: Any) -> bool:
        measured = python_scalar(measured)
        if not isinstance(measured, bool):
            raise TypeError(f"is_true() expects a boolean, got {measured!r}")
        return measured

    def describe(self) -> str:
        return "is true"

    def to_json(self) -> dict:
        return {"check": "is_true"}


@dataclass(frozen=True)
class Fails(Check):
    """A negative control's region: the claim's test (`inner`) does **not** pass on the control's measured
    interval (it straddles the test's region or lies outside it). For a null effect over seeds (shuffled
    labels, the method without the paper's component) the interval straddles the claim's boundary, so no
    ordinary region could be "reproduced" by it; this one is, exactly when the test discriminates."""

    inner: Check

    def holds(self, measured: Any) -> bool:
        return not self.inner.holds(measured)

    def position(self, low: Any, high: Any | None = None) -> str:
        inner = self.inner.position(low, high)
        return {INSIDE: OUTSIDE, OUTSIDE: INSIDE, STRADDLES: INSIDE}.get(inner, inner)

    def describe(self) -> str:
        return f"the test ({self.inner.describe()}) fails"

    def to_json(self) -> dict:
        return {"check": "fails", "inner": self.inner.to_json()}


def fails(check: Check) -> Fails:
    """A negative control: the claim's test `check` does not pass on the control (`Fails`)."""
    if not isinstance(check, Check):
        raise TypeError(f"fails() takes an icml26 check, got {check!r}")
    return Fails(check)


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


def check_from_json(data: dict) -> Check:
    """The check a results file recorded with `Check.to_json` (``equals`` on a symbol comes back as its string)."""
    kind = data.get("check")
    if kind == "at_most":
        return at_most(data["bound"])
    if kind == "at_least":
        return at_least(data["bound"])
    if kind == "between":
        return between(data["low"], data["high"])
    if kind == "close_to":
        return close_to(data["target"], data.get("atol", 0.0), data.get("rtol", 0.0))
    if kind == "equals":
        return equals(data["expected"])
    if kind == "is_true":
        return is_true()
    if kind == "fails":
        return fails(check_from_json(data["inner"]))
    raise ValueError(f"unknown check {data!r}")


_NUMBER = r"(-?(?:inf|nan|\d+(?:\.\d*)?(?:e[-+]?\d+)?))"


def check_from_description(text: str) -> Check | None:
    """The check a pre-v3 results file describes (its ``comparison``: ``<= 0.8``, ``in [0, 1]``, ...), or
    None when it cannot be read back (``== x``, ``is true``). Used to compare old declarations with new."""
    import re

    text = str(text).strip()
    for pattern, make in ((rf"^<= {_NUMBER}$", lambda m: at_most(float(m[1]))),
                          (rf"^>= {_NUMBER}$", lambda m: at_least(float(m[1]))),
                          (rf"^in \[{_NUMBER}, {_NUMBER}\]$", lambda m: between(float(m[1]), float(m[2])))):
        match = re.match(pattern, text)
        if match:
            return make(match)
    match = re.match(rf"^= {_NUMBER} \+/- (.+)$", text)
    if match:
        atol = rtol = 0.0
        for term in match[2].split(" + "):
            if term.endswith("*|target|"):
                rtol = float(term[: -len("*|target|")])
            else:
                atol = float(term)
        return close_to(float(match[1]), atol, rtol)
    return None
