"""EDM training (Karras et al. 2022): lognormal sigma, weighted denoising loss, EMA (brief §5.2).

The paper's objective (§2.1) ``min_theta sum_i int lambda_t E ||x_theta(x_t, t) - x0||^2 dt`` with EDM's
``lambda(sigma) = (sigma^2 + sigma_data^2) / (sigma sigma_data)^2`` and ``ln sigma ~ N(P_mean, P_std^2)``.
All evaluations use the EMA network (pitfall: features from the EMA net, in eval mode).

Device: ``train_edm(device=...)`` trains on that device with a generator living there (on CPU the draws are the
CPU draws of before, bit for bit); the loss curve stays on the device and is read back once, at the end, so a
training step costs no host synchronisation. :func:`heldout_loss` draws its fixed noise on the CPU and moves it to
the network's device, so its common random numbers are the same on every device.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from .model import EDMDenoiser


@dataclass
class TrainedEDM:
    """The raw and EMA networks after training, and the loss curve (one value per step)."""

    net: EDMDenoiser
    ema: EDMDenoiser
    losses: list[float] = field(default_factory=list)
    images_seen: int = 0


def edm_loss(net: EDMDenoiser, x0: torch.Tensor, generator: torch.Generator,
             p_mean: float = -1.2, p_std: float = 1.2) -> torch.Tensor:
    """EDM's weighted denoising loss for one batch (lognormal sigma), drawn from ``generator`` on its own device."""
    sigma = (torch.randn(x0.shape[0], generator=generator, device=generator.device) * p_std + p_mean).exp().to(x0)
    noise = torch.randn(x0.shape, generator=generator, device=generator.device).to(x0)
    s = sigma.view(-1, 1, 1, 1)
    weight = (s ** 2 + net.sigma_data ** 2) / (s * net.sigma_data) ** 2
    return (weight * (net(x0 + s * noise, sigma) - x0) ** 2).mean()


@torch.no_grad()
def heldout_loss(net: EDMDenoiser, images: torch.Tensor, *, n_draws: int = 4, seed: int = 0,
                 p_mean: float = -1.2, p_std: float = 1.2) -> float:
    """EDM's weighted denoising loss on held-out ``images`` with fixed noise draws (common random numbers:
    the same sigmas and noise at every checkpoint). The chapter's stand-in for FID (paper Fig. 3; App. D
    links ICR to the denoising loss)."""
    if images.ndim != 4 or images.shape[1:] != (1, 8, 8):
        raise ValueError(f"images must have shape (N, 1, 8, 8), got {tuple(images.shape)}")
    if n_draws < 1:
        raise ValueError(f"n_draws must be positive, got {n_draws}")
    gen = torch.Generator().manual_seed(seed)
    net.eval()
    images = images.to(next(net.parameters()).device)
    total = 0.0
    for _ in range(n_draws):
        total += float(edm_loss(net, images, gen, p_mean, p_std))
    return total / n_draws


def train_edm(
    images: torch.Tensor,
    *,
    steps: int,
    channels: Sequence[int] = (32, 64, 128),
    batch_size: int = 128,
    lr: float = 1e-3,
    ema_beta: float = 0.999,
    sigma_data: float | None = None,
    seed: int = 0,
    checkpoints: Sequence[int] = (),
    on_checkpoint: Callable[[int, EDMDenoiser], None] | None = None,
    device: torch.device | str = "cpu",
    progress: Callable | None = None,
) -> TrainedEDM:
    """Train an :class:`EDMDenoiser` on ``images`` ``(N, 1, 8, 8)``; batches are drawn with replacement.

    ``on_checkpoint(step, ema_net)`` is called after each step listed in ``checkpoints`` (the training
    dynamics experiments, paper Figs. 3-5). EMA decay warms up as ``min(beta, (1+t)/(10+t))``. On ``device`` the
    batch indices and noise come from a generator on that device (on CPU: the same draws as a plain CPU generator).
    """
    if images.ndim != 4 or images.shape[1:] != (1, 8, 8):
        raise ValueError(f"images must have shape (N, 1, 8, 8), got {tuple(images.shape)}")
    if not torch.isfinite(images).all():
        raise ValueError("images contain NaN or infinity")
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be positive, got {steps}, {batch_size}")
    bad = [c for c in checkpoints if not 1 <= c <= steps]
    if bad:
        raise ValueError(f"checkpoints {bad} outside [1, {steps}]")
    device = torch.device(device)
    torch.manual_seed(seed)
    gen = torch.Generator(device=device).manual_seed(seed)
    sd = float(images.std()) if sigma_data is None else float(sigma_data)
    net = EDMDenoiser(sd, tuple(channels)).to(device)
    ema = copy.deepcopy(net).eval().requires_grad_(False)
    opt = torch.optim.Adam(net.parameters(), lr=lr, foreach=True)
    ema_params, net_params = list(ema.parameters()), list(net.parameters())
    data = images.to(device)
    marks = set(int(c) for c in checkpoints)
    losses: list[torch.Tensor] = []  # kept on the device: read back once, after training
    it = range(1, steps + 1)
    if progress is not None:
        it = progress(it, desc="EDM training", total=steps)
    for step in it:
        idx = torch.randint(0, data.shape[0], (batch_size,), generator=gen, device=device)
        loss = edm_loss(net, data[idx], gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        beta = min(ema_beta, (1 + step) / (10 + step))
        with torch.no_grad():
            if device.type == "cuda":  # one fused launch instead of one per tensor (the CPU path is unchanged)
                torch._foreach_lerp_(ema_params, net_params, 1 - beta)
            else:
                for e, p in zip(ema_params, net_params):
                    e.lerp_(p, 1 - beta)
        losses.append(loss.detach())
        if step in marks and on_checkpoint is not None:
            on_checkpoint(step, ema)
    return TrainedEDM(net, ema, torch.stack(losses).cpu().tolist(), steps * batch_size)
