"""Input validation at the API boundary (shape, range, NaN) with clear ValueErrors."""
from __future__ import annotations

import numpy as np
import torch


def check_chunk(x: torch.Tensor, name: str = "chunk", horizon: int | None = None, action_dim: int | None = None) -> None:
    """A batch of action chunks: a finite tensor shaped ``(B, T, D_a)``."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor shaped (B, T, D_a), got {type(x).__name__}")
    if x.ndim != 3:
        raise ValueError(f"{name} must be shaped (B, T, D_a), got shape {tuple(x.shape)}")
    if horizon is not None and x.shape[1] != horizon:
        raise ValueError(f"{name} has horizon {x.shape[1]}, expected T = {horizon}")
    if action_dim is not None and x.shape[2] != action_dim:
        raise ValueError(f"{name} has action dimension {x.shape[2]}, expected D_a = {action_dim}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinite values")


def check_horizon(horizon: int, n_obs_steps: int, n_action_steps: int) -> None:
    """The chunk must contain the executed window: horizon >= n_obs_steps - 1 + n_action_steps."""
    if not isinstance(n_obs_steps, int) or n_obs_steps < 1:
        raise ValueError(f"n_obs_steps must be an integer >= 1, got {n_obs_steps!r}")
    if not isinstance(n_action_steps, int) or n_action_steps < 1:
        raise ValueError(f"n_action_steps must be an integer >= 1, got {n_action_steps!r}")
    need = n_obs_steps - 1 + n_action_steps
    if not isinstance(horizon, int) or horizon < need:
        raise ValueError(f"horizon {horizon!r} is below n_obs_steps - 1 + n_action_steps = {need}: the executed "
                         "actions would not fit in the predicted chunk")


def check_finite_array(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr
