"""Objective O1 of the brief (§5): a periodic, non-convex, non-coercive sum with heterogeneous nodes,
its rotated, anisotropic (non-separable) variant, and its variant with sample-dependent curvature.

Separable O1 (``rotation=None``)::

    f_j(x) = sum_k a_k (1 - cos(x_k - phi_jk)),   grad f_j(x; xi) = a * sin(x - phi_j) + (sigma / sqrt(d)) xi

Rotated O1 (``rotation=Q``, an orthogonal d x d matrix)::

    f_j(x) = sum_k a_k (1 - cos((Q x)_k - phi_jk)),   grad f_j(x; xi) = Q^T [a * sin(Q x - phi_j)] + (sigma / sqrt(d)) xi

with curvatures a_k in (0, 1] (all 1 by default, so L = 1) and Rademacher xi in {-1, +1}^d. Then
E||noise||_2^2 = sigma^2 (assumption A3), the same xi at x_t and x_{t-1} cancels exactly in the STORM
difference (average smoothness A2 with L = max a_k), and ||grad f_j(x; xi)||_inf <= G (assumption bg1,
:attr:`PeriodicObjective.G`).

Sample-dependent curvature (``curvature_noise = s`` in [0, 1)): each sample also draws a Rademacher
zeta in {-1, +1}^d and scales the curvature of coordinate k by (1 + s zeta_k)::

    f_j(x; xi, zeta) = sum_k a_k (1 + s zeta_k) (1 - cos(x_k - phi_jk)) + (sigma / sqrt(d)) <xi, x>

so the mean objective is unchanged, the gradient noise gains a part proportional to the gradient, and
the STORM difference grad f(x; zeta) - grad f(y; zeta) keeps a random part s zeta (grad F(x) - grad F(y)):
average smoothness (A2) holds with L_avg = max_k a_k sqrt(1 + s^2) (:attr:`PeriodicObjective.L_avg`)
and is no longer met with equality by the mean objective alone. With s = 0 (the default) no zeta is
drawn and the objective is the additive-noise O1, STORM's best case. f = (1/n) sum_j f_j; with phases symmetric around 0 (per coordinate),
x = 0 is a stationary point and the global minimum of f. A rotation alone keeps the Hessian at the
minimum isotropic (Q^T I Q = I), so near x = 0 the rotated isotropic problem is still, to second order,
a separable one; the anisotropic curvatures a_k are what make the rotated problem genuinely non-separable
for a coordinate-wise sign method.

The simulator evaluates gradients at ``x - center`` (a per-row shift), which moves the minimum to
``center * 1`` without changing the objective: that is how the "descent" regime starts at x_1 = 0
(as the theorems' ||x_1||_inf <= eta requires) at a distance from the minimum.
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


def random_rotation(d: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A Haar-random orthogonal d x d matrix (QR of a Gaussian matrix with the sign fix), float64."""
    check_positive_int(d, "d")
    q, r = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r)).unsqueeze(0)


@dataclass(frozen=True)
class PeriodicObjective:
    """O1 with node phases ``phases`` (n, d), noise level ``sigma`` (l2 std of the gradient noise), and
    optionally a rotation Q (d, d) and curvatures a (d,) in (0, 1]."""

    phases: torch.Tensor
    sigma: float = 1.0
    rotation: torch.Tensor | None = None
    curvature: torch.Tensor | None = None
    curvature_noise: float = 0.0

    def __post_init__(self) -> None:
        if self.phases.ndim != 2:
            raise ValueError(f"phases must have shape (n, d), got {tuple(self.phases.shape)}")
        if not (math.isfinite(self.sigma) and self.sigma >= 0):
            raise ValueError(f"sigma must be finite and >= 0, got {self.sigma!r}")
        if not (math.isfinite(self.curvature_noise) and 0.0 <= self.curvature_noise < 1.0):
            raise ValueError(f"curvature_noise must lie in [0, 1), got {self.curvature_noise!r}")
        if not bool(torch.isfinite(self.phases).all()):
            raise ValueError("phases contain NaN or inf")
        d = self.phases.shape[1]
        if self.rotation is not None:
            Q = self.rotation
            if Q.shape != (d, d):
                raise ValueError(f"rotation must have shape ({d}, {d}), got {tuple(Q.shape)}")
            eye = torch.eye(d, dtype=Q.dtype, device=Q.device)
            if not torch.allclose(Q @ Q.T, eye, atol=1e-10):
                raise ValueError("rotation must be orthogonal (Q Q^T = I)")
        if self.curvature is not None:
            a = self.curvature
            if a.shape != (d,) or not bool(torch.isfinite(a).all()) or bool((a <= 0).any()) or bool((a > 1).any()):
                raise ValueError(f"curvature must be a ({d},) tensor with entries in (0, 1]")

    @classmethod
    def make(cls, d: int, n_nodes: int = 1, sigma: float = 1.0, heterogeneity: float = 0.5,
             seed: int = 0, rotated: bool = False, curvature_range: tuple[float, float] | None = None,
             curvature_noise: float = 0.0) -> "PeriodicObjective":
        """O1 with ``n_nodes`` heterogeneous nodes; phases drawn from ``seed`` (all zero for one node).

        ``rotated=True`` adds a Haar-random rotation; ``curvature_range=(a_min, a_max)`` log-spaced
        curvatures a_k (randomly permuted), e.g. (0.1, 1.0) for a non-separable, ill-conditioned problem;
        ``curvature_noise=s`` makes the curvature sample-dependent (module docstring).
        """
        g = torch.Generator().manual_seed(seed)
        phases = node_phases(n_nodes, d, heterogeneity if n_nodes > 1 else 0.0, g)
        Q = random_rotation(d, g) if rotated else None
        a = None
        if curvature_range is not None:
            lo, hi = curvature_range
            if not (0 < lo <= hi <= 1):
                raise ValueError(f"curvature_range must satisfy 0 < a_min <= a_max <= 1, got {curvature_range!r}")
            a = torch.logspace(math.log10(lo), math.log10(hi), d, dtype=torch.float64)[torch.randperm(d, generator=g)]
        return cls(phases, sigma, Q, a, float(curvature_noise))

    def to(self, device: torch.device | str) -> "PeriodicObjective":
        """A copy with every tensor on ``device`` (the simulator computes where its objective lives)."""
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return PeriodicObjective(move(self.phases), self.sigma, move(self.rotation), move(self.curvature),
                                 self.curvature_noise)

    @property
    def device(self) -> torch.device:
        return self.phases.device

    @property
    def n_nodes(self) -> int:
        return self.phases.shape[0]

    @property
    def d(self) -> int:
        return self.phases.shape[1]

    @property
    def separable(self) -> bool:
        return self.rotation is None

    @property
    def noise_scale(self) -> float:
        return self.sigma / math.sqrt(self.d)

    @property
    def L(self) -> float:
        """Smoothness constant of the mean objective: max_k a_k (1 without curvatures)."""
        return 1.0 if self.curvature is None else float(self.curvature.max())

    @property
    def L_avg(self) -> float:
        """Average-smoothness constant (A2), E||grad f(x;.) - grad f(y;.)||^2 <= L_avg^2 ||x - y||^2:
        L sqrt(1 + s^2) with s the curvature noise (= L for the additive-noise O1)."""
        return self.L * math.sqrt(1.0 + self.curvature_noise ** 2)

    @property
    def sigma_bound(self) -> float:
        """The noise level of assumption A3, sup_x E||grad f(x; .) - grad F(x)||_2: sqrt(sigma^2 + s^2 sum_k a_k^2)
        (the additive part, plus the curvature noise at its worst, where every |sin| = 1)."""
        a2 = float(self.d) if self.curvature is None else float((self.curvature.cpu() ** 2).sum())
        return math.sqrt(self.sigma ** 2 + self.curvature_noise ** 2 * a2)

    @property
    def G(self) -> float:
        """Bound on ||grad f_j(x; xi)||_inf (assumption bg1): (1 + s) max_i sum_k |Q_ki| a_k + sigma / sqrt(d)."""
        a = torch.ones(self.d, dtype=torch.float64) if self.curvature is None else self.curvature.cpu()
        top = float(a.max()) if self.rotation is None else float((self.rotation.cpu().abs() * a.unsqueeze(1)).sum(0).max())
        return (1.0 + self.curvature_noise) * top + self.noise_scale

    def node(self, j: int) -> "PeriodicObjective":
        """The objective of node j alone (what worker j of the multi-process run knows)."""
        return PeriodicObjective(self.phases[j : j + 1], self.sigma, self.rotation, self.curvature, self.curvature_noise)

    def _scaled(self, s: torch.Tensor) -> torch.Tensor:
        return s if self.curvature is None else s * self.curvature

    def _to_inner(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.rotation is None else x @ self.rotation.T   # (Q x) row-wise

    def _to_outer(self, s: torch.Tensor) -> torch.Tensor:
        return s if self.rotation is None else s @ self.rotation     # (Q^T s) row-wise

    def node_gradients(self, x: torch.Tensor, noise: torch.Tensor, curvature_scale: torch.Tensor | None = None
                       ) -> torch.Tensor:
        """Stochastic gradients of every node: x (B, d), noise (B, n, d) in {-1, 0, +1} -> (B, n, d).

        ``noise`` may also be a minibatch mean of Rademacher draws (the B0 initial batch).
        ``curvature_scale`` (B, n, d): the sample's curvature factors 1 + s zeta (or their batch mean);
        None means 1 (required to be None when ``curvature_noise`` is 0, and given otherwise)."""
        if (curvature_scale is None) != (self.curvature_noise == 0.0):
            raise ValueError("curvature_scale must be given exactly when the objective has curvature noise")
        z = self._to_inner(x)
        inner = self._scaled(torch.sin(z.unsqueeze(1) - self.phases))
        if curvature_scale is not None:
            inner = inner * curvature_scale
        return self._to_outer(inner) + self.noise_scale * noise

    def true_gradient(self, x: torch.Tensor) -> torch.Tensor:
        """grad f(x) = mean_j of the noiseless node gradients (sin(z) mean cos(phi) - cos(z) mean sin(phi), z = Qx)."""
        c = torch.cos(self.phases).mean(0)
        s = torch.sin(self.phases).mean(0)
        z = self._to_inner(x)
        return self._to_outer(self._scaled(torch.sin(z) * c - torch.cos(z) * s))

    def value(self, x: torch.Tensor) -> torch.Tensor:
        """f(x) = mean_j sum_k a_k (1 - cos((Qx)_k - phi_jk)), shape (B,)."""
        z = self._to_inner(x)
        return self._scaled(1.0 - torch.cos(z.unsqueeze(1) - self.phases)).sum(-1).mean(-1)
