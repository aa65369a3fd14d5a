"""Training: the clean loss, vanilla training, vanilla adversarial training (AT) and Anchored Adversarial
Training (AAT, our reconstruction from the abstract and the ICLR reviews; brief 2.2).

* clean loss (1 - PLCC_batch(y^, y)) + alpha MSE(y^, y) on z-scored MOS: PLCC alone is invariant to
  y^ -> a y^ + b (a > 0; Theory), so the MSE term pins the scale;
* AT (Chistyakova et al. 2024): PGD *boost* attacks in the loop, adversarial pairs labelled with the clean
  MOS, loss L(y^_adv, y) + L(y^_clean, y);
* AAT: AT plus K_a clean anchors per batch drawn one per MOS-quantile bin (coverage, bound.py), their
  regression loss, and the anchored hinge ranking loss
  L_rank = mean_{i, a: |y_i - y_a| > tie} [lambda - sgn(y_a - y_i)(y~_a - y^_adv,i)]_+ with weight gamma.
  Each AAT batch records the anchored bound (bound.py) on its adversarial predictions.
Both adversarial trainers fine-tune a copy of the converged vanilla model with the same batch size
(the matched-batch control of the ICLR version's 32 vs 16).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch

from .attacks import attack
from .bound import BoundCheck, anchored_bound, stratified_anchors


def plcc_loss(pred: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """1 - Pearson correlation of a batch. ValueError for < 2 samples or a constant-MOS batch (undefined)."""
    if pred.shape != y.shape or pred.ndim != 1:
        raise ValueError(f"pred and y must be matching 1-D tensors, got {tuple(pred.shape)} and {tuple(y.shape)}")
    if len(y) < 2:
        raise ValueError(f"PLCC needs at least 2 samples, got {len(y)}")
    if float(y.std()) == 0.0:
        raise ValueError("PLCC is undefined on a constant-MOS batch")
    pc, yc = pred - pred.mean(), y - y.mean()
    return 1 - (pc * yc).sum() / (pc.norm() * yc.norm() + 1e-8)


def clean_loss(pred, y, alpha: float = 1.0):
    """(1 - PLCC) + alpha * MSE on z-scored MOS."""
    return plcc_loss(pred, y) + alpha * ((pred - y) ** 2).mean()


def _batches(n, batch, rng):
    perm = rng.permutation(n)
    return [perm[i:i + batch] for i in range(0, n - 1, batch) if len(perm[i:i + batch]) >= 2]


def _take(feats, idx):
    return [f[idx] for f in feats]


def _n_batches(n: int, batch: int) -> int:
    """How many batches `_batches` yields for ``n`` samples (no RNG consumed)."""
    return sum(1 for i in range(0, n - 1, batch) if min(batch, n - i) >= 2)


def _fit(batch_loss, y, epochs: int, params, batch: int, lr: float, seed: int, cosine: bool) -> list[float]:
    """The clean-loss training loop shared by BiRQA and the Deep-FR-scratch foil: Adam (cosine-annealed over
    every step when ``cosine``), shuffled batches of >= 2 pairs, constant-MOS batches skipped (PLCC undefined).
    ``batch_loss(idx, y_idx)`` returns the loss of one batch. Returns the per-epoch mean loss."""
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(params, lr=lr)
    sched = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs * _n_batches(len(y), batch)))
             if cosine else None)
    y = torch.as_tensor(y, dtype=torch.float32)
    history = []
    for _ in range(epochs):
        tot = []
        for idx in _batches(len(y), batch, rng):
            if float(y[idx].std()) == 0:
                continue
            loss = batch_loss(idx, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            tot.append(float(loss.detach()))
        history.append(float(np.mean(tot)))
    return history


def train_vanilla(model, feats, y, epochs: int, batch: int = 32, lr: float = 1e-2, seed: int = 0):
    """Vanilla training on precomputed (clean) feature maps, cosine-annealed; returns the per-epoch mean loss."""
    return _fit(lambda idx, y_b: clean_loss(model.forward_features(_take(feats, idx)), y_b), y, epochs,
                model.parameters(), batch, lr, seed, cosine=True)


@dataclass
class AdvLog:
    losses: list = field(default_factory=list)
    bounds: list = field(default_factory=list)           # BoundCheck per AAT batch
    random_coverage: list = field(default_factory=list)  # coverage of uniformly drawn anchors (control)


class AnchoredAdversarialTrainer:
    """AT (``anchored=False``) or AAT (``anchored=True``) fine-tuning of a BiRQA model (module docstring)."""

    def __init__(self, model, eps: float, steps: int, anchored: bool, n_anchors: int = 8, lam: float = 0.1,
                 gamma: float = 1.0, tie: float = 0.05, lr: float = 1e-3, alpha: float = 1.0):
        if n_anchors < 2:
            raise ValueError(f"need at least 2 anchors, got {n_anchors}")
        if eps <= 0 or steps < 1:
            raise ValueError(f"eps must be > 0 and steps >= 1, got eps={eps}, steps={steps}")
        self.model, self.eps, self.steps, self.anchored = model, eps, steps, anchored
        self.n_anchors, self.lam, self.gamma, self.tie, self.alpha = n_anchors, lam, gamma, tie, alpha
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)

    def fit(self, ref, dist, feats, y, epochs: int, batch: int = 16, seed: int = 0) -> AdvLog:
        rng = np.random.default_rng(seed)
        y_np = np.asarray(y, float)
        y = torch.as_tensor(y_np, dtype=torch.float32)
        log, model, step = AdvLog(), self.model, 0
        score = lambda r, d: model(r, d, check=False)
        for _ in range(epochs):
            for idx in _batches(len(y), batch, rng):
                if float(y[idx].std()) == 0:
                    continue
                step += 1
                r, d = ref[idx], dist[idx]
                adv = attack(score, r, d, self.eps, self.steps, "pgd", "boost", seed=seed * 100003 + step)
                p_adv = model(r, adv, check=False)
                p_cln = model.forward_features(_take(feats, idx))
                loss = clean_loss(p_adv, y[idx], self.alpha) + clean_loss(p_cln, y[idx], self.alpha)
                if self.anchored:
                    a = stratified_anchors(y_np, self.n_anchors, rng)
                    p_a = model.forward_features(_take(feats, a))
                    loss = loss + clean_loss(p_a, y[a], self.alpha)
                    ya = y[a]
                    s = torch.sign(ya[None, :] - y[idx][:, None])
                    keep = (ya[None, :] - y[idx][:, None]).abs() > self.tie
                    h = torch.relu(self.lam - s * (p_a[None, :] - p_adv[:, None]))
                    if keep.any():
                        loss = loss + self.gamma * h[keep].mean()
                    log.bounds.append(anchored_bound(y_np[idx], p_adv.detach().numpy(), y_np[a],
                                                     p_a.detach().numpy(), self.lam, warn=False))
                    u = rng.choice(len(y_np), self.n_anchors, replace=False)
                    diff = y_np[u][None, :] - y_np[idx][:, None]
                    log.random_coverage.append(float(((diff > 0).any(1) & (diff < 0).any(1)).mean()))
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                log.losses.append(float(loss.detach()))
        return log


def adversarial_finetune(vanilla, ref, dist, feats, y, anchored: bool, cfg: dict, seed: int):
    """A fine-tuned copy of ``vanilla`` (AT or AAT, sizes from the preset ``cfg``) and its log."""
    model = copy.deepcopy(vanilla)
    torch.manual_seed(seed)
    trainer = AnchoredAdversarialTrainer(model, eps=cfg["eps_train"], steps=cfg["at_steps"], anchored=anchored,
                                         n_anchors=cfg["n_anchors"], lam=cfg["lam"], gamma=cfg["gamma"], lr=cfg["at_lr"])
    log = trainer.fit(ref, dist, feats, y, cfg["at_epochs"], cfg["at_batch"], seed=seed)
    return model, log


def train_images(model, ref, dist, y, epochs: int, batch: int = 32, lr: float = 1e-3, seed: int = 0):
    """Train a model on raw image pairs with the clean loss (the Deep-FR-scratch foil), constant lr."""
    return _fit(lambda idx, y_b: clean_loss(model(ref[idx], dist[idx], check=False), y_b), y, epochs,
                model.parameters(), batch, lr, seed, cosine=False)


@torch.no_grad()
def predict(model, ref, dist, batch: int = 256):
    return torch.cat([model(ref[i:i + batch], dist[i:i + batch], check=False) for i in range(0, len(ref), batch)])


def grad_l1(model, ref, dist, batch: int = 128) -> np.ndarray:
    """Per-pair ||grad_dist f(ref, dist)||_1 (the first-order FGSM gain per unit eps)."""
    out = []
    for i in range(0, len(ref), batch):
        d = dist[i:i + batch].clone().requires_grad_(True)
        g, = torch.autograd.grad(model(ref[i:i + batch], d, check=False).sum(), d)
        out.append(g.abs().flatten(1).sum(1))
    return torch.cat(out).numpy()
