"""Policies: how a society turns the per-agent features into actions each step.

* `RulePolicy`: the exact reading of constitutions (`constitution.interpret`), one per agent (all agents
  share one constitution, as in the paper, except for the HHH stand-in's per-agent readings).
* `TablePolicy`: a situation -> action-distribution table (the SmolLM2 reading of `llm_reader`): the agent
  classifies its situation (`SITUATIONS`), samples an action from that row with its first action-stream
  uniform. This is exactly a memoised per-step LLM agent that observes only the situation.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .constitution import ACTIONS, F, Rule, RuleTable, interpret

SITUATION_HUNGER = 15
"""Energy below which the table reader's situation says 'your energy is low'."""


def situation_index(X: np.ndarray) -> np.ndarray:
    """Situation of each agent: 4 * (energy low) + 2 * (carrying food) + (a weaker neighbour is adjacent)."""
    low = X[:, F["energy"]] < SITUATION_HUNGER
    carrying = X[:, F["carry"]] >= 1
    weak = X[:, F["neighbour_weaker"]] >= 1
    return 4 * low.astype(int) + 2 * carrying.astype(int) + weak.astype(int)


SITUATIONS: tuple[tuple[bool, bool, bool], ...] = tuple((bool(k & 4), bool(k & 2), bool(k & 1)) for k in range(8))
"""(energy low, carrying, weaker neighbour) for situation index 0..7."""


def legal_actions(situation: tuple[bool, bool, bool]) -> tuple[str, ...]:
    """Actions that make sense to offer in a situation (no eating/sharing/depositing without food, no
    sharing or attacking without a neighbour)."""
    _, carrying, weak = situation
    out = []
    for a in ACTIONS:
        if a in ("EAT", "DEPOSIT", "SHARE") and not carrying:
            continue
        if a in ("SHARE", "ATTACK") and not weak:
            continue
        out.append(a)
    return tuple(out)


@dataclass
class RulePolicy:
    """First-match interpretation of per-agent constitutions."""

    table: RuleTable

    @classmethod
    def shared(cls, rules: Sequence[Rule], n_agents: int) -> "RulePolicy":
        return cls(RuleTable.shared(rules, n_agents))

    @classmethod
    def society(cls, per_agent: Sequence[Sequence[Rule]]) -> "RulePolicy":
        return cls(RuleTable.build(per_agent))

    @property
    def constitution_of(self) -> np.ndarray:
        return self.table.constitution_of

    def choose(self, X, U, dirs, t):
        return interpret(self.table, X, U)


@dataclass
class TablePolicy:
    """Sample actions from a (8, len(ACTIONS)) situation table; rows sum to 1, zero on illegal actions."""

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
        s = situation_index(X)
        acts = (U[:, :1] >= self._cdf[s]).sum(axis=1)
        return np.minimum(acts, len(ACTIONS) - 1), np.zeros(X.shape[0], dtype=np.int64)

    def entropy(self) -> np.ndarray:
        """Entropy (nats) of each situation's action distribution."""
        P = self.probs
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.where(P > 0, P * np.log(P), 0.0).sum(axis=1)

    def top(self) -> list[str]:
        return [ACTIONS[int(j)] for j in self.probs.argmax(axis=1)]
