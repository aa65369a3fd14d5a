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
