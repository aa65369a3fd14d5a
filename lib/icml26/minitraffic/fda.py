"""Frequency-domain Stability Augmentation (FDA), the paper's Sec. 3 (Eqs. FDA-1..3), and the released code's.

Paper: with the DFT over the context window, X~(f) = A(f) e^{i theta(f)}, perturb only the dominant bins
Gamma(f) = 1[A(f)^2 > tau max_f' A(f')^2] with clipped amplitude noise |delta_A| <= lambda max A and
phase noise delta_theta ~ N(0, sigma_theta^2):

    X~_d(f) = (A(f) + Gamma(f) delta_A(f)) exp(i (theta(f) + Gamma(f) delta_theta(f))),  X_d = Re(IDFT(X~_d)).

`rfft`/`irfft` keep the output real exactly; the DC bin (the level, which RevIN removes anyway) is left
untouched. D independent draws give D pseudo-lanes per road. The relative distortion obeys
||X_d - X||^2 / ||X||^2 < lambda^2 / tau (Theory: Parseval plus the phase expansion).

Released code (`augment_patches_freq_domain`): `fft` along each length-P patch, `+ 0.01 randn` on every
complex bin (no clip, no Gamma mask, no phase term), `ifft(...).real`, also at test time: i.i.d. white
noise of variance sigma^2 / (2P) per sample (Theory T3).
"""
from __future__ import annotations

import torch
from torch import nn


def _check_unit_open(name: str, value: float) -> None:
    if not (0.0 < float(value) < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {value}")


class FDA(nn.Module):
    """The paper's FDA: ``forward(x) -> (..., D, T)`` replicas of ``x`` of shape ``(..., T)``."""

    def __init__(self, lam: float = 0.1, tau: float = 0.05, phase_sigma: float = 0.1, replicas: int = 5,
                 amp_sigma: float | None = None):
        super().__init__()
        _check_unit_open("lambda", lam)
        _check_unit_open("tau", tau)
        if replicas < 1 or int(replicas) != replicas:
            raise ValueError(f"replicas D must be an integer >= 1, got {replicas}")
        if phase_sigma < 0:
            raise ValueError(f"phase_sigma must be >= 0, got {phase_sigma}")
        self.lam, self.tau, self.phase_sigma, self.replicas = float(lam), float(tau), float(phase_sigma), int(replicas)
        self.amp_sigma = lam / 2 if amp_sigma is None else float(amp_sigma)   # in units of max A

    def forward(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        if x.ndim < 1 or x.shape[-1] < 2:
            raise ValueError(f"FDA needs a time axis of length >= 2, got shape {tuple(x.shape)}")
        if torch.isnan(x).any():
            raise ValueError("FDA input contains NaN (fill missing readings first)")
        T = x.shape[-1]
        spec = torch.fft.rfft(x.unsqueeze(-2).expand(*x.shape[:-1], self.replicas, T), dim=-1)
        amp, phase = spec.abs(), spec.angle()
        ac = amp[..., 1:]                                           # DC left untouched
        amax = ac.amax(dim=-1, keepdim=True)
        gamma = (ac**2 > self.tau * amax**2).to(x.dtype)
        eps = self.lam * amax
        noise = torch.randn(ac.shape, generator=generator, dtype=x.dtype, device=x.device)
        d_amp = torch.clamp(noise * self.amp_sigma * amax, -eps, eps)
        d_phase = torch.randn(ac.shape, generator=generator, dtype=x.dtype, device=x.device) * self.phase_sigma
        new_amp = torch.cat([amp[..., :1], torch.clamp(ac + gamma * d_amp, min=0.0)], dim=-1)
        new_phase = torch.cat([phase[..., :1], phase[..., 1:] + gamma * d_phase], dim=-1)
        return torch.fft.irfft(torch.polar(new_amp, new_phase), n=T, dim=-1)


def relative_distortion(x: torch.Tensor, xd: torch.Tensor) -> torch.Tensor:
    """||x_d - x||^2 / ||x||^2 along the last axis (x broadcast against the replica axis of xd)."""
    if x.ndim == xd.ndim - 1:
        x = x.unsqueeze(-2)
    return ((xd - x) ** 2).sum(-1) / (x**2).sum(-1)


def ac_part(x: torch.Tensor) -> torch.Tensor:
    """x minus its mean over the last axis (the part FDA may change: the DC bin is kept)."""
    return x - x.mean(dim=-1, keepdim=True)


def released_fda(patches: torch.Tensor, sigma: float = 0.01, generator: torch.Generator | None = None) -> torch.Tensor:
    """The released code's FDA on patches ``(..., P)``: fft, + sigma randn on every complex bin, ifft().real."""
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    spec = torch.fft.fft(patches.to(torch.complex128 if patches.dtype == torch.float64 else torch.complex64), dim=-1)
    noise = torch.complex(torch.randn(spec.shape, generator=generator, dtype=patches.dtype),
                          torch.randn(spec.shape, generator=generator, dtype=patches.dtype)) / (2 ** 0.5)
    # torch.randn_like on a complex tensor draws real and imaginary parts with variance 1/2 each
    return torch.fft.ifft(spec + sigma * noise, dim=-1).real
