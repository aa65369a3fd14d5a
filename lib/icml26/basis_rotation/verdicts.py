"""The chapter's readings before a verdict: preconditions (gates), the band of carry laws and censoring, joined into
the *untestable* reason that :meth:`icml26.Chapter.measure` records (contract v3: a claim that cannot be judged here
is ``inconclusive`` with its reason). Moved out of the notebook after the fresh review of the published ``full`` run
(defect 6), so that the chapter's most consequential logic is unit-tested.

* :func:`join_reasons`       the non-empty reasons, joined
* :func:`gate`               a claim read only where a precondition check came out reproduced (C4a/C4b/C4c on C4p, C4m
  and C4bm on C4mq, C3b/C3c on C3d, C13u on C13)
* :func:`pipeline_reason`    censoring first, then the band of carry laws (both ends)
* :func:`censored_ratio_reason`  a ratio of two slowdowns that are both lower bounds in some seed (a negative control
  read on censored runs)
* :func:`compare_censored`   the momentum control against another method, saying when a difference is between bounds
"""
from __future__ import annotations

import numpy as np

from .theory import band_reading

REPRODUCED = "reproduced"


def join_reasons(*reasons: str) -> str:
    """The non-empty reasons, joined with ``"; "`` (``""`` when there is none: the claim can be judged)."""
    return "; ".join(r for r in reasons if r)


def gate(precondition: str, status: str, why: str) -> str:
    """``""`` when the precondition check ``precondition`` came out ``reproduced``; else the reason that makes the claim
    resting on it untestable here: ``why`` (what the precondition protects against) and the check's own status."""
    if status == REPRODUCED:
        return ""
    if not why:
        raise ValueError("a gate needs the reason it protects the claim from")
    return f"{why} ({precondition} {status})"


def pipeline_reason(censoring: str = "", summary=None, side: str | None = None, declared: float | None = None,
                    lenient: float | None = None, strict: float | None = None) -> str:
    """The untestable reason of a pipeline claim: ``censoring`` (:func:`~icml26.basis_rotation.censoring_reason`)
    first, then, for a threshold carried from the paper's ``P = 32`` (``summary`` a
    :class:`~icml26.stats.SeedSummary`, ``side`` its region's side), the band of carry laws at both ends
    (:func:`~icml26.basis_rotation.band_reading`: a miss that another law would accept, a pass that another law would
    reject)."""
    out = [censoring]
    if summary is not None and side is not None:
        if declared is None or lenient is None:
            raise ValueError("a band reading needs the declared threshold and the band's lenient end")
        out.append(band_reading(summary.ci_low, summary.ci_high, declared, lenient, side, strict=strict))
    return join_reasons(*out)


def censored_ratio_reason(name_a: str, lower_a, name_b: str, lower_b, where: str = "the deepest P") -> str:
    """Why ``1 - slowdown(a) / slowdown(b)`` read per seed has no value in the seeds where *both* slowdowns are lower
    bounds (both runs censored at ``where``: neither reaches the target, so the ratio of the two bounds says nothing
    of the ratio of the slowdowns); ``""`` when no seed has both. A seed with ``b`` censored alone makes the value a
    lower bound, one with ``a`` censored alone an upper bound (:func:`~icml26.basis_rotation.censoring_reason` reads
    those against the region)."""
    both = np.asarray(lower_a, bool) & np.asarray(lower_b, bool)
    if not both.any():
        return ""
    return (f"{name_a} and {name_b} are both censored at {where} in {int(both.sum())} of {both.size} seeds: there the "
            "value is a ratio of two lower bounds (neither reaches the target)")


def compare_censored(diff, lower_a, lower_b, name_a: str, name_b: str, P: int) -> str:
    """A method ``a`` against ``b`` by the paired per-seed difference of their slowdowns ``diff``
    (:func:`icml26.paired_difference`), where ``lower_a`` / ``lower_b`` flag the seeds whose slowdown is only a lower
    bound (censored at ``P``): "above" only when ``b``'s values are exact (a lower bound above a value is above it),
    "below" only when ``a``'s are, "not comparable" when both are bounds somewhere."""
    lo_a, lo_b = np.asarray(lower_a, bool), np.asarray(lower_b, bool)
    if diff.n < 2:
        return f"not distinguishable (one seed) from {name_b} (difference {diff.text()})"
    if lo_a.any() and lo_b.any():
        return (f"not comparable with {name_b} (both censored at P = {P} in {int(lo_a.sum())} and {int(lo_b.sum())} of "
                f"{lo_a.size} seeds: two lower bounds)")
    if diff.ci_low > 0 and not lo_b.any():
        return f"above {name_b} (difference {diff.text()})"
    if diff.ci_high < 0 and not lo_a.any():
        return f"below {name_b} (difference {diff.text()})"
    if lo_a.any() or lo_b.any():
        return (f"not distinguishable from {name_b} (difference {diff.text()}; {name_a if lo_a.any() else name_b} "
                "censored in some seed: a lower bound)")
    return f"not distinguishable from {name_b} (difference {diff.text()})"
