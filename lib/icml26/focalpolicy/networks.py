"""Velocity networks ``v_theta(x_t, 99 t | o)`` over an action chunk ``(B, T, D_a)`` (brief §2.1, §5.2).

* `ChunkMLP`: an MLP over the flattened chunk, concatenated with a time embedding and the flattened
  observation history (smoke and book).
* `ConditionalUnet1D`: a conditional 1-D temporal UNet (DP3/FlowPolicy's ``conditional_unet1d``, the
  released architecture, scaled down: down dims 512/1024/2048 -> a preset's ``down_dims``, kernel 5, 8 groups),
  FiLM on ``[time embedding, observation history]``. Its convolution kernels and 1x1 output convolution are
  shared over the chunk's time axis (the weight sharing the MLP lacks).
* `VmapEnsemble`: ``members`` independent copies of any of these networks (seeds) trained in one pass with
  ``torch.func`` (``stack_module_state`` + ``functional_call`` + ``vmap``); parameters are stacked member-major,
  so AdamW, EMA and the per-member gradient clip keep the seeds independent.

Both take the time already multiplied by 99, as the released code feeds ``t * 99``.
"""
from __future__ import annotations

import math

import torch
from torch import nn


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        if dim % 2:
            raise ValueError(f"time embedding dimension must be even, got {dim}")
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        freqs = torch.exp(torch.arange(half, device=x.device, dtype=x.dtype) * (-math.log(10000.0) / (half - 1)))
        arg = x[:, None] * freqs[None]
        return torch.cat([arg.sin(), arg.cos()], dim=-1)


def time_encoder(dim: int) -> nn.Module:
    return nn.Sequential(SinusoidalPosEmb(dim), nn.Linear(dim, 4 * dim), nn.Mish(), nn.Linear(4 * dim, dim))


class ChunkMLP(nn.Module):
    """``v(x, 99t | o)`` as an MLP on ``[flat chunk, time embedding, flat observation history]``."""

    def __init__(self, horizon: int, action_dim: int, cond_dim: int, hidden: tuple[int, ...] = (128, 128, 128),
                 time_dim: int = 32):
        super().__init__()
        self.horizon, self.action_dim = horizon, action_dim
        self.time = time_encoder(time_dim)
        layers: list[nn.Module] = []
        width = horizon * action_dim + time_dim + cond_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.Mish()]
            width = h
        layers.append(nn.Linear(width, horizon * action_dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, timestep: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        B = x.shape[0]
        h = torch.cat([x.reshape(B, -1), self.time(timestep), cond.reshape(B, -1)], dim=-1)
        return self.net(h).reshape(B, self.horizon, self.action_dim)


class EnsembleLinear(nn.Module):
    """``S`` independent linear layers applied to ``(S, B, in)`` with one batched matmul."""

    def __init__(self, members: int, fan_in: int, fan_out: int):
        super().__init__()
        layers = [nn.Linear(fan_in, fan_out) for _ in range(members)]   # torch's default init, member by member
        self.weight = nn.Parameter(torch.stack([l.weight.detach().T for l in layers]))
        self.bias = nn.Parameter(torch.stack([l.bias.detach()[None] for l in layers]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class EnsembleChunkMLP(nn.Module):
    """``members`` independent `ChunkMLP` s trained in one pass (seeds as a leading batch axis).

    Inputs are member-major: ``x`` is ``(members * B, T, D_a)``, rows ``[s B, (s + 1) B)`` belong to member
    ``s``. Parameters of different members never mix (elementwise AdamW / EMA keep them independent), so
    this is ``members`` separate training runs at the Python overhead of one. `member(s)` returns one of
    them as a plain `ChunkMLP`.
    """

    def __init__(self, members: int, horizon: int, action_dim: int, cond_dim: int,
                 hidden: tuple[int, ...] = (128, 128, 128), time_dim: int = 32):
        super().__init__()
        if members < 1:
            raise ValueError(f"members must be >= 1, got {members}")
        self.members, self.horizon, self.action_dim = members, horizon, action_dim
        self.hidden, self.time_dim, self.cond_dim = tuple(hidden), time_dim, cond_dim
        self.emb = SinusoidalPosEmb(time_dim)
        self.t1, self.t2 = EnsembleLinear(members, time_dim, 4 * time_dim), EnsembleLinear(members, 4 * time_dim, time_dim)
        widths = [horizon * action_dim + time_dim + cond_dim, *hidden, horizon * action_dim]
        self.layers = nn.ModuleList([EnsembleLinear(members, a, b) for a, b in zip(widths[:-1], widths[1:])])
        self.act = nn.Mish()

    def forward(self, x: torch.Tensor, timestep: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        S = self.members
        if x.shape[0] % S:
            raise ValueError(f"an ensemble of {S} members needs a batch divisible by {S}, got {x.shape[0]}")
        B = x.shape[0] // S
        te = self.t2(self.act(self.t1(self.emb(timestep).reshape(S, B, -1))))
        h = torch.cat([x.reshape(S, B, -1), te, cond.reshape(S, B, -1)], dim=-1)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = self.act(h)
        return h.reshape(S * B, self.horizon, self.action_dim)

    @torch.no_grad()
    def member(self, s: int) -> ChunkMLP:
        net = ChunkMLP(self.horizon, self.action_dim, self.cond_dim, self.hidden, self.time_dim)
        net.time[1].weight.copy_(self.t1.weight[s].T)
        net.time[1].bias.copy_(self.t1.bias[s, 0])
        net.time[3].weight.copy_(self.t2.weight[s].T)
        net.time[3].bias.copy_(self.t2.bias[s, 0])
        linears = [m for m in net.net if isinstance(m, nn.Linear)]
        for lin, layer in zip(linears, self.layers):
            lin.weight.copy_(layer.weight[s].T)
            lin.bias.copy_(layer.bias[s, 0])
        return net


class Conv1dBlock(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int, groups: int):
        super().__init__()
        self.block = nn.Sequential(nn.Conv1d(cin, cout, kernel, padding=kernel // 2), nn.GroupNorm(groups, cout), nn.Mish())

    def forward(self, x):
        return self.block(x)


class FiLMResBlock(nn.Module):
    """DP's ``ConditionalResidualBlock1D``: two conv blocks, FiLM (scale, bias) from the condition between them."""

    def __init__(self, cin: int, cout: int, cond_dim: int, kernel: int, groups: int):
        super().__init__()
        self.b1, self.b2 = Conv1dBlock(cin, cout, kernel, groups), Conv1dBlock(cout, cout, kernel, groups)
        self.film = nn.Sequential(nn.Mish(), nn.Linear(cond_dim, 2 * cout))
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()
        self.cout = cout

    def forward(self, x, cond):
        h = self.b1(x)
        scale, bias = self.film(cond).chunk(2, dim=-1)
        h = scale[..., None] * h + bias[..., None]
        return self.b2(h) + self.skip(x)


class ConditionalUnet1D(nn.Module):
    """A conditional 1-D temporal UNet over the chunk's time axis (channels = action dims)."""

    def __init__(self, horizon: int, action_dim: int, cond_dim: int, down_dims: tuple[int, ...] = (32, 64, 128),
                 kernel: int = 5, groups: int = 8, time_dim: int = 32):
        super().__init__()
        self.horizon, self.action_dim = horizon, action_dim
        self.time = time_encoder(time_dim)
        cdim = time_dim + cond_dim
        dims = [action_dim, *down_dims]
        self.down = nn.ModuleList()
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            last = i == len(down_dims) - 1
            self.down.append(nn.ModuleList([FiLMResBlock(a, b, cdim, kernel, groups), FiLMResBlock(b, b, cdim, kernel, groups),
                                            nn.Conv1d(b, b, 3, 2, 1) if not last else nn.Identity()]))
        mid = down_dims[-1]
        self.mid = nn.ModuleList([FiLMResBlock(mid, mid, cdim, kernel, groups), FiLMResBlock(mid, mid, cdim, kernel, groups)])
        self.up = nn.ModuleList()
        rev = list(reversed(down_dims))
        for i, (a, b) in enumerate(zip(rev[:-1], rev[1:])):
            self.up.append(nn.ModuleList([FiLMResBlock(2 * a, b, cdim, kernel, groups), FiLMResBlock(b, b, cdim, kernel, groups),
                                          nn.ConvTranspose1d(b, b, 4, 2, 1)]))
        self.final = nn.Sequential(Conv1dBlock(down_dims[0], down_dims[0], kernel, groups), nn.Conv1d(down_dims[0], action_dim, 1))

    def forward(self, x: torch.Tensor, timestep: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        B = x.shape[0]
        c = torch.cat([self.time(timestep), cond.reshape(B, -1)], dim=-1)
        h = x.transpose(1, 2)
        skips = []
        for r1, r2, down in self.down:
            h = r2(r1(h, c), c)
            skips.append(h)
            h = down(h)
        for m in self.mid:
            h = m(h, c)
        for r1, r2, up in self.up:
            s = skips.pop()
            h = torch.cat([h[..., : s.shape[-1]], s], dim=1)
            h = up(r2(r1(h, c), c))
        h = h[..., : x.shape[1]]
        return self.final(h).transpose(1, 2)


class VmapEnsemble(nn.Module):
    """``members`` independent networks built by ``factory()`` evaluated as one batched call (``torch.func``).

    Inputs are member-major as for `EnsembleChunkMLP`: rows ``[s B, (s + 1) B)`` belong to member ``s``. Every
    parameter is stored stacked, shape ``(members, *shape)``, so that elementwise optimisers, the EMA and
    `train.clip_per_member` treat the members as separate runs. `member(s)` returns member ``s`` as a plain
    network built by ``factory``. The networks must have no buffers (the UNet's GroupNorm has none).
    """

    def __init__(self, factory, members: int):
        super().__init__()
        if members < 1:
            raise ValueError(f"members must be >= 1, got {members}")
        from torch.func import stack_module_state

        nets = [factory() for _ in range(members)]
        if any(True for _ in nets[0].buffers()):
            raise ValueError("VmapEnsemble needs networks without buffers")
        params, _ = stack_module_state(nets)
        self.members, self._factory, self._names = members, factory, list(params)
        self.stacked = nn.ParameterList([nn.Parameter(params[n].detach().clone()) for n in self._names])
        self.horizon, self.action_dim = nets[0].horizon, nets[0].action_dim
        object.__setattr__(self, "_base", nets[0].to("meta"))     # structure only, not a registered submodule

    def forward(self, x: torch.Tensor, timestep: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        from torch.func import functional_call, vmap

        S = self.members
        if x.shape[0] % S:
            raise ValueError(f"an ensemble of {S} members needs a batch divisible by {S}, got {x.shape[0]}")
        B = x.shape[0] // S

        def one(p, xs, ts, cs):
            return functional_call(self._base, dict(zip(self._names, p)), (xs, ts, cs))

        out = vmap(one)(tuple(self.stacked), x.reshape(S, B, *x.shape[1:]), timestep.reshape(S, B),
                        cond.reshape(S, B, -1))
        return out.reshape(S * B, *out.shape[2:])

    @torch.no_grad()
    def member(self, s: int) -> nn.Module:
        if not 0 <= s < self.members:
            raise ValueError(f"member {s} out of range for {self.members} members")
        net = self._factory().to(self.stacked[0].device)
        own = dict(net.named_parameters())
        for name, p in zip(self._names, self.stacked):
            own[name].copy_(p[s])
        return net


def make_network(kind: str, horizon: int, action_dim: int, cond_dim: int, members: int = 1, **kw) -> nn.Module:
    """``kind``: ``"mlp"`` or ``"unet"``; ``members > 1``: independent seeds trained in one pass (the MLP as an
    `EnsembleChunkMLP`, the UNet as a `VmapEnsemble`)."""
    if members < 1:
        raise ValueError(f"members must be >= 1, got {members}")
    if kind == "mlp":
        if members > 1:
            return EnsembleChunkMLP(members, horizon, action_dim, cond_dim, **kw)
        return ChunkMLP(horizon, action_dim, cond_dim, **kw)
    if kind == "unet":
        kw = {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}
        if members > 1:
            return VmapEnsemble(lambda: ConditionalUnet1D(horizon, action_dim, cond_dim, **kw), members)
        return ConditionalUnet1D(horizon, action_dim, cond_dim, **kw)
    raise ValueError(f"unknown network kind {kind!r}; valid: 'mlp', 'unet'")
