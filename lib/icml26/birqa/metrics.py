"""Classical full-reference baselines (torch, differentiable, so they can be attacked too) and the
correlation scores of IQA (SROCC, PLCC, KRCC).

PSNR; SSIM (the mean of features.ssim_map over its valid part, Gaussian window sigma 1.5: with an 11-tap
window it equals skimage's ``structural_similarity(gaussian_weights=True)`` and pytorch-msssim, tests);
MS-SSIM over 3 scales (our inputs are too small for the 5 scales of Wang et al. 2003); one-scale pixel VIF (our 32-px
inputs are below the 41-px minimum of the 4-scale VIF-p); GMSD (Xue et al. 2014, Prewitt gradients) -- GMSD is also a component of the oracle MOS,
so it is flagged wherever it appears beside the baselines.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats

from .features import check_pair, rgb_to_ycbcr, ssim_map

MS_SSIM_WEIGHTS = (0.0448, 0.2856, 0.3001)  # the first three of Wang et al. 2003, renormalised below
GMSD_C = 170.0 / 255.0 ** 2


def _luma(x):
    return rgb_to_ycbcr(x)[:, :1]


def psnr(ref, dist, check: bool = True):
    if check:
        check_pair(ref, dist)
    mse = ((ref - dist) ** 2).mean((1, 2, 3)).clamp_min(1e-10)
    return 10 * torch.log10(1.0 / mse)


def ssim(ref, dist, window: int = 7, check: bool = True):
    """Mean SSIM of luma over the valid part of the window (no padding)."""
    if check:
        check_pair(ref, dist, 1, window)
    return ssim_map(_luma(ref), _luma(dist), window, pad=False).mean((1, 2, 3))


def ms_ssim(ref, dist, window: int = 7, scales: int = 3, check: bool = True):
    """MS-SSIM (Wang et al. 2003) over ``scales`` scales: contrast-structure at every scale, luminance at the last."""
    from .features import local_stats

    if check:
        check_pair(ref, dist, scales, window)
    w = torch.tensor(MS_SSIM_WEIGHTS[:scales], device=ref.device) / sum(MS_SSIM_WEIGHTS[:scales])
    a, b, out = _luma(ref), _luma(dist), 1.0
    for s in range(scales):
        mu_a, mu_b, va, vb, cov = local_stats(a, b, window, pad=False)
        cs = ((2 * cov + 0.03 ** 2) / (va + vb + 0.03 ** 2)).mean((1, 2, 3)).clamp_min(1e-6)
        if s == scales - 1:
            lum = ((2 * mu_a * mu_b + 0.01 ** 2) / (mu_a ** 2 + mu_b ** 2 + 0.01 ** 2)).mean((1, 2, 3))
            out = out * (cs * lum.clamp_min(1e-6)) ** w[s]
        else:
            out = out * cs ** w[s]
            a, b = F.avg_pool2d(a, 2), F.avg_pool2d(b, 2)
    return out


def vif(ref, dist, window: int = 7, check: bool = True):
    """Pixel VIF at one scale: sum of the information numerator over sum of the denominator (features.vif_terms,
    valid part of the window). Our 32-px inputs are below the 41-px minimum of the 4-scale VIF-p."""
    from .features import vif_terms

    if check:
        check_pair(ref, dist, 1, window)
    num, den = vif_terms(_luma(ref), _luma(dist), window, pad=False)
    return num.sum((1, 2, 3)) / den.sum((1, 2, 3))


PREWITT = torch.tensor([[1.0, 0.0, -1.0], [1.0, 0.0, -1.0], [1.0, 0.0, -1.0]]) / 3.0


def gradient_magnitude(y):
    """Prewitt gradient magnitude of a luma map ``[B, 1, H, W]`` (valid part, kernels / 3 as in GMSD)."""
    kx = PREWITT.to(y).view(1, 1, 3, 3)
    gx, gy = F.conv2d(y, kx), F.conv2d(y, kx.transpose(-1, -2))
    return torch.sqrt(gx ** 2 + gy ** 2 + 1e-12)


def gmsd(ref, dist, check: bool = True):
    """GMSD (Xue et al. 2014, Eqs. 4-6): std of the gradient-magnitude similarity after 2x2 average pooling.
    A distortion (higher is worse); an oracle component."""
    if check:
        check_pair(ref, dist)
    a, b = F.avg_pool2d(_luma(ref), 2), F.avg_pool2d(_luma(dist), 2)
    ga, gb = gradient_magnitude(a), gradient_magnitude(b)
    gms = (2 * ga * gb + GMSD_C) / (ga ** 2 + gb ** 2 + GMSD_C)
    return gms.flatten(1).std(1, unbiased=False)


BASELINES = {"PSNR": psnr, "SSIM": ssim, "MS-SSIM (3 scales)": ms_ssim, "VIF (1 scale)": vif, "GMSD (oracle part)": gmsd}
HIGHER_IS_WORSE = {"GMSD (oracle part)"}


def _xy(pred, mos):
    x, y = np.asarray(pred, dtype=float).ravel(), np.asarray(mos, dtype=float).ravel()
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"need matching prediction/MOS vectors of >= 3 pairs, got {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return None, None
    return x, y


def _correlation(statistic, pred, mos) -> float:
    """`statistic`(x, y) on the finite pairs (NaN for a non-finite prediction; a constant one scores 0)."""
    x, y = _xy(pred, mos)
    if x is None:
        return float("nan")
    if np.ptp(x) == 0:
        return 0.0
    return float(statistic(x, y).statistic)


def srocc(pred, mos) -> float:
    """Spearman rank correlation (NaN for a non-finite prediction; a constant one scores 0)."""
    return _correlation(stats.spearmanr, pred, mos)


def plcc(pred, mos) -> float:
    """Pearson linear correlation (NaN for a non-finite prediction; a constant one scores 0)."""
    return _correlation(stats.pearsonr, pred, mos)


def krcc(pred, mos) -> float:
    x, y = _xy(pred, mos)
    if x is None:
        return float("nan")
    return float(stats.kendalltau(x, y).statistic)
