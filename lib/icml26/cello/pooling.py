"""Gated attention pooling (Ilse et al. 2018; brief 2.2c) with masks, and per-region pooling (2.2b).

``f_c = w^T (tanh(V h_c) * sigmoid(U h_c))``, ``a = masked_softmax(f)``, ``z = sum_c a_c h_c``. The
parameters are laid out as torchmil 1.0.2's `AttentionPool(gated=True)` (``fc1`` = V, ``fc_gated`` =
U, ``fc2`` = w), so weights copy across and the two agree to float precision (tests/test_cello.py).
"""
from __future__ import annotations

import torch
from torch import nn


def check_bag(X: torch.Tensor, mask: torch.Tensor | None, name: str = "bag") -> torch.Tensor:
    """Validate a padded batch of bags (B, N, d) and its mask (B, N); returns the mask (ones if None)."""
    if not isinstance(X, torch.Tensor) or X.ndim != 3:
        raise ValueError(f"{name}: features must be a (batch, cells, dim) tensor, got {getattr(X, 'shape', type(X))}")
    if X.shape[1] == 0:
        raise ValueError(f"{name}: a bag with no cells")
    if not torch.isfinite(X).all():
        raise ValueError(f"{name}: features contain NaN or inf")
    if mask is None:
        return torch.ones(X.shape[:2], dtype=X.dtype, device=X.device)
    if tuple(mask.shape) != tuple(X.shape[:2]):
        raise ValueError(f"{name}: mask shape {tuple(mask.shape)} does not match features {tuple(X.shape[:2])}")
    if (mask.sum(1) == 0).any():
        raise ValueError(f"{name}: a bag with no cells (mask all zero)")
    return mask.to(X.dtype)


def masked_softmax(f: torch.Tensor, mask: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Softmax of f over `dim` where mask == 1 (masked entries get exactly 0)."""
    return torch.softmax(f.masked_fill(mask == 0, float("-inf")), dim=dim)


class GatedAttentionPool(nn.Module):
    """Gated ABMIL pooling. ``forward(X, mask)`` -> (z (B, d), a (B, N) normalised weights, f logits)."""

    def __init__(self, in_dim: int, att_dim: int = 32, gated: bool = True):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, att_dim)
        self.fc_gated = nn.Linear(in_dim, att_dim) if gated else None
        self.fc2 = nn.Linear(att_dim, 1, bias=False)
        self.gated = gated

    def logits(self, X: torch.Tensor) -> torch.Tensor:
        H = torch.tanh(self.fc1(X))
        if self.gated:
            H = H * torch.sigmoid(self.fc_gated(X))
        return self.fc2(H).squeeze(-1)

    def forward(self, X: torch.Tensor, mask: torch.Tensor | None = None):
        mask = check_bag(X, mask, "GatedAttentionPool")
        f = self.logits(X)
        a = masked_softmax(f, mask)
        return torch.bmm(a.unsqueeze(1), X).squeeze(1), a, f

    def load_torchmil(self, pool) -> "GatedAttentionPool":
        """Copy the weights of a torchmil `AttentionPool(gated=True)` (its lazy layers must be built)."""
        self.fc1.load_state_dict(pool.fc1.module.state_dict())
        if self.gated:
            self.fc_gated.load_state_dict(pool.fc_gated.module.state_dict())
        self.fc2.load_state_dict(pool.fc2.state_dict())
        return self


def region_onehot(region: torch.Tensor, mask: torch.Tensor, n_regions: int) -> torch.Tensor:
    """(B, N, R) membership of each (unmasked) cell in its region."""
    if region.shape != mask.shape:
        raise ValueError(f"region shape {tuple(region.shape)} does not match the mask {tuple(mask.shape)}")
    if region.numel() and (int(region.min()) < 0 or int(region.max()) >= n_regions):
        raise ValueError(f"region indices must be in [0, {n_regions})")
    return nn.functional.one_hot(region.long(), n_regions).to(mask.dtype) * mask.unsqueeze(-1)


def region_softmax(f: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
    """alpha_{c|r}: softmax of f over the cells of each region, (B, N) (each cell is in one region).

    Computed stably with a per-region max; a region with no cells contributes nothing."""
    big = torch.finfo(f.dtype).min
    fr = torch.where(onehot > 0, f.unsqueeze(-1), torch.full_like(onehot, big))     # (B, N, R)
    mx = fr.max(dim=1, keepdim=True).values.detach()
    e = torch.exp(fr - mx) * onehot
    alpha = e / e.sum(dim=1, keepdim=True).clamp_min(1e-30)
    return alpha.sum(-1)
