"""AmbiSuR's regularisers (brief 2.3) and the PGSR base losses (brief 2.2)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .model import sh_degree


def rcc_surrogate(weights: torch.Tensor, colors: torch.Tensor, lam: float) -> torch.Tensor:
    """0.5 lambda sum_p sum_i sg(w_i(p)) ||c_i - sg(C(p))||^2 for dense weights (P, N) and colours (N, 3):
    the loss whose colour gradient is the official RCC injection (brief 2.3 (2)); C = sum_i w_i c_i."""
    if lam < 0:
        raise ValueError(f"rcc_surrogate: lambda_rc must be >= 0, got {lam}")
    w = weights.detach()
    C = (w @ colors).detach()
    diff = colors[None, :, :] - C[:, None, :]
    return 0.5 * lam * (w[..., None] * diff ** 2).sum()


def rcc_lambda_per_pixel(lambda_rel: float, H: int, W: int) -> float:
    """lambda_rc = lambda_rel / (3 H W): the official per-pixel weight from a mean-normalised one (brief 2.3)."""
    if lambda_rel < 0:
        raise ValueError(f"lambda_rel must be >= 0, got {lambda_rel}")
    return lambda_rel / (3 * H * W)


def sh_uncertainty(sh: torch.Tensor) -> torch.Tensor:
    """u_i = (sum_{l=1..L} sum_m ||k_lm||^2)^{1/2}, the norm of the view-dependent SH bands (brief 2.3 (3));
    the official ``compute_weighted_sh_norm`` with "equal" weights, generalised from 15 coefficients to (L+1)^2-1."""
    sh_degree(sh.shape[1])
    return sh[:, 1:, :].detach().flatten(1).norm(dim=1)


def sh_ambiguity(sh: torch.Tensor, upper: float = 0.95, lower: float = 0.10, lower_max: float = 0.2):
    """Dual-end indicator m_i = 1[u_i > Q_upper(u)] or 1[u_i < min(Q_lower(u), lower_max)]: returns
    (mask (N,) float, u (N,), high (N,) bool, low (N,) bool). Quantiles are over all Gaussians."""
    for name, q in (("upper", upper), ("lower", lower)):
        if not 0 < q < 1:
            raise ValueError(f"sh_ambiguity: {name} quantile must be in (0, 1), got {q}")
    if lower >= upper:
        raise ValueError(f"sh_ambiguity: lower ({lower}) must be below upper ({upper})")
    if not lower_max >= 0:
        raise ValueError(f"sh_ambiguity: lower_max must be >= 0, got {lower_max}")
    u = sh_uncertainty(sh)
    hi = u > torch.quantile(u, upper)
    lo = u < torch.clamp_max(torch.quantile(u, lower), lower_max)
    return (hi | lo).float(), u, hi, lo


def alr_loss(normal_d: torch.Tensor, normal_prior: torch.Tensor, U: torch.Tensor, alpha: torch.Tensor,
             weight: float = 0.1) -> torch.Tensor:
    """Amorphous Local Regulariser (brief 2.3 (4)): weight * mean_p (1 - <N_prior, N_d sg(A)>) sg(U)."""
    if normal_d.shape != normal_prior.shape or normal_d.shape[:2] != U.shape:
        raise ValueError(f"alr_loss: shapes differ: N_d {tuple(normal_d.shape)}, N_prior {tuple(normal_prior.shape)}, "
                         f"U {tuple(U.shape)}")
    if alpha.shape != U.shape:
        raise ValueError(f"alr_loss: alpha {tuple(alpha.shape)} must have U's shape {tuple(U.shape)}")
    if not (math.isfinite(weight) and weight >= 0):
        raise ValueError(f"alr_loss: weight must be >= 0, got {weight}")
    cos = (normal_prior * normal_d * alpha.detach()[..., None]).sum(-1)
    return weight * ((1 - cos) * U.detach()).mean()


def photometric(pred: torch.Tensor, gt: torch.Tensor, lam: float = 0.2) -> torch.Tensor:
    """(1 - lam) L1 + lam (1 - SSIM), images (H, W, 3) in [0, 1]. Deviation, named: pytorch-msssim's SSIM with a
    7x7 Gaussian window (sigma 1.5) and no padding (the mean over valid windows), where the official
    ``loss_utils.ssim`` uses an 11x11 window with same-padding; at 32-48 px an 11x11 window spans a third of the
    image."""
    from pytorch_msssim import ssim

    if pred.shape != gt.shape:
        raise ValueError(f"photometric: image shapes differ: {tuple(pred.shape)} vs {tuple(gt.shape)}")
    l1 = (pred - gt).abs().mean()
    s = ssim(pred.permute(2, 0, 1)[None], gt.permute(2, 0, 1)[None], data_range=1.0, win_size=7, size_average=True)
    return (1 - lam) * l1 + lam * (1 - s)


def depth_normal_loss(normal_d, normal, alpha, image) -> torch.Tensor:
    """PGSR single-view term: mean_p (1 - |grad I|)^2 ||N_d sg(A) - N||_1 (N normalised). Deviation, named: the
    official ``train.py`` compares the UNnormalised blended normal N with N_d sg(A) and weights pixels by
    ``get_img_grad_weight`` (the max of the x/y central differences, min-max normalised, border padded with 1);
    here N is normalised (at 32-48 px with a few hundred Gaussians many pixels have A well below 1, where the
    unnormalised normal shrinks and the term would mostly push opacity) and the weight is (1 - clamp(|g_x| +
    |g_y|))^2, not min-max normalised."""
    g = image.mean(-1)
    gx = F.pad((g[:, 2:] - g[:, :-2]).abs() / 2, (1, 1))
    gy = F.pad((g[2:] - g[:-2]).abs() / 2, (0, 0, 1, 1))
    wgt = (1 - torch.clamp(gx + gy, 0, 1)) ** 2
    n = F.normalize(normal, dim=-1)
    return (wgt[..., None] * (normal_d * alpha.detach()[..., None] - n * (alpha.detach() > 0)[..., None]).abs()).sum(-1).mean()


def prior_depth_loss(depth, prior, extent: float) -> torch.Tensor:
    """mean over pixels with a prior (prior > 0) of |Z_prior - Z| / extent (brief 2.2)."""
    if depth.shape != prior.shape:
        raise ValueError(f"prior_depth_loss: depth {tuple(depth.shape)} and prior {tuple(prior.shape)} differ")
    if not bool(torch.isfinite(prior).all()) or bool((prior < 0).any()):
        raise ValueError("prior_depth_loss: prior depth must be finite and >= 0 (0 marks pixels without a prior)")
    m = prior > 0
    if not bool(m.any()):
        raise ValueError("prior_depth_loss: prior depth has no pixel > 0")
    return ((prior - depth).abs()[m]).mean() / extent


def psnr(pred, gt) -> float:
    mse = float(((pred - gt) ** 2).mean())
    return 10 * math.log10(1.0 / max(mse, 1e-12))


def _patch_norm_mse(x: torch.Tensor, y: torch.Tensor, patch: int, margin: float, global_std: bool) -> torch.Tensor:
    """Official ``patch_norm_mse_loss[_global]`` (utils/loss_utils.py): split both maps into patch x patch tiles,
    subtract each tile's mean, divide by the tile's std (local) or the detached map's std (global), then the
    mean squared difference over entries whose |difference| exceeds ``margin``."""
    def tiles(m):
        return F.unfold(m[None, None], kernel_size=patch, stride=patch)[0].T   # (tiles, patch^2)

    def norm(t, std):
        mean = t.mean(1, keepdim=True)
        s = t.std(1, keepdim=True) if std is None else std
        return (t - mean) / (s + 1e-2 * torch.std(t.reshape(-1) + 1e-5))

    tx, ty = tiles(x), tiles(y)
    nx = norm(tx, x.std().detach() if global_std else None)
    ny = norm(ty, y.std().detach() if global_std else None)
    d = nx - ny
    keep = d.abs() > margin
    return (d[keep] ** 2).mean() if bool(keep.any()) else d.sum() * 0


def mono_depth_loss(depth: torch.Tensor, mono_disp: torch.Tensor, alpha: torch.Tensor, patch: int,
                    margin: float = 1e-3) -> torch.Tensor:
    """AmbiSuR-MONO's depth term (official ``DepthAnythingv2Loss``): an affine-invariant disparity prior d_mono
    compared with the plane depth Z through patch-normalised MSE, global std plus 0.1 x local std:
    L = PNM_global(Z, -d_mono) + 0.1 PNM_local(Z, -d_mono); pixels with A < 0.8 are set to the mean of the rest
    on both maps. (The official patch is 17-31 px at 800 x 600; the caller scales it to the image size.)"""
    if depth.shape != mono_disp.shape or depth.shape != alpha.shape:
        raise ValueError(f"mono_depth_loss: shapes differ: {tuple(depth.shape)}, {tuple(mono_disp.shape)}, "
                         f"{tuple(alpha.shape)}")
    H, W = depth.shape
    if not 2 <= patch <= min(H, W):
        raise ValueError(f"mono_depth_loss: patch must be in [2, {min(H, W)}], got {patch}")
    z = depth.clamp_min(1e-3)
    mono = -mono_disp
    bad = alpha.detach() < 0.8
    if bool(bad.all()):
        return depth.sum() * 0
    z = torch.where(bad, z[~bad].mean(), z)
    mono = torch.where(bad, mono[~bad].mean(), mono)
    return _patch_norm_mse(z, mono, patch, margin, True) + 0.1 * _patch_norm_mse(z, mono, patch, margin, False)
