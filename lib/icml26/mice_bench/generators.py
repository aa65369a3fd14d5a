"""The benchmark's subjects: reference baselines and learned compositional generators of controlled capacity.

The paper evaluates 13 image models; none can run here. Stand-ins with controlled behaviour:

* `oracle`      - the ground-truth composer (upper bound: must score CC = 10);
* `blend`       - the pixel mean of the references ("superficial composition" in its purest form);
* `collage`     - the references side by side on one canvas;
* `dominant`    - renders only the most dominant referenced concept (Style > Scene > Material > ...),
                  an engineered "dominance" failure of the early version's taxonomy;
* `random`      - a valid render with random values of the referenced dimensions (the chance floor 10/V);
* `CompositionalGenerator` - a learned multi-reference generator: a shared reference encoder plus a
  dimension embedding per reference, a sum (or single-query attention) aggregator, a bottleneck of width
  ``m`` (the capacity knob: "stronger models" = wider bottleneck) and a convolutional decoder; for editing
  a source encoder and a skip path (output = alpha * decoded + (1 - alpha) * source).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .concepts import DEFAULT, N_DIMS, render, render_batch

DOMINANCE_ORDER = (2, 3, 4, 1, 0, 6, 5)
"""Style, Scene, Material, Object, Identity, Appearance, Control: who wins in `dominant`."""


def _refs_tensor(bank: np.ndarray, dims, values) -> np.ndarray:
    return np.stack([bank[d, v] for d, v in zip(dims, values)])


def blend(bank: np.ndarray, dims, values, source=None) -> np.ndarray:
    """Pixel mean of the references (and the source image, for editing)."""
    imgs = list(_refs_tensor(bank, dims, values))
    if source is not None:
        imgs.append(source)
    return np.mean(imgs, axis=0).astype(np.float32)


def collage(bank: np.ndarray, dims, values, source=None) -> np.ndarray:
    """The references (and the source) tiled side by side on one canvas, each downscaled to a grid cell."""
    from skimage.transform import resize

    imgs = ([source] if source is not None else []) + list(_refs_tensor(bank, dims, values))
    S = bank.shape[2]
    g = math.ceil(math.sqrt(len(imgs)))
    cell = S // g
    out = np.full((S, S, 3), 0.5, np.float32)
    for i, im in enumerate(imgs):
        r, c = divmod(i, g)
        out[r * cell:(r + 1) * cell, c * cell:(c + 1) * cell] = resize(im, (cell, cell), order=1, anti_aliasing=True)
    return out


def dominant(config: np.ndarray, dims, size: int) -> np.ndarray:
    """Render only the dominant referenced concept (the others reset to default)."""
    keep = next(d for d in DOMINANCE_ORDER if d in dims)
    cfg = np.asarray(config).copy()
    for d in dims:
        if d != keep:
            cfg[d] = DEFAULT
    return render(cfg, size).astype(np.float32)


def random_valid(config: np.ndarray, dims, V: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """A valid render with uniformly random values of the referenced dimensions."""
    cfg = np.asarray(config).copy()
    for d in dims:
        cfg[d] = int(rng.integers(0, V))
    return render(cfg, size).astype(np.float32)


class _Encoder(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 4, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 32, 4, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(32 * 16, width),
            nn.LayerNorm(width))   # normalised: distinct references give distinct slots from the first step

    def forward(self, x):
        return self.net(x)


class CompositionalGenerator(nn.Module):
    """Learned multi-reference generator with a bottleneck of width ``m`` (the capacity knob).

    For references r_1..r_k of dimensions d_1..d_k, slot i is ``e_i = Enc(r_i) + E_dim[d_i] + E_op[o_i]``;
    the aggregate is ``a = sum_i e_i`` (``aggregator="sum"``) or ``a = sum_i softmax_i(q . e_i) e_i``
    (``"attention"``, one learned query); the prompt's text attributes are embedded and added; then
    ``z = W a in R^m`` (the bottleneck) and ``y = Dec(z)``. With a source image (editing),
    ``y = alpha * Dec(z) + (1 - alpha) * source`` with alpha a decoded per-pixel gate (the skip path).
    """

    def __init__(self, size: int, m: int, width: int = 96, aggregator: str = "sum"):
        super().__init__()
        if m < 1:
            raise ValueError(f"bottleneck width m must be >= 1, got {m}")
        if aggregator not in ("sum", "attention"):
            raise ValueError(f"aggregator must be 'sum' or 'attention', got {aggregator!r}")
        if size % 8:
            raise ValueError(f"canvas size must be a multiple of 8, got {size}")
        self.size, self.m, self.aggregator = size, m, aggregator
        self.enc = _Encoder(width)
        self.src_enc = _Encoder(width)
        self.dim_emb = nn.Embedding(N_DIMS, width)
        self.op_emb = nn.Embedding(2, width)
        self.text_emb = nn.Embedding(4, width)
        for emb in (self.dim_emb, self.op_emb, self.text_emb):   # small: the references, not the labels, carry content
            nn.init.normal_(emb.weight, std=0.1)
        self.query = nn.Parameter(torch.randn(width) / math.sqrt(width))
        self.pre = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width), nn.ReLU(), nn.Linear(2 * width, width),
                                 nn.ReLU())
        self.bottleneck = nn.Linear(width, m)
        self.g = size // 8
        self.fc = nn.Sequential(nn.Linear(m + width, 64 * self.g * self.g), nn.ReLU())
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(64, 48, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(48, 24, 4, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(24, 4, 4, 2, 1))

    def encode_bank(self, bank_t):
        """Enc applied to every reference of the bank (7, V, 3, S, S) -> (7, V, width): the shared encoder
        runs once per distinct reference image instead of once per slot (the same function, fewer calls)."""
        D, V = bank_t.shape[:2]
        return self.enc(bank_t.reshape(D * V, *bank_t.shape[2:])).reshape(D, V, -1)

    def forward(self, bank_t, dims, vals, ops, mask, text, source=None, encoded=None):
        """bank_t (7, V, 3, S, S) references; dims, vals, ops (B, K) long; mask (B, K) bool (valid slots);
        text (B, 2) long; source (B, 3, S, S) or None. Returns (B, 3, S, S) in [0, 1]."""
        enc = self.encode_bank(bank_t) if encoded is None else encoded
        e = enc[dims, vals] + self.dim_emb(dims) + self.op_emb(ops)
        w = mask.float().unsqueeze(-1)
        if self.aggregator == "sum":
            a = (e * w).sum(1)
        else:
            logits = (e @ self.query).masked_fill(~mask, -1e9)
            a = (torch.softmax(logits, 1).unsqueeze(-1) * e * w).sum(1)
        t = self.text_emb(text[:, 0] * 2 + text[:, 1])
        src = self.src_enc(source) if source is not None else torch.zeros_like(t)
        z = self.bottleneck(self.pre(a + t + src))
        h = self.fc(torch.cat([z, t + src], 1)).reshape(z.shape[0], 64, self.g, self.g)
        out = self.dec(h)
        rgb = torch.sigmoid(out[:, :3])
        if source is None:
            return rgb
        alpha = torch.sigmoid(out[:, 3:4])
        return alpha * rgb + (1 - alpha) * source


def pack(bank_t: torch.Tensor, cases, K: int = N_DIMS):
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


def _edge_l1(y, t):
    kx = torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]]).reshape(1, 1, 3, 3).repeat(3, 1, 1, 1)
    gy = lambda x: torch.nn.functional.conv2d(x, kx, padding=1, groups=3)  # noqa: E731
    return (gy(y) - gy(t)).abs().mean()


def train_generator(model: CompositionalGenerator, bank: np.ndarray, train_create, train_edit, steps: int, batch: int,
                    lr: float, seed: int, max_k: int = N_DIMS, progress=None, edit_fraction: float = 0.5) -> list[float]:
    """Train on oracle targets: each batch mixes creation cases (k <= max_k) and a fraction ``edit_fraction``
    of editing cases.

    ``train_create``: (cases, targets (N, S, S, 3)); ``train_edit``: (cases, sources, targets). Loss: L2 +
    0.1 x L1 on Sobel edges. Returns the loss per step.
    """
    if steps < 1 or batch < 2:
        raise ValueError(f"steps >= 1 and batch >= 2 required, got {steps}, {batch}")
    if not 0 < edit_fraction < 1:
        raise ValueError(f"edit_fraction must be in (0, 1), got {edit_fraction}")
    g = torch.Generator().manual_seed(seed)
    bank_t = torch.from_numpy(bank).permute(0, 1, 4, 2, 3).contiguous()
    cc, ct = train_create
    keep = [i for i, c in enumerate(cc) if c.k <= max_k]
    ct_t = torch.from_numpy(ct).permute(0, 3, 1, 2)
    ec, es, et = train_edit
    ek = [i for i, c in enumerate(ec) if c.k <= max_k]
    es_t, et_t = torch.from_numpy(es).permute(0, 3, 1, 2), torch.from_numpy(et).permute(0, 3, 1, 2)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    losses = []
    iterator = progress(range(steps)) if progress is not None else range(steps)
    half = batch - max(1, int(round(batch * edit_fraction)))   # creation cases per batch
    for _ in iterator:
        i = torch.tensor(keep)[torch.randint(len(keep), (half,), generator=g)]
        j = torch.tensor(ek)[torch.randint(len(ek), (batch - half,), generator=g)]
        enc = model.encode_bank(bank_t)
        y1 = model(bank_t, *pack(bank_t, [cc[x] for x in i.tolist()]), encoded=enc)
        y2 = model(bank_t, *pack(bank_t, [ec[x] for x in j.tolist()]), source=es_t[j], encoded=enc)
        y, tgt = torch.cat([y1, y2]), torch.cat([ct_t[i], et_t[j]])
        loss = ((y - tgt) ** 2).mean() + 0.1 * _edge_l1(y, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return losses


@torch.no_grad()
def generate(model: CompositionalGenerator, bank: np.ndarray, cases, sources: np.ndarray | None = None,
             batch: int = 256) -> np.ndarray:
    """Outputs (N, S, S, 3) float32 of a trained generator on cases (editing: with their source images)."""
    model.eval()
    bank_t = torch.from_numpy(bank).permute(0, 1, 4, 2, 3).contiguous()
    outs = []
    enc = model.encode_bank(bank_t)
    for s in range(0, len(cases), batch):
        chunk = cases[s:s + batch]
        src = None if sources is None else torch.from_numpy(sources[s:s + batch]).permute(0, 3, 1, 2)
        outs.append(model(bank_t, *pack(bank_t, chunk), source=src, encoded=enc).permute(0, 2, 3, 1).numpy())
    model.train()
    out = np.concatenate(outs).astype(np.float32)
    if not np.all(np.isfinite(out)):
        raise ValueError("generator produced NaN/inf outputs")
    return out


def baseline_outputs(name: str, bank: np.ndarray, cases, size: int, V: int, seed: int,
                     sources: np.ndarray | None = None) -> np.ndarray:
    """Outputs of one reference baseline (oracle, blend, collage, dominant, random) on cases."""
    rng = np.random.default_rng(seed)
    if name == "oracle":
        return render_batch(np.stack([c.config for c in cases]), size)
    out = []
    for i, c in enumerate(cases):
        src = None if sources is None else sources[i]
        if name == "blend":
            out.append(blend(bank, c.dims, c.values, src))
        elif name == "collage":
            out.append(collage(bank, c.dims, c.values, src))
        elif name == "dominant":
            out.append(dominant(c.config, c.dims, size))
        elif name == "random":
            out.append(random_valid(c.config, c.dims, V, size, rng))
        else:
            raise ValueError(f"unknown baseline {name!r}; choose oracle, blend, collage, dominant, random")
    return np.stack(out).astype(np.float32)
