"""The claims ledger, contract v3 (DESIGN.md, "The claims ledger (contract v3)").

A chapter *declares* every claim before any experiment runs (`Ledger.declare`): its statement, its
kind, the paper's value and source, **the paper's words it tests** (quoted), its region (the test), the
scales at which it must hold, and the claims it rests on: its *positive control* (the same pipeline and
test where the effect is present by construction), its *negative control* (a `check` where the test
must fail), its *fidelity* checks (the method's pieces checked against the paper's equations or the
official code) and the training *curves* of the models it uses. Later cells only *measure*
(`Ledger.measure`) or say why a claim was `not_reached`. Measuring an undeclared id, finishing with a
declared claim never measured, declaring after the first measurement, or linking an undeclared id is
an error, so the tests are fixed before any number is seen.

Kinds (`KINDS`): ``paper`` (a result the paper states), ``derived`` (a consequence of the paper's
theory), ``check`` (our own correctness checks and controls). The book's headline counts ``paper``.

Verdicts (`STATUSES`), read from the measured interval (a `SeedSummary`'s Student-t or bootstrap
interval of the mean; a point for a deterministic value; the per-round ratios of a `SpeedRatio`):

* ``reproduced``      the whole interval lies in the claim's region, every linked curve converged, and a
                      linked negative control came out ``reproduced`` (the test failed on it as it must,
                      `icml26.checks.fails`);
* ``not reproduced``  the whole interval lies outside the region **and** power is shown: the positive
                      control was measured ``reproduced`` in this run, every linked fidelity check is
                      ``reproduced``, every linked curve converged, more than one seed (a ``check`` needs no
                      power: it is ours);
* ``inconclusive``    anything else, with its `reason`: the interval straddles the boundary, no positive
                      control, a fidelity check missing or failed, a model not converged, a NaN, timing
                      rounds that disagree, or a measurement the chapter marks *untestable here* (the
                      stand-in cannot express what the claim is about, e.g. a bound that binds nowhere
                      in the range run: `measure(..., untestable=reason)`; the value is recorded, not judged);
* ``not reached``     nothing could be measured at this scale (`not_reached`, with the reason).

Links form a graph without cycles (checked when measuring begins); a claim is judged after the claims
it links to, from their verdicts. A claim declared to hold at this run's scale whose verdict is not
``reproduced`` is *flagged*
(`Claim.failed_here`): the run ends in `ClaimFailed`, which protects the book against regressions;
the flag is separate from the verdict, which is the same test at every scale. A timing claim is never
flagged (a loaded machine must not break a build).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .checks import INSIDE, STRADDLES, UNDEFINED, Check, check_from_description, check_from_json, python_scalar
from .convergence import TrainingCurve
from .scales import SCALES
from .stats import SeedSummary
from .timing import MIN_ROUNDS, SpeedRatio

CONTRACT = 3
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_REACHED = "not reached"
PENDING = "not measured"
STATUSES = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_REACHED)
LEGACY_FAILED = "FAILED"
"""A status of results written before contract v3 (`normalize_claim` reads it)."""

PAPER, DERIVED, CHECK = "paper", "derived", "check"
KINDS = (PAPER, DERIVED, CHECK)
NEEDS_POWER = (PAPER, DERIVED)
"""Kinds whose negative verdict is published in the authors' name, so it needs power shown."""
SEEDED_SCALES = ("book", "full")
"""Scales at which a claim declared with ``min_seeds`` must be measured over that many seeds."""
DEFAULT_TIMING_TOLERANCE = 0.5
"""A timing claim is inconclusive when its largest per-round ratio exceeds the smallest by more than this."""

NO_POSITIVE_CONTROL = "no power shown: no positive control declared"
LEGACY_REASON = "no power shown (a verdict from before contract v3)"


class ClaimFailed(AssertionError):
    """Raised at the end of a run when a claim is not reproduced at a scale where it is declared to hold."""


class ClaimsIncomplete(ClaimFailed):
    """Raised at the end of a run when a declared claim was never measured."""


def _ids(value, id: str, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = (value,)
    out = tuple(value)
    if any(not isinstance(v, str) or not v for v in out):
        raise ValueError(f"claim {id}: {what} must be claim ids (strings), got {value!r}")
    return out


def _scales(holds_at, id: str) -> tuple[str, ...]:
    if isinstance(holds_at, str):
        holds_at = (holds_at,)
    holds_at = tuple(holds_at)
    unknown = [s for s in holds_at if s not in SCALES]
    if unknown:
        raise ValueError(f"claim {id}: unknown scale(s) {unknown} in holds_at; valid scales are {list(SCALES)}")
    return holds_at


@dataclass
class Claim:
    """One declared claim and, once measured, its measurement, interval, verdict and reason."""

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
    timing_tolerance: float = DEFAULT_TIMING_TOLERANCE
    words: str = ""
    bounds: tuple[float, float] | None = None
    positive_control: str | None = None
    negative_control: str | None = None
    fidelity: tuple[str, ...] = ()
    curves: tuple[str, ...] = ()
    measured: Any = None
    spread: SeedSummary | None = None
    speed: SpeedRatio | None = None
    interval: tuple[Any, Any] | None = None
    position: str = ""
    status: str = PENDING
    reason: str = ""
    note: str = ""
    measured_text: str = field(default="")
    reached: bool = True
    untestable: str = ""

    @property
    def comparison(self) -> str:
        return self.check.describe()

    @property
    def declared_here(self) -> bool:
        """Whether the claim is declared to hold at this run's scale."""
        return self.scale in self.holds_at

    @property
    def failed_here(self) -> bool:
        """Measured, declared to hold at this scale, and not reproduced: the flag that fails the run."""
        return self.measured_yet and self.declared_here and self.status != REPRODUCED and not self.timing

    @property
    def measured_yet(self) -> bool:
        return self.status != PENDING

    def controls_text(self) -> str:
        parts = []
        if self.positive_control:
            parts.append(f"+ {self.positive_control}")
        if self.negative_control:
            parts.append(f"- {self.negative_control}")
        if self.fidelity:
            parts.append("fidelity " + ", ".join(self.fidelity))
        if self.curves:
            parts.append("curves " + ", ".join(self.curves))
        return "; ".join(parts)

    def declaration(self) -> dict[str, Any]:
        """The claim as declared (what a results file keeps to show later changes)."""
        return {"kind": self.kind, "statement": self.statement, "words": self.words, "region": self.check.to_json(),
                "test": self.comparison, "holds_at": list(self.holds_at), "min_seeds": self.min_seeds,
                "timing": self.timing, "timing_tolerance": self.timing_tolerance if self.timing else None,
                "bounds": list(self.bounds) if self.bounds else None, "positive_control": self.positive_control,
                "negative_control": self.negative_control, "fidelity": list(self.fidelity), "curves": list(self.curves)}

    def to_json(self) -> dict[str, Any]:
        interval = [jsonable(v) for v in self.interval] if self.interval is not None else None
        return {
            "id": self.id, "statement": self.statement, "kind": self.kind, "words": self.words,
            "paper_value": self.paper_value, "paper_source": self.paper_source, "measured": jsonable(self.measured),
            "measured_text": self.measured_text, "interval": interval, "position": self.position,
            "spread": self.spread.to_json() if self.spread is not None else None,
            "speed": self.speed.to_json() if self.speed is not None else None, "comparison": self.comparison,
            "holds_at": list(self.holds_at), "declared": self.declaration(), "declared_here": self.declared_here,
            "failed_here": self.failed_here, "min_seeds": self.min_seeds, "timing": self.timing, "scale": self.scale,
            "status": self.status, "reason": self.reason, "positive_control": self.positive_control,
            "negative_control": self.negative_control, "fidelity": list(self.fidelity), "curves": list(self.curves),
            "note": self.note,
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
    if isinstance(value, (SeedSummary, SpeedRatio)):
        return value.text()
    if isinstance(value, bool):
        return str(value)
    value = python_scalar(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.4g}"
    return str(value)


def _fmt(x: Any) -> str:
    x = python_scalar(x)
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def normalize_claim(claim: Mapping[str, Any], contract: int | None) -> dict[str, Any]:
    """A results file's claim in contract-v3 terms. A claim from before v3 (``contract`` None or < 3) is
    marked ``legacy``; if it was FAILED or not reproduced it becomes ``inconclusive`` (no power was shown
    then) unless it is a ``check``, which becomes ``not reproduced``; a v2 ``reproduced`` over seeds (a test
    on the mean, with a bootstrap interval) is judged again from the Student-t interval of its per-seed
    values and becomes ``inconclusive`` when that straddles the region; a v2 ``not reached`` stays."""
    out = dict(claim)
    if contract is not None and contract >= CONTRACT:
        return out
    out["legacy"] = True
    status = claim.get("status")
    if status == LEGACY_FAILED and claim.get("measured_text") == "n/a":  # v2 judged a declared claim not reached FAILED
        out["status"] = NOT_REACHED
        out["reason"] = claim.get("note", "")
    elif status in (LEGACY_FAILED, NOT_REPRODUCED):
        if claim.get("kind") == CHECK:
            out["status"] = NOT_REPRODUCED
        else:
            out["status"], out["reason"] = INCONCLUSIVE, LEGACY_REASON
    elif status == REPRODUCED:
        spread = claim.get("spread") or {}
        values = [v for v in spread.get("values", []) if isinstance(v, (int, float))]
        check = check_from_description(claim.get("comparison", ""))
        if check is not None and len(values) >= 2 and len(values) == len(spread.get("values", [])):
            from .stats import over_seeds

            summary = over_seeds(values)
            if check.position(summary.ci_low, summary.ci_high) != INSIDE:
                out["status"] = INCONCLUSIVE
                out["reason"] = (f"a verdict from before contract v3, on the mean: the Student-t interval "
                                 f"[{summary.ci_low:.4g}, {summary.ci_high:.4g}] (n={summary.n}) is not inside the region")
    out["failed_here"] = status == LEGACY_FAILED or (status == NOT_REACHED and bool(claim.get("declared")))
    return out


def record_claims(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A results file's claims in contract-v3 terms (`normalize_claim`)."""
    return [normalize_claim(c, record.get("contract")) for c in record.get("claims", [])]


def tally(claims, kind: str | None = None) -> dict[str, int]:
    """How many claims (v3 dicts with a "status", see `record_claims`) have each verdict, in total, how
    many are flagged (failed where declared) and how many have a positive control. With ``kind``, only
    the claims of that kind."""
    counts = {status: 0 for status in STATUSES}
    counts.update(total=0, failed_here=0, with_positive_control=0)
    for claim in claims:
        if kind is not None and claim.get("kind") != kind:
            continue
        counts[claim["status"]] = counts.get(claim["status"], 0) + 1
        counts["total"] += 1
        counts["failed_here"] += bool(claim.get("failed_here"))
        counts["with_positive_control"] += bool(claim.get("positive_control"))
    return counts


@dataclass(frozen=True)
class DeclarationChange:
    id: str
    what: str
    old: str
    new: str
    narrowed: bool


def declaration_changes(current: Sequence[Claim], published: Mapping[str, Any]) -> list[DeclarationChange]:
    """What changed in the declarations since a published results file: added and removed claims, and
    each claim's kind, region and scales. *Narrowed* marks a change that weakens what was declared: a
    scale dropped, a region loosened (it strictly contains the old one), a paper claim demoted or removed."""
    old_claims = {c["id"]: c for c in published.get("claims", [])}
    changes = []
    now = {c.id: c for c in current}
    for id, old in old_claims.items():
        if id not in now:
            changes.append(DeclarationChange(id, "claim", old.get("statement", ""), "(removed)", old.get("kind") != CHECK))
    for claim in current:
        old = old_claims.get(claim.id)
        if old is None:
            changes.append(DeclarationChange(claim.id, "claim", "(new)", claim.statement, False))
            continue
        declared = old.get("declared") if isinstance(old.get("declared"), Mapping) else {}
        old_kind = declared.get("kind", old.get("kind"))
        if old_kind and old_kind != claim.kind:
            demoted = KINDS.index(claim.kind) > KINDS.index(old_kind) if old_kind in KINDS else False
            changes.append(DeclarationChange(claim.id, "kind", old_kind, claim.kind, demoted))
        old_test = declared.get("test", old.get("comparison"))
        region_changed = (declared.get("region") != claim.check.to_json()) if declared.get("region") else \
            (old_test is not None and old_test != claim.comparison)
        if old_test is not None and region_changed:
            old_check = check_from_json(declared["region"]) if declared.get("region") else check_from_description(old_test)
            old_text, new_text = old_test, claim.comparison
            if old_text == new_text:  # alike when printed: show the exact regions
                old_text, new_text = str(declared["region"]), str(claim.check.to_json())
            changes.append(DeclarationChange(claim.id, "region", old_text, new_text,
                                             bool(old_check is not None and claim.check.loosens(old_check))))
        old_scales = tuple(declared.get("holds_at", old.get("holds_at", [])))
        if set(old_scales) != set(claim.holds_at):
            changes.append(DeclarationChange(claim.id, "holds at", ", ".join(old_scales) or "none",
                                             ", ".join(claim.holds_at) or "none", bool(set(old_scales) - set(claim.holds_at))))
        if declared:  # a v3 declaration: every field can be compared
            changes += _v3_field_changes(claim, declared)
    return changes


def _v3_field_changes(claim: Claim, declared: Mapping[str, Any]) -> list[DeclarationChange]:
    """Changes of a v3 declaration's other fields; *narrowed* when the change makes the claim easier to
    pass or to call not reproduced: a control, fidelity check or curve unlinked, fewer seeds, a timing
    flag turned on (a timing claim never flags a run) or a larger timing tolerance, wider bounds."""
    now = claim.declaration()
    out = []

    def text(value) -> str:
        if value in (None, [], ""):
            return "none"
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value)

    for key in ("positive_control", "negative_control", "fidelity", "curves"):
        old, new = declared.get(key), now[key]
        old_set = set(old if isinstance(old, list) else [old] if old else [])
        new_set = set(new if isinstance(new, list) else [new] if new else [])
        if key in declared and old_set != new_set:
            out.append(DeclarationChange(claim.id, key.replace("_", " "), text(old), text(new), bool(old_set - new_set)))
    if "min_seeds" in declared and declared["min_seeds"] != now["min_seeds"]:
        out.append(DeclarationChange(claim.id, "min seeds", text(declared["min_seeds"]), text(now["min_seeds"]),
                                     (now["min_seeds"] or 0) < (declared["min_seeds"] or 0)))
    if "timing" in declared and bool(declared["timing"]) != now["timing"]:
        out.append(DeclarationChange(claim.id, "timing", str(bool(declared["timing"])), str(now["timing"]), now["timing"]))
    if declared.get("timing") and now["timing"] and declared.get("timing_tolerance") != now["timing_tolerance"]:
        out.append(DeclarationChange(claim.id, "timing tolerance", text(declared.get("timing_tolerance")),
                                     text(now["timing_tolerance"]),
                                     (now["timing_tolerance"] or 0) > (declared.get("timing_tolerance") or 0)))
    if "words" in declared and (declared["words"] or "") != now["words"]:
        out.append(DeclarationChange(claim.id, "words", text(declared["words"]), text(now["words"]), False))
    if "bounds" in declared and declared["bounds"] != now["bounds"]:
        old_b, new_b = declared["bounds"], now["bounds"]
        wider = old_b is not None and (new_b is None or (new_b[0] < old_b[0] or new_b[1] > old_b[1]))
        out.append(DeclarationChange(claim.id, "bounds", text(old_b), text(new_b), bool(wider)))
    return out


class Ledger:
    """The claims of one chapter run, in the order they were declared, and the curves they rest on."""

    def __init__(self, scale: str, check_seeds: bool = True):
        self.scale = scale
        self.check_seeds = check_seeds  # off in structure runs, which take smoke's few seeds at another scale
        self._claims: dict[str, Claim] = {}
        self._curves: dict[str, TrainingCurve] = {}
        self._measuring = False

    @property
    def claims(self) -> list[Claim]:
        return list(self._claims.values())

    @property
    def curves(self) -> list[TrainingCurve]:
        return list(self._curves.values())

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
        timing_tolerance: float = DEFAULT_TIMING_TOLERANCE,
        words: str = "",
        bounds: tuple[float, float] | None = None,
        positive_control: str | None = None,
        negative_control: str | None = None,
        fidelity: Sequence[str] | str | None = None,
        curves: Sequence[str] | str | None = None,
    ) -> Claim:
        """Declare one claim (before any measurement); the module docstring says what each field does.

        ``bounds``: the range the measured metric can take (``(0, 1)`` for a success rate): a region that
        cannot be reached inside it, or that holds for every value in it, is an error here.
        """
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
        if not isinstance(words, str):
            raise TypeError(f"claim {id}: words must be the paper's words, quoted (a string), got {words!r}")
        if not (isinstance(timing_tolerance, (int, float)) and timing_tolerance > 0):
            raise ValueError(f"claim {id}: timing_tolerance must be a positive number, got {timing_tolerance!r}")
        if bounds is not None:
            bounds = (float(bounds[0]), float(bounds[1]))
            check.check_bounds(bounds, f"claim {id}")
        positive, negative = _ids(positive_control, id, "positive_control"), _ids(negative_control, id, "negative_control")
        if len(positive) > 1 or len(negative) > 1:
            raise ValueError(f"claim {id}: one positive and one negative control at most (a claim id each)")
        links = (*positive, *negative, *_ids(fidelity, id, "fidelity"))
        if id in links:
            raise ValueError(f"claim {id}: a claim cannot be its own control or fidelity check")
        claim = Claim(id=id, statement=statement, kind=kind, paper_value=str(paper_value), paper_source=paper_source,
                      check=check, holds_at=_scales(holds_at, id), scale=self.scale, min_seeds=min_seeds,
                      timing=bool(timing), timing_tolerance=float(timing_tolerance), words=words.strip(), bounds=bounds,
                      positive_control=positive[0] if positive else None, negative_control=negative[0] if negative else None,
                      fidelity=_ids(fidelity, id, "fidelity"), curves=_ids(curves, id, "curves"))
        self._claims[id] = claim
        return claim

    def _links(self, claim: Claim) -> tuple[str, ...]:
        return tuple(x for x in (claim.positive_control, claim.negative_control, *claim.fidelity) if x is not None)

    def validate_links(self) -> None:
        """Every linked control and fidelity check is a declared claim, and no claim rests on itself through
        its links (called when measuring begins, and by the paper card)."""
        for claim in self._claims.values():
            for what, ids in (("positive control", (claim.positive_control,)), ("negative control", (claim.negative_control,)),
                              ("fidelity check", claim.fidelity)):
                for link in ids:
                    if link is not None and link not in self._claims:
                        raise KeyError(f"claim {claim.id}: its {what} {link!r} was never declared")
        state: dict[str, int] = {}  # 1: on the current path, 2: done

        def visit(id: str, path: tuple[str, ...]) -> None:
            if state.get(id) == 2:
                return
            if state.get(id) == 1:
                raise ValueError(f"claims link in a cycle: {' -> '.join((*path, id))}; a control or fidelity check "
                                 "cannot rest on the claim it controls")
            state[id] = 1
            for link in self._links(self._claims[id]):
                visit(link, (*path, id))
            state[id] = 2

        for id in self._claims:
            visit(id, ())

    def _start_measuring(self) -> None:
        if not self._measuring:
            self.validate_links()
            self._measuring = True

    def _declared_claim(self, id: str) -> Claim:
        if id not in self._claims:
            known = ", ".join(self._claims) or "none"
            raise KeyError(f"claim {id!r} was never declared (declared: {known}); declare it in the paper card first")
        claim = self._claims[id]
        if claim.measured_yet:
            raise ValueError(f"claim {id!r} measured twice")
        self._start_measuring()
        return claim

    def record_curve(self, curve: TrainingCurve) -> TrainingCurve:
        """Record a model's training curve; the claims linked to it are judged again."""
        if curve.name in self._curves:
            raise ValueError(f"curve {curve.name!r} recorded twice")
        self._curves[curve.name] = curve
        self._judge_all()
        return curve

    def measure(self, id: str, value: Any, note: str = "", untestable: str = "") -> Claim:
        """Record the measurement of a declared claim and judge it: a `SeedSummary` by its interval of the
        mean, a `SpeedRatio` by its per-round ratios, anything else as a point. A non-empty `untestable`
        says why this measurement cannot test the claim (its precondition does not hold in the setting
        run): the value is recorded and the verdict is ``inconclusive`` with that reason, whatever side
        of the region it falls on."""
        claim = self._declared_claim(id)
        if not isinstance(untestable, str):
            raise TypeError(f"claim {id}: untestable is a reason (a string, empty when the measurement can test the claim)")
        if value is None:
            raise ValueError(f"claim {id}: measured None; use not_reached(id, reason) when nothing could be measured")
        if claim.min_seeds is not None and self.check_seeds and self.scale in SEEDED_SCALES:
            n = value.n if isinstance(value, SeedSummary) else 1
            if n < claim.min_seeds:
                raise ValueError(f"claim {id}: a method comparison needs >= {claim.min_seeds} seeds at {self.scale!r} "
                                 f"(icml26.stats.over_seeds), got {n}")
        if isinstance(value, SpeedRatio) and not claim.timing:
            raise ValueError(f"claim {id}: a SpeedRatio measures a claim declared with timing=True")
        if isinstance(value, SeedSummary):
            claim.spread, claim.measured = value, value.mean
            claim.interval = (value.ci_low, value.ci_high)
        elif isinstance(value, SpeedRatio):
            claim.speed, claim.measured = value, value.value
            claim.interval = (value.low, value.high)
        else:
            claim.measured = value
            scalar = python_scalar(value)
            numeric = isinstance(scalar, (int, float)) and not isinstance(scalar, bool)
            claim.interval = (scalar, scalar) if numeric else None
        try:
            claim.position = claim.check.position(*claim.interval) if claim.interval is not None else claim.check.position(value)
        except TypeError as exc:
            claim.measured = claim.spread = claim.speed = claim.interval = None  # left unmeasured
            raise TypeError(f"claim {id}: cannot judge {value!r} against the region {claim.comparison} ({exc})") from exc
        claim.measured_text = format_measured(value)
        claim.note = note
        claim.untestable = untestable.strip()
        claim.status = INCONCLUSIVE  # judged below, with the rest
        self._judge_all()
        return claim

    def not_reached(self, id: str, reason: str) -> Claim:
        """Record that a declared claim could not be measured at this scale, and why."""
        if not reason or not str(reason).strip():
            raise ValueError(f"claim {id}: not_reached needs a reason")
        claim = self._declared_claim(id)
        claim.measured_text = format_measured(None)
        claim.reached = False
        claim.status, claim.reason = NOT_REACHED, str(reason)
        self._judge_all()
        return claim

    # -- verdicts -----------------------------------------------------------------------------------------
    def _unconverged(self, claim: Claim) -> list[str]:
        out = []
        for name in claim.curves:
            curve = self._curves.get(name)
            if curve is None:
                out.append(f"curve {name} not recorded")
            elif not curve.converged:
                out.append(curve.describe())
        return out

    def _reproduced(self, id: str | None) -> bool:
        claim = self._claims.get(id) if id else None
        return bool(claim is not None and claim.status == REPRODUCED)

    def _link_state(self, id: str) -> str:
        """How a linked claim came out, for a reason: its verdict, and why when it is not reproduced."""
        claim = self._claims[id]
        if not claim.measured_yet:
            return "not measured"
        return claim.status + (f" ({claim.reason})" if claim.reason else "")

    def verdict(self, claim: Claim) -> tuple[str, str]:
        """The claim's status and the reason (module docstring), from its position and the verdicts of the
        claims it links to."""
        if not claim.reached:
            return NOT_REACHED, claim.reason
        if not claim.measured_yet:
            return PENDING, ""
        if claim.untestable:
            return INCONCLUSIVE, f"untestable here: {claim.untestable}"
        unconverged = self._unconverged(claim)
        if unconverged:
            return INCONCLUSIVE, "training not converged: " + "; ".join(unconverged)
        if claim.position == UNDEFINED:
            return (NOT_REPRODUCED if claim.kind == CHECK else INCONCLUSIVE), "the measured value is not a finite number"
        if claim.timing and claim.speed is None:
            return INCONCLUSIVE, "a timing without its rounds (measure it with icml26.speed_ratio)"
        if claim.speed is not None and len(claim.speed.per_round) < MIN_ROUNDS:
            return INCONCLUSIVE, f"{len(claim.speed.per_round)} timed round(s): at least {MIN_ROUNDS} decide a timing claim"
        if claim.position == STRADDLES:
            lo, hi = claim.interval if claim.interval is not None else ("?", "?")
            return INCONCLUSIVE, f"the interval [{_fmt(lo)}, {_fmt(hi)}] straddles the region ({claim.comparison})"
        if claim.position == INSIDE:
            negative = claim.negative_control
            if negative and not self._reproduced(negative):
                state = self._link_state(negative)
                if self._claims[negative].status == NOT_REPRODUCED:
                    return INCONCLUSIVE, f"the test passed on its negative control {negative}: it does not discriminate"
                return INCONCLUSIVE, f"its negative control {negative} is {state}"
            return REPRODUCED, ""
        if claim.kind not in NEEDS_POWER:
            return NOT_REPRODUCED, ""
        missing = []
        if claim.speed is not None and claim.speed.disagreement > claim.timing_tolerance:
            missing.append(f"the timing rounds disagree (interquartile ratio {claim.speed.disagreement:.0%} > declared "
                           f"{claim.timing_tolerance:.0%}; per-round {claim.speed.low:.3g}-{claim.speed.high:.3g})")
        if claim.spread is not None and claim.spread.n < 2:
            missing.append("one seed: no interval")
        if claim.positive_control is None:
            missing.append(NO_POSITIVE_CONTROL)
        elif not self._reproduced(claim.positive_control):
            missing.append(f"no power shown: positive control {claim.positive_control} is "
                           f"{self._link_state(claim.positive_control)}")
        else:
            control = self._claims[claim.positive_control]
            # power grows with the number of values: a control that found its effect on as many values as the
            # claim has, or fewer, shows power at the claim's n; one that needed more does not (a sign test's n,
            # the untied pairs, need not equal its control's)
            if claim.spread is not None and control.spread is not None and control.spread.n > claim.spread.n:
                missing.append(f"positive control {control.id} ran on {control.spread.n} values, the claim on "
                               f"{claim.spread.n}: its power does not carry to the claim's fewer")
        if not claim.fidelity:
            missing.append("no fidelity check linked")
        missing += [f"fidelity check {f} is {self._link_state(f)}" for f in claim.fidelity if not self._reproduced(f)]
        if missing:
            return INCONCLUSIVE, "outside the region, but " + "; ".join(missing)
        return NOT_REPRODUCED, ""

    def _judge_all(self) -> None:
        """Judge every measured claim, again until nothing changes (links form no cycle, so this ends
        after at most as many passes as there are claims)."""
        for _ in range(len(self._claims) + 1):
            changed = False
            for claim in self._claims.values():
                if claim.measured_yet and claim.reached:
                    verdict = self.verdict(claim)
                    if verdict != (claim.status, claim.reason):
                        claim.status, claim.reason = verdict
                        changed = True
            if not changed:
                return

    def unrecorded_curves(self) -> list[tuple[str, str]]:
        """(claim id, curve name) of every linked curve never recorded."""
        return [(c.id, name) for c in self._claims.values() for name in c.curves if name not in self._curves]

    @property
    def failed(self) -> list[Claim]:
        """The claims flagged at this scale (declared to hold here, not reproduced)."""
        return [c for c in self._claims.values() if c.failed_here]

    @property
    def unmeasured(self) -> list[Claim]:
        return [c for c in self._claims.values() if not c.measured_yet]

    def declarations_table(self):
        """The declared claims as a DataFrame: what will be tested, before any result (the paper card)."""
        import pandas as pd

        rows = [{"id": c.id, "kind": c.kind, "claim": c.statement, "paper's words": f"“{c.words}”" if c.words else "",
                 "paper": c.paper_value, "source": c.paper_source,
                 "region": c.comparison + (f" (mean of >= {c.min_seeds} seeds)" if c.min_seeds else "")
                 + (" (timing)" if c.timing else ""),
                 "controls": c.controls_text(), "must hold at": ", ".join(c.holds_at) or "none"} for c in self._claims.values()]
        columns = ["id", "kind", "claim", "paper's words", "paper", "source", "region", "controls", "must hold at"]
        return pd.DataFrame(rows, columns=columns).set_index("id")

    def table(self):
        """The claims with their measurements and verdicts as a pandas DataFrame (what the notebook displays)."""
        import pandas as pd

        rows = [{"id": c.id, "kind": c.kind, "claim": c.statement, "paper's words": f"“{c.words}”" if c.words else "",
                 "paper": c.paper_value, "measured": c.measured_text, "region": c.comparison,
                 "controls": c.controls_text(), "must hold at": ", ".join(c.holds_at) or "none",
                 "verdict": c.status + (" (flagged: declared to hold here)" if c.failed_here else ""),
                 "reason": c.reason, "note": c.note} for c in self._claims.values()]
        columns = ["id", "kind", "claim", "paper's words", "paper", "measured", "region", "controls", "must hold at",
                   "verdict", "reason", "note"]
        return pd.DataFrame(rows, columns=columns).set_index("id")
