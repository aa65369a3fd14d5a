"""The chapter's experiments: all models on the same splits, ablations, diagnostics (brief §5.4-5.5)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..progress import progress
from . import metrics as M
from .data import CabinConfig, CabinData, global_delay, simulate_cabin
from .kk import (kk_relative_residual, minimum_phase_phase, one_pole_slab, perceptual_weight, reim_kk_residual,
                 spectral_weights)
from .model import FreqMLP, InferField, TimeMLP
from .train import TrainResult, field_sigma_beta, predict, train_model

#: model name -> (kind, description) of every variant the chapter trains
MODELS: dict[str, str] = {
    "TD-MLP": "time-domain MLP (NAF/INRAS-like baseline): gamma(x_r) -> h[0:N]",
    "FD-MLP": "frequency-domain MLP, no rendering: gamma(x_r) -> [Re, Im]^F",
    "AVR-lite": "ray renderer with scalar sigma and beta = 0 (hybrid AVR analogue)",
    "INFER-lite": "frequency-dependent sigma + j beta renderer, KK loss and spectral weighting",
    "INFER w/o KK": "INFER-lite without the Kramers-Kronig term",
    "INFER w/o weighting": "INFER-lite with uniform spectral weights",
}


def cabin_config(cfg: dict[str, Any]) -> CabinConfig:
    """The :class:`CabinConfig` of a preset."""
    keys = ("fs", "n_fft", "ir_length", "max_order", "grid", "crossover_hz", "seed")
    return CabinConfig(**{k: (tuple(cfg[k]) if k == "grid" else cfg[k]) for k in keys if k in cfg})


def make_model(name: str, data: CabinData, cfg: dict[str, Any]) -> torch.nn.Module:
    """A fresh, seeded model of the given name, sized by the preset ``cfg``."""
    c = data.cfg
    if name == "TD-MLP":
        return TimeMLP(c.room, c.n_fft, width=cfg["mlp_width"], depth=cfg["mlp_depth"])
    if name == "FD-MLP":
        return FreqMLP(c.room, c.n_fft, width=cfg["mlp_width"], depth=cfg["mlp_depth"])
    variant = "avr" if name == "AVR-lite" else "infer"
    return InferField(c.room, c.n_fft, c.fs, c.drivers(), width=cfg["field_width"], depth=cfg["field_depth"],
                      n_azi=cfg["n_azi"], n_ele=cfg["n_ele"], n_samples=cfg["n_samples"], far=cfg["far"],
                      variant=variant, arrival_offset=global_delay(), mask_margin=cfg["mask_margin"])


def training_recipe(name: str, data: CabinData, cfg: dict[str, Any]) -> dict[str, Any]:
    """Iterations, batch, weights and lambda_KK of each model (one recipe per name, no per-model tuning)."""
    w = spectral_weights(data.freqs, data.cfg.crossover_hz)
    if name in ("TD-MLP", "FD-MLP"):
        return dict(iters=cfg["mlp_iters"], batch=cfg["mlp_batch"], weights=None if name == "TD-MLP" else w,
                    lr=cfg["lr"])
    return dict(iters=cfg["field_iters"], batch=cfg["field_batch"], lr=cfg["lr"],
                weights=None if name == "INFER w/o weighting" else w,
                lam_kk=cfg["lam_kk"] if name in ("INFER-lite", "INFER w/o weighting") else 0.0)


@dataclass
class Results:
    data: CabinData
    models: dict[str, torch.nn.Module] = field(default_factory=dict)
    runs: dict[str, TrainResult] = field(default_factory=dict)
    pred: dict[str, np.ndarray] = field(default_factory=dict)          # test predictions [M_test, F]
    table: pd.DataFrame | None = None
    kk: dict[str, float] = field(default_factory=dict)                 # KK relative residual of the fields
    extrapolation: pd.DataFrame | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def evaluate(pred: np.ndarray, data: CabinData, idx: np.ndarray) -> dict[str, float]:
    """Metric battery (brief §5.3) of predictions [len(idx), F] against the ground truth at ``idx``."""
    true = data.H[idx]
    f, c = data.freqs, data.cfg
    band = M.band_mask(f, c.fs)
    cross = band & (np.abs(np.log2(np.maximum(f, 1e-6) / c.crossover_hz)) <= 0.5)
    mag_w = np.abs(true).mean(0)
    h_pred = np.fft.irfft(pred, c.n_fft, axis=-1)
    return {
        "magnitude error (dB)": M.magnitude_error_db(pred, true, band),
        "A-weighted magnitude error (dB)": M.magnitude_error_db(pred, true, band, perceptual_weight(f)),
        "crossover-band magnitude error (dB)": M.magnitude_error_db(pred, true, cross),
        "Angle error": M.angle_error(pred, true, band),
        "wrapped phase error (rad)": M.wrapped_phase_error(pred, true, band),
        "|H|-weighted phase error (rad)": M.wrapped_phase_error(pred, true, band, mag_w),
        "pre-ToF energy": float(M.pre_arrival_energy(h_pred, data.arrival[idx]).mean()),
    }


def run_models(data: CabinData, cfg: dict[str, Any], names, train_idx, test_idx, seed: int = 0,
               results: Results | None = None, tag: str = "") -> Results:
    """Train each named model on ``train_idx`` (same seed, same split) and evaluate on ``test_idx``."""
    res = results or Results(data=data)
    rows = {}
    for name in progress(list(names), desc=f"models{tag}"):
        torch.manual_seed(seed)
        model = make_model(name, data, cfg)
        run = train_model(model, data, train_idx, seed=seed, name=name, **training_recipe(name, data, cfg))
        pred = predict(model, data.receivers[test_idx])
        rows[name] = evaluate(pred, data, test_idx)
        if not tag:
            res.models[name], res.runs[name], res.pred[name] = model, run, pred
            res.seconds[name] = run.seconds
            if isinstance(model, InferField) and model.variant == "infer":
                s, b = field_sigma_beta(model, data.receivers[test_idx])
                res.kk[name] = kk_relative_residual(s, b)
    table = pd.DataFrame(rows).T
    if tag:
        res.extrapolation = table
    else:
        res.table = table
    return res


def run_all(cfg: dict[str, Any], data: CabinData | None = None, seed: int = 0) -> Results:
    """Simulate (unless given), train every model of ``cfg['models']`` on the interpolation split,
    and the models of ``cfg['extrapolation_models']`` on the extrapolation split (when any)."""
    t0 = time.perf_counter()
    data = data or simulate_cabin(cabin_config(cfg))
    res = run_models(data, cfg, cfg["models"], data.train, data.test, seed=seed)
    if cfg.get("extrapolation_models"):
        run_models(data, cfg, cfg["extrapolation_models"], data.extra_train, data.extra_test, seed=seed,
                   results=res, tag=" (extrapolation)")
    res.seconds["total"] = time.perf_counter() - t0
    return res


# ------------------------------------------------------------------------- exact diagnostics (K0) ---

def slab_kk_error(a: float = 0.6, n_fft: int = 256) -> float:
    """max_k |beta - Hilbert{sigma}| for the analytic one-pole slab (should be rounding-level)."""
    from .kk import hilbert_onesided

    sigma, beta = one_pole_slab(a, n_fft)
    return float(np.max(np.abs(beta - hilbert_onesided(sigma))))


def ground_truth_kk(data: CabinData) -> dict[str, float]:
    """Re/Im KK residual of the ground-truth responses without and with 2x zero padding, and the mean
    wrapped phase error of their minimum-phase reconstruction (RIRs are not minimum phase)."""
    h = data.h[:, : data.cfg.ir_length]
    N = data.cfg.n_fft
    band = M.band_mask(data.freqs, data.cfg.fs)
    mp = np.abs(data.H) * np.exp(1j * minimum_phase_phase(np.abs(data.H), N))
    return {
        "reim_residual_N": reim_kk_residual(h, max(N, h.shape[-1])),
        "reim_residual_2N": reim_kk_residual(h, 2 * max(N, h.shape[-1])),
        "min_phase_error": M.wrapped_phase_error(mp, data.H, band),
    }
