"""Batched episodes (icml26.constitutional_evolution.batch): exactly the episodes of `run_episode`, one by one."""
from __future__ import annotations

import numpy as np
import pytest

from icml26.constitutional_evolution import (
    ADVERSARIAL, DESIGNED, DESIGNED_SILENT, EMPTY, PREDATOR, PRESETS, GPConfig, Predicate, Rule, RulePolicy,
    WorldParams, hhh_society, random_constitution, random_search, run_episode, run_gp,
)
from icml26.constitutional_evolution import batch, evolve, llm_reader, world
from icml26.constitutional_evolution.batch import grid_scores, prefill_oracle, run_episodes_batched, run_grid
from icml26.constitutional_evolution.evolve import episode_scores, evaluate_generation
from icml26.constitutional_evolution.experiments import talk_world

SMALL = WorldParams(grid=8, n_agents=6, steps=40)
WORLDS = {
    "small": SMALL,
    "book-sized": WorldParams(grid=12, n_agents=10, steps=30),
    "talk world": talk_world(SMALL, PRESETS["smoke"]),                 # patches, vision 1, grid-wide broadcast
    "free talk, dense, brutal": SMALL.replace(broadcast_cost=0.0, food_density=0.4, attack_damage=24.0),
    "immortal oracle world": SMALL.replace(immortal=True),
    "crowded 3x3": WorldParams(grid=3, n_agents=12, steps=25),       # more agents than cells
    "lone agent": WorldParams(grid=5, n_agents=1, steps=30),
    "starving": SMALL.replace(energy0=6.0, steps=30),                # most episodes collapse early
}


def _policies(n: int) -> dict:
    rng = np.random.default_rng(11)
    pols = {name: RulePolicy.shared(rules, n) for name, rules in
            [("designed", DESIGNED), ("designed silent", DESIGNED_SILENT), ("adversarial", ADVERSARIAL),
             ("predator", PREDATOR), ("empty", EMPTY)]}
    pols["hhh"] = RulePolicy.society(hhh_society(n, 3))
    for k in range(3):
        pols[f"random {k}"] = RulePolicy.shared(random_constitution(rng, 1, 8), n)
    return pols


def _assert_same(policies, params, seeds, kernel="auto"):
    got = run_episodes_batched(policies, params, seeds, kernel=kernel)
    assert len(got) == len(policies)
    for pol, s, ep in zip(policies, seeds, got):
        assert ep == run_episode(pol, params, s), (params, s)


@pytest.mark.parametrize("kernel", ["auto", "numpy"])     # the compiled kernels (numba present) and the numpy reference
@pytest.mark.parametrize("name", list(WORLDS))
def test_batched_rule_policies_equal_run_episode_one_by_one(name, kernel):
    params = WORLDS[name]
    pols = list(_policies(params.n_agents).values())
    seeds = (0, 1, 7)
    _assert_same([p for p in pols for _ in seeds], params, [s for _ in pols for s in seeds], kernel)


def test_the_compiled_kernels_run_when_numba_is_installed():
    """numba is installed with the book (`make install`), so the default path is the compiled one."""
    assert batch.numba is not None


@pytest.mark.parametrize("name", ["small", "talk world", "crowded 3x3"])
def test_batched_table_policies_and_mixed_batches_equal_run_episode(name):
    params = WORLDS[name]
    uniform = llm_reader.uniform_table()
    _assert_same([uniform] * 3, params, [0, 4, 9])                           # vectorised TablePolicy path
    mixed = [uniform, RulePolicy.shared(DESIGNED, params.n_agents), uniform]  # one choose() per episode
    _assert_same(mixed, params, [2, 2, 5])


def test_any_policy_object_runs_in_a_batch():
    class Stubborn:
        """Every agent always takes one action (a user policy: neither RulePolicy nor TablePolicy)."""

        def __init__(self, action):
            self.action = action

        def choose(self, X, U, dirs, t):
            return np.full(X.shape[0], self.action), np.full(X.shape[0], -1)

    pols = [Stubborn(a) for a in (0, 8, 9, 5, 6, 7, 11, 12)]
    _assert_same(pols, SMALL, list(range(len(pols))))


def test_the_same_episode_twice_in_a_batch_and_a_batch_of_one():
    pol = RulePolicy.shared(DESIGNED, SMALL.n_agents)
    a, b = run_episodes_batched([pol, pol], SMALL, [3, 3])
    assert a == b == run_episodes_batched([pol], SMALL, [3])[0] == run_episode(pol, SMALL, 3)


def test_run_grid_is_candidates_by_seeds_whatever_the_chunking():
    pols = [RulePolicy.shared(r, SMALL.n_agents) for r in (DESIGNED, ADVERSARIAL, EMPTY)]
    seeds = (5, 6)
    whole = run_grid(pols, SMALL, seeds)
    assert [[ep.seed for ep in row] for row in whole] == [[5, 6]] * 3
    assert run_grid(pols, SMALL, seeds, max_batch=4) == whole
    assert whole[1][0] == run_episode(pols[1], SMALL, 5)


def test_directions_from_float32_draws_are_numpys_integers():
    """The batched world draws directions as floor(4 u), u ~ random(dtype=float32): the same numbers and the
    same stream position as world.action_draws' integers(0, 4, n)."""
    a, b = np.random.default_rng([42, 1]), np.random.default_rng([42, 1])
    for n in (1, 2, 3, 10, 33):
        for _ in range(20):
            a.random((n, 8)), b.random((n, 8))
            assert np.array_equal(a.integers(0, 4, n), (b.random(n, dtype=np.float32) * np.float32(4.0)).astype(np.int64))
            order = np.arange(n)
            b.shuffle(order)
            assert np.array_equal(a.permutation(n), order)


def test_grid_tables_match_the_world_rules():
    t = batch._grid_tables(5, 1)
    c = lambda x, y: y * 5 + x  # noqa: E731
    assert t["towards"][c(0, 0), c(3, 1)] == c(1, 0)              # the larger gap first
    assert t["towards"][c(0, 0), c(1, 3)] == c(0, 1)
    assert t["towards"][c(0, 0), c(2, 2)] == c(1, 0)              # x on ties
    assert t["towards"][c(2, 2), c(2, 2)] == c(2, 2)              # already there
    assert t["random_step"][c(0, 0)].tolist() == [c(0, 1), c(0, 0), c(1, 0), c(0, 0)]  # DIRS, no step into a wall
    assert t["search"][c(0, 0)].tolist()[:5] == [c(0, 0), 25, 25, c(1, 0), c(0, 1)]  # _offsets order, 25: outside
    assert (t["search"][c(0, 0)] == 25).sum() == 5                # outside cells -> the sentinel


def test_oracle_prefill_equals_the_oracle_episode():
    params = SMALL.replace(regrowth=0.0813)                         # a world no other test caches
    prefill_oracle(params, [31, 32, 31])
    assert {s for (q, s) in world._ORACLE_CACHE if q == params} == {31, 32}
    policy, oracle = world.oracle_policy(params)
    for s in (31, 32):
        assert world.oracle_gathering(params, s) == max(1, run_episode(policy, oracle, s).gathered)


def test_generation_scores_equal_episode_scores_genome_by_genome():
    genomes = [DESIGNED, ADVERSARIAL, PREDATOR, random_constitution(np.random.default_rng(3))]
    seeds = (20, 21, 22)
    ref = [episode_scores(g, SMALL, seeds) for g in genomes]
    assert grid_scores(genomes, SMALL, seeds) == ref
    assert evaluate_generation(genomes, SMALL, seeds, chunks=3) == ref


def test_the_search_is_identical_with_batched_and_one_by_one_evaluation(monkeypatch):
    cfg = GPConfig(islands=2, pop=4, generations=3, K=2, migrate_every=2, seed=4)
    batched = run_gp(SMALL, cfg)
    rs_batched = random_search(SMALL, 6, 2, 4)
    monkeypatch.setattr(evolve, "grid_scores",
                        lambda genomes, params, seeds: [episode_scores(g, params, seeds) for g in genomes])
    single = run_gp(SMALL, cfg)
    rs_single = random_search(SMALL, 6, 2, 4)
    assert batched.best == single.best and batched.best_per_seed == single.best_per_seed
    assert np.array_equal(batched.curves_best, single.curves_best) and np.array_equal(batched.curves_mean, single.curves_mean)
    assert np.array_equal(batched.final_fitness, single.final_fitness) and batched.episodes == single.episodes
    assert rs_batched[0] == rs_single[0] and rs_batched[1] == rs_single[1]
    assert np.array_equal(rs_batched[2], rs_single[2])


@pytest.mark.parametrize("call, err, match", [
    (lambda: run_episodes_batched([], SMALL, []), ValueError, "empty batch"),
    (lambda: run_episodes_batched([RulePolicy.shared(DESIGNED, 6)] * 2, SMALL, [1]), ValueError, "one policy per episode"),
    (lambda: run_episodes_batched([RulePolicy.shared(DESIGNED, 4)], SMALL, [1]), ValueError, "for 4 agents"),
    (lambda: run_episodes_batched([llm_reader.uniform_table(), RulePolicy.shared(DESIGNED, 7)], SMALL, [1, 2]),
     ValueError, "for 7 agents"),
    (lambda: run_episodes_batched([object()], SMALL, [1]), TypeError, "no choose"),
    (lambda: run_episodes_batched(RulePolicy.shared(DESIGNED, 6), SMALL, [1]), TypeError, "sequence"),
    (lambda: run_episodes_batched([RulePolicy.shared(DESIGNED, 6)], {"grid": 8}, [1]), TypeError, "WorldParams"),
    (lambda: run_grid([RulePolicy.shared(DESIGNED, 6)], SMALL, []), ValueError, "empty grid"),
    (lambda: run_grid([RulePolicy.shared(DESIGNED, 6)], SMALL, [1], max_batch=0), ValueError, "max_batch"),
    (lambda: run_episodes_batched([RulePolicy.shared(DESIGNED, 6)], SMALL, [1], kernel="cuda"), ValueError, "kernel must be"),
])
def test_bad_batches_are_clear_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_a_rule_never_fires_past_the_longest_constitution():
    """The vectorised interpreter drops rule slots beyond the longest constitution of the batch."""
    always = (Rule((Predicate("energy_above", 0),), "IDLE"),)
    pols = [RulePolicy.shared(always, SMALL.n_agents), RulePolicy.shared(EMPTY, SMALL.n_agents)]
    a, b = run_episodes_batched(pols, SMALL, [1, 1])
    assert a.fire_counts[0] > 0 and sum(a.fire_counts[1:]) == 0
    assert sum(b.fire_counts[:-1]) == 0 and b.fire_counts[-1] > 0
