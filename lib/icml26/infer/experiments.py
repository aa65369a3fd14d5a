"""The chapter's experiments: all models on the same splits and seeds, ablations, the KK design study and
the data / causality diagnostics (brief §5.4-5.5)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..progress import progress
from . import metrics as M
from .data import CabinConfig, CabinData, arrival_samples, global_delay, simulate_cabin, simulate_rirs
from .kk import (kk_relative_residual, minimum_phase_phase, negative_time_energy, one_pole_slab, perceptual_weight,
                 reim_kk_residual, spectral_weights)
from .model import SPEED_OF_SOUND, AVRField, FreqMLP, InferField, NAFField, TimeMLP
from .train import TrainResult, field_sigma_beta, predict, train_model

#: model name -> description of every model the chapter can train
MODELS: dict[str, str] = {
    "TD-MLP": "time-domain MLP (INRAS-like baseline): gamma(x_r) -> h[0:N], L1 + MR-STFT + energy-decay + log-spectral loss",
    "NAF-lite": "NAF-like log-magnitude STFT field with local grid features, NAF's MSE loss, Griffin-Lim phase",
    "AVR-lite": "hybrid AVR: per-point time signals, scalar sigma, rendered in frequency, AVR's time + frequency criterion",
    "FD-MLP": "frequency-domain MLP, no rendering: gamma(x_r) -> [Re, Im]^F, L_fr",
    "FD-MLP + ToF mask": "FD-MLP with INFER-lite's time-of-flight mask on its output",
    "INFER-lite": "frequency-dependent sigma + j beta renderer, ToF mask, KK loss (free delay), spectral weighting",
    "INFER w/o KK": "INFER-lite, lambda_KK = 0",
    "INFER w/o weighting": "INFER-lite with uniform spectral weights",
    "INFER perceptual-only": "INFER-lite weighted by the floored A-weighting alone (no crossover dip)",
    "INFER hardware-only": "INFER-lite weighted by the crossover dip alone (no A-weighting)",
    "FD-MLP w/o weighting": "FD-MLP with uniform spectral weights (the unweighted INFER's frequency-field peer)",
    "INFER scalar-sigma": "INFER-lite with one frequency-independent sigma per point and beta = 0 (AVR-like medium)",
    "INFER KK-const": "INFER-lite whose KK loss frees a per-point constant phase (previous revision) instead of a delay",
    "INFER lam=0.1": "INFER-lite, lambda_KK = 0.1",
    "INFER lam=0.01": "INFER-lite, lambda_KK = 0.01",
    "INFER lam=1": "INFER-lite, lambda_KK = 1 fixed (the previous revision's INFER-lite; the KK mechanism check K3-residual)",
    "INFER oracle": "INFER-lite trained on every receiver, the held-out ones included (K1's positive control: no interpolation)",
}
ORACLES = ("INFER oracle",)
"""Models trained on the training *and* test receivers (a positive control: what the budget reaches without
interpolating)."""
BASELINES = ("TD-MLP", "NAF-lite", "AVR-lite", "FD-MLP", "FD-MLP + ToF mask")
"""Every baseline the chapter trains."""
PAPER_BASELINES = ("TD-MLP", "NAF-lite", "AVR-lite")
"""The families the abstract compares with: time-domain (INRAS-like TD-MLP, NAF-like NAF-lite) and hybrid (AVR)."""
LAMBDA_SWEEP = {"INFER lam=0.01": 0.01, "INFER lam=0.1": 0.1, "INFER lam=1": 1.0}
FAMILIES = {"TD-MLP": "time", "NAF-lite": "NAF", "AVR-lite": "hybrid", "FD-MLP": "frequency MLP", "FD-MLP + ToF mask": "frequency MLP",
            "FD-MLP w/o weighting": "frequency MLP"}
"""Learning-rate family of each model (every INFER variant belongs to the family ``"INFER"``)."""
FAMILY_PROBES = {"time": "TD-MLP", "NAF": "NAF-lite", "hybrid": "AVR-lite", "frequency MLP": "FD-MLP", "INFER": "INFER w/o KK"}
"""The model whose validation error picks each family's learning rate (INFER's without L_KK, so that the
learning rate and lambda_KK are chosen one after the other, not jointly)."""


def family(name: str) -> str:
    """The learning-rate family of a model (`FAMILIES`; INFER variants: ``"INFER"``)."""
    return FAMILIES.get(name, "INFER")


def cabin_config(cfg: dict[str, Any]) -> CabinConfig:
    """The :class:`CabinConfig` of a preset."""
    keys = ("fs", "n_fft", "ir_length", "max_order", "grid", "crossover_hz", "seed", "plane_z")
    return CabinConfig(**{k: (tuple(int(g) for g in cfg[k]) if k == "grid" else cfg[k]) for k in keys if k in cfg})


def make_model(name: str, data: CabinData, cfg: dict[str, Any]) -> torch.nn.Module:
    """A fresh model of the given name, sized by the preset ``cfg`` (seed torch before calling)."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    c = data.cfg
    octaves = cfg.get("n_octaves", 6)
    if name == "TD-MLP":
        return TimeMLP(c.room, c.n_fft, width=cfg["mlp_width"], depth=cfg["mlp_depth"], n_octaves=octaves)
    if name == "NAF-lite":
        return NAFField(c.room, c.n_fft, width=cfg["mlp_width"], depth=cfg["mlp_depth"], n_octaves=octaves,
                        stft_n=cfg.get("naf_stft", 128), stft_hop=cfg.get("naf_hop", 16))
    if name in ("FD-MLP", "FD-MLP + ToF mask", "FD-MLP w/o weighting"):
        return FreqMLP(c.room, c.n_fft, width=cfg["mlp_width"], depth=cfg["mlp_depth"], n_octaves=octaves,
                       causal=name.endswith("mask"), fs=c.fs, speaker=c.drivers(), arrival_offset=global_delay(),
                       mask_margin=cfg["mask_margin"])
    ray = dict(width=cfg["field_width"], depth=cfg["field_depth"], n_octaves_p=octaves, n_azi=cfg["n_azi"],
               n_ele=cfg["n_ele"], n_samples=cfg["n_samples"], far=cfg["far"], arrival_offset=global_delay(),
               mask_margin=cfg["mask_margin"])
    if name == "AVR-lite":
        return AVRField(c.room, c.n_fft, c.fs, c.drivers(), **ray)
    variant = "scalar" if name == "INFER scalar-sigma" else "infer"
    return InferField(c.room, c.n_fft, c.fs, c.drivers(), variant=variant, **ray)


def training_recipe(name: str, data: CabinData, cfg: dict[str, Any]) -> dict[str, Any]:
    """Iterations, batch, learning rate, weights, lambda_KK and KK nuisance of each model: the MLPs get
    ``mlp_iters`` x ``mlp_batch``, the ray models ``field_iters`` x ``field_batch``. The learning rate is
    the family's (``cfg["lr_by_family"]``, chosen by :func:`tune` on a validation split of the training
    receivers; ``cfg["lr"]`` where a family was not tuned), decayed by cosine to a tenth of itself;
    INFER-lite's lambda_KK is ``cfg["lam_kk"]`` (the tuned value when :func:`run_all` tuned it)."""
    lr = float(cfg.get("lr_by_family", {}).get(family(name), cfg["lr"]))
    sched = dict(lr=lr, lr_final=lr / 10)
    f, fc = data.freqs, data.cfg.crossover_hz
    w = spectral_weights(f, fc)
    if name in ("TD-MLP", "NAF-lite", "FD-MLP", "FD-MLP + ToF mask", "FD-MLP w/o weighting"):
        return dict(iters=cfg["mlp_iters"], batch=cfg["mlp_batch"],
                    weights=None if name in ("TD-MLP", "NAF-lite", "FD-MLP w/o weighting") else w, **sched)
    if name == "AVR-lite":
        return dict(iters=cfg["field_iters"], batch=cfg["field_batch"], **sched)
    lam = {"INFER w/o KK": 0.0, "INFER scalar-sigma": 0.0, **LAMBDA_SWEEP}.get(name, cfg["lam_kk"])
    weights = {"INFER w/o weighting": None, "INFER perceptual-only": spectral_weights(f, fc, hardware=False),
               "INFER hardware-only": spectral_weights(f, fc, perceptual=False)}.get(name, w)
    return dict(iters=cfg["field_iters"], batch=cfg["field_batch"], weights=weights, lam_kk=lam,
                nuisance="constant" if name == "INFER KK-const" else "linear", **sched)


def render_sampling_ratio(model: torch.nn.Module, f_top: float) -> float:
    """Ray-sample spacing of a ray model / half the shortest wavelength of the band, lambda_min / 2 =
    c / (2 f_top): the renderer's quadrature of sum_i S_i e^{-j 2 pi f d_i / c} alpha_i T_i (brief §2.1)
    samples the geometric phase along a ray without aliasing only when this is <= 1 (the renderer's
    analogue of the receiver-grid check K0j)."""
    if f_top <= 0:
        raise ValueError(f"f_top must be positive, got {f_top}")
    spacing = (model.far - model.near) / (model.n_samples - 1)
    return float(spacing / (SPEED_OF_SOUND / f_top / 2))


def training_signature(name: str, data: CabinData, cfg: dict[str, Any], train_idx) -> tuple:
    """What determines a trained model for a given seed: its class and variant, its training recipe and its
    training receivers. Two model names with the same signature train to the same weights (`run_all` trains
    them once)."""
    torch_state = torch.random.get_rng_state()
    model = make_model(name, data, cfg)
    torch.random.set_rng_state(torch_state)
    recipe = training_recipe(name, data, cfg)
    items = tuple(sorted((k, np.asarray(v, dtype=float).tobytes() if isinstance(v, np.ndarray) else v)
                         for k, v in recipe.items()))
    return (type(model).__name__, getattr(model, "variant", None), getattr(model, "causal", None),
            np.asarray(train_idx).tobytes(), items)


def n_parameters(model: torch.nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


@dataclass
class Results:
    """Everything :func:`run_all` trains and measures.

    ``tables[seed]``: metrics [model x metric] on the interpolation test split; ``diagnostics[seed]``:
    field diagnostics of the INFER variants; ``extrapolation[seed]``: the rear-slab split;
    ``runs[(name, seed)]``: training curves; ``models`` / ``pred``: seed ``seeds[0]`` only (figures).
    """

    data: CabinData
    seeds: tuple[int, ...] = ()
    tables: dict[int, pd.DataFrame] = field(default_factory=dict)
    diagnostics: dict[int, pd.DataFrame] = field(default_factory=dict)
    extrapolation: dict[int, pd.DataFrame] = field(default_factory=dict)
    runs: dict[tuple[str, int], TrainResult] = field(default_factory=dict)
    models: dict[str, torch.nn.Module] = field(default_factory=dict)
    pred: dict[str, np.ndarray] = field(default_factory=dict)
    budget: pd.DataFrame | None = None
    reference: pd.Series | None = None
    blind: pd.Series | None = None
    tuning: pd.DataFrame | None = None
    chosen: dict[str, Any] = field(default_factory=dict)
    cfg: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def per_seed(self, metric: str, source: str = "tables") -> pd.DataFrame:
        """[model x seed] values of one metric (NaN where a model was not trained for a seed)."""
        tabs = getattr(self, source)
        return pd.DataFrame({s: tabs[s][metric] for s in self.seeds if s in tabs})

    def summary(self, metric: str, source: str = "tables") -> pd.DataFrame:
        """Mean, standard error and number of seeds of one metric for every model."""
        v = self.per_seed(metric, source)
        n = v.notna().sum(axis=1)
        return pd.DataFrame({"mean": v.mean(axis=1), "sem": v.std(axis=1, ddof=1) / np.sqrt(n.where(n > 1)), "n": n})

    def mean_table(self, source: str = "tables") -> pd.DataFrame:
        """Every metric averaged over the seeds each model was trained for."""
        tabs = getattr(self, source)
        return pd.concat([tabs[s] for s in self.seeds if s in tabs]).groupby(level=0, sort=False).mean()

    def best_baseline(self, metric: str, baselines=BASELINES, source: str = "tables") -> str:
        """The baseline with the lowest mean (over seeds) of ``metric``."""
        means = self.per_seed(metric, source).mean(axis=1)
        present = [b for b in baselines if b in means.index]
        if not present:
            raise KeyError(f"none of the baselines {baselines} was trained")
        return str(means.loc[present].idxmin())

    def ratios(self, model: str, reference: str, metric: str, source: str = "tables") -> list[float]:
        """Per-seed ``metric(model) / metric(reference)`` (same seed, same split)."""
        v = self.per_seed(metric, source)
        return [float(v.loc[model, s] / v.loc[reference, s]) for s in v.columns]

    def control_ratios(self, control: str, reference: str, metric: str) -> list[float]:
        """Per-seed ``metric(control) / metric(reference)``, where ``control`` is a predictor without
        training (``"nearest"``: `nearest_receiver`; ``"blind"``: `position_blind`; one value, so the spread
        comes from the reference model's seeds): the K1 tests run on these as negative controls."""
        row = {"nearest": self.reference, "blind": self.blind}[control]
        v = self.per_seed(metric)
        return [float(row[metric] / v.loc[reference, s]) for s in v.columns]

    def blind_ratios(self, model: str, metric: str) -> list[float]:
        """Per-seed ``metric(model) / metric(position-blind predictor)``: below 1 when the model uses position
        (K1's gate, G1)."""
        v = self.per_seed(metric)
        return [float(v.loc[model, s] / self.blind[metric]) for s in v.columns]

    def curve(self, name: str, points: int = 50) -> tuple[np.ndarray, np.ndarray]:
        """A model's training-loss curve for `icml26.Chapter.curve`: (steps [P], values [seeds x P]), each value
        the mean loss over a block of iters / ``points`` consecutive steps, the step its block's last."""
        runs = [self.runs[(name, s)] for s in self.seeds if (name, s) in self.runs]
        if not runs:
            raise KeyError(f"no training run of {name!r}")
        losses = np.asarray([r.losses for r in runs], dtype=float)
        n = losses.shape[1]
        points = max(6, min(points, n))
        edges = np.linspace(0, n, points + 1).round().astype(int)
        values = np.stack([losses[:, a:b].mean(1) for a, b in zip(edges[:-1], edges[1:])], 1)
        return edges[1:].astype(float), values

    def differences(self, model: str, reference: str, metric: str, source: str = "tables") -> list[float]:
        v = self.per_seed(metric, source)
        return [float(v.loc[model, s] - v.loc[reference, s]) for s in v.columns]


def evaluate(pred: np.ndarray, data: CabinData, idx: np.ndarray, raw: np.ndarray | None = None,
             margin: int = 3) -> dict[str, float]:
    """Metric battery (brief §5.3) of predictions [len(idx), F] against the ground truth at ``idx``.

    ``raw``: the model's response before its time-of-flight mask (INFER-lite, FD-MLP + ToF mask), for
    the unmasked pre-arrival energy; models without a mask pass nothing (raw = pred). ``margin``: the
    pre-arrival window ends ``margin`` samples before the direct sound (the chapter passes INFER-lite's
    mask margin, so the unmasked energy is exactly what the mask would delete).
    """
    true = data.H[idx]
    f, c = data.freqs, data.cfg
    band = M.band_mask(f, c.fs)
    cross = band & (np.abs(np.log2(np.maximum(f, 1e-6) / c.crossover_hz)) <= 0.5)
    mag_w = np.abs(true).mean(0)
    h_pred = np.fft.irfft(pred, c.n_fft, axis=-1)
    h_raw = h_pred if raw is None else np.fft.irfft(raw, c.n_fft, axis=-1)
    row = {
        "magnitude error (dB)": M.magnitude_error_db(pred, true, band, ref_rms=1.0),
        "A-weighted magnitude error (dB)": M.magnitude_error_db(pred, true, band, perceptual_weight(f), ref_rms=1.0),
        "crossover-band magnitude error (dB)": M.magnitude_error_db(pred, true, cross, ref_rms=1.0),
        "out-of-crossover magnitude error (dB)": M.magnitude_error_db(pred, true, band & ~cross, ref_rms=1.0),
        "Angle error": M.angle_error(pred, true, band),
        "wrapped phase error (rad)": M.wrapped_phase_error(pred, true, band),
        "|H|-weighted phase error (rad)": M.wrapped_phase_error(pred, true, band, mag_w),
        "pre-ToF energy": float(M.pre_arrival_energy(h_pred, data.arrival[idx], margin).mean()),
        "pre-ToF energy, unmasked": float(M.pre_arrival_energy(h_raw, data.arrival[idx], margin).mean()),
    }
    row.update(M.avr_battery(h_pred, data.h[idx], c.fs))
    return row


def field_diagnostics(model: InferField, data: CabinData, idx: np.ndarray) -> dict[str, float]:
    """KK diagnostics of a trained INFER-lite variant at the receivers ``idx`` (fixed ray grid): the
    relative KK residual of its sampled (sigma, beta), points weighted by their rendering weight
    alpha |T|, with the free delay (``KK residual``) and with the previous revision's free constant
    (``KK residual (constant nuisance)``)."""
    sigma, beta, weight = field_sigma_beta(model, data.receivers[idx])
    pw = weight.mean(-1)
    f = data.freqs
    return {"KK residual": kk_relative_residual(sigma, beta, f, "linear", pw),
            "KK residual (constant nuisance)": kk_relative_residual(sigma, beta, f, "constant", pw)}


def _train_eval(name: str, data: CabinData, cfg: dict[str, Any], train_idx, test_idx, seed: int, device=None,
                diagnostics: bool = True):
    torch.manual_seed(seed)
    model = make_model(name, data, cfg)
    run = train_model(model, data, train_idx, seed=seed, name=name, device=device, show_progress=False,
                      **training_recipe(name, data, cfg))
    pred = predict(model, data.receivers[test_idx])
    raw = predict(model, data.receivers[test_idx], causal=False) if getattr(model, "causal", False) else None
    row = evaluate(pred, data, test_idx, raw, margin=cfg["mask_margin"])
    diag = (field_diagnostics(model, data, test_idx)
            if diagnostics and isinstance(model, InferField) and model.variant == "infer" else None)
    return model, run, pred, row, diag


def position_blind(data: CabinData, train_idx, n: int) -> np.ndarray:
    """Reference predictor that ignores position: the geometric mean over the training receivers of |H|
    at each frequency (zero phase), repeated ``n`` times -- the magnitude a field must beat to use position."""
    mag = np.exp(np.mean(np.log(np.abs(data.H[np.asarray(train_idx)]) + 1e-6), 0))
    return np.repeat(mag[None].astype(complex), n, 0)


def nearest_receiver(data: CabinData, train_idx, test_idx) -> np.ndarray:
    """Reference predictor without learning: the response of the nearest training receiver [len(test), F]."""
    tr, te = np.asarray(train_idx), np.asarray(test_idx)
    dist = np.linalg.norm(data.receivers[te][:, None] - data.receivers[tr][None], axis=-1)
    return data.H[tr[dist.argmin(1)]]


TUNE_SEED = 1000
"""Torch / batch seed of the tuning runs: none of the evaluation seeds."""


def validation_split(data: CabinData, frac: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(fit, validation) indices: a random ``frac`` of the *training* receivers held out for tuning (the
    test receivers are never seen while choosing a learning rate or lambda_KK)."""
    if not 0 < frac < 1:
        raise ValueError(f"frac must be in (0, 1), got {frac}")
    tr = np.asarray(data.train)
    perm = np.random.default_rng(seed).permutation(len(tr))
    n_val = max(1, int(round(frac * len(tr))))
    return np.sort(tr[perm[n_val:]]), np.sort(tr[perm[:n_val]])


def _selection_score(table: pd.DataFrame) -> pd.Series:
    """The tuning criterion, fixed before any tuning run: the mean over magnitude (dB) and Angle error of
    each candidate's error divided by the grid's smallest (scale-free, lower is better)."""
    return ((table["magnitude error (dB)"] / table["magnitude error (dB)"].min())
            + (table["Angle error"] / table["Angle error"].min())) / 2


def _tuning_cfg(cfg: dict[str, Any]) -> dict[str, Any]:
    """The preset with the tuning runs' step counts: ``tune_fraction`` of the scale's steps (at least 2)."""
    frac = float(cfg.get("tune_fraction", 1.0))
    if not 0 < frac <= 1:
        raise ValueError(f"tune_fraction must be in (0, 1], got {frac}")
    return dict(cfg, field_iters=max(2, int(round(frac * cfg["field_iters"]))),
                mlp_iters=max(2, int(round(frac * cfg["mlp_iters"]))))


def tune(cfg: dict[str, Any], data: CabinData, models, device=None) -> tuple[dict[str, Any], pd.DataFrame]:
    """Choose, on a validation split of the training receivers (:func:`validation_split`, seed
    ``TUNE_SEED``; runs of ``tune_fraction`` of the scale's steps), (i) one learning rate per family of the
    models in ``models`` from ``cfg["lr_grid"]`` (trained on the family's probe model, `FAMILY_PROBES`);
    while the best value sits on an edge of the grid, the grid is widened past that edge by a factor 4, at
    most ``cfg["lr_extend"]`` times (revision 3: the fixed grid's top was chosen by every family); then
    (ii) INFER-lite's lambda_KK from ``cfg["lam_grid"]`` (all > 0) at INFER's chosen learning rate: the
    **largest** lambda whose score is within ``cfg["lam_tolerance"]`` (relative) of the best lambda's, so a
    choice among values validation cannot tell apart goes to the strongest KK constraint (revision 3: the
    previous rule picked the minimum of scores 2 % apart, within seed noise). lambda_KK = 0 is trained
    beside them for the table (it is the w/o-KK arm of K3) but cannot be chosen. The criterion is
    :func:`_selection_score`. Returns ({"lr_by_family": {...}, "lam_kk": float}, table of validation errors).
    """
    fit, val = validation_split(data)
    tcfg = _tuning_cfg(cfg)
    fams = sorted({family(n) for n in models}, key=list(FAMILY_PROBES).index)
    rows, chosen = {}, {"lr_by_family": {}}
    for fam in fams:
        probe = FAMILY_PROBES[fam]
        cand: dict = {}
        grid = sorted(float(x) for x in cfg["lr_grid"])
        extend = int(cfg.get("lr_extend", 0))
        while True:
            for lr in grid:
                if (fam, probe, "lr", lr) not in cand:
                    c = dict(tcfg, lr_by_family={fam: lr})
                    _, _, _, row, _ = _train_eval(probe, data, c, fit, val, TUNE_SEED, device, diagnostics=False)
                    cand[(fam, probe, "lr", lr)] = row
            t = pd.DataFrame(cand).T
            t["score"] = _selection_score(t)
            best = float(t["score"].idxmin()[3])
            if extend <= 0 or len(grid) < 2 or grid[0] < best < grid[-1]:
                break
            grid = [best / 4] + grid if best == grid[0] else grid + [best * 4]
            extend -= 1
        chosen["lr_by_family"][fam] = best
        rows.update(t.to_dict("index"))
    lams = tuple(float(x) for x in cfg.get("lam_grid", ()))
    if lams and "INFER" in fams:
        if min(lams) <= 0:
            raise ValueError("lam_grid holds the candidates for lambda_KK > 0 only")
        tol = float(cfg.get("lam_tolerance", 0.0))
        if tol < 0:
            raise ValueError(f"lam_tolerance must be >= 0, got {tol}")
        c = dict(tcfg, lr_by_family=chosen["lr_by_family"])
        cand = {}
        for lam in (0.0,) + lams:
            _, _, _, row, _ = _train_eval("INFER-lite", data, dict(c, lam_kk=lam), fit, val, TUNE_SEED, device,
                                          diagnostics=False)
            cand[("INFER", "INFER-lite", "lambda_KK", lam)] = row
        t = pd.DataFrame(cand).T
        t["score"] = np.nan
        positive = t.index[1:]
        t.loc[positive, "score"] = _selection_score(t.loc[positive])
        scores = t.loc[positive, "score"].astype(float)
        near = [k for k in positive if scores[k] <= scores.min() * (1 + tol)]
        chosen["lam_kk"] = float(max(k[3] for k in near))
        rows.update(t.to_dict("index"))
    table = pd.DataFrame(rows).T
    table.index = table.index.set_names(["family", "model", "knob", "value"])
    return chosen, table


def run_all(cfg: dict[str, Any], data: CabinData | None = None, seeds=None, device=None) -> Results:
    """Simulate (unless given) and train, on the interpolation split, every model of ``cfg['models']``
    for every seed of ``seeds`` (default ``cfg['seeds']``), the design-study models of
    ``cfg['design_models']`` for the seeds ``cfg['design_seeds']``, and, on the extrapolation split
    (rear slab held out), the models of ``cfg['extrapolation_models']`` for every seed. Every model of
    a seed sees the same split, the same initial torch seed and the same training budget.

    With ``cfg["lr_grid"]`` set, each family's learning rate and INFER-lite's lambda_KK are first chosen
    by :func:`tune` on a validation split of the training receivers (``Results.tuning``, ``.chosen``).
    """
    t0 = time.perf_counter()
    data = data or simulate_cabin(cabin_config(cfg))
    tuning, chosen = None, {}
    if cfg.get("lr_grid"):
        names = list(cfg["models"]) + list(cfg.get("design_models", ())) + list(cfg.get("extrapolation_models", ()))
        chosen, tuning = tune(cfg, data, names, device)
        cfg = dict(cfg, **chosen)
    seeds = tuple(int(s) for s in (cfg["seeds"] if seeds is None else seeds))
    if not seeds:
        raise ValueError("need at least one seed")
    design = tuple(cfg.get("design_models", ()))
    design_seeds = tuple(int(s) for s in cfg.get("design_seeds", seeds[:1]))
    extra = tuple(cfg.get("extrapolation_models", ()))
    unknown = [n for n in list(cfg["models"]) + list(design) + list(extra) if n not in MODELS]
    if unknown:
        raise KeyError(f"unknown model(s) {unknown}; known: {', '.join(MODELS)}")
    res = Results(data=data, seeds=seeds, tuning=tuning, chosen=chosen, cfg=dict(cfg))
    jobs = [(s, n, "interp") for s in seeds for n in cfg["models"]]
    jobs += [(s, n, "interp") for s in design_seeds for n in design if n not in cfg["models"]]
    jobs += [(s, n, "extra") for s in seeds for n in extra]
    rows: dict = {}
    diags: dict = {}
    done: dict = {}
    for seed, name, split in progress(jobs, desc="models x seeds"):
        tr, te = (data.train, data.test) if split == "interp" else (data.extra_train, data.extra_test)
        if name in ORACLES:
            tr = np.union1d(tr, te)
        key = (seed, split, training_signature(name, data, cfg, tr))
        if key not in done:  # two names with the same model, recipe and split (e.g. "INFER lam=1" when the tuned
            done[key] = _train_eval(name, data, cfg, tr, te, seed, device)    # lambda_KK is 1) train once
        model, run, pred, row, diag = done[key]
        rows.setdefault((split, seed), {})[name] = row
        if split == "interp":
            res.runs[(name, seed)] = run
            if diag is not None:
                diags.setdefault(seed, {})[name] = diag
            if seed == seeds[0]:
                res.models[name], res.pred[name] = model, pred
        res.seconds[name] = res.seconds.get(name, 0.0) + run.seconds
    for (split, seed), r in rows.items():
        (res.tables if split == "interp" else res.extrapolation)[seed] = pd.DataFrame(r).T
    res.diagnostics = {s: pd.DataFrame(d).T for s, d in diags.items()}
    nn_row = evaluate(nearest_receiver(data, data.train, data.test), data, data.test, margin=cfg["mask_margin"])
    res.reference = pd.Series(nn_row, name="nearest training receiver")
    blind_row = evaluate(position_blind(data, data.train, len(data.test)), data, data.test, margin=cfg["mask_margin"])
    res.blind = pd.Series(blind_row, name="position-blind magnitude")
    first = seeds[0]
    res.budget = pd.DataFrame({
        "parameters": {n: n_parameters(m) for n, m in res.models.items()},
        "training responses (iters x batch)": {n: res.runs[(n, first)].draws for n in res.models},
        "train seconds (per seed)": {n: res.runs[(n, first)].seconds for n in res.models},
    })
    res.seconds["total"] = time.perf_counter() - t0
    return res


# ------------------------------------------------------------------------- exact diagnostics (K0) ---

def slab_kk_error(a: float = 0.6, n_fft: int = 256) -> float:
    """max_k |beta - Hilbert{sigma}| for the analytic one-pole slab (should be rounding-level)."""
    from .kk import hilbert_onesided

    sigma, beta = one_pole_slab(a, n_fft)
    return float(np.max(np.abs(beta - hilbert_onesided(sigma))))


def nuisance_study(n_fft: int = 256, fs: int = 2000, du: float = 0.2, delay_samples: int = 3,
                   offset: float = 0.8) -> pd.DataFrame:
    """The KK design question (review of issue 8, §1): which per-point term may the loss leave free?

    Three analytic slab factors tau = exp((-sigma + j beta) du) on the one-sided grid (sigma, beta per
    metre): a causal one-pole slab (a KK pair), a pure delay of ``delay_samples`` samples (sigma = 0,
    beta linear in f: causal) and a constant phase offset exp(j offset) (sigma = 0: acausal, the
    Hilbert kernel's 1/n tails reach both sides of t = 0). For each: the negative-time energy of tau's
    impulse response and its relative KK residual with each choice of free term.
    """
    f = np.fft.rfftfreq(n_fft, 1 / fs)
    s1, b1 = one_pole_slab(0.6, n_fft, du)
    cases = {"one-pole slab (causal)": (s1, b1),
             "pure delay (causal)": (np.zeros_like(f), -2 * np.pi * f * delay_samples / fs / du),
             "constant phase (acausal)": (np.zeros_like(f), np.full_like(f, offset / du))}
    rows = {}
    for name, (s, b) in cases.items():
        tau = np.exp((-s + 1j * b) * du)
        rows[name] = {"negative-time energy": float(negative_time_energy(tau, n_fft)),
                      "KK residual, free delay": kk_relative_residual(s[None], b[None], f, "linear"),
                      "KK residual, free constant": kk_relative_residual(s[None], b[None], f, "constant"),
                      "KK residual, nothing free": kk_relative_residual(s[None], b[None], f, "none")}
    return pd.DataFrame(rows).T


def ray_causality(n_fft: int = 256, fs: int = 2000, n_slabs: int = 10, step_samples: int = 2,
                  seed: int = 0) -> dict[str, float]:
    """Is a rendered ray causal when every slab is KK-consistent? (review of issue 8, §3 (ii)).

    A ray of ``n_slabs`` random one-pole (minimum-phase, beta = H{sigma}) slabs spaced an integer
    ``step_samples`` of travel apart, flat re-emitted signal S = 1, rendered as
    sum_i exp(-j w d_i) alpha_i T_i. Returns the negative-time energy fraction of the ray's impulse
    response with INFER's opacity alpha_i = 1 - exp(-sigma_i du) (real: it drops the slab's phase) and
    with the complex opacity 1 - tau_i that matches the complex transmittance (then the ray is a sum of
    products of causal factors, hence causal).
    """
    rng = np.random.default_rng(seed)
    F = n_fft // 2 + 1
    w = 2 * np.pi * np.arange(F) / n_fft
    du = step_samples * 343.0 / fs
    out = {}
    slabs = [one_pole_slab(float(rng.uniform(0.2, 0.8)), n_fft, du) for _ in range(n_slabs)]
    for mode in ("real opacity (INFER)", "complex opacity"):
        g = np.zeros(F, complex)
        T = np.ones(F, complex)
        for i, (s, b) in enumerate(slabs):
            tau = np.exp((-s + 1j * b) * du)
            alpha = (1 - np.abs(tau)) if mode.startswith("real") else (1 - tau)
            g += np.exp(-1j * w * (i + 1) * step_samples) * alpha * T
            T = T * tau
        out[mode] = float(negative_time_energy(g, n_fft))
    return out


def geometric_delay(distance: float = 1.5, fs: int = 2000, n_fft: int = 256, n_samples: int = 8, far: float = 2.5,
                    bin_index: bool = False) -> tuple[float, float]:
    """(delay in samples, fs d / c): the delay of the response INFER-lite's renderer (:func:`render_fields`) gives to one opaque point
    (alpha = 1) at the ray sample nearest ``distance`` with a flat re-transmitted signal S = 1: read from the
    slope of the phase of H_k = exp(-j 2 pi f_k d / c) against omega_k = 2 pi k / N. The renderer is right when
    it equals fs d / c. ``bin_index=True`` renders with the frequency axis of the vendored parent class
    ``AVRRenderFD.acoustic_render_fd`` (``freq_bins = torch.arange(n_freq_bins)``: the bin index k in place of
    f_k = k fs / N), which gives N d / c instead: the units bug a fidelity check must catch (its
    ``AVRRenderFD_FreqDep_PhaseCorrection_new`` subclass, INFER's renderer, uses Hz)."""
    from .model import render_fields

    F = n_fft // 2 + 1
    d = torch.linspace(0.05, far, n_samples, dtype=torch.float64)
    i = int(torch.argmin((d - distance).abs()))
    sigma = torch.zeros(1, 1, n_samples, F, dtype=torch.float64)
    sigma[..., i, :] = 1e3
    zeros = torch.zeros_like(sigma)
    k = torch.arange(F, dtype=torch.float64)
    freqs = k if bin_index else k * fs / n_fft
    H = render_fields(sigma, zeros, torch.ones_like(sigma), zeros, d, freqs)[0].numpy()
    omega = 2 * np.pi * np.arange(F) / n_fft
    slope = np.polyfit(omega, np.unwrap(np.angle(H)), 1)[0]
    return float(-slope), float(fs * d[i] / SPEED_OF_SOUND)


def renderer_agreement(seed: int = 0, shape=(3, 14, 8, 129), fs: int = 2000) -> float:
    """max |render_fields - render_reference| / max |render_reference| on random fields: INFER-lite's kernel
    (real arithmetic) against the transcription of the vendored renderer (`render_reference`)."""
    from .model import render_fields, render_reference

    gen = torch.Generator().manual_seed(seed)
    sigma, beta = torch.rand(shape, generator=gen, dtype=torch.float64) * 3, torch.randn(shape, generator=gen, dtype=torch.float64)
    s_re, s_im = torch.randn(shape, generator=gen, dtype=torch.float64), torch.randn(shape, generator=gen, dtype=torch.float64)
    d = torch.linspace(0.05, 2.5, shape[2], dtype=torch.float64)
    freqs = torch.arange(shape[3], dtype=torch.float64) * fs / (2 * (shape[3] - 1))
    ours = render_fields(sigma, beta, s_re, s_im, d, freqs)
    ref = render_reference(sigma, beta, torch.complex(s_re, s_im), d, freqs)
    return float((ours - ref).abs().max() / ref.abs().max())


def _delay_removed(H: np.ndarray, arrival: np.ndarray, n_fft: int) -> np.ndarray:
    """H(f) exp(+j 2 pi k arrival / N): the response with its (fractional) direct-sound delay removed."""
    k = np.arange(H.shape[-1])
    return H * np.exp(2j * np.pi * k[None, :] * np.asarray(arrival)[:, None] / n_fft)


def min_phase_error(H: np.ndarray, arrival: np.ndarray, cfg: CabinConfig) -> float:
    """Mean wrapped phase error (rad, over the band) between the delay-removed responses and the
    minimum-phase responses with the same magnitude: 0 for a minimum-phase response (after its delay)."""
    N = cfg.n_fft
    Hc = _delay_removed(H, arrival, N)
    mp = np.abs(H) * np.exp(1j * minimum_phase_phase(np.abs(H), N))
    return M.wrapped_phase_error(mp, Hc, M.band_mask(cfg.freqs, cfg.fs))


def anechoic_control(cfg: CabinConfig, receivers: np.ndarray) -> np.ndarray:
    """Frequency responses [M, F] of the woofer alone in free field (pyroomacoustics, max_order 0, no
    crossover, no noise): after its delay a (band-limited) impulse, the negative control of the
    minimum-phase test."""
    c = replace(cfg, max_order=0)
    rirs = simulate_rirs(c, receivers)[0]
    h = np.zeros((len(receivers), cfg.n_fft))
    L = min(rirs.shape[-1], cfg.n_fft)
    h[:, :L] = rirs[:, :L]
    return np.fft.rfft(h, cfg.n_fft, axis=-1)


def ground_truth_checks(data: CabinData, mask_margin: int = 3, n_control: int = 24) -> dict[str, float]:
    """Data checks of the simulated cabin (review of issue 8, §2, replacing two identities):

    * ``pre_arrival_max``: largest fraction of a ground-truth response's energy before the mask start
      floor(arrival) - margin (the data are causal with respect to the direct sound);
    * ``pre_arrival_hpf_max``: the same with pyroomacoustics' default zero-phase high-pass kept on, on
      ``n_control`` receivers (negative control: it must fail the same test);
    * ``min_phase_error``: mean wrapped phase error of the minimum-phase reconstruction of the
      delay-removed responses (a room response is not minimum phase, even without its bulk delay);
    * ``min_phase_error_anechoic``: the same for the anechoic woofer (negative control: ~0);
    * ``reim_residual_N`` / ``reim_residual_2N``: Re/Im KK of the IRs without / with 2x padding (an
      identity of the DFT for any sequence, shown in the theory section, not a claim).
    """
    cfg = data.cfg
    h = data.h[:, : cfg.ir_length]
    N = cfg.n_fft
    sel = np.linspace(0, len(data.receivers) - 1, min(n_control, len(data.receivers))).round().astype(int)
    rec = data.receivers[sel]
    from .data import cabin_responses

    h_hpf = cabin_responses(replace(cfg, zero_phase_hpf=True), rec, rng=None)
    arr = arrival_samples(rec, cfg)
    return {
        "pre_arrival_max": float(M.pre_arrival_energy(data.h, data.arrival, mask_margin).max()),
        "pre_arrival_hpf_max": float(M.pre_arrival_energy(h_hpf, arr, mask_margin).max()),
        "min_phase_error": min_phase_error(data.H, data.arrival, cfg),
        "min_phase_error_anechoic": min_phase_error(anechoic_control(cfg, rec), arr, cfg),
        "reim_residual_N": reim_kk_residual(h, max(N, h.shape[-1])),
        "reim_residual_2N": reim_kk_residual(h, 2 * max(N, h.shape[-1])),
    }
