"""The Hessian misalignment diagnostic (brief section 3, "Rotation lemma").

``r(H) = ||H||_{1,1} / tr(H)`` with ``||H||_{1,1} = sum_ij |H_ij|``: ``r >= 1`` for a PSD matrix,
with equality iff ``H`` is diagonal, i.e. iff the coordinate axes are its eigenbasis. The paper's
bound scales with ``||H||_{1,1}``, so a rotation that lowers ``r`` lowers the delay penalty.

For a weight ``W`` (m x n) flattened row-major (``torch``'s ``reshape(-1)``), rotating to
``W = U Wt V^T`` gives ``vec(W) = (U kron V) vec(Wt)`` and the Hessian in the new coordinates
``Ht = K^T H K`` with ``K = U kron V``.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch


def l11_ratio(H) -> float:
    """``||H||_{1,1} / tr(H)``; the trace must be positive."""
    H = torch.as_tensor(H)
    if H.dim() != 2 or H.shape[0] != H.shape[1]:
        raise ValueError(f"H must be a square matrix, got shape {tuple(H.shape)}")
    if not torch.isfinite(H).all():
        raise ValueError("H contains NaN or inf")
    tr = float(torch.diagonal(H).sum())
    if tr <= 0:
        raise ValueError(f"r(H) needs a positive trace, got tr(H) = {tr:g}")
    return float(H.abs().sum()) / tr


def weight_hessian(loss_of_weight: Callable[[torch.Tensor], torch.Tensor], W: torch.Tensor) -> torch.Tensor:
    """Exact Hessian of ``loss_of_weight(W)`` w.r.t. the entries of ``W`` (row-major), shape (mn, mn)."""
    if W.dim() != 2:
        raise ValueError("W must be a 2-D weight")
    H = torch.autograd.functional.hessian(lambda w: loss_of_weight(w.reshape(W.shape)), W.detach().reshape(-1),
                                          vectorize=True)
    return 0.5 * (H + H.T)


def rotate_hessian(H: torch.Tensor, U: torch.Tensor | None, V: torch.Tensor | None, shape) -> torch.Tensor:
    """``K^T H K`` with ``K = U kron V`` (identity on a ``None`` side), for a weight of ``shape``."""
    m, n = shape
    if H.shape != (m * n, m * n):
        raise ValueError(f"H must be {(m * n, m * n)} for a {m} x {n} weight, got {tuple(H.shape)}")
    U = torch.eye(m, dtype=H.dtype) if U is None else U.to(H.dtype)
    V = torch.eye(n, dtype=H.dtype) if V is None else V.to(H.dtype)
    K = torch.kron(U, V)
    return K.T @ H @ K


def cauchy_l11_estimate(hvp: Callable[[torch.Tensor], torch.Tensor], dim: int, n_draws: int, seed: int = 0) -> float:
    """Estimate ``||H||_{1,1}`` from Hessian-vector products only.

    With ``z`` i.i.d. standard Cauchy, ``(H z)_i`` is Cauchy with scale ``sum_j |H_ij|``, and the
    median of ``|Cauchy(0, s)|`` is ``s``; summing the per-row medians estimates the (1,1)-norm.
    """
    if n_draws < 1 or dim < 1:
        raise ValueError("n_draws and dim must be >= 1")
    g = torch.Generator().manual_seed(seed)
    Z = torch.distributions.Cauchy(0.0, 1.0).icdf(torch.rand(dim, n_draws, generator=g, dtype=torch.float64)
                                                  .clamp(1e-12, 1 - 1e-12))
    HZ = torch.stack([hvp(Z[:, k]) for k in range(n_draws)], 1)
    return float(np.median(HZ.abs().numpy(), axis=1).sum())
