"""BiRQA (our instantiation, brief 2.2) and the learned foils: an LPIPS-style network trained from scratch
and the LPIPS-VGG16 architecture (timing only: LPIPS' weights cannot be downloaded here; weights do not
change the time).

TopIQLike: a TOPIQ-class architecture (ResNet-50 trunk + top-down cross-attention), the speed peer of the
paper's "previous SOTA" (timing only).

BiRQA = feature pyramid (features.py) -> per-level depthwise-separable encoders -> CSRAM (bottom-up,
fine -> coarse: gated residual, strength ``softplus`` x confidence ``sigmoid``) -> SCGB (top-down, coarse ->
fine: spatial cross-gating) -> RAH (GeM pooling per level, softmax reliabilities, convex mix of per-level
scores). The paper's abstract names CSRAM, SCGB and the reliability-aware head; the equations here are ours.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .features import check_pair, feature_pyramid

HEADS = ("rah", "mean")


class DSConv(nn.Module):
    """3x3 depthwise + 1x1 pointwise convolution, GELU."""

    def __init__(self, channels: int):
        super().__init__()
        self.dw = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.pw = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return F.gelu(self.pw(self.dw(x)))


class Encoder(nn.Module):
    """Per-level encoder: 1x1 lift of the 4 maps to C channels, then two depthwise-separable blocks."""

    def __init__(self, in_ch: int, channels: int):
        super().__init__()
        self.lift = nn.Conv2d(in_ch, channels, 1)
        self.blocks = nn.Sequential(DSConv(channels), DSConv(channels))

    def forward(self, x):
        return self.blocks(self.lift(x))


class CSRAM(nn.Module):
    """Bottom-up gated residual (our Eq. C): g = W_g AvgPool2(F_l); s = softplus(W_s g); c = sigmoid(W_c [g, F_{l+1}]);
    F_{l+1} <- F_{l+1} + c * s * g."""

    def __init__(self, channels: int):
        super().__init__()
        self.g = nn.Conv2d(channels, channels, 1)
        self.s = nn.Conv2d(channels, 1, 1)
        self.c = nn.Conv2d(2 * channels, 1, 1)

    def forward(self, fine, coarse):
        g = self.g(F.avg_pool2d(fine, 2))
        return coarse + torch.sigmoid(self.c(torch.cat((g, coarse), 1))) * F.softplus(self.s(g)) * g


def _ds3(channels: int) -> nn.Sequential:
    """A depthwise-separable 3x3 convolution (depthwise 3x3, then pointwise 1x1), no activation."""
    return nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1, groups=channels), nn.Conv2d(channels, channels, 1))


class SCGB(nn.Module):
    """Top-down spatial cross-gating (our Eq. S): U = Up2(F_{l+1});
    F_l <- F_l * sigmoid(conv3(U)) + conv1(U) * sigmoid(conv3(F_l)), the 3x3 convolutions depthwise-separable."""

    def __init__(self, channels: int):
        super().__init__()
        self.gate_u = _ds3(channels)
        self.val_u = nn.Conv2d(channels, channels, 1)
        self.gate_f = _ds3(channels)

    def forward(self, fine, coarse):
        u = F.interpolate(coarse, size=fine.shape[-2:], mode="bilinear", align_corners=False)
        return fine * torch.sigmoid(self.gate_u(u)) + self.val_u(u) * torch.sigmoid(self.gate_f(fine))


class GeM(nn.Module):
    """Generalised-mean pooling (mean_hw x^p)^(1/p), p learnable (init 3)."""

    def __init__(self, p: float = 3.0):
        super().__init__()
        self.p = nn.Parameter(torch.tensor(float(p)))

    def forward(self, x):
        p = self.p.clamp(1.0, 8.0)
        return F.relu(x).add(1e-6).pow(p).mean((-2, -1)).pow(1.0 / p)


class BiRQA(nn.Module):
    """BiRQA-small. ``forward(ref, dist)`` on [0, 1] images ``[B, 3, H, W]`` returns the score (z-scored MOS
    units); ``return_weights=True`` also returns the RAH reliabilities ``[B, L]``.

    Switches for the ablations: ``csram``, ``scgb`` (off: the path is skipped), ``head="mean"`` (uniform mix of
    the per-level scores instead of RAH), ``levels=1`` (one scale). ``lbp``: "soft" (train and attack),
    "hard" (evaluation; zero gradient a.e.), "bpda" (hard forward, soft backward).
    """

    def __init__(self, levels: int = 3, channels: int = 16, window: int = 7, csram: bool = True, scgb: bool = True,
                 head: str = "rah", lbp: str = "soft"):
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}")
        if levels < 1 or channels < 1:
            raise ValueError(f"levels and channels must be >= 1, got {levels}, {channels}")
        self.levels, self.window, self.lbp, self.head = levels, window, lbp, head
        self.use_csram, self.use_scgb = csram and levels > 1, scgb and levels > 1
        self.encoders = nn.ModuleList(Encoder(4, channels) for _ in range(levels))
        self.csram = nn.ModuleList(CSRAM(channels) for _ in range(levels - 1))
        self.scgb = nn.ModuleList(SCGB(channels) for _ in range(levels - 1))
        self.pool = nn.ModuleList(GeM() for _ in range(levels))
        self.score = nn.ModuleList(nn.Sequential(nn.Linear(channels, channels), nn.GELU(), nn.Linear(channels, 1))
                                   for _ in range(levels))
        self.reliability = nn.ModuleList(nn.Sequential(nn.Linear(channels, channels), nn.GELU(), nn.Linear(channels, 1))
                                         for _ in range(levels))

    def features(self, ref, dist, check: bool = True):
        return feature_pyramid(ref, dist, self.levels, self.window, self.lbp, check=check)

    def forward_features(self, feats: list[torch.Tensor], return_weights: bool = False):
        """The network on precomputed feature maps (one ``[B, 4, H_l, W_l]`` per level, finest first)."""
        if len(feats) != self.levels:
            raise ValueError(f"expected {self.levels} feature levels, got {len(feats)}")
        h = [enc(f) for enc, f in zip(self.encoders, feats)]
        if self.use_csram:
            for level in range(self.levels - 1):
                h[level + 1] = self.csram[level](h[level], h[level + 1])
        if self.use_scgb:
            for level in range(self.levels - 2, -1, -1):
                h[level] = self.scgb[level](h[level], h[level + 1])
        z = [pool(x) for pool, x in zip(self.pool, h)]
        q = torch.cat([m(v) for m, v in zip(self.score, z)], dim=1)
        if self.head == "rah":
            w = torch.softmax(torch.cat([m(v) for m, v in zip(self.reliability, z)], dim=1), dim=1)
        else:
            w = torch.full_like(q, 1.0 / self.levels)
        y = (w * q).sum(1)
        return (y, w) if return_weights else y

    def forward(self, ref, dist, return_weights: bool = False, check: bool = True):
        return self.forward_features(self.features(ref, dist, check=check), return_weights)


class DeepFRScratch(nn.Module):
    """An LPIPS-style network (Zhang et al. 2018: shared conv trunk, unit-normalised channels, squared
    difference, learned non-negative 1x1 weights, spatial mean) trained **from scratch** on our data.
    LPIPS, DISTS, AHIQ and TOPIQ need pretrained weights, which nothing here may download."""

    def __init__(self, widths: tuple[int, ...] = (16, 32, 32)):
        super().__init__()
        layers, c = [], 3
        for i, w in enumerate(widths):
            layers.append(nn.Sequential(nn.Conv2d(c, w, 3, stride=1 if i == 0 else 2, padding=1), nn.ReLU(),
                                        nn.Conv2d(w, w, 3, padding=1), nn.ReLU()))
            c = w
        self.stages = nn.ModuleList(layers)
        self.lin = nn.ParameterList(nn.Parameter(torch.full((w,), 0.1)) for w in widths)
        self.out = nn.Linear(1, 1)

    def forward(self, ref, dist, check: bool = True):
        if check:
            check_pair(ref, dist)
        a, b, d = ref - 0.5, dist - 0.5, 0.0
        for stage, lin in zip(self.stages, self.lin):
            a, b = stage(a), stage(b)
            na = a / (a.norm(dim=1, keepdim=True) + 1e-6)
            nb = b / (b.norm(dim=1, keepdim=True) + 1e-6)
            d = d + ((na - nb) ** 2 * F.softplus(lin).view(1, -1, 1, 1)).sum(1).mean((-2, -1))
        return self.out(-d.view(-1, 1)).view(-1)


VGG16_CFG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512)
VGG16_TAPS = (1, 3, 6, 9, 12)  # relu1_2, relu2_2, relu3_3, relu4_3, relu5_3 (indices among conv layers)


class LPIPSVGG16(nn.Module):
    """The LPIPS-VGG16 architecture in plain torch, randomly initialised (timing only: same FLOPs as the
    released model; the weights cannot be downloaded and do not change the time)."""

    def __init__(self):
        super().__init__()
        layers, c = [], 3
        for v in VGG16_CFG:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU(inplace=True)]
                c = v
        self.features = nn.Sequential(*layers)
        self.lins = nn.ModuleList(nn.Conv2d(w, 1, 1, bias=False) for w in (64, 128, 256, 512, 512))

    def _taps(self, x):
        out, conv = [], -1
        for layer in self.features:
            x = layer(x)
            if isinstance(layer, nn.ReLU):
                conv += 1
                if conv in VGG16_TAPS:
                    out.append(x)
        return out

    def forward(self, ref, dist):
        d = 0.0
        for a, b, lin in zip(self._taps(ref), self._taps(dist), self.lins):
            a = a / (a.norm(dim=1, keepdim=True) + 1e-10)
            b = b / (b.norm(dim=1, keepdim=True) + 1e-10)
            d = d + lin((a - b) ** 2).mean((-2, -1))
        return d.view(-1)


class Bottleneck(nn.Module):
    """ResNet bottleneck block (He et al. 2016): 1x1 reduce, 3x3 (stride), 1x1 expand x4, BatchNorm, residual."""

    def __init__(self, c_in: int, width: int, stride: int = 1):
        super().__init__()
        c_out = 4 * width
        self.body = nn.Sequential(nn.Conv2d(c_in, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                                  nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                                  nn.Conv2d(width, c_out, 1, bias=False), nn.BatchNorm2d(c_out))
        self.skip = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
                     if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x):
        return F.relu(self.body(x) + self.skip(x))


class TopIQLike(nn.Module):
    """A TOPIQ-class FR network in plain torch, randomly initialised (timing only: TOPIQ's weights cannot be
    downloaded; weights do not change the time). TOPIQ (Chen et al. 2024) runs a ResNet-50 on the reference and
    the distorted image and propagates coarse semantics top-down with cross-attention over multi-scale
    features. Here: the ResNet-50 trunk (3, 4, 6, 3 bottlenecks) on both images; per stage, [f_ref, f_dist,
    f_ref - f_dist] reduced to ``dim`` by a 1x1 convolution; queries from the coarsest stage attend to each finer
    stage in turn (``nn.MultiheadAttention``, 4 heads); mean-pooled queries -> MLP -> score. Our stand-in of the
    architecture class, not TOPIQ's exact layers."""

    def __init__(self, dim: int = 256, blocks: tuple[int, ...] = (3, 4, 6, 3)):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        stages, c = [], 64
        for i, n in enumerate(blocks):
            width = 64 * 2 ** i
            layers = [Bottleneck(c, width, 1 if i == 0 else 2)] + [Bottleneck(4 * width, width) for _ in range(n - 1)]
            stages.append(nn.Sequential(*layers))
            c = 4 * width
        self.stages = nn.ModuleList(stages)
        self.reduce = nn.ModuleList(nn.Conv2d(3 * 256 * 2 ** i, dim, 1) for i in range(len(blocks)))
        self.attn = nn.ModuleList(nn.MultiheadAttention(dim, 4, batch_first=True) for _ in range(len(blocks) - 1))
        self.head = nn.Sequential(nn.Linear(dim, dim // 2), nn.GELU(), nn.Linear(dim // 2, 1))

    def _trunk(self, x):
        out, x = [], self.stem(x)
        for stage in self.stages:
            x = stage(x)
            out.append(x)
        return out

    def forward(self, ref, dist):
        tokens = [red(torch.cat((a, b, a - b), 1)).flatten(2).transpose(1, 2)
                  for red, a, b in zip(self.reduce, self._trunk(ref), self._trunk(dist))]
        q = tokens[-1]
        for attn, kv in zip(self.attn, reversed(tokens[:-1])):
            q = q + attn(q, kv, kv, need_weights=False)[0]
        return self.head(q.mean(1)).view(-1)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


__all__ = ["BiRQA", "CSRAM", "DeepFRScratch", "GeM", "HEADS", "LPIPSVGG16", "SCGB", "TopIQLike", "check_pair", "count_parameters"]
