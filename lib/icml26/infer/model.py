"""Models of the INFER chapter (brief §2.1, §5.2): pure torch, Fourier features instead of tcnn hash grids.

* :class:`InferField` -- INFER-lite: per-point frequency-dependent attenuation delta(f, p) = sigma + j beta
  and re-transmitted signal S(f, p, v), rendered along rays from the receiver (brief §2.1, eqs. for
  alpha_i, T_i, H_ray), followed by the causal (time-of-flight) filter. ``variant="avr"`` is AVR-lite:
  frequency-independent scalar sigma and beta = 0 (the hybrid AVR renderer, Lan et al. 2024).
* :class:`FreqMLP` -- FD-MLP: gamma(x_r) -> [Re, Im]^F, a frequency field without rendering.
* :class:`TimeMLP` -- TD-MLP: gamma(x_r) -> h[0:N], the NAF/INRAS-like time-domain baseline.

One source is simulated, so the source position / orientation inputs of the paper's network are
constant and omitted.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .data import SPEED_OF_SOUND, check_inside


class FourierFeatures(nn.Module):
    """gamma(x) = [x, sin(2^k pi x), cos(2^k pi x)]_{k < n_octaves} for x in roughly [-1, 1]^d."""

    def __init__(self, dim: int, n_octaves: int):
        super().__init__()
        self.register_buffer("scales", (2.0 ** torch.arange(n_octaves)) * math.pi)
        self.out_dim = dim * (1 + 2 * n_octaves)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x[..., None] * self.scales
        return torch.cat([x, torch.sin(z).flatten(-2), torch.cos(z).flatten(-2)], dim=-1)


def mlp(d_in: int, width: int, depth: int, d_out: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    d = d_in
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.ReLU()]
        d = width
    layers.append(nn.Linear(d, d_out))
    return nn.Sequential(*layers)


class _ReceiverModel(nn.Module):
    """Shared plumbing: receiver normalisation and input checks."""

    def __init__(self, room, n_fft: int):
        super().__init__()
        self.room = tuple(float(r) for r in room)
        self.n_fft = int(n_fft)
        self.n_freq = self.n_fft // 2 + 1
        self.register_buffer("_room", torch.tensor(self.room, dtype=torch.float32))

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * x / self._room - 1

    def check_receivers(self, receivers) -> torch.Tensor:
        if isinstance(receivers, torch.Tensor):
            check_inside(receivers.detach().cpu().numpy(), self.room)
            return receivers.float()
        return torch.as_tensor(check_inside(receivers, self.room), dtype=torch.float32)


class FreqMLP(_ReceiverModel):
    """FD-MLP: MLP(gamma(x_r)) -> [Re H, Im H] on the one-sided grid (Im zeroed at DC and Nyquist)."""

    kind = "frequency"

    def __init__(self, room, n_fft: int, width: int = 128, depth: int = 4, n_octaves: int = 6):
        super().__init__(room, n_fft)
        self.enc = FourierFeatures(3, n_octaves)
        self.net = mlp(self.enc.out_dim, width, depth, 2 * self.n_freq)

    def forward(self, receivers: torch.Tensor) -> torch.Tensor:
        out = self.net(self.enc(self.normalise(receivers)))
        re, im = out[..., : self.n_freq], out[..., self.n_freq:]
        im = torch.cat([im[..., :1] * 0, im[..., 1:-1], im[..., -1:] * 0], dim=-1)
        return torch.complex(re, im)


class TimeMLP(_ReceiverModel):
    """TD-MLP: MLP(gamma(x_r)) -> h[0:N]; its frequency response is rfft(h)."""

    kind = "time"

    def __init__(self, room, n_fft: int, width: int = 128, depth: int = 4, n_octaves: int = 6):
        super().__init__(room, n_fft)
        self.enc = FourierFeatures(3, n_octaves)
        self.net = mlp(self.enc.out_dim, width, depth, self.n_fft)

    def time_response(self, receivers: torch.Tensor) -> torch.Tensor:
        return self.net(self.enc(self.normalise(receivers)))

    def forward(self, receivers: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfft(self.time_response(receivers), n=self.n_fft, dim=-1)


def _exclusive_cumsum(x: torch.Tensor) -> torch.Tensor:
    """sum_{j<i} x_j along the sample axis (-2); the last sample (du = 1e10) never enters a sum."""
    return torch.cat([torch.zeros_like(x[..., :1, :]), torch.cumsum(x[..., :-1, :], dim=-2)], dim=-2)


def sphere_directions(n_azi: int, n_ele: int, azimuth_offset: float = 0.0) -> torch.Tensor:
    """n_azi x n_ele directions uniform in solid angle (equal-area elevation bands) plus the two poles."""
    if n_azi < 1 or n_ele < 1:
        raise ValueError("need at least one azimuth and one elevation")
    z = 1 - 2 * (torch.arange(n_ele, dtype=torch.float32) + 0.5) / n_ele
    phi = 2 * math.pi * torch.arange(n_azi, dtype=torch.float32) / n_azi + azimuth_offset
    zz, pp = torch.meshgrid(z, phi, indexing="ij")
    r = torch.sqrt(1 - zz ** 2)
    dirs = torch.stack([r * torch.cos(pp), r * torch.sin(pp), zz], -1).reshape(-1, 3)
    poles = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]])
    return torch.cat([dirs, poles], 0)


class InferField(_ReceiverModel):
    """INFER-lite: a receiver-centred acoustic volume renderer with per-frequency complex attenuation.

    Network (brief §2.1): ``h = MLP_enc(gamma(p))``; attenuation head -> sigma(f) = softplus + 1e-6 >= 0
    (absorption) and beta(f) (phase-velocity change); signal head on [relu(h), gamma(v), gamma(p)]
    -> S(f, p, v). Rendering along each ray with samples d_i, du_i = d_{i+1} - d_i (last 1e10):

        alpha_i = 1 - exp(-sigma_i du_i),  T_i = prod_{j<i}(1 - alpha_j) exp(j sum_{j<i} beta_j du_j),
        H_ray(f) = sum_i S_i(f) exp(-j 2 pi f d_i / c) alpha_i T_i,    H = mean over rays,

    then the causal filter: h = irfft(H); h[n < n_mask(x_r)] = 0; H = rfft(h), with n_mask the
    direct-sound arrival (pyroomacoustics delay + time of flight) minus ``mask_margin`` samples.
    ``variant="avr"``: sigma is one frequency-independent scalar per point and beta = 0 (AVR-lite).
    """

    kind = "field"

    def __init__(self, room, n_fft: int, fs: int, speaker, width: int = 64, depth: int = 3,
                 n_octaves_p: int = 5, n_octaves_v: int = 2, n_azi: int = 4, n_ele: int = 3,
                 n_samples: int = 12, near: float = 0.05, far: float = 2.5, variant: str = "infer",
                 arrival_offset: float = 0.0, mask_margin: int = 3, causal: bool = True):
        super().__init__(room, n_fft)
        if variant not in ("infer", "avr"):
            raise ValueError(f"variant must be 'infer' or 'avr', got {variant!r}")
        if not 0 < near < far:
            raise ValueError(f"need 0 < near < far, got near={near}, far={far}")
        self.variant, self.fs = variant, int(fs)
        self.n_azi, self.n_ele, self.n_samples = int(n_azi), int(n_ele), int(n_samples)
        self.near, self.far = float(near), float(far)
        self.arrival_offset, self.mask_margin, self.causal = float(arrival_offset), int(mask_margin), bool(causal)
        self.register_buffer("speaker", torch.as_tensor(np.asarray(speaker, dtype=np.float32)).reshape(-1, 3))
        extent = torch.tensor(self.room, dtype=torch.float32) / 2 + far
        self.register_buffer("_centre", torch.tensor(self.room, dtype=torch.float32) / 2)
        self.register_buffer("_extent", extent)
        self.enc_p = FourierFeatures(3, n_octaves_p)
        self.enc_v = FourierFeatures(3, n_octaves_v)
        self.trunk = mlp(self.enc_p.out_dim, width, depth - 1, width)
        n_att = 2 * self.n_freq if variant == "infer" else 1
        self.att_head = nn.Linear(width, n_att)
        self.sig_head = mlp(width + self.enc_v.out_dim + self.enc_p.out_dim, width, 1, 2 * self.n_freq)
        F = self.n_freq
        self.register_buffer("freqs", torch.arange(F, dtype=torch.float32) * self.fs / self.n_fft)
        im_mask = torch.ones(F)
        im_mask[0] = im_mask[-1] = 0.0
        self.register_buffer("_im_mask", im_mask)
        self.last_points: dict[str, torch.Tensor] = {}

    # ------------------------------------------------------------------------------------------------
    def _fields(self, points: torch.Tensor, view: torch.Tensor):
        g_p = self.enc_p((points - self._centre) / self._extent)
        h = self.trunk(g_p)
        att = self.att_head(torch.relu(h))
        F = self.n_freq
        if self.variant == "infer":
            sigma = nn.functional.softplus(att[..., :F]) + 1e-6
            beta = att[..., F:]
        else:
            sigma = (nn.functional.softplus(att) + 1e-6).expand(*att.shape[:-1], F)
            beta = torch.zeros_like(sigma)
        s = self.sig_head(torch.cat([torch.relu(h), self.enc_v(view), g_p], -1))
        re, im = s[..., :F], s[..., F:] * self._im_mask
        return sigma, beta, re, im

    def point_fields(self, points: torch.Tensor, view: torch.Tensor):
        """(sigma, beta, S) at world points [..., 3] seen along ``view`` [..., 3]: shapes [..., F] each,
        S complex with Im S = 0 at DC and Nyquist."""
        sigma, beta, re, im = self._fields(points, view)
        return sigma, beta, torch.complex(re, im)

    def sample_distances(self) -> torch.Tensor:
        return torch.linspace(self.near, self.far, self.n_samples, device=self.freqs.device)

    def arrival(self, receivers: torch.Tensor) -> torch.Tensor:
        """Direct-sound arrival in samples: ``arrival_offset`` (the pra delay) + fs * min_d |x_r - x_d| / c."""
        d = torch.cdist(receivers, self.speaker).min(-1).values
        return self.arrival_offset + self.fs * d / SPEED_OF_SOUND

    def mask_start(self, receivers: torch.Tensor) -> torch.Tensor:
        return torch.floor(self.arrival(receivers)).long() - self.mask_margin

    def render(self, receivers: torch.Tensor, azimuth_offset: float = 0.0, keep_points: bool = False) -> torch.Tensor:
        """The rendered response before the causal filter, [B, F] complex."""
        dirs = sphere_directions(self.n_azi, self.n_ele, azimuth_offset).to(receivers.device)   # [R, 3]
        d = self.sample_distances()                                                          # [S]
        pts = receivers[:, None, None, :] + dirs[None, :, None, :] * d[None, None, :, None]   # [B, R, S, 3]
        view = (-dirs)[None, :, None, :].expand_as(pts)
        sigma, beta, s_re, s_im = self._fields(pts, view)                                     # [B, R, S, F]
        du = torch.cat([d[1:] - d[:-1], torch.full((1,), 1e10, device=d.device)])[:, None]     # [S, 1]
        # real arithmetic: |T_i| = exp(-sum_{j<i} sigma_j du_j), arg T_i = sum_{j<i} beta_j du_j
        sdu = sigma * du
        alpha = -torch.expm1(-sdu)
        amp = alpha * torch.exp(-_exclusive_cumsum(sdu))
        phase = _exclusive_cumsum(beta * du) - (2 * math.pi / SPEED_OF_SOUND) * d[:, None] * self.freqs
        c, s_ = torch.cos(phase), torch.sin(phase)
        re = (amp * (s_re * c - s_im * s_)).sum(-2).mean(-2)
        im = (amp * (s_re * s_ + s_im * c)).sum(-2).mean(-2)
        H = torch.complex(re, im)
        if keep_points:
            self.last_points = {"sigma": sigma.detach(), "beta": beta.detach()}
        self._sigma_beta = (sigma, beta)
        return H

    def causal_filter(self, H: torch.Tensor, receivers: torch.Tensor) -> torch.Tensor:
        """h = irfft(H); zero the samples before the direct sound (minus the margin); back to rfft."""
        h = torch.fft.irfft(H, n=self.n_fft, dim=-1)
        n = torch.arange(self.n_fft, device=h.device)
        keep = (n[None, :] >= self.mask_start(receivers)[:, None]).to(h.dtype)
        return torch.fft.rfft(h * keep, n=self.n_fft, dim=-1)

    def forward(self, receivers: torch.Tensor, azimuth_offset: float = 0.0) -> torch.Tensor:
        H = self.render(receivers, azimuth_offset)
        return self.causal_filter(H, receivers) if self.causal else H

    def sampled_sigma_beta(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(sigma, beta) [P, F] at the points of the last render (with gradients, for the KK loss)."""
        sigma, beta = self._sigma_beta
        F = sigma.shape[-1]
        return sigma.reshape(-1, F), beta.reshape(-1, F)
