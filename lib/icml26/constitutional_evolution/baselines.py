"""The paper's comparison constitutions, as stand-ins (research brief §2.2).

* `ADVERSARIAL` (the paper's adversarial constitution, S = 0 "societal collapse"): attack weaker
  neighbours, steal from carriers, hunt other agents.
* `hhh_society` (the paper's "be helpful, harmless, and honest", S = 0.249, "inconsistent coordination"):
  vague text read through **documented interpretation noise**: each agent independently draws, once per
  episode, its own concrete reading: "helpful" -> a SHARE rule with a random threshold and probability,
  "honest" -> a BROADCAST rule with a random probability, "harmless" -> no conflict rule; the order of
  the two rules is random too. ``spread`` in [0, 1] scales the ranges around their midpoints (0: every
  agent reads the midpoint), for the sensitivity check the issue asks for. The literal text
  `HHH_TEXT` is what the SmolLM2 reader reads.
* `DESIGNED` (stand-in for the paper's Claude-4.5-Opus design, S = 0.332, written "with explicit
  knowledge of the objective"): written by the chapter's author from the definition of S_ours, **before
  any evolution code existed, and not changed after**: eat when low, share with low-energy neighbours,
  broadcast sightings, deposit surplus at the depot, gather, never attack. Communication-heavy by design.
* `random_constitution`: the initial-population distribution of the search.
"""
from __future__ import annotations

import numpy as np

from .constitution import ACTIONS, MAX_RULES, PREDICATES, Predicate, Rule, validate

HHH_TEXT = "Be helpful, harmless, and honest."

ADVERSARIAL: tuple[Rule, ...] = (
    Rule((Predicate("neighbour_weaker"),), "ATTACK"),
    Rule((Predicate("neighbour_carrying"),), "STEAL"),
    Rule((Predicate("energy_above", 0),), "MOVE_TO_AGENT"),
)

DESIGNED: tuple[Rule, ...] = (
    Rule((Predicate("energy_below", 15), Predicate("carry_at_least", 1)), "EAT"),
    Rule((Predicate("energy_below", 15), Predicate("at_depot")), "EAT_STORE"),
    Rule((Predicate("neighbour_low_energy", 15), Predicate("carry_at_least", 1)), "SHARE"),
    Rule((Predicate("food_visible"), Predicate("every_m_steps", 3)), "BROADCAST"),
    Rule((Predicate("carry_at_least", 4), Predicate("at_depot")), "DEPOSIT"),
    Rule((Predicate("carry_at_least", 4),), "MOVE_TO_DEPOT"),
    Rule((Predicate("food_here"),), "GATHER"),
    Rule((Predicate("energy_above", 0),), "MOVE_TO_FOOD"),
)


def hhh_reading(rng: np.random.Generator, spread: float = 1.0) -> tuple[Rule, ...]:
    """One agent's concrete reading of 'be helpful, harmless, and honest' (see the module docstring).

    helpful: IF neighbour_low_energy(theta) AND carry >= 1 THEN SHARE (q_h), theta ~ 35 +/- 25 s, q_h ~ 0.55 +/- 0.45 s;
    honest:  IF food_visible THEN BROADCAST (q_b), q_b ~ 0.5 +/- 0.45 s; harmless: no STEAL/ATTACK rule.
    Random order of the two rules. ``s = spread``.
    """
    if not 0.0 <= spread <= 1.0:
        raise ValueError(f"spread must be in [0, 1], got {spread}")
    u = rng.random(4)
    theta = int(round(35 + 25 * spread * (2 * u[0] - 1)))
    q_h = 0.55 + 0.45 * spread * (2 * u[1] - 1)
    q_b = 0.5 + 0.45 * spread * (2 * u[2] - 1)
    helpful = Rule((Predicate("neighbour_low_energy", max(1, min(60, theta))), Predicate("carry_at_least", 1)),
                   "SHARE", max(0.05, q_h))
    honest = Rule((Predicate("food_visible"),), "BROADCAST", max(0.05, q_b))
    return (helpful, honest) if u[3] < 0.5 else (honest, helpful)


def hhh_society(n_agents: int, seed: int, spread: float = 1.0) -> list[tuple[Rule, ...]]:
    """Per-agent HHH readings for one episode (its own stream: ``default_rng([seed, 2])``)."""
    if n_agents < 1:
        raise ValueError(f"n_agents must be >= 1, got {n_agents}")
    rng = np.random.default_rng([int(seed), 2])
    return [hhh_reading(rng, spread) for _ in range(n_agents)]


def random_predicate(rng: np.random.Generator) -> Predicate:
    name = list(PREDICATES)[int(rng.integers(len(PREDICATES)))]
    rng_ = PREDICATES[name][2]
    return Predicate(name, int(rng.integers(rng_[0], rng_[1] + 1)) if rng_ is not None else 0)


def random_rule(rng: np.random.Generator) -> Rule:
    preds = (random_predicate(rng),) if rng.random() < 0.5 else (random_predicate(rng), random_predicate(rng))
    return Rule(preds, ACTIONS[int(rng.integers(len(ACTIONS)))], float(rng.integers(1, 21)) / 20)


def random_constitution(rng: np.random.Generator, min_rules: int = 2, max_rules: int = 5) -> tuple[Rule, ...]:
    """A random genome: 2-5 uniform rules (uniform predicates, values, actions, q on the 0.05 grid)."""
    if not 1 <= min_rules <= max_rules <= MAX_RULES:
        raise ValueError(f"need 1 <= min_rules <= max_rules <= {MAX_RULES}")
    return validate(random_rule(rng) for _ in range(int(rng.integers(min_rules, max_rules + 1))))
