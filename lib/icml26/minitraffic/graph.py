"""The contrastive clustering graph (paper Sec. 3.3, per secondary notes): a kNN graph in a learned cosine space over one
sample's (channel, patch) tokens, graph attention on its edges only, and the InfoNCE loss that shapes
the space.

* `knn_graph`: for each token the top-k cosine neighbours of its projection g(z) (no self loop, no
  gradient through `topk`): attention then costs O(k N_tok d) instead of O(N_tok^2 d) (Theory T5).
* `KNNGraphAttention`: GAT (Velickovic et al.) on those edges,
  e_ij = LeakyReLU(a_dst . W h_i + a_src . W h_j), alpha = softmax_j e_ij, out_i = sum_j alpha_ij W h_j + b,
  multi-head, concatenated; its width does not depend on the channel count (unlike the released code's
  GAT of width n_vars * P), so road-pretrained weights apply to lanes. Equal to
  `torch_geometric.nn.GATConv(add_self_loops=False)` with the same weights (tests).
* `info_nce`: the NT-Xent form of InfoNCE with temperature t: for every positive pair (i, p),
  -log exp(s_ip/t) / (exp(s_ip/t) + sum_{n negative of i} exp(s_in/t)), averaged over pairs (equal to
  pytorch-metric-learning's `NTXentLoss`, tests). Positives: tokens of the same parent road and patch.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def knn_graph(z: torch.Tensor, k: int, valid: torch.Tensor | None = None, query: torch.Tensor | None = None) -> torch.Tensor:
    """Indices ``(B, N, k)`` of each token's k most cosine-similar other tokens (self excluded).

    ``valid (B, N)``: the tokens that may be neighbours (sources); in masked pre-training the visible ones,
    so a masked token receives messages from visible tokens only and is never a source itself.
    ``query (B, N, d)``: the vectors that choose the neighbours (default ``z``)."""
    if z.ndim != 3:
        raise ValueError(f"knn_graph expects (batch, tokens, dim), got shape {tuple(z.shape)}")
    n = z.shape[1]
    if not 1 <= k < n:
        raise ValueError(f"k must satisfy 1 <= k < N_tok = {n}, got {k}")
    q = z if query is None else query
    if q.shape != z.shape:
        raise ValueError(f"query must have the shape of z {tuple(z.shape)}, got {tuple(q.shape)}")
    with torch.no_grad():
        sim = F.normalize(q, dim=-1) @ F.normalize(z, dim=-1).transpose(1, 2)
        sim.diagonal(dim1=1, dim2=2).fill_(-float("inf"))
        if valid is not None:
            if valid.shape != z.shape[:2]:
                raise ValueError(f"valid must be (batch, tokens) = {tuple(z.shape[:2])}, got {tuple(valid.shape)}")
            if int(valid.sum(1).min()) < k + 1:
                raise ValueError(f"k={k} needs at least k + 1 valid tokens per sample, got {int(valid.sum(1).min())}")
            sim = sim.masked_fill(~valid.unsqueeze(1), -float("inf"))
        return sim.topk(k, dim=-1).indices


class KNNGraphAttention(nn.Module):
    """Multi-head graph attention over a kNN neighbourhood ``idx (B, N, k)`` of tokens ``h (B, N, d_in)``."""

    def __init__(self, d_in: int, d_out: int, heads: int = 1, negative_slope: float = 0.2):
        super().__init__()
        if heads < 1 or d_out < 1:
            raise ValueError(f"heads and d_out must be >= 1, got {heads}, {d_out}")
        self.heads, self.d_out, self.negative_slope = heads, d_out, negative_slope
        self.lin = nn.Linear(d_in, heads * d_out, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, 1, heads, d_out))
        self.att_dst = nn.Parameter(torch.empty(1, 1, heads, d_out))
        self.bias = nn.Parameter(torch.zeros(heads * d_out))
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.xavier_uniform_(self.att_src.view(heads, d_out))
        nn.init.xavier_uniform_(self.att_dst.view(heads, d_out))

    def forward(self, h: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        B, N, _ = h.shape
        k = idx.shape[-1]
        wh = self.lin(h).view(B, N, self.heads, self.d_out)
        a_src = (wh * self.att_src).sum(-1)                       # (B, N, H)
        a_dst = (wh * self.att_dst).sum(-1)
        flat = idx.reshape(B, N * k)
        src_scores = torch.gather(a_src, 1, flat.unsqueeze(-1).expand(B, N * k, self.heads)).view(B, N, k, self.heads)
        e = F.leaky_relu(a_dst.unsqueeze(2) + src_scores, self.negative_slope)
        alpha = torch.softmax(e, dim=2)                          # over the k neighbours
        wh_flat = wh.reshape(B, N, self.heads * self.d_out)
        neigh = torch.gather(wh_flat, 1, flat.unsqueeze(-1).expand(B, N * k, self.heads * self.d_out))
        neigh = neigh.view(B, N, k, self.heads, self.d_out)
        out = (alpha.unsqueeze(-1) * neigh).sum(2)
        return out.reshape(B, N, self.heads * self.d_out) + self.bias


class DenseTokenAttention(nn.Module):
    """The -CC ablation / Big-PT's spatial mixing: multi-head attention over all N_tok tokens."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)

    def forward(self, h: torch.Tensor, idx=None, valid: torch.Tensor | None = None) -> torch.Tensor:
        pad = None if valid is None else ~valid                  # masked tokens are no keys (as in the kNN graph)
        return self.attn(h, h, h, key_padding_mask=pad, need_weights=False)[0]


def info_nce(z: torch.Tensor, labels: torch.Tensor, temperature: float = 0.5,
             valid: torch.Tensor | None = None) -> torch.Tensor:
    """NT-Xent InfoNCE over the tokens of each sample: ``z (B, N, d)``, ``labels (N,)`` or ``(B, N)``;
    ``valid (B, N)``: the tokens that take part (anchors, positives and negatives; masked tokens are left out)."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if z.ndim == 2:
        z = z.unsqueeze(0)
    B, N, _ = z.shape
    if labels.ndim == 1:
        labels = labels.unsqueeze(0).expand(B, N)
    zn = F.normalize(z, dim=-1)
    s = zn @ zn.transpose(1, 2) / temperature                    # (B, N, N)
    same = labels.unsqueeze(2) == labels.unsqueeze(1)
    eye = torch.eye(N, dtype=torch.bool, device=z.device).unsqueeze(0)
    pos = same & ~eye
    neg = ~same
    if valid is not None:
        both = valid.unsqueeze(2) & valid.unsqueeze(1)
        pos, neg = pos & both, neg & both
    if not pos.any():
        raise ValueError("info_nce: no positive pairs (every label is unique)")
    # log( exp(s_ip) + sum_n exp(s_in) ) for every (i, p), stable
    neg_lse = torch.logsumexp(s.masked_fill(~neg, -float("inf")), dim=2, keepdim=True)   # (B, N, 1)
    denom = torch.logaddexp(s, neg_lse.expand_as(s))
    loss = (denom - s)[pos]
    return loss.mean()


class EdgeGAT(nn.Module):
    """GAT on an explicit edge list ``edge (2, E)`` (source, target) of nodes ``x (N, d_in)``, one head,
    self loops added: the layer the released code uses (PyG `GATConv(in, out, heads=1)`), in plain torch."""

    def __init__(self, d_in: int, d_out: int, negative_slope: float = 0.2):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, d_out))
        self.att_dst = nn.Parameter(torch.empty(1, d_out))
        self.bias = nn.Parameter(torch.zeros(d_out))
        self.negative_slope = negative_slope
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(self, x: torch.Tensor, edge: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        loops = torch.arange(n)
        src = torch.cat([edge[0], loops])
        dst = torch.cat([edge[1], loops])
        wh = self.lin(x)
        e = F.leaky_relu((wh * self.att_src).sum(-1)[src] + (wh * self.att_dst).sum(-1)[dst], self.negative_slope)
        e_max = torch.full((n,), -float("inf"), dtype=e.dtype).scatter_reduce(0, dst, e, "amax", include_self=True)
        w = torch.exp(e - e_max[dst])
        denom = torch.zeros(n, dtype=e.dtype).index_add(0, dst, w)
        alpha = w / denom[dst]
        return torch.zeros_like(wh).index_add(0, dst, alpha.unsqueeze(-1) * wh[src]) + self.bias
