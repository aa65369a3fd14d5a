"""How the book compares speeds: as ratios of times measured in one process, interleaved.

Wall-clock times on a shared machine are noisy; running the contenders in turn, round after round,
exposes all of them to the same load, and the minimum over rounds is the least disturbed time.

A *timing claim* (``timing=True`` in `Chapter.declare`) is measured with `speed_ratio`: the ratio of
best times, and beside it the ratio within each round (after an untimed warm-up round), which shows how
far the rounds agree. The ledger reads the verdict from the per-round ratios: ``reproduced`` when every
round lies in the claim's region; a negative verdict only when the rounds agree (their interquartile
ratio, `SpeedRatio.disagreement`, within the claim's declared tolerance), else ``inconclusive`` (a
loaded machine); fewer than `MIN_ROUNDS` rounds decide nothing. A timing claim never breaks a build.
The contenders run on the chapter's pinned threads (`icml26.chapter.pin_threads`).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass


class BestTimes(dict):
    """Best seconds per contender (a plain dict of floats), with the seconds of every round in `rounds`."""

    rounds: list[dict[str, float]]


MIN_ROUNDS = 3
"""Fewer timed rounds than this give a timing claim no verdict but ``inconclusive``."""


def interleaved_best(contenders: Mapping[str, Callable[[], object]], rounds: int, warmup: int = 1) -> BestTimes:
    """Best wall time in seconds of each callable over `rounds` rounds, the callables run in turn after
    `warmup` untimed rounds (first-call costs: allocation, lazy initialisation); the seconds of each
    timed round are kept in the result's ``rounds``."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if not contenders:
        raise ValueError("interleaved_best needs at least one callable")
    for _ in range(warmup):
        for fn in contenders.values():
            fn()
    per_round = []
    for _ in range(rounds):
        seconds = {}
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            seconds[name] = time.perf_counter() - start
        per_round.append(seconds)
    best = BestTimes({name: min(r[name] for r in per_round) for name in contenders})
    best.rounds = per_round
    return best


@dataclass(frozen=True)
class SpeedRatio:
    """A speed ratio ``numerator time / denominator time``: of best times (`value`) and within each round."""

    value: float
    per_round: tuple[float, ...]
    numerator: str
    denominator: str

    @property
    def low(self) -> float:
        return min(self.per_round)

    @property
    def high(self) -> float:
        return max(self.per_round)

    @property
    def disagreement(self) -> float:
        """How far the rounds disagree: the upper quartile of the per-round ratios over the lower, minus 1
        (robust to one disturbed round; max/min would grow with the number of rounds)."""
        import numpy as np

        q1, q3 = np.percentile(self.per_round, [25, 75])
        return float(q3 / q1 - 1) if q1 > 0 else math.inf

    def text(self) -> str:
        return (f"{self.value:.3g}x (rounds {self.low:.3g}-{self.high:.3g}, n={len(self.per_round)}; "
                f"{self.numerator} / {self.denominator})")

    def to_json(self) -> dict:
        return {"value": self.value, "per_round": list(self.per_round), "numerator": self.numerator,
                "denominator": self.denominator, "disagreement": self.disagreement}


def speed_ratio(times: BestTimes, numerator: str, denominator: str) -> SpeedRatio:
    """``times[numerator] / times[denominator]`` from one `interleaved_best` run, with the ratio per round.
    For "A is k times faster than B" the numerator is B (the slower time) and the denominator A."""
    rounds = getattr(times, "rounds", None)
    if not rounds:
        raise ValueError("speed_ratio needs the per-round times of interleaved_best (its result's .rounds)")
    for name in (numerator, denominator):
        if name not in times:
            raise KeyError(f"speed_ratio: no contender {name!r}; timed: {', '.join(times)}")
    per_round = tuple(r[numerator] / r[denominator] for r in rounds)
    return SpeedRatio(times[numerator] / times[denominator], per_round, numerator, denominator)


BENCH_DIR_ENV_VAR = "ICML26_BENCH_DIR"


def bench_dir():
    """`results/bench/` of the checkout (``$ICML26_BENCH_DIR`` when set), where `make bench` records ratios."""
    import os
    from pathlib import Path

    from .paths import repo_root

    return Path(os.environ[BENCH_DIR_ENV_VAR]) if os.environ.get(BENCH_DIR_ENV_VAR) else repo_root() / "results" / "bench"


def record_bench(slug: str, kernel: str, ours: str, ours_seconds: float, peer: str, peer_seconds: float,
                 rounds: int, note: str = ""):
    """Record one kernel-vs-peer comparison in `results/bench/<slug>.json` (the Performance page's source).

    ``ours_seconds`` and ``peer_seconds`` are best times from one `interleaved_best` run; the ratio
    stored is ours / peer (below 1: ours is faster). Other kernels already in the file are kept.
    """
    import json
    import math
    from datetime import datetime, timezone

    from . import provenance
    from .registry import chapter_info

    chapter_info(slug)  # an unknown slug is an error
    for name, value in (("ours_seconds", ours_seconds), ("peer_seconds", peer_seconds)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"record_bench: {name} must be a positive number of seconds, got {value!r}")
    path = bench_dir() / f"{slug}.json"
    record = json.loads(path.read_text()) if path.exists() else {"slug": slug, "comparisons": {}}
    record["comparisons"][kernel] = {
        "ours": ours, "ours_seconds": ours_seconds, "peer": peer, "peer_seconds": peer_seconds,
        "ratio": ours_seconds / peer_seconds, "rounds": rounds, "note": note,
        "machine": provenance.machine(), "git": provenance.git_state(),
        "versions": provenance.package_versions(),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record["comparisons"][kernel]
