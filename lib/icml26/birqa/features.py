"""The four differentiable feature maps of BiRQA, per pyramid level (our instantiation, brief 2.2).

The paper's abstract names "four fast complementary features"; the public ICLR-2026 reviews name them: a
structural (SSIM) map, an information (VIF-style) map, a YCbCr colour-difference map and an LBP texture
map. The exact definitions below are **our instantiation** (the method text is not public):

* (F1) SSIM map on luma Y (Wang et al. 2004, Eq. 13), Gaussian window sigma = 1.5, C1 = 0.01^2, C2 = 0.03^2;
* (F2) pixel-VIF information ratio (Sheikh & Bovik 2006): g = sigma_RD / sigma_R^2, sigma_v^2 = sigma_D^2 - g sigma_RD,
  I = log2(1 + g^2 sigma_R^2 / (sigma_v^2 + sigma_n^2)) / (log2(1 + sigma_R^2 / sigma_n^2) + 1e-4);
* (F3) BT.601 chroma difference sqrt(dCb^2 + dCr^2), smoothed by the window;
* (F4) soft-LBP difference (1/8) sum_k |b_k(Y_R) - b_k(Y_D)| with b_k = sigmoid((Y(n_k) - Y(c)) / T), T = 0.02,
  the 8 neighbours n_k on the radius-1 circle sampled bilinearly exactly as
  ``skimage.feature.local_binary_pattern(P=8, R=1)`` does. The hard LBP (a step instead of the sigmoid) has
  zero gradient almost everywhere: it is kept for evaluation and for the BPDA attack (``lbp="bpda"``:
  hard forward, soft backward), never for training.

All inputs are float tensors ``[B, 3, H, W]`` in [0, 1]; :func:`check_pair` validates them at the API boundary.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

C1, C2 = 0.01 ** 2, 0.03 ** 2
SIGMA_N2 = 2.0 / 255.0 ** 2          # VIF's visual-noise variance on the [0, 1] scale
LBP_T = 0.02
LBP_MODES = ("soft", "hard", "bpda")
FEATURE_NAMES = ("SSIM", "VIF info", "chroma", "soft-LBP")


def check_pair(ref: torch.Tensor, dist: torch.Tensor, levels: int = 1, window: int = 7) -> None:
    """Raise a clear ValueError for a bad (ref, dist) pair: shape, dtype, range, NaN, too small a side."""
    for name, x in (("ref", ref), ("dist", dist)):
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"{name} must be a torch tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise ValueError(f"{name} must be a float tensor in [0, 1], got dtype {x.dtype}")
        if x.ndim != 4 or x.shape[1] != 3:
            raise ValueError(f"{name} must have shape [B, 3, H, W], got {tuple(x.shape)}")
        if torch.isnan(x).any():
            raise ValueError(f"{name} contains NaN pixels")
        if x.min() < 0 or x.max() > 1:
            raise ValueError(f"{name} must lie in [0, 1], got range [{float(x.min()):.3g}, {float(x.max()):.3g}]")
    if ref.shape != dist.shape:
        raise ValueError(f"ref and dist must have the same shape, got {tuple(ref.shape)} and {tuple(dist.shape)}")
    minimum = 2 ** (levels - 1) * window
    if min(ref.shape[-2:]) < minimum:
        raise ValueError(f"image side {min(ref.shape[-2:])} is too small for {levels} pyramid level(s) with a "
                         f"{window}x{window} window: the minimum side is 2^(L-1) x window = {minimum}")


def rgb_to_ycbcr(x: torch.Tensor) -> torch.Tensor:
    """BT.601 full-range YCbCr of an RGB tensor in [0, 1] (Y in [0, 1], Cb/Cr centred on 0.5)."""
    r, g, b = x[:, 0], x[:, 1], x[:, 2]
    y = 0.299 * r + 0.587 * g + 0.114 * b
    cb = 0.5 + (b - y) / 1.772
    cr = 0.5 + (r - y) / 1.402
    return torch.stack((y, cb, cr), dim=1)


def gaussian_kernel1d(size: int, sigma: float = 1.5, dtype=torch.float32) -> torch.Tensor:
    """The normalised 1-D Gaussian taps (odd ``size``)."""
    if size < 1 or size % 2 == 0:
        raise ValueError(f"window size must be odd and positive, got {size}")
    coords = torch.arange(size, dtype=dtype) - (size - 1) / 2
    g = torch.exp(-coords ** 2 / (2 * sigma ** 2))
    return g / g.sum()


def blur(x: torch.Tensor, window: int = 7, sigma: float = 1.5, pad: bool = True) -> torch.Tensor:
    """Separable Gaussian filter per channel; reflect padding keeps the size (``pad=False``: valid part)."""
    k = gaussian_kernel1d(window, sigma, x.dtype).to(x.device)
    c = x.shape[1]
    if pad:
        r = window // 2
        x = F.pad(x, (r, r, r, r), mode="reflect")
    x = F.conv2d(x, k.view(1, 1, 1, -1).expand(c, 1, 1, window), groups=c)
    return F.conv2d(x, k.view(1, 1, -1, 1).expand(c, 1, window, 1), groups=c)


def local_stats(a: torch.Tensor, b: torch.Tensor, window: int = 7, sigma: float = 1.5, pad: bool = True):
    """Windowed means, variances and covariance of two single-channel maps ``[B, 1, H, W]``."""
    stack = blur(torch.cat((a, b, a * a, b * b, a * b), dim=1), window, sigma, pad)
    mu_a, mu_b, aa, bb, ab = stack.split(1, dim=1)
    var_a, var_b = aa - mu_a ** 2, bb - mu_b ** 2
    return mu_a, mu_b, var_a, var_b, ab - mu_a * mu_b


def ssim_map(y_ref: torch.Tensor, y_dist: torch.Tensor, window: int = 7, sigma: float = 1.5, pad: bool = True):
    """(F1) the SSIM map of two luma maps ``[B, 1, H, W]`` (Wang et al. 2004, Eq. 13; population covariance)."""
    mu_r, mu_d, var_r, var_d, cov = local_stats(y_ref, y_dist, window, sigma, pad)
    return ((2 * mu_r * mu_d + C1) * (2 * cov + C2)) / ((mu_r ** 2 + mu_d ** 2 + C1) * (var_r + var_d + C2))


def vif_terms(y_ref, y_dist, window: int = 7, sigma: float = 1.5, pad: bool = True, sigma_n2: float = SIGMA_N2):
    """Pixel-VIF numerator and denominator maps (log2 information; the clamps of the usual VIF-p code)."""
    _, _, var_r, var_d, cov = local_stats(y_ref, y_dist, window, sigma, pad)
    var_r, var_d = var_r.clamp_min(0.0), var_d.clamp_min(0.0)
    g = cov.clamp_min(0.0) / (var_r + 1e-10)
    sv = (var_d - g * cov.clamp_min(0.0)).clamp_min(1e-10)
    num = torch.log2(1 + g ** 2 * var_r / (sv + sigma_n2))
    den = torch.log2(1 + var_r / sigma_n2)
    return num, den


def vif_map(y_ref, y_dist, window: int = 7, sigma: float = 1.5):
    """(F2) the per-pixel VIF information ratio I = num / (den + 1e-4)."""
    num, den = vif_terms(y_ref, y_dist, window, sigma)
    return num / (den + 1e-4)


def chroma_map(ycc_ref: torch.Tensor, ycc_dist: torch.Tensor, window: int = 7, sigma: float = 1.5):
    """(F3) smoothed BT.601 chroma difference sqrt(dCb^2 + dCr^2 + 1e-6)."""
    d = ycc_ref[:, 1:] - ycc_dist[:, 1:]
    return blur(torch.sqrt((d ** 2).sum(1, keepdim=True) + 1e-6), window, sigma)


def lbp_offsets(P: int = 8, R: float = 1.0) -> list[tuple[float, float]]:
    """The (row, col) offsets of the P neighbours on the radius-R circle, rounded as in scikit-image."""
    return [(round(-R * math.sin(2 * math.pi * p / P), 5), round(R * math.cos(2 * math.pi * p / P), 5)) for p in range(P)]


def lbp_neighbours(y: torch.Tensor) -> torch.Tensor:
    """``[B, 8, H, W]``: the 8 radius-1 neighbours of every pixel by bilinear interpolation (replicate border)."""
    h, w = y.shape[-2:]
    yp = F.pad(y, (2, 2, 2, 2), mode="replicate")
    out = []
    for dr, dc in lbp_offsets():
        r0, c0 = math.floor(dr), math.floor(dc)
        fr, fc = dr - r0, dc - c0
        acc = 0.0
        for rr, wr in ((r0, 1 - fr), (r0 + 1, fr)):
            for cc, wc in ((c0, 1 - fc), (c0 + 1, fc)):
                if wr * wc == 0:
                    continue
                acc = acc + wr * wc * yp[..., 2 + rr:2 + rr + h, 2 + cc:2 + cc + w]
        out.append(acc)
    return torch.cat(out, dim=1)


def lbp_bits(y: torch.Tensor, mode: str = "soft", T: float = LBP_T) -> torch.Tensor:
    """The 8 LBP bits per pixel: sigmoid((n_k - c) / T) ("soft"), the step n_k >= c ("hard") or the BPDA
    straight-through estimate ("bpda": hard values, soft gradient)."""
    if mode not in LBP_MODES:
        raise ValueError(f"lbp mode must be one of {LBP_MODES}, got {mode!r}")
    if T <= 0:
        raise ValueError(f"LBP temperature must be > 0, got {T}")
    diff = lbp_neighbours(y) - y
    hard = (diff >= 0).to(y.dtype)
    if mode == "hard":
        return hard
    soft = torch.sigmoid(diff / T)
    return soft if mode == "soft" else soft + (hard - soft).detach()


def lbp_codes(y: torch.Tensor) -> torch.Tensor:
    """Hard LBP codes sum_k [n_k >= c] 2^k, the 'default' method of scikit-image's local_binary_pattern."""
    weights = (2 ** torch.arange(8, dtype=y.dtype, device=y.device)).view(1, 8, 1, 1)
    return (lbp_bits(y, "hard") * weights).sum(1)


def lbp_map(y_ref, y_dist, mode: str = "soft", T: float = LBP_T):
    """(F4) the LBP difference map (1/8) sum_k |b_k(Y_R) - b_k(Y_D)|."""
    return (lbp_bits(y_ref, mode, T) - lbp_bits(y_dist, mode, T)).abs().mean(1, keepdim=True)


def level_features(ref: torch.Tensor, dist: torch.Tensor, window: int = 7, lbp: str = "soft") -> torch.Tensor:
    """``[B, 4, H, W]``: the four maps (F1)-(F4) at one pyramid level."""
    ycc_r, ycc_d = rgb_to_ycbcr(ref), rgb_to_ycbcr(dist)
    y_r, y_d = ycc_r[:, :1], ycc_d[:, :1]
    return torch.cat((ssim_map(y_r, y_d, window), vif_map(y_r, y_d, window), chroma_map(ycc_r, ycc_d, window),
                      lbp_map(y_r, y_d, lbp)), dim=1)


def feature_pyramid(ref: torch.Tensor, dist: torch.Tensor, levels: int = 3, window: int = 7, lbp: str = "soft",
                    check: bool = True) -> list[torch.Tensor]:
    """The four maps at ``levels`` dyadic scales (2x2 average pooling of ref and dist), finest first."""
    if levels < 1:
        raise ValueError(f"levels must be >= 1, got {levels}")
    if check:
        check_pair(ref, dist, levels, window)
    out = []
    for level in range(levels):
        if level:
            ref, dist = F.avg_pool2d(ref, 2), F.avg_pool2d(dist, 2)
        out.append(level_features(ref, dist, window, lbp))
    return out
