"""Determinism and hardware: one call seeds every generator; `device()` picks CUDA when present."""
from __future__ import annotations

import os
import random

import numpy as np


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python's `random`, NumPy's legacy global state and torch (CPU and CUDA).

    Returns a fresh `numpy.random.Generator` for code that takes an explicit generator.
    """
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    os.environ["PYTHONHASHSEED"] = str(seed)  # for subprocesses started from here
    try:
        import torch
    except ImportError:  # torch is a dependency, but keep the runtime importable without it
        return np.random.default_rng(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    return np.random.default_rng(seed)


def device(prefer: str | None = None):
    """The torch device to compute on: CUDA when present, else CPU.

    ``prefer`` (or ``$ICML26_DEVICE``) forces one, e.g. ``"cpu"`` on a GPU machine.
    """
    import torch

    choice = prefer or os.environ.get("ICML26_DEVICE")
    if choice:
        dev = torch.device(choice)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("CUDA was requested but torch sees no CUDA device")
        return dev
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
