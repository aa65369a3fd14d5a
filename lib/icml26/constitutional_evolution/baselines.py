"""The paper's comparison constitutions, as stand-ins (research brief §2.2), and the controls beside them.

* `ADVERSARIAL` (the paper's adversarial constitution, "Adversarial constitutions lead to societal collapse
  (S = 0)"): a *self-interested* society: attack weaker neighbours, steal from carriers, and otherwise eat,
  gather and seek food like anyone else. Whether it collapses is an outcome of the world, not of the text.
* `PREDATOR`: attack, steal, else chase other agents, **never forage**: it gathers nothing, so P = 0 and
  S_ours = 0 by definition. It is the positive control of the collapse test (the effect present by
  construction), never evidence for the paper.
* `EMPTY`: no rules, every agent follows the default policy (eat when hungry, gather, wander): the
  "no constitution" control every constitution should be compared with.
* `hhh_society` (the paper's "be helpful, harmless, honest", S = 0.249, "inconsistent coordination"): vague
  text read through **documented interpretation noise**. Every agent reads the text sensibly (it keeps the
  common sense of the default policy: eat when starving, gather food it stands on) and adds its own concrete
  reading of the two social principles: "helpful" -> share with a neighbour whose energy is below a threshold,
  "honest" -> broadcast food sightings, each with its own probability and in its own order; "harmless" -> no
  conflict rule. ``spread`` in [0, 1] scales the random ranges around their midpoints: ``spread = 0`` is the
  **precise** reading (every agent reads the midpoints), the declared negative control of the inconsistency
  claim K5. The literal text `HHH_TEXT` is what the SmolLM2 reader reads.
* `DESIGNED` (stand-in for the paper's Claude-4.5-Opus design, S = 0.332, written "with explicit
  knowledge of the objective"): written by the chapter's author from the definition of S_ours, before
  any evolution code existed, and not changed after: eat when low, share with low-energy neighbours,
  broadcast sightings, deposit surplus at the depot, gather, never attack. Communication-heavy by design.
* `DESIGNED_SILENT`: `DESIGNED` without its BROADCAST rule, the control that says whether evolution found
  more than "stop talking".
* `PLANTED_CONFLICT`: the adversary's attack rule ("if a neighbour is weaker than you, attack the weakest
  neighbour"), which K4's positive control plants at the top of every genome of the search's starting
  population (`experiments.planted_control`): a conflict rule that fires whenever its condition holds, so
  that its cost to S_ours is large and visible to selection, and the search must remove it itself.
* `random_constitution`: the initial-population distribution of the search.
"""
from __future__ import annotations

import numpy as np

from .constitution import ACTIONS, MAX_RULES, PREDICATES, Predicate, Rule, validate

HHH_TEXT = "Be helpful, harmless, and honest."

EMPTY: tuple[Rule, ...] = ()

PREDATOR: tuple[Rule, ...] = (
    Rule((Predicate("neighbour_weaker"),), "ATTACK"),
    Rule((Predicate("neighbour_carrying"),), "STEAL"),
    Rule((Predicate("energy_above", 0),), "MOVE_TO_AGENT"),
)

ADVERSARIAL: tuple[Rule, ...] = (
    Rule((Predicate("energy_below", 15), Predicate("carry_at_least", 1)), "EAT"),
    Rule((Predicate("neighbour_weaker"),), "ATTACK"),
    Rule((Predicate("neighbour_carrying"),), "STEAL"),
    Rule((Predicate("food_here"),), "GATHER"),
    Rule((Predicate("energy_above", 0),), "MOVE_TO_FOOD"),
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

DESIGNED_SILENT: tuple[Rule, ...] = tuple(r for r in DESIGNED if r.action != "BROADCAST")

PLANTED_CONFLICT: Rule = ADVERSARIAL[1]
"""K4's planted costly conflict rule: IF a neighbour is weaker THEN ATTACK (q = 1), the adversary's own rule."""

HHH_COMMON_SENSE: tuple[Rule, ...] = (
    Rule((Predicate("energy_below", 10), Predicate("carry_at_least", 1)), "EAT"),
    Rule((Predicate("food_here"),), "GATHER"),
)
"""What every HHH reading keeps of the default policy, ahead of its social rules."""


def _noisy(mid: float, half: float, spread: float, u: float) -> float:
    """``mid + half * spread * (2u - 1)``: a uniform draw of half-width ``half * spread`` around ``mid``."""
    return mid + half * spread * (2.0 * u - 1.0)


def hhh_reading(rng: np.random.Generator, spread: float = 1.0) -> tuple[Rule, ...]:
    """One agent's concrete reading of 'be helpful, harmless, and honest' (module docstring).

    `HHH_COMMON_SENSE`, then in random order
    helpful: IF neighbour_low_energy(theta) AND carry >= 1 THEN SHARE (q_h), theta ~ 20 +/- 15 s, q_h ~ 0.5 +/- 0.45 s;
    honest:  IF food_visible AND every m steps THEN BROADCAST (q_b), m ~ 2..5 (3 at s = 0), q_b ~ 0.5 +/- 0.45 s;
    harmless: no STEAL or ATTACK rule. ``s = spread``.
    """
    if not 0.0 <= spread <= 1.0:
        raise ValueError(f"spread must be in [0, 1], got {spread}")
    u = rng.random(5)
    theta = int(round(_noisy(20, 15, spread, u[0])))
    every = int(round(_noisy(3.5, 1.5, spread, u[1]))) if spread > 0 else 3
    helpful = Rule((Predicate("neighbour_low_energy", theta), Predicate("carry_at_least", 1)), "SHARE",
                   _noisy(0.5, 0.45, spread, u[2]))
    honest = Rule((Predicate("food_visible"), Predicate("every_m_steps", min(5, max(2, every)))), "BROADCAST",
                  _noisy(0.5, 0.45, spread, u[3]))
    social = (helpful, honest) if u[4] < 0.5 else (honest, helpful)
    return HHH_COMMON_SENSE + social


def hhh_society(n_agents: int, seed: int, spread: float = 1.0) -> list[tuple[Rule, ...]]:
    """Per-agent HHH readings for one episode (its own stream: ``default_rng([seed, 2])``)."""
    if n_agents < 1:
        raise ValueError(f"n_agents must be >= 1, got {n_agents}")
    rng = np.random.default_rng([int(seed), 2])
    return [hhh_reading(rng, spread) for _ in range(n_agents)]


def random_predicate(rng: np.random.Generator) -> Predicate:
    """A uniform predicate of the grammar, with a uniform value in its range."""
    name = list(PREDICATES)[int(rng.integers(len(PREDICATES)))]
    rng_ = PREDICATES[name][2]
    return Predicate(name, int(rng.integers(rng_[0], rng_[1] + 1)) if rng_ is not None else 0)


def random_rule(rng: np.random.Generator) -> Rule:
    """A uniform rule: one or two uniform predicates, a uniform action, q uniform on the 0.05 grid."""
    preds = (random_predicate(rng),) if rng.random() < 0.5 else (random_predicate(rng), random_predicate(rng))
    return Rule(preds, ACTIONS[int(rng.integers(len(ACTIONS)))], float(rng.integers(1, 21)) / 20)


def random_constitution(rng: np.random.Generator, min_rules: int = 2, max_rules: int = 5) -> tuple[Rule, ...]:
    """A random genome: 2-5 uniform rules (uniform predicates, values, actions, q on the 0.05 grid)."""
    if not 1 <= min_rules <= max_rules <= MAX_RULES:
        raise ValueError(f"need 1 <= min_rules <= max_rules <= {MAX_RULES}")
    return validate(random_rule(rng) for _ in range(int(rng.integers(min_rules, max_rules + 1))))
