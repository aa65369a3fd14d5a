"""A small real-data experiment (brief §5, O3): a 64-64-10 MLP on sklearn's bundled digits.

Single-node baselines (AdamW, SGD-momentum, Signum, Lion, Lion-VR) use torch optimizers on one flat
parameter vector. Distributed variants run n simulated workers in ONE process: each worker has a
label-skewed shard (heterogeneous data), per-worker gradients come from one ``torch.func.vmap`` call,
and the workers' directions go through the same compression functions as the multi-process code
(``compression.aggregate``); ``distributed.py`` shows the real multi-process exchange.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from ._checks import check_positive_int
from .compression import aggregate, needs_downlink_uniforms, needs_uplink_uniforms, payload_bits
from .optim import (Lion, LionVR, Signum, ema_momentum, lion_direction, lion_update, storm_direction,
                    storm_momentum)

HIDDEN = 64
N_FEATURES, N_CLASSES = 64, 10
SINGLE_NODE_METHODS = ("adamw", "sgdm", "signum", "lion", "lion_vr")
DISTRIBUTED_METHODS = ("dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv")
_RULES = {"dist": ("avg_sign", False), "dist_vr": ("avg_sign", True), "mv": ("mv", False),
          "uu": ("uu", False), "uu_vr": ("uu", True), "sign_mv": ("sign_mv", False)}

#: default step sizes / betas (standard convention) per method; chosen once on a 600-step run
#: (lr in {1e-3, 3e-3} for the Lion family), not tuned per scale
DIGITS_HPARAMS: dict[str, dict] = {
    "adamw": dict(lr=3e-3), "sgdm": dict(lr=0.1), "signum": dict(lr=3e-3),
    "lion": dict(lr=3e-3, betas=(0.9, 0.99)), "lion_vr": dict(lr=3e-3, betas=(0.9, 0.9)),
    "dist": dict(lr=3e-3, betas=(0.9, 0.99)), "dist_vr": dict(lr=3e-3, betas=(0.9, 0.9)),
    "mv": dict(lr=3e-3, betas=(0.9, 0.99)), "uu": dict(lr=3e-3, betas=(0.9, 0.99)),
    "uu_vr": dict(lr=3e-3, betas=(0.9, 0.9)), "sign_mv": dict(lr=3e-3, betas=(0.9, 0.99)),
}
#: default S_G radius of the digits uplink (v clipped to [-G, G], biased for |v| > G); the paper's
#: unbiased compressor is ``uplink_radius="max"`` (R = max_j ||v^j||_inf of the step, sent as 32 bits)
DEFAULT_UPLINK_RADIUS = 0.01


@dataclass(frozen=True)
class DigitsData:
    """Standardised digits (pixel / 16), stratified train/test split, float32 tensors."""

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor

    @classmethod
    def load(cls, test_fraction: float = 0.25, seed: int = 0) -> "DigitsData":
        X, y = load_digits(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X / 16.0, y, test_size=test_fraction, random_state=seed, stratify=y)
        f = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
        return cls(f(Xtr), torch.tensor(ytr), f(Xte), torch.tensor(yte))

    def to(self, device: torch.device | str) -> "DigitsData":
        """A copy with every tensor on ``device``."""
        return DigitsData(*(t.to(device) for t in (self.X_train, self.y_train, self.X_test, self.y_test)))


def label_skew_shards(y: torch.Tensor, n_workers: int, classes_per_worker: int = 3, dominant_fraction: float = 0.8,
                      generator: torch.Generator | None = None) -> list[torch.Tensor]:
    """Heterogeneous split: worker j's dominant classes are {(j k + i) mod 10 : i < k}; a sample of
    class c goes with probability ``dominant_fraction`` to a worker dominated by c, else to any worker."""
    check_positive_int(n_workers, "n_workers")
    if not (0.0 <= dominant_fraction <= 1.0):
        raise ValueError(f"dominant_fraction must lie in [0, 1], got {dominant_fraction!r}")
    owners: dict[int, list[int]] = {c: [] for c in range(N_CLASSES)}
    for j in range(n_workers):
        for i in range(classes_per_worker):
            owners[(j * classes_per_worker + i) % N_CLASSES].append(j)
    assign = torch.empty(len(y), dtype=torch.int64)
    coin = torch.rand(len(y), generator=generator)
    pick = torch.rand(len(y), generator=generator)
    for idx, c in enumerate(y.tolist()):
        pool = owners[c] if (owners[c] and coin[idx] < dominant_fraction) else list(range(n_workers))
        assign[idx] = pool[min(int(pick[idx] * len(pool)), len(pool) - 1)]
    shards = [torch.nonzero(assign == j).flatten() for j in range(n_workers)]
    if any(len(s) == 0 for s in shards):
        raise ValueError("a worker received no data; use fewer workers")
    return shards


def init_mlp(generator: torch.Generator) -> torch.Tensor:
    """Flat parameters of the 64-64-10 MLP (uniform +-1/sqrt(fan_in), as torch.nn.Linear)."""
    def block(fan_in: int, fan_out: int) -> list[torch.Tensor]:
        bound = 1.0 / math.sqrt(fan_in)
        w = (torch.rand(fan_out * fan_in, generator=generator) * 2 - 1) * bound
        b = (torch.rand(fan_out, generator=generator) * 2 - 1) * bound
        return [w, b]
    return torch.cat(block(N_FEATURES, HIDDEN) + block(HIDDEN, N_CLASSES))


def mlp_logits(theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Logits of the MLP with flat parameters ``theta`` on inputs X (N, 64)."""
    sizes = [HIDDEN * N_FEATURES, HIDDEN, N_CLASSES * HIDDEN, N_CLASSES]
    w1, b1, w2, b2 = torch.split(theta, sizes)
    h = torch.relu(X @ w1.view(HIDDEN, N_FEATURES).T + b1)
    return h @ w2.view(N_CLASSES, HIDDEN).T + b2


def mlp_loss(theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(mlp_logits(theta, X), y)


N_PARAMS = HIDDEN * N_FEATURES + HIDDEN + N_CLASSES * HIDDEN + N_CLASSES


@dataclass
class DigitsRun:
    """Learning curve of one method: at each evaluated step, train loss, test accuracy, the training
    samples seen so far by all workers together, and the bits one worker has communicated so far
    (uplink + downlink; 0 for single-node methods)."""

    method: str
    steps: list[int] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    test_accuracy: list[float] = field(default_factory=list)
    bits_per_worker: list[float] = field(default_factory=list)

    @property
    def final_accuracy(self) -> float:
        return self.test_accuracy[-1]


def _evaluate(run: DigitsRun, step: int, theta: torch.Tensor, data: DigitsData, bits: float, samples: int) -> None:
    with torch.no_grad():
        loss = float(mlp_loss(theta, data.X_train, data.y_train))
        acc = float((mlp_logits(theta, data.X_test).argmax(1) == data.y_test).float().mean())
    if not math.isfinite(loss):
        raise FloatingPointError(f"digits training diverged (train loss {loss})")
    run.steps.append(step)
    run.samples.append(samples)
    run.train_loss.append(loss)
    run.test_accuracy.append(acc)
    run.bits_per_worker.append(bits)


def _sample(idx: torch.Tensor, size: int, generator: torch.Generator) -> torch.Tensor:
    """``size`` draws from the index set ``idx`` (a CPU tensor; the draws come from the CPU generator)."""
    return idx[torch.randint(0, len(idx), (size,), generator=generator)]


def train_digits(method: str, data: DigitsData, steps: int, *, batch_size: int = 32, n_workers: int = 4,
                 batch0_factor: int = 4, lr: float | None = None, betas: tuple[float, float] | None = None,
                 eval_every: int = 20, seed: int = 0, shards: list[torch.Tensor] | None = None,
                 uplink_radius: float | str = DEFAULT_UPLINK_RADIUS, device: torch.device | str | None = None) -> DigitsRun:
    """Train the MLP with ``method`` for ``steps`` steps; deterministic given ``seed``.

    Single-node methods (:data:`SINGLE_NODE_METHODS`) see i.i.d. minibatches of the whole training set.
    Distributed methods (:data:`DISTRIBUTED_METHODS`) run ``n_workers`` label-skewed workers, each with
    its own minibatch of ``batch_size`` and its own momentum; betas in the standard convention.
    VR methods start from a batch of ``batch0_factor * batch_size`` samples (B0). The S_G uplink of
    ``mv``/``uu``/``uu_vr`` uses ``uplink_radius``: ``"max"`` = R = max_j ||v^j||_inf of the step
    (unbiased, data-dependent radius, brief Pitfalls; 32 more bits each way), or a fixed G > 0 with v
    clipped to [-G, G] first (biased for |v| > G, closer to sign compression). ``device``: where the MLP
    computes (None: CPU); every random draw stays on a CPU generator, so a run's sample sequence is the
    same on every device.
    """
    if not (uplink_radius == "max" or (isinstance(uplink_radius, (int, float)) and uplink_radius > 0)):
        raise ValueError(f"uplink_radius must be 'max' or a positive number, got {uplink_radius!r}")
    if method not in SINGLE_NODE_METHODS + DISTRIBUTED_METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {SINGLE_NODE_METHODS + DISTRIBUTED_METHODS}")
    check_positive_int(steps, "steps")
    check_positive_int(batch_size, "batch_size")
    hp = dict(DIGITS_HPARAMS[method])
    if lr is not None:
        hp["lr"] = lr
    if betas is not None:
        hp["betas"] = betas
    gen = torch.Generator().manual_seed(seed)
    theta = init_mlp(gen)
    if shards is None and method not in SINGLE_NODE_METHODS:
        shards = label_skew_shards(data.y_train, n_workers, generator=gen)
    dev = torch.device(device) if device is not None else torch.device("cpu")
    data, theta = data.to(dev), theta.to(dev)
    if method in SINGLE_NODE_METHODS:
        return _train_single(method, data, steps, batch_size, batch0_factor, hp, eval_every, theta, gen)
    return _train_distributed(method, data, steps, batch_size, batch0_factor, hp, eval_every, theta, gen, shards,
                              uplink_radius)


def _train_single(method: str, data: DigitsData, steps: int, batch_size: int, batch0_factor: int, hp: dict,
                  eval_every: int, theta: torch.Tensor, gen: torch.Generator) -> DigitsRun:
    param = torch.nn.Parameter(theta)
    opt = {"adamw": lambda: torch.optim.AdamW([param], lr=hp["lr"], weight_decay=0.0, foreach=True),
           "sgdm": lambda: torch.optim.SGD([param], lr=hp["lr"], momentum=0.9),
           "signum": lambda: Signum([param], lr=hp["lr"]),
           "lion": lambda: Lion([param], **hp),
           "lion_vr": lambda: LionVR([param], **hp)}[method]()
    all_idx = torch.arange(len(data.y_train))
    dev = param.device
    run = DigitsRun(method)
    _evaluate(run, 0, param.detach(), data, 0.0, 0)
    seen = 0

    def closure_on(idx: torch.Tensor):
        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = mlp_loss(param, data.X_train[idx], data.y_train[idx])
            loss.backward()
            return loss
        return closure

    for step in range(1, steps + 1):
        size = batch0_factor * batch_size if method == "lion_vr" and step == 1 else batch_size  # m_1 from B0
        opt.step(closure_on(_sample(all_idx, size, gen).to(dev)))  # LionVR calls it at x_t and x_{t-1}
        seen += size
        if step % eval_every == 0 or step == steps:
            _evaluate(run, step, param.detach(), data, 0.0, seen)
    return run


def _train_distributed(method: str, data: DigitsData, steps: int, batch_size: int, batch0_factor: int, hp: dict,
                       eval_every: int, theta: torch.Tensor, gen: torch.Generator,
                       shards: list[torch.Tensor], uplink_radius: float | str) -> DigitsRun:
    rule, vr = _RULES[method]
    n = len(shards)
    lr = hp["lr"]
    b1_std, b2_std = hp["betas"]
    per_worker_grad = torch.func.vmap(torch.func.grad(mlp_loss), in_dims=(None, 0, 0))

    dev = theta.device

    def worker_batches(size: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.stack([_sample(s, size, gen) for s in shards]).to(dev)  # (n, size)
        return data.X_train[idx], data.y_train[idx]

    up_bits, down_bits = payload_bits(rule, theta.numel())
    scale_bits = 64 if rule in ("mv", "uu") and uplink_radius == "max" else 0  # R: one float32 each way
    bits_per_step = up_bits + down_bits + scale_bits
    run = DigitsRun(method)
    _evaluate(run, 0, theta, data, 0.0, 0)
    beta1, beta2 = 1.0 - b1_std, 1.0 - b2_std  # paper betas (weights on the new gradient)
    first = batch0_factor * batch_size if vr else batch_size
    m = per_worker_grad(theta, *worker_batches(first))  # (n, P): m_1 (VR: the B0 batch) or m_0
    seen = n * first
    theta_prev = theta
    for step in range(1, steps + 1):
        if vr and step == 1:
            v, m_next = m, m
        else:
            Xb, yb = worker_batches(batch_size)
            seen += n * batch_size
            g = per_worker_grad(theta, Xb, yb)
            if vr:  # STORM with the same minibatch at theta_{t-1} (brief Alg. 2, per worker)
                g_hat = per_worker_grad(theta_prev, Xb, yb)
                v, m_next = storm_direction(g, m, g_hat, beta1), storm_momentum(g, m, g_hat, beta2)
            else:
                v, m_next = lion_direction(m, g, beta1), ema_momentum(m, g, beta2)
        G = None
        if rule in ("mv", "uu"):
            G = float(v.abs().max()) if uplink_radius == "max" else float(uplink_radius)
            G = G if G > 0 else 1.0
        up_u = torch.rand(v.shape, generator=gen).to(dev) if needs_uplink_uniforms(rule) else None
        down_u = torch.rand(v.shape[1:], generator=gen).to(dev) if needs_downlink_uniforms(rule) else None
        u = aggregate(v, rule, G, "random", node_dim=0, uplink_uniforms=up_u, downlink_uniforms=down_u)
        theta_prev = theta
        theta = lion_update(theta, u, lr, 0.0)
        m = m_next
        if step % eval_every == 0 or step == steps:
            _evaluate(run, step, theta, data, float(step * bits_per_step), seen)
    return run
