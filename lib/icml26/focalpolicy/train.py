"""Training loop of DP3's recipe: AdamW, cosine schedule with warm-up and an EMA copy, all via ``diffusers``.

``config/focalpolicy.yaml``: AdamW (lr 1e-4, betas (0.95, 0.999), wd 1e-6), cosine with 500 warm-up steps,
grad-clip 1.0 (not used by DP3's default loop; kept at 1.0 here), EMA (power 0.75, max 0.9999). The
learning rate, warm-up and step count are preset knobs: the paper runs 3000 epochs of ~14 batches (~4e4 steps)
at lr 1e-4; the presets run fewer steps at a larger learning rate (the chapter compares the budgets). The
warm-up is capped at a tenth of the steps (``min(warmup, steps // 10)``) so that a short run still decays.

Device-aware: the policy is moved to ``device`` (default `icml26.device()`); batches are drawn on the CPU
from a CPU generator and moved, so a CPU run gives the same numbers whatever the machine.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from diffusers.optimization import get_scheduler
from diffusers.training_utils import EMAModel

from .data import ChunkDataset
from .policies import ChunkPolicy


@dataclass
class TrainResult:
    policy: ChunkPolicy           # the EMA weights (used for evaluation, as DP3)
    losses: list[float]
    evals: dict[int, dict] = field(default_factory=dict)


def clip_per_member(policy: ChunkPolicy, max_norm: float) -> None:
    """``clip_grad_norm_`` for each seed of an ensemble separately (the usual clip for one member)."""
    params = [p for p in policy.parameters() if p.grad is not None]
    if policy.members == 1:
        torch.nn.utils.clip_grad_norm_(params, max_norm)
        return
    sq = sum(p.grad.reshape(policy.members, -1).pow(2).sum(1) for p in params)
    coef = (max_norm / (sq.sqrt() + 1e-6)).clamp(max=1.0)
    for p in params:
        p.grad.mul_(coef.reshape(-1, *([1] * (p.grad.ndim - 1))))


def train_policy(policy: ChunkPolicy, data: ChunkDataset, steps: int, seed: int, batch_size: int = 128,
                 lr: float = 1e-4, weight_decay: float = 1e-6, warmup: int = 500, grad_clip: float = 1.0,
                 eval_every: dict[int, Callable[[ChunkPolicy], dict]] | None = None,
                 device: torch.device | str | None = None) -> TrainResult:
    """Train ``policy`` for ``steps`` steps on ``data``; ``eval_every``: ``{step: fn(ema_policy) -> dict}``.

    A seed ensemble (``policy.members > 1``, `networks.EnsembleChunkMLP`) draws ``batch_size`` samples per
    member; `TrainResult.policy` is then the EMA ensemble (take members with ``policy.member(s)``).
    """
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got {steps}, {batch_size}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    if device is None:
        from icml26 import device as pick

        device = pick()
    policy.to(device)
    policy.fit_normalizers(data.obs.to(device), data.action.to(device))
    opt = torch.optim.AdamW(policy.parameters(), lr=lr, betas=(0.95, 0.999), weight_decay=weight_decay)
    sched = get_scheduler("cosine", opt, num_warmup_steps=min(warmup, steps // 10), num_training_steps=steps)
    ema_policy = copy.deepcopy(policy).eval()
    ema = EMAModel(policy.parameters(), power=0.75, decay=0.9999, min_decay=0.0,      # decay = DP3's max_value
                   use_ema_warmup=True, inv_gamma=1.0, foreach=True)
    members = policy.members
    losses, evals = [], {}
    eval_every = eval_every or {}
    for step in range(1, steps + 1):
        loss, _ = policy.compute_loss(data.batch(batch_size * members, gen), generator=gen)
        opt.zero_grad(set_to_none=True)
        (loss * members).backward()          # the sum of the members' mean losses: each gets its own gradient
        clip_per_member(policy, grad_clip)
        opt.step()
        sched.step()
        ema.step(policy.parameters())
        losses.append(float(loss.detach()))
        if step in eval_every:
            ema.copy_to(ema_policy.parameters())
            evals[step] = eval_every[step](ema_policy)
    ema.copy_to(ema_policy.parameters())
    return TrainResult(ema_policy, losses, evals)
