"""Step-budget training: road pre-training (masked reconstruction + InfoNCE over FDA pseudo-lanes),
lane / road fine-tuning (30 % of the steps head-only, then end-to-end, as the code's
`fine_tune(freeze_epochs)`), scratch baselines, and masked metrics in km/h."""
from __future__ import annotations

import copy
import math

import numpy as np
import torch

from .baselines import GRULane, STGCNLite, historical_average, lane_graph, persistence
from .data import Target, windows
from .fda import FDA
from .model import MiniTraffic, random_mask

HORIZONS = {"5 min": 1, "15 min": 3, "30 min": 6}


def _optimizer(params, lr, steps):
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    return opt, sched


def mini_config(cfg: dict, variant: str) -> dict:
    """Model kwargs of a variant: mini | nocc (dense token attention) | big (Big-PT, dense, wide)."""
    base = dict(T=cfg["T"], H=cfg["H"], P=cfg["P"], S=cfg["S"], d=cfg["d"], d_ff=cfg["d_ff"], layers=cfg["layers"],
                heads=cfg["heads"], graph_heads=cfg["graph_heads"], k=cfg["k"], dropout=cfg["dropout"])
    if variant == "nocc":
        base["graph"] = "dense"
    elif variant == "big":
        base.update(d=cfg["big_d"], d_ff=cfg["big_d_ff"], layers=cfg["big_layers"], heads=cfg["heads"],
                    graph_heads=cfg["graph_heads"], graph="dense")
    return base


def pretrain(cfg: dict, sources: list[np.ndarray], seed: int, variant: str = "mini", fda: bool = True,
             nce_weight: float | None = None, mask_ratio: float | None = None, steps: int | None = None):
    """Pre-train on source road days: each road -> D FDA pseudo-lanes (plain copies when fda=False)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = MiniTraffic(**mini_config(cfg, variant))
    steps = cfg["pretrain_steps"] if steps is None else steps
    if variant == "big":
        steps = cfg["big_pretrain_steps"]
    nce_weight = cfg["nce_weight"] if nce_weight is None else nce_weight
    mask_ratio = cfg["mask_ratio"] if mask_ratio is None else mask_ratio
    D, T, B = cfg["D"], cfg["T"], cfg["batch"]
    aug = FDA(cfg["fda_lambda"], cfg["fda_tau"], cfg["fda_phase"], D)
    opt, sched = _optimizer(model.parameters(), cfg["lr_pretrain"], steps)
    model.train()
    losses = []
    for _ in range(steps):
        day = sources[rng.integers(len(sources))]
        starts = rng.integers(0, day.shape[1] - T + 1, size=B)
        x = torch.tensor(np.stack([day[:, s:s + T] for s in starts]), dtype=torch.float32)      # (B, R, T)
        R = x.shape[1]
        xd = aug(x, generator=gen) if fda else x.unsqueeze(2).expand(B, R, D, T)
        xd = xd.reshape(B, R * D, T)
        groups = torch.arange(R).repeat_interleave(D)
        mask = random_mask(B, groups, model.np, mask_ratio, gen)
        loss, rec, nce = model.pretrain_loss(xd, mask, groups, nce_weight=nce_weight if variant != "big" else 0.0,
                                             temperature=cfg["temperature"])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append((float(rec), float(nce)))
    model.eval()
    return model, np.asarray(losses)


class RoadExtension(torch.nn.Module):
    """Road-level fine-tuning (paper): Extension (repeat each road D times) + Pooling (mean over D)."""

    def __init__(self, model: MiniTraffic, D: int):
        super().__init__()
        self.model, self.D = model, D

    def forecast(self, x):
        B, R, T = x.shape
        y = self.model.forecast(x.repeat_interleave(self.D, dim=1))
        return y.view(B, R, self.D, -1).mean(2)


def make_model(method: str, cfg: dict, target: Target, pretrained=None, seed: int = 0, level: str = "lane"):
    torch.manual_seed(seed)
    if method == "gru":
        return GRULane(cfg["T"], cfg["H"], cfg["gru_hidden"])
    if method == "stgcn":
        if level == "road":
            adj = lane_graph(np.arange(target.corridor.n_roads), np.zeros(target.corridor.n_roads, int))
        else:
            adj = lane_graph(target.lane_road, target.lane_pos)
        return STGCNLite(cfg["T"], cfg["H"], adj, cfg["stgcn_channels"])
    if pretrained is not None:
        model = copy.deepcopy(pretrained)
    else:
        model = MiniTraffic(**mini_config(cfg, "big" if method == "big" else ("nocc" if method == "nocc" else "mini")))
    return RoadExtension(model, cfg["D"]) if level == "road" else model


def _train_windows(target: Target, days, cfg, level):
    xs, ys, ms = [], [], []
    for d in days:
        series = target.lane(d) if level == "lane" else target.road(d)
        x, y, m = windows(series, cfg["T"], cfg["H"], 1, target.observed(d, level))
        xs.append(x), ys.append(y), ms.append(m)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ms)


def finetune(model, target: Target, days, cfg: dict, seed: int, level: str = "lane", fda_aug: bool = True,
             head_only: bool = True, steps: int | None = None):
    """Fine-tune (or train from scratch) on the target's ``days``; MSE on observed targets."""
    x_all, y_all, m_all = _train_windows(target, days, cfg, level)
    gen = torch.Generator().manual_seed(seed + 99)
    rng = np.random.default_rng(seed + 99)
    steps = cfg["finetune_steps"] if steps is None else steps
    aug = FDA(cfg["fda_lambda"], cfg["fda_tau"], cfg["fda_phase"], 1) if fda_aug else None
    inner = model.model if isinstance(model, RoadExtension) else model
    head_params = inner.head_parameters() if hasattr(inner, "head_parameters") else list(inner.parameters())
    n_head = int(round(cfg["head_only_frac"] * steps)) if head_only else 0
    opt_h, _ = _optimizer(head_params, cfg["lr_finetune"] * 2, max(n_head, 1))
    opt, sched = _optimizer(model.parameters(), cfg["lr_finetune"], max(steps - n_head, 1))
    model.train()
    for step in range(steps):
        b = rng.integers(len(x_all), size=cfg["batch"])
        x = torch.tensor(x_all[b], dtype=torch.float32)
        if aug is not None:
            x = aug(x, generator=gen)[..., 0, :]
        y = torch.tensor(y_all[b], dtype=torch.float32)
        m = torch.tensor(m_all[b])
        loss = ((model.forecast(x) - y) ** 2)[m].mean()
        o = opt_h if step < n_head else opt
        o.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        o.step()
        if step >= n_head:
            sched.step()
    model.eval()
    return model


def metrics(pred: np.ndarray, y: np.ndarray, m: np.ndarray) -> dict:
    """MAE, RMSE (km/h), MAPE (%) at 5/15/30 min, over observed targets with y >= 1 km/h."""
    out = {}
    for name, h in HORIZONS.items():
        e, yy, mm = pred[..., h - 1], y[..., h - 1], m[..., h - 1] & (y[..., h - 1] >= 1.0)
        err = (e - yy)[mm]
        out[f"MAE@{name}"] = float(np.abs(err).mean())
        out[f"RMSE@{name}"] = float(np.sqrt((err**2).mean()))
        out[f"MAPE@{name}"] = float(100 * np.abs(err / yy[mm]).mean())
    return out


def test_windows(target: Target, cfg: dict, level: str = "lane"):
    xs, ys, ms = [], [], []
    for d in target.test_days:
        series = target.lane(d) if level == "lane" else target.road(d)
        x, y, m = windows(series, cfg["T"], cfg["H"], cfg["test_stride"], target.observed(d, level))
        xs.append(x), ys.append(y), ms.append(m)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ms)


@torch.no_grad()
def predict(model, x: np.ndarray, batch: int = 32) -> np.ndarray:
    model.eval()
    out = [model.forecast(torch.tensor(x[i:i + batch], dtype=torch.float32)).numpy() for i in range(0, len(x), batch)]
    return np.concatenate(out)


def evaluate_simple(method: str, target: Target, days, cfg: dict, level: str = "lane") -> dict:
    """HA or persistence on the test days."""
    x, y, m = test_windows(target, cfg, level)
    if method == "persistence":
        return metrics(persistence(x, cfg["H"]), y, m)
    if method == "ha":
        series = [target.lane(d) if level == "lane" else target.road(d) for d in days]
        one = historical_average(series, cfg["T"], cfg["H"], cfg["test_stride"])
        return metrics(np.concatenate([one] * target.n_test), y, m)
    raise ValueError(f"unknown simple method {method!r}")


def run_method(method: str, target: Target, D_L: int, cfg: dict, seed: int, pretrained: dict | None = None,
               level: str = "lane") -> dict:
    """Train one method at few-shot ``D_L`` days and score it on the test days.

    ``method``: mini | scratch | nofda | nocc | nonce | big | mask<r> | gru | stgcn | ha | persistence.
    ``pretrained``: {variant: model} from `pretrain` for this seed (mini, nofda, nocc, nonce, big, mask<r>).
    """
    days = target.train_days(D_L)
    if method in ("ha", "persistence"):
        return evaluate_simple(method, target, days, cfg, level)
    if method in ("scratch", "gru", "stgcn"):
        model = make_model(method, cfg, target, None, seed, level)
        model = finetune(model, target, days, cfg, seed, level, fda_aug=False, head_only=False)
    else:
        if pretrained is None or method not in pretrained:
            raise ValueError(f"method {method!r} needs a pre-trained model for seed {seed}")
        model = make_model(method, cfg, target, pretrained[method], seed, level)
        model = finetune(model, target, days, cfg, seed, level, fda_aug=method != "nofda", head_only=True)
    x, y, m = test_windows(target, cfg, level)
    return metrics(predict(model, x), y, m)
