"""Training: the clean loss, vanilla training, adversarial training (AT, the lab's label-lowering method)
and Anchored Adversarial Training (AAT, our reconstruction from the abstract and the ICLR reviews; brief 2.2).

* clean loss (1 - PLCC_batch(y^, y)) + alpha MSE(y^, y) on z-scored MOS: PLCC alone is invariant to
  y^ -> a y^ + b (a > 0; Theory), so the MSE term pins the scale;
* the training adversary (both methods): PGD with a random start, ``steps`` steps of alpha = 2.5 eps / steps
  (Madry et al. 2018's travel of 2.5 eps), in **both directions**: within each batch the pairs above the
  batch's median MOS are pushed down, the others up (the rank-direction threat model of the lab's FR
  training, ``robust-lpips/common/attacks.py``, ``attack_pairs``: the worse image of a pair is raised, the
  better one lowered);
* AT (Chistyakova et al. 2024, ``wianluna/metrics_at``, ``metric_at/trainer.py``, label strategy ``ssim``):
  random batches, the adversarial pair's label **lowered** by
  ``penalty * (1 - SSIM(dist_adv, dist)) * (max MOS - min MOS)`` (the perturbation is a distortion), loss
  L(y^_adv, y_adv) + L(y^_clean, y); ``label="clean"`` keeps the clean MOS as the adversarial label instead;
* AAT: batches drawn from a **narrow MOS band** (``band`` consecutive training pairs in MOS order) with K_a
  clean **anchors on both sides** of it (one just below the band, one just above, the rest stratified
  inside), their regression loss, and the anchored hinge ranking loss
  L_rank = mean_{i, a: |y_i - y_a| > tie} [lambda - sgn(y_a - y_i)(y~_a - y^_adv,i)]_+ with weight gamma
  (the mini-batch construction and two-sided coverage of the reviewers' Theorem 1). Each AAT batch records
  the anchored bound (bound.py) on its adversarial predictions.
Both adversarial trainers fine-tune a copy of the converged vanilla model with the same batch size (the
matched-batch control of the ICLR version's 32 vs 16) and the same adversary; :func:`clean_finetune` gives
vanilla the same extra epochs without attacks (the control for "more training").
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
    ``batch_loss(idx, y_idx)`` returns the loss of one batch. Returns the loss of every step (the training
    curve; `chunk_means` averages it for the convergence rule)."""
    rng = np.random.default_rng(seed)
    params = list(params)
    opt = torch.optim.Adam(params, lr=lr)
    sched = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs * _n_batches(len(y), batch)))
             if cosine else None)
    dev = params[0].device
    y = torch.as_tensor(y, dtype=torch.float32, device=dev)
    history = []
    for _ in range(epochs):
        for idx in _batches(len(y), batch, rng):
            if float(y[idx].std()) == 0:
                continue
            loss = batch_loss(idx, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            history.append(float(loss.detach()))
    return history


def chunk_means(losses, n: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """A per-step loss curve as ``n`` means over consecutive equal chunks of steps: (the chunks' last steps,
    their mean losses), for `icml26.Chapter.curve` (the book's convergence rule needs >= 6 points)."""
    losses = np.asarray(losses, dtype=float)
    if losses.ndim != 1 or len(losses) < n:
        raise ValueError(f"need a 1-D curve of at least {n} steps, got shape {losses.shape}")
    parts = np.array_split(np.arange(len(losses)), n)
    return np.array([p[-1] + 1 for p in parts], dtype=float), np.array([losses[p].mean() for p in parts])


def train_vanilla(model, feats, y, epochs: int, batch: int = 32, lr: float = 1e-2, seed: int = 0):
    """Vanilla training on precomputed (clean) feature maps, cosine-annealed; returns the loss of every step."""
    return _fit(lambda idx, y_b: clean_loss(model.forward_features(_take(feats, idx)), y_b), y, epochs,
                model.parameters(), batch, lr, seed, cosine=True)


@dataclass
class AdvLog:
    losses: list = field(default_factory=list)
    epoch_loss: list = field(default_factory=list)       # mean training loss per epoch (the training curve)
    bounds: list = field(default_factory=list)           # BoundCheck per AAT batch
    random_coverage: list = field(default_factory=list)  # coverage of uniformly drawn anchors (control)


def band_batches(order: np.ndarray, batch: int, band: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch of MOS-band mini-batches: ``len(order) // batch`` batches, each ``batch`` pairs drawn without
    replacement from ``band`` consecutive positions of ``order`` (the training pairs sorted by MOS) starting
    at a uniformly drawn position. Returns the batches as positions in ``order``."""
    n = len(order)
    if not 2 <= batch <= band <= n:
        raise ValueError(f"need 2 <= batch <= band <= n, got batch={batch}, band={band}, n={n}")
    out = []
    for _ in range(max(1, n // batch)):
        s = int(rng.integers(0, n - band + 1))
        out.append(s + rng.choice(band, batch, replace=False))
    return out


def band_anchors(pos: np.ndarray, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` anchor positions (in MOS order) for a band batch at positions ``pos``: one drawn from the
    ``len(pos)`` positions just below the batch's lowest, one from those just above its highest (two-sided
    coverage; missing at the ends of the MOS range), the rest one per equal-width bin of the span in between;
    batch members excluded where possible."""
    if k < 2:
        raise ValueError(f"need at least 2 anchors, got {k}")
    lo, hi, w = int(pos.min()), int(pos.max()), max(2, len(pos))
    taken = set(pos.tolist())
    out = []

    def pick(a, b):
        cand = [p for p in range(max(0, a), min(n, b)) if p not in taken] or list(range(max(0, a), min(n, b)))
        if cand:
            c = int(rng.choice(cand))
            out.append(c)
            taken.add(c)

    pick(lo - w, lo)
    pick(hi + 1, hi + 1 + w)
    edges = np.linspace(lo, hi + 1, k - len(out) + 1).round().astype(int)
    for a, b in zip(edges[:-1], edges[1:]):
        pick(a, max(b, a + 1))
    while len(out) < k:
        pick(lo - w, hi + 1 + w)
    return np.array(out[:k])


class AnchoredAdversarialTrainer:
    """AT (``anchored=False``) or AAT (``anchored=True``) fine-tuning of a BiRQA model (module docstring).

    ``label``: the adversarial label of AT, ``"ssim"`` (Chistyakova et al. 2024: lowered by the SSIM loss of
    the perturbation) or ``"clean"`` (the clean MOS). ``penalty``: the lowering's weight (the lab's default 1).
    ``band``: the MOS-band width of AAT's batches, in training pairs (``None``: 4 x batch).
    """

    def __init__(self, model, eps: float, steps: int, anchored: bool, n_anchors: int = 8, lam: float = 0.1,
                 gamma: float = 1.0, tie: float = 0.05, lr: float = 1e-3, alpha: float = 1.0, label: str = "ssim",
                 penalty: float = 1.0, band: int | None = None):
        if n_anchors < 2:
            raise ValueError(f"need at least 2 anchors, got {n_anchors}")
        if eps <= 0 or steps < 1:
            raise ValueError(f"eps must be > 0 and steps >= 1, got eps={eps}, steps={steps}")
        if label not in ("ssim", "clean"):
            raise ValueError(f"label must be 'ssim' (Chistyakova et al. 2024) or 'clean', got {label!r}")
        self.model, self.eps, self.steps, self.anchored = model, eps, steps, anchored
        self.n_anchors, self.lam, self.gamma, self.tie, self.alpha = n_anchors, lam, gamma, tie, alpha
        self.label, self.penalty, self.band = label, penalty, band
        self.step_size = 2.5 * eps / steps
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)

    def adversary(self, r, d, y_b, seed: int):
        """PGD in both directions: pairs above the batch's median MOS pushed down, the others up."""
        from .attacks import attack_directed

        direction = np.where(y_b.cpu().numpy() > float(np.median(y_b.cpu().numpy())), -1.0, 1.0)
        return attack_directed(lambda a, b: self.model(a, b, check=False), r, d, self.eps, self.steps, "pgd",
                               direction, batch=len(r), seed=seed, alpha=self.step_size)

    def fit(self, ref, dist, feats, y, epochs: int, batch: int = 16, seed: int = 0) -> AdvLog:
        from .metrics import ssim

        rng = np.random.default_rng(seed)
        y_np = np.asarray(y, float)
        y = torch.as_tensor(y_np, dtype=torch.float32, device=dist.device)
        span = float(y_np.max() - y_np.min())
        order = np.argsort(y_np, kind="stable")
        band = self.band or 4 * batch
        log, model, step = AdvLog(), self.model, 0
        for _ in range(epochs):
            epoch = []
            batches = (band_batches(order, batch, min(band, len(order)), rng) if self.anchored
                       else _batches(len(y_np), batch, rng))
            for pos in batches:
                idx = order[pos] if self.anchored else pos
                if float(y[idx].std()) == 0:
                    continue
                step += 1
                r, d = ref[idx], dist[idx]
                adv = self.adversary(r, d, y[idx], seed * 100003 + step)
                p_adv = model(r, adv, check=False)
                p_cln = model.forward_features(_take(feats, idx))
                y_adv = y[idx]
                if not self.anchored and self.label == "ssim":
                    with torch.no_grad():
                        y_adv = y_adv - self.penalty * (1 - ssim(adv, d, check=False)).clamp_min(0) * span
                loss = clean_loss(p_cln, y[idx], self.alpha) + (
                    clean_loss(p_adv, y_adv, self.alpha) if float(y_adv.std()) > 0 else ((p_adv - y_adv) ** 2).mean())
                if self.anchored:
                    a = order[band_anchors(pos, len(order), self.n_anchors, rng)]
                    p_a = model.forward_features(_take(feats, a))
                    loss = loss + clean_loss(p_a, y[a], self.alpha)
                    ya = y[a]
                    s = torch.sign(ya[None, :] - y[idx][:, None])
                    keep = (ya[None, :] - y[idx][:, None]).abs() > self.tie
                    h = torch.relu(self.lam - s * (p_a[None, :] - p_adv[:, None]))
                    if keep.any():
                        loss = loss + self.gamma * h[keep].mean()
                    log.bounds.append(anchored_bound(y_np[idx], p_adv.detach().cpu().numpy(), y_np[a],
                                                     p_a.detach().cpu().numpy(), self.lam, warn=False))
                    u = rng.choice(len(y_np), self.n_anchors, replace=False)
                    diff = y_np[u][None, :] - y_np[idx][:, None]
                    log.random_coverage.append(float(((diff > 0).any(1) & (diff < 0).any(1)).mean()))
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                log.losses.append(float(loss.detach()))
                epoch.append(log.losses[-1])
            log.epoch_loss.append(float(np.mean(epoch)))
        return log


def adversarial_finetune(vanilla, ref, dist, feats, y, anchored: bool, cfg: dict, seed: int, label: str = "ssim"):
    """A fine-tuned copy of ``vanilla`` (AT or AAT, sizes from the preset ``cfg``) and its log."""
    model = copy.deepcopy(vanilla)
    torch.manual_seed(seed)
    trainer = AnchoredAdversarialTrainer(model, eps=cfg["eps_train"], steps=cfg["at_steps"], anchored=anchored,
                                         n_anchors=cfg["n_anchors"], lam=cfg["lam"], gamma=cfg["gamma"], lr=cfg["at_lr"],
                                         label=label, penalty=cfg["at_penalty"], band=cfg["at_band"])
    log = trainer.fit(ref, dist, feats, y, cfg["at_epochs"], cfg["at_batch"], seed=seed)
    return model, log


def clean_finetune(vanilla, feats, y, cfg: dict, seed: int):
    """A copy of ``vanilla`` given AT's extra epochs (``at_epochs``, lr ``at_lr``, batch ``at_batch``, constant lr)
    on clean pairs only: the "more training" control of AT/AAT. Returns the model and its loss per step."""
    model = copy.deepcopy(vanilla)
    y = np.asarray(y, float)
    hist = _fit(lambda idx, y_b: clean_loss(model.forward_features(_take(feats, idx)), y_b), y, cfg["at_epochs"],
                model.parameters(), cfg["at_batch"], cfg["at_lr"], seed, cosine=False)
    return model, hist


def train_images(model, ref, dist, y, epochs: int, batch: int = 32, lr: float = 1e-3, seed: int = 0):
    """Train a model on raw image pairs with the clean loss (the Deep-FR-scratch foil), constant lr."""
    return _fit(lambda idx, y_b: clean_loss(model(ref[idx], dist[idx], check=False), y_b), y, epochs,
                model.parameters(), batch, lr, seed, cosine=False)


@torch.no_grad()
def predict(model, ref, dist, batch: int = 256):
    return torch.cat([model(ref[i:i + batch], dist[i:i + batch], check=False).cpu() for i in range(0, len(ref), batch)])


def grad_l1(model, ref, dist, batch: int = 128) -> np.ndarray:
    """Per-pair ||grad_dist f(ref, dist)||_1 (the first-order FGSM gain per unit eps)."""
    out = []
    for i in range(0, len(ref), batch):
        d = dist[i:i + batch].clone().requires_grad_(True)
        g, = torch.autograd.grad(model(ref[i:i + batch], d, check=False).sum(), d)
        out.append(g.abs().flatten(1).sum(1).cpu())
    return torch.cat(out).numpy()
