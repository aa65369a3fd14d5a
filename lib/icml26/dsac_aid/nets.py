"""Batched networks: E independent MLPs (ensemble members x seeds) evaluated in one call.

Two network families of the official code (GOPS `gops/apprfunc/mlp.py`):

* the released Gym-MuJoCo configurations (`example_train/dsacaid/gym-mujoco/*`, commit 1ea49cae) use the plain
  `ActionValueDistri` / `StochaPolicy`: Linear -> GELU stacks with PyTorch's default Linear initialisation
  (``activation="gelu", init="torch", norm=False``, the library's default);
* the generic / DMC script (commit 640e85a4) uses `RegularizedActionValueDistri` / `RegularizedStochaPolicy`:
  Linear -> GroupNorm(16 groups, no affine) -> ReLU with orthogonal init (gain sqrt 2, heads gain 1)
  (``activation="relu", init="orthogonal", norm=True``). On a 1-D input GroupNorm without affine makes the
  first layer's output scale-free (x = 0.3 and x = 0.9 give nearly the same features at initialisation), one
  reason the toy follows the Gym-MuJoCo family.

The E copies hold their weights stacked, ``W: (E, in, out)``, and run as one `torch.baddbmm`: the same
arithmetic as `torch.func.stack_module_state` + `vmap` over E `nn.Sequential`s (tests check it), without the
functional-call overhead. ``activation="relu", norm=False`` is the plain ReLU MLP of SB3 (equivalence tests).
"""
from __future__ import annotations

import math

import torch
from torch import nn

LOG_STD_BOUNDS = {"dsac": (-20.0, 0.5), "sb3": (-20.0, 2.0)}
ACTIVATIONS = {"relu": torch.relu, "gelu": torch.nn.functional.gelu}


class BatchedMLP(nn.Module):
    """E MLPs ``in_dim -> hidden... -> out_dim`` applied to inputs of shape (E, B, in_dim)."""

    def __init__(self, n_models: int, in_dim: int, hidden: tuple[int, ...], out_dim: int, *, norm: bool = False,
                 group_size: int = 16, generator: torch.Generator | None = None, head_gain: float = 1.0,
                 activation: str = "gelu", init: str = "torch"):
        super().__init__()
        if n_models < 1 or in_dim < 1 or out_dim < 1 or any(h < 1 for h in hidden):
            raise ValueError(f"BatchedMLP: sizes must be positive, got E={n_models}, in={in_dim}, hidden={hidden}, out={out_dim}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
        if init not in ("torch", "orthogonal"):
            raise ValueError(f"init must be 'torch' or 'orthogonal', got {init!r}")
        self.n_models, self.norm, self.activation = n_models, norm, activation
        self._act = ACTIVATIONS[activation]
        # the code's GroupNorm(16 groups) on 256 units = groups of 16 units; narrower nets keep the group size
        self.groups = [max(1, h // group_size) if h % group_size == 0 else 1 for h in hidden]
        dims = (in_dim, *hidden, out_dim)
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for k, (i, o) in enumerate(zip(dims[:-1], dims[1:])):
            w = torch.empty(n_models, o, i)
            if init == "orthogonal":
                gain = head_gain if k == len(dims) - 2 else math.sqrt(2.0)
                for e in range(n_models):
                    nn.init.orthogonal_(w[e], gain=gain, generator=generator)
                b = torch.zeros(n_models, 1, o)
            else:   # nn.Linear.reset_parameters: kaiming_uniform(a = sqrt 5) = U(+-1/sqrt(fan_in)), bias likewise
                bound = 1.0 / math.sqrt(i)
                w.uniform_(-bound, bound, generator=generator)
                b = torch.empty(n_models, 1, o).uniform_(-bound, bound, generator=generator)
            self.weights.append(nn.Parameter(w.transpose(1, 2).contiguous()))
            self.biases.append(nn.Parameter(b))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[0] != self.n_models:
            raise ValueError(f"BatchedMLP expects input (E={self.n_models}, B, in), got {tuple(x.shape)}")
        n = len(self.weights)
        for k in range(n):
            x = torch.baddbmm(self.biases[k], x, self.weights[k])
            if k < n - 1:
                if self.norm:
                    E, B, H = x.shape
                    g = self.groups[k]
                    x = nn.functional.group_norm(x.reshape(E * B, H), g)  # no affine, eps 1e-5 like nn.GroupNorm
                    x = x.reshape(E, B, H)
                x = self._act(x)
        return x

    @torch.no_grad()
    def load_from_linears(self, member: int, linears: list[nn.Linear]) -> None:
        """Copy the weights of a plain `nn.Linear` stack (e.g. an SB3 network) into member `member`."""
        if len(linears) != len(self.weights):
            raise ValueError(f"need {len(self.weights)} Linear layers, got {len(linears)}")
        for k, lin in enumerate(linears):
            self.weights[k][member].copy_(lin.weight.T)
            self.biases[k][member, 0].copy_(lin.bias)

    def member_as_sequential(self, member: int) -> nn.Sequential:
        """Member `member` as an ordinary `nn.Sequential` (Linear, [GroupNorm], ReLU, ..., Linear)."""
        layers: list[nn.Module] = []
        n = len(self.weights)
        for k in range(n):
            w = self.weights[k][member].detach()
            lin = nn.Linear(w.shape[0], w.shape[1])
            with torch.no_grad():
                lin.weight.copy_(w.T)
                lin.bias.copy_(self.biases[k][member, 0])
            layers.append(lin)
            if k < n - 1:
                if self.norm:
                    layers.append(nn.GroupNorm(self.groups[k], w.shape[1], affine=False))
                layers.append(nn.GELU() if self.activation == "gelu" else nn.ReLU())
        return nn.Sequential(*layers)


def polyak_(target: nn.Module, online: nn.Module, tau: float) -> None:
    """target <- (1 - tau) target + tau online, in place (Polyak averaging, tau = 0.005)."""
    with torch.no_grad():
        for t, o in zip(target.parameters(), online.parameters()):
            t.lerp_(o, tau)
