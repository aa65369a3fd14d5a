"""Episodes per second: the chapter's numpy commons world vs the same world as a `mesa` 3.3.1 model.

The core kernel of the chapter is one episode (T steps of N agents reading a constitution): the search
runs thousands of them. The best peer on PyPI for an agent-based grid world is `mesa`; `mesa_model.py`
implements the same world in mesa's idiom (agents on a `MultiGrid`, food in a `PropertyLayer`, grid
queries per agent) and is tested to reproduce our trajectories exactly, so both contenders compute the
same episodes. No PyPI package implements this world itself.

Run: ``pytest benchmarks/bench_constitutional_evolution.py`` (``make bench``). The ratio test times both
interleaved in one process (``icml26.timing.interleaved_best``) and records the ratio ours / mesa in
``results/bench/constitutional-evolution.json``.
"""
from __future__ import annotations

import pytest

from icml26.constitutional_evolution import DESIGNED, RulePolicy, WorldParams, run_episode
from icml26.timing import interleaved_best, record_bench

mesa_model = pytest.importorskip("icml26.constitutional_evolution.mesa_model")

PARAMS = WorldParams(grid=12, n_agents=10, steps=80)   # the book preset's world
SEEDS = range(8)
ROUNDS = 5


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
    assert rec["ratio"] < 1.5
