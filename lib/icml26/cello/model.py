"""Cello's stage-2 aggregator on cached cell embeddings (brief 2.2b-d; the equations are ours).

A `torchmil.models.MILModel`: ``forward(X, mask, region)``, ``compute_loss(Y, X, mask, region,
region_labels)``, ``predict(X, mask, region, return_inst_pred=True)``, so torchmil's wrappers and our
training loop drive it like its own baselines.

Cells -> regions -> slide (hierarchical, default):

* local attention inside region r: ``alpha_{c|r} = softmax_{c in r}(gated(e_c))`` and
  ``z_r = sum_{c in r} alpha_{c|r} e_c`` (2.2b);
* global gated aggregation over regions: ``beta = softmax_r(gated(z_r))``, ``z_s = sum_r beta_r z_r``,
  slide logit ``W_g z_s`` (2.2c); the cell attention is ``a_c = beta_{r(c)} alpha_{c|r}`` (sums to 1),
  so the route mass of a region, ``sum_{c in r} a_c = beta_r``, is normalised per region and cannot be
  won by cell count alone (pitfall 4);
* local prototypes: ``p_r = softmax(s_{r,.}/tau)``, cells ``p_c = softmax(s_{c,.}/tau)`` (2.2b);
* the decision route ``p_route = sum_r beta_r Pi p_r`` and (2.2d)
  ``L_cons = KL(sg[p_g] || p_route) + KL(sg[p_route] || p_g) + sum_r beta_r KL(p_r || sum_{c in r} alpha_{c|r} p_c)``.

Ablations: ``pool="mean"`` (uniform weights), ``local="linear"`` (a linear local head instead of
prototypes), ``hierarchical=False`` (flat gated attention over all cells; ``beta_r = sum_{c in r} a_c``),
and ``gamma = 0`` (no consistency).
"""
from __future__ import annotations

import torch
from torch import nn
from torchmil.models import MILModel

from .pooling import GatedAttentionPool, check_bag, masked_softmax, region_onehot, region_softmax
from .prototypes import PrototypeHead

EPS = 1e-6


def check_route_matrix(pi: torch.Tensor, n_local: int) -> torch.Tensor:
    """Pi (global classes x local classes): non-negative, every column sums to 1."""
    pi = torch.as_tensor(pi, dtype=torch.float32)
    if pi.ndim != 2 or pi.shape[1] != n_local:
        raise ValueError(f"route matrix Pi must be (n_global, {n_local}), got {tuple(pi.shape)}")
    if (pi < 0).any() or not torch.allclose(pi.sum(0), torch.ones(n_local), atol=1e-6):
        raise ValueError(f"every column of the route matrix Pi must be a distribution (sum 1), got column sums {pi.sum(0).tolist()}")
    return pi


def kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) over the last axis."""
    p, q = p.clamp_min(EPS), q.clamp_min(EPS)
    return (p * (p.log() - q.log())).sum(-1)


class Cello(MILModel):
    def __init__(self, in_dim: int, n_regions: int, dim: int = 32, att_dim: int = 32, n_local: int = 3,
                 n_protos: int = 3, tau: float = 0.1, margin: float = 0.1, pi=None, pool: str = "gated",
                 local: str = "proto", hierarchical: bool = True, alpha: float = 0.5, gamma: float = 0.5):
        super().__init__()
        if pool not in ("gated", "mean") or local not in ("proto", "linear"):
            raise ValueError(f"pool must be 'gated' or 'mean', local 'proto' or 'linear'; got {pool!r}, {local!r}")
        if n_regions < 1:
            raise ValueError(f"n_regions must be >= 1, got {n_regions}")
        if pi is None:  # local classes (normal, lymphoid, lesion) -> slide (negative, positive)
            pi = [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
        self.register_buffer("pi", check_route_matrix(pi, n_local))
        self.in_dim, self.n_regions, self.pool, self.local, self.hierarchical = in_dim, n_regions, pool, local, hierarchical
        self.alpha, self.gamma = float(alpha), float(gamma)
        self.proj = nn.Linear(in_dim, dim)
        self.cell_att = GatedAttentionPool(dim, att_dim)
        self.region_att = GatedAttentionPool(dim, att_dim)
        self.classifier = nn.Linear(dim, 1)
        self.tau = float(tau)
        if local == "proto":
            self.head = PrototypeHead(n_local, dim, n_protos, tau, margin)
        else:
            self.head = nn.Linear(dim, n_local)

    # ------------------------------------------------------------------ pieces
    def local_logits(self, z: torch.Tensor) -> torch.Tensor:
        return self.head.scores(z) / self.tau if self.local == "proto" else self.head(z)

    def _check_region(self, X, region):
        if region is None:
            return torch.zeros(X.shape[:2], dtype=torch.long, device=X.device)
        if region.shape != X.shape[:2]:
            raise ValueError(f"region shape {tuple(region.shape)} does not match features {tuple(X.shape[:2])}")
        return region.long()

    def route(self, X: torch.Tensor, mask: torch.Tensor | None = None, region: torch.Tensor | None = None) -> dict:
        """Every quantity of the module docstring for a padded batch of bags."""
        mask = check_bag(X, mask, "Cello")
        if X.shape[-1] != self.in_dim:
            raise ValueError(f"Cello expects {self.in_dim}-dimensional cell embeddings, got {X.shape[-1]}")
        region = self._check_region(X, region)
        onehot = region_onehot(region, mask, self.n_regions)                      # (B, N, R)
        rmask = (onehot.sum(1) > 0).to(X.dtype)                                   # (B, R)
        e = self.proj(X)
        if self.pool == "mean":
            f = torch.zeros(X.shape[:2], dtype=X.dtype, device=X.device)
        else:
            f = self.cell_att.logits(e)
        alpha = region_softmax(f, onehot)                                         # alpha_{c|r}, (B, N)
        z_r = torch.einsum("bnr,bn,bnd->brd", onehot, alpha, e)                   # (B, R, d)
        if self.hierarchical:
            g = torch.zeros_like(rmask) if self.pool == "mean" else self.region_att.logits(z_r)
            if self.pool == "mean":  # uniform over cells: region weight = its share of the cells
                beta = onehot.sum(1) / mask.sum(1, keepdim=True)
            else:
                beta = masked_softmax(g, rmask)
            a = torch.einsum("bnr,br->bn", onehot, beta) * alpha
            z_s = torch.einsum("br,brd->bd", beta, z_r)
        else:
            a = masked_softmax(f, mask) if self.pool == "gated" else mask / mask.sum(1, keepdim=True)
            beta = torch.einsum("bnr,bn->br", onehot, a)
            z_s = torch.einsum("bn,bnd->bd", a, e)
        logit = self.classifier(z_s).squeeze(-1)
        p_g = torch.stack([torch.sigmoid(-logit), torch.sigmoid(logit)], -1)
        p_r = torch.softmax(self.local_logits(z_r), -1)                           # (B, R, K)
        p_c = torch.softmax(self.local_logits(e), -1)                             # (B, N, K)
        p_route = torch.einsum("br,gk,brk->bg", beta, self.pi, p_r)
        return dict(logit=logit, a=a, alpha=alpha, beta=beta, z_r=z_r, rmask=rmask, onehot=onehot, p_g=p_g,
                    p_r=p_r, p_c=p_c, p_route=p_route)

    def consistency(self, out: dict) -> torch.Tensor:
        """L_cons of brief 2.2d, with stop-gradient on one side of each global KL (pitfall 4)."""
        p_g, p_route = out["p_g"], out["p_route"]
        glob = kl(p_g.detach(), p_route) + kl(p_route.detach(), p_g)
        cells = torch.einsum("bnr,bn,bnk->brk", out["onehot"], out["alpha"], out["p_c"])
        local = (out["beta"] * kl(out["p_r"], cells) * out["rmask"]).sum(-1)
        return (glob + local).mean()

    # ------------------------------------------------------------------ torchmil interface
    def forward(self, X: torch.Tensor, mask: torch.Tensor | None = None, region: torch.Tensor | None = None,
                return_att: bool = False):
        out = self.route(X, mask, region)
        return (out["logit"], out["a"]) if return_att else out["logit"]

    def compute_loss(self, Y: torch.Tensor, X: torch.Tensor, mask: torch.Tensor | None = None,
                     region: torch.Tensor | None = None, region_labels: torch.Tensor | None = None,
                     gamma: float | None = None):
        """(slide logits, {"BCEWithLogitsLoss", "proto", "cons"}): L = L_glob + alpha L_proto + gamma L_cons."""
        Y = torch.as_tensor(Y)
        if Y.shape != X.shape[:1]:
            raise ValueError(f"labels must be (batch,) = {tuple(X.shape[:1])}, got {tuple(Y.shape)}")
        if ((Y != 0) & (Y != 1)).any():
            raise ValueError(f"slide labels must be in the declared classes {{0, 1}}, got {torch.unique(Y).tolist()}")
        out = self.route(X, mask, region)
        losses = {"BCEWithLogitsLoss": nn.functional.binary_cross_entropy_with_logits(out["logit"], Y.float())}
        if region_labels is not None:
            if region_labels.shape != out["z_r"].shape[:2]:
                raise ValueError(f"region_labels must be (batch, {self.n_regions}), got {tuple(region_labels.shape)}")
            lab = region_labels.long()
            sel = lab >= 0
            n_local = self.pi.shape[1]
            if sel.any() and int(lab[sel].max()) >= n_local:
                raise ValueError(f"local labels outside the declared classes [0, {n_local})")
            z, y = out["z_r"][sel], lab[sel]
            if self.local == "proto":
                losses["proto"] = self.alpha * self.head.loss(z, y)
            else:
                losses["proto"] = self.alpha * (nn.functional.cross_entropy(self.head(z), y) if len(y) else z.sum() * 0)
        g = self.gamma if gamma is None else float(gamma)
        if g > 0:
            losses["cons"] = g * self.consistency(out)
        return out["logit"], losses

    @torch.no_grad()
    def predict(self, X: torch.Tensor, mask: torch.Tensor | None = None, region: torch.Tensor | None = None,
                return_inst_pred: bool = True, protein: torch.Tensor | None = None):
        """Slide logits and (optionally) the cell attention a_c. Inference reads H&E embeddings only:
        passing a protein tensor is leakage and an error."""
        if protein is not None:
            raise ValueError("protein signals are a training target only; passing them at predict time is leakage")
        out = self.route(X, mask, region)
        return (out["logit"], out["a"]) if return_inst_pred else out["logit"]
