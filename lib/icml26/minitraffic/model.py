"""MiniTraffic (paper Sec. 3, Fig. 2, per secondary notes; the camera-ready was not read): adaptive head -> RevIN -> patches -> (mask) -> contrastive kNN
graph attention over (channel, patch) tokens -> channel-independent PatchTST encoder -> heads.

Shapes: input ``x (B, C, T)`` speeds, C channels (roads x FDA replicas in pre-training, lanes in lane
fine-tuning); ``groups (C,)`` the parent road of each channel (InfoNCE positives: same road, same
patch). Patches: ``n_p = (T - P) / S + 1`` (T = 18, P = 3, S = 1 -> 16). `released_code=True` runs the
released repository's mixer instead: sklearn KMeans(5) over the (batch x patch) tokens with all
channels concatenated, kNN (k = 5) inside each cluster, one GAT layer of width ``C * P``, the code's FDA
also at test time, and no InfoNCE term.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .fda import released_fda
from .graph import DenseTokenAttention, EdgeGAT, KNNGraphAttention, info_nce, knn_graph


def n_patches(T: int, P: int, S: int) -> int:
    """Number of patches of a length-T window: (T - P) / S + 1; T < P or (T - P) % S != 0 is an error."""
    if P < 1 or S < 1:
        raise ValueError(f"patch length P and stride S must be >= 1, got P={P}, S={S}")
    if T < P or (T - P) % S != 0:
        raise ValueError(f"window T={T} does not split into patches of P={P} with stride S={S}")
    return (T - P) // S + 1


class RevIN(nn.Module):
    """Reversible instance normalisation per (sample, channel) over time, with an affine map."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(1))
        self.bias = nn.Parameter(torch.zeros(1))

    def norm(self, x):
        self.mean = x.mean(-1, keepdim=True).detach()
        self.std = torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + self.eps).detach()
        return (x - self.mean) / self.std * self.weight + self.bias

    def denorm(self, y):
        return (y - self.bias) / (self.weight + self.eps) * self.std + self.mean


class EncoderLayer(nn.Module):
    """PatchTST encoder layer: multi-head self-attention over patches, FFN, BatchNorm (post-norm)."""

    def __init__(self, d: int, heads: int, d_ff: int, dropout: float):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d))
        self.norm1, self.norm2 = nn.BatchNorm1d(d), nn.BatchNorm1d(d)
        self.drop = nn.Dropout(dropout)

    @staticmethod
    def _bn(norm, x):
        return norm(x.transpose(1, 2)).transpose(1, 2)

    def forward(self, x):
        x = self._bn(self.norm1, x + self.drop(self.attn(x, x, x, need_weights=False)[0]))
        return self._bn(self.norm2, x + self.drop(self.ff(x)))


def layer_params(d: int, d_ff: int) -> int:
    """Parameters of one `EncoderLayer`: attention 4(d^2 + d), FFN 2 d d_ff + d_ff + d, two BatchNorms 4d."""
    return 4 * (d * d + d) + 2 * d * d_ff + d_ff + d + 4 * d


class MiniTraffic(nn.Module):
    """The MiniTraffic backbone with a pre-training (masked patch reconstruction) and a forecasting head."""

    def __init__(self, T: int = 18, H: int = 6, P: int = 3, S: int = 1, d: int = 64, d_ff: int = 128,
                 layers: int = 3, heads: int = 8, graph_heads: int = 4, k: int = 8, d_g: int = 32,
                 dropout: float = 0.2, graph: str = "knn", released_code: bool = False, released_channels: int = 0):
        super().__init__()
        self.np = n_patches(T, P, S)
        if H < 1:
            raise ValueError(f"horizon H must be >= 1, got {H}")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if d % heads or d % graph_heads:
            raise ValueError(f"d={d} must be divisible by heads={heads} and graph_heads={graph_heads}")
        if graph not in ("knn", "dense", "none"):
            raise ValueError(f"graph must be 'knn', 'dense' or 'none', got {graph!r}")
        self.T, self.H, self.P, self.S, self.d, self.k = T, H, P, S, d, k
        self.graph, self.released_code = graph, released_code
        self.adaptive = nn.Sequential(nn.Linear(T, T), nn.GELU(), nn.Linear(T, T))   # light adaptive head
        nn.init.zeros_(self.adaptive[2].weight)
        nn.init.zeros_(self.adaptive[2].bias)
        self.revin = RevIN()
        self.embed = nn.Linear(P, d)
        self.pos = nn.Parameter(0.02 * torch.randn(1, self.np, d))
        self.mask_token = nn.Parameter(torch.zeros(d))
        self.proj = nn.Sequential(nn.Linear(d, d_g), nn.GELU(), nn.Linear(d_g, d_g))   # g for InfoNCE / kNN
        if released_code:
            if released_channels < 1:
                raise ValueError("released_code=True needs released_channels (the GAT width is n_vars * P)")
            width = released_channels * P                 # the code's GATConv(n_vars * P, n_vars * P, heads=1)
            self.rel_gat = EdgeGAT(width, width)
            self.rel_out = nn.Linear(width, width)
        elif graph == "knn":
            self.mix = KNNGraphAttention(d, d // graph_heads, heads=graph_heads)
        elif graph == "dense":
            self.mix = DenseTokenAttention(d, graph_heads)
        self.mix_norm = nn.LayerNorm(d)
        self.encoder = nn.ModuleList([EncoderLayer(d, heads, d_ff, dropout) for _ in range(layers)])
        self.recon = nn.Linear(d, P)
        self.head = nn.Linear(d * self.np, H)

    # --- pieces ---------------------------------------------------------------------------------
    def patchify(self, x):
        return x.unfold(-1, self.P, self.S)                       # (B, C, n_p, P)

    def _released_mixer(self, patches):
        """KMeans(5) over (batch x patch) tokens, kNN(5) inside clusters, GATConv, ELU, Linear (the code)."""
        from sklearn.cluster import KMeans

        B, C, n_p, P = patches.shape
        tokens = patches.permute(0, 2, 1, 3).reshape(B * n_p, C * P)
        feats = tokens.detach().cpu().numpy()
        labels = KMeans(5, random_state=0, n_init=10).fit_predict(feats) if len(feats) > 5 else np.zeros(len(feats), int)
        src, dst = [], []
        for c in np.unique(labels):
            members = np.flatnonzero(labels == c)
            if len(members) < 2:
                continue
            dist = ((feats[members, None, :] - feats[None, members, :]) ** 2).sum(-1)
            np.fill_diagonal(dist, np.inf)
            kk = min(5, len(members) - 1)
            nbr = np.argsort(dist, axis=1)[:, :kk]
            for a, row in enumerate(nbr):
                src.extend(members[row].tolist())
                dst.extend([members[a]] * kk)
        edge = torch.tensor([src, dst], dtype=torch.long)
        out = self.rel_out(F.elu(self.rel_gat(tokens, edge)))
        return out.view(B, n_p, C, P).permute(0, 2, 1, 3)

    def encode(self, x, mask=None, generator=None):
        """x (B, C, T) -> token states (B, C, n_p, d) and the projections g (B, C*n_p, d_g) (RevIN inside).

        With a pre-training ``mask (B, C, n_p)`` the kNN graph is built over the **visible** tokens: every
        token's neighbours are visible tokens, so a masked token (``mask_token + pos``, identical across
        channels) gets its road's and other roads' information and is never a neighbour itself. A masked
        token chooses its neighbours with its channel's mean visible projection (its own projection is the
        same in every channel, so it would pick the same neighbours for every channel)."""
        if x.ndim != 3 or x.shape[-1] != self.T:
            raise ValueError(f"expected input (batch, channels, T={self.T}), got {tuple(x.shape)}")
        if torch.isnan(x).any():
            raise ValueError("input contains NaN: fill missing readings (the data module forward-fills) first")
        B, C, _ = x.shape
        n_tok = C * self.np
        if self.graph == "knn" and not self.released_code and self.k >= n_tok:
            raise ValueError(f"k={self.k} needs more than k tokens per sample, got {C} channels x {self.np} patches")
        x = self.revin.norm(x)
        x = x + self.adaptive(x)
        patches = self.patchify(x)
        if self.released_code:
            patches = released_fda(patches, generator=generator)     # the code applies it train and test
            patches = patches + self._released_mixer(patches)
        z = self.embed(patches)
        if mask is not None:
            z = torch.where(mask.unsqueeze(-1), self.mask_token.expand_as(z), z)
        z = z + self.pos
        tokens = z.reshape(B, n_tok, self.d)
        g = self.proj(tokens)
        if not self.released_code and self.graph != "none":
            valid = None if mask is None else ~mask.reshape(B, n_tok)
            if self.graph == "knn":
                query = None
                if mask is not None:
                    gc = g.view(B, C, self.np, -1)
                    vis = (~mask).unsqueeze(-1).to(g.dtype)
                    chan = (gc * vis).sum(2, keepdim=True) / vis.sum(2, keepdim=True).clamp(min=1.0)
                    query = torch.where(mask.unsqueeze(-1), chan.expand_as(gc), gc).reshape(B, n_tok, -1)
                idx = knn_graph(g, self.k, valid=valid, query=query)
                tokens = self.mix_norm(tokens + self.mix(tokens, idx))
            else:
                tokens = self.mix_norm(tokens + self.mix(tokens, valid=valid))
        h = tokens.view(B * C, self.np, self.d)
        for layer in self.encoder:
            h = layer(h)
        return h.view(B, C, self.np, self.d), g

    def forecast(self, x, generator=None):
        """Forecast ``(B, C, H)`` in the input's units."""
        h, _ = self.encode(x, generator=generator)
        y = self.head(h.flatten(2))
        return self.revin.denorm(y)

    def pretrain_loss(self, x, mask, groups, nce_weight=0.1, temperature=0.5, return_zero: bool = False):
        """Masked patch reconstruction (MSE on masked patches) + nce_weight * InfoNCE.

        The target is each window standardised by its own mean and standard deviation (RevIN **without**
        its learnable affine map: with it, shrinking the affine weight would shrink the target and the loss
        with it, a decrease that learns nothing). On that fixed scale the loss of predicting the window
        mean (0) for every masked patch, ``zero``, is the plateau a model that has not learned to
        reconstruct sits on (about 1); ``return_zero=True`` also returns it."""
        h, g = self.encode(x, mask=mask)
        target = self.patchify((x - self.revin.mean) / self.revin.std).detach()    # statistics set by encode
        rec = self.recon(h)
        m = mask.unsqueeze(-1).expand_as(rec)
        loss_rec = ((rec - target) ** 2)[m].mean()
        loss_nce = torch.zeros((), dtype=x.dtype, device=x.device)
        if nce_weight > 0:
            C = x.shape[1]
            labels = (groups.view(C, 1) * self.np + torch.arange(self.np, device=groups.device).view(1, self.np)).reshape(-1)
            loss_nce = info_nce(g, labels.to(g.device), temperature, valid=~mask.reshape(x.shape[0], -1))
        out = (loss_rec + nce_weight * loss_nce, loss_rec.detach(), loss_nce.detach())
        return out + ((target**2)[m].mean().detach(),) if return_zero else out

    def head_parameters(self):
        return list(self.head.parameters()) + list(self.adaptive.parameters())


def random_mask(batch: int, groups: torch.Tensor, n_p: int, ratio: float, generator: torch.Generator) -> torch.Tensor:
    """Mask (B, C, n_p) over (road, patch), shared by every replica of a road (no leak through near-copies)."""
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"mask ratio must be in [0, 1), got {ratio}")
    n_groups = int(groups.max()) + 1
    m = torch.rand(batch, n_groups, n_p, generator=generator) < ratio
    return m[:, groups, :]


def count_params(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def lane_tokens(model: MiniTraffic, x: torch.Tensor) -> torch.Tensor:
    """The embedded tokens (B, C * n_p, d) of windows ``x (B, C, T)``, no mask (as at forecast time); the
    kNN graph is built on their projections ``model.proj(tokens)``."""
    B, C, _ = x.shape
    xn = model.revin.norm(x)
    xn = xn + model.adaptive(xn)
    z = model.embed(model.patchify(xn)) + model.pos
    return z.reshape(B, C * model.np, model.d)


@torch.no_grad()
def same_road_share(model: MiniTraffic, x: torch.Tensor, lane_road) -> float:
    """The contrastive graph's road-lane structure ("captures road-lane correlations", F7): over windows
    ``x (B, lanes, T)``, the share of a lane token's k nearest tokens of **other** lanes (cosine of g, the
    space the kNN graph is built in) that belong to a lane of the same road. Tokens of the token's own lane
    are left out of the candidates (a lane's other patches are trivially close and would count as "same
    road"). Chance level: `same_road_chance`."""
    if model.graph != "knn" or model.released_code:
        raise ValueError("same_road_share needs the paper-mode kNN graph")
    model.eval()
    dev = next(model.parameters()).device
    x = x.to(dev)
    B, C, _ = x.shape
    g = F.normalize(model.proj(lane_tokens(model, x)), dim=-1)
    chan = torch.arange(C, device=dev).repeat_interleave(model.np)                      # token -> lane
    sim = (g @ g.transpose(1, 2)).masked_fill(chan.view(1, -1, 1) == chan.view(1, 1, -1), -float("inf"))
    idx = sim.topk(model.k, dim=-1).indices
    road = torch.as_tensor(np.asarray(lane_road), device=dev).repeat_interleave(model.np)     # token -> road
    return float((road[idx] == road.view(1, -1, 1)).float().mean())


def same_road_chance(lane_road, n_p: int) -> float:
    """The share `same_road_share` has for neighbours drawn at random among the tokens of the other lanes:
    per lane, (lanes of its road - 1) / (lanes - 1), averaged over lanes (``n_p`` cancels)."""
    lane_road = np.asarray(lane_road)
    counts = np.bincount(lane_road)[lane_road]            # lanes of each lane's road
    return float(np.mean((counts - 1) / (len(lane_road) - 1)))
