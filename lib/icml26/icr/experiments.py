"""The chapter's experiments (brief §5.4): sigma sweeps (paper Fig. 2/8), training trajectories with ICR
and memorisation (Figs. 3-5, 7), and estimator robustness (Figs. 12/13)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .data import DigitsSplit, perturb
from .icr import alignment, icr, icr_multiview, normalised_traces
from .metrics import class_agreement_at_k, linear_probe, memorization_ratio, nn_distances
from .model import EDMDenoiser
from .sampler import heun_sample
from .train import TrainedEDM, train_edm


def extract_views(model: EDMDenoiser, images: torch.Tensor, sigma: float, n_views: int, *, level: int = 3,
                  layer: str = "dec2", seed: int = 0) -> np.ndarray:
    """Features of ``n_views`` independent perturbations (augment, then noise ``sigma``) per image:
    an ``(N, V, d)`` float64 array. The same ``seed`` gives the same augmentations/noise directions at
    every sigma and checkpoint (common random numbers)."""
    if n_views < 1:
        raise ValueError(f"n_views must be positive, got {n_views}")
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    out = [model.features(perturb(images, sigma, level, gen), sigma, layer) for _ in range(n_views)]
    return torch.stack(out, dim=1).double().numpy()


def pixel_views(images: torch.Tensor, sigma: float, n_views: int, *, level: int = 3, seed: int = 0) -> np.ndarray:
    """Raw pixels of perturbed images, ``(N, V, 64)``: the control representation (brief §3.2 item 6)."""
    gen = torch.Generator().manual_seed(seed)
    out = [perturb(images, sigma, level, gen).reshape(len(images), -1) for _ in range(n_views)]
    return torch.stack(out, dim=1).double().numpy()


def views_needed(n_images: int, d: int, minimum: int = 8, factor: int = 4) -> int:
    """Views per image so that ``N (V - 1) >= factor * d`` (pitfall: singular residual covariance)."""
    return max(minimum, math.ceil(factor * d / n_images) + 1)


@dataclass
class SigmaSweep:
    """ICR and friends on a grid of noise levels for one trained model (paper Figs. 1, 2, 8)."""

    sigmas: np.ndarray
    icr_two_view: np.ndarray
    icr_multi_view: np.ndarray
    probe_acc: np.ndarray
    trace_s: np.ndarray
    trace_xi: np.ndarray
    icr_pixels: np.ndarray
    icr_random_net: np.ndarray
    agree_s: np.ndarray
    agree_xi: np.ndarray
    invariant: list[np.ndarray] = field(repr=False)  # s(x0) per sigma, (n_icr, d)
    residual: list[np.ndarray] = field(repr=False)   # xi of view 0 per sigma
    labels: np.ndarray = field(repr=False, default=None)
    n_views: int = 0
    n_icr: int = 0
    icr_two_view_clipped: np.ndarray = field(repr=False, default=None)    # plug-in lambdas clipped at 0
    icr_multi_view_clipped: np.ndarray = field(repr=False, default=None)
    icr_two_view_debiased: np.ndarray = field(repr=False, default=None)   # our inverse-Wishart correction
    icr_multi_view_debiased: np.ndarray = field(repr=False, default=None)


def sigma_sweep(model: EDMDenoiser, split: DigitsSplit, sigmas: Sequence[float], *, n_icr: int, n_views: int = 8,
                level: int = 3, layer: str = "dec2", seed: int = 0, probe_max_iter: int = 2000,
                random_model: EDMDenoiser | None = None, progress: Callable | None = None) -> SigmaSweep:
    """For each sigma: two-view and V-view ICR on ``n_icr`` pool images, l2-normalised traces, the linear
    probe (fit on the pool at sigma, tested on the held-out images at sigma, noise only), the raw-pixel
    and random-network controls, and class agreement@5 of invariant vs residual neighbours."""
    if n_icr > len(split.pool_x):
        raise ValueError(f"n_icr = {n_icr} exceeds the pool size {len(split.pool_x)}")
    x, y = split.pool_x[:n_icr], split.pool_y[:n_icr]
    rows: dict[str, list] = {k: [] for k in ("i2", "iv", "i2c", "ivc", "i2d", "ivd", "acc", "ts", "tx", "pix", "rnd", "as", "ax",
                                             "s", "xi")}
    it = list(sigmas)
    if progress is not None:
        it = progress(it, desc="sigma sweep")
    for sigma in it:
        views = extract_views(model, x, sigma, n_views, level=level, layer=layer, seed=seed)
        rows["i2"].append(icr(views[:, 0], views[:, 1]).icr)
        rows["iv"].append(icr_multiview(views).icr)
        rows["i2c"].append(icr(views[:, 0], views[:, 1], clip=True).icr)
        rows["ivc"].append(icr_multiview(views, clip=True).icr)
        rows["i2d"].append(icr(views[:, 0], views[:, 1], debias=True).icr)
        rows["ivd"].append(icr_multiview(views, debias=True).icr)
        ts, tx = normalised_traces(views)
        rows["ts"].append(ts)
        rows["tx"].append(tx)
        s = views.mean(axis=1)
        xi = views[:, 0] - s
        rows["s"].append(s)
        rows["xi"].append(xi)
        rows["as"].append(class_agreement_at_k(s, y, s, y, k=5, exclude_self=True))
        rows["ax"].append(class_agreement_at_k(xi, y, xi, y, k=5, exclude_self=True))
        gen = torch.Generator().manual_seed(seed + 1)
        ftr = model.features(perturb(split.pool_x, sigma, 0, gen), sigma, layer)
        fte = model.features(perturb(split.test_x, sigma, 0, gen), sigma, layer)
        rows["acc"].append(linear_probe(ftr, split.pool_y, fte, split.test_y, max_iter=probe_max_iter))
        rows["pix"].append(icr_multiview(pixel_views(x, sigma, n_views, level=level, seed=seed)).icr if sigma > 0
                           else float("nan"))
        if random_model is not None:
            rviews = extract_views(random_model, x, sigma, n_views, level=level, layer=layer, seed=seed)
            rows["rnd"].append(icr_multiview(rviews).icr)
        else:
            rows["rnd"].append(float("nan"))
    a = {k: np.asarray(v) for k, v in rows.items() if k not in ("s", "xi")}
    return SigmaSweep(np.asarray(sigmas, float), a["i2"], a["iv"], a["acc"], a["ts"], a["tx"], a["pix"], a["rnd"],
                      a["as"], a["ax"], rows["s"], rows["xi"], np.asarray(y), n_views, n_icr, a["i2c"], a["ivc"],
                      a["i2d"], a["ivd"])


@dataclass
class Trajectory:
    """Measurements at training checkpoints (paper Figs. 3-5, 7, 10)."""

    n_train: int
    steps: np.ndarray
    images_seen: np.ndarray
    icr: np.ndarray
    memo: np.ndarray
    median_nn_ratio: np.ndarray
    mean_nn_dist: np.ndarray
    trace_s: np.ndarray
    trace_xi: np.ndarray
    alignment: np.ndarray
    n_views: int
    run: TrainedEDM = field(repr=False, default=None)
    final_samples: torch.Tensor = field(repr=False, default=None)


def training_trajectory(images: torch.Tensor, *, steps: int, checkpoints: Sequence[int], channels: Sequence[int],
                        batch_size: int, lr: float, ema_beta: float, sigma_fix: float, n_views: int = 8,
                        n_icr: int | None = None, n_gen: int = 128, heun_steps: int = 18, level: int = 3,
                        layer: str = "dec2", seed: int = 0, device="cpu",
                        progress: Callable | None = None) -> Trajectory:
    """Train on ``images`` and, at each checkpoint, measure with the EMA net: V-view ICR at ``sigma_fix`` on
    (up to ``n_icr`` of) the training images, l2-normalised traces, alignment, and the memorisation ratio
    of ``n_gen`` Heun samples against the training set."""
    icr_x = images if n_icr is None else images[:n_icr]
    d = int(channels[-1]) if layer in ("enc2", "mid", "dec2") else int(channels[1])
    v = views_needed(len(icr_x), d, minimum=n_views)
    rec: dict[str, list] = {k: [] for k in ("step", "icr", "memo", "med", "nn", "ts", "tx", "al")}
    last: dict[str, torch.Tensor] = {}

    def measure(step: int, ema: EDMDenoiser) -> None:
        views = extract_views(ema, icr_x, sigma_fix, v, level=level, layer=layer, seed=seed + 7)
        rec["step"].append(step)
        rec["icr"].append(icr_multiview(views).icr)
        ts, tx = normalised_traces(views)
        rec["ts"].append(ts)
        rec["tx"].append(tx)
        rec["al"].append(alignment(views))
        samples = heun_sample(ema, n_gen, steps=heun_steps, seed=seed + 11, device=device).cpu()
        d1, d2 = nn_distances(samples, images)
        rec["memo"].append(memorization_ratio(samples, images))
        rec["med"].append(float(np.median(d1 / d2)))
        rec["nn"].append(float(d1.mean()))
        last["samples"] = samples

    run = train_edm(images, steps=steps, channels=channels, batch_size=batch_size, lr=lr, ema_beta=ema_beta,
                    seed=seed, checkpoints=checkpoints, on_checkpoint=measure, device=device, progress=progress)
    a = {k: np.asarray(x, float) for k, x in rec.items()}
    return Trajectory(len(images), a["step"].astype(int), a["step"].astype(int) * batch_size, a["icr"], a["memo"],
                      a["med"], a["nn"], a["ts"], a["tx"], a["al"], v, run, last.get("samples"))


def log_checkpoints(steps: int, n: int, first: int | None = None) -> list[int]:
    """``n`` roughly log-spaced distinct checkpoints in ``[first, steps]`` (ending at ``steps``)."""
    first = first or max(1, steps // 50)
    pts = np.unique(np.round(np.geomspace(first, steps, n)).astype(int))
    return [int(p) for p in pts]


def memorisation_onset(traj: Trajectory, threshold: float = 0.1) -> int | None:
    """First checkpoint step with memorisation ratio above ``threshold`` (None: not reached)."""
    hit = np.nonzero(traj.memo > threshold)[0]
    return int(traj.steps[hit[0]]) if len(hit) else None


def estimator_robustness(model: EDMDenoiser, split: DigitsSplit, sigma: float, *, n_grid: Sequence[int],
                         v_grid: Sequence[int], levels: Sequence[int] = (1, 2, 3, 4), layer: str = "dec2",
                         seed: int = 0) -> dict[str, dict[int, float]]:
    """ICR at one sigma vs the number of images (V = 8), vs the number of views (all images), and vs the
    augmentation level (paper Figs. 12-13)."""
    out: dict[str, dict[int, float]] = {"n": {}, "views": {}, "level": {}}
    vmax = max(max(v_grid), 8)
    full = extract_views(model, split.pool_x, sigma, vmax, layer=layer, seed=seed)
    for n in n_grid:
        out["n"][int(n)] = icr_multiview(full[:n, :8]).icr
    for v in v_grid:
        out["views"][int(v)] = icr_multiview(full[:, :v]).icr
    for lev in levels:
        out["level"][int(lev)] = icr_multiview(extract_views(model, split.pool_x, sigma, 8, level=lev,
                                                             layer=layer, seed=seed)).icr
    return out
