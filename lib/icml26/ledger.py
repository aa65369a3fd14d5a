"""The claims ledger, contract v2 (DESIGN.md, "The claims ledger").

A chapter *declares* every claim before any experiment runs (`Ledger.declare`): its statement, its
kind, the paper's value and source, the test, and the scales at which it must hold. Later cells only
*measure* (`Ledger.measure`) or say why a claim was `not_reached`. Measuring an undeclared id, or
finishing with a declared claim never measured, is an error; declaring after the first measurement is
an error too, so the tests are fixed before any number is seen.

Kinds (`KINDS`): ``paper`` (a result the paper states), ``derived`` (a consequence of the paper's
theory that the chapter derives and tests numerically), ``check`` (our own correctness checks). The
book's headline counts ``paper`` claims only.

Status of a measured claim:

* ``reproduced``       the measured value passes the test;
* ``FAILED``           it does not, at a scale where the claim is declared to hold: the run fails;
* ``not reproduced``   it does not, at a scale where it is not declared to hold (reported, not fatal);
* ``not reached``      nothing could be measured at this scale, with the reason (FAILED where declared).

Declarations decide only whether a failure breaks the run; the status is the same test either way.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .checks import Check, python_scalar
from .scales import SCALES
from .stats import SeedSummary

REPRODUCED = "reproduced"
FAILED = "FAILED"
NOT_REPRODUCED = "not reproduced"
NOT_REACHED = "not reached"
PENDING = "not measured"
STATUSES = (REPRODUCED, FAILED, NOT_REPRODUCED, NOT_REACHED)

PAPER, DERIVED, CHECK = "paper", "derived", "check"
KINDS = (PAPER, DERIVED, CHECK)
SEEDED_SCALES = ("book", "full")
"""Scales at which a claim declared with ``min_seeds`` must be measured over that many seeds."""


def tally(claims, kind: str | None = None) -> dict[str, int]:
    """How many of a results file's claims (dicts with a "status") have each status, and in total.

    With ``kind``, only the claims of that kind (results written before contract v2 have no kind and
    are counted under none).
    """
    counts = {status: 0 for status in STATUSES}
    for claim in claims:
        if kind is not None and claim.get("kind") != kind:
            continue
        counts[claim["status"]] = counts.get(claim["status"], 0) + 1
    counts["total"] = sum(counts.values())
    return counts


class ClaimFailed(AssertionError):
    """Raised at the end of a run when a claim fails at a scale where it is declared to hold."""


class ClaimsIncomplete(ClaimFailed):
    """Raised at the end of a run when a declared claim was never measured."""


@dataclass
class Claim:
    """One declared claim and, once measured, its measurement and status at this run's scale."""

    id: str
    statement: str
    kind: str
    paper_value: str
    paper_source: str
    check: Check
    holds_at: tuple[str, ...]
    scale: str
    min_seeds: int | None = None
    timing: bool = False
    measured: Any = None
    spread: SeedSummary | None = None
    status: str = PENDING
    note: str = ""
    measured_text: str = field(default="")

    @property
    def comparison(self) -> str:
        return self.check.describe()

    @property
    def declared(self) -> bool:
        """Whether the claim is declared to hold at this run's scale (a failure then breaks the run)."""
        return self.scale in self.holds_at

    @property
    def measured_yet(self) -> bool:
        return self.status != PENDING

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "statement": self.statement, "kind": self.kind, "paper_value": self.paper_value,
            "paper_source": self.paper_source, "measured": jsonable(self.measured), "measured_text": self.measured_text,
            "spread": self.spread.to_json() if self.spread is not None else None, "comparison": self.comparison,
            "holds_at": list(self.holds_at), "declared": self.declared, "min_seeds": self.min_seeds, "timing": self.timing,
            "scale": self.scale, "status": self.status, "note": self.note,
        }


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
    if isinstance(value, SeedSummary):
        return value.text()
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


def _scales(holds_at, id: str) -> tuple[str, ...]:
    if isinstance(holds_at, str):
        holds_at = (holds_at,)
    holds_at = tuple(holds_at)
    unknown = [s for s in holds_at if s not in SCALES]
    if unknown:
        raise ValueError(f"claim {id}: unknown scale(s) {unknown} in holds_at; valid scales are {list(SCALES)}")
    return holds_at


class Ledger:
    """The claims of one chapter run, in the order they were declared."""

    def __init__(self, scale: str, check_seeds: bool = True):
        self.scale = scale
        self.check_seeds = check_seeds  # off in structure runs, which take smoke's few seeds at another scale
        self._claims: dict[str, Claim] = {}
        self._measuring = False

    @property
    def claims(self) -> list[Claim]:
        return list(self._claims.values())

    def declare(
        self,
        id: str,
        statement: str,
        *,
        kind: str,
        paper_value: str,
        paper_source: str,
        check: Check,
        holds_at: tuple[str, ...] | list[str] | str,
        min_seeds: int | None = None,
        timing: bool = False,
    ) -> Claim:
        """Declare one claim (before any measurement). ``min_seeds``: a method comparison, to be measured
        as a `SeedSummary` over at least that many seeds at ``book`` and ``full``. ``timing``: the value
        is a speed ratio (`icml26.timing.interleaved_best`), the one kind of measurement that may vary
        from run to run."""
        if self._measuring:
            raise RuntimeError(f"claim {id!r} declared after measurements began: declare every claim in the "
                               "paper card, before any experiment runs")
        if not isinstance(id, str) or not id:
            raise ValueError(f"claim id must be a non-empty string, got {id!r}")
        if id in self._claims:
            raise ValueError(f"claim id {id!r} declared twice")
        if kind not in KINDS:
            raise ValueError(f"claim {id}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if not isinstance(check, Check):
            raise TypeError(f"claim {id}: check must be an icml26 check (at_most, between, ...), got {check!r}")
        if min_seeds is not None and (not isinstance(min_seeds, int) or min_seeds < 1):
            raise ValueError(f"claim {id}: min_seeds must be a positive integer, got {min_seeds!r}")
        claim = Claim(id=id, statement=statement, kind=kind, paper_value=str(paper_value), paper_source=paper_source,
                      check=check, holds_at=_scales(holds_at, id), scale=self.scale, min_seeds=min_seeds,
                      timing=bool(timing))
        self._claims[id] = claim
        return claim

    def _declared_claim(self, id: str) -> Claim:
        if id not in self._claims:
            known = ", ".join(self._claims) or "none"
            raise KeyError(f"claim {id!r} was never declared (declared: {known}); declare it in the paper card first")
        claim = self._claims[id]
        if claim.measured_yet:
            raise ValueError(f"claim {id!r} measured twice")
        self._measuring = True
        return claim

    def measure(self, id: str, value: Any, note: str = "") -> Claim:
        """Record the measurement of a declared claim and judge it. A `SeedSummary` is tested on its mean."""
        claim = self._declared_claim(id)
        if value is None:
            raise ValueError(f"claim {id}: measured None; use not_reached(id, reason) when nothing could be measured")
        if claim.min_seeds is not None and self.check_seeds and self.scale in SEEDED_SCALES:
            n = value.n if isinstance(value, SeedSummary) else 1
            if n < claim.min_seeds:
                raise ValueError(f"claim {id}: a method comparison needs >= {claim.min_seeds} seeds at {self.scale!r} "
                                 f"(icml26.stats.over_seeds), got {n}")
        if isinstance(value, SeedSummary):
            claim.spread, claim.measured = value, value.mean
        else:
            claim.measured = value
        claim.measured_text = format_measured(value)
        claim.note = note
        claim.status = judge(claim.measured, claim.check, claim.holds_at, self.scale)
        return claim

    def not_reached(self, id: str, reason: str) -> Claim:
        """Record that a declared claim could not be measured at this scale, and why."""
        if not reason or not str(reason).strip():
            raise ValueError(f"claim {id}: not_reached needs a reason")
        claim = self._declared_claim(id)
        claim.measured_text = format_measured(None)
        claim.note = str(reason)
        claim.status = judge(None, claim.check, claim.holds_at, self.scale)
        return claim

    @property
    def failed(self) -> list[Claim]:
        return [c for c in self._claims.values() if c.status == FAILED]

    @property
    def unmeasured(self) -> list[Claim]:
        return [c for c in self._claims.values() if not c.measured_yet]

    def declarations_table(self):
        """The declared claims as a DataFrame: what will be tested, before any result (the paper card)."""
        import pandas as pd

        rows = [{"id": c.id, "kind": c.kind, "claim": c.statement, "paper": c.paper_value, "source": c.paper_source,
                 "test": c.comparison + (f" (mean of >= {c.min_seeds} seeds)" if c.min_seeds else ""),
                 "must hold at": ", ".join(c.holds_at) or "none"} for c in self._claims.values()]
        columns = ["id", "kind", "claim", "paper", "source", "test", "must hold at"]
        return pd.DataFrame(rows, columns=columns).set_index("id")

    def table(self):
        """The claims with their measurements as a pandas DataFrame (what the notebook displays)."""
        import pandas as pd

        rows = [{"id": c.id, "kind": c.kind, "claim": c.statement, "paper": c.paper_value, "source": c.paper_source,
                 "measured": c.measured_text, "test": c.comparison, "must hold at": ", ".join(c.holds_at) or "none",
                 "status": c.status, "note": c.note} for c in self._claims.values()]
        columns = ["id", "kind", "claim", "paper", "source", "measured", "test", "must hold at", "status", "note"]
        return pd.DataFrame(rows, columns=columns).set_index("id")
