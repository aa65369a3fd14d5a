"""Bags, the stage-2 training loop, baselines and the metrics of brief T6 (AUC, localisation AUROC,
deletion AOPC, route gap, macro-F1)."""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from tensordict import TensorDict
from torchmil.models import ABMIL, DSMIL, MILModelWrapper

from .model import Cello


@dataclass
class Bags:
    """Padded bags of instances (cells or tiles): X (S, N, d), mask (S, N), region (S, N),
    Y (S,), region_labels (S, R) (-1 where unlabelled), inst_pos (S, N) (evaluation only)."""

    X: torch.Tensor
    mask: torch.Tensor
    region: torch.Tensor
    Y: torch.Tensor
    region_labels: torch.Tensor
    inst_pos: torch.Tensor

    def __len__(self) -> int:
        return len(self.Y)

    def subset(self, idx) -> "Bags":
        idx = torch.as_tensor(idx, dtype=torch.long)
        return Bags(*(t[idx] for t in (self.X, self.mask, self.region, self.Y, self.region_labels, self.inst_pos)))

    def td(self, idx=None) -> TensorDict:
        b = self if idx is None else self.subset(idx)
        return TensorDict(dict(X=b.X, mask=b.mask, region=b.region, Y=b.Y, region_labels=b.region_labels),
                          batch_size=[len(b)])


def make_bags(feats: list[torch.Tensor], labels, regions: list[np.ndarray] | None = None,
              region_labels: list[np.ndarray] | None = None, inst_pos: list[np.ndarray] | None = None,
              n_regions: int = 1) -> Bags:
    """Pad per-slide instance features into one batch."""
    if len(feats) != len(labels) or not feats:
        raise ValueError(f"need one feature matrix per label, got {len(feats)} and {len(labels)}")
    n = max(len(f) for f in feats)
    if min(len(f) for f in feats) == 0:
        raise ValueError("a bag with no cells")
    d = feats[0].shape[1]
    S = len(feats)
    X = torch.zeros(S, n, d)
    mask = torch.zeros(S, n)
    region = torch.zeros(S, n, dtype=torch.long)
    pos = torch.zeros(S, n, dtype=torch.bool)
    rl = torch.full((S, n_regions), -1, dtype=torch.long)
    for i, f in enumerate(feats):
        X[i, :len(f)] = torch.as_tensor(f, dtype=torch.float32)
        mask[i, :len(f)] = 1
        if regions is not None:
            region[i, :len(f)] = torch.as_tensor(regions[i])
        if inst_pos is not None:
            pos[i, :len(f)] = torch.as_tensor(inst_pos[i])
        if region_labels is not None:
            rl[i] = torch.as_tensor(region_labels[i])
    Y = torch.as_tensor(np.asarray(labels), dtype=torch.float32)
    if not torch.isfinite(X).all():
        raise ValueError("features contain NaN or inf")
    return Bags(X, mask, region, Y, rl, pos)


def make_model(kind: str, in_dim: int, n_regions: int, **kw) -> torch.nn.Module:
    """Aggregators by name: torchmil's ``abmil`` / ``gated`` / ``dsmil`` and ``cello`` (+ kw)."""
    if kind == "abmil":
        return ABMIL(in_shape=(in_dim,), att_dim=32, gated=False)
    if kind == "gated":
        return ABMIL(in_shape=(in_dim,), att_dim=32, gated=True)
    if kind == "dsmil":
        return DSMIL(in_shape=(in_dim,), att_dim=32)
    if kind == "cello":
        return Cello(in_dim, n_regions, **kw)
    raise ValueError(f"unknown aggregator {kind!r}")


def fit_mil(model: torch.nn.Module, bags: Bags, *, epochs: int, lr: float = 1e-3, batch: int = 16, seed: int = 0,
            warmup: float = 0.2, proto_init: bool = True, val: Bags | None = None) -> list[float]:
    """Train any torchmil-style model with Adam on slide labels (and, for Cello, labelled regions).

    Cello: prototypes k-means-initialised on the labelled regions, re-normalised after every step,
    dead ones re-seeded every 5 epochs; the consistency weight is 0 for the first ``warmup`` of the
    epochs (pitfall 4). ``val``: early stopping (brief 5.3): the weights of the epoch with the best
    validation-slide AUC after the warm-up are restored at the end; ties (frequent on a few validation
    slides) go to the lower validation BCE, so that a tie does not default to the first epoch after the
    warm-up. ``model.val_auc`` and ``model.best_epoch`` record the choice (NaN and the last epoch
    without ``val``); ``model.val_curve`` is the learning curve of the selected model, the best
    validation AUC reached up to each epoch after the warm-up (what one more epoch could still improve:
    the chapter judges its convergence), and ``model.val_epochs`` its epochs. The model is built by the
    caller: seed before building it so that paired ablations start from the same weights."""
    torch.manual_seed(seed)
    use_val = val is not None and len(np.unique(val.Y.numpy())) == 2
    best_key, best_state, best_epoch = (float("nan"), 0.0), None, epochs - 1
    wrapped = MILModelWrapper(model)
    is_cello = isinstance(model, Cello)
    proto = is_cello and model.local == "proto"
    if proto and proto_init:
        z, y = labelled_regions(model, bags)
        model.head.init_kmeans(z.numpy(), y.numpy(), seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    g = torch.Generator().manual_seed(seed)
    history, val_curve, val_epochs = [], [], []
    model.train()
    for ep in range(epochs):
        perm = torch.randperm(len(bags), generator=g)
        total = 0.0
        for i in range(0, len(bags), batch):
            td = bags.td(perm[i:i + batch])
            if is_cello:
                _, losses = wrapped.compute_loss(td, gamma=0.0 if ep < warmup * epochs else None)
            else:
                _, losses = wrapped.compute_loss(td)
            loss = sum(losses.values())
            opt.zero_grad()
            loss.backward()
            opt.step()
            if proto:
                model.head.renormalise()
            total += float(loss.detach()) * len(td)
        history.append(total / len(bags))
        if proto and ep % 5 == 4:
            z, y = labelled_regions(model, bags)
            model.head.reseed_dead(z, y)
        if use_val and ep >= warmup * epochs:
            model.eval()
            score = predict(model, val)[0]
            bce = float(torch.nn.functional.binary_cross_entropy_with_logits(torch.as_tensor(score, dtype=torch.float32),
                                                                             val.Y.float()))
            key = (auc(val.Y.numpy(), score), -bce)
            if best_state is None or key > best_key:
                best_key, best_state, best_epoch = key, copy.deepcopy(model.state_dict()), ep
            val_curve.append(best_key[0])
            val_epochs.append(ep)
            model.train()
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    model.val_auc, model.best_epoch = best_key[0], best_epoch
    model.val_curve, model.val_epochs = val_curve, val_epochs
    return history


@torch.no_grad()
def labelled_regions(model: Cello, bags: Bags) -> tuple[torch.Tensor, torch.Tensor]:
    """Region embeddings z_r and labels of the labelled regions of the bags."""
    out = model.route(bags.X, bags.mask, bags.region)
    sel = bags.region_labels >= 0
    return out["z_r"][sel], bags.region_labels[sel]


@torch.no_grad()
def predict(model: torch.nn.Module, bags: Bags) -> tuple[np.ndarray, np.ndarray | None]:
    """Slide scores (logits) and instance attention (normalised for ours, raw logits for torchmil's)."""
    model.eval()
    if isinstance(model, Cello):
        logit, att = model.predict(bags.X, bags.mask, bags.region, return_inst_pred=True)
    else:
        logit, att = model.predict(bags.X, bags.mask, return_inst_pred=True)
    logit = logit.reshape(len(bags), -1)[:, -1] if logit.ndim > 1 else logit
    return logit.numpy().astype(float), att.numpy().astype(float)


def auc(y, score) -> float:
    y = np.asarray(y)
    if len(np.unique(y)) < 2:
        raise ValueError("AUC needs both classes")
    return float(roc_auc_score(y, score))


def localisation_auroc(att: np.ndarray, bags: Bags) -> float:
    """Mean over positive slides of the AUROC of instance attention vs the lesion-instance mask."""
    vals = []
    for i in np.flatnonzero(bags.Y.numpy() == 1):
        m = bags.mask[i].numpy() > 0
        pos = bags.inst_pos[i].numpy()[m]
        if 0 < pos.sum() < len(pos):
            vals.append(roc_auc_score(pos, att[i][m]))
    return float(np.mean(vals)) if vals else float("nan")


def _slide_logits(model: torch.nn.Module, b: Bags, mask: torch.Tensor) -> torch.Tensor:
    if isinstance(model, Cello):
        return model.predict(b.X, mask, b.region, return_inst_pred=False)
    out = model.predict(b.X, mask, return_inst_pred=False)
    return out.reshape(len(b), -1)[:, -1] if out.ndim > 1 else out


def ranked_correct(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The positive slides a model ranks correctly, calibration-free: logit above the median logit of the
    negative slides (a positive the model scores above a typical negative). Early stopping picks a model
    by validation AUC, which is blind to the logit's offset, so ``logit > 0`` can select no positive slide
    at all (every logit below 0: the NaN of C7 at book, seeds 2 and 3 of 8a5b3bd); ranks cannot."""
    logits, y = np.asarray(logits, dtype=float), np.asarray(y)
    neg = logits[y == 0]
    if not len(neg):
        raise ValueError("ranking the positive slides against the negatives needs a negative slide")
    return (y == 1) & (logits > np.median(neg))


@torch.no_grad()
def deletion_aopc(model: torch.nn.Module, bags: Bags, ranking: np.ndarray, ks, only_correct: bool = True) -> float:
    """Deletion AOPC (brief T6) on the slide **logit**: ``1/K sum_k [f(S) - f(S minus top_k)]``, averaged
    over the positive slides the model ranks correctly (`ranked_correct`: logit above the median negative
    slide's; all positives with ``only_correct=False``); ``ranking`` (S, N) scores which instances go
    first. On the probability scale a confident model's drop is ~0 whatever is deleted (a saturated
    sigmoid, review 3), so the log-odds are used. NaN when no positive slide is ranked correctly."""
    if not len(ks) or min(ks) < 1:
        raise ValueError(f"deletion sizes must be >= 1, got {ks}")
    y = bags.Y.numpy()
    pos = np.flatnonzero(y == 1)
    if only_correct:
        all_logits = _slide_logits(model, bags, bags.mask).numpy()
        pos = np.flatnonzero(ranked_correct(all_logits, y))
    if not len(pos):
        return float("nan")
    b = bags.subset(pos)
    base = _slide_logits(model, b, b.mask)
    drops = []
    r = torch.as_tensor(ranking[pos], dtype=torch.float32).masked_fill(b.mask == 0, float("-inf"))
    order = r.argsort(dim=1, descending=True, stable=True)
    for k in ks:
        mask = b.mask.clone()
        mask.scatter_(1, order[:, :k], 0.0)
        mask[mask.sum(1) == 0, 0] = 1.0
        drops.append((base - _slide_logits(model, b, mask)).numpy())
    return float(np.mean(drops))


@torch.no_grad()
def route_gap(model: Cello, bags: Bags) -> float:
    """Mean |p_g - p_route| on the positive class (brief T6)."""
    out = model.route(bags.X, bags.mask, bags.region)
    return float((out["p_g"][:, 1] - out["p_route"][:, 1]).abs().mean())


def pooled_baseline(train: Bags, test: Bags, how: str, seed: int = 0, val: Bags | None = None):
    """P-Mean / P-Max: mean- or max-pooled instance features -> logistic regression; test AUC
    (and, with ``val``, the pair (test AUC, validation AUC))."""
    def pool(b: Bags):
        m = b.mask.unsqueeze(-1)
        if how == "mean":
            return ((b.X * m).sum(1) / m.sum(1)).numpy()
        if how == "max":
            return b.X.masked_fill(m == 0, float("-inf")).max(1).values.numpy()
        raise ValueError(f"pooling must be 'mean' or 'max', got {how!r}")
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000, random_state=seed))
    clf.fit(pool(train), train.Y.numpy())
    test_auc = auc(test.Y.numpy(), clf.decision_function(pool(test)))
    if val is None:
        return test_auc
    return test_auc, auc(val.Y.numpy(), clf.decision_function(pool(val)))


def colour_histogram_auc(train_images, y_train, test_images, y_test, bins: int = 16) -> float:
    """The shortcut probe of pitfall 2: global RGB histograms -> logistic regression; test AUC."""
    def hist(ims):
        return np.stack([np.concatenate([np.histogram(im[..., c], bins=bins, range=(0, 255), density=True)[0]
                                         for c in range(3)]) for im in ims])
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000))
    clf.fit(hist(train_images), y_train)
    return auc(y_test, clf.decision_function(hist(test_images)))
