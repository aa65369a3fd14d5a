"""Epoch-budget training: road pre-training (masked reconstruction + InfoNCE over FDA pseudo-lanes),
lane / road fine-tuning (the first 30 % of the epochs head-only, then end-to-end, as the code's
`fine_tune(freeze_epochs)`), scratch baselines, a validation block that picks the epoch (early stopping by
checkpoint selection), learning curves, and masked metrics in the data's units (mph on PeMS).
Every model and batch goes through `icml26.device()` (CUDA when present)."""
from __future__ import annotations

import copy
import math

import numpy as np
import torch

from icml26 import device as _device

from .baselines import GRULane, STGCNLite, historical_average, lane_graph, persistence
from .data import Target, windows
from .fda import FDA
from .graph import info_nce
from .model import MiniTraffic, lane_tokens, random_mask

HORIZONS = {"5 min": 1, "15 min": 3, "30 min": 6}


def _optimizer(params, lr, steps):
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    return opt, sched


def mini_config(cfg: dict, variant: str) -> dict:
    """Model kwargs of a variant: mini | nocc (dense token attention, the -CC ablation) | big (Big-PT, dense,
    wide); any other name (nofda, nonce, shuffled, mask<r>) is Mini's architecture."""
    base = dict(T=cfg["T"], H=cfg["H"], P=cfg["P"], S=cfg["S"], d=cfg["d"], d_ff=cfg["d_ff"], layers=cfg["layers"],
                heads=cfg["heads"], graph_heads=cfg["graph_heads"], k=cfg["k"], dropout=cfg["dropout"])
    if variant == "nocc":
        base["graph"] = "dense"
    elif variant == "big":
        base.update(d=cfg["big_d"], d_ff=cfg["big_d_ff"], layers=cfg["big_layers"], heads=cfg["heads"],
                    graph_heads=cfg["graph_heads"], graph="dense")
    return base


def _epoch_steps(n_windows: int, batch: int) -> int:
    return max(1, math.ceil(n_windows / batch))


def pretrain(cfg: dict, sources: list[np.ndarray], seed: int, variant: str = "mini", fda: bool = True,
             nce_weight: float | None = None, mask_ratio: float | None = None, epochs: int | None = None):
    """Pre-train on source road days: each road -> D FDA pseudo-lanes (plain copies when fda=False).

    Budget: ``epochs`` (default ``cfg["pretrain_epochs"]``) passes over the source windows (starts every
    ``cfg["pretrain_stride"]`` bins; 1 = every window, as the released loader) at batch ``cfg["pretrain_batch"]``,
    learning rate ``cfg["lr_pretrain"]`` on a cosine schedule. ``variant="nocc"``: the -CC ablation (dense
    token attention instead of the kNN graph); ``nce_weight=0``: the -InfoNCE ablation. Returns the model
    and its curve, per epoch (``step``: optimizer steps so far): the mean masked reconstruction MSE ``rec`` (standardised windows), the same
    for predicting the window mean (``zero``, the plateau level, about 1), their ratio ``rec_ratio`` (the
    plateau is left when it falls well below 1) and the InfoNCE loss ``nce``."""
    dev = _device()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = MiniTraffic(**mini_config(cfg, variant)).to(dev)
    epochs = cfg["pretrain_epochs"] if epochs is None else epochs
    nce_weight = cfg["nce_weight"] if nce_weight is None else nce_weight
    if variant == "big":
        nce_weight = 0.0                                   # Big-PT: masked reconstruction only
    mask_ratio = cfg["mask_ratio"] if mask_ratio is None else mask_ratio
    D, T, B = cfg["D"], cfg["T"], cfg["pretrain_batch"]
    stride = cfg.get("pretrain_stride", 1)
    starts_all = [(i, s) for i, day in enumerate(sources) for s in range(0, day.shape[1] - T + 1, stride)]
    per_epoch = _epoch_steps(len(starts_all), B)
    steps = epochs * per_epoch
    aug = FDA(cfg["fda_lambda"], cfg["fda_tau"], cfg["fda_phase"], D)
    opt, sched = _optimizer(model.parameters(), cfg["lr_pretrain"], steps)
    model.train()
    curve = {"epoch": [], "step": [], "rec": [], "zero": [], "rec_ratio": [], "nce": []}
    for ep in range(epochs):
        order = rng.permutation(len(starts_all))
        rec_sum = nce_sum = zero_sum = 0.0
        for b in range(per_epoch):
            pick = order[b * B:(b + 1) * B]
            if len(pick) < 2:
                continue
            x = torch.tensor(np.stack([sources[starts_all[j][0]][:, starts_all[j][1]:starts_all[j][1] + T] for j in pick]),
                             dtype=torch.float32)                                           # (B, R, T)
            Bn, R = x.shape[:2]
            xd = aug(x, generator=gen) if fda else x.unsqueeze(2).expand(Bn, R, D, T)
            xd = xd.reshape(Bn, R * D, T).to(dev)
            groups = torch.arange(R).repeat_interleave(D)
            mask = random_mask(Bn, groups, model.np, mask_ratio, gen).to(dev)
            loss, rec, nce, zero = model.pretrain_loss(xd, mask, groups.to(dev), nce_weight=nce_weight,
                                                       temperature=cfg["temperature"], return_zero=True)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            rec_sum, nce_sum, zero_sum = rec_sum + float(rec), nce_sum + float(nce), zero_sum + float(zero)
        curve["epoch"].append(ep + 1)
        curve["step"].append((ep + 1) * per_epoch)
        curve["rec"].append(rec_sum / per_epoch)
        curve["zero"].append(zero_sum / per_epoch)
        curve["rec_ratio"].append(rec_sum / max(zero_sum, 1e-12))
        curve["nce"].append(nce_sum / per_epoch)
    model.eval()
    return model, {k: np.asarray(v) for k, v in curve.items()}


class RoadExtension(torch.nn.Module):
    """Road-level fine-tuning (paper): Extension (repeat each road D times) + Pooling (mean over D)."""

    def __init__(self, model: MiniTraffic, D: int):
        super().__init__()
        self.model, self.D = model, D

    def forecast(self, x):
        B, R, T = x.shape
        y = self.model.forecast(x.repeat_interleave(self.D, dim=1))
        return y.view(B, R, self.D, -1).mean(2)

    def head_parameters(self):
        return self.model.head_parameters()


def make_model(method: str, cfg: dict, target: Target, pretrained=None, seed: int = 0, level: str = "lane",
               extension: bool = True):
    """A fresh or pre-trained model; road level wraps Mini in Extension + Pooling unless ``extension=False``
    (the ablation: the road series go in as they are, one channel per road)."""
    torch.manual_seed(seed)
    if method == "gru":
        return GRULane(cfg["T"], cfg["H"], cfg["gru_hidden"])
    if method == "stgcn":
        if level == "road":
            adj = lane_graph(np.arange(target.n_roads), np.zeros(target.n_roads, int))
        else:
            adj = lane_graph(target.lane_road, target.lane_pos)
        return STGCNLite(cfg["T"], cfg["H"], adj, cfg["stgcn_channels"])
    if pretrained is not None:
        model = copy.deepcopy(pretrained)
    else:
        model = MiniTraffic(**mini_config(cfg, method if method in ("big", "nocc") else "mini"))
    return RoadExtension(model, cfg["D"]) if level == "road" and extension else model


def day_windows(target: Target, days, cfg: dict, level: str, stride: int):
    """Forecasting windows (inputs, targets, observed mask) of ``level`` series over ``days``, concatenated."""
    xs, ys, ms = [], [], []
    for d in days:
        series = target.lane(d) if level == "lane" else target.road(d)
        x, y, m = windows(series, cfg["T"], cfg["H"], stride, target.observed(d, level))
        xs.append(x), ys.append(y), ms.append(m)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ms)


def _train_windows(target: Target, days, cfg, level):
    return day_windows(target, days, cfg, level, stride=1)


def _val_windows(target, cfg, level):
    return day_windows(target, target.val_days, cfg, level, cfg["test_stride"])


def _mae(model, x, y, m) -> float:
    pred = predict(model, x)
    mm = m & (y >= 1.0)
    return float(np.abs(pred - y)[mm].mean())


def finetune(model, target: Target, days, cfg: dict, seed: int, level: str = "lane", fda_aug: bool = True,
             head_only: bool = True, epochs: int | None = None, lr: float | None = None):
    """Fine-tune (or train from scratch) on the target's ``days``; MSE on observed targets.

    Budget: ``epochs`` (default ``cfg["finetune_epochs"]``) epochs at batch ``cfg["batch"]``, each
    ``min(one pass over the training windows, cfg["max_epoch_steps"])`` steps: where the cap binds (larger
    ``D_L``), an "epoch" is a fixed number of steps, not a pass (`passes` says how many passes a run makes).
    ``lr`` (default ``cfg["lr_finetune"]``): one learning rate for the head-only phase (the first
    ``head_only_frac`` of the epochs, the released ``fine_tune(freeze_epochs)``) and the end-to-end phase.
    After every epoch the validation block's MAE (all horizons) is measured; the epoch with the lowest is
    kept (early stopping by checkpoint selection). Returns the model and its curve ``{"epoch", "val_mae",
    "best_val_mae"}``: ``val_mae`` is the raw per-epoch curve (the one judged for convergence), the best so
    far is the quality of the kept model."""
    dev = _device()
    model = model.to(dev)
    x_all, y_all, m_all = _train_windows(target, days, cfg, level)
    xv, yv, mv = _val_windows(target, cfg, level)
    gen = torch.Generator().manual_seed(seed + 99)
    rng = np.random.default_rng(seed + 99)
    epochs = cfg["finetune_epochs"] if epochs is None else epochs
    per_epoch = min(_epoch_steps(len(x_all), cfg["batch"]), cfg["max_epoch_steps"])
    aug = FDA(cfg["fda_lambda"], cfg["fda_tau"], cfg["fda_phase"], 1) if fda_aug else None
    head_params = model.head_parameters() if hasattr(model, "head_parameters") else list(model.parameters())
    n_head = int(round(cfg["head_only_frac"] * epochs)) if head_only else 0
    lr = cfg["lr_finetune"] if lr is None else float(lr)
    opt_h, sched_h = _optimizer(head_params, lr, max(n_head * per_epoch, 1))
    opt, sched = _optimizer(model.parameters(), lr, max((epochs - n_head) * per_epoch, 1))
    curve = {"epoch": [], "val_mae": [], "best_val_mae": []}
    best, best_state = float("inf"), None
    for ep in range(epochs):
        head_phase = ep < n_head
        model.train()
        order = rng.permutation(len(x_all))
        for b in range(per_epoch):
            pick = order[(b * cfg["batch"]) % len(order):][:cfg["batch"]]
            if len(pick) < 2:
                pick = rng.integers(len(x_all), size=cfg["batch"])
            x = torch.tensor(x_all[pick], dtype=torch.float32)
            if aug is not None:
                x = aug(x, generator=gen)[..., 0, :]
            y = torch.tensor(y_all[pick], dtype=torch.float32, device=dev)
            m = torch.tensor(m_all[pick], device=dev)
            loss = ((model.forecast(x.to(dev)) - y) ** 2)[m].mean()
            o, sc, params = (opt_h, sched_h, head_params) if head_phase else (opt, sched, list(model.parameters()))
            o.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)          # the frozen backbone's gradients are not counted
            o.step()
            sc.step()
        val = _mae(model, xv, yv, mv)
        if val < best:
            best, best_state = val, copy.deepcopy(model.state_dict())
        curve["epoch"].append(ep + 1)
        curve["val_mae"].append(val)
        curve["best_val_mae"].append(best)
    model.load_state_dict(best_state)
    model.eval()
    return model, {k: np.asarray(v) for k, v in curve.items()}


def passes(target: Target, D_L: int, cfg: dict, level: str = "lane", epochs: int | None = None) -> float:
    """How many passes over its ``D_L`` days' training windows a fine-tuning run makes (`finetune`'s budget)."""
    n = sum(len(range(0, 288 - cfg["T"] - cfg["H"] + 1)) for _ in target.train_days(D_L))
    per_epoch = min(_epoch_steps(n, cfg["batch"]), cfg["max_epoch_steps"])
    return (cfg["finetune_epochs"] if epochs is None else epochs) * per_epoch * cfg["batch"] / n


def metrics(pred: np.ndarray, y: np.ndarray, m: np.ndarray) -> dict:
    """MAE, RMSE (data units: mph on PeMS, km/h in the simulator), MAPE (%) at 5/15/30 min, over observed
    targets with y >= 1."""
    out = {}
    for name, h in HORIZONS.items():
        e, yy, mm = pred[..., h - 1], y[..., h - 1], m[..., h - 1] & (y[..., h - 1] >= 1.0)
        err = (e - yy)[mm]
        out[f"MAE@{name}"] = float(np.abs(err).mean())
        out[f"RMSE@{name}"] = float(np.sqrt((err**2).mean()))
        out[f"MAPE@{name}"] = float(100 * np.abs(err / yy[mm]).mean())
    return out


def test_windows(target: Target, cfg: dict, level: str = "lane"):
    return day_windows(target, target.test_days, cfg, level, cfg["test_stride"])


@torch.no_grad()
def predict(model, x: np.ndarray, batch: int = 32) -> np.ndarray:
    model.eval()
    dev = next(model.parameters()).device
    out = [model.forecast(torch.tensor(x[i:i + batch], dtype=torch.float32, device=dev)).cpu().numpy()
           for i in range(0, len(x), batch)]
    return np.concatenate(out)


def evaluate_simple(method: str, target: Target, days, cfg: dict, level: str = "lane") -> dict:
    """HA or persistence on the test days."""
    x, y, m = test_windows(target, cfg, level)
    if method == "persistence":
        return metrics(persistence(x, cfg["H"]), y, m)
    if method == "ha":
        series = [target.lane(d) if level == "lane" else target.road(d) for d in days]
        one = historical_average(series, cfg["T"], cfg["H"], cfg["test_stride"])
        return metrics(np.concatenate([one] * len(target.test_days)), y, m)
    raise ValueError(f"unknown simple method {method!r}")


def run_method(method: str, target: Target, D_L: int, cfg: dict, seed: int, pretrained: dict | None = None,
               level: str = "lane", extension: bool = True, epochs: int | None = None, return_model: bool = False,
               lr: float | None = None):
    """Train one method at few-shot ``D_L`` days and score it on the test days: (metrics, curve or None), and
    the trained model when ``return_model``.

    ``method``: mini | scratch | nofda | shuffled | nocc | nonce | big | mask<r> | gru | stgcn | ha | persistence.
    ``pretrained``: {variant: model} from `pretrain` for this seed. Mini-scratch is Mini's architecture from a
    random initialisation with Mini's fine-tuning protocol (FDA augmentation, validation-selected epoch),
    trained end to end (a head-only phase on a random backbone is no part of the method): the two arms differ
    only in the pre-training. Pre-trained Mini variants fine-tune with FDA (except nofda and Big-PT: the
    paper's "without FDA"); GRU-lane and STGCN-lite train without it. ``lr``: the fine-tuning learning rate
    (default ``cfg["lr_finetune"]``; the chapter chooses it per arm from ``cfg["lr_grid"]`` on validation).
    """
    days = target.train_days(D_L)
    if method in ("ha", "persistence"):
        out = (evaluate_simple(method, target, days, cfg, level), None)
        return out + (None,) if return_model else out
    if method in ("scratch", "gru", "stgcn"):
        model = make_model(method, cfg, target, None, seed, level, extension)
        model, curve = finetune(model, target, days, cfg, seed, level, fda_aug=method == "scratch", head_only=False,
                                epochs=epochs, lr=lr)
    else:
        if pretrained is None or method not in pretrained:
            raise ValueError(f"method {method!r} needs a pre-trained model for seed {seed}")
        model = make_model(method, cfg, target, pretrained[method], seed, level, extension)
        model, curve = finetune(model, target, days, cfg, seed, level, fda_aug=method not in ("nofda", "big"),
                                head_only=True, epochs=epochs, lr=lr)
    x, y, m = test_windows(target, cfg, level)
    out = (metrics(predict(model, x), y, m), curve)
    return out + (model,) if return_model else out


def train_projection(model: MiniTraffic, x: np.ndarray, lane_road, cfg: dict, seed: int, steps: int = 40):
    """The positive control of the graph-structure test: a copy of ``model`` whose projection g (only g) is
    trained with InfoNCE on **lane** windows ``x (W, lanes, T)`` with the positives the paper's clustering
    should produce (tokens of lanes of the same road at the same patch), so the road-lane structure is in g
    by construction. Adam, ``cfg["lr_pretrain"]``, batches of 8 windows."""
    dev = _device()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    out = copy.deepcopy(model).to(dev)
    out.eval()                                           # the frozen parts stay in evaluation mode
    opt = torch.optim.Adam(out.proj.parameters(), lr=cfg["lr_pretrain"])
    lane_road = torch.as_tensor(np.asarray(lane_road))
    labels = (lane_road.view(-1, 1) * out.np + torch.arange(out.np).view(1, -1)).reshape(-1).to(dev)
    for _ in range(steps):
        xb = torch.tensor(x[rng.choice(len(x), size=min(8, len(x)), replace=False)], dtype=torch.float32, device=dev)
        with torch.no_grad():
            tokens = lane_tokens(out, xb)
        loss = info_nce(out.proj(tokens), labels, cfg["temperature"])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return out
