"""Readings of a :class:`~icml26.mbr.experiments.Study` that the chapter's claims rest on (moved out of the notebook
so that they are tested here): the z-score gains and their null controls, and the exact sign test of the digest's
per-metric channel advice.

**z-gains and their nulls.** A z-gain (:func:`~icml26.mbr.experiments.z_gain`) is a score difference over the spread
of a grid's configurations: it measures a configuration's *rank position inside the grid*, not an effect size. Where
MBR sits at the bottom of the grid (the model score is informative, MAP beats MBR), any configuration's z-gain is
about ``-z(MBR)``, which exceeds +1 whenever MBR lies more than one spread below the grid's mean. Two nulls tell a tuning gain from
that position: :func:`random_z_gain`, the *expected* z-gain of a configuration drawn uniformly from the same sub-grid
the tuning chooses from (exact, no draw: the mean z over the candidates minus z(MBR); ``-z(MBR)`` when the candidates
are the unit's configurations), and the same tuning on a shuffled dev signal
(:meth:`~icml26.mbr.experiments.Study.shuffled_dev`), read with :func:`z_gains`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .experiments import _is_r2_config, channel_subset, crossfit_z_gain, paper_grid, share_on_side, \
    z_gain, zscores

HOWS = ("tuned", "optimal", "in-sample", "random")
"""What :func:`z_gains` reads: the dev-tuned configuration, the cross-fitted optimum on test, the literal in-sample
optimum on test (winner's curse), or the expected gain of a uniformly random configuration of the same sub-grid."""


def per_source_scores(st, seed: int, task: str, utility: str) -> np.ndarray:
    """(n_configs, S): every configuration's oracle expected utility on every test source."""
    d = st.splits[(seed, task, "test")]
    return d.O[utility][np.arange(d.n_sources)[None, :], st.selections[(seed, task, "test", utility)]]


def z_unit(st, whole: bool = False) -> tuple[list[int] | None, str]:
    """The z unit and the sub-grid choices are made in: the paper-like sub-grid (:func:`paper_grid`, default) or
    the whole grid (``whole=True``: unit None, every configuration)."""
    return (None, "all") if whole else (paper_grid(st.configs), "paper")


def random_z_gain(scores: np.ndarray, candidates: Sequence[int], base: int, unit: Sequence[int] | None = None) -> float:
    """The expected z-gain over ``base`` of a configuration drawn uniformly from ``candidates``: the mean of their
    z-scores minus z(base), exactly (no draw). When ``candidates`` are the unit's configurations their mean z is 0,
    and this is ``-z(base)``: what any configuration gains by MBR's position in the grid alone."""
    candidates = np.asarray(candidates, dtype=int)
    if candidates.size == 0:
        raise ValueError("random_z_gain needs at least one candidate configuration")
    z = zscores(scores, unit)
    return float(z[candidates].mean() - z[base])


def z_gains(st, settings: Sequence[tuple[str, str]], how: str, whole: bool = False) -> dict[tuple[int, str, str], float]:
    """``{(seed, task, utility): z(chosen) - z(MBR)}`` over ``st``'s seeds and ``settings``.

    ``how``: ``"tuned"`` (dev-tuned, :meth:`Study.tuned` inside the sub-grid), ``"optimal"`` (best on test,
    cross-fitted over two halves of the test sources, :func:`crossfit_z_gain`), ``"in-sample"`` (the literal
    argmax on the whole test split, biased up by the winner's curse) or ``"random"`` (:func:`random_z_gain`, the
    null of the grid position). ``whole=False``: chosen inside the paper-like sub-grid, in its unit; ``True``:
    among every configuration, in the whole grid's unit. A planted configuration counts as a candidate of the
    sub-grid (:func:`channel_subset`) but never as part of the unit."""
    if how not in HOWS:
        raise ValueError(f"unknown reading {how!r}; valid: {HOWS}")
    unit, sub = z_unit(st, whole)
    cand = channel_subset(st.configs, sub, st.mbr_config)
    out = {}
    for s in st.seeds:
        for t, u in settings:
            scores = st.test[(s, t, u)]
            if how == "tuned":
                out[(s, t, u)] = z_gain(scores, st.tuned(s, t, u, sub), st.mbr, unit)
            elif how == "optimal":
                out[(s, t, u)] = crossfit_z_gain(per_source_scores(st, s, t, u), cand, st.mbr, unit)
            elif how == "random":
                out[(s, t, u)] = random_z_gain(scores, cand, st.mbr, unit)
            else:
                best = cand[int(np.argmax(np.asarray(scores)[cand]))]
                out[(s, t, u)] = z_gain(scores, best, st.mbr, unit)
    return out


def point_gains(st, settings: Sequence[tuple[str, str]], whole: bool = False) -> dict[tuple[int, str, str], float]:
    """``{(seed, task, utility): test score of the dev-tuned configuration - MBR's}`` in the utility's points, the
    tuning made inside the same sub-grid as :func:`z_gains` (paper-like unless ``whole``)."""
    _, sub = z_unit(st, whole)
    return {(s, t, u): float(st.test[(s, t, u)][st.tuned(s, t, u, sub)] - st.test[(s, t, u)][st.mbr])
            for s in st.seeds for t, u in settings}


def difference(a: Mapping, b: Mapping) -> dict:
    """``a[k] - b[k]`` for every key of ``a`` (the same keys in ``b``)."""
    if set(a) != set(b):
        raise ValueError("difference needs the same keys on both sides")
    return {k: a[k] - b[k] for k in a}


def seed_means(table: Mapping[tuple[int, str, str], float], tasks: Sequence[str], utilities: Sequence[str]) -> list[float]:
    """Per seed, the mean of ``table`` over ``tasks`` x ``utilities`` (one value per seed, sorted by seed)."""
    seeds = sorted({k[0] for k in table})
    return [float(np.mean([table[(s, t, u)] for t in tasks for u in utilities])) for s in seeds]


def per_task(table: Mapping[tuple[int, str, str], float], utility: str) -> dict[str, list[float]]:
    """``{task: [value of each seed]}`` for one utility (sorted by seed)."""
    seeds = sorted({k[0] for k in table})
    tasks = sorted({k[1] for k in table if k[2] == utility})
    return {t: [float(table[(s, t, utility)]) for s in seeds] for t in tasks}


def intersection_union_between(summaries: Mapping[Any, Any], low: float, high: float) -> tuple[Any, Any]:
    """The one interval that decides an intersection-union test of "every setting's mean lies in [low, high]" (a
    two-sided region, e.g. the digest's "+1 to +2 z"), from one :class:`~icml26.stats.SeedSummary` per setting:
    an undefined setting first; else one wholly outside the region (the farthest); else one that straddles a bound
    (the farthest past it); else the one whose interval comes closest to a bound. Its interval lies inside the
    region iff every setting's does, and wholly outside iff some setting's does. Returns ``(key, summary)``."""
    if not summaries:
        raise ValueError("intersection_union_between needs at least one setting")
    if not low < high:
        raise ValueError(f"need low < high, got {low}, {high}")

    def excess(v) -> float:          # how far the interval reaches past the region (<= 0: inside)
        return max(low - v.ci_low, v.ci_high - high)

    def outside_by(v) -> float:      # > 0 when the interval lies wholly outside
        return max(low - v.ci_high, v.ci_low - high)

    items = list(summaries.items())
    bad = [(k, v) for k, v in items if not (math.isfinite(v.ci_low) and math.isfinite(v.ci_high))]
    if bad:
        return bad[0]
    out = [(k, v) for k, v in items if outside_by(v) > 0]
    if out:
        return max(out, key=lambda kv: outside_by(kv[1]))
    return max(items, key=lambda kv: excess(kv[1]))


# ----------------------------------------------------------------------------- the channel advice

def map_config(cfg) -> bool:
    """Whether ``cfg`` is MAP over samples (R2's b = inf): its direction and reference weights do not act."""
    return _is_r2_config(cfg) and math.isinf(float(cfg[2]))


def dev_best(st, seed: int, task: str, utility: str, subset: Sequence[int]) -> list[int]:
    """The configurations of ``subset`` the dev signal cannot choose between (:meth:`Study.dev_best`)."""
    return st.dev_best(seed, task, utility, subset=subset)


OUTCOMES = ("hit", "miss", "tie", "inapplicable")
"""What one (seed, setting) pair says about a piece of advice (:func:`advice_outcome`)."""


def advice_outcome(st, seed: int, task: str, utility: str, subset: Sequence[int], value: Callable[[Any], float | None],
                   holds: Callable[[float], bool], inapplicable: Callable[[Any], bool] | None = None) -> tuple[str, int]:
    """One (seed, setting) pair of a sign test: the dev-best configurations of ``subset`` (:func:`dev_best`) give their
    ``value`` (None, or ``inapplicable(cfg)``: no weight to read, e.g. MAP's placeholder lambda = 0 or alpha = gamma),
    and the pair is

    * ``"hit"`` / ``"miss"``: every dev-best configuration with a value lies on the advised side (``holds``) / off it.
      A **strict MBR optimum** (MBR alone dev-best) is a preference for MBR and counts by MBR's own value, like any
      other configuration's: R2's MBR has lambda = delta = b = 0, on the side of "lower gamma" (lambda <= 0.25) and
      off the side of "keep beta" (b > 0) and "raise delta" (delta >= 0.5);
    * ``"tie"``: dev-best configurations that are genuinely different, i.e. disagree on the advised side (MBR among
      them or not, as :func:`sign_within`): the dev signal cannot say which side it prefers;
    * ``"inapplicable"``: no dev-best configuration has a value to read.

    Returns ``(outcome, index)``: ``index`` is the first dev-best configuration with a value (the dev optimum the
    outcome reads; the first dev-best one when none has a value)."""
    best = dev_best(st, seed, task, utility, subset)
    read = []
    for i in best:
        cfg = st.configs[i]
        v = None if (inapplicable is not None and inapplicable(cfg)) else value(cfg)
        if v is not None:
            read.append((i, bool(holds(v))))
    if not read:
        return "inapplicable", best[0]
    sides = {side for _, side in read}
    if len(sides) > 1:
        return "tie", read[0][0]
    return ("hit" if sides.pop() else "miss"), read[0][0]


def advice_share(st, settings: Sequence[tuple[str, str]], value: Callable[[Any], float | None], holds: Callable[[float], bool],
                 subset: Sequence[int] | None = None, inapplicable: Callable[[Any], bool] | None = None):
    """The exact sign test of one piece of channel advice on a study: over every (seed, setting), is the
    dev-optimal configuration's ``value`` on the advised side (``holds``)? The optimum is taken inside ``subset``
    (default: the whole grid, MBR first), each pair read by :func:`advice_outcome`.

    Left out of the test, and counted: a **tie** (dev-best configurations, within :data:`DEV_TIE`, that disagree on
    the advised side), and an **inapplicable** optimum (``inapplicable(cfg)``, e.g. MAP for a direction or reference
    weight, whose placeholder 0 is no weight at all; or a ``value`` of None, e.g. alpha = gamma for "raise alpha").
    A strict MBR optimum is neither: it counts by MBR's own value. (Before the fix, every pair whose dev optimum was
    MBR, a strict preference included, was left out as a "tie with MBR".) Returns ``(share_on_side summary, ties,
    inapplicable, pairs)``."""
    subset = channel_subset(st.configs, "all", st.mbr_config) if subset is None else list(subset)
    hits = trials = ties = skipped = 0
    for s in st.seeds:
        for t, u in settings:
            outcome, _ = advice_outcome(st, s, t, u, subset, value, holds, inapplicable)
            if outcome == "tie":
                ties += 1
            elif outcome == "inapplicable":
                skipped += 1
            else:
                trials += 1
                hits += outcome == "hit"
    return share_on_side(hits, trials), ties, skipped, len(st.seeds) * len(settings)


def sign_within(st, settings: Sequence[tuple[str, str]], subset: Sequence[int], value: Callable[[Any], float | None],
                holds: Callable[[float], bool]):
    """The exact sign test of a weight *inside* a sub-grid that need not hold MBR (GC4m: R1-m's configurations): over
    every (seed, setting), the configurations with the best dev score in ``subset`` (all within 1e-12 of it) give
    their ``value``; the pair is a hit or a miss when they agree on ``holds``, a **tie** when they disagree, and
    left out when none has a value (e.g. alpha = gamma: no direction). Returns ``(share_on_side summary, ties,
    left out, pairs)``, like :func:`advice_share`."""
    subset = list(subset)
    if not subset:
        raise ValueError("sign_within needs a non-empty sub-grid")
    hits = trials = ties = skipped = 0
    for s in st.seeds:
        for t, u in settings:
            best = dev_best(st, s, t, u, subset)
            sides = {bool(holds(v)) for v in (value(st.configs[i]) for i in best) if v is not None}
            if not sides:
                skipped += 1
            elif len(sides) > 1:
                ties += 1
            else:
                trials += 1
                hits += sides.pop()
    return share_on_side(hits, trials), ties, skipped, len(st.seeds) * len(settings)


def r1_model_subset(configs: Sequence[tuple], mbr_config: tuple) -> list[int]:
    """Indices of R1-m's configurations (prior ``"m"``: the model's exp(lbar)), MBR (``mbr_config``) first: the
    sub-grid where, with a symmetric utility, alpha - gamma is identifiable (R1-u confounds it with the prior
    exponents, T7; R1-m's exponent ``(alpha + gamma) log J - alpha log P_u(h) - gamma log P_u(r) + beta lbar(h) +
    delta lbar(r)`` keeps four distinct functions)."""
    m = list(configs).index(mbr_config)
    out = [m] + [i for i, c in enumerate(configs) if i != m and isinstance(c, tuple) and len(c) == 5 and c[0] == "m"]
    if len(out) == 1:
        raise ValueError("the grid holds no R1-m configuration")
    return out


def mbr_dev_margin(st, seed: int, task: str, utility: str, subset: Sequence[int] | None = None) -> float:
    """MBR's dev score minus the best dev score of the configurations of ``subset`` (default: the whole grid) that
    select other candidates than MBR on the dev split (a configuration that decodes as MBR does is MBR there), in the
    utility's points: > :data:`DEV_TIE`, a strict dev preference for MBR over every genuinely different configuration;
    within it, a tie; below, another configuration preferred. NaN when every configuration decodes as MBR does."""
    subset = channel_subset(st.configs, "all", st.mbr_config) if subset is None else list(subset)
    dev = np.asarray(st.dev[(seed, task, utility)])
    others = [i for i in subset if i != st.mbr and not st.decodes_as_mbr(seed, task, utility, i)]
    return float(dev[st.mbr] - dev[others].max()) if others else float("nan")


def tuned_in(st, seed: int, task: str, utility: str, subset: Sequence[int]) -> tuple[int, bool]:
    """The dev-optimal configuration inside ``subset`` (its first element is MBR; ties go to it, then to the grid
    order) and whether MBR *ties* with a genuinely different configuration there: MBR is dev-best (within
    :data:`DEV_TIE`) together with another configuration that selects other candidates on the dev split. A strict
    MBR optimum is no tie (the dev signal prefers MBR), nor is a configuration that decodes as MBR does (e.g. any
    lambda under a symmetric utility, I3). (Before the fix, any pair whose dev optimum was MBR counted as a tie.)"""
    subset = list(subset)
    if subset[0] != st.mbr:
        raise ValueError("tuned_in: the sub-grid must start with MBR (ties go to it)")
    dev = np.asarray(st.dev[(seed, task, utility)])[subset]
    best = subset[int(np.argmax(dev))]
    return best, st.ties_mbr(seed, task, utility, subset=subset)


__all__ = ["HOWS", "OUTCOMES", "advice_outcome", "advice_share", "dev_best", "difference", "intersection_union_between", "map_config", "mbr_dev_margin", "per_source_scores", "per_task", "point_gains",
           "r1_model_subset", "random_z_gain", "seed_means", "sign_within", "tuned_in", "z_gains", "z_unit"]
