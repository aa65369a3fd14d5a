"""The learned subjects of the chapter: concept-readout generators, a stand-in for the paper's image models.

``ConceptReadoutGenerator`` keeps the multi-reference composition through a finite bottleneck
(`conditioning.Conditioner`: shared reference encoder, dimension embedding, sum / single-query attention
aggregator, ``z in R^m``) and replaces pixel synthesis by a readout: from ``[z, side]`` a factorised
distribution over the configuration,

    q(c | refs, prompt[, source]) = prod_{d=1..7} Cat(c_d; softmax(h_d)) x prod_{a in (tone, frame)} Cat(c_a; softmax(h_a)),

with V + 1 classes per dimension (its V sub-classes and the neutral default, as in the concept space and in
the judge), trained by cross-entropy on the ground-truth configuration of the case (creation: the composed
target; editing: the edited configuration). Its image is the mean of ``S`` oracle renders of configurations
sampled from q,

    y_hat = (1 / S) sum_{s=1..S} render(c^(s)),   c^(s) ~ q  (seeded),

so a confident generator outputs a valid oracle image and an uncertain one a ghosted blend of the
candidates, which the frozen judges (CC, PF/IF, PR, NERC: trained or calibrated on oracle renders only,
before any generator) score like any other output. The generator never sees the judges.

What it loses against a real image model: it synthesises no pixels; every sample is a valid render, so its
only pixel artefacts are those of averaging (ghosting, blended textures), not broken anatomy or texture.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from torch import nn

from .concepts import DEFAULT, N_DIMS, render
from .conditioning import Conditioner, bank_tensor, batch_indices, fit, image_tensor, pack

N_TEXT = 2


class ConceptReadoutGenerator(nn.Module):
    """Conditioner (bottleneck of width ``m``) + per-attribute softmax heads (see the module docstring)."""

    def __init__(self, size: int, m: int, V: int, width: int = 96, hidden: int = 256, aggregator: str = "sum"):
        super().__init__()
        if not isinstance(V, (int, np.integer)) or V < 2:
            raise ValueError(f"V must be an integer >= 2, got {V!r}")
        self.size, self.V, self.m = size, int(V), int(m)
        self.cond = Conditioner(m, width, aggregator)
        self.heads = nn.Sequential(nn.Linear(self.m + width, hidden), nn.ReLU(),
                                   nn.Linear(hidden, N_DIMS * (self.V + 1) + 2 * N_TEXT))

    @property
    def aggregator(self) -> str:
        return self.cond.aggregator

    def forward(self, bank_t, dims, vals, ops, mask, text, source=None, encoded=None):
        """Logits: (B, 7, V + 1) for the dimensions (class V = the default) and (B, 2, 2) for tone and frame."""
        z, side = self.cond(bank_t, dims, vals, ops, mask, text, source=source, encoded=encoded)
        h = self.heads(torch.cat([z, side], 1))
        c = self.V + 1
        return h[:, :N_DIMS * c].reshape(-1, N_DIMS, c), h[:, N_DIMS * c:].reshape(-1, N_TEXT, 2)


def config_labels(configs: np.ndarray, V: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Class labels of configurations (N, 9): dimensions with DEFAULT -> class V, and the text attributes."""
    c = torch.from_numpy(np.asarray(configs, dtype=np.int64))
    dims = c[:, :N_DIMS]
    return torch.where(dims == DEFAULT, torch.full_like(dims, V), dims), c[:, N_DIMS:]


def _loss(model, bank_t, enc, cases, labels, source=None):
    ld, lt = model(bank_t, *pack(cases), source=source, encoded=enc)
    yd, yt = labels
    ce = nn.functional.cross_entropy
    return ce(ld.reshape(-1, model.V + 1), yd.reshape(-1)) * N_DIMS + ce(lt.reshape(-1, 2), yt.reshape(-1)) * N_TEXT


def train_readout(model: ConceptReadoutGenerator, bank: np.ndarray, train_create, train_edit, steps: int, batch: int,
                  lr: float, seed: int, max_k: int = N_DIMS, edit_fraction: float = 0.25, progress=None) -> list[float]:
    """Cross-entropy on the ground-truth configurations; each batch mixes creation cases (k <= ``max_k``) and a
    fraction ``edit_fraction`` of editing cases (with their rendered sources). Adam, cosine schedule.

    ``train_create``: (cases, ...) whose ``config`` is the target; ``train_edit``: (cases, sources (N, S, S, 3),
    ...). No image target and no judge: the loss sees configurations only. Returns the loss per step.
    """
    g = torch.Generator().manual_seed(seed)
    bank_t = bank_tensor(bank)
    cc, ec, es = train_create[0], train_edit[0], image_tensor(train_edit[1])
    keep, ek, n_create = batch_indices(train_create, train_edit, max_k, batch, edit_fraction)
    lab_c = config_labels(np.stack([c.config for c in cc]), model.V)
    lab_e = config_labels(np.stack([c.config for c in ec]), model.V)
    model.train()

    def batch_loss():
        i = keep[torch.randint(len(keep), (n_create,), generator=g)]
        j = ek[torch.randint(len(ek), (batch - n_create,), generator=g)]
        enc = model.cond.encode_bank(bank_t)
        return (_loss(model, bank_t, enc, [cc[x] for x in i.tolist()], (lab_c[0][i], lab_c[1][i])) * n_create +
                _loss(model, bank_t, enc, [ec[x] for x in j.tolist()], (lab_e[0][j], lab_e[1][j]), source=es[j])
                * (batch - n_create)) / batch

    return fit(model, batch_loss, steps, lr, progress)


@torch.no_grad()
def predict_probs(model: ConceptReadoutGenerator, bank: np.ndarray, cases, sources: np.ndarray | None = None,
                  batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """The predicted distributions q: (N, 7, V + 1) and (N, 2, 2) probabilities."""
    was = model.training
    model.eval()
    bank_t = bank_tensor(bank)
    enc = model.cond.encode_bank(bank_t)
    pd_, pt_ = [], []
    for s in range(0, len(cases), batch):
        src = None if sources is None else image_tensor(sources[s:s + batch])
        ld, lt = model(bank_t, *pack(cases[s:s + batch]), source=src, encoded=enc)
        pd_.append(torch.softmax(ld, -1).numpy())
        pt_.append(torch.softmax(lt, -1).numpy())
    model.train(was)
    pd_, pt_ = np.concatenate(pd_).astype(np.float64), np.concatenate(pt_).astype(np.float64)
    if not (np.all(np.isfinite(pd_)) and np.all(np.isfinite(pt_))):
        raise ValueError("generator produced NaN/inf outputs")
    return pd_, pt_


def _to_config(dim_cls: np.ndarray, text_cls: np.ndarray, V: int) -> np.ndarray:
    return np.concatenate([np.where(dim_cls == V, DEFAULT, dim_cls), text_cls], -1)


def argmax_configs(probs: tuple[np.ndarray, np.ndarray], V: int) -> np.ndarray:
    """The most probable configuration of each case (N, 9)."""
    return _to_config(probs[0].argmax(-1), probs[1].argmax(-1), V)


def sample_configs(probs: tuple[np.ndarray, np.ndarray], V: int, samples: int, seed: int) -> np.ndarray:
    """``samples`` configurations per case drawn from q (inverse-CDF with one seeded generator): (N, S, 9)."""
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    rng = np.random.default_rng(seed)

    def draw(p):
        u = rng.random((*p.shape[:-1], samples, 1))
        cdf = np.cumsum(p, -1)[..., None, :]
        return np.minimum((u > cdf).sum(-1), p.shape[-1] - 1)        # (N, A, S)

    dims, text = draw(probs[0]), draw(probs[1])
    return _to_config(np.moveaxis(dims, -1, 1), np.moveaxis(text, -1, 1), V)


@lru_cache(maxsize=8192)
def _render_cached(config: tuple[int, ...], size: int) -> np.ndarray:
    img = render(np.array(config), size).astype(np.float32)
    img.setflags(write=False)
    return img


def render_mean(configs: np.ndarray, size: int) -> np.ndarray:
    """Mean oracle render over the samples of each case: configs (N, S, 9) -> images (N, size, size, 3)."""
    return np.stack([np.mean([_render_cached(tuple(int(v) for v in c), size) for c in row], axis=0)
                     for row in configs]).astype(np.float32)


def generate(model: ConceptReadoutGenerator, bank: np.ndarray, cases, sources: np.ndarray | None = None,
             samples: int = 4, seed: int = 0, return_probs: bool = False):
    """Outputs (N, S, S, 3) float32: the mean of ``samples`` oracle renders of configurations sampled from q."""
    probs = predict_probs(model, bank, cases, sources)
    out = render_mean(sample_configs(probs, model.V, samples, seed), model.size)
    return (out, probs) if return_probs else out


def head_accuracy(probs: tuple[np.ndarray, np.ndarray], cases, V: int) -> dict[str, float]:
    """Training fidelity of the heads on held-out cases (argmax of q against the ground truth):
    ``referenced``: the referenced (creation) or edited (editing) dimensions; ``all``: all 9 attributes."""
    pred = argmax_configs(probs, V)
    gt = np.stack([c.config for c in cases])
    ref = np.concatenate([pred[i, list(c.dims)] == gt[i, list(c.dims)] for i, c in enumerate(cases)])
    return {"referenced": float(ref.mean()), "all": float((pred == gt).mean())}
