"""Episodes per second: the chapter's numpy commons world vs the same world as a `mesa` 3.3.1 model.

The core kernel of the chapter is the episode (T steps of N agents reading a constitution), and the search
runs thousands of them, a generation at a time: every candidate of a generation on the same K seeds. The
best peer on PyPI for an agent-based grid world is `mesa`; `mesa_model.py` implements the same world in
mesa's idiom (agents on a `MultiGrid`, food in a `PropertyLayer`, grid queries per agent) and is tested to
reproduce our trajectories exactly, so both contenders compute the same episodes. No PyPI package
implements this world itself.

Three comparisons, each timed interleaved in one process (``icml26.timing.interleaved_best``) and recorded
as the ratio ours / mesa in ``results/bench/constitutional-evolution.json``:

* **one episode at a time** (`run_episode` vs `run_mesa_episode`, C_des on 8 seeds): asserts ours < mesa;
* **a generation** (`batch.run_grid`: 16 candidates x 8 seeds = 128 episodes as one vectorised state, vs
  mesa running the same 128 episodes one by one; the gathered food of every episode asserted equal), for
  two generations: **generation 0** of a search (16 random constitutions, drawn as `evolve` draws them)
  and an **evolved generation** (the last of a short GP run: selected constitutions whose agents mostly
  live to T, so mesa, whose cost grows with the living agents, is slower per episode). Both assert
  ours < mesa.

The issue's target is >= 10x on a generation (ratio <= 0.1, "by batching the K seeds x candidates of a
generation into one state"). `batch.py` batches the generation into one state (exact, tested episode by
episode) and runs its sequential part, the agents acting one after another, and the action streams as
numba-compiled loops (`batch._resolve_step`, `batch._draw_action_stream`; the slot-by-slot numpy path stays
as the reference without numba). Measured on a 2-core machine shared with other jobs, best of 3 interleaved
rounds: generation 0 about 0.045 of mesa's time (22x; single rounds 0.045-0.09 under load), the evolved
generation about 0.03 (30-35x); before the compiled kernels, the numpy slot-by-slot resolution gave 0.11-0.14
and 0.09-0.11, numpy's per-call overhead over N sequential slots per step and the per-episode random-stream
calls being the cost. `test_issue_target_ten_times_faster` asserts the target on both generations
(generation 0 is the harder case: many random societies die early, so mesa's episodes get cheap while ours
keep the per-step numpy features). numba compiles the kernels on the first call in a fresh checkout
(about 15 s, then cached on disk in ``__pycache__``); the timing excludes it: every generation is run once,
for the equality check against mesa, before the timed rounds.

Run: ``pytest benchmarks/bench_constitutional_evolution.py`` (``make bench``).
"""
from __future__ import annotations

import numpy as np
import pytest

from icml26.constitutional_evolution import DESIGNED, RulePolicy, WorldParams, random_constitution, run_episode
from icml26.constitutional_evolution import batch
from icml26.constitutional_evolution.batch import run_grid
from icml26.constitutional_evolution.evolve import generation_seeds
from icml26.timing import interleaved_best, record_bench

mesa_model = pytest.importorskip("icml26.constitutional_evolution.mesa_model")

PARAMS = WorldParams(grid=12, n_agents=10, steps=80)   # the book preset's world
SEEDS = range(8)
ROUNDS = 5
TARGET = 0.1   # the issue's target: a generation at least 10x faster than the peer
CANDIDATES, K = 16, 8                                   # a generation: 16 candidates x 8 seeds
GEN_ROUNDS = 3
_RATIO: dict[str, float] = {}
_OURS_GENERATION = ("icml26 batched numpy (one state for the generation)" if batch.numba is None else
                    f"icml26 batched (one numpy state for the generation, numba {batch.numba.__version__} kernels)")


def _ours():
    pol = RulePolicy.shared(DESIGNED, PARAMS.n_agents)
    for s in SEEDS:
        run_episode(pol, PARAMS, s)


def _mesa():
    table = RulePolicy.shared(DESIGNED, PARAMS.n_agents).table
    for s in SEEDS:
        mesa_model.run_mesa_episode(table, PARAMS, s)


def _generation():
    """Generation 0 of a search (GP seed 0): its candidates as `evolve` draws them, its K shared seeds."""
    rng = np.random.default_rng([0, 77])
    pols = [RulePolicy.shared(random_constitution(rng), PARAMS.n_agents) for _ in range(CANDIDATES)]
    return pols, generation_seeds(0, 0, K)


def _evolved_generation():
    """The last generation of a short GP run (GP seed 0, 2 islands x 8, 6 generations, K = 8): its first 16
    candidates (survivors of selection: their agents mostly live to T) on its 8 shared seeds."""
    from icml26.constitutional_evolution import GPConfig, evolve, run_gp

    calls = []
    scorer = evolve.grid_scores
    evolve.grid_scores = lambda genomes, params, seeds: calls.append((genomes, seeds)) or scorer(genomes, params, seeds)
    try:
        run_gp(PARAMS, GPConfig(islands=2, pop=8, generations=6, K=K, migrate_every=3, seed=0))
    finally:
        evolve.grid_scores = scorer
    genomes, seeds = calls[-1]
    return [RulePolicy.shared(g, PARAMS.n_agents) for g in genomes[:CANDIDATES]], tuple(seeds)


def _ours_generation(pols, seeds):
    return [[ep.gathered for ep in row] for row in run_grid(pols, PARAMS, seeds)]


def _mesa_generation(pols, seeds):
    return [[mesa_model.run_mesa_episode(p.table, PARAMS, s) for s in seeds] for p in pols]


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
                       rounds=ROUNDS, note="seconds per episode, one episode at a time; the per-agent action "
                                           "resolution is sequential Python in both, the features are vectorised in ours")
    print(f"ours {rec['ours_seconds'] * 1e3:.2f} ms/episode, mesa {rec['peer_seconds'] * 1e3:.2f} ms/episode, "
          f"ratio {rec['ratio']:.3f}")
    assert rec["ratio"] < 1.0, f"ours is not faster than the mesa peer: ratio {rec['ratio']:.3f}"


def _generation_ratio(which: str = "generation 0") -> float:
    if which not in _RATIO:
        pols, seeds = _generation() if which == "generation 0" else _evolved_generation()
        n = len(pols) * len(seeds)
        ours = _ours_generation(pols, seeds)
        assert ours == _mesa_generation(pols, seeds)   # the same episodes (gathered food of each)
        best = interleaved_best({"ours": lambda: _ours_generation(pols, seeds),
                                 "mesa": lambda: _mesa_generation(pols, seeds)}, rounds=GEN_ROUNDS)
        what = ("the search's generation 0 (GP seed 0): 16 random constitutions" if which == "generation 0" else
                "the last generation of a short GP run (GP seed 0, 2 islands x 8, 6 generations): 16 evolved constitutions")
        rec = record_bench("constitutional-evolution", f"{which} ({CANDIDATES} candidates x {K} seeds, 12x12, N=10, T=80)",
                           _OURS_GENERATION, best["ours"] / n,
                           "mesa 3.3.1 model (same episodes, one by one)", best["mesa"] / n, rounds=GEN_ROUNDS,
                           note=f"seconds per episode; {what} on its {K} shared seeds, the gathered food of all "
                                f"{n} episodes equal")
        per_round = [r["ours"] / r["mesa"] for r in best.rounds]
        print(f"{which}: ours {rec['ours_seconds'] * 1e3:.3f} ms/episode, mesa {rec['peer_seconds'] * 1e3:.2f} "
              f"ms/episode, ratio {rec['ratio']:.3f} (rounds {', '.join(f'{r:.3f}' for r in per_round)})")
        _RATIO[which] = rec["ratio"]
    return _RATIO[which]


@pytest.mark.parametrize("which", ["generation 0", "evolved generation"])
def test_generation_ratio_ours_vs_mesa(which):
    ratio = _generation_ratio(which)
    assert ratio < 1.0, f"the batched {which} is not faster than the mesa peer: ratio {ratio:.3f}"


@pytest.mark.parametrize("which", ["generation 0", "evolved generation"])
def test_issue_target_ten_times_faster(which):
    ratio = _generation_ratio(which)
    assert ratio <= TARGET, f"ratio ours / mesa {ratio:.3f} > target {TARGET}"
