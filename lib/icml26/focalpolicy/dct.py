"""The orthonormal DCT-II along the time axis of an action chunk (the FCO's frequency transform, brief §2.4).

The released code calls ``torch_dct.dct(x, norm="ortho")`` on the last axis after moving time there; here
the transform is one precomputed orthonormal matrix ``C`` (``C @ C.T = I``),

    C[k, n] = sqrt((2 - delta_k0) / T) * cos(pi * (2n + 1) * k / (2T)),

applied to chunks shaped ``(B, T, D_a)`` as one broadcast matmul ``C @ x`` instead of an FFT.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from ._checks import check_chunk


@lru_cache(maxsize=32)
def _dct_numpy(T: int) -> np.ndarray:
    k = np.arange(T)[:, None]
    n = np.arange(T)[None, :]
    C = np.cos(math.pi * (2 * n + 1) * k / (2 * T)) * np.sqrt(2.0 / T)
    C[0] /= math.sqrt(2.0)
    C.setflags(write=False)
    return C


def dct_matrix(T: int, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> torch.Tensor:
    """The ``(T, T)`` orthonormal DCT-II matrix (rows are frequencies)."""
    if not isinstance(T, int) or T < 1:
        raise ValueError(f"DCT length T must be a positive integer, got {T!r}")
    return _dct_torch(T).to(dtype=dtype, device=device)


@lru_cache(maxsize=32)
def _dct_torch(T: int) -> torch.Tensor:
    return torch.tensor(np.array(_dct_numpy(T)), dtype=torch.float64)


def dct_ortho(chunks: torch.Tensor) -> torch.Tensor:
    """Orthonormal DCT-II of ``(B, T, D_a)`` chunks along time (axis 1); same shape, frequencies on axis 1."""
    check_chunk(chunks, "chunks")
    C = dct_matrix(chunks.shape[1], dtype=chunks.dtype, device=chunks.device)
    return C @ chunks          # (T, T) @ (B, T, D_a), broadcast over the batch
