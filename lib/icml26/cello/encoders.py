"""Stage 1: cell and patch encoders (brief 2.2a and 5.3) [ours].

* `CellEncoder` + `ProteinHead`: the protein-signal-supervised cell encoder of the abstract. Input: an
  H&E-only nucleus crop (optical density); target: the per-cell marker signal measured on the paired
  IHC render, which is never an input. Loss (brief 2.2a)
  ``L_prot = BCE(p_hat, b) + mu * ||sigmoid(.) - rank_normalised(p)||^2``.
* `PatchEncoder`: the patch pipelines' tile encoder, 3 stride-2 convolutions (brief 5.3);
  `FoundationEncoder`, a wider one with average and max pooling, for the foundation-model stand-in.
* `train_simclr`: SimCLR with the NT-Xent loss (equal to pytorch-metric-learning's), for the cell (C-SSL) and
  patch (P-Gated, and the foundation-model stand-in P-FM) encoders.

Every encoder trains with Adam on a cosine learning-rate schedule down to ``lr_floor`` of its peak
(`cosine_schedule`) [ours]: at a constant rate the losses were still falling in their last fifth at book
(the chapter's convergence rule failed on all four encoder curves in 8a5b3bd), and the protein head's
lesion-vs-mimic separation swung between AUROC 0.43 and 0.76 from one hundred steps to the next.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy.stats import rankdata
from torch import nn

from .stains import to_od


def _check_images(x: torch.Tensor, name: str):
    if x.ndim != 4 or x.shape[1] != 3:
        raise ValueError(f"{name}: expected (B, 3, H, W) optical-density images, got {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}: input contains NaN or inf")


class CellEncoder(nn.Module):
    """conv(3->16)-BN-ReLU-pool-conv(16->32)-BN-ReLU-conv(32->32)-BN-ReLU-GAP-FC(32->d) on a nucleus crop
    (brief 5.3 plus batch norm and a third convolution [ours]: without them the rare lesion morphology
    stays on a plateau for thousands of steps)."""

    def __init__(self, dim: int = 32):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                 nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, dim))
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_images(x, "CellEncoder")
        return self.net(x)


class PatchEncoder(nn.Module):
    """Three stride-2 convolutions (16/32/64, batch norm) + GAP + FC(64->d) on a tile (brief 5.3)."""

    def __init__(self, dim: int = 32):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                 nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                 nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, dim))
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_images(x, "PatchEncoder")
        return self.net(x)


class FoundationEncoder(nn.Module):
    """The foundation-model stand-in's tile encoder (P-FM) [ours]: `PatchEncoder`'s three stride-2
    convolutions at ``width`` times the channels, then average **and** max pooling over the tile
    (concatenated) + FC -> d. Larger than the small-pool encoder, and its max pooling keeps the response
    of a few cells that a global average dilutes (the way a ViT's attention can single out a few tokens):
    a stronger encoder, for C9 to compare Cello with one (review 3)."""

    def __init__(self, dim: int = 32, width: int = 2):
        super().__init__()
        c1, c2, c3 = 16 * width, 32 * width, 64 * width
        self.features = nn.Sequential(nn.Conv2d(3, c1, 3, stride=2, padding=1), nn.BatchNorm2d(c1), nn.ReLU(),
                                      nn.Conv2d(c1, c2, 3, stride=2, padding=1), nn.BatchNorm2d(c2), nn.ReLU(),
                                      nn.Conv2d(c2, c3, 3, stride=2, padding=1), nn.BatchNorm2d(c3), nn.ReLU())
        self.fc = nn.Linear(2 * c3, dim)
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_images(x, "FoundationEncoder")
        f = self.features(x)
        return self.fc(torch.cat([f.mean((2, 3)), f.amax((2, 3))], 1))


class ProteinHead(nn.Module):
    """p_hat_c = sigmoid(G h_c), one logit per marker (brief 2.2a)."""

    def __init__(self, dim: int, n_markers: int):
        super().__init__()
        self.G = nn.Linear(dim, n_markers)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.G(h)


def rank_normalise(p: np.ndarray, threshold: float) -> np.ndarray:
    """Per-marker rank normalisation to [0, 1] (brief 2.2a, tilde p) [ours: two-piece].

    Most cells are marker-negative and their measured signal is deconvolution noise, whose ranks
    would be random targets; so positive cells (p > threshold) are ranked into (0.5, 1] and negative
    ones scaled linearly into [0, 0.5]."""
    p = np.asarray(p, dtype=float)
    if p.ndim != 2:
        raise ValueError(f"protein targets must be (N, markers), got {p.shape}")
    out = np.clip(p / threshold, 0, 1) * 0.5
    for j in range(p.shape[1]):
        pos = p[:, j] > threshold
        if pos.any():
            out[pos, j] = 0.5 + 0.5 * rankdata(p[pos, j]) / pos.sum()
    return out


def protein_loss(logits: torch.Tensor, positive: torch.Tensor, ranked: torch.Tensor, mu: float = 1.0) -> torch.Tensor:
    """L_prot = BCE(logits, b) + mu * MSE(sigmoid(logits), tilde p) (brief 2.2a), averaged over cells."""
    if logits.shape != positive.shape or logits.shape != ranked.shape:
        raise ValueError(f"protein loss: shapes differ {tuple(logits.shape)}, {tuple(positive.shape)}, {tuple(ranked.shape)}")
    if ((ranked < 0) | (ranked > 1)).any() or ((positive != 0) & (positive != 1)).any():
        raise ValueError("protein targets must lie in [0, 1] (positivity in {0, 1})")
    bce = nn.functional.binary_cross_entropy_with_logits(logits, positive)
    return bce + mu * ((torch.sigmoid(logits) - ranked) ** 2).mean()


def crops_to_tensor(crops: np.ndarray) -> torch.Tensor:
    """(N, k, k, 3) uint8 RGB crops -> (N, 3, k, k) float32 optical density."""
    od = to_od(np.asarray(crops, dtype=np.float32) / 255.0)
    return torch.from_numpy(np.ascontiguousarray(od.transpose(0, 3, 1, 2), dtype=np.float32))


def cosine_schedule(opt: torch.optim.Optimizer, steps: int, floor: float) -> torch.optim.lr_scheduler.LambdaLR:
    """The learning rate times ``floor + (1 - floor) (1 + cos(pi t / steps)) / 2`` at step t: from the peak
    down to ``floor`` of it at the last step (``floor = 1``: constant)."""
    if not 0.0 < floor <= 1.0:
        raise ValueError(f"the learning-rate floor must be in (0, 1], got {floor}")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda t: floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * min(t, steps) / steps)))


def balanced_indices(positive: torch.Tensor, batch: int, g: torch.Generator) -> torch.Tensor:
    """A batch of cell indices: ``batch // (2 max(2, M))`` from each marker's positive cells, the rest
    uniform (pitfall: few positive cells)."""
    share = max(1, batch // (2 * max(2, positive.shape[1])))
    idx = torch.randint(len(positive), (batch,), generator=g)
    start = 0
    for j in range(positive.shape[1]):
        pj = torch.nonzero(positive[:, j].cpu()).flatten()
        if len(pj):
            idx[start:start + share] = pj[torch.randint(len(pj), (share,), generator=g)]
            start += share
    return idx


def train_protein_encoder(crops: torch.Tensor, protein: np.ndarray | None, *, dim: int, steps: int, batch: int,
                          threshold: float, mu: float = 1.0, lr: float = 3e-3, lr_floor: float = 0.05, seed: int = 0,
                          hard_every: int = 25, hard_top: float = 0.1, hard_pool: int = 4096,
                          monitor: tuple[torch.Tensor, np.ndarray] | None = None, monitor_points: int = 20,
                          device: str | torch.device = "cpu"):
    """Stage 1 of Cello: fit the cell encoder on crops with the protein loss. ``protein`` (N, M):
    the measured marker signal of every training cell (required: this is the supervision).

    Batches are marker-balanced (`balanced_indices`) plus online hard negatives: every ``hard_every``
    steps the marker-negative cells the head scores highest (the top ``hard_top`` of a random pool of
    ``hard_pool`` cells, `_hard_negatives`) fill another share of each batch. A small hard set refreshed
    rarely (the first version: the top 2 % every 100 steps, ~80 cells drawn 64 times a batch) made the
    head learn and forget the lesion morphology in turn (the training loss jumped at every refresh); a
    larger set refreshed every 25 steps trains it steadily.
    ``monitor`` = (crops, protein) of held-out cells: the protein loss on a fixed marker-balanced sample
    of them (eval mode) at ``monitor_points`` evenly spaced steps, the learning curve the chapter judges
    (the training batches' loss is not one: hard-negative mining changes what a batch holds).

    Returns (encoder, protein head, curves) with ``curves["train"]`` the per-step batch losses and, with
    a monitor, ``curves["steps"]`` / ``curves["monitor"]``."""
    if protein is None:
        raise ValueError("protein targets are required to train the protein-supervised encoder")
    protein = np.asarray(protein, dtype=float)
    if protein.ndim != 2 or len(protein) != len(crops):
        raise ValueError(f"protein must be (N, M) with N = {len(crops)} crops, got {protein.shape}")
    if not np.all(np.isfinite(protein)):
        raise ValueError("protein targets contain NaN or inf (missing measurements)")
    torch.manual_seed(seed)
    enc, head = CellEncoder(dim).to(device), ProteinHead(dim, protein.shape[1]).to(device)
    positive = torch.tensor(protein > threshold, dtype=torch.float32, device=device)
    ranked = torch.tensor(rank_normalise(protein, threshold), dtype=torch.float32, device=device)
    opt = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), lr=lr, weight_decay=1e-4)
    sched = cosine_schedule(opt, steps, lr_floor)
    g = torch.Generator().manual_seed(seed)
    crops = crops.to(device)
    share = max(1, batch // (2 * max(2, positive.shape[1])))
    mon = None
    if monitor is not None:   # a fixed marker-balanced sample of held-out cells, drawn once
        m_crops, m_protein = monitor
        m_protein = np.asarray(m_protein, dtype=float)
        if m_protein.shape != (len(m_crops), protein.shape[1]) or not np.all(np.isfinite(m_protein)):
            raise ValueError(f"monitor protein must be finite and (N, {protein.shape[1]}), got {m_protein.shape}")
        m_pos = torch.tensor(m_protein > threshold, dtype=torch.float32)
        gm = torch.Generator().manual_seed(seed + 1)
        midx = torch.cat([balanced_indices(m_pos, batch, gm) for _ in range(4)])
        mon = (m_crops[midx].to(device), m_pos[midx].to(device),
               torch.tensor(rank_normalise(m_protein, threshold)[midx.numpy()], dtype=torch.float32, device=device))
    at = set(np.linspace(0, steps, monitor_points + 1).astype(int)[1:].tolist()) if mon else set()
    curves: dict = {"train": [], "steps": [], "monitor": []}
    hard = torch.zeros(0, dtype=torch.long)
    enc.train()
    for step in range(steps):
        if hard_every and step % hard_every == 0 and step:
            hard = _hard_negatives(enc, head, crops, positive, g, pool=hard_pool, top=hard_top)
            enc.train()
        idx = balanced_indices(positive, batch, g)
        if len(hard):  # online hard-negative mining: marker-negative cells the head calls positive
            start = share * positive.shape[1]
            idx[start:start + share] = hard[torch.randint(len(hard), (share,), generator=g)]
        idx = idx.to(device)
        x = augment_flips(crops[idx], g)
        loss = protein_loss(head(enc(x)), positive[idx], ranked[idx], mu)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        curves["train"].append(float(loss.detach()))
        if step + 1 in at:
            enc.eval()
            with torch.no_grad():
                curves["monitor"].append(float(protein_loss(head(embed(enc, mon[0], batch=1024)), mon[1], mon[2], mu)))
            curves["steps"].append(step + 1)
            enc.train()
    return enc.eval(), head.eval(), curves


@torch.no_grad()
def _hard_negatives(enc, head, crops, positive, g, pool: int = 4096, top: float = 0.1) -> torch.Tensor:
    """Indices of the marker-negative cells (any marker) with the highest predicted positivity in a
    random pool: the mimics a size/darkness rule confuses with lesion cells."""
    enc.eval()
    idx = torch.randint(len(crops), (min(pool, len(crops)),), generator=g)
    logits = head(enc(crops[idx]))
    out = []
    for j in range(logits.shape[1]):  # per marker: negatives for that marker, highest logit
        neg = ~positive[idx, j].bool()
        cand, sc = idx[neg.cpu()], logits[neg, j]
        k = max(1, int(top * len(cand)))
        out.append(cand[sc.argsort(descending=True)[:k].cpu()])
    return torch.cat(out)


def augment_flips(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Random dihedral transform per batch (rot90 k, flip), cheap and label-preserving."""
    k = int(torch.randint(4, (1,), generator=g))
    x = torch.rot90(x, k, dims=(2, 3))
    if int(torch.randint(2, (1,), generator=g)):
        x = torch.flip(x, dims=(3,))
    return x


def _simclr_view(x: torch.Tensor, g: torch.Generator, shift: int) -> torch.Tensor:
    b = x.shape[0]
    x = augment_flips(x, g)
    scale = 1 + 0.15 * (2 * torch.rand(b, 3, 1, 1, generator=g) - 1)           # stain-intensity jitter
    x = x * scale.to(x.device)
    if shift:
        dy, dx = (int(v) for v in torch.randint(-shift, shift + 1, (2,), generator=g))
        x = torch.roll(x, (dy, dx), dims=(2, 3))
    return x + 0.03 * torch.randn(x.shape, generator=g).to(x.device)


def nt_xent(z: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """NT-Xent of SimCLR for 2B embeddings where rows i and i + B are the two views of one image.

    Equal to pytorch-metric-learning's `NTXentLoss` with labels ``arange(B).repeat(2)`` (tested), which
    builds all pairs explicitly and costs seconds per step at B = 256 on one CPU thread."""
    if z.ndim != 2 or z.shape[0] % 2:
        raise ValueError(f"nt_xent needs (2B, d) embeddings, got {tuple(z.shape)}")
    b = z.shape[0] // 2
    zn = nn.functional.normalize(z, dim=1)
    sim = zn @ zn.T / temperature
    sim = sim.masked_fill(torch.eye(2 * b, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(b, 2 * b), torch.arange(0, b)]).to(z.device)
    return nn.functional.cross_entropy(sim, target)


def train_simclr(encoder: nn.Module, images: torch.Tensor, *, steps: int, batch: int, lr: float = 3e-3,
                 lr_floor: float = 0.05, temperature: float = 0.1, shift: int = 2, seed: int = 0) -> tuple[nn.Module, list[float]]:
    """SimCLR pre-training (NT-Xent, `nt_xent`) on unlabelled images (N, 3, H, W), or uint8 RGB (N, H, W, 3),
    with Adam on a cosine schedule down to ``lr_floor`` of ``lr`` (`cosine_schedule`). Returns the encoder
    and the per-step losses."""

    if images.dtype != torch.uint8:
        _check_images(images[:1], "train_simclr")
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    proj = nn.Sequential(nn.Linear(encoder.dim, encoder.dim), nn.ReLU(), nn.Linear(encoder.dim, encoder.dim)).to(images.device)
    opt = torch.optim.Adam(list(encoder.parameters()) + list(proj.parameters()), lr=lr, weight_decay=1e-4)
    sched = cosine_schedule(opt, steps, lr_floor)
    losses = []
    encoder.train()
    for _ in range(steps):
        idx = torch.randint(len(images), (batch,), generator=g).to(images.device)
        x = images[idx]
        if x.dtype == torch.uint8:  # pools kept as uint8 RGB (N, H, W, 3): optical density per batch
            x = crops_to_tensor(x.cpu().numpy()).to(images.device)
        z = proj(encoder(torch.cat([_simclr_view(x, g, shift), _simclr_view(x, g, shift)])))
        loss = nt_xent(z, temperature)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return encoder.eval(), losses


@torch.no_grad()
def embed(encoder: nn.Module, images: torch.Tensor, batch: int = 4096) -> torch.Tensor:
    """Frozen-encoder embeddings of a stack of images, in chunks."""
    encoder.eval()
    return torch.cat([encoder(images[i:i + batch]) for i in range(0, len(images), batch)]) if len(images) else torch.zeros(0, encoder.dim)
