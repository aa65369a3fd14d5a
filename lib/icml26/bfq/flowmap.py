"""The bootstrapped flow-map policy of BFQ (the research brief's Sec. 2.2-2.4).

Flow map (policy operator) over an interval ``[r, t]`` of the BFQ time (t = 0 data, t = 1 noise):

    pi(a_t, r, t; s) = a_t - d(a_t, r, t; s),   d = int_r^t v(a_tau, tau; s) dtau,       (operator)

so that under the true probability-flow ODE ``pi(a_t, r, t; s) = a_r`` and the one-step policy is
``a = pi(eps, 0, 1; s)``. Parameterisation (inferred, brief Sec. 2.3):

    pi_theta(a_t, r, t; s) = a_t - (t - r) u_theta(a_t, r, t; s)                     ("mean")

(identity at ``r = t`` by construction; ``u`` is an average velocity). The ablation ``"edm"`` uses
``pi = c_skip(D) a_t + c_out(D) F_theta`` with ``D = t - r``, ``c_skip = 1/(1 + D^2)``,
``c_out = -D/sqrt(1 + D^2)`` (EDM's preconditioning with sigma_data = 1): also the identity at D = 0,
and ``u := (a_t - pi)/D -> F_theta`` as ``D -> 0``.

Losses (brief Eq. for L_comp, L_bnd, L_BC):

    L_comp = E || pi(a_t, r, t) - sg pi(pi(a_t, m, t), r, m) ||^2,   r < m < t sorted U(0,1)^3
    L_bnd  = E || u(a_t, t - D, t) - (eps - a) ||^2,                  D ~ U[0, D_max], D_max = 1e-3
    L_BC   = (1 - lambda) L_comp + lambda L_bnd, one term per update, xi ~ Bernoulli(lambda).

The two-hop target is under stop-gradient (pitfall 2); the identity map satisfies composition exactly,
so lambda = 0 has the trivial minimiser pi(x, r, t) = x: the policy then emits its input noise.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .conventions import interpolate, velocity_target
from .nets import EnsembleMLP, sinusoidal_embedding

PARAMETERISATIONS = ("mean", "edm")


def _check_unit_interval(name: str, value: float, open_low=False, open_high=False):
    lo_ok = value > 0 if open_low else value >= 0
    hi_ok = value < 1 if open_high else value <= 1
    if not (isinstance(value, (int, float)) and math.isfinite(value) and lo_ok and hi_ok):
        interval = ("(" if open_low else "[") + "0, 1" + (")" if open_high else "]")
        raise ValueError(f"{name} must be in {interval}, got {value!r}")


def check_times(r: torch.Tensor, t: torch.Tensor) -> None:
    """Times given to the operator: finite, in [0, 1], with r <= t (a ValueError otherwise)."""
    for name, x in (("r", r), ("t", t)):
        if not torch.isfinite(x).all():
            raise ValueError(f"{name} contains NaN or inf")
        if (x < 0).any() or (x > 1).any():
            raise ValueError(f"{name} must lie in [0, 1]; got values in [{x.min().item():.3g}, {x.max().item():.3g}]")
    if (r > t).any():
        raise ValueError("the operator needs r <= t (it maps a_t at time t back to time r; t = 0 is data)")


class FlowMapPolicy(nn.Module):
    """``E`` independent flow-map policies ``pi_theta(a_t, r, t; s)`` (one per seed).

    MLP over ``concat(a_t, s, PE(t), PE(r))`` with sinusoidal embeddings of width ``pe_dim`` (64 in the
    paper). Tensors are ``(E, B, .)``; ``s`` may have zero features (unconditional toys).
    """

    def __init__(self, seeds, action_dim: int, state_dim: int, hidden=(256, 256, 256), pe_dim: int = 64,
                 parameterisation: str = "mean"):
        super().__init__()
        if action_dim < 1 or state_dim < 0:
            raise ValueError(f"action_dim must be >= 1 and state_dim >= 0, got {action_dim}, {state_dim}")
        if parameterisation not in PARAMETERISATIONS:
            raise ValueError(f"parameterisation must be one of {PARAMETERISATIONS}, got {parameterisation!r}")
        self.action_dim, self.state_dim, self.pe_dim = action_dim, state_dim, pe_dim
        self.parameterisation = parameterisation
        self.net = EnsembleMLP(seeds, action_dim + state_dim + 2 * pe_dim, hidden, action_dim)
        self.members = self.net.members

    # ------------------------------------------------------------------ the operator
    def _raw(self, a_t, r, t, s, emb=None):
        if emb is None:
            emb = torch.cat([sinusoidal_embedding(t, self.pe_dim), sinusoidal_embedding(r, self.pe_dim)], dim=-1)
        return self.net(torch.cat([a_t, s, emb], dim=-1))

    def _const_emb(self, r: float, t: float, like: torch.Tensor) -> torch.Tensor:
        """PE(t), PE(r) of constant times, computed once and broadcast over the batch (sampling paths)."""
        tt = torch.tensor([[[float(t)]], [[float(r)]]], dtype=like.dtype)
        emb = sinusoidal_embedding(tt, self.pe_dim)
        return torch.cat([emb[0], emb[1]], dim=-1).expand(*like.shape[:2], 2 * self.pe_dim)

    def _op_and_u(self, a_t, r, t, s, emb=None):
        """(pi, u) without input checks (the training loops' path); ``r``, ``t`` tensors or floats (with ``emb``)."""
        f = self._raw(a_t, r, t, s, emb)
        delta = torch.as_tensor(t - r, dtype=a_t.dtype)
        if self.parameterisation == "mean":
            return a_t - delta * f, f
        c_skip = 1.0 / (1.0 + delta ** 2)
        c_out = -delta / torch.sqrt(1.0 + delta ** 2)
        pi = c_skip * a_t + c_out * f
        # u = (a_t - pi)/delta = delta/(1 + delta^2) a_t + F/sqrt(1 + delta^2), finite at delta = 0
        u = delta / (1.0 + delta ** 2) * a_t + f / torch.sqrt(1.0 + delta ** 2)
        return pi, u

    def _check(self, a_t, s):
        if a_t.dim() != 3 or a_t.shape[0] != self.members or a_t.shape[-1] != self.action_dim:
            raise ValueError(f"a_t must be (E={self.members}, B, action_dim={self.action_dim}), got {tuple(a_t.shape)}")
        if s.shape[:2] != a_t.shape[:2] or s.shape[-1] != self.state_dim:
            raise ValueError(f"s must be (E, B, state_dim={self.state_dim}) matching a_t, got {tuple(s.shape)}")
        if not torch.isfinite(a_t).all() or not torch.isfinite(s).all():
            raise ValueError("a_t or s contains NaN or inf")

    def _times(self, x, like):
        x = torch.as_tensor(x, dtype=like.dtype)
        return x.expand(*like.shape[:2], 1) if x.dim() < 3 else x

    def operator(self, a_t, r, t, s) -> torch.Tensor:
        """``pi_theta(a_t, r, t; s)``: the state at time ``r`` reached from ``a_t`` at time ``t >= r``."""
        self._check(a_t, s)
        r, t = self._times(r, a_t), self._times(t, a_t)
        check_times(r, t)
        return self._op_and_u(a_t, r, t, s)[0]

    def velocity(self, a_t, r, t, s) -> torch.Tensor:
        """``u_theta(a_t, r, t; s)``, the average velocity over ``[r, t]``."""
        self._check(a_t, s)
        r, t = self._times(r, a_t), self._times(t, a_t)
        check_times(r, t)
        return self._op_and_u(a_t, r, t, s)[1]

    def sample(self, s: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        """The one-step policy ``a = pi(eps, 0, 1; s)``: one network pass (differentiable, unclipped)."""
        return self._op_and_u(eps, 0.0, 1.0, s, emb=self._const_emb(0.0, 1.0, eps))[0]

    def sample_steps(self, s: torch.Tensor, eps: torch.Tensor, steps: int) -> torch.Tensor:
        """Multi-step generation by composing ``steps`` maps over a uniform grid from t = 1 to 0."""
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        x = eps
        grid = [1.0 - k / steps for k in range(steps + 1)]
        for k in range(steps):
            x = self._op_and_u(x, grid[k + 1], grid[k], s, emb=self._const_emb(grid[k + 1], grid[k], x))[0]
        return x

    # ------------------------------------------------------------------ the losses
    def composition_loss(self, a, s, gen: torch.Generator, reduce=True) -> torch.Tensor:
        """``L_comp``: ``|| pi(a_t, r, t) - sg pi(pi(a_t, m, t), r, m) ||^2`` with sorted r < m < t.

        Returns the per-member mean over the batch (shape ``(E,)``), or per sample with ``reduce=False``.
        """
        E, B, _ = a.shape
        eps = torch.randn(a.shape, generator=gen)
        rmt = torch.sort(torch.rand(E, B, 3, generator=gen), dim=-1).values
        r, m, t = rmt[..., :1], rmt[..., 1:2], rmt[..., 2:]
        a_t = interpolate(a, eps, t)
        with torch.no_grad():  # the bootstrap target: two hops, stop-gradient
            a_m = self._op_and_u(a_t, m, t, s)[0]
            target = self._op_and_u(a_m, r, m, s)[0]
        pred = self._op_and_u(a_t, r, t, s)[0]
        per = ((pred - target) ** 2).sum(-1)
        return per.mean(-1) if reduce else per

    def boundary_loss(self, a, s, gen: torch.Generator, delta_max: float = 1e-3, reduce=True) -> torch.Tensor:
        """``L_bnd``: ``|| u(a_t, t - D, t) - (eps - a) ||^2`` with ``D ~ U[0, delta_max]`` (CFM on tiny intervals)."""
        _check_unit_interval("delta_max", delta_max, open_low=True, open_high=True)
        E, B, _ = a.shape
        eps = torch.randn(a.shape, generator=gen)
        t = torch.rand(E, B, 1, generator=gen)
        r = torch.clamp(t - delta_max * torch.rand(E, B, 1, generator=gen), min=0.0)
        a_t = interpolate(a, eps, t)
        u = self._op_and_u(a_t, r, t, s)[1]
        per = ((u - velocity_target(a, eps)) ** 2).sum(-1)
        return per.mean(-1) if reduce else per

    def bc_loss(self, a, s, gen: torch.Generator, lam=0.5, delta_max: float = 1e-3,
                mixing: str = "update") -> torch.Tensor:
        """``L_BC = (1 - lambda) L_comp + lambda L_bnd``, unbiased by a Bernoulli(lambda) switch.

        ``lam``: one value, or one per member (a lambda sweep trained as one ensemble).
        ``mixing="update"`` (the paper): one xi ~ Bernoulli(lambda) per update and member, only that term
        is computed (both when the members disagree). ``mixing="sample"``: a switch per sample (an
        unbiased, lower-variance option). Returns the per-member losses, shape ``(E,)``.
        """
        E, B, _ = a.shape
        lam_t = member_lambdas(lam, E)
        _check_unit_interval("delta_max", delta_max, open_low=True, open_high=True)
        if mixing not in ("update", "sample"):
            raise ValueError(f"mixing must be 'update' or 'sample', got {mixing!r}")
        if mixing == "sample":
            xi = (torch.rand(E, B, generator=gen) < lam_t[:, None]).to(a.dtype)
            return (xi * self.boundary_loss(a, s, gen, delta_max, reduce=False)
                    + (1 - xi) * self.composition_loss(a, s, gen, reduce=False)).mean(-1)
        xi = (torch.rand(E, generator=gen) < lam_t).to(a.dtype)
        if bool((xi == 1).all()):
            return self.boundary_loss(a, s, gen, delta_max)
        if bool((xi == 0).all()):
            return self.composition_loss(a, s, gen)
        return xi * self.boundary_loss(a, s, gen, delta_max) + (1 - xi) * self.composition_loss(a, s, gen)


def member_lambdas(lam, members: int) -> torch.Tensor:
    """lambda as one value per member (a float is broadcast); each must lie in [0, 1]."""
    values = [lam] * members if isinstance(lam, (int, float)) else list(lam)
    if len(values) != members:
        raise ValueError(f"need one lambda per member ({members}), got {len(values)}")
    for v in values:
        _check_unit_interval("lambda", float(v))
    return torch.tensor(values, dtype=torch.float32)
