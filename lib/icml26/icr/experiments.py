"""The chapter's experiments (brief §5.4): sigma sweeps (paper Figs. 1, 2, 8, 9), training trajectories with
ICR, memorisation and the held-out denoising loss (Figs. 3-5, 7, 10), estimator robustness (Figs. 12/13),
and the per-seed tasks that the notebook runs, optionally in a process pool (one torch/BLAS thread each).

Device: the per-seed tasks train and extract features on :func:`icml26.device` (CUDA when present, else CPU);
perturbations, sampling noise and every statistic are drawn and computed on the CPU, so a CPU run is unchanged
and a GPU run sees the same augmentations and noise directions.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..seeding import device as compute_device
from .data import DigitsSplit, load_digits_split, perturb, training_subset
from .estimators import (alignment, decompose_two_view, icr_from_covariances, icr_multiview,
                         normalised_traces, predicted_plugin_icr, debiased_trace, within_between)
from .metrics import class_agreement_at_k, linear_probe, memorised_fraction, nn_distances
from .model import EDMDenoiser
from .sampler import heun_sample
from .train import heldout_loss, train_edm


def extract_views(model: EDMDenoiser, images: torch.Tensor, sigma: float, n_views: int, *, level: int = 3,
                  layer: str | tuple[str, ...] = "dec4", seed: int = 0):
    """Features of ``n_views`` independent perturbations (augment, then noise ``sigma``) per image: an
    ``(N, V, d)`` float64 array (a dict of them for a tuple of layers, from the same forward passes). The same
    ``seed`` gives the same augmentations/noise directions at every sigma and checkpoint (common random numbers)."""
    if n_views < 1:
        raise ValueError(f"n_views must be positive, got {n_views}")
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    names = (layer,) if isinstance(layer, str) else tuple(layer)
    per_view = [model.features(perturb(images, sigma, level, gen), sigma, names) for _ in range(n_views)]
    out = {n: torch.stack([f[n] for f in per_view], dim=1).double().numpy() for n in names}
    return out[layer] if isinstance(layer, str) else out


def pixel_views(images: torch.Tensor, sigma: float, n_views: int, *, level: int = 3, seed: int = 0) -> np.ndarray:
    """Raw pixels of perturbed images, ``(N, V, 64)``: the control representation (brief §3.2 item 6)."""
    gen = torch.Generator().manual_seed(seed)
    out = [perturb(images, sigma, level, gen).reshape(len(images), -1) for _ in range(n_views)]
    return torch.stack(out, dim=1).double().numpy()


def views_needed(n_images: int, d: int, minimum: int = 8, factor: int = 4) -> int:
    """Views per image so that ``N (V - 1) >= factor * d`` (pitfall: singular residual covariance)."""
    return max(minimum, math.ceil(factor * d / n_images) + 1)


def icr_variants(views: np.ndarray) -> dict[str, float]:
    """All estimates the chapter compares, from one ``(N, V, d)`` array (each covariance decomposed once).

    ``two``/``multi``: the paper's plug-in two-view (views 0 and 1) and V-view ICR (covariance-relative tau);
    ``*_deb``: our inverse-Wishart correction; ``T``: the debiased V-view
    Fisher trace; ``pred_gap``: the gap ``two - multi`` that the finite-sample law predicts from ``T``
    (:func:`~icml26.icr.estimators.predicted_plugin_icr` of each estimator).
    """
    n, v, d = views.shape
    s2, x2 = decompose_two_view(views[:, 0], views[:, 1])
    sv, xv = within_between(views)
    i2, lam2, _ = icr_from_covariances(s2, x2)
    iv, lamv, _ = icr_from_covariances(sv, xv)
    t2 = debiased_trace(float(lam2.sum()), d, 2, n - 1)
    tv = debiased_trace(float(lamv.sum()), d, v, n * (v - 1))
    i_deb = d / (d + tv)
    pred = (predicted_plugin_icr(tv, d, 2, n - 1) - predicted_plugin_icr(tv, d, v, n * (v - 1))
            if n - 1 > d + 1 else float("nan"))
    return dict(two=i2, multi=iv, two_deb=d / (d + t2), multi_deb=i_deb, T=tv, pred_gap=pred, d=d, n=n, v=v)


@dataclass
class SigmaSweep:
    """ICR and friends on a grid of noise levels for one trained model (paper Figs. 1, 2, 8, 9).

    ``icr[(layer, level)][key]`` is an array over sigma for every key of :func:`icr_variants`; ``traces``
    the l2-normalised ``(Tr S_s, Tr S_xi)`` per sigma; ``probe[layer]`` the linear-probe accuracy (noise-only
    perturbation, as in the paper's probe); ``pixels[level]`` the raw-pixel V-view ICR;
    ``random[(layer, level)]`` the random-network control; ``agree_s``/``agree_xi`` class agreement@5 of
    invariant / residual neighbours at the primary level.
    """

    sigmas: np.ndarray
    layers: tuple[str, ...]
    levels: tuple[int, ...]
    primary: tuple[str, int]
    icr: dict[tuple[str, int], dict[str, np.ndarray]]
    traces: dict[tuple[str, int], np.ndarray]
    probe: dict[str, np.ndarray]
    pixels: dict[int, np.ndarray]
    random: dict[tuple[str, int], np.ndarray]
    agree_s: dict[str, np.ndarray]
    agree_xi: dict[str, np.ndarray]
    agree_s_random: dict[str, np.ndarray]
    agree_xi_random: dict[str, np.ndarray]
    n_icr: int
    n_views: int
    labels: np.ndarray = field(repr=False, default=None)
    invariant: list[np.ndarray] = field(repr=False, default_factory=list)  # s(x0) per sigma, primary setting
    residual: list[np.ndarray] = field(repr=False, default_factory=list)   # xi of view 0 per sigma

    def curve(self, layer: str | None = None, level: int | None = None, key: str = "multi") -> np.ndarray:
        layer = self.primary[0] if layer is None else layer
        level = self.primary[1] if level is None else level
        return self.icr[(layer, level)][key]


def sigma_sweep(model: EDMDenoiser, split: DigitsSplit, sigmas: Sequence[float], *, icr_images: torch.Tensor,
                icr_labels: np.ndarray, layers: Sequence[str] = ("dec4", "dec2"), levels: Sequence[int] = (3,),
                primary: tuple[str, int] | None = None, n_views: int = 8, seed: int = 0, probe_max_iter: int = 1000,
                random_model: EDMDenoiser | None = None, progress: Callable | None = None) -> SigmaSweep:
    """For each sigma: the ICR variants on ``icr_images`` for every (layer, augmentation level), the
    l2-normalised traces, the linear probe per layer (fit on the pool at sigma, tested on the held-out images
    at sigma, noise only), the raw-pixel and random-network controls at every level (random network: at the
    primary level only) and class agreement@5 of invariant vs residual neighbours (primary level)."""
    layers, levels = tuple(layers), tuple(levels)
    primary = primary or (layers[0], levels[0])
    if primary[0] not in layers or primary[1] not in levels:
        raise ValueError(f"primary setting {primary} must be among layers {layers} and levels {levels}")
    if len(icr_images) != len(icr_labels):
        raise ValueError("icr_images and icr_labels differ in length")
    x, y = icr_images, np.asarray(icr_labels)
    icr_rows: dict[tuple[str, int], dict[str, list]] = {(la, le): {} for la in layers for le in levels}
    tr_rows: dict[tuple[str, int], list] = {(la, le): [] for la in layers for le in levels}
    probe = {la: [] for la in layers}
    pixels = {le: [] for le in levels}
    rnd = {(la, primary[1]): [] for la in layers}
    ag_s, ag_x, ag_sr, ag_xr = ({la: [] for la in layers} for _ in range(4))
    inv, res = [], []
    it = list(sigmas)
    if progress is not None:
        it = progress(it, desc="sigma sweep")
    for sigma in it:
        for le in levels:
            views = extract_views(model, x, sigma, n_views, level=le, layer=layers, seed=seed)
            for la in layers:
                for k, val in icr_variants(views[la]).items():
                    icr_rows[(la, le)].setdefault(k, []).append(val)
                tr_rows[(la, le)].append(normalised_traces(views[la]))
                if le == primary[1]:
                    s = views[la].mean(axis=1)
                    xi = views[la][:, 0] - s
                    ag_s[la].append(class_agreement_at_k(s, y, k=5))
                    ag_x[la].append(class_agreement_at_k(xi, y, k=5))
                    if la == primary[0]:
                        inv.append(s)
                        res.append(xi)
            pixels[le].append(icr_multiview(pixel_views(x, sigma, n_views, level=le, seed=seed)).icr if sigma > 0
                              else float("nan"))
        if random_model is not None:
            rviews = extract_views(random_model, x, sigma, n_views, level=primary[1], layer=layers, seed=seed)
            for la in layers:
                rnd[(la, primary[1])].append(icr_multiview(rviews[la]).icr)
                s = rviews[la].mean(axis=1)
                ag_sr[la].append(class_agreement_at_k(s, y, k=5))
                ag_xr[la].append(class_agreement_at_k(rviews[la][:, 0] - s, y, k=5))
        gen = torch.Generator().manual_seed(seed + 1)
        ftr = model.features(perturb(split.pool_x, sigma, 0, gen), sigma, layers)
        fte = model.features(perturb(split.test_x, sigma, 0, gen), sigma, layers)
        for la in layers:
            probe[la].append(linear_probe(ftr[la], split.pool_y, fte[la], split.test_y, max_iter=probe_max_iter))
    arr = lambda rows: {k: np.asarray(v, float) for k, v in rows.items()}  # noqa: E731
    return SigmaSweep(np.asarray(sigmas, float), layers, levels, primary,
                      {key: arr(rows) for key, rows in icr_rows.items()},
                      {key: np.asarray(v, float) for key, v in tr_rows.items()}, arr(probe), arr(pixels),
                      arr(rnd) if random_model is not None else {}, arr(ag_s), arr(ag_x),
                      arr(ag_sr) if random_model is not None else {}, arr(ag_xr) if random_model is not None else {},
                      len(x), n_views, y, inv, res)


@dataclass
class Trajectory:
    """Measurements at training checkpoints (paper Figs. 3-5, 7, 10, 12).

    Per-layer quantities are dicts ``{layer: array over checkpoints}``: ``icr`` (V-view, at ``sigma_fix``, on the
    training images), ``trace_s``/``trace_xi`` (l2-normalised), ``alignment`` (the paper's Fig. 10 baseline, Eq. 6 with
    alpha = 2 on l2-normalised features, which is ``2 Tr Sigma_xi`` of those features) and ``alignment_raw`` (Eq. 6 on the
    raw features, as the paper computes it). ``memo``: memorisation ratio of the samples; ``median_nn_ratio``: median
    NN1/NN2 pixel-distance ratio of the samples (falls as samples approach single training images); ``heldout`` /
    ``train_loss``: the EDM loss on held-out / training images with fixed draws. ``trend_full``/``trend_sub``/``trend_sub2``:
    the paper's two-view ICR on all ``trend_images``, on their first 256 (Fig. 12) and on the next 256 (a second,
    disjoint subsample: the noise floor of the Fig. 12 comparison), data-rich runs only. ``states``: the EMA network's
    state at every checkpoint when asked for (:func:`rich_task` re-measures ICR at its window sigma, then drops them).
    ``curve_steps`` / ``curve_heldout``: the held-out loss on a linear grid of steps, the run's learning curve (judged for
    convergence by the book's rule, which reads the last fifth of the steps).
    """

    n_train: int
    layers: tuple[str, ...]
    steps: np.ndarray
    images_seen: np.ndarray
    icr: dict[str, np.ndarray]
    trace_s: dict[str, np.ndarray]
    trace_xi: dict[str, np.ndarray]
    alignment: dict[str, np.ndarray]
    memo: np.ndarray
    median_nn_ratio: np.ndarray
    heldout: np.ndarray
    train_loss: np.ndarray
    n_views: int
    trend_full: dict[str, np.ndarray] = field(default_factory=dict)
    trend_sub: dict[str, np.ndarray] = field(default_factory=dict)
    trend_sub2: dict[str, np.ndarray] = field(default_factory=dict)
    alignment_raw: dict[str, np.ndarray] = field(default_factory=dict)
    final_samples: torch.Tensor = field(repr=False, default=None)
    states: list = field(repr=False, default_factory=list)
    curve_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    curve_heldout: np.ndarray = field(default_factory=lambda: np.zeros(0))


def training_trajectory(images: torch.Tensor, *, steps: int, checkpoints: Sequence[int], channels: Sequence[int],
                        batch_size: int, lr: float, ema_beta: float, sigma_fix: float, heldout_images: torch.Tensor,
                        layers: Sequence[str] = ("dec4", "dec2"), n_views: int = 8, n_icr: int | None = None,
                        n_gen: int = 128, heun_steps: int = 18, level: int = 3, seed: int = 0, device="cpu",
                        trend_images: torch.Tensor | None = None, trend_sub: int = 256, keep_states: bool = False,
                        curve_points: int | None = None,
                        progress: Callable | None = None):
    """Train on ``images`` and, at each checkpoint, measure with the EMA net: V-view ICR at ``sigma_fix`` on
    (up to ``n_icr`` of) the training images for every layer, l2-normalised traces, alignment (normalised and raw),
    the memorisation ratio and median NN ratio of ``n_gen`` Heun samples against the training set, and the denoising
    loss on ``heldout_images`` and on (at most as many) training images (same fixed noise draws, so both losses carry
    the same noise); ``keep_states``: also keep the EMA
    state (on the CPU) at every checkpoint; ``curve_points``: the held-out loss alone also at that many evenly spaced steps
    (the learning curve; None: none). Returns ``(Trajectory, TrainedEDM)``."""
    layers = tuple(layers)
    icr_x = images if n_icr is None else images[:n_icr]
    probe_net = EDMDenoiser(1.0, tuple(channels))
    v = max(views_needed(len(icr_x), probe_net.feature_dim(la), minimum=n_views) for la in layers)
    rec: dict[str, Any] = {k: [] for k in ("step", "memo", "med", "held", "train")}
    per: dict[str, dict[str, list]] = {k: {la: [] for la in layers}
                                       for k in ("icr", "ts", "tx", "al", "alr", "tf", "tsub", "tsub2")}
    last: dict[str, torch.Tensor] = {}
    states: list[dict[str, torch.Tensor]] = []

    if curve_points is not None and curve_points < 1:
        raise ValueError(f"curve_points must be positive, got {curve_points}")
    curve_at = (set() if curve_points is None else
                set(int(x) for x in np.unique(np.linspace(steps / curve_points, steps, curve_points).round().astype(int))))
    marks = set(int(c) for c in checkpoints)
    curve: list[tuple[int, float]] = []

    def on_step(step: int, ema: EDMDenoiser) -> None:
        if step in curve_at:
            curve.append((step, heldout_loss(ema, heldout_images, seed=seed + 13)))
        if step in marks:
            measure(step, ema)

    def measure(step: int, ema: EDMDenoiser) -> None:
        views = extract_views(ema, icr_x, sigma_fix, v, level=level, layer=layers, seed=seed + 7)
        rec["step"].append(step)
        for la in layers:
            per["icr"][la].append(icr_multiview(views[la]).icr)
            ts, tx = normalised_traces(views[la])
            per["ts"][la].append(ts)
            per["tx"][la].append(tx)
            per["al"][la].append(alignment(views[la]))
            per["alr"][la].append(alignment(views[la], normalise=False))
        if trend_images is not None:
            tv = extract_views(ema, trend_images, sigma_fix, 2, level=level, layer=layers, seed=seed + 9)
            for la in layers:
                per["tf"][la].append(two_view_icr(tv[la]))
                per["tsub"][la].append(two_view_icr(tv[la][:trend_sub]))
                if len(trend_images) >= 2 * trend_sub:
                    per["tsub2"][la].append(two_view_icr(tv[la][trend_sub:2 * trend_sub]))
        if keep_states:
            states.append({k: t.detach().to("cpu", copy=True) for k, t in ema.state_dict().items()})
        samples = heun_sample(ema, n_gen, steps=heun_steps, seed=seed + 11, device=device).cpu()
        d1, d2 = nn_distances(samples, images)
        rec["memo"].append(memorised_fraction(d1, d2))
        rec["med"].append(float(np.median(d1 / d2)))
        rec["held"].append(heldout_loss(ema, heldout_images, seed=seed + 13))
        rec["train"].append(heldout_loss(ema, images[:len(heldout_images)], seed=seed + 13))
        last["samples"] = samples

    run = train_edm(images, steps=steps, channels=channels, batch_size=batch_size, lr=lr, ema_beta=ema_beta,
                    seed=seed, checkpoints=sorted(marks | curve_at), on_checkpoint=on_step, device=device,
                    progress=progress)
    a = {k: np.asarray(x, float) for k, x in rec.items()}
    p = {k: {la: np.asarray(x, float) for la, x in d.items()} for k, d in per.items()}
    st = a["step"].astype(int)
    trend = trend_images is not None
    traj = Trajectory(len(images), layers, st, st * batch_size, p["icr"], p["ts"], p["tx"], p["al"], a["memo"],
                      a["med"], a["held"], a["train"], v, p["tf"] if trend else {}, p["tsub"] if trend else {},
                      p["tsub2"] if trend and len(trend_images) >= 2 * trend_sub else {}, p["alr"], last.get("samples"),
                      states, np.asarray([c[0] for c in curve], int), np.asarray([c[1] for c in curve], float))
    return traj, run


def two_view_icr(views: np.ndarray) -> float:
    """The paper's plug-in two-view ICR (Eq. 5 with the App. B.6 estimator) of views 0 and 1."""
    s, xi = decompose_two_view(views[:, 0], views[:, 1])
    return icr_from_covariances(s, xi)[0]


# ---------------------------------------------------------------------------------------------------------
# Claim metrics: the statistics the chapter's claims are read from (one value per seed each)


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation of two equally long sequences (NaN with fewer than 3 points or a constant one)."""
    import scipy.stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"spearman needs two 1-d sequences of one length, got {a.shape} and {b.shape}")
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(scipy.stats.spearmanr(a, b).statistic)


def window_distance(icr_curve: Sequence[float], acc: Sequence[float]) -> int:
    """Semantic-window score over a sigma grid (paper Fig. 2: "the noise levels that minimize ICR coincide with
    those that maximize" accuracy): grid steps between argmin ICR and argmax accuracy; a boundary argmin or argmax
    scores the largest distance ``n - 1`` (an edge is no window)."""
    icr_curve, acc = np.asarray(icr_curve, float), np.asarray(acc, float)
    if icr_curve.shape != acc.shape or len(icr_curve) < 3:
        raise ValueError(f"need two curves of one length >= 3, got {icr_curve.shape} and {acc.shape}")
    k, j, n = int(np.argmin(icr_curve)), int(np.argmax(acc)), len(icr_curve)
    return abs(k - j) if (0 < k < n - 1 and 0 < j < n - 1) else n - 1


def dip(curve: Sequence[float]) -> float:
    """Depth of an interior minimum (paper Fig. 2, ICR 0.41 -> 0.34 -> 0.85): the lower end of the curve minus
    its interior minimum; <= 0 for a monotone curve (no U)."""
    c = np.asarray(curve, float)
    if c.ndim != 1 or len(c) < 3:
        raise ValueError(f"need a 1-d curve of length >= 3, got shape {c.shape}")
    return float(min(c[0], c[-1]) - c[1:-1].min())


def window_contrast(with_window: Sequence[float], without: Sequence[float]) -> float:
    """Fig. 9 contrast: how much deeper the first curve's sigma-window is than the second's, each :func:`dip`
    clipped at 0 (a monotone curve has no window, however steep: its negative dip must not inflate the contrast)."""
    return max(dip(with_window), 0.0) - max(dip(without), 0.0)


def early_stop_gain(icr_curve: Sequence[float], heldout: Sequence[float]) -> float:
    """Share of the early-stopping gain that stopping at the ICR minimum recovers (paper §5.2: "ICR can act as a
    coarse, easy-to-monitor early stopping signal"; App. D: optimal test loss and ICR move together):
    ``(L_end - L[argmin ICR]) / (L_end - min L)`` with ``L`` the held-out loss per checkpoint. 1: stopping at
    the ICR minimum is as good as stopping at the held-out optimum; 0: no better than training to the end;
    NaN when the held-out loss is lowest at the end (nothing to gain)."""
    icr_curve, held = np.asarray(icr_curve, float), np.asarray(heldout, float)
    if icr_curve.shape != held.shape:
        raise ValueError(f"icr and held-out curves differ in shape: {icr_curve.shape} vs {held.shape}")
    room = held[-1] - held.min()
    if room <= 0:
        return float("nan")
    return float((held[-1] - held[int(np.argmin(icr_curve))]) / room)


def random_stop_gain(heldout: Sequence[float]) -> float:
    """The null of :func:`early_stop_gain`: its expected value when the stopping checkpoint is drawn uniformly at
    random from the same held-out curve, ``mean_k (L_end - L[k]) / (L_end - min L)`` (NaN when the held-out loss
    is lowest at the end). A stopping signal must beat this to carry information about the optimum."""
    held = np.asarray(heldout, float)
    if held.ndim != 1 or len(held) < 2:
        raise ValueError(f"need a 1-d held-out curve of length >= 2, got shape {held.shape}")
    room = held[-1] - held.min()
    if room <= 0:
        return float("nan")
    return float(np.mean((held[-1] - held) / room))


def stop_room(heldout: Sequence[float]) -> float:
    """Relative room for early stopping, ``(L_end - min L) / min L`` of a held-out curve: where it is tiny the
    ratio of :func:`early_stop_gain` divides by almost nothing and cannot test anything."""
    held = np.asarray(heldout, float)
    return float((held[-1] - held.min()) / held.min())


def rise_until(steps: Sequence[float], curve: Sequence[float], until: float) -> float:
    """How far a curve has come back up from its minimum by step ``until``: over the checkpoints at or before
    ``until``, the value at the last of them minus their minimum (paper §5.2: in the data-limited case ICR "follows a
    clear U-shaped curve, in sharp contrast to the data-rich case"; reading two runs up to the same step compares them
    at equal training). 0 for a curve still falling there; NaN with fewer than 2 checkpoints at or before ``until``."""
    st, c = np.asarray(steps, float), np.asarray(curve, float)
    if st.shape != c.shape or st.ndim != 1:
        raise ValueError(f"steps and curve must be 1-d of one length, got {st.shape} and {c.shape}")
    keep = st <= until
    if keep.sum() < 2:
        return float("nan")
    c = c[keep]
    return float(c[-1] - c.min())


def stop_excess(heldout: Sequence[float], k: int) -> float:
    """Excess held-out loss of stopping at checkpoint ``k`` over the held-out optimum, ``(L[k] - min L) / min L``
    (0: stopping at the optimum; "early stopping signal" read in the loss's own units)."""
    held = np.asarray(heldout, float)
    if held.ndim != 1 or not 0 <= int(k) < len(held):
        raise ValueError(f"k must index a checkpoint of a 1-d held-out curve, got k = {k} for shape {held.shape}")
    return float((held[int(k)] - held.min()) / held.min())


def random_index_distance(n: int, target: int) -> float:
    """Expected ``|k - target|`` for a checkpoint index ``k`` drawn uniformly from ``0 .. n-1``: the null of a
    "within one checkpoint of the optimum" test (a stopping rule that knows nothing about the optimum)."""
    if n < 1 or not 0 <= int(target) < n:
        raise ValueError(f"need n >= 1 and 0 <= target < n, got n = {n}, target = {target}")
    return float(np.mean(np.abs(np.arange(n) - int(target))))


def energy_growth(trace_s: Sequence[float], trace_xi: Sequence[float], start: int) -> float:
    """Relative growth of residual minus invariant energy from checkpoint ``start`` to the end (paper Fig. 7a:
    after the ICR minimum "Tr(Sigma_s) ... saturates, whereas Tr(Sigma_xi) continues to grow"). ``start`` must
    index a checkpoint (``0 <= start < len``; a negative index is an error, not a count from the end)."""
    ts, tx = np.asarray(trace_s, float), np.asarray(trace_xi, float)
    if ts.shape != tx.shape or ts.ndim != 1:
        raise ValueError(f"trace curves differ in shape or are not 1-d: {ts.shape} vs {tx.shape}")
    if not 0 <= int(start) < len(ts):
        raise ValueError(f"start must index a checkpoint in [0, {len(ts)}), got {start}")
    return float((tx[-1] / tx[start] - 1) - (ts[-1] / ts[start] - 1))


def saturation(curve: Sequence[float], start: int | None, min_after: int = 2) -> float:
    """Absolute relative change ``|c[-1] / c[start] - 1|`` of a trace curve from checkpoint ``start`` to the end (paper
    Fig. 7a: in the data-limited case "Tr(Sigma_s) rises initially but then saturates, whereas Tr(Sigma_xi) continues to
    grow"; a saturated curve changes little). NaN when ``start`` is None or fewer than ``min_after`` checkpoints follow it
    (a change over no time cannot show saturation)."""
    c = np.asarray(curve, float)
    if c.ndim != 1 or len(c) < 2:
        raise ValueError(f"need a 1-d curve of length >= 2, got shape {c.shape}")
    if min_after < 1:
        raise ValueError(f"min_after must be positive, got {min_after}")
    if start is None:
        return float("nan")
    if not 0 <= int(start) < len(c):
        raise ValueError(f"start must index a checkpoint in [0, {len(c)}), got {start}")
    if len(c) - 1 - int(start) < min_after:
        return float("nan")
    return float(abs(c[-1] / c[int(start)] - 1))


def crossing_step(steps: Sequence[float], memo: Sequence[float], threshold: float) -> float:
    """The training step where the memorisation ratio first exceeds ``threshold``, interpolated linearly in log-step
    between the last checkpoint at or below it and the first above it (the onset of :func:`memorisation_onset` without
    the checkpoint grid's quantisation, for the onset-against-N fit). NaN when it never exceeds the threshold or already
    does at the first checkpoint (the crossing lies outside the run)."""
    st, m = np.asarray(steps, float), np.asarray(memo, float)
    if st.shape != m.shape or st.ndim != 1 or len(st) < 2:
        raise ValueError(f"steps and memo must be 1-d of one length >= 2, got {st.shape} and {m.shape}")
    if not (st > 0).all() or not (np.diff(st) > 0).all():
        raise ValueError("steps must be positive and increasing")
    k = memorisation_onset(m, threshold)
    if k is None or k == 0:
        return float("nan")
    lo, hi = np.log(st[k - 1]), np.log(st[k])
    frac = (threshold - m[k - 1]) / (m[k] - m[k - 1])
    return float(np.exp(lo + frac * (hi - lo)))


def scaling_exponent(ns: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of ``log(value)`` against ``log(N)``: the exponent ``b`` of ``value ~ N^b`` (``b = 1``:
    proportional to N, the memorisation time ``tau_mem ~ N`` of Bonnaire et al. 2025 that the paper builds on). NaN with
    fewer than two distinct N or any value that is not finite and positive."""
    n, v = np.asarray(ns, float), np.asarray(values, float)
    if n.shape != v.shape or n.ndim != 1:
        raise ValueError(f"ns and values must be 1-d of one length, got {n.shape} and {v.shape}")
    if not (n > 0).all():
        raise ValueError("every N must be positive")
    if len(np.unique(n)) < 2 or not (np.isfinite(v) & (v > 0)).all():
        return float("nan")
    return float(np.polyfit(np.log(n), np.log(v), 1)[0])


def limited_stats(tr: Trajectory, layer: str, memo_threshold: float, n_gen: int | None = None) -> dict[str, Any]:
    """The data-limited claims of one seed (paper Figs. 4-5, 7a; §5.2).

    ``argmin``/``argmin_step``: ICR minimum; ``onset``/``onset_step``: first checkpoint with memorisation above
    ``memo_threshold`` (None: not reached); ``gap``: checkpoints from the argmin to the onset (0 for a boundary
    argmin; C9); ``rise_onset``/``rise_step``: first checkpoint where memorisation *begins to increase*, i.e.
    exceeds its first-checkpoint level by two samples of ``n_gen`` (:func:`memorisation_rise`; None without
    ``n_gen`` or when it never rises); ``align_gap``: checkpoints from the argmin to that rise (0 for a boundary
    argmin; C9a: "its minimum aligns with the onset of memorization" read as exactly one checkpoint later);
    ``onset_ratio``: rise step / argmin step (shown beside ``align_gap``); ``rise``: ICR at the end minus its
    minimum (C9r); ``energy``: :func:`energy_growth` from the argmin (C14); ``ts_growth``: relative growth of
    Tr Sigma_s after the argmin (shown); ``held_argmin_step``: held-out-loss minimum; ``stop_gain``:
    :func:`early_stop_gain` (C9s); ``random_gain``: :func:`random_stop_gain` (its null, C9sc); ``room``:
    :func:`stop_room`; ``ts_sat`` / ``tx_sat``: :func:`saturation` of Tr Sigma_s / Tr Sigma_xi from the memorisation
    rise to the end (C17 and its control; NaN without a rise or with fewer than 2 checkpoints after it);
    ``onset_interp``: :func:`crossing_step` of ``memo_threshold`` (the onset-against-N fit, C18).

    Added after the review of the published `full` run: ``held_argmin``: index of the held-out-loss minimum;
    ``held_gap``: ICR argmin minus held-out argmin in checkpoints (signed) and ``held_gap_abs`` its size (C9h, App. D:
    ICR moves with the optimal test loss), ``held_gap_null``: :func:`random_index_distance` to the held-out argmin (C9h's
    null, C9hc); ``held_align_gap``: checkpoints from the held-out optimum to the memorisation rise (0 for a boundary
    optimum; C9a's test on the generalisation optimum, its positive control C9ap); ``nn_onset``: the checkpoint where
    the median NN1/NN2 ratio of the samples peaks, after which samples move toward single training images (a
    threshold-free onset, shown), ``nn_gap``: checkpoints from the ICR argmin to it; ``stop_diff``: ``stop_gain -
    random_gain`` (C9sd: better than a random stop), ``end_diff``: ``0 - random_gain``, the same for training to the end
    (C9sdc); ``excess_icr`` / ``excess_first`` / ``excess_end``: :func:`stop_excess` at the ICR minimum, the first and
    the last checkpoint; ``ts_change``: signed relative change of Tr Sigma_s from the memorisation rise to the end (C17's
    diagnosis: still rising or falling back; NaN where C17 is)."""
    icr_l = np.asarray(tr.icr[layer], float)
    k = int(np.argmin(icr_l))
    onset = memorisation_onset(tr.memo, memo_threshold)
    rise_on = None if n_gen is None else memorisation_rise(tr.memo, n_gen)
    interior = 0 < k < len(icr_l) - 1
    ts, tx = tr.trace_s[layer], tr.trace_xi[layer]
    onset_step = None if onset is None else int(tr.steps[onset])
    rise_step = None if rise_on is None else int(tr.steps[rise_on])
    held = np.asarray(tr.heldout, float)
    h, n_ck = int(np.argmin(held)), len(icr_l)
    nn = int(np.argmax(tr.median_nn_ratio))
    s_gain, r_gain = early_stop_gain(icr_l, held), random_stop_gain(held)
    ts_change = float("nan") if np.isnan(saturation(ts, rise_on)) else float(ts[-1] / ts[rise_on] - 1)
    return dict(argmin=k, argmin_step=int(tr.steps[k]), onset=onset, onset_step=onset_step,
                gap=(onset - k if interior else 0) if onset is not None else None,
                rise_onset=rise_on, rise_step=rise_step,
                align_gap=(rise_on - k if interior else 0) if rise_on is not None else None,
                onset_ratio=float("nan") if rise_step is None else rise_step / float(tr.steps[k]),
                rise=float(icr_l[-1] - icr_l[k]), energy=energy_growth(ts, tx, k),
                ts_growth=float(ts[-1] / ts[k] - 1), final_memo=float(tr.memo[-1]),
                held_argmin_step=int(tr.steps[h]), stop_gain=s_gain, random_gain=r_gain, room=stop_room(held),
                ts_sat=saturation(ts, rise_on), tx_sat=saturation(tx, rise_on),
                onset_interp=crossing_step(tr.steps, tr.memo, memo_threshold),
                held_argmin=h, held_gap=k - h, held_gap_abs=abs(k - h), held_gap_null=random_index_distance(n_ck, h),
                held_align_gap=((rise_on - h if 0 < h < n_ck - 1 else 0) if rise_on is not None else None),
                nn_onset=nn, nn_gap=nn - k, stop_diff=s_gain - r_gain, end_diff=-r_gain,
                excess_icr=stop_excess(held, k), excess_first=stop_excess(held, 0), excess_end=stop_excess(held, n_ck - 1),
                ts_change=ts_change)


def rich_stats(tr: Trajectory, layer: str, late_from: float, icr_window: Sequence[float] | None = None) -> dict[str, Any]:
    """The data-rich claims of one seed (paper Figs. 3, 7b, 10).

    ``late``: Spearman(step, ICR) over checkpoints with step >= ``late_from`` (C8, "decreases steadily");
    ``while_falling``: Spearman(step, ICR) over the checkpoints up to the held-out-loss minimum, i.e. while the
    FID stand-in still improves (C8h; NaN with fewer than 3 such checkpoints); ``with_loss``: Spearman(ICR,
    held-out loss) over all checkpoints (C8F, "ICR closely tracks FID"); ``align_with_loss``: the same for the
    alignment loss, the paper's Fig. 10 baseline that "increases" while FID falls (C8F's negative control);
    ``align_trend``: Spearman(step, alignment) (Fig. 10); ``held_late``: Spearman(step, held-out loss) over the
    late checkpoints (is the FID stand-in still falling where C8 looks?); ``icr_argmin_step`` /
    ``held_argmin_step``: where ICR / the held-out loss are lowest; ``energy``: :func:`energy_growth` from the
    ICR minimum (C14's statistic on the rich run); ``ts_trend``: Spearman(step, Tr Sigma_s) over all checkpoints
    (C13, "Tr(Sigma_s) continues to increase throughout training"); ``ts_end_mid``: Tr Sigma_s at the end minus
    mid-training (the statistic C13 used before issue 59's review; shown, not tested).

    Added after the review of the published `full` run: ``rise``: ICR at the end minus its minimum (C9r's statistic on
    the data-rich run, C9r's negative control C9rc); ``held_at_end``: whether the held-out loss is lowest at the last
    checkpoint (then ``while_falling`` is the all-checkpoint trend and ``with_loss`` is minus it whenever the held-out
    loss falls at every checkpoint: C8h and C8F are one statistic); ``align_raw_trend``: Spearman(step, alignment on
    raw features), the paper's Eq. 6 (C16r); ``late_window``: ``late`` on ``icr_window``, ICR along training at another
    sigma (C8w: the seed's own ICR-argmin sigma; NaN without it)."""
    st = np.asarray(tr.steps)
    icr_l, held = np.asarray(tr.icr[layer], float), np.asarray(tr.heldout, float)
    late = st >= late_from
    h = int(np.argmin(held))
    k = int(np.argmin(icr_l))
    return dict(late=spearman(st[late], icr_l[late]), while_falling=spearman(st[:h + 1], icr_l[:h + 1]),
                with_loss=spearman(icr_l, held), align_with_loss=spearman(tr.alignment[layer], held),
                align_trend=spearman(st, tr.alignment[layer]), held_late=spearman(st[late], held[late]),
                icr_argmin_step=int(st[k]), held_argmin_step=int(st[h]),
                energy=energy_growth(tr.trace_s[layer], tr.trace_xi[layer], k),
                ts_trend=spearman(st, tr.trace_s[layer]),
                ts_end_mid=float(tr.trace_s[layer][-1] - tr.trace_s[layer][len(st) // 2]),
                rise=float(icr_l[-1] - icr_l[k]), held_at_end=bool(h == len(st) - 1),
                align_raw_trend=spearman(st, tr.alignment_raw[layer]) if layer in tr.alignment_raw else float("nan"),
                late_window=(float("nan") if icr_window is None
                             else spearman(st[late], np.asarray(icr_window, float)[late])))


def log_checkpoints(steps: int, n: int, first: int | None = None) -> list[int]:
    """``n`` roughly log-spaced distinct checkpoints in ``[first, steps]`` (ending at ``steps``)."""
    first = first or max(1, steps // 50)
    pts = np.unique(np.round(np.geomspace(first, steps, n)).astype(int))
    return [int(p) for p in pts]


def memorisation_onset(memo: np.ndarray, threshold: float = 0.1) -> int | None:
    """Index of the first checkpoint with memorisation ratio above ``threshold`` (None: not reached)."""
    hit = np.nonzero(np.asarray(memo) > threshold)[0]
    return int(hit[0]) if len(hit) else None


def memorisation_rise(memo: Sequence[float], n_gen: int, min_samples: int = 2) -> int | None:
    """Index of the first checkpoint where the memorisation ratio *begins to increase* (paper §5.2: it "remains
    essentially zero around the ICR minimum and begins to increase only afterward"): where it exceeds its level at
    the first checkpoint by at least ``min_samples`` of the ``n_gen`` generated samples (None: it never does).
    Unlike :func:`memorisation_onset` (a fixed ratio, reached later), this marks the start of the rise."""
    m = np.asarray(memo, float)
    if m.ndim != 1 or len(m) < 1:
        raise ValueError(f"need a 1-d memorisation curve, got shape {m.shape}")
    if n_gen < 1 or min_samples < 1:
        raise ValueError(f"n_gen and min_samples must be positive, got {n_gen} and {min_samples}")
    hit = np.nonzero(np.round((m - m[0]) * n_gen) >= min_samples)[0]
    return int(hit[0]) if len(hit) else None


def icr_sigma_curve(model: EDMDenoiser, images: torch.Tensor, sigmas: Sequence[float], *, layer: str, level: int,
                    n_views: int, seed: int = 0) -> np.ndarray:
    """V-view ICR against sigma of one model on given ``images`` (one layer and augmentation level): the same
    draws as :func:`sigma_sweep` with the same ``seed`` and ``n_views``, so two models swept on the same images
    see identical perturbations (Fig. 9 contrast: the data-rich model on the overfitted model's training images)."""
    return np.asarray([icr_multiview(extract_views(model, images, s, n_views, level=level, layer=layer, seed=seed)).icr
                       for s in sigmas], float)


def estimator_robustness(model: EDMDenoiser, split: DigitsSplit, sigma: float, *, n_grid: Sequence[int],
                         v_grid: Sequence[int], levels: Sequence[int] = (1, 2, 3, 4), layer: str = "dec4",
                         level: int = 4, seed: int = 0) -> dict[str, dict[int, float]]:
    """ICR at one sigma vs the number of images (V = 8), vs the number of views (all images), both at
    augmentation ``level``, and vs the augmentation level (paper Figs. 12-13)."""
    out: dict[str, dict[int, float]] = {"n": {}, "views": {}, "level": {}}
    vmax = max(max(v_grid), 8)
    full = extract_views(model, split.pool_x, sigma, vmax, level=level, layer=layer, seed=seed)
    for n in n_grid:
        out["n"][int(n)] = icr_multiview(full[:n, :8]).icr
    for v in v_grid:
        out["views"][int(v)] = icr_multiview(full[:, :v]).icr
    for lev in levels:
        out["level"][int(lev)] = icr_multiview(extract_views(model, split.pool_x, sigma, 8, level=lev,
                                                             layer=layer, seed=seed)).icr
    return out


# ---------------------------------------------------------------------------------------------------------
# Per-seed tasks (picklable: the notebook runs them inline or in a process pool, one thread per process)


def _cpu_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A model's state dict on the CPU (what a task returns, whatever device it trained on)."""
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def _split(cfg: Mapping[str, Any]) -> DigitsSplit:
    return load_digits_split(n_test=cfg["n_test"], seed=0)


def window_trajectory(states: Sequence[Mapping[str, torch.Tensor]], sigma_data: float, channels: Sequence[int],
                      images: torch.Tensor, sigma: float, *, layer: str, level: int, n_views: int, seed: int,
                      device="cpu") -> np.ndarray:
    """ICR along training at another noise level: the V-view ICR of each checkpoint's EMA network (``states``, as kept
    by :func:`training_trajectory`) at ``sigma`` on ``images``, with the draws the trajectory itself used (seed + 7)."""
    net = EDMDenoiser(sigma_data, tuple(channels)).to(device).eval()
    out = []
    for state in states:
        net.load_state_dict(state)
        out.append(icr_multiview(extract_views(net, images, sigma, n_views, level=level, layer=layer, seed=seed + 7)).icr)
    return np.asarray(out, float)


def binned_curve(values: Sequence[float], n_bins: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """A per-step training-loss curve as ``n_bins`` means over equal runs of steps: ``(bin end steps, bin means)``
    (the learning curve the chapter draws and judges with the book's convergence rule, `icml26.convergence`)."""
    v = np.asarray(values, float)
    if v.ndim != 1 or len(v) < n_bins or n_bins < 2:
        raise ValueError(f"need a 1-d curve with at least n_bins = {n_bins} >= 2 values, got shape {v.shape}")
    edges = np.linspace(0, len(v), n_bins + 1).round().astype(int)
    return edges[1:].astype(float), np.array([v[a:b].mean() for a, b in zip(edges[:-1], edges[1:])])


def rich_task(seed: int, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """One seed of the data-rich experiment: train on the whole pool while measuring the trajectory, then the
    sigma sweep (layers ``cfg['layers']`` x levels ``cfg['sweep_levels']``) with the random-network control, and
    ``icr_on_limited``: the primary ICR curve over sigma on the smallest data-limited training subset, with the
    views and draws of :func:`limited_task`'s overfitted sweep (:func:`icr_sigma_curve`); the held-out loss at
    ``cfg['curve_points']`` evenly spaced steps (the learning curve the data-rich claims are linked to); ``window``: the trajectory's
    ICR re-measured at this seed's own ICR-argmin sigma of the sweep (:func:`window_trajectory`; C8w), with that sigma;
    ``losses``: the per-step training loss."""
    import time

    t0 = time.perf_counter()
    dev = compute_device()
    split = _split(cfg)
    traj, run = training_trajectory(
        split.pool_x, steps=cfg["rich_steps"], checkpoints=log_checkpoints(cfg["rich_steps"], cfg["rich_ckpts"]),
        channels=cfg["channels"], batch_size=cfg["rich_bs"], lr=cfg["lr"], ema_beta=cfg["ema_beta"],
        sigma_fix=cfg["sigma_fix"], heldout_images=split.test_x, layers=cfg["layers"], n_views=cfg["n_views"],
        n_icr=cfg["n_icr"], n_gen=cfg["n_gen"], heun_steps=cfg["heun_steps"], level=cfg["level"], seed=seed,
        trend_images=split.pool_x, keep_states=True, curve_points=cfg["curve_points"], device=dev)
    model = run.ema.eval()
    torch.manual_seed(10_000 + seed)
    random_net = EDMDenoiser(split.sigma_data, tuple(cfg["channels"])).to(dev).eval()
    sigmas = np.geomspace(*cfg["sigma_range"], cfg["n_sigma"])
    sweep = sigma_sweep(model, split, sigmas, icr_images=split.pool_x[:cfg["n_icr"]],
                        icr_labels=split.pool_y[:cfg["n_icr"]], layers=cfg["layers"], levels=cfg["sweep_levels"],
                        primary=(cfg["layer"], cfg["level"]), n_views=cfg["n_views"], seed=seed,
                        probe_max_iter=cfg["probe_max_iter"], random_model=random_net)
    # the Fig. 9 contrast reads this model's window on the overfitted model's training images, with its views
    n_over = min(cfg["limited_n"])
    x_over, _ = training_subset(split, n_over, seed=0)
    v_over = max(views_needed(n_over, random_net.feature_dim(la), minimum=cfg["n_views"]) for la in cfg["layers"])
    on_limited = icr_sigma_curve(model, x_over, sigmas, layer=cfg["layer"], level=cfg["level"], n_views=v_over, seed=seed)
    sigma_win = float(sigmas[int(np.argmin(sweep.curve()))])
    win = window_trajectory(traj.states, split.sigma_data, cfg["channels"], split.pool_x[:cfg["n_icr"]], sigma_win,
                            layer=cfg["layer"], level=cfg["level"], n_views=traj.n_views, seed=seed, device=dev)
    traj.states = []   # the checkpoints' networks are not returned (memory, pickling between processes)
    return dict(seed=seed, traj=traj, sweep=sweep, ema_state=_cpu_state(model), sigma_data=split.sigma_data,
                icr_on_limited=on_limited, window=dict(sigma=sigma_win, icr=win), losses=run.losses,
                seconds=time.perf_counter() - t0)


def limited_task(seed: int, n: int, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """One seed of the data-limited experiment with ``n`` training images (a fixed subset of the pool):
    the trajectory, then the sigma sweep of the final (memorised) model on its training images (Fig. 9)."""
    import time

    t0 = time.perf_counter()
    dev = compute_device()
    split = _split(cfg)
    x, y = training_subset(split, n, seed=0)
    traj, run = training_trajectory(
        x, steps=cfg["limited_steps"][n],
        checkpoints=log_checkpoints(cfg["limited_steps"][n], cfg["limited_ckpts"],
                                    first=max(1, cfg["limited_steps"][n] // cfg.get("ckpt_span", 50))),
        channels=cfg["channels"], batch_size=cfg["limited_bs"], lr=cfg["lr"], ema_beta=cfg["ema_beta"],
        sigma_fix=cfg["sigma_fix"], heldout_images=split.test_x, layers=cfg["layers"], n_views=cfg["n_views"],
        n_gen=cfg["n_gen"], heun_steps=cfg["heun_steps"], level=cfg["level"], seed=seed, device=dev)
    model = run.ema.eval()
    sigmas = np.geomspace(*cfg["sigma_range"], cfg["n_sigma"])
    overfit = sigma_sweep(model, split, sigmas, icr_images=x, icr_labels=y, layers=(cfg["layer"],),
                          levels=(cfg["level"],), n_views=traj.n_views, seed=seed,
                          probe_max_iter=cfg["probe_max_iter"])
    return dict(seed=seed, n=n, traj=traj, overfit=overfit, ema_state=_cpu_state(model), losses=run.losses,
                seconds=time.perf_counter() - t0)


def _init_worker() -> None:
    from icml26.chapter import pin_threads

    pin_threads()


def run_tasks(tasks: Sequence[tuple[Callable[..., dict], Mapping[str, Any]]], *, workers: int = 1,
              progress: Callable | None = None, desc: str = "tasks") -> list[dict]:
    """``[fn(**kwargs) for fn, kwargs in tasks]``, in order; with ``workers > 1`` in a spawned process pool whose
    workers compute on one torch/BLAS thread each, like the chapter. Each task seeds itself, so the results do
    not depend on ``workers`` (list the longest tasks first for a balanced pool)."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    workers = min(workers, int(os.environ.get("ICML26_CPUS", workers)))  # `repro book` running chapters side by side
    tasks = list(tasks)
    if workers == 1 or len(tasks) == 1:
        it = progress(tasks, desc=desc) if progress is not None else tasks
        return [fn(**kw) for fn, kw in it]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from types import MappingProxyType

    def picklable(v):  # a chapter's preset is a read-only mapping proxy, which does not pickle
        return dict(v) if isinstance(v, MappingProxyType) else v

    tasks = [(fn, {k: picklable(v) for k, v in kw.items()}) for fn, kw in tasks]

    out: dict[int, dict] = {}
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=mp.get_context("spawn"),
                             initializer=_init_worker) as pool:
        futures = {pool.submit(fn, **kw): i for i, (fn, kw) in enumerate(tasks)}
        done = as_completed(futures)
        if progress is not None:
            done = progress(done, desc=desc, total=len(tasks))
        for f in done:
            out[futures[f]] = f.result()
    return [out[i] for i in range(len(tasks))]
