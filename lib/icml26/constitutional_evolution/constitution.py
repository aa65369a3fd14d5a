"""Constitutions: ordered rule lists over a fixed grammar, their interpreter and their English text.

The paper (arXiv 2602.00755, abstract) conditions every LLM agent on one natural-language constitution.
Here a constitution is a genome (research brief §2.2): an ordered list of at most ``MAX_RULES`` = 8 rules

    IF p1 [AND p2] THEN action WITH prob q

read by a **first-match interpreter** (rule 1 takes precedence; a rule whose condition holds fires with
probability q, else the next rule is tried); when no rule fires the agent follows the default policy
(`DEFAULT_POLICY_TEXT`). Every genome renders to English (`render`) and the English parses back exactly
(`parse`), so the evolved constitution is readable and the text is the genome.

Predicates are compiled to (feature, comparison, threshold) triples over the world's per-agent feature
vector (`FEATURES`), so the interpreter evaluates all agents and rules at once with numpy.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAX_RULES = 8

ACTIONS: tuple[str, ...] = ("GATHER", "EAT", "DEPOSIT", "EAT_STORE", "SHARE", "BROADCAST", "STEAL", "ATTACK",
                            "MOVE_RANDOM", "MOVE_TO_FOOD", "MOVE_TO_DEPOT", "MOVE_TO_AGENT", "IDLE")
A = {name: i for i, name in enumerate(ACTIONS)}
SOCIAL = ("SHARE", "BROADCAST")
CONFLICT = ("STEAL", "ATTACK")
MOVES = ("MOVE_RANDOM", "MOVE_TO_FOOD", "MOVE_TO_DEPOT", "MOVE_TO_AGENT")

ACTION_TEXT: dict[str, str] = {
    "GATHER": "gather food", "EAT": "eat the food you carry", "DEPOSIT": "deposit your food at the depot",
    "EAT_STORE": "eat from the depot store", "SHARE": "share food with the weakest neighbour",
    "BROADCAST": "broadcast the location of food", "STEAL": "steal food from a neighbour",
    "ATTACK": "attack the weakest neighbour", "MOVE_RANDOM": "move in a random direction",
    "MOVE_TO_FOOD": "move towards food", "MOVE_TO_DEPOT": "move towards the depot",
    "MOVE_TO_AGENT": "move towards another agent", "IDLE": "wait",
}

# per-agent features the world computes each step (world.Commons.features)
FEATURES: tuple[str, ...] = ("energy", "carry", "food_here", "food_visible", "at_depot", "store",
                             "min_neighbour_energy", "neighbour_carrying", "neighbour_weaker", "got_message",
                             "step_mod_2", "step_mod_3", "step_mod_4", "step_mod_5", "true")
F = {name: i for i, name in enumerate(FEATURES)}
LT, GT, GE = 0, 1, 2

# name: (feature, comparison, threshold range or None for a fixed predicate, English template)
PREDICATES: dict[str, tuple] = {
    "energy_below": ("energy", LT, (1, 60), "your energy is below {v}"),
    "energy_above": ("energy", GT, (0, 60), "your energy is above {v}"),
    "carry_at_least": ("carry", GE, (1, 5), "you carry at least {v} food"),
    "food_here": ("food_here", GE, None, "there is food on your cell"),
    "food_visible": ("food_visible", GE, None, "you can see food nearby"),
    "at_depot": ("at_depot", GE, None, "you are at the depot"),
    "store_below": ("store", LT, (1, 50), "the depot store holds less than {v} food"),
    "store_above": ("store", GT, (0, 50), "the depot store holds more than {v} food"),
    "neighbour_low_energy": ("min_neighbour_energy", LT, (1, 60), "a neighbour's energy is below {v}"),
    "neighbour_carrying": ("neighbour_carrying", GE, None, "a neighbour carries food"),
    "neighbour_weaker": ("neighbour_weaker", GE, None, "a neighbour is weaker than you"),
    "got_message": ("got_message", GE, None, "you have received a food message"),
    "every_m_steps": (None, GE, (2, 5), "the step number is a multiple of {v}"),
}

DEFAULT_HUNGER = 10
DEFAULT_POLICY_TEXT = (f"If no rule applies: eat the food you carry when your energy is below {DEFAULT_HUNGER}, "
                       "otherwise gather food if there is food on your cell, otherwise move in a random direction.")
HEADER = "Follow the first rule whose condition holds; a rule with a lower number takes precedence."


@dataclass(frozen=True, order=True)
class Predicate:
    """One condition of a rule: a grammar name and, for parametrised predicates, an integer value."""

    name: str
    value: int = 0

    def __post_init__(self):
        if self.name not in PREDICATES:
            raise ValueError(f"unknown predicate {self.name!r}; known: {', '.join(PREDICATES)}")
        rng = PREDICATES[self.name][2]
        if rng is None:
            if self.value != 0:
                raise ValueError(f"predicate {self.name!r} takes no value, got {self.value!r}")
        elif not (isinstance(self.value, (int, np.integer)) and rng[0] <= self.value <= rng[1]):
            raise ValueError(f"predicate {self.name!r}: value {self.value!r} outside its range {rng}")

    def compiled(self) -> tuple[int, int, float]:
        """(feature index, comparison, threshold) over `FEATURES`."""
        feature, op, rng, _ = PREDICATES[self.name]
        if self.name == "every_m_steps":
            return F[f"step_mod_{self.value}"], GE, 1.0
        return F[feature], op, float(self.value) if rng is not None else 1.0

    def text(self) -> str:
        return PREDICATES[self.name][3].format(v=self.value)


@dataclass(frozen=True)
class Rule:
    """``IF p1 [AND p2] THEN action WITH prob q`` (q on a 0.05 grid, so the text is exact)."""

    predicates: tuple[Predicate, ...]
    action: str
    prob: float = 1.0

    def __post_init__(self):
        if not 1 <= len(self.predicates) <= 2:
            raise ValueError(f"a rule has 1 or 2 predicates, got {len(self.predicates)}")
        if self.action not in A:
            raise ValueError(f"unknown action {self.action!r}; known: {', '.join(ACTIONS)}")
        q = float(self.prob)
        if not (math.isfinite(q) and 0.0 < q <= 1.0):
            raise ValueError(f"rule probability must be in (0, 1], got {self.prob!r}")
        object.__setattr__(self, "prob", round(round(q * 20) / 20, 2) or 0.05)

    def canonical(self) -> "Rule":
        """AND is commutative and idempotent: sorted, de-duplicated predicates."""
        return Rule(tuple(sorted(set(self.predicates))), self.action, self.prob)

    def text(self) -> str:
        cond = " and ".join(p.text() for p in self.predicates)
        how = "always" if self.prob == 1.0 else f"with probability {self.prob:.2f}"
        return f"If {cond}, {ACTION_TEXT[self.action]} {how}."


def validate(rules: Sequence[Rule]) -> tuple[Rule, ...]:
    """A constitution: a sequence of `Rule`s, at most `MAX_RULES`."""
    rules = tuple(rules)
    if len(rules) > MAX_RULES:
        raise ValueError(f"a constitution has at most {MAX_RULES} rules, got {len(rules)}")
    for i, r in enumerate(rules):
        if not isinstance(r, Rule):
            raise ValueError(f"rule {i + 1} is a {type(r).__name__}, not a Rule")
    return rules


def canonical(rules: Sequence[Rule]) -> tuple[Rule, ...]:
    """Canonical form for de-duplication: canonical rules, no exact copy of an earlier rule with q = 1
    (it can never fire), and nothing after the first rule that always fires (an always-true predicate
    with q = 1 makes every later rule unreachable). Same canonical form => same behaviour."""
    out = []
    for r in validate(rules):
        r = r.canonical()
        if any(o == r and o.prob == 1.0 for o in out):  # an exact copy of an earlier always-rule never fires
            continue
        out.append(r)
        if r.prob == 1.0 and all(p.name == "energy_above" and p.value == 0 for p in r.predicates):
            break
    return tuple(out)


def key(rules: Sequence[Rule]) -> str:
    """A hashable canonical key (the rendered canonical text)."""
    return render(canonical(rules), header=False)


def parsimony(rules: Sequence[Rule]) -> int:
    """Size of a constitution: its number of rules (the fitness subtracts lambda per rule)."""
    return len(validate(rules))


def render(rules: Sequence[Rule], header: bool = True) -> str:
    """English text of a constitution, stating the priority order and the default policy."""
    rules = validate(rules)
    lines = [HEADER] if header else []
    lines += [f"Rule {i + 1}: {r.text()}" for i, r in enumerate(rules)]
    if header:
        lines.append(DEFAULT_POLICY_TEXT)
    return "\n".join(lines)


def _pred_patterns():
    pats = []
    for name, (_, _, rng, template) in PREDICATES.items():
        rx = "^" + re.escape(template).replace(re.escape("{v}"), r"(\d+)") + "$"
        pats.append((name, re.compile(rx), rng is not None))
    return pats


_PRED_RX = _pred_patterns()
_ACTION_BY_TEXT = {t: a for a, t in ACTION_TEXT.items()}
_RULE_RX = re.compile(r"^Rule (\d+): If (.+?), (.+?) (always|with probability (\d\.\d\d))\.$")


def _parse_predicate(text: str, lineno: int) -> Predicate:
    for name, rx, has_value in _PRED_RX:
        m = rx.match(text)
        if m:
            return Predicate(name, int(m.group(1)) if has_value else 0)
    raise ValueError(f"line {lineno}: cannot map the condition {text!r} to a predicate")


def parse(text: str) -> tuple[Rule, ...]:
    """The exact inverse of `render`: English lines back to rules (header and default-policy lines are
    recognised and skipped). An unmappable line is a `ValueError` naming its line number."""
    rules = []
    for lineno, line in enumerate(text.strip().splitlines(), start=1):
        line = line.strip()
        if not line or line == HEADER or line == DEFAULT_POLICY_TEXT:
            continue
        m = _RULE_RX.match(line)
        if not m:
            raise ValueError(f"line {lineno}: {line!r} is not of the form 'Rule k: If <condition>, <action> <how>.'")
        if int(m.group(1)) != len(rules) + 1:
            raise ValueError(f"line {lineno}: rule number {m.group(1)}, expected {len(rules) + 1}")
        preds = tuple(_parse_predicate(p, lineno) for p in m.group(2).split(" and "))
        if m.group(3) not in _ACTION_BY_TEXT:
            raise ValueError(f"line {lineno}: cannot map the action {m.group(3)!r}")
        prob = 1.0 if m.group(4) == "always" else float(m.group(5))
        rules.append(Rule(preds, _ACTION_BY_TEXT[m.group(3)], prob))
    return validate(rules)


# ------------------------------------------------------------------ the vectorised interpreter

@dataclass
class RuleTable:
    """Per-agent compiled rules: arrays (N, MAX_RULES, 2) of feature/comparison/threshold, (N, MAX_RULES)
    of action and probability (0 for the empty slots). Agents may hold different constitutions (the HHH
    stand-in); ``constitution_of[i]`` says which of ``constitutions`` agent i reads."""

    feature: np.ndarray
    op: np.ndarray
    threshold: np.ndarray
    action: np.ndarray
    prob: np.ndarray
    constitutions: tuple
    constitution_of: np.ndarray

    @classmethod
    def build(cls, society: Sequence[Sequence[Rule]]) -> "RuleTable":
        n = len(society)
        if n < 1:
            raise ValueError("a society needs at least one agent")
        feat = np.full((n, MAX_RULES, 2), F["true"], dtype=np.int64)
        op = np.full((n, MAX_RULES, 2), GE, dtype=np.int64)
        th = np.ones((n, MAX_RULES, 2))
        act = np.full((n, MAX_RULES), A["IDLE"], dtype=np.int64)
        prob = np.zeros((n, MAX_RULES))
        distinct: dict = {}
        of = np.zeros(n, dtype=np.int64)
        for i, rules in enumerate(society):
            rules = validate(rules)
            of[i] = distinct.setdefault(rules, len(distinct))
            for r, rule in enumerate(rules):
                for s, p in enumerate(rule.predicates):
                    feat[i, r, s], op[i, r, s], th[i, r, s] = p.compiled()
                act[i, r] = A[rule.action]
                prob[i, r] = rule.prob
        return cls(feat, op, th, act, prob, tuple(distinct), of)

    @classmethod
    def shared(cls, rules: Sequence[Rule], n_agents: int) -> "RuleTable":
        rules = validate(rules)
        return cls.build([rules] * n_agents)


def default_actions(X: np.ndarray, dirs_unused=None) -> np.ndarray:
    """The default policy (`DEFAULT_POLICY_TEXT`): EAT when hungry and carrying, else GATHER on food, else
    a random move."""
    eat = (X[:, F["energy"]] < DEFAULT_HUNGER) & (X[:, F["carry"]] >= 1)
    gather = X[:, F["food_here"]] >= 1
    return np.where(eat, A["EAT"], np.where(gather, A["GATHER"], A["MOVE_RANDOM"]))


def interpret(table: RuleTable, X: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First-match interpretation for all agents at once.

    ``X`` (N, len(FEATURES)) features, ``U`` (N, MAX_RULES) uniforms of the action stream. Returns the
    actions (N,) and the index of the rule that fired (-1: the default policy).
    """
    n = X.shape[0]
    val = X[np.arange(n)[:, None, None], table.feature]
    th = table.threshold
    cond = np.where(table.op == LT, val < th, np.where(table.op == GT, val > th, val >= th)).all(axis=2)
    fire = cond & (U < table.prob)
    has = fire.any(axis=1)
    first = fire.argmax(axis=1)
    acts = np.where(has, table.action[np.arange(n), first], default_actions(X))
    return acts, np.where(has, first, -1)
