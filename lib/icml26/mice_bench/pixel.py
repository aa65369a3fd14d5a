"""The pixel-decoder generator: the first stand-in for the paper's image models, kept as a disclosed
negative result (at the chapter's CPU budgets it stays at chance CC; the chapter measures it once).

Same conditioning as the concept-readout generator (`conditioning.Conditioner`, bottleneck ``z in R^m``);
then ``y = Dec([z, side])``, a transposed-convolution decoder, trained with L2 + 0.1 x L1 on Sobel edges
against the oracle render of the case. With a source image (editing), ``y = alpha * Dec + (1 - alpha) *
source`` with a decoded per-pixel gate alpha (the skip path).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .concepts import N_DIMS
from .conditioning import Conditioner, bank_tensor, batch_indices, fit, image_tensor, pack


class PixelDecoderGenerator(nn.Module):
    """Conditioner (bottleneck of width ``m``) + a convolutional pixel decoder."""

    def __init__(self, size: int, m: int, width: int = 96, aggregator: str = "sum"):
        super().__init__()
        if size % 8:
            raise ValueError(f"canvas size must be a multiple of 8, got {size}")
        self.size, self.m = size, int(m)
        self.cond = Conditioner(m, width, aggregator)
        self.g = size // 8
        self.fc = nn.Sequential(nn.Linear(self.m + width, 64 * self.g * self.g), nn.ReLU())
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(64, 48, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(48, 24, 4, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(24, 4, 4, 2, 1))

    def forward(self, bank_t, dims, vals, ops, mask, text, source=None, encoded=None):
        """Images (B, 3, S, S) in [0, 1]."""
        z, side = self.cond(bank_t, dims, vals, ops, mask, text, source=source, encoded=encoded)
        out = self.dec(self.fc(torch.cat([z, side], 1)).reshape(z.shape[0], 64, self.g, self.g))
        rgb = torch.sigmoid(out[:, :3])
        if source is None:
            return rgb
        alpha = torch.sigmoid(out[:, 3:4])
        return alpha * rgb + (1 - alpha) * source


def _edge_l1(y, t):
    kx = torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]]).reshape(1, 1, 3, 3).repeat(3, 1, 1, 1)
    gy = lambda x: torch.nn.functional.conv2d(x, kx, padding=1, groups=3)  # noqa: E731
    return (gy(y) - gy(t)).abs().mean()


def train_pixel(model: PixelDecoderGenerator, bank: np.ndarray, train_create, train_edit, steps: int, batch: int,
                lr: float, seed: int, max_k: int = N_DIMS, edit_fraction: float = 0.25, progress=None) -> list[float]:
    """L2 + 0.1 x L1 on Sobel edges against oracle renders. ``train_create``: (cases, targets (N, S, S, 3));
    ``train_edit``: (cases, sources, targets). Adam, cosine schedule. Returns the loss per step."""
    g = torch.Generator().manual_seed(seed)
    bank_t = bank_tensor(bank)
    cc, ct_t = train_create[0], image_tensor(train_create[1])
    ec, es_t, et_t = train_edit[0], image_tensor(train_edit[1]), image_tensor(train_edit[2])
    keep, ek, n_create = batch_indices(train_create, train_edit, max_k, batch, edit_fraction)

    def batch_loss():
        i = keep[torch.randint(len(keep), (n_create,), generator=g)]
        j = ek[torch.randint(len(ek), (batch - n_create,), generator=g)]
        enc = model.cond.encode_bank(bank_t)
        y1 = model(bank_t, *pack([cc[x] for x in i.tolist()]), encoded=enc)
        y2 = model(bank_t, *pack([ec[x] for x in j.tolist()]), source=es_t[j], encoded=enc)
        y, tgt = torch.cat([y1, y2]), torch.cat([ct_t[i], et_t[j]])
        return ((y - tgt) ** 2).mean() + 0.1 * _edge_l1(y, tgt)

    return fit(model, batch_loss, steps, lr, progress)


@torch.no_grad()
def generate_pixel(model: PixelDecoderGenerator, bank: np.ndarray, cases, sources: np.ndarray | None = None,
                   batch: int = 256) -> np.ndarray:
    """Outputs (N, S, S, 3) float32 of a trained pixel decoder (editing: with the source images)."""
    model.eval()
    bank_t = bank_tensor(bank)
    enc = model.cond.encode_bank(bank_t)
    outs = []
    for s in range(0, len(cases), batch):
        src = None if sources is None else image_tensor(sources[s:s + batch])
        outs.append(model(bank_t, *pack(cases[s:s + batch]), source=src, encoded=enc).permute(0, 2, 3, 1).numpy())
    model.train()
    out = np.concatenate(outs).astype(np.float32)
    if not np.all(np.isfinite(out)):
        raise ValueError("generator produced NaN/inf outputs")
    return out
