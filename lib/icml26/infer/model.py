"""Models of the INFER chapter (brief §2.1, §5.2): pure torch, Fourier features instead of tcnn hash grids.

The paper's equation numbers could not be retrieved (only its abstract and a vendored copy of its
renderer in the first author's follow-up repository are public); docstrings cite the research brief
``papers/infer.md`` instead.

* :class:`InferField` -- INFER-lite: per-point frequency-dependent attenuation delta(f, p) = sigma + j beta
  and re-transmitted spectrum S(f, p, v), rendered along rays from the receiver and summed over rays
  (brief §2.1), followed by the causal (time-of-flight) filter. ``variant="scalar"`` is the ablation with
  one frequency-independent sigma per point and beta = 0 (INFER without frequency-dependent attenuation).
* :class:`AVRField` -- AVR-lite, the hybrid baseline (Lan et al., NeurIPS 2024, official renderer
  ``AVRRender``/``acoustic_render``): per-point *time* signals s_p[n], masked before the source's sound
  reaches the point, moved to the frequency domain, delayed by the point-to-receiver time of flight and
  volume-rendered with a scalar attenuation; trained on the time signal.
* :class:`FreqMLP` -- FD-MLP: gamma(x_r) -> [Re, Im]^F, a frequency field without rendering; with
  ``causal=True`` it gets INFER's time-of-flight mask (FD-MLP + ToF mask).
* :class:`TimeMLP` -- TD-MLP: gamma(x_r) -> h[0:N], the INRAS-like time-domain baseline.
* :class:`NAFField` -- NAF-lite: NAF's log-magnitude STFT field with local grid features (Luo et al., NeurIPS
  2022), phase by Griffin-Lim: the time-frequency member of the paper's "time-domain" baseline family.

Every model normalises positions by the room box, (x - centre) / (room / 2), so that with 6 octaves of
Fourier features the finest period is room / 32 (0.08 / 0.05 / 0.04 m for the default cabin), below a
quarter wavelength at the top of the modelled band (0.095 m at 900 Hz). One source is simulated, so the
source position / orientation inputs of the paper's network are constant and omitted.
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
        if n_octaves < 0:
            raise ValueError(f"n_octaves must be >= 0, got {n_octaves}")
        self.register_buffer("scales", (2.0 ** torch.arange(n_octaves)) * math.pi)
        self.n_octaves = int(n_octaves)
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


def finest_period(room, n_octaves: int) -> np.ndarray:
    """Finest spatial period (m, per axis) of :class:`FourierFeatures` on room-box-normalised positions."""
    if n_octaves < 1:
        raise ValueError("need at least one octave")
    return np.asarray(room, dtype=float) / 2 ** (n_octaves - 1)


class _ReceiverModel(nn.Module):
    """Shared plumbing: room-box normalisation, input checks, the optional time-of-flight mask."""

    def __init__(self, room, n_fft: int, fs: int | None = None, speaker=None, arrival_offset: float = 0.0,
                 mask_margin: int = 3):
        super().__init__()
        self.room = tuple(float(r) for r in room)
        if len(self.room) != 3 or min(self.room) <= 0:
            raise ValueError(f"room must be three positive lengths, got {room}")
        if not isinstance(n_fft, (int, np.integer)) or n_fft < 8 or n_fft % 2:
            raise ValueError(f"n_fft must be an even integer >= 8, got {n_fft!r}")
        self.n_fft = int(n_fft)
        self.n_freq = self.n_fft // 2 + 1
        self.fs = None if fs is None else int(fs)
        self.arrival_offset, self.mask_margin = float(arrival_offset), int(mask_margin)
        self.register_buffer("_centre", torch.tensor(self.room, dtype=torch.float32) / 2)
        self.register_buffer("_half", torch.tensor(self.room, dtype=torch.float32) / 2)
        spk = torch.zeros(1, 3) if speaker is None else torch.as_tensor(np.asarray(speaker, dtype=np.float32)).reshape(-1, 3)
        self.register_buffer("speaker", spk)
        self._has_speaker = speaker is not None

    @property
    def device(self) -> torch.device:
        return self._centre.device

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        """Room-box normalisation: the cabin maps to [-1, 1]^3 (points outside it beyond)."""
        return (x - self._centre) / self._half

    def check_receivers(self, receivers) -> torch.Tensor:
        """Receivers [M, 3] inside the room, as a float32 tensor on the model's device."""
        arr = receivers.detach().cpu().numpy() if isinstance(receivers, torch.Tensor) else receivers
        return torch.as_tensor(check_inside(arr, self.room), dtype=torch.float32, device=self.device)

    # time-of-flight mask (INFER's causal filter; FD-MLP + ToF mask) --------------------------------
    def arrival(self, receivers: torch.Tensor) -> torch.Tensor:
        """Direct-sound arrival in samples: ``arrival_offset`` (the pra delay) + fs * min_d |x_r - x_d| / c."""
        if not self._has_speaker or self.fs is None:
            raise ValueError("this model was built without speaker positions and fs: it has no time-of-flight mask")
        d = torch.cdist(receivers, self.speaker).min(-1).values
        return self.arrival_offset + self.fs * d / SPEED_OF_SOUND

    def mask_start(self, receivers: torch.Tensor) -> torch.Tensor:
        return torch.floor(self.arrival(receivers)).long() - self.mask_margin

    def causal_filter(self, H: torch.Tensor, receivers: torch.Tensor) -> torch.Tensor:
        """h = irfft(H); zero the samples before the direct sound (minus the margin); back to rfft (brief §2.1)."""
        h = torch.fft.irfft(H, n=self.n_fft, dim=-1)
        n = torch.arange(self.n_fft, device=h.device)
        keep = (n[None, :] >= self.mask_start(receivers)[:, None]).to(h.dtype)
        return torch.fft.rfft(h * keep, n=self.n_fft, dim=-1)


def _im_mask(n_freq: int) -> torch.Tensor:
    m = torch.ones(n_freq)
    m[0] = m[-1] = 0.0
    return m


class FreqMLP(_ReceiverModel):
    """FD-MLP: MLP(gamma(x_r)) -> [Re H, Im H] on the one-sided grid (Im zeroed at DC and Nyquist).

    ``causal=True`` applies INFER-lite's time-of-flight mask to the output (needs ``fs`` and ``speaker``),
    which separates "renderer" from "mask" in the comparison (review of issue 8, §4).
    """

    kind = "frequency"

    def __init__(self, room, n_fft: int, width: int = 128, depth: int = 4, n_octaves: int = 6, causal: bool = False,
                 fs: int | None = None, speaker=None, arrival_offset: float = 0.0, mask_margin: int = 3):
        super().__init__(room, n_fft, fs, speaker, arrival_offset, mask_margin)
        if causal and (speaker is None or fs is None):
            raise ValueError("FreqMLP(causal=True) needs fs and the speaker positions for its time-of-flight mask")
        self.causal = bool(causal)
        self.enc = FourierFeatures(3, n_octaves)
        self.net = mlp(self.enc.out_dim, width, depth, 2 * self.n_freq)
        self.register_buffer("_im", _im_mask(self.n_freq))

    def render(self, receivers: torch.Tensor) -> torch.Tensor:
        """The response before the (optional) mask."""
        out = self.net(self.enc(self.normalise(receivers)))
        return torch.complex(out[..., : self.n_freq], out[..., self.n_freq:] * self._im)

    def forward(self, receivers: torch.Tensor) -> torch.Tensor:
        H = self.render(receivers)
        return self.causal_filter(H, receivers) if self.causal else H


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


class NAFField(_ReceiverModel):
    """NAF-lite: the log-magnitude STFT field of Neural Acoustic Fields (Luo et al., NeurIPS 2022; official
    ``kernel_residual_fc_embeds``), the time-frequency baseline of INFER's "time-domain" family.

    Each STFT pixel (frame t, bin k) of the impulse response is a query: the MLP takes
    [gamma(x_r), gamma(t), gamma(k)] and NAF's *local geometric conditioning*, a learnable feature per
    point of a 2-D grid over the room's floor plan (``grid_gap`` m apart, NAF's default 0.25 m), read at
    the receiver by Gaussian kernel regression (NAF's ``fit_predict_torch``, bandwidth = the grid gap),
    and predicts log(|STFT| + eps); trained with NAF's MSE on that log magnitude (:func:`naf_loss`).
    NAF predicts no phase: the time response is rebuilt from the predicted magnitude by Griffin-Lim
    (:meth:`time_response`, ``gl_iters`` iterations from zero phase; the research brief's "NAF-lite").
    Simplifications (named): one source (NAF's emitter input and left/right-ear latents dropped), a
    plain MLP instead of NAF's residual blocks, a fixed kernel bandwidth and grid (NAF learns both),
    Fourier features of 6 octaves on the receiver as for every model here.
    """

    kind = "stft"

    def __init__(self, room, n_fft: int, width: int = 96, depth: int = 4, n_octaves: int = 6, stft_n: int = 128,
                 stft_hop: int = 16, grid_gap: float = 0.25, grid_features: int = 16, n_octaves_tf: int = 6,
                 gl_iters: int = 100, log_eps: float = 1e-3, pixels: int = 256):
        super().__init__(room, n_fft)
        if stft_n > n_fft or stft_n % 2 or stft_hop < 1 or stft_hop > stft_n:
            raise ValueError(f"need an even stft_n <= n_fft and 1 <= stft_hop <= stft_n, got {stft_n}, {stft_hop}")
        if grid_gap <= 0 or grid_features < 1 or gl_iters < 1 or log_eps <= 0:
            raise ValueError("grid_gap, grid_features, gl_iters and log_eps must be positive")
        self.stft_n, self.stft_hop, self.gl_iters, self.log_eps = int(stft_n), int(stft_hop), int(gl_iters), float(log_eps)
        self.pixels = int(pixels)
        self.n_frames = 1 + self.n_fft // self.stft_hop
        self.n_bins = self.stft_n // 2 + 1
        self.enc = FourierFeatures(3, n_octaves)
        self.enc_tf = FourierFeatures(2, n_octaves_tf)
        gx = np.arange(0.0, self.room[0] + 1e-9, grid_gap)
        gy = np.arange(0.0, self.room[1] + 1e-9, grid_gap)
        gxy = np.stack(np.meshgrid(gx, gy, indexing="ij"), -1).reshape(-1, 2)
        self.register_buffer("grid_xy", torch.as_tensor(gxy, dtype=torch.float32))
        self.grid_gap = float(grid_gap)
        self.grid = nn.Parameter(torch.randn(len(gxy), grid_features) / math.sqrt(grid_features))
        t = torch.linspace(-1, 1, self.n_frames)
        k = torch.linspace(-1, 1, self.n_bins)
        tf = torch.stack(torch.meshgrid(t, k, indexing="ij"), -1).reshape(-1, 2)           # [T*K, 2]
        self.register_buffer("_tf", tf)
        self.net = mlp(self.enc.out_dim + grid_features + self.enc_tf.out_dim, width, depth, 1)
        self.register_buffer("window", torch.hann_window(self.stft_n))

    def grid_features(self, receivers: torch.Tensor) -> torch.Tensor:
        """NAF's local conditioning: Gaussian-kernel regression of the grid features at each receiver's (x, y)."""
        d2 = torch.cdist(receivers[:, :2], self.grid_xy) ** 2
        w = torch.softmax(-d2 / (2 * self.grid_gap ** 2), dim=-1)
        return w @ self.grid

    def log_magnitude(self, receivers: torch.Tensor, pixels: torch.Tensor | None = None) -> torch.Tensor:
        """Predicted log(|STFT| + eps) [B, frames, bins] (one query per STFT pixel); with ``pixels`` (indices
        into the flattened frames x bins grid, as NAF trains on random pixels) only those, [B, len(pixels)]."""
        B = receivers.shape[0]
        pos = torch.cat([self.enc(self.normalise(receivers)), self.grid_features(receivers)], -1)      # [B, P]
        tf = self.enc_tf(self._tf if pixels is None else self._tf[pixels])                            # [n, Q]
        x = torch.cat([pos[:, None, :].expand(-1, tf.shape[0], -1), tf[None].expand(B, -1, -1)], -1)
        out = self.net(x)[..., 0]
        return out.reshape(B, self.n_frames, self.n_bins) if pixels is None else out

    def stft_log_magnitude(self, h: torch.Tensor) -> torch.Tensor:
        """The training target: log(|STFT(h)| + eps) [B, frames, bins] of time responses [B, N]."""
        S = torch.stft(h, self.stft_n, hop_length=self.stft_hop, window=self.window, return_complex=True)
        return torch.log(S.abs().transpose(-1, -2) + self.log_eps)

    def time_response(self, receivers: torch.Tensor) -> torch.Tensor:
        """Griffin-Lim from the predicted magnitude, zero initial phase (deterministic): h [B, N]."""
        mag = (torch.exp(self.log_magnitude(receivers)) - self.log_eps).clamp_min(0.0).transpose(-1, -2)  # [B, K, T]
        spec = mag.to(torch.complex64)
        for _ in range(self.gl_iters):
            h = torch.istft(spec, self.stft_n, hop_length=self.stft_hop, window=self.window, length=self.n_fft)
            S = torch.stft(h, self.stft_n, hop_length=self.stft_hop, window=self.window, return_complex=True)
            spec = mag * torch.exp(1j * torch.angle(S))
        return torch.istft(spec, self.stft_n, hop_length=self.stft_hop, window=self.window, length=self.n_fft)

    def forward(self, receivers: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfft(self.time_response(receivers), n=self.n_fft, dim=-1)


def _exclusive_cumsum(x: torch.Tensor) -> torch.Tensor:
    """sum_{j<i} x_j along the sample axis (-2); the last sample (du = 1e10) never enters a sum."""
    return torch.cat([torch.zeros_like(x[..., :1, :]), torch.cumsum(x[..., :-1, :], dim=-2)], dim=-2)


def sphere_directions(n_azi: int, n_ele: int, azimuth_offset=0.0) -> torch.Tensor:
    """n_azi x n_ele ray directions plus the two poles, as the vendored INFER ``ray_directions``: azimuths
    2 pi a / n_azi (+ ``azimuth_offset``: one number, or one offset per azimuth, as the vendored code's
    independent jitter of each azimuth in training) and elevations with cos(polar) = 2 (e + 1) / (n_ele + 1) - 1
    (+-0.5 and 0 for n_ele = 3)."""
    if n_azi < 1 or n_ele < 1:
        raise ValueError("need at least one azimuth and one elevation")
    z = 2 * (torch.arange(n_ele, dtype=torch.float32) + 1) / (n_ele + 1) - 1
    off = torch.as_tensor(azimuth_offset, dtype=torch.float32)
    if off.ndim and off.shape != (n_azi,):
        raise ValueError(f"azimuth_offset must be a number or {n_azi} offsets, got shape {tuple(off.shape)}")
    phi = 2 * math.pi * torch.arange(n_azi, dtype=torch.float32) / n_azi + off
    pp, zz = torch.meshgrid(phi, z, indexing="ij")
    r = torch.sqrt(1 - zz ** 2)
    dirs = torch.stack([r * torch.cos(pp), r * torch.sin(pp), zz], -1).reshape(-1, 3)
    poles = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]])
    return torch.cat([dirs, poles], 0)


class _RayModel(_ReceiverModel):
    """Receiver-centred ray sampling shared by INFER-lite and AVR-lite."""

    def __init__(self, room, n_fft: int, fs: int, speaker, *, width: int, depth: int, n_octaves_p: int,
                 n_octaves_v: int, n_azi: int, n_ele: int, n_samples: int, near: float, far: float,
                 arrival_offset: float, mask_margin: int):
        super().__init__(room, n_fft, fs, speaker, arrival_offset, mask_margin)
        if not 0 < near < far:
            raise ValueError(f"need 0 < near < far, got near={near}, far={far}")
        if n_samples < 2:
            raise ValueError(f"need at least 2 samples per ray, got {n_samples}")
        if depth < 2:
            raise ValueError(f"depth must be >= 2 (trunk + head), got {depth}")
        self.n_azi, self.n_ele, self.n_samples = int(n_azi), int(n_ele), int(n_samples)
        self.near, self.far = float(near), float(far)
        self.enc_p = FourierFeatures(3, n_octaves_p)
        self.enc_v = FourierFeatures(3, n_octaves_v)
        self.trunk = mlp(self.enc_p.out_dim, width, depth - 1, width)
        self.register_buffer("freqs", torch.arange(self.n_freq, dtype=torch.float32) * self.fs / self.n_fft)

    @property
    def n_rays(self) -> int:
        return self.n_azi * self.n_ele + 2

    def sample_distances(self) -> torch.Tensor:
        return torch.linspace(self.near, self.far, self.n_samples, device=self.device)

    def ray_points(self, receivers: torch.Tensor, azimuth_offset=0.0):
        """(points [B, R, S, 3], view directions [B, R, S, 3], distances d [S], spacings du [S, 1])."""
        dirs = sphere_directions(self.n_azi, self.n_ele, azimuth_offset).to(receivers.device)   # [R, 3]
        d = self.sample_distances()                                                          # [S]
        pts = receivers[:, None, None, :] + dirs[None, :, None, :] * d[None, None, :, None]   # [B, R, S, 3]
        view = (-dirs)[None, :, None, :].expand_as(pts)
        du = torch.cat([d[1:] - d[:-1], torch.full((1,), 1e10, device=d.device)])[:, None]     # [S, 1]
        return pts, view, d, du


def transmittance_terms(sigma: torch.Tensor, beta: torch.Tensor, d: torch.Tensor, du: torch.Tensor,
                        freqs: torch.Tensor):
    """(alpha_i |T_i|, cos, sin of arg(T_i) - 2 pi f d_i / c) for fields [..., S, F] (brief §2.1), in real
    arithmetic: |T_i| = exp(-sum_{j<i} sigma_j du_j) exactly, arg T_i = sum_{j<i} beta_j du_j."""
    sdu = sigma * du
    alpha = -torch.expm1(-sdu)
    amp = alpha * torch.exp(-_exclusive_cumsum(sdu))
    phase = _exclusive_cumsum(beta * du) - (2 * math.pi / SPEED_OF_SOUND) * d[:, None] * freqs
    return amp, torch.cos(phase), torch.sin(phase)


def render_fields(sigma: torch.Tensor, beta: torch.Tensor, s_re: torch.Tensor, s_im: torch.Tensor, d: torch.Tensor,
                  freqs: torch.Tensor) -> torch.Tensor:
    """INFER's renderer on given fields [B, R, S, F] and sample distances d [S]: H [B, F] summed over rays
    and samples (the kernel of :meth:`InferField.render`; last spacing 1e10, the "wall")."""
    du = torch.cat([d[1:] - d[:-1], torch.full((1,), 1e10, dtype=d.dtype, device=d.device)])[:, None]
    amp, c, s_ = transmittance_terms(sigma, beta, d, du, freqs)
    return torch.complex((amp * (s_re * c - s_im * s_)).sum((-2, -3)), (amp * (s_re * s_ + s_im * c)).sum((-2, -3)))


class InferField(_RayModel):
    """INFER-lite: a receiver-centred acoustic volume renderer with per-frequency complex attenuation.

    Network (brief §2.1): ``h = MLP_enc(gamma(p))``; attenuation head -> sigma(f) = softplus + 1e-6 >= 0
    (absorption) and beta(f) (phase-velocity change; pinned to 0 at DC and Nyquist, where a real
    response is real); signal head on [relu(h), gamma(v), gamma(p)] -> S(f, p, v) (Im S = 0 at DC and
    Nyquist). Rendering along each ray with samples d_i, du_i = d_{i+1} - d_i (last 1e10):

        alpha_i = 1 - exp(-sigma_i du_i),  T_i = prod_{j<i}(1 - alpha_j) exp(j sum_{j<i} beta_j du_j),
        H(f) = sum_rays sum_i S_i(f) exp(-j 2 pi f d_i / c) alpha_i T_i          (sum over rays, as the paper)

    then the causal filter (:meth:`causal_filter`): h = irfft(H); h[n < n_mask(x_r)] = 0; H = rfft(h),
    with n_mask the direct-sound arrival (pyroomacoustics delay + time of flight) minus ``mask_margin``.
    ``variant="scalar"``: sigma is one frequency-independent scalar per point and beta = 0 (ablation).
    """

    kind = "field"

    def __init__(self, room, n_fft: int, fs: int, speaker, width: int = 64, depth: int = 3,
                 n_octaves_p: int = 6, n_octaves_v: int = 2, n_azi: int = 4, n_ele: int = 3,
                 n_samples: int = 12, near: float = 0.05, far: float = 2.5, variant: str = "infer",
                 arrival_offset: float = 0.0, mask_margin: int = 3, causal: bool = True):
        if variant not in ("infer", "scalar"):
            raise ValueError(f"variant must be 'infer' or 'scalar', got {variant!r}")
        super().__init__(room, n_fft, fs, speaker, width=width, depth=depth, n_octaves_p=n_octaves_p,
                         n_octaves_v=n_octaves_v, n_azi=n_azi, n_ele=n_ele, n_samples=n_samples, near=near,
                         far=far, arrival_offset=arrival_offset, mask_margin=mask_margin)
        self.variant, self.causal = variant, bool(causal)
        n_att = 2 * self.n_freq if variant == "infer" else 1
        self.att_head = nn.Linear(width, n_att)
        self.sig_head = mlp(width + self.enc_v.out_dim + self.enc_p.out_dim, width, 1, 2 * self.n_freq)
        self.register_buffer("_im", _im_mask(self.n_freq))

    def _fields(self, points: torch.Tensor, view: torch.Tensor):
        g_p = self.enc_p(self.normalise(points))
        h = torch.relu(self.trunk(g_p))
        att = self.att_head(h)
        F = self.n_freq
        if self.variant == "infer":
            sigma = nn.functional.softplus(att[..., :F]) + 1e-6
            beta = att[..., F:] * self._im
        else:
            sigma = (nn.functional.softplus(att) + 1e-6).expand(*att.shape[:-1], F)
            beta = torch.zeros_like(sigma)
        s = self.sig_head(torch.cat([h, self.enc_v(view), g_p], -1))
        return sigma, beta, s[..., :F], s[..., F:] * self._im

    def point_fields(self, points: torch.Tensor, view: torch.Tensor):
        """(sigma, beta, S) at world points [..., 3] seen along ``view`` [..., 3]: shapes [..., F] each."""
        sigma, beta, re, im = self._fields(points, view)
        return sigma, beta, torch.complex(re, im)

    def render(self, receivers: torch.Tensor, azimuth_offset=0.0, return_fields: bool = False,
               flat_signal: bool = False):
        """The rendered response before the causal filter, [B, F] complex.

        ``return_fields``: also return a dict with the sampled ``sigma``, ``beta`` [B, R, S, F] (with
        gradients, for the KK loss) and the rendering weight ``weight`` = alpha |T| [B, R, S, F]
        (detached). ``flat_signal``: replace S by 1 and return the per-ray responses [B, R, F] of the
        medium alone.
        """
        pts, view, d, du = self.ray_points(receivers, azimuth_offset)
        sigma, beta, s_re, s_im = self._fields(pts, view)                                     # [B, R, S, F]
        amp, c, s_ = transmittance_terms(sigma, beta, d, du, self.freqs)
        if flat_signal:
            return torch.complex((amp * c).sum(-2), (amp * s_).sum(-2))
        H = torch.complex((amp * (s_re * c - s_im * s_)).sum((-2, -3)), (amp * (s_re * s_ + s_im * c)).sum((-2, -3)))
        if return_fields:
            return H, {"sigma": sigma, "beta": beta, "weight": amp.detach()}
        return H

    def forward(self, receivers: torch.Tensor, azimuth_offset=0.0, return_fields: bool = False):
        out = self.render(receivers, azimuth_offset, return_fields=return_fields)
        H, fields = out if return_fields else (out, None)
        if self.causal:
            H = self.causal_filter(H, receivers)
        return (H, fields) if return_fields else H


class AVRField(_RayModel):
    """AVR-lite, the hybrid baseline: per-point time signals rendered in the frequency domain.

    Following the official AVR renderer (``AVRRender.forward`` / ``acoustic_render``): the network gives
    each sampled point p a scalar attenuation sigma_p >= 0 and a time signal s_p[n], n < N (the view
    direction is an input of the signal head). s_p is zeroed before the source's sound can reach p
    (n < D + fs |x_s - p| / c, nearest driver, D the simulator's fixed delay) and where the shift to the
    receiver would wrap it around (n >= N - round(fs d / c)); then

        S_p(f) = rfft(s_p),  alpha_i = 1 - exp(-sigma_i du_i),  T_i = prod_{j<i}(1 - alpha_j + 1e-6),
        H(f) = sum_rays sum_i S_i(f) exp(-j 2 pi f d_i / c) alpha_i T_i,    h = irfft(H),

    trained on h with the time-domain loss. Simplifications (named): no 1/d path-loss weighting of
    s_p (the network learns amplitudes), Fourier features instead of hash grids, one source, no output
    time-of-flight mask (AVR has none; its causality comes from the per-point masks).
    """

    kind = "hybrid"

    def __init__(self, room, n_fft: int, fs: int, speaker, width: int = 64, depth: int = 3,
                 n_octaves_p: int = 6, n_octaves_v: int = 2, n_azi: int = 4, n_ele: int = 3,
                 n_samples: int = 12, near: float = 0.05, far: float = 2.5, arrival_offset: float = 0.0,
                 mask_margin: int = 3):
        super().__init__(room, n_fft, fs, speaker, width=width, depth=depth, n_octaves_p=n_octaves_p,
                         n_octaves_v=n_octaves_v, n_azi=n_azi, n_ele=n_ele, n_samples=n_samples, near=near,
                         far=far, arrival_offset=arrival_offset, mask_margin=mask_margin)
        self.att_head = nn.Linear(width, 1)
        self.sig_head = mlp(width + self.enc_v.out_dim + self.enc_p.out_dim, width, 1, self.n_fft)

    def render(self, receivers: torch.Tensor, azimuth_offset=0.0) -> torch.Tensor:
        pts, view, d, du = self.ray_points(receivers, azimuth_offset)
        g_p = self.enc_p(self.normalise(pts))
        h = torch.relu(self.trunk(g_p))
        sigma = nn.functional.softplus(self.att_head(h)[..., 0]) + 1e-6                       # [B, R, S]
        sig = self.sig_head(torch.cat([h, self.enc_v(view), g_p], -1))                         # [B, R, S, N]
        n = torch.arange(self.n_fft, device=pts.device)
        tx_delay = self.arrival_offset + self.fs * torch.cdist(pts.reshape(-1, 3), self.speaker).min(-1).values.reshape(
            pts.shape[:-1]) / SPEED_OF_SOUND                                                    # [B, R, S]
        shift = torch.round(self.fs * d / SPEED_OF_SOUND)                                     # [S]
        keep = (n >= torch.round(tx_delay)[..., None]) & ((self.n_fft - 1 - n)[None, :] - shift[:, None] > 0)
        S = torch.fft.rfft(sig * keep.to(sig.dtype), n=self.n_fft, dim=-1)                     # [B, R, S, F]
        alpha = -torch.expm1(-sigma * du[:, 0])                                               # [B, R, S]
        T = torch.cumprod(torch.cat([torch.ones_like(alpha[..., :1]), 1 - alpha + 1e-6], -1), -1)[..., :-1]
        delay = torch.exp(-2j * math.pi / SPEED_OF_SOUND * d[:, None] * self.freqs)           # [S, F]
        return (S * delay * (alpha * T)[..., None]).sum((-2, -3))

    def time_response(self, receivers: torch.Tensor, azimuth_offset=0.0) -> torch.Tensor:
        return torch.fft.irfft(self.render(receivers, azimuth_offset), n=self.n_fft, dim=-1)

    def forward(self, receivers: torch.Tensor, azimuth_offset=0.0) -> torch.Tensor:
        return self.render(receivers, azimuth_offset)


def render_reference(sigma: torch.Tensor, beta: torch.Tensor, S: torch.Tensor, d: torch.Tensor,
                     freqs: torch.Tensor) -> torch.Tensor:
    """The INFER renderer as the vendored ``AVRRenderFD_FreqDep_PhaseCorrection_new.acoustic_render_fd``
    structures it (transcribed, not copied): a **real** ``torch.cumprod`` of the shifted factors
    ``1 - alpha + 1e-10`` for |T|, a **real** ``torch.cumsum`` of the shifted increments ``beta du`` for
    arg T, one complex exponential, the geometric phase ``exp(-j 2 pi f d / c)`` and the sum over
    samples and rays (paper: H = sum_rays sum_i S_i e^{-j2pi f d_i/c} alpha_i T_i, brief §2.1).
    H [B, F] from fields [B, R, S, F] and distances d [S].

    The peer of :meth:`InferField.render` (which works in real arithmetic with an exact exponential of
    the exclusive cumulative sum of sigma du): the unit test checks they agree, the benchmark times both.
    """
    du = torch.cat([d[1:] - d[:-1], torch.full((1,), 1e10, dtype=d.dtype, device=d.device)])[:, None]   # [S, 1]
    alpha = 1 - torch.exp(-sigma * du)
    keep = torch.cat([torch.ones_like(alpha[..., :1, :]), 1 - alpha[..., :-1, :] + 1e-10], dim=-2)
    t_amp = torch.cumprod(keep, dim=-2)                                                # prod_{j<i} (1 - alpha_j)
    steps = beta[..., :-1, :] * du[:-1]
    t_phase = torch.cumsum(torch.cat([torch.zeros_like(steps[..., :1, :]), steps], dim=-2), dim=-2)
    T = t_amp * torch.exp(1j * t_phase)
    geo = torch.exp(-2j * math.pi / SPEED_OF_SOUND * d[:, None] * freqs)
    return (S * geo * alpha * T).sum((-2, -3))
