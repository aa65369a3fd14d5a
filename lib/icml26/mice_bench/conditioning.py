"""The multi-reference conditioning shared by the learned generators: references -> slots -> aggregate ->
a bottleneck ``z`` of width ``m`` (the capacity knob).

For references r_1..r_k of dimensions d_1..d_k (editing: with an operation o_i, 0 = set, 1 = remove), slot i
is ``e_i = Enc(r_i) + E_dim[d_i] + E_op[o_i]``; the aggregate is ``a = sum_i e_i`` (``aggregator="sum"``,
order-invariant) or ``a = sum_i softmax_i(q . e_i) e_i`` (``"attention"``, one learned query: the attention
dilution analogue of the brief, Sec. 5.2). The prompt's two text-only attributes are embedded (``t``); for
editing a source encoder reads the image to edit (``s``). Then ``z = W LN(a + t + s) in R^m`` (linear): every
referenced concept has to pass through these m numbers. ``t + s`` also travels beside ``z`` (the skip path
of an editing model: what the source already shows need not squeeze through the bottleneck).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .concepts import N_DIMS


class Encoder(nn.Module):
    """A small CNN, (B, 3, S, S) -> (B, width). ``normalise="layer"`` (the source encoder): layer norm of each
    output; ``"pool"`` (the reference encoder): each feature standardised over the batch, which for
    `Conditioner.encode_bank` is always the whole reference pool (7 x V images), so the result is a fixed
    function of the pool. A randomly initialised CNN maps all references to nearly the same vector (measured:
    the common component has ~5x the norm of the differences); standardising over the pool removes it."""

    def __init__(self, width: int, normalise: str = "layer"):
        super().__init__()
        if normalise not in ("layer", "pool"):
            raise ValueError(f"normalise must be 'layer' or 'pool', got {normalise!r}")
        self.normalise = normalise
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 4, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 32, 4, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(32 * 16, width))
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        f = self.net(x)
        if self.normalise == "layer":
            return self.norm(f)
        return (f - f.mean(0)) / (f.std(0) + 1e-5)


class Conditioner(nn.Module):
    """References (+ text, + source) -> (z in R^m, side in R^width); see the module docstring."""

    def __init__(self, m: int, width: int = 96, aggregator: str = "sum"):
        super().__init__()
        if not isinstance(m, (int, np.integer)) or m < 1:
            raise ValueError(f"bottleneck width m must be an integer >= 1, got {m!r}")
        if aggregator not in ("sum", "attention"):
            raise ValueError(f"aggregator must be 'sum' or 'attention', got {aggregator!r}")
        self.m, self.width, self.aggregator = int(m), width, aggregator
        self.enc = Encoder(width, normalise="pool")
        self.src_enc = Encoder(width, normalise="layer")
        self.dim_emb = nn.Embedding(N_DIMS, width)
        self.op_emb = nn.Embedding(2, width)
        self.text_emb = nn.Embedding(4, width)
        for emb in (self.dim_emb, self.op_emb, self.text_emb):   # small: the references, not the labels, carry content
            nn.init.normal_(emb.weight, std=0.1)
        self.query = nn.Parameter(torch.randn(width) / math.sqrt(width))
        self.pre = nn.LayerNorm(width)
        self.bottleneck = nn.Linear(width, self.m)

    def encode_bank(self, bank_t):
        """Enc applied to every reference of the bank (7, V, 3, S, S) -> (7, V, width): the shared encoder
        runs once per distinct reference image instead of once per slot (the same function, fewer calls)."""
        D, V = bank_t.shape[:2]
        return self.enc(bank_t.reshape(D * V, *bank_t.shape[2:])).reshape(D, V, -1)

    def forward(self, bank_t, dims, vals, ops, mask, text, source=None, encoded=None):
        """bank_t (7, V, 3, S, S); dims, vals, ops (B, K) long; mask (B, K) bool (valid slots); text (B, 2)
        long; source (B, 3, S, S) or None. Returns z (B, m) and side = t + s (B, width)."""
        enc = self.encode_bank(bank_t) if encoded is None else encoded
        e = enc[dims, vals] + self.dim_emb(dims) + self.op_emb(ops)
        w = mask.float().unsqueeze(-1)
        if self.aggregator == "sum":
            a = (e * w).sum(1)
        else:
            logits = (e @ self.query).masked_fill(~mask, -1e9)
            a = (torch.softmax(logits, 1).unsqueeze(-1) * e * w).sum(1)
        t = self.text_emb(text[:, 0] * 2 + text[:, 1])
        side = t + (self.src_enc(source) if source is not None else torch.zeros_like(t))
        return self.bottleneck(self.pre(a + side)), side


def bank_tensor(bank: np.ndarray) -> torch.Tensor:
    """The reference bank (7, V, S, S, 3) as a (7, V, 3, S, S) tensor."""
    return torch.from_numpy(np.ascontiguousarray(bank)).permute(0, 1, 4, 2, 3).contiguous()


def image_tensor(images: np.ndarray) -> torch.Tensor:
    """Images (N, S, S, 3) as (N, 3, S, S)."""
    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2)


def pack(cases, K: int = N_DIMS):
    """Batch tensors (dims, vals, ops, mask, text) for a list of `Case`s."""
    B = len(cases)
    dims = torch.zeros(B, K, dtype=torch.long)
    vals = torch.zeros(B, K, dtype=torch.long)
    ops = torch.zeros(B, K, dtype=torch.long)
    mask = torch.zeros(B, K, dtype=torch.bool)
    text = torch.zeros(B, 2, dtype=torch.long)
    for i, c in enumerate(cases):
        n = len(c.dims)
        if not 1 <= n <= K:
            raise ValueError(f"a case needs 1..{K} references, got {n}")
        dims[i, :n] = torch.tensor(c.dims)
        vals[i, :n] = torch.tensor(c.values)
        if c.ops:
            ops[i, :n] = torch.tensor(c.ops)
        mask[i, :n] = True
        text[i] = torch.tensor(c.text)
    return dims, vals, ops, mask, text


def batch_indices(train_create, train_edit, max_k: int, batch: int, edit_fraction: float):
    """Training indices allowed by ``max_k`` and the creation/editing split of a batch."""
    if batch < 2:
        raise ValueError(f"batch >= 2 required, got {batch}")
    if not 0 < edit_fraction < 1:
        raise ValueError(f"edit_fraction must be in (0, 1), got {edit_fraction}")
    keep = torch.tensor([i for i, c in enumerate(train_create[0]) if c.k <= max_k])
    ek = torch.tensor([i for i, c in enumerate(train_edit[0]) if c.k <= max_k])
    n_create = batch - max(1, int(round(batch * edit_fraction)))
    return keep, ek, n_create


def fit(model: nn.Module, batch_loss, steps: int, lr: float, progress=None) -> list[float]:
    """Adam with a cosine schedule over ``steps``; each step minimises ``batch_loss()``, which draws its own
    batch. Returns the loss per step."""
    if steps < 1:
        raise ValueError(f"steps >= 1 required, got {steps}")
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    losses = []
    for _ in (progress(range(steps)) if progress is not None else range(steps)):
        loss = batch_loss()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return losses
