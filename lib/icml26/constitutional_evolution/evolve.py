"""Multi-island genetic programming over constitutions, on DEAP (research brief §2.2, pseudo-code).

The paper evolves constitution *texts* with an LLM as mutation/crossover operator on several islands with
migration of top performers; the LLM operator is out of reach here (SmolLM2-135M cannot edit rule lists
reliably), so **typed GP operators stand in**:

* mutation (`mutate`): one of threshold/probability jitter, predicate swap, action swap, rule insert,
  rule delete, rule move (a priority change), each with probability 1/6, and a second one with prob 0.3;
* crossover (`crossover`): a variable-length one-point splice of the two rule lists (independent cut
  points), or a rule transplant (one donor rule copied into a random position), 50/50;
* selection: ``deap.tools.selTournament(k=3)`` within an island (it draws from Python's `random`, seeded
  per run and restored after), plus elitism (`GPConfig.elite`);
* islands on a ring: every M generations ``deap.tools.migRing`` sends the best `migrants` of each island
  to the next, replacing its worst (``selWorst``);
* fitness: mean S_ours over K episode seeds drawn per generation and **shared by every candidate of that
  generation** (common random numbers), minus ``parsimony * |C|``; duplicates (canonical form) are
  re-mutated; a generation's candidates x K seeds run as one batched state (`batch.run_episodes_batched`,
  the same episodes as `run_episode` one by one), split into one batch per worker of ``toolbox.map``
  (a 2-process pool when ``workers = 2``).

C* is the best constitution of the final generation (over all islands). Re-evaluate C* on fresh seeds: its
in-evolution fitness is biased upwards (winner's curse).
"""
from __future__ import annotations

import math
import multiprocessing as mp
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .baselines import random_constitution, random_predicate, random_rule
from .batch import grid_scores
from .constitution import ACTIONS, MAX_RULES, PREDICATES, Predicate, Rule, key, parsimony
from .metrics import score
from .policies import RulePolicy
from .world import WorldParams, run_episode


@dataclass(frozen=True)
class GPConfig:
    """Hyper-parameters of one island-GP run (the paper's are not public)."""

    islands: int = 3
    pop: int = 8
    generations: int = 10
    K: int = 3
    migrate_every: int = 3
    migrants: int = 1
    tournament: int = 3
    elite: int = 1
    cx_prob: float = 0.5
    mut_prob: float = 0.9
    parsimony: float = 0.002
    workers: int = 1
    seed: int = 0

    def __post_init__(self):
        if self.islands < 1:
            raise ValueError(f"number of islands I must be >= 1, got {self.islands}")
        if self.pop < 2:
            raise ValueError(f"island population must be >= 2, got {self.pop}")
        if self.tournament < 1 or self.tournament > self.pop:
            raise ValueError(f"tournament size {self.tournament} must be in [1, island size {self.pop}]")
        if self.migrate_every < 1:
            raise ValueError(f"migration interval M must be >= 1, got {self.migrate_every}")
        if self.K < 1:
            raise ValueError(f"seeds per evaluation K must be >= 1, got {self.K}")
        if self.generations < 1:
            raise ValueError(f"generations must be >= 1, got {self.generations}")
        if not 0 <= self.elite < self.pop or not 0 <= self.migrants < self.pop:
            raise ValueError("need 0 <= elite < pop and 0 <= migrants < pop")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.parsimony < 0:
            raise ValueError(f"parsimony must be >= 0, got {self.parsimony}")

    @property
    def evaluations(self) -> int:
        """Episodes of one run (candidates x K per generation, plus the elite-invariant probes)."""
        return self.islands * self.pop * self.generations * self.K


def generation_seeds(gp_seed: int, generation: int, K: int) -> tuple[int, ...]:
    """The K episode seeds shared by every candidate of one generation (disjoint from `fresh_seeds`)."""
    return tuple(10_000 + 100_000 * int(gp_seed) + 16 * int(generation) + k for k in range(K))


def fresh_seeds(gp_seed: int, n: int) -> tuple[int, ...]:
    """Evaluation seeds never used during evolution."""
    if n < 1:
        raise ValueError(f"number of evaluation seeds N must be >= 1, got {n}")
    return tuple(9_000_000 + 1000 * int(gp_seed) + i for i in range(n))


def episode_scores(rules: Sequence[Rule], params: WorldParams, seeds: Sequence[int]) -> list[float]:
    """S_ours of a shared constitution on each seed, one episode at a time (`run_episode`)."""
    pol = RulePolicy.shared(tuple(rules), params.n_agents)
    return [score(run_episode(pol, params, s), params).S for s in seeds]


def _eval_task(task):
    """Scores of several genomes on the same seeds: one batch of candidates x seeds (`batch.grid_scores`)."""
    genomes, params, seeds = task
    return grid_scores(genomes, params, seeds)


def evaluate_generation(genomes: Sequence[Sequence[Rule]], params: WorldParams, seeds: Sequence[int],
                        map_=map, chunks: int = 1) -> list[list[float]]:
    """S_ours of every genome on every seed (``out[c][k]``), the genomes split into ``chunks`` batches
    (one per worker of ``map_``); the same numbers as `episode_scores` genome by genome."""
    genomes = list(genomes)
    k = max(1, min(int(chunks), len(genomes)))
    bounds = [len(genomes) * j // k for j in range(k + 1)]
    parts = [(genomes[bounds[j]:bounds[j + 1]], params, tuple(seeds)) for j in range(k)]
    return [row for part in map_(_eval_task, parts) for row in part]


# ------------------------------------------------------------------ typed operators

def _jitter(rule: Rule, rng: np.random.Generator) -> Rule:
    ranged = [k for k, p in enumerate(rule.predicates) if PREDICATES[p.name][2] is not None]
    if ranged and rng.random() < 0.6:
        k = ranged[int(rng.integers(len(ranged)))]
        p = rule.predicates[k]
        lo, hi = PREDICATES[p.name][2]
        v = int(np.clip(round(p.value + rng.normal(0, max(1.0, (hi - lo) / 6))), lo, hi))
        preds = list(rule.predicates)
        preds[k] = Predicate(p.name, v)
        return Rule(tuple(preds), rule.action, rule.prob)
    q = float(np.clip(rule.prob + rng.normal(0, 0.2), 0.05, 1.0))
    return Rule(rule.predicates, rule.action, q)


def mutate(rules: Sequence[Rule], rng: np.random.Generator) -> tuple[Rule, ...]:
    """One typed mutation (and a second with prob 0.3); the result has 1..MAX_RULES rules."""
    out = list(rules)
    for _ in range(2 if rng.random() < 0.3 else 1):
        op = int(rng.integers(6))
        i = int(rng.integers(len(out))) if out else 0
        if op == 0 and out:                                   # jitter a threshold or a probability
            out[i] = _jitter(out[i], rng)
        elif op == 1 and out:                                 # predicate swap
            preds = list(out[i].predicates)
            preds[int(rng.integers(len(preds)))] = random_predicate(rng)
            out[i] = Rule(tuple(preds), out[i].action, out[i].prob)
        elif op == 2 and out:                                 # action swap
            out[i] = Rule(out[i].predicates, ACTIONS[int(rng.integers(len(ACTIONS)))], out[i].prob)
        elif op == 3 and len(out) < MAX_RULES:                # insert
            out.insert(int(rng.integers(len(out) + 1)), random_rule(rng))
        elif op == 4 and len(out) > 1:                        # delete
            del out[i]
        elif op == 5 and len(out) > 1:                        # move (priority change)
            r = out.pop(i)
            out.insert(int(rng.integers(len(out) + 1)), r)
        elif not out:
            out.append(random_rule(rng))
    return tuple(out)


def crossover(a: Sequence[Rule], b: Sequence[Rule], rng: np.random.Generator) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
    """Splice (independent cut points) or transplant (one donor rule into a random slot), 50/50."""
    a, b = list(a), list(b)
    if rng.random() < 0.5:
        i, j = int(rng.integers(len(a) + 1)), int(rng.integers(len(b) + 1))
        c1, c2 = a[:i] + b[j:], b[:j] + a[i:]
    else:
        c1, c2 = list(a), list(b)
        if b:
            c1.insert(int(rng.integers(len(c1) + 1)), b[int(rng.integers(len(b)))])
        if a:
            c2.insert(int(rng.integers(len(c2) + 1)), a[int(rng.integers(len(a)))])
    fix = lambda c: tuple(c[:MAX_RULES]) if c else (random_rule(rng),)  # noqa: E731
    return fix(c1), fix(c2)


# ------------------------------------------------------------------ the island GP

@dataclass
class GPResult:
    """One run: C*, its in-evolution fitness, the per-island curves and the bookkeeping checks."""

    config: GPConfig
    best: tuple[Rule, ...]
    best_fitness_S: float                      # mean S of C* on the final generation's K seeds
    best_per_seed: tuple[float, ...]
    curves_best: np.ndarray                    # (G, I): best mean S per island and generation
    curves_mean: np.ndarray                    # (G, I)
    migrations: list[int]                      # generations after which a migration happened
    elite_invariant: list[bool]                # per generation >= 1, per island: best_g >= elite_{g-1} on seeds_g
    final_fitness: np.ndarray                  # final generation's mean S of every candidate (I * pop)
    episodes: int = 0


def _creator():
    from deap import base, creator

    if not hasattr(creator, "ConstitutionFitness"):
        creator.create("ConstitutionFitness", base.Fitness, weights=(1.0,))
        creator.create("Constitution", list, fitness=creator.ConstitutionFitness, S=float("nan"))
    return creator


def capped_workers(workers: int) -> int:
    """``workers`` capped at this chapter's share of the cores: `repro book` running chapters side by side sets
    ``ICML26_CPUS`` (icml26.runner), and a fork pool wider than that share only adds busy processes."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    return min(workers, max(1, int(os.environ.get("ICML26_CPUS", workers))))


def _gp_rng(cfg: GPConfig) -> np.random.Generator:
    """The numpy stream of one GP run (initial population, then the operators)."""
    return np.random.default_rng([cfg.seed, 77])


def initial_population(cfg: GPConfig, plant: Sequence[Rule] = (),
                       rng: np.random.Generator | None = None) -> list[list[tuple[Rule, ...]]]:
    """The starting genomes of each island: random genomes (`random_constitution`), each with the ``plant``
    rules put at its top (highest priority) when given; the random draws are the same with or without them.
    Without ``rng``, the run's own stream from its start, so this is the population `evolve` starts from."""
    plant = tuple(plant)
    if not all(isinstance(r, Rule) for r in plant):
        raise TypeError("plant must be a sequence of Rule")
    if len(plant) >= MAX_RULES:
        raise ValueError(f"plant at most {MAX_RULES - 1} rules (a genome holds {MAX_RULES}), got {len(plant)}")
    rng = _gp_rng(cfg) if rng is None else rng
    return [[(plant + random_constitution(rng))[:MAX_RULES] for _ in range(cfg.pop)] for _ in range(cfg.islands)]


def evolve(params: WorldParams, cfg: GPConfig, progress=None, plant: Sequence[Rule] = ()) -> GPResult:
    """Run the island GP (module docstring). ``progress``: an optional callable wrapping the generation loop.

    ``plant``: rules put at the top of every genome of the initial population (the random genomes are the
    same draws with or without them), so that the search starts from a population in which every member
    carries them and must remove them itself (K4's positive control plants a costly conflict rule)."""
    from deap import base, tools

    import random

    creator = _creator()
    rng = _gp_rng(cfg)
    py_state = random.getstate()
    random.seed(1_000_003 * cfg.seed + 77)  # DEAP's selTournament draws from Python's `random`
    toolbox = base.Toolbox()
    workers = capped_workers(cfg.workers)
    pool = mp.get_context("fork").Pool(workers) if workers > 1 else None
    toolbox.register("map", pool.map if pool is not None else map)
    Ind = creator.Constitution

    def new_ind(rules):
        return Ind(rules)

    islands = [[new_ind(g) for g in isl] for isl in initial_population(cfg, plant, rng)]
    G, I = cfg.generations, cfg.islands
    curves_best, curves_mean = np.zeros((G, I)), np.zeros((G, I))
    migrations: list[int] = []
    invariant: list[bool] = []
    prev_best: list = [None] * I
    episodes = 0
    gens = range(G) if progress is None else progress(range(G))
    try:
        for g in gens:
            seeds = generation_seeds(cfg.seed, g, cfg.K)
            # evaluate every distinct genome once on this generation's shared seeds (plus the previous
            # generation's best of each island, for the elite invariant)
            genomes = {key(ind): tuple(ind) for isl in islands for ind in isl}
            for pb in prev_best:
                if pb is not None:
                    genomes.setdefault(key(pb), tuple(pb))
            keys = list(genomes)
            results = evaluate_generation([genomes[k] for k in keys], params, seeds, toolbox.map, workers)
            episodes += len(keys) * cfg.K
            S_of = {k: float(np.mean(r)) for k, r in zip(keys, results)}
            per_seed = dict(zip(keys, results))
            for j, isl in enumerate(islands):
                for ind in isl:
                    ind.S = S_of[key(ind)]
                    ind.fitness.values = (ind.S - cfg.parsimony * parsimony(ind),)
                S = np.array([ind.S for ind in isl])
                curves_best[g, j], curves_mean[g, j] = S.max(), S.mean()
                if prev_best[j] is not None:
                    invariant.append(bool(max(ind.fitness.values[0] for ind in isl) >=
                                          S_of[key(prev_best[j])] - cfg.parsimony * parsimony(prev_best[j]) - 1e-12))
            if g == G - 1:
                break
            if I > 1 and cfg.migrants > 0 and (g + 1) % cfg.migrate_every == 0:
                tools.migRing(islands, cfg.migrants, tools.selBest, replacement=tools.selWorst)
                migrations.append(g)
            for j, isl in enumerate(islands):
                prev_best[j] = tools.selBest(isl, 1)[0]
                elites = [new_ind(tuple(e)) for e in tools.selBest(isl, cfg.elite)]
                parents = [tuple(p) for p in tools.selTournament(isl, cfg.pop - cfg.elite, tournsize=cfg.tournament)]
                kids = []
                for a in range(0, len(parents), 2):
                    p1 = parents[a]
                    p2 = parents[a + 1] if a + 1 < len(parents) else parents[0]
                    c1, c2 = crossover(p1, p2, rng) if rng.random() < cfg.cx_prob else (p1, p2)
                    kids += [c1, c2]
                kids = kids[:len(parents)]
                seen = {key(e) for e in elites}
                new = []
                for c in kids:
                    if rng.random() < cfg.mut_prob:
                        c = mutate(c, rng)
                    tries = 0
                    while key(c) in seen and tries < 5:
                        c = mutate(c, rng)
                        tries += 1
                    seen.add(key(c))
                    new.append(new_ind(c))
                islands[j] = elites + new
    finally:
        random.setstate(py_state)
        if pool is not None:
            pool.close()
            pool.join()
    final = [ind for isl in islands for ind in isl]
    best = max(final, key=lambda ind: ind.fitness.values[0])
    return GPResult(config=cfg, best=tuple(best), best_fitness_S=float(best.S),
                    best_per_seed=tuple(per_seed[key(best)]), curves_best=curves_best, curves_mean=curves_mean,
                    migrations=migrations, elite_invariant=invariant,
                    final_fitness=np.array([ind.S for ind in final]), episodes=episodes)


def random_search(params: WorldParams, n_candidates: int, K: int, seed: int, workers: int = 1):
    """The best of ``n_candidates`` random genomes, each scored on the same K seeds (generation 0's):
    the search baseline at equal evaluations. Returns (best rules, its mean S, all means)."""
    if n_candidates < 1 or K < 1:
        raise ValueError("need n_candidates >= 1 and K >= 1")
    rng = np.random.default_rng([seed, 78])
    cands = [random_constitution(rng) for _ in range(n_candidates)]
    seeds = generation_seeds(seed, 0, K)
    workers = capped_workers(workers)
    if workers > 1:
        with mp.get_context("fork").Pool(workers) as pool:
            res = evaluate_generation(cands, params, seeds, pool.map, workers)
    else:
        res = evaluate_generation(cands, params, seeds)
    means = np.array([np.mean(r) for r in res])
    k = int(np.argmax(means))
    return cands[k], float(means[k]), means


def expected_max_normal(n: int) -> float:
    """E[max of n i.i.d. standard normals] (numerical integration)."""
    from scipy import integrate, stats

    if n < 1:
        raise ValueError("n must be >= 1")
    f = lambda x: x * n * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n - 1)  # noqa: E731
    return float(integrate.quad(f, -12, 12)[0])


def ranking_probability(delta: float, sigma: float, K: int) -> float:
    """P(a constitution better by delta ranks first) with K seeds each: Phi(delta sqrt(K) / (sigma sqrt 2))."""
    from scipy import stats

    if sigma <= 0 or K < 1:
        raise ValueError("need sigma > 0 and K >= 1")
    return float(stats.norm.cdf(delta * math.sqrt(K) / (sigma * math.sqrt(2))))
