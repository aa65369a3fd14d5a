"""Episodes per second: the chapter's numpy commons world vs the same world as a `mesa` 3.3.1 model.

The core kernel of the chapter is one episode (T steps of N agents reading a constitution): the search
runs thousands of them. The best peer on PyPI for an agent-based grid world is `mesa`; `mesa_model.py`
implements the same world in mesa's idiom (agents on a `MultiGrid`, food in a `PropertyLayer`, grid
queries per agent) and is tested to reproduce our trajectories exactly, so both contenders compute the
same episodes. No PyPI package implements this world itself.

Run: ``pytest benchmarks/bench_constitutional_evolution.py`` (``make bench``). The ratio test times both
interleaved in one process (``icml26.timing.interleaved_best``) and records the ratio ours / mesa in
``results/bench/constitutional-evolution.json``. It asserts that ours is faster than the peer (ratio < 1).
The issue's target, >= 10x (ratio <= 0.1, by batching the K seeds x candidates of a generation into one
state), is **not met**: the episodes still run one by one; `test_issue_target_ten_times_faster` is a strict
expected failure that turns into an error the day the target is met (then drop the mark).
"""
from __future__ import annotations

import pytest

from icml26.constitutional_evolution import DESIGNED, RulePolicy, WorldParams, run_episode
from icml26.timing import interleaved_best, record_bench

mesa_model = pytest.importorskip("icml26.constitutional_evolution.mesa_model")

PARAMS = WorldParams(grid=12, n_agents=10, steps=80)   # the book preset's world
SEEDS = range(8)
ROUNDS = 5
TARGET = 0.1   # the issue's target: ours at least 10x faster than the peer
_RATIO: dict[str, float] = {}


def _ours():
    pol = RulePolicy.shared(DESIGNED, PARAMS.n_agents)
    for s in SEEDS:
        run_episode(pol, PARAMS, s)


def _mesa():
    table = RulePolicy.shared(DESIGNED, PARAMS.n_agents).table
    for s in SEEDS:
        mesa_model.run_mesa_episode(table, PARAMS, s)


def test_same_episodes():
    pol = RulePolicy.shared(DESIGNED, PARAMS.n_agents)
    for s in SEEDS:
        assert run_episode(pol, PARAMS, s).gathered == mesa_model.run_mesa_episode(pol.table, PARAMS, s)


def test_bench_ours(benchmark):
    benchmark.pedantic(_ours, rounds=3, iterations=1)


def test_bench_mesa(benchmark):
    benchmark.pedantic(_mesa, rounds=3, iterations=1)


def test_ratio_ours_vs_mesa():
    _ours(), _mesa()  # warm-up (oracle caches, imports)
    best = interleaved_best({"ours": _ours, "mesa": _mesa}, rounds=ROUNDS)
    rec = record_bench("constitutional-evolution", "episode (12x12, N=10, T=80, C_des)", "icml26 numpy core",
                       best["ours"] / len(SEEDS), "mesa 3.3.1 model (same world, exact)", best["mesa"] / len(SEEDS),
                       rounds=ROUNDS, note="seconds per episode; the per-agent action resolution is sequential "
                                           "Python in both, the features are vectorised in ours")
    print(f"ours {rec['ours_seconds'] * 1e3:.2f} ms/episode, mesa {rec['peer_seconds'] * 1e3:.2f} ms/episode, "
          f"ratio {rec['ratio']:.3f}")
    _RATIO["ours/mesa"] = rec["ratio"]
    assert rec["ratio"] < 1.0, f"ours is not faster than the mesa peer: ratio {rec['ratio']:.3f}"


@pytest.mark.xfail(strict=True, reason="batched episodes not implemented: the issue's >= 10x target is unmet")
def test_issue_target_ten_times_faster():
    ratio = _RATIO.get("ours/mesa")
    if ratio is None:
        _ours(), _mesa()
        best = interleaved_best({"ours": _ours, "mesa": _mesa}, rounds=ROUNDS)
        ratio = best["ours"] / best["mesa"]
    assert ratio <= TARGET, f"ratio ours / mesa {ratio:.3f} > target {TARGET}"
