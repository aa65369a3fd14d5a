"""Policies: how a society turns the per-agent features into actions each step.

* `RulePolicy`: the exact reading of constitutions (`constitution.interpret`), one per agent (all agents
  share one constitution, as in the paper, except for the HHH stand-in's per-agent readings).
* `TablePolicy`: a situation -> action-distribution table (the SmolLM2 reading of `llm_reader`): the agent
  classifies its situation (`SITUATION_FLAGS`, 6 yes/no facts, 64 `SITUATIONS`) and samples an action from
  that row with its first action-stream uniform: a memoised per-step LLM agent that observes these six
  facts (and nothing finer, e.g. not the exact energy a threshold compares).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .constitution import ACTIONS, F, Rule, RuleTable, interpret

SITUATION_HUNGER = 15
"""Energy below which the table reader's situation says 'your energy is low'."""

SITUATION_FLAGS: tuple[str, ...] = ("energy_low", "carrying", "neighbour_weaker", "food_here", "food_visible",
                                    "at_depot")
"""The facts of a situation, most significant bit first."""


def situation_index(X: np.ndarray) -> np.ndarray:
    """Situation of each agent: the `SITUATION_FLAGS` of its feature row as a 6-bit number."""
    bits = (X[:, F["energy"]] < SITUATION_HUNGER, X[:, F["carry"]] >= 1, X[:, F["neighbour_weaker"]] >= 1,
            X[:, F["food_here"]] >= 1, X[:, F["food_visible"]] >= 1, X[:, F["at_depot"]] >= 1)
    out = np.zeros(X.shape[0], dtype=np.int64)
    for b in bits:
        out = 2 * out + b.astype(np.int64)
    return out


SITUATIONS: tuple[tuple[bool, ...], ...] = tuple(
    tuple(bool(k >> (len(SITUATION_FLAGS) - 1 - j) & 1) for j in range(len(SITUATION_FLAGS)))
    for k in range(2 ** len(SITUATION_FLAGS)))
"""The `SITUATION_FLAGS` values of situation index 0..63."""


def legal_actions(situation: Sequence[bool]) -> tuple[str, ...]:
    """Actions that can do something in a situation: no eating, sharing or depositing without food, no
    sharing or attacking without a neighbour, no gathering without food on the cell, no depot actions away
    from the depot."""
    facts = dict(zip(SITUATION_FLAGS, situation))
    needs = {"EAT": "carrying", "DEPOSIT": "carrying", "SHARE": "carrying", "GATHER": "food_here",
             "EAT_STORE": "at_depot"}
    out = []
    for a in ACTIONS:
        if a in needs and not facts[needs[a]]:
            continue
        if a in ("SHARE", "ATTACK") and not facts["neighbour_weaker"]:
            continue
        if a == "DEPOSIT" and not facts["at_depot"]:
            continue
        out.append(a)
    return tuple(out)


@dataclass
class RulePolicy:
    """First-match interpretation of per-agent constitutions."""

    table: RuleTable

    @classmethod
    def shared(cls, rules: Sequence[Rule], n_agents: int) -> "RulePolicy":
        """Every agent reads the same constitution."""
        return cls(RuleTable.shared(rules, n_agents))

    @classmethod
    def society(cls, per_agent: Sequence[Sequence[Rule]]) -> "RulePolicy":
        """Agent i reads ``per_agent[i]``."""
        return cls(RuleTable.build(per_agent))

    @property
    def constitution_of(self) -> np.ndarray:
        """Which distinct constitution each agent reads (fire counts follow constitution 0)."""
        return self.table.constitution_of

    def choose(self, X, U, dirs, t):
        """Actions and fired rule indices of all agents (`constitution.interpret`)."""
        return interpret(self.table, X, U)


@dataclass
class TablePolicy:
    """Sample actions from a (len(SITUATIONS), len(ACTIONS)) table; rows sum to 1, zero on illegal actions."""

    probs: np.ndarray

    def __post_init__(self):
        P = np.asarray(self.probs, dtype=float)
        if P.shape != (len(SITUATIONS), len(ACTIONS)):
            raise ValueError(f"action table must have shape {(len(SITUATIONS), len(ACTIONS))}, got {P.shape}")
        if not np.all(np.isfinite(P)) or (P < 0).any():
            raise ValueError("action table entries must be finite and non-negative")
        sums = P.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-6)
        if bad.size:
            raise ValueError(f"action table rows {bad.tolist()} do not sum to 1 (sums {sums[bad].round(4).tolist()})")
        for k, sit in enumerate(SITUATIONS):
            legal = set(legal_actions(sit))
            illegal = [ACTIONS[j] for j in np.flatnonzero(P[k] > 0) if ACTIONS[j] not in legal]
            if illegal:
                raise ValueError(f"action table row {k} {sit} gives probability to illegal actions {illegal}")
        self.probs = P
        self._cdf = np.cumsum(P, axis=1)
        self._cdf[:, -1] = 1.0 + 1e-12

    def choose(self, X, U, dirs, t):
        """Each agent samples its situation's row with its first uniform; no rule fires (index 0)."""
        s = situation_index(X)
        acts = (U[:, :1] >= self._cdf[s]).sum(axis=1)
        return np.minimum(acts, len(ACTIONS) - 1), np.zeros(X.shape[0], dtype=np.int64)

    def entropy(self) -> np.ndarray:
        """Entropy (nats) of each situation's action distribution."""
        P = self.probs
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.where(P > 0, P * np.log(P), 0.0).sum(axis=1)

    def top(self) -> list[str]:
        """The most likely action of each situation."""
        return [ACTIONS[int(j)] for j in self.probs.argmax(axis=1)]
