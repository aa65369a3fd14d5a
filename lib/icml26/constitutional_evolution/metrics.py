"""Episode metrics and our Societal Stability Score S_ours (research brief §2.2; the paper's formula is not
public, so S_ours is **ours**: compare orderings and ratios with the paper, never raw values).

Per episode, with fixed denominators N * T (so that mass death cannot inflate a share):

* P = gathered / P_ref, clipped to [0, 1]; P_ref = `world.oracle_gathering` (all-gather, no-conflict,
  immortal society in the same seed);
* sigma = N_alive(T) / N;
* c = conflict *attempts* (STEAL, ATTACK, successful or not) / (N T); c_agents = share of agents involved
  in >= 1 conflict;
* social share = (SHARE + BROADCAST) / (N T);

    S_ours = (P * sigma * (1 - c)) ** (1/3)                                   (geometric form)
    S_lin  = 1[sigma > 0] * (0.4 P + 0.4 sigma + 0.2 (1 - c))                 (linear form)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .world import Episode, WorldParams, oracle_gathering


def s_ours(P: float, sigma: float, c: float) -> float:
    """S_ours = (P sigma (1 - c))^(1/3); inputs in [0, 1]."""
    for name, v in (("P", P), ("sigma", sigma), ("c", c)):
        if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ValueError(f"{name} must be a number in [0, 1], got {v!r}")
    return float((P * sigma * (1.0 - c)) ** (1.0 / 3.0))


def s_linear(P: float, sigma: float, c: float) -> float:
    """S_lin = 1[sigma > 0] (0.4 P + 0.4 sigma + 0.2 (1 - c))."""
    s_ours(P, sigma, c)  # validation
    return float((sigma > 0) * (0.4 * P + 0.4 * sigma + 0.2 * (1.0 - c)))


@dataclass(frozen=True)
class Score:
    """The metrics of one episode."""

    seed: int
    P: float
    sigma: float
    c: float
    c_agents: float
    social: float
    S: float
    S_lin: float
    conflict_attempts: int
    gathered: int
    gathered_ref: int
    action_share: tuple[float, ...]


def score(ep: Episode, params: WorldParams) -> Score:
    """Metrics of an `Episode` (the oracle's gathering in the same seed is computed once and cached)."""
    ref = oracle_gathering(params, ep.seed)
    denom = float(ep.n_agents * ep.steps)
    P = min(1.0, ep.gathered / ref)
    sigma = ep.alive_end / ep.n_agents
    c = ep.conflict_attempts / denom
    return Score(seed=ep.seed, P=P, sigma=sigma, c=c, c_agents=ep.conflict_agents / ep.n_agents,
                 social=ep.social_actions / denom, S=s_ours(P, sigma, c), S_lin=s_linear(P, sigma, c),
                 conflict_attempts=ep.conflict_attempts, gathered=ep.gathered, gathered_ref=ref,
                 action_share=tuple(k / denom for k in ep.action_counts))
