"""Ensembles of small MLPs: one member per seed, trained side by side in one batched matmul.

Every network of the chapter (flow-map policy, flow-matching field, DDPM noise model, Gaussian actor,
twin critics) is an `EnsembleMLP` whose weights carry a leading *member* axis ``E``: member ``e`` is
initialised from its own seed and sees its own batch, so the ``E`` members are ``E`` independent
training runs (the seeds of a method comparison) computed with `torch.baddbmm` instead of ``E``
Python-level loops. On one CPU thread the small matrices of a 2x64 or 3x256 MLP are overhead-bound,
so the batched form is several times faster than separate runs, with the same arithmetic per member.

Tensors are laid out ``(E, B, features)``. The hidden activation is SiLU by default (DQL/OFQL's Mish is an option: `ACTIVATIONS`).
"""
from __future__ import annotations

import math

import torch
from torch import nn


PE_SCALE = 1000.0
"""Time is scaled by 1000 before the sinusoids (DDPM code's convention), so Delta ~ 1e-3 is resolved."""

ACTIVATIONS = {"silu": nn.SiLU, "mish": nn.Mish, "relu": nn.ReLU}
"""Hidden activations. DQL/OFQL use Mish; the chapter defaults to SiLU (x sigmoid(x), the same smooth
self-gated shape) because torch's CPU Mish kernel is about 9x slower than SiLU's and dominated the step."""


def sinusoidal_embedding(t: torch.Tensor, dim: int, scale: float | None = None) -> torch.Tensor:
    """Sinusoidal time embedding PE(t) of width ``dim`` (the paper's 64 per time), for t in [0, 1].

    ``t`` has shape ``(..., 1)``; the result ``(..., dim)``: ``[sin(1000 t w_k), cos(1000 t w_k)]`` with
    geometric frequencies ``w_k = 10000^{-k/(dim/2)}`` (the transformer embedding, t scaled by 1000 as in
    DDPM code so that small intervals Delta ~ 1e-3 are resolved).
    """
    if dim % 2:
        raise ValueError(f"embedding dim must be even, got {dim}")
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=t.dtype, device=t.device) / half)
    arg = (PE_SCALE if scale is None else scale) * t * freqs
    return torch.cat([torch.sin(arg), torch.cos(arg)], dim=-1)


class EnsembleLinear(nn.Module):
    """``E`` independent affine maps ``x_e W_e + b_e`` (``x``: ``(E, B, n_in)``; one generator per member)."""

    def __init__(self, n_in: int, n_out: int, generators: list[torch.Generator]):
        super().__init__()
        bound = 1.0 / math.sqrt(max(n_in, 1))  # torch.nn.Linear's default (kaiming-uniform, a = sqrt 5)
        w = torch.stack([torch.empty(n_in, n_out).uniform_(-bound, bound, generator=g) for g in generators])
        b = torch.stack([torch.empty(1, n_out).uniform_(-bound, bound, generator=g) for g in generators])
        self.weight = nn.Parameter(w)
        self.bias = nn.Parameter(b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class EnsembleLayerNorm(nn.Module):
    """LayerNorm with a gain and bias *per member* (a shared ``nn.LayerNorm`` would couple the seeds)."""

    def __init__(self, members: int, width: int):
        super().__init__()
        self.width = width
        self.weight = nn.Parameter(torch.ones(members, 1, width))
        self.bias = nn.Parameter(torch.zeros(members, 1, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (self.width,)) * self.weight + self.bias


class EnsembleMLP(nn.Module):
    """``E`` independent MLPs ``n_in -> hidden... -> n_out`` (SiLU by default; ``activation="mish"`` for DQL's).

    ``seeds``: one integer per member (its initialisation); ``out_scale`` scales the last layer's
    initial weights (a small value starts a velocity/noise head near zero).
    """

    def __init__(self, seeds: list[int] | tuple[int, ...], n_in: int, hidden: tuple[int, ...] | list[int], n_out: int,
                 out_scale: float = 1.0, layer_norm: bool = False, activation: str = "silu"):
        super().__init__()
        if len(seeds) < 1:
            raise ValueError("an ensemble needs at least one member (one seed)")
        if n_out < 1 or any(h < 1 for h in hidden):
            raise ValueError(f"layer widths must be positive, got hidden={hidden}, n_out={n_out}")
        self.members = len(seeds)
        gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
        widths = [n_in, *hidden, n_out]
        self.layers = nn.ModuleList(EnsembleLinear(a, b, gens) for a, b in zip(widths[:-1], widths[1:]))
        self.norms = nn.ModuleList(EnsembleLayerNorm(self.members, h) for h in hidden) if layer_norm else None
        with torch.no_grad():
            self.layers[-1].weight.mul_(out_scale)
            self.layers[-1].bias.mul_(out_scale)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {list(ACTIVATIONS)}, got {activation!r}")
        self.act = ACTIVATIONS[activation]()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for k, layer in enumerate(self.layers[:-1]):
            x = layer(x)
            if self.norms is not None:
                x = self.norms[k](x)
            x = self.act(x)
        return self.layers[-1](x)


def clip_grad_norm_members(params, members: int, max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_`` applied to each member of an ensemble on its own.

    Every parameter carries a leading axis of ``R`` rows (``R`` a multiple of ``members``; a `TwinCritic`
    has ``2E`` rows, row ``k`` belonging to member ``k % E``, so a member's norm covers both its critics,
    as Diffusion-QL clips ``critic.parameters()`` together). Returns the per-member norms before clipping.
    """
    if max_norm <= 0:
        raise ValueError(f"max_norm must be > 0, got {max_norm}")
    params = [p for p in params if p.grad is not None]
    if not params:
        return torch.zeros(members)
    sq = torch.zeros(members)
    for p in params:
        rows = p.grad.reshape(p.grad.shape[0], -1).pow(2).sum(1)
        sq += rows.view(-1, members).sum(0)
    norms = sq.sqrt()
    scale = torch.clamp(max_norm / (norms + 1e-6), max=1.0)
    for p in params:
        reps = p.grad.shape[0] // members
        p.grad.mul_(scale.repeat(reps).view(-1, *([1] * (p.grad.dim() - 1))))
    return norms


def member_generators(seeds, salt: int) -> torch.Generator:
    """One generator for the random draws of a training run (batches, noise, times), from the seeds."""
    return torch.Generator().manual_seed(int(salt) * 1_000_003 + sum((k + 1) * 7919 * int(s) for k, s in enumerate(seeds)))
