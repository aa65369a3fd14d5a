"""The digits stand-in for CIFAR/ImageNet and the perturbation family ``a ~ A`` (brief §2.2, §5.1).

sklearn's bundled 8x8 ``load_digits`` (1,797 images, 17 grey levels, 10 classes) scaled to [-1, 1]; a
fixed split into a 500-image test set (linear probe) and a 1,297-image training pool. A perturbation is
an augmentation *followed by* additive Gaussian noise ``N(0, sigma^2 I)`` (the paper's order, §2.2).
Flips are not used: they change a digit's meaning.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

AUG_LEVELS: dict[int, dict[str, float]] = {
    0: dict(shift=0.0, rotate=0.0, contrast=0.0, brightness=0.0),   # noise only
    1: dict(shift=0.5, rotate=0.0, contrast=0.0, brightness=0.0),   # sub-pixel translation (RandomCrop analogue)
    2: dict(shift=0.5, rotate=6.0, contrast=0.0, brightness=0.0),   # + small rotation
    3: dict(shift=0.5, rotate=6.0, contrast=0.1, brightness=0.05),  # + photometric jitter (default, "Aug.3")
    4: dict(shift=1.0, rotate=12.0, contrast=0.2, brightness=0.1),  # stronger
}
"""Augmentation levels mirroring the paper's Aug.1-Aug.5 ablation (App. B.6): max shift in pixels, max
rotation in degrees, contrast factor in ``1 +/- contrast``, brightness offset in ``+/- brightness``."""


@dataclass(frozen=True)
class DigitsSplit:
    """Training pool and held-out test images, ``(n, 1, 8, 8)`` float32 in [-1, 1]."""

    pool_x: torch.Tensor
    pool_y: np.ndarray
    test_x: torch.Tensor
    test_y: np.ndarray

    @property
    def sigma_data(self) -> float:
        """Standard deviation of the training pixels: EDM's ``sigma_data``."""
        return float(self.pool_x.std())


def load_digits_split(n_test: int = 500, seed: int = 0) -> DigitsSplit:
    """The fixed pool/test split of sklearn's digits (bundled with scikit-learn: no download)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    if not 0 < n_test < len(digits.target):
        raise ValueError(f"n_test must be in (0, {len(digits.target)}), got {n_test}")
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 8.0 - 1.0
    perm = np.random.default_rng(seed).permutation(len(x))
    test, pool = perm[:n_test], perm[n_test:]
    return DigitsSplit(x[pool], digits.target[pool].copy(), x[test], digits.target[test].copy())


def training_subset(split: DigitsSplit, n: int, seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
    """``n`` images of the pool drawn without replacement (the data-limited regimes, N = 16, 32, 64)."""
    if not 1 <= n <= len(split.pool_x):
        raise ValueError(f"n must be in [1, {len(split.pool_x)}], got {n}")
    idx = np.sort(np.random.default_rng(seed).choice(len(split.pool_x), size=n, replace=False))
    return split.pool_x[idx], split.pool_y[idx]


def augment(x: torch.Tensor, level: int = 3, generator: torch.Generator | None = None) -> torch.Tensor:
    """One independent random augmentation per image (bilinear affine warp, background padded with -1)."""
    if level not in AUG_LEVELS:
        raise ValueError(f"unknown augmentation level {level}; valid levels: {sorted(AUG_LEVELS)}")
    if x.ndim != 4:
        raise ValueError(f"expected images of shape (n, c, h, w), got {tuple(x.shape)}")
    p = AUG_LEVELS[level]
    n = x.shape[0]
    if all(v == 0 for v in p.values()):
        return x.clone()

    def uniform(scale: float) -> torch.Tensor:
        return (torch.rand(n, generator=generator) * 2 - 1) * scale

    angle = uniform(p["rotate"]) * math.pi / 180
    # translation in normalised coordinates: 1 pixel = 2 / width
    tx, ty = uniform(p["shift"]) * 2 / x.shape[-1], uniform(p["shift"]) * 2 / x.shape[-2]
    contrast, brightness = 1 + uniform(p["contrast"]), uniform(p["brightness"])
    cos, sin = torch.cos(angle), torch.sin(angle)
    theta = torch.stack([torch.stack([cos, -sin, tx], 1), torch.stack([sin, cos, ty], 1)], 1).to(x)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    warped = F.grid_sample(x + 1, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return warped * contrast.view(-1, 1, 1, 1).to(x) - 1 + brightness.view(-1, 1, 1, 1).to(x)


def perturb(x: torch.Tensor, sigma: float, level: int = 3, generator: torch.Generator | None = None) -> torch.Tensor:
    """``a(x0) = augment(x0) + sigma * eps``: augmentation first, then noise (brief §2.2, pitfall 1)."""
    if not sigma >= 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    xa = augment(x, level, generator)
    return xa + sigma * torch.randn(xa.shape, generator=generator).to(xa)
