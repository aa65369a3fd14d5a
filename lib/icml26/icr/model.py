"""EDM denoiser (Karras et al. 2022) with a tiny conv U-Net for 8x8 images (brief §5.2).

``D(x; sigma) = c_skip x + c_out F(c_in x, c_noise)`` with EDM's preconditioning; the representation
``h`` of the paper (§2.1: EDM ``dec.16x16 block1``, mean-pooled over space). In EDM's SongUNet for CIFAR-10
(resolutions 32/16/8) that block sits one level *above* the 8x8 bottleneck; here (8/4/2) the analogue is the
first decoder block at 4x4, ``"dec4"`` (``d = c2``). ``"dec2"`` (the decoder block *at* the 2x2 bottleneck,
``d = c3``) and the encoder layers ``"enc4"``, ``"enc2"``, ``"mid"`` serve the layer-choice ablation (paper Fig. 14).
"""
from __future__ import annotations

import math

import torch
from torch import nn

LAYERS = ("enc4", "enc2", "mid", "dec2", "dec4")


class FourierEmbedding(nn.Module):
    """Random Fourier features of ``c_noise = ln(sigma) / 4`` (EDM), followed by a small MLP."""

    def __init__(self, dim: int = 32, out: int = 64, scale: float = 4.0):
        super().__init__()
        self.register_buffer("freqs", torch.randn(dim // 2, generator=torch.Generator().manual_seed(1234)) * scale)
        self.mlp = nn.Sequential(nn.Linear(dim, out), nn.SiLU(), nn.Linear(out, out))

    def forward(self, c_noise: torch.Tensor) -> torch.Tensor:
        phase = 2 * math.pi * c_noise[:, None] * self.freqs[None, :]
        return self.mlp(torch.cat([phase.cos(), phase.sin()], dim=1))


def _groups(c: int) -> int:
    return min(8, c // 4) if c >= 8 else 1


class ResBlock(nn.Module):
    """GroupNorm-SiLU-conv twice, with the noise embedding added in between (EDM/DDPM block)."""

    def __init__(self, cin: int, cout: int, emb: int):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(_groups(cin), cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.e = nn.Linear(emb, cout)
        self.n2, self.c2 = nn.GroupNorm(_groups(cout), cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        h = self.c1(self.act(self.n1(x))) + self.e(emb)[:, :, None, None]
        h = self.c2(self.act(self.n2(h)))
        return (h + self.skip(x)) / math.sqrt(2)


class TinyUNet(nn.Module):
    """8x8 -> 4x4 -> 2x2 U-Net with skips: channels ``(c1, c2, c3)`` at the three resolutions.

    ``forward(x, c_noise, return_features=True)`` also returns ``{layer: (n, C) mean-pooled}``.
    """

    def __init__(self, channels: tuple[int, int, int] = (32, 64, 128), emb: int = 64):
        super().__init__()
        c1, c2, c3 = channels
        self.channels = tuple(channels)
        self.embed = FourierEmbedding(32, emb)
        self.inp = nn.Conv2d(1, c1, 3, padding=1)
        self.e8 = ResBlock(c1, c1, emb)
        self.e4 = ResBlock(c1, c2, emb)
        self.e2 = ResBlock(c2, c3, emb)
        self.m1, self.m2 = ResBlock(c3, c3, emb), ResBlock(c3, c3, emb)
        self.d2 = ResBlock(2 * c3, c3, emb)
        self.d4 = ResBlock(c3 + c2, c2, emb)
        self.d8 = ResBlock(c2 + c1, c1, emb)
        self.out = nn.Sequential(nn.GroupNorm(_groups(c1), c1), nn.SiLU(), nn.Conv2d(c1, 1, 3, padding=1))
        self.pool, self.up = nn.AvgPool2d(2), nn.Upsample(scale_factor=2, mode="nearest")
        nn.init.zeros_(self.out[-1].weight)
        nn.init.zeros_(self.out[-1].bias)

    def forward(self, x: torch.Tensor, c_noise: torch.Tensor, return_features: bool = False):
        emb = self.embed(c_noise)
        h8 = self.e8(self.inp(x), emb)
        h4 = self.e4(self.pool(h8), emb)
        h2 = self.e2(self.pool(h4), emb)
        m = self.m2(self.m1(h2, emb), emb)
        u2 = self.d2(torch.cat([m, h2], 1), emb)
        u4 = self.d4(torch.cat([self.up(u2), h4], 1), emb)
        u8 = self.d8(torch.cat([self.up(u4), h8], 1), emb)
        y = self.out(u8)
        if not return_features:
            return y
        feats = {"enc4": h4, "enc2": h2, "mid": m, "dec2": u2, "dec4": u4}
        return y, {k: v.mean(dim=(2, 3)) for k, v in feats.items()}


class EDMDenoiser(nn.Module):
    """EDM preconditioning around a :class:`TinyUNet` (Karras et al. 2022, Table 1).

    ``c_skip = sd^2/(s^2+sd^2)``, ``c_out = s sd/sqrt(s^2+sd^2)``, ``c_in = 1/sqrt(s^2+sd^2)``,
    ``c_noise = ln(s)/4``.
    """

    def __init__(self, sigma_data: float = 0.75, channels: tuple[int, int, int] = (32, 64, 128)):
        super().__init__()
        if not sigma_data > 0:
            raise ValueError(f"sigma_data must be positive, got {sigma_data}")
        self.sigma_data = float(sigma_data)
        self.net = TinyUNet(channels)

    def _pre(self, x: torch.Tensor, sigma):
        sigma = torch.as_tensor(sigma, dtype=x.dtype, device=x.device).reshape(-1)
        if sigma.numel() == 1:
            sigma = sigma.expand(x.shape[0])
        s = sigma.view(-1, 1, 1, 1)
        sd2 = self.sigma_data ** 2
        c_skip = sd2 / (s ** 2 + sd2)
        c_out = s * self.sigma_data / (s ** 2 + sd2).sqrt()
        c_in = 1 / (s ** 2 + sd2).sqrt()
        return sigma, c_skip, c_out, c_in

    def forward(self, x: torch.Tensor, sigma) -> torch.Tensor:
        """The denoised estimate ``D(x; sigma)`` of ``x0`` from ``x = x0 + sigma eps``."""
        sigma, c_skip, c_out, c_in = self._pre(x, sigma)
        return c_skip * x + c_out * self.net(c_in * x, sigma.log() / 4)

    @torch.no_grad()
    def features(self, x: torch.Tensor, sigma, layer: str | tuple[str, ...] = "dec4", batch_size: int = 2048):
        """Mean-pooled features ``h(x_t)`` of ``layer`` at noise level ``sigma`` (paper §2.1), shape ``(n, C)``;
        for a tuple of layers, a dict ``{layer: (n, C_layer)}`` from one forward pass. ``x`` may live on any device:
        it is moved to the network's, and the features come back on ``x``'s (perturbations drawn on the CPU stay
        the same draws whatever the network's device)."""
        names = (layer,) if isinstance(layer, str) else tuple(layer)
        bad = [n for n in names if n not in LAYERS]
        if bad or not names:
            raise ValueError(f"unknown layer(s) {bad or names!r}; valid layers: {LAYERS}")
        if x.ndim != 4 or x.shape[1:] != (1, 8, 8):
            raise ValueError(f"images must have shape (n, 1, 8, 8), got {tuple(x.shape)}")
        sig = torch.as_tensor(sigma, dtype=torch.float64)
        if not (torch.isfinite(sig).all() and (sig > 0).all()):
            raise ValueError(f"features need a finite noise level sigma > 0 (c_noise = ln(sigma) / 4), got {sigma!r}")
        dev = next(self.parameters()).device
        out: dict[str, list[torch.Tensor]] = {n: [] for n in names}
        for i in range(0, x.shape[0], batch_size):
            xb = x[i:i + batch_size].to(dev)
            sig, _, _, c_in = self._pre(xb, sigma)
            _, feats = self.net(c_in * xb, sig.log() / 4, return_features=True)
            for n in names:
                out[n].append(feats[n])
        cat = {n: torch.cat(v).to(x.device) for n, v in out.items()}
        return cat[layer] if isinstance(layer, str) else cat

    def feature_dim(self, layer: str) -> int:
        """Channel count ``d`` of ``layer``, read from a forward pass."""
        return int(self.features(torch.zeros(1, 1, 8, 8), 1.0, layer).shape[1])

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
