"""Action-chunk datasets from demonstrations, DP3's sequence sampler (brief §2.1).

A window starts at demo index ``i`` (``-pad_before <= i``, ``pad_before = n_obs_steps - 1``, ``pad_after =
n_action_steps - 1``); its observation history is ``obs[i .. i + n_obs_steps - 1]`` and its chunk
``actions[i .. i + T - 1]``, both edge-padded as DP3 does. Action index ``n_obs_steps - 1`` follows the
current observation, so the executed window is ``[n_obs_steps - 1, n_obs_steps - 1 + n_action_steps)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ._checks import check_finite_array, check_horizon


@dataclass
class ChunkDataset:
    obs: torch.Tensor       # (N, n_obs_steps, obs_dim)
    action: torch.Tensor    # (N, T, D_a)
    demo: torch.Tensor      # (N,) index of the source demonstration

    def __len__(self) -> int:
        return self.obs.shape[0]

    def batch(self, size: int, generator: torch.Generator) -> dict:
        idx = torch.randint(len(self), (size,), generator=generator)
        return {"obs": self.obs[idx], "action": self.action[idx]}


def make_chunks(demos: list[dict], horizon: int, n_obs_steps: int = 2, n_action_steps: int = 4,
                pad: bool = True) -> ChunkDataset:
    """All windows of every demo (dicts with ``obs`` (L+1 or L, obs_dim) and ``actions`` (L, D_a)).

    ``pad=True`` edge-pads short demos as DP3 does; ``pad=False`` raises on a demo shorter than the horizon.
    """
    check_horizon(horizon, n_obs_steps, n_action_steps)
    if not demos:
        raise ValueError("no demonstrations given")
    pad_before, pad_after = n_obs_steps - 1, n_action_steps - 1
    O, A, D = [], [], []
    for j, d in enumerate(demos):
        obs = check_finite_array(d["obs"], f"demo {j} obs")
        act = check_finite_array(d["actions"], f"demo {j} actions")
        if act.ndim != 2 or obs.ndim != 2 or obs.shape[0] < act.shape[0]:
            raise ValueError(f"demo {j}: obs must be (L or L+1, obs_dim) and actions (L, D_a), got {obs.shape}, {act.shape}")
        L = act.shape[0]
        if L < horizon and not pad:
            raise ValueError(f"demo {j} has {L} steps, shorter than the horizon {horizon} (use pad=True to edge-pad)")
        if L < 1:
            raise ValueError(f"demo {j} is empty")
        for i in range(-pad_before, max(L - horizon + pad_after, -pad_before) + 1):
            oi = np.clip(np.arange(i, i + n_obs_steps), 0, L - 1)
            ai = np.clip(np.arange(i, i + horizon), 0, L - 1)
            O.append(obs[oi])
            A.append(act[ai])
            D.append(j)
    return ChunkDataset(torch.tensor(np.array(O), dtype=torch.float32), torch.tensor(np.array(A), dtype=torch.float32),
                        torch.tensor(D))
