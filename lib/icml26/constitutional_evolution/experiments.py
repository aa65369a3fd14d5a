"""What the notebook runs: the searches, the fresh-seed comparisons, the SmolLM2 reading, the toy checks."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .baselines import ADVERSARIAL, DESIGNED, hhh_society, random_constitution
from .constitution import ACTIONS, Rule
from .evolve import GPConfig, GPResult, evolve, fresh_seeds, random_search
from .metrics import Score, score
from .policies import RulePolicy, TablePolicy, situation_index
from .world import Commons, WorldParams, action_draws, run_episode

WORLD_KEYS = ("grid", "n_agents", "steps", "energy0", "f_max", "food_density", "regrowth", "broadcast_cost", "vision")


def world_params(cfg: dict, **over) -> WorldParams:
    return WorldParams(**{**{k: cfg[k] for k in WORLD_KEYS}, **over})


def gp_config(cfg: dict, seed: int, **over) -> GPConfig:
    keys = ("islands", "pop", "generations", "K", "migrate_every", "migrants", "tournament", "elite", "parsimony",
            "workers")
    return GPConfig(**{**{k: cfg[k] for k in keys}, "seed": int(seed), **over})


def scores_of_rules(rules: Sequence[Rule], params: WorldParams, seeds: Sequence[int]) -> list[Score]:
    pol = RulePolicy.shared(tuple(rules), params.n_agents)
    return [score(run_episode(pol, params, s), params) for s in seeds]


def scores_of_hhh(params: WorldParams, seeds: Sequence[int], spread: float = 1.0) -> list[Score]:
    return [score(run_episode(RulePolicy.society(hhh_society(params.n_agents, s, spread)), params, s), params)
            for s in seeds]


def scores_of_table(table: TablePolicy, params: WorldParams, seeds: Sequence[int]) -> list[Score]:
    return [score(run_episode(table, params, s), params) for s in seeds]


def scores_of_random(params: WorldParams, seeds: Sequence[int], gp_seed: int) -> list[Score]:
    """One fresh random genome per evaluation seed (the initial-population distribution)."""
    rng = np.random.default_rng([gp_seed, 79])
    return [scores_of_rules(random_constitution(rng), params, [s])[0] for s in seeds]


@dataclass
class SearchRun:
    """The three searches of one GP seed at equal evaluations."""

    seed: int
    multi: GPResult
    single: GPResult
    random_best: tuple[Rule, ...]
    random_fitness: float


def run_search(cfg: dict, params: WorldParams, seed: int, progress=None) -> SearchRun:
    gcfg = gp_config(cfg, seed)
    multi = evolve(params, gcfg, progress=progress)
    single = evolve(params, gp_config(cfg, seed, islands=1, pop=cfg["islands"] * cfg["pop"]))
    n_cand = cfg["islands"] * cfg["pop"] * cfg["generations"]
    best, fit, _ = random_search(params, n_cand, cfg["K"], seed, workers=cfg["workers"])
    return SearchRun(seed, multi, single, best, fit)


def compare(cfg: dict, params: WorldParams, run: SearchRun) -> dict[str, list[Score]]:
    """Every constitution of the comparison on this GP seed's fresh evaluation seeds."""
    seeds = fresh_seeds(run.seed, cfg["n_eval"])
    return {
        "adversarial": scores_of_rules(ADVERSARIAL, params, seeds),
        "HHH": scores_of_hhh(params, seeds),
        "designed": scores_of_rules(DESIGNED, params, seeds),
        "random": scores_of_random(params, seeds, run.seed),
        "C*": scores_of_rules(run.multi.best, params, seeds),
        "single-island": scores_of_rules(run.single.best, params, seeds),
        "random search": scores_of_rules(run.random_best, params, seeds),
    }


def situation_actions(policy, params: WorldParams, seeds: Sequence[int]) -> list[list[str]]:
    """The actions an exact (rule-reading) society takes in each of the 8 situations (alive agents)."""
    out: list[list[str]] = [[] for _ in range(8)]
    for s in seeds:
        w = Commons(params, s)
        for _ in range(params.steps):
            X = w.features()
            U, dirs, order = action_draws(w.action_rng, params.n_agents)
            acts, _ = policy.choose(X, U, dirs, w.t)
            sit = situation_index(X)
            for i in np.flatnonzero(w.alive):
                out[int(sit[i])].append(ACTIONS[int(acts[i])])
            w.apply(acts, dirs, order)
            if not w.alive.any():
                break
    return out


# ------------------------------------------------------------------ toy checks of the evolutionary machinery

def ring_arrival(islands: int, migrate_every: int, pop: int = 8, generations: int | None = None) -> list[int]:
    """Generation at which a planted best genome first reaches each island under ``deap.tools.migRing``
    (best emigrant replaces the worst, one-directional ring); a neutral landscape otherwise, no variation."""
    from deap import base, creator, tools

    if not hasattr(creator, "ToyFitness"):
        creator.create("ToyFitness", base.Fitness, weights=(1.0,))
        creator.create("ToyInd", list, fitness=creator.ToyFitness)
    generations = generations or migrate_every * islands + 1
    isl = [[creator.ToyInd([0]) for _ in range(pop)] for _ in range(islands)]
    isl[0][0][0] = 1
    arrival = [0] + [-1] * (islands - 1)
    for g in range(generations):
        for pop_ in isl:
            for ind in pop_:
                ind.fitness.values = (float(ind[0]),)
        if (g + 1) % migrate_every == 0:
            tools.migRing(isl, 1, tools.selBest, replacement=tools.selWorst)
        for j, pop_ in enumerate(isl):
            if arrival[j] < 0 and any(ind[0] == 1 for ind in pop_):
                arrival[j] = g + 1
    return arrival


def tournament_best_rate(n: int, k: int, trials: int, seed: int = 0) -> float:
    """How often ``deap.tools.selTournament`` (size k, with replacement) picks the best of n."""
    import random

    from deap import base, creator, tools

    if not hasattr(creator, "ToyFitness"):
        creator.create("ToyFitness", base.Fitness, weights=(1.0,))
        creator.create("ToyInd", list, fitness=creator.ToyFitness)
    pop = [creator.ToyInd([i]) for i in range(n)]
    for ind in pop:
        ind.fitness.values = (float(ind[0]),)
    state = random.getstate()
    random.seed(seed)
    try:
        picks = tools.selTournament(pop, trials, tournsize=k)
    finally:
        random.setstate(state)
    return float(np.mean([p[0] == n - 1 for p in picks]))


def ranking_simulation(delta: float, sigma: float, K: int, sims: int, seed: int = 0) -> float:
    """Monte Carlo: the better of two constitutions (gap delta, per-episode SD sigma) has the higher K-seed mean."""
    rng = np.random.default_rng([seed, K])
    a = rng.normal(delta, sigma, (sims, K)).mean(axis=1)
    b = rng.normal(0.0, sigma, (sims, K)).mean(axis=1)
    return float(np.mean(a > b))
