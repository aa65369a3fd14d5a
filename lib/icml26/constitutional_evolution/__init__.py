"""Evolving interpretable constitutions for multi-agent coordination (Kumar et al., ICML 2026; arXiv 2602.00755).

Model library of the ``constitutional-evolution`` chapter (research brief
``papers/constitutional-evolution.md``; section numbers below are the brief's, the paper's text beyond
its abstract is not public):

* `world`: `WorldParams`, the numpy core `Commons`, `run_episode` -> `Episode`, `oracle_gathering`, and
  `CommonsWorld`, a `pettingzoo.ParallelEnv`;
* `batch`: `run_episodes_batched` (many episodes as one vectorised state, the same `Episode`s as
  `run_episode`) and `run_grid` (candidates x seeds), which the search uses for each generation;
* `constitution`: the rule grammar (`Predicate`, `Rule`, `ACTIONS`, `PREDICATES`), the first-match
  interpreter (`RuleTable`, `interpret`), `canonical`, `render` / `parse` (exact English round trip);
* `policies`: `RulePolicy` (exact reading), `TablePolicy` (a situation -> action table), `SITUATIONS`;
* `metrics`: `s_ours`, `s_linear`, `score` -> `Score`;
* `baselines`: `ADVERSARIAL` (self-interested, foraging), `PREDATOR` (never forages), `EMPTY`, `DESIGNED`,
  `DESIGNED_SILENT`, `hhh_society` (a sensible reading with interpretation noise), `HHH_TEXT`,
  `random_constitution`;
* `evolve`: `GPConfig`, `evolve` (island GP on DEAP) -> `GPResult`, `random_search`, `mutate`,
  `crossover`, `generation_seeds`, `fresh_seeds`, `expected_max_normal`, `ranking_probability`;
* `llm_reader`: SmolLM2-135M reads the English text -> `TablePolicy` (`read_table`);
* `mesa_model`: the same world as a `mesa` model (the peer, for the equivalence test and the benchmark);
* `experiments`: what the notebook runs; `PRESETS`: sizes per scale.
"""
from __future__ import annotations

from . import baselines, batch, constitution, evolve, experiments, metrics, policies, world
from .batch import run_episodes_batched, run_grid
from .baselines import ADVERSARIAL, DESIGNED, DESIGNED_SILENT, EMPTY, HHH_TEXT, PREDATOR, hhh_society, random_constitution
from .constitution import ACTIONS, MAX_RULES, PREDICATES, Predicate, Rule, RuleTable, canonical, interpret, parse, render
from .evolve import GPConfig, GPResult, crossover, evolve as run_gp, fresh_seeds, generation_seeds, mutate, random_search
from .metrics import Score, s_linear, s_ours, score
from .policies import SITUATIONS, RulePolicy, TablePolicy, legal_actions, situation_index
from .presets import PRESETS
from .world import Commons, CommonsWorld, Episode, WorldParams, oracle_gathering, run_episode

__all__ = [
    "ACTIONS", "ADVERSARIAL", "Commons", "CommonsWorld", "DESIGNED", "DESIGNED_SILENT", "EMPTY", "Episode", "GPConfig", "GPResult", "HHH_TEXT",
    "MAX_RULES", "PREDATOR", "PREDICATES", "PRESETS", "Predicate", "Rule", "RulePolicy", "RuleTable", "SITUATIONS", "Score",
    "TablePolicy", "WorldParams", "baselines", "canonical", "constitution", "crossover", "evolve", "experiments",
    "fresh_seeds", "generation_seeds", "hhh_society", "interpret", "legal_actions", "metrics", "mutate",
    "oracle_gathering", "parse", "policies", "random_constitution", "random_search", "render", "run_episode",
    "run_episodes_batched", "run_grid", "run_gp", "batch", "s_linear", "s_ours", "score", "situation_index", "world",
]
