"""EDM's deterministic Heun sampler (Karras et al. 2022, Algorithm 1) and the empirical optimal denoiser.

The empirical optimal denoiser ``D*(x; sigma) = sum_i softmax_i(-||x - x_i||^2 / 2 sigma^2) x_i`` is the
exact minimiser of the denoising loss on a finite training set: sampling with it reproduces training
images, which makes it the sanity check of the memorisation metric (brief §5.3).
"""
from __future__ import annotations

from collections.abc import Callable

import torch


def edm_sigmas(steps: int = 18, sigma_min: float = 0.002, sigma_max: float = 80.0, rho: float = 7.0) -> torch.Tensor:
    """EDM's time steps ``(s_max^(1/rho) + i/(n-1) (s_min^(1/rho) - s_max^(1/rho)))^rho``, then 0."""
    if steps < 2:
        raise ValueError(f"steps must be >= 2, got {steps}")
    if not 0 < sigma_min < sigma_max:
        raise ValueError(f"need 0 < sigma_min < sigma_max, got {sigma_min}, {sigma_max}")
    i = torch.arange(steps, dtype=torch.float64)
    s = (sigma_max ** (1 / rho) + i / (steps - 1) * (sigma_min ** (1 / rho) - sigma_max ** (1 / rho))) ** rho
    return torch.cat([s, torch.zeros(1, dtype=torch.float64)])


@torch.no_grad()
def heun_sample(
    denoise: Callable[[torch.Tensor, float], torch.Tensor],
    n: int,
    *,
    steps: int = 18,
    sigma_min: float = 0.002,
    sigma_max: float = 80.0,
    rho: float = 7.0,
    shape: tuple[int, ...] = (1, 8, 8),
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """``n`` samples by the deterministic 2nd-order Heun ODE solver (2 steps - 1 network evaluations)."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    t = edm_sigmas(steps, sigma_min, sigma_max, rho).tolist()
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn((n, *shape), generator=gen, dtype=torch.float64) * t[0]).float().to(device)
    for i in range(steps):
        t_cur, t_next = t[i], t[i + 1]
        d_cur = (x - denoise(x, t_cur)) / t_cur
        x_next = x + (t_next - t_cur) * d_cur
        if t_next > 0:
            d_next = (x_next - denoise(x_next, t_next)) / t_next
            x_next = x + (t_next - t_cur) * (0.5 * d_cur + 0.5 * d_next)
        x = x_next
    return x


def empirical_optimal_denoiser(train: torch.Tensor) -> Callable[[torch.Tensor, float], torch.Tensor]:
    """``D*(x; sigma)``: the posterior mean of ``x0`` under the empirical training distribution."""
    if train.ndim < 2 or train.shape[0] < 1:
        raise ValueError("train must be a non-empty batch of images")
    flat = train.reshape(train.shape[0], -1).double()

    def denoise(x: torch.Tensor, sigma: float) -> torch.Tensor:
        xf = x.reshape(x.shape[0], -1).double()
        d2 = torch.cdist(xf, flat) ** 2
        w = torch.softmax(-d2 / (2 * float(sigma) ** 2), dim=1)
        return (w @ flat).reshape(x.shape).to(x.dtype)

    return denoise
