"""Objective O1 of the brief (§5): a periodic, non-convex, non-coercive sum with heterogeneous nodes.

    f_j(x) = sum_k (1 - cos(x_k - phi_jk)),   grad f_j(x; xi) = sin(x - phi_j) + (sigma / sqrt(d)) xi,

with Rademacher xi in {-1, +1}^d (so ||grad f_j(x; xi)||_inf <= G = 1 + sigma/sqrt(d), assumption bg1,
and E||noise||_2^2 = sigma^2, assumption A3). The same xi at x_t and x_{t-1} cancels exactly in the
STORM difference (average smoothness A2 with L = 1). f = (1/n) sum_j f_j; with phases symmetric around
0 (per coordinate), x = 0 is a stationary point of f ("regime (a)" start), and x = 1 a descent start
("regime (b)").
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ._checks import check_positive_int


def node_phases(n_nodes: int, d: int, heterogeneity: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """Phases phi (n, d): per coordinate, a random permutation of heterogeneity * linspace(-1, 1, n).

    The set of phases of each coordinate is symmetric around 0, so mean_j sin(phi_jk) = 0 and the mean
    objective's gradient is c_k sin(x_k) with c_k = mean_j cos(phi_jk) > 0 (for heterogeneity < pi/2).
    """
    check_positive_int(n_nodes, "n_nodes")
    check_positive_int(d, "d")
    if not (0.0 <= heterogeneity < math.pi / 2):
        raise ValueError(f"heterogeneity must lie in [0, pi/2), got {heterogeneity!r}")
    levels = heterogeneity * torch.linspace(-1.0, 1.0, n_nodes, dtype=torch.float64) if n_nodes > 1 \
        else torch.zeros(1, dtype=torch.float64)
    order = torch.argsort(torch.rand(d, n_nodes, generator=generator), dim=1)  # one permutation per coordinate
    return levels[order].T.contiguous()


@dataclass(frozen=True)
class PeriodicObjective:
    """O1 with node phases ``phases`` (n, d) and noise level ``sigma`` (l2 std of the gradient noise)."""

    phases: torch.Tensor
    sigma: float = 1.0

    def __post_init__(self) -> None:
        if self.phases.ndim != 2:
            raise ValueError(f"phases must have shape (n, d), got {tuple(self.phases.shape)}")
        if not (math.isfinite(self.sigma) and self.sigma >= 0):
            raise ValueError(f"sigma must be finite and >= 0, got {self.sigma!r}")
        if not bool(torch.isfinite(self.phases).all()):
            raise ValueError("phases contain NaN or inf")

    @classmethod
    def make(cls, d: int, n_nodes: int = 1, sigma: float = 1.0, heterogeneity: float = 0.5,
             seed: int = 0) -> "PeriodicObjective":
        """O1 with ``n_nodes`` heterogeneous nodes; phases drawn from ``seed`` (all zero for one node)."""
        g = torch.Generator().manual_seed(seed)
        return cls(node_phases(n_nodes, d, heterogeneity if n_nodes > 1 else 0.0, g), sigma)

    @property
    def n_nodes(self) -> int:
        return self.phases.shape[0]

    @property
    def d(self) -> int:
        return self.phases.shape[1]

    @property
    def noise_scale(self) -> float:
        return self.sigma / math.sqrt(self.d)

    @property
    def G(self) -> float:
        """Bound on ||grad f_j(x; xi)||_inf (assumption bg1): 1 + sigma / sqrt(d)."""
        return 1.0 + self.noise_scale

    def node(self, j: int) -> "PeriodicObjective":
        """The objective of node j alone (what worker j of the multi-process run knows)."""
        return PeriodicObjective(self.phases[j : j + 1], self.sigma)

    def node_gradients(self, x: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Stochastic gradients of every node: x (B, d), noise (B, n, d) in {-1, 0, +1} -> (B, n, d).

        ``noise`` may also be a minibatch mean of Rademacher draws (the B0 initial batch)."""
        return torch.sin(x.unsqueeze(1) - self.phases) + self.noise_scale * noise

    def true_gradient(self, x: torch.Tensor) -> torch.Tensor:
        """grad f(x) = mean_j sin(x - phi_j) = sin(x) mean_j cos(phi_j) - cos(x) mean_j sin(phi_j)."""
        c = torch.cos(self.phases).mean(0)
        s = torch.sin(self.phases).mean(0)
        return torch.sin(x) * c - torch.cos(x) * s

    def value(self, x: torch.Tensor) -> torch.Tensor:
        """f(x) = mean_j sum_k (1 - cos(x_k - phi_jk)), shape (B,)."""
        return (1.0 - torch.cos(x.unsqueeze(1) - self.phases)).sum(-1).mean(-1)
