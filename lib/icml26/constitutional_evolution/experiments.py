"""What the notebook runs: the searches, the fresh-seed comparisons, the SmolLM2 reading, the toy checks."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .baselines import (ADVERSARIAL, DESIGNED, DESIGNED_SILENT, EMPTY, PLANTED_CONFLICT, PREDATOR, hhh_society,
                        random_constitution)
from .batch import prefill_oracle, run_grid
from .constitution import ACTIONS, CONFLICT, Rule
from .evolve import GPConfig, GPResult, evolve, fresh_seeds, generation_seeds, initial_population, random_search
from .metrics import Score, score
from .policies import SITUATIONS, RulePolicy, TablePolicy, situation_index
from .world import Commons, WorldParams, action_draws, run_episode

WORLD_KEYS = ("grid", "n_agents", "steps", "energy0", "f_max", "food_density", "regrowth", "broadcast_cost", "vision")


def world_params(cfg: dict, **over) -> WorldParams:
    """The preset's default world, with ``over`` replacing fields."""
    return WorldParams(**{**{k: cfg[k] for k in WORLD_KEYS}, **over})


def talk_world(params: WorldParams, cfg: dict) -> WorldParams:
    """The world where a message can pay (F5): food only in a few rich patches (``cfg['talk_world']``:
    patches, density inside them, F_max), agents see one cell around them, a broadcast reaches the whole
    grid. Everything else, the broadcast cost included, is the default world's."""
    return params.replace(vision=1, broadcast_radius=params.grid, **cfg["talk_world"])


def gp_config(cfg: dict, seed: int, **over) -> GPConfig:
    """The preset's GP hyper-parameters for one GP seed, with ``over`` replacing fields."""
    keys = ("islands", "pop", "generations", "K", "migrate_every", "migrants", "tournament", "elite", "parsimony",
            "workers")
    return GPConfig(**{**{k: cfg[k] for k in keys}, "seed": int(seed), **over})


def scores_of_rules(rules: Sequence[Rule], params: WorldParams, seeds: Sequence[int]) -> list[Score]:
    """Metrics of a shared constitution, one episode per seed."""
    pol = RulePolicy.shared(tuple(rules), params.n_agents)
    return [score(run_episode(pol, params, s), params) for s in seeds]


def scores_of_hhh(params: WorldParams, seeds: Sequence[int], spread: float = 1.0) -> list[Score]:
    """Metrics of the HHH society (each agent its own reading, `baselines.hhh_society`), one episode per seed."""
    return [score(run_episode(RulePolicy.society(hhh_society(params.n_agents, s, spread)), params, s), params)
            for s in seeds]


def scores_of_table(table: TablePolicy, params: WorldParams, seeds: Sequence[int]) -> list[Score]:
    """Metrics of a society sampling a situation -> action table (the SmolLM2 reading)."""
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
    """Multi-island GP, one island of the same total size, and random search, at equal evaluations."""
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
        "predator": scores_of_rules(PREDATOR, params, seeds),
        "adversarial": scores_of_rules(ADVERSARIAL, params, seeds),
        "empty": scores_of_rules(EMPTY, params, seeds),
        "HHH": scores_of_hhh(params, seeds),
        "HHH precise": scores_of_hhh(params, seeds, spread=0.0),
        "designed": scores_of_rules(DESIGNED, params, seeds),
        "designed silent": scores_of_rules(DESIGNED_SILENT, params, seeds),
        "random": scores_of_random(params, seeds, run.seed),
        "C*": scores_of_rules(run.multi.best, params, seeds),
        "single-island": scores_of_rules(run.single.best, params, seeds),
        "random search": scores_of_rules(run.random_best, params, seeds),
    }


@dataclass
class PlantedControl:
    """K4's positive control on one GP seed (`planted_control`).

    ``start_attempts[m]``: conflict attempts of starting genome m (the planted rule on top) over generation
    0's K shared seeds; ``cost``: per-episode S_ours of each starting genome minus S_ours of the same genome
    without the planted rule on those seeds (members x K, flattened), what selection sees of the rule;
    ``result``: the search from that population; ``scores``: its C* on the GP seed's fresh evaluation seeds."""

    seed: int
    plant: tuple[Rule, ...]
    start_attempts: np.ndarray
    cost: np.ndarray
    result: GPResult
    scores: list[Score]

    @property
    def attempts(self) -> int:
        """K4's measure for this C*: its conflict attempts over its fresh evaluation seeds."""
        return int(sum(x.conflict_attempts for x in self.scores))

    @property
    def planted_kept(self) -> bool:
        """Whether C* still holds the planted rule verbatim (a rule can also be disabled by an edit)."""
        return any(r == p for r in self.result.best for p in self.plant)

    def visibility(self, K: int) -> float:
        """How likely selection on K shared seeds sees that deleting the planted rule raises S_ours
        (`paired_visibility` of the deletion's per-episode gain): near 1, the rule's cost is plain."""
        return paired_visibility(-self.cost, K)


def planted_control(cfg: dict, params: WorldParams, seed: int,
                    plant: Sequence[Rule] = (PLANTED_CONFLICT,)) -> PlantedControl:
    """K4's positive control: the chapter's search (the same world, GP configuration, GP seed and fresh
    seeds) started from a population in which **every** genome carries a costly conflict rule at its top
    (`evolve.initial_population` with ``plant``; the random genomes below it are the normal search's own
    starting draws). The search must delete or disable the rule with its own operators and selection, and
    keep the conflict rules its mutations insert out of C*, for K4's test (no conflict attempt over C*'s
    evaluation episodes) to pass. Also measures the starting genomes' conflict attempts and the planted
    rule's cost, on generation 0's shared seeds (what selection sees first)."""
    plant = tuple(plant)
    if not plant or not all(r.action in CONFLICT for r in plant):
        raise ValueError(f"plant one or more conflict rules ({', '.join(CONFLICT)}), got {plant!r}")
    gcfg = gp_config(cfg, seed)
    start = [g for isl in initial_population(gcfg, plant) for g in isl]
    seeds0 = generation_seeds(seed, 0, gcfg.K)
    n = params.n_agents
    prefill_oracle(params, seeds0)
    eps = run_grid([RulePolicy.shared(g, n) for g in start] + [RulePolicy.shared(g[len(plant):], n) for g in start],
                   params, seeds0)
    with_, without = eps[:len(start)], eps[len(start):]
    S = lambda row: [score(e, params).S for e in row]  # noqa: E731
    cost = np.array([S(a) for a in with_]) - np.array([S(b) for b in without])
    attempts = np.array([sum(e.conflict_attempts for e in row) for row in with_])
    result = evolve(params, gcfg, plant=plant)
    return PlantedControl(seed=int(seed), plant=plant, start_attempts=attempts, cost=cost.ravel(), result=result,
                          scores=scores_of_rules(result.best, params, fresh_seeds(seed, cfg["n_eval"])))


def situation_actions(policy, params: WorldParams, seeds: Sequence[int]) -> list[list[str]]:
    """The actions an exact (rule-reading) society takes in each of the `SITUATIONS` (alive agents)."""
    out: list[list[str]] = [[] for _ in SITUATIONS]
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


def combined_p(pvalues: Sequence[float]) -> float:
    """One test across independent GP runs: Fisher's combination of their one-sided p-values."""
    from scipy import stats

    return float(stats.combine_pvalues(np.clip(pvalues, 1e-300, 1.0), method="fisher").pvalue)


def paired_p(a: Sequence[float], b: Sequence[float]) -> float:
    """One-sided paired t-test p of mean(a - b) > 0 (0 or 1 when every difference is the same)."""
    from scipy import stats

    d = np.subtract(a, b)
    if np.ptp(d) == 0:
        return 0.0 if d.mean() > 0 else 1.0
    return float(stats.ttest_rel(a, b, alternative="greater").pvalue)


def headroom_closed(s_new: float, s_base: float) -> float:
    """Share of the baseline's headroom to the maximum score 1 that the new constitution closes:
    (S_new - S_base) / (1 - S_base). Scale-free where a ratio of bounded scores is not (K3)."""
    if not s_base < 1:
        raise ValueError(f"the baseline score must be below 1, got {s_base}")
    return float((s_new - s_base) / (1.0 - s_base))


def without_actions(rules: Sequence[Rule], actions: Sequence[str]) -> tuple[Rule, ...]:
    """The constitution with every rule whose action is in ``actions`` deleted (an ablation)."""
    unknown = sorted(set(actions) - set(ACTIONS))
    if unknown:
        raise ValueError(f"unknown actions {unknown}")
    return tuple(r for r in rules if r.action not in set(actions))


def with_action_prob(rules: Sequence[Rule], actions: Sequence[str], q: float) -> tuple[Rule, ...]:
    """The constitution with the rules for ``actions`` firing with probability ``q`` (q = 0 deletes them):
    a one-parameter family from the constitution without those rules (q = 0) to the constitution (its own q)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q!r}")
    if q == 0:
        return without_actions(rules, actions)
    return tuple(Rule(r.predicates, r.action, q) if r.action in set(actions) else r for r in rules)


def paired_visibility(diffs: Sequence[float], K: int) -> float:
    """How likely selection on K common seeds sees a paired per-episode difference ``diffs`` (mean d, SD
    s_d): Phi(d sqrt(K) / s_d), the paired form of `evolve.ranking_probability`. 1/2: invisible."""
    from scipy import stats

    d = np.asarray(diffs, dtype=float)
    if d.size < 2 or K < 1:
        raise ValueError("need at least 2 differences and K >= 1")
    sd = d.std(ddof=1)
    if sd == 0:
        return 1.0 if d.mean() > 0 else (0.0 if d.mean() < 0 else 0.5)
    return float(stats.norm.cdf(d.mean() * np.sqrt(K) / sd))


def gain_family(ours: dict[str, tuple[float, float]], paper: tuple[float, float]) -> list[dict]:
    """A magnitude claim ("x % higher") read under each stand-in score: for every ``ours[name] = (S_new,
    S_base)`` the relative gain S_new / S_base - 1 and, for scores in [0, 1], the headroom closed, each
    against the paper's same quantity from ``paper = (S_new, S_base)`` and the chapter's region (at least half
    the paper's). Each row carries its ceiling (the largest value a score bounded by 1 allows over this baseline:
    1 / S_base - 1 for the relative gain, 1 for the headroom) and ``reachable`` (ceiling >= the region's bound):
    a reading that cannot reach the region cannot pass, so it is no evidence either way. The paper's score is not
    public, so when the reachable readings disagree the magnitude is not identifiable from a stand-in score (K3)."""
    p_new, p_base = paper
    paper_gain, paper_head = p_new / p_base - 1.0, headroom_closed(p_new, p_base)
    rows = []
    for name, (s_new, s_base) in ours.items():
        if not (0 < s_base < 1 and np.isfinite(s_new) and s_new <= 1):
            raise ValueError(f"{name}: need scores in [0, 1] with 0 < S_base < 1, got {(s_new, s_base)}")
        g, h = s_new / s_base - 1.0, headroom_closed(s_new, s_base)
        for measure, ours_v, paper_v, ceiling in (("relative gain", g, paper_gain, 1.0 / s_base - 1.0),
                                                  ("headroom closed", h, paper_head, 1.0)):
            rows.append(dict(score=name, measure=measure, ours=ours_v, paper=paper_v, ceiling=ceiling,
                             reachable=bool(ceiling >= paper_v / 2), holds=bool(ours_v >= paper_v / 2)))
    return rows


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


def resampled_ranking(diffs: Sequence[float], K: int, sims: int, seed: int = 0) -> float:
    """How often the mean of K per-episode differences, resampled with replacement from the measured ones,
    is positive: the real-episode counterpart of `evolve.ranking_probability` (Theory, T6)."""
    d = np.asarray(diffs, dtype=float)
    if d.size < 2 or K < 1 or sims < 1:
        raise ValueError("need at least 2 differences, K >= 1 and sims >= 1")
    rng = np.random.default_rng([seed, K])
    return float(np.mean(d[rng.integers(0, d.size, (sims, K))].mean(axis=1) > 0))
