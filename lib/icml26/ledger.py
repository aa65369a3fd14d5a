"""The claims ledger (DESIGN.md): every tested claim with the paper's value, ours, and a verdict.

A claim *holds at* a set of scales, declared by the chapter before it is measured. Its status:

* ``reproduced``       the measured value passes the comparison;
* ``FAILED``           it does not, at a scale where the chapter declares it to hold: the run fails;
* ``not reproduced``   it does not, at a scale where it is not declared to hold (reported, with the
                       chapter's reason; e.g. too few steps at ``smoke``, or a claim the book finds false);
* ``not reached``      nothing could be measured at this scale (``measured=None``), with the reason.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .checks import Check, python_scalar
from .scales import SCALES

REPRODUCED = "reproduced"
FAILED = "FAILED"
NOT_REPRODUCED = "not reproduced"
NOT_REACHED = "not reached"


def tally(claims) -> dict[str, int]:
    """How many of a results file's claims (dicts with a "status") have each status, and in total."""
    counts = {status: 0 for status in (REPRODUCED, FAILED, NOT_REPRODUCED, NOT_REACHED)}
    for claim in claims:
        counts[claim["status"]] = counts.get(claim["status"], 0) + 1
    counts["total"] = sum(counts.values())
    return counts


class ClaimFailed(AssertionError):
    """Raised at the end of a run when a claim fails at a scale where it is declared to hold."""


@dataclass
class Claim:
    id: str
    statement: str
    paper_value: str
    paper_source: str
    measured: Any
    comparison: str
    holds_at: tuple[str, ...]
    scale: str
    status: str
    note: str = ""
    measured_text: str = field(default="")

    @property
    def declared(self) -> bool:
        return self.scale in self.holds_at

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["holds_at"] = list(self.holds_at)
        out["measured"] = jsonable(self.measured)
        out["declared"] = self.declared
        return out


def jsonable(value: Any) -> Any:
    """A strict-JSON copy of a results value: array scalars as Python numbers, non-finite floats and
    symbolic values as strings, containers recursively; anything else as its string."""
    value = python_scalar(value)
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    try:
        import sympy

        if isinstance(value, sympy.Basic):
            return str(value)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    return str(value)


def format_measured(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    value = python_scalar(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.4g}"
    return str(value)


def judge(measured: Any, check: Check, holds_at: tuple[str, ...], scale: str) -> str:
    """The status of one claim (module docstring). A value the check cannot compare is a failure."""
    declared = scale in holds_at
    if measured is None:
        return FAILED if declared else NOT_REACHED
    try:
        passed = check.holds(measured)
    except TypeError:
        passed = False
    if passed:
        return REPRODUCED
    return FAILED if declared else NOT_REPRODUCED


class Ledger:
    """The claims of one chapter run, in the order they were recorded."""

    def __init__(self, scale: str):
        self.scale = scale
        self.claims: list[Claim] = []

    def record(
        self,
        id: str,
        statement: str,
        *,
        paper_value: str,
        paper_source: str,
        measured: Any,
        check: Check,
        holds_at: tuple[str, ...] | list[str] | str,
        note: str = "",
    ) -> Claim:
        if isinstance(holds_at, str):
            holds_at = (holds_at,)
        holds_at = tuple(holds_at)
        unknown = [s for s in holds_at if s not in SCALES]
        if unknown:
            raise ValueError(f"claim {id}: unknown scale(s) {unknown} in holds_at; valid scales are {list(SCALES)}")
        if any(c.id == id for c in self.claims):
            raise ValueError(f"claim id {id!r} recorded twice")
        if not isinstance(check, Check):
            raise TypeError(f"claim {id}: check must be an icml26 check (at_most, between, ...), got {check!r}")
        status = judge(measured, check, holds_at, self.scale)
        claim = Claim(
            id=id, statement=statement, paper_value=str(paper_value), paper_source=paper_source,
            measured=measured, comparison=check.describe(), holds_at=holds_at, scale=self.scale,
            status=status, note=note, measured_text=format_measured(measured),
        )
        self.claims.append(claim)
        return claim

    @property
    def failed(self) -> list[Claim]:
        return [c for c in self.claims if c.status == FAILED]

    def table(self):
        """The claims as a pandas DataFrame (what the notebook displays)."""
        import pandas as pd

        rows = [
            {
                "id": c.id, "claim": c.statement, "paper": c.paper_value, "source": c.paper_source,
                "measured": c.measured_text, "test": c.comparison,
                "declared at": ", ".join(c.holds_at) or "none", "status": c.status, "note": c.note,
            }
            for c in self.claims
        ]
        columns = ["id", "claim", "paper", "source", "measured", "test", "declared at", "status", "note"]
        return pd.DataFrame(rows, columns=columns).set_index("id")
