"""How the book compares speeds: as ratios of best times measured in one process, interleaved.

Wall-clock times on a shared machine are noisy; running the contenders in turn, round after round,
exposes all of them to the same load, and the minimum over rounds is the least disturbed time.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping


def interleaved_best(contenders: Mapping[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Best wall time in seconds of each callable over `rounds` rounds, the callables run in turn."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not contenders:
        raise ValueError("interleaved_best needs at least one callable")
    best = {name: float("inf") for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best
