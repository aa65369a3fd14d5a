"""The generative baselines that share BFQ's scaffold (brief Sec. 2.7): flow matching with K Euler
steps (FM-K, also FQL's behaviour flow), DDPM with 5 VP steps (Diffusion-QL), a one-step actor
(FQL's distilled policy) and a deterministic actor (BC, TD3+BC).

All are ensembles over seeds, tensors ``(E, B, .)``, in BFQ's time convention (t = 0 data, t = 1 noise;
`icml26.bfq.conventions` converts to FQL's).
"""
from __future__ import annotations


import torch
from torch import nn

from .conventions import interpolate, velocity_target
from .nets import EnsembleMLP, sinusoidal_embedding


class FlowMatchingPolicy(nn.Module):
    """Conditional flow matching (CFM) velocity field ``v_theta(a_t, t; s)`` and its Euler-K sampler.

    Loss: ``E || v_theta(a_t, t; s) - (eps - a) ||^2`` with ``t ~ U(0, 1)`` (the rectified/OT path).
    Sampling: ``x_{k+1} = x_k - h v(x_k, t_k)``, ``t_k = 1 - k h``, ``h = 1/K`` from ``x_0 = eps``.
    """

    def __init__(self, seeds, action_dim: int, state_dim: int, hidden=(256, 256, 256), pe_dim: int = 64):
        super().__init__()
        self.action_dim, self.state_dim, self.pe_dim = action_dim, state_dim, pe_dim
        self.net = EnsembleMLP(seeds, action_dim + state_dim + pe_dim, hidden, action_dim)
        self.members = self.net.members

    def velocity(self, a_t, t, s, emb=None):
        if emb is None:
            emb = sinusoidal_embedding(t, self.pe_dim)
        return self.net(torch.cat([a_t, s, emb], dim=-1))

    def loss(self, a, s, gen: torch.Generator) -> torch.Tensor:
        E, B, _ = a.shape
        eps = torch.randn(a.shape, generator=gen)
        t = torch.rand(E, B, 1, generator=gen)
        v = self.velocity(interpolate(a, eps, t), t, s)
        return ((v - velocity_target(a, eps)) ** 2).sum(-1).mean(-1)

    def sample(self, s, eps, steps: int) -> torch.Tensor:
        """Euler with ``steps`` (= K) uniform steps from t = 1 (noise) to t = 0 (data)."""
        if steps < 1:
            raise ValueError(f"the number of Euler steps K must be >= 1, got {steps}")
        x, h = eps, 1.0 / steps
        for k in range(steps):
            emb = sinusoidal_embedding(torch.tensor([[[1.0 - k * h]]], dtype=eps.dtype), self.pe_dim)
            x = x - h * self.velocity(x, None, s, emb=emb.expand(*eps.shape[:2], self.pe_dim))
        return x


def vp_beta_schedule(steps: int) -> torch.Tensor:
    """Diffusion-QL's variance-preserving schedule for few steps (``vp_beta_schedule`` of its code)."""
    t = torch.arange(1, steps + 1, dtype=torch.float64)
    b_max, b_min = 10.0, 0.1
    alpha = torch.exp(-b_min / steps - 0.5 * (b_max - b_min) * (2 * t - 1) / steps ** 2)
    return (1 - alpha).float()


class DiffusionPolicy(nn.Module):
    """Diffusion-QL's DDPM policy: eps-prediction ``eps_theta(x_k, k; s)`` with ``N`` VP steps.

    ``loss``: ``E || eps - eps_theta(sqrt(abar_k) a + sqrt(1 - abar_k) eps, k) ||^2``; ``sample``: the full
    reverse chain (differentiable, so the Q term back-propagates through all N steps: BPTT), with the
    predicted ``x_0`` clipped to the action box as in DQL.
    """

    def __init__(self, seeds, action_dim: int, state_dim: int, hidden=(256, 256, 256), pe_dim: int = 64,
                 n_steps: int = 5, max_action: float = 1.0):
        super().__init__()
        if n_steps < 1:
            raise ValueError(f"n_steps must be >= 1, got {n_steps}")
        self.action_dim, self.state_dim, self.pe_dim, self.n_steps = action_dim, state_dim, pe_dim, n_steps
        self.max_action = max_action
        self.net = EnsembleMLP(seeds, action_dim + state_dim + pe_dim, hidden, action_dim)
        self.members = self.net.members
        betas = vp_beta_schedule(n_steps)
        alphas = 1 - betas
        abar = torch.cumprod(alphas, 0)
        abar_prev = torch.cat([torch.ones(1), abar[:-1]])
        self.register_buffer("abar", abar)
        self.register_buffer("sqrt_recip_abar", torch.sqrt(1 / abar))
        self.register_buffer("sqrt_recipm1_abar", torch.sqrt(1 / abar - 1))
        self.register_buffer("coef1", betas * torch.sqrt(abar_prev) / (1 - abar))
        self.register_buffer("coef2", (1 - abar_prev) * torch.sqrt(alphas) / (1 - abar))
        var = betas * (1 - abar_prev) / (1 - abar)
        self.register_buffer("log_var", torch.log(torch.clamp(var, min=1e-20)))

    def eps_model(self, x, k, s, emb=None):
        if emb is None:
            emb = sinusoidal_embedding((k.to(x.dtype) + 1) / self.n_steps, self.pe_dim)
        return self.net(torch.cat([x, s, emb], dim=-1))

    def loss(self, a, s, gen: torch.Generator) -> torch.Tensor:
        E, B, _ = a.shape
        k = torch.randint(0, self.n_steps, (E, B, 1), generator=gen)
        eps = torch.randn(a.shape, generator=gen)
        ab = self.abar[k]
        x = torch.sqrt(ab) * a + torch.sqrt(1 - ab) * eps
        return ((self.eps_model(x, k, s) - eps) ** 2).sum(-1).mean(-1)

    def sample(self, s, gen: torch.Generator, x: torch.Tensor | None = None) -> torch.Tensor:
        E, B = s.shape[:2]
        if x is None:
            x = torch.randn(E, B, self.action_dim, generator=gen)
        for i in reversed(range(self.n_steps)):
            emb = sinusoidal_embedding(torch.tensor([[[(i + 1) / self.n_steps]]]), self.pe_dim).expand(E, B, self.pe_dim)
            x0 = self.sqrt_recip_abar[i] * x - self.sqrt_recipm1_abar[i] * self.eps_model(x, None, s, emb=emb)
            x0 = torch.clamp(x0, -self.max_action, self.max_action)
            mean = self.coef1[i] * x0 + self.coef2[i] * x
            if i > 0:
                x = mean + torch.exp(0.5 * self.log_var[i]) * torch.randn(x.shape, generator=gen)
            else:
                x = mean
        return x


class NoiseActor(nn.Module):
    """FQL's one-step policy ``mu_omega(s, z)``: an MLP over ``concat(s, z)``, ``z ~ N(0, I)``."""

    def __init__(self, seeds, action_dim: int, state_dim: int, hidden=(256, 256, 256)):
        super().__init__()
        self.action_dim, self.state_dim = action_dim, state_dim
        self.net = EnsembleMLP(seeds, action_dim + state_dim, hidden, action_dim)
        self.members = self.net.members

    def forward(self, s, z):
        return self.net(torch.cat([s, z], dim=-1))


class DeterministicActor(nn.Module):
    """``pi(s) = max_action * tanh(MLP(s))`` (BC and TD3+BC)."""

    def __init__(self, seeds, action_dim: int, state_dim: int, hidden=(256, 256, 256), max_action: float = 1.0):
        super().__init__()
        self.action_dim, self.state_dim, self.max_action = action_dim, state_dim, max_action
        self.net = EnsembleMLP(seeds, state_dim, hidden, action_dim)
        self.members = self.net.members

    def forward(self, s):
        return self.max_action * torch.tanh(self.net(s))


class TwinCritic(nn.Module):
    """Twin Q networks ``Q_1, Q_2`` per member: one `EnsembleMLP` with ``2E`` members; output ``(2, E, B)``.

    ``layer_norm=True``: LayerNorm after every hidden layer (official FQL's critic, ``layer_norm=True``).
    """

    def __init__(self, seeds, action_dim: int, state_dim: int, hidden=(256, 256, 256), layer_norm: bool = False):
        super().__init__()
        seeds = list(seeds)
        self.members = len(seeds)
        self.net = EnsembleMLP([s * 2 + 1_000 for s in seeds] + [s * 2 + 1_001 for s in seeds],
                               state_dim + action_dim, hidden, 1, layer_norm=layer_norm)

    def forward(self, s, a):
        x = torch.cat([s, a], dim=-1)
        q = self.net(torch.cat([x, x], dim=0)).squeeze(-1)
        return q.view(2, self.members, -1)


