"""The majority-vote plateau predicted from first principles: an exact birth-death chain (our derivation).

Near a minimum of O1 (regime a), majority-vote Lion (Thm 5: unbiased sign S_G up, majority vote down,
x <- x - eta u) moves every coordinate by exactly +-eta per step. Node j's vote on coordinate k is +1 with
probability (G + v_jk) / (2G) (the unbiased sign is linear in v, so the sample noise and the curvature
noise average out of this probability: E v_jk = sin(x_k - phi_jk)); votes of different nodes are
independent. So, ignoring the momentum's one-step lag, each coordinate is a birth-death chain on the
lattice x in eta Z with

    P(x -> x - eta) = P(u = +1 | x) = P(S > 0) + P(S = 0) / 2,   S = sum_j (2 B_j - 1),  B_j ~ Bernoulli(p_j(x)),

a Poisson-binomial law. Detailed balance gives its stationary law pi(x_{i+1}) / pi(x_i) =
(1 - P(u = +1 | x_i)) / P(u = +1 | x_{i+1}), and the plateau of the true-gradient l1 norm is
d C E_pi|sin x| with C = mean_j cos(phi_j) (the mean objective's curvature at its minimum: the phases are
symmetric around 0, so the mean gradient of a coordinate is C sin x). Every coordinate has the same
multiset of node phases, hence the same chain.

Its small-eta limit is an Ornstein-Uhlenbeck process: the drift is -eta sqrt(2 n / pi) C x / G and the
step variance eta^2, so Var x = eta G / (2 C sqrt(2 n / pi)) and the plateau is d C sqrt(2 Var x / pi)
~ d sqrt(eta G) n^{-1/4}. With eta = c n^{-1/2} (Thm 5's second schedule) that is n^{-1/2}; at fixed eta
it is n^{-1/4}; with eta = (dT)^{-1/2} it decays like T^{-1/4}. The bound's floor d G n^{-1/2} is an upper
bound on this level, not the level itself.
"""
from __future__ import annotations

import math

import numpy as np

from ._checks import check_positive_int


def vote_plus_probability(x: np.ndarray, phases: np.ndarray, G: float, tie: float = 0.5) -> np.ndarray:
    """P(u = +1 | x) of a majority vote of unbiased signs S_G(sin(x - phi_j)) over the node phases.

    ``tie`` is the probability of +1 on a tie (random tie-break: 1/2; ties need an even node count)."""
    x = np.asarray(x, dtype=float)
    phases = np.asarray(phases, dtype=float)
    if phases.ndim != 1 or phases.size == 0:
        raise ValueError("phases must be a non-empty 1-D array (one phase per node)")
    if not G > 0:
        raise ValueError(f"G must be positive, got {G!r}")
    p = np.clip((G + np.sin(x[:, None] - phases[None, :])) / (2 * G), 0.0, 1.0)
    n = phases.size
    law = np.zeros((x.size, n + 1))
    law[:, 0] = 1.0
    for j in range(n):                                  # Poisson-binomial law of the number of +1 votes
        nxt = law * (1.0 - p[:, j : j + 1])
        nxt[:, 1:] += law[:, :-1] * p[:, j : j + 1]
        law = nxt
    k = np.arange(n + 1)
    return law[:, 2 * k > n].sum(1) + tie * law[:, 2 * k == n].sum(1)


def stationary_law(phases: np.ndarray, G: float, eta: float, width: float = math.pi) -> tuple[np.ndarray, np.ndarray]:
    """The chain's stationary law on the lattice eta * {-K..K}, K = ceil(width / eta): (x, pi)."""
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be a finite positive number, got {eta!r}")
    K = int(math.ceil(width / eta))
    x = eta * np.arange(-K, K + 1)
    plus = np.clip(vote_plus_probability(x, phases, G), 1e-300, 1.0)
    minus = np.clip(1.0 - vote_plus_probability(x, phases, G), 1e-300, 1.0)
    log_pi = np.concatenate([[0.0], np.cumsum(np.log(minus[:-1]) - np.log(plus[1:]))])
    log_pi -= log_pi.max()
    pi = np.exp(log_pi)
    return x, pi / pi.sum()


def predicted_plateau(phases: np.ndarray, G: float, eta: float, d: int) -> float:
    """The plateau d C E_pi|sin x| of the l1 true-gradient norm (module docstring)."""
    check_positive_int(d, "d")
    x, pi = stationary_law(phases, G, eta)
    C = float(np.cos(np.asarray(phases, dtype=float)).mean())
    return float(d * C * (pi * np.abs(np.sin(x))).sum())


def ou_plateau(n: int, G: float, eta: float, d: int, C: float = 1.0) -> float:
    """The small-eta (Ornstein-Uhlenbeck) limit d C sqrt(2 Var / pi), Var = eta G / (2 C sqrt(2 n / pi))."""
    var = eta * G / (2.0 * C * math.sqrt(2.0 * n / math.pi))
    return d * C * math.sqrt(2.0 * var / math.pi)
