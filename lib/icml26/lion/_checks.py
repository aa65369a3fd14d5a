"""Input checks used at the public API boundary (clear ``ValueError``s, never a silent NaN)."""
from __future__ import annotations

import math
from typing import Iterable

import torch


def check_lr(lr: float) -> None:
    if not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr < 0:
        raise ValueError(f"learning rate must be a finite number >= 0, got {lr!r}")


def check_betas(betas: Iterable[float], name: str = "betas") -> tuple[float, float]:
    betas = tuple(float(b) for b in betas)
    if len(betas) != 2:
        raise ValueError(f"{name} must be a pair (beta1, beta2), got {betas!r}")
    for b in betas:
        if not (0.0 <= b < 1.0):
            raise ValueError(f"{name} must lie in [0, 1), got {betas!r}")
    return betas  # type: ignore[return-value]


def check_weight_decay(weight_decay: float) -> None:
    if not math.isfinite(weight_decay) or weight_decay < 0:
        raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")


def check_finite(t: torch.Tensor, name: str) -> None:
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or infinite values")


def check_positive_int(k: int, name: str) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"{name} must be a positive integer, got {k!r}")
