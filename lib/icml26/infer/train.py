"""Losses and training loops (brief §2.2).

* :func:`frequency_loss` -- L_fr = sum_k w_k (|dRe| + |dIm| + |log10((|H^|+e)/(|H|+e))| + 0.1 (1 - cos dphi)) / sum_k w_k
  (AVR ``Criterion`` lineage, weights (1, 1, 1, 0.1) as in the follow-up trainer).
* :func:`kk_loss` -- L_KK = mean_{p,k} w_k |beta_p(f_k) - beta_p^inf - Hilbert{sigma_p}(f_k)|  (reconstructed).
* :func:`time_loss` -- the TD-MLP's L1(h) + multi-resolution STFT loss.
Total for INFER-lite: L = L_fr(w) + lambda_KK L_KK, w = perceptual x hardware weighting (or 1).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from ..progress import progress
from .data import CabinData
from .kk import kk_residual

LOG_EPS = 1e-3


def frequency_loss(pred: torch.Tensor, true: torch.Tensor, weights: torch.Tensor,
                   lam=(1.0, 1.0, 1.0, 0.1)) -> torch.Tensor:
    """Weighted frequency-response loss L_fr (brief §2.2) on complex [B, F] responses."""
    l_re, l_im, l_a, l_p = lam
    d = pred - true
    mag_p, mag_t = pred.abs(), true.abs()
    log_term = torch.abs(torch.log10((mag_p + LOG_EPS) / (mag_t + LOG_EPS)))
    cos_term = 1 - torch.real(pred * true.conj()) / ((mag_p * mag_t) + 1e-8)
    per_bin = l_re * d.real.abs() + l_im * d.imag.abs() + l_a * log_term + l_p * cos_term
    return (per_bin * weights).sum(-1).mean() / weights.sum()


def kk_loss(sigma: torch.Tensor, beta: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Kramers-Kronig consistency of per-point (sigma, beta) [P, F]: weighted mean |beta - beta_inf - H{sigma}|."""
    r = kk_residual(sigma, beta)
    return (r.abs() * weights).mean(0).sum() / weights.sum()


def mr_stft_loss(pred: torch.Tensor, true: torch.Tensor, sizes=(64, 32, 16)) -> torch.Tensor:
    """Multi-resolution STFT loss (spectral convergence + log-magnitude L1), as auraloss, own torch code."""
    total = pred.new_zeros(())
    for n in sizes:
        win = torch.hann_window(n, device=pred.device)
        sp = torch.stft(pred, n, hop_length=n // 4, window=win, return_complex=True).abs()
        st = torch.stft(true, n, hop_length=n // 4, window=win, return_complex=True).abs()
        sc = torch.linalg.norm(st - sp) / (torch.linalg.norm(st) + 1e-8)
        lm = torch.mean(torch.abs(torch.log(sp + 1e-5) - torch.log(st + 1e-5)))
        total = total + sc + lm
    return total / len(sizes)


def time_loss(pred_h: torch.Tensor, true_h: torch.Tensor) -> torch.Tensor:
    """TD-MLP loss: L1 on the waveform (scaled to unit RMS) + MR-STFT."""
    rms = true_h.pow(2).mean().sqrt() + 1e-8
    return (pred_h - true_h).abs().mean() / rms + mr_stft_loss(pred_h, true_h)


@dataclass
class TrainResult:
    name: str
    model: torch.nn.Module
    losses: list = field(default_factory=list)
    kk_losses: list = field(default_factory=list)
    seconds: float = 0.0
    iters: int = 0


def train_model(model: torch.nn.Module, data: CabinData, train_idx: np.ndarray, *, iters: int, batch: int,
                lr: float = 2e-3, lr_final: float = 2e-4, weights: np.ndarray | None = None, lam_kk: float = 0.0,
                seed: int = 0, jitter: bool = True, name: str = "", show_progress: bool = True) -> TrainResult:
    """Adam with cosine decay lr -> lr_final and grad-clip 1 (brief §2.2), batches of receivers.

    Frequency models (INFER-lite, AVR-lite, FD-MLP) are trained with L_fr(w) (+ lam_kk L_KK for the
    field), the time model with :func:`time_loss`. Azimuth jitter of the rays per iteration (field only).
    """
    if iters < 1 or batch < 1:
        raise ValueError("iters and batch must be positive")
    train_idx = np.asarray(train_idx)
    if len(train_idx) == 0:
        raise ValueError("empty training split")
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    X = torch.as_tensor(data.receivers[train_idx], dtype=torch.float32)
    H = torch.as_tensor(data.H[train_idx], dtype=torch.complex64)
    h = torch.as_tensor(data.h[train_idx], dtype=torch.float32)
    w = torch.ones(data.n_freq) if weights is None else torch.as_tensor(weights, dtype=torch.float32)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=iters, eta_min=lr_final)
    res = TrainResult(name=name, model=model, iters=iters)
    t0 = time.perf_counter()
    bar = progress(range(iters), desc=f"train {name}", leave=False) if show_progress else range(iters)
    for _ in bar:
        idx = torch.randint(0, len(train_idx), (min(batch, len(train_idx)),), generator=gen)
        xb = X[idx]
        if model.kind == "time":
            loss = time_loss(model.time_response(xb), h[idx])
            kk = None
        else:
            if model.kind == "field":
                off = float(torch.rand((), generator=gen)) * 2 * math.pi / model.n_azi if jitter else 0.0
                pred = model(xb, azimuth_offset=off)
            else:
                pred = model(xb)
            loss = frequency_loss(pred, H[idx], w)
            kk = None
            if model.kind == "field" and getattr(model, "variant", "") == "infer":
                sigma, beta = model.sampled_sigma_beta()
                kk = kk_loss(sigma, beta, w)
                if lam_kk > 0:
                    loss = loss + lam_kk * kk
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        res.losses.append(float(loss.detach()))
        if kk is not None:
            res.kk_losses.append(float(kk.detach()))
    res.seconds = time.perf_counter() - t0
    model.eval()
    return res


@torch.no_grad()
def predict(model: torch.nn.Module, receivers: np.ndarray, chunk: int = 16) -> np.ndarray:
    """Complex frequency responses [M, F] (numpy) of a trained model at ``receivers`` [M, 3] (checked inside the room)."""
    X = model.check_receivers(receivers)
    out = [model(X[i:i + chunk]) for i in range(0, len(X), chunk)]
    return torch.cat(out).cpu().numpy().astype(np.complex128)


@torch.no_grad()
def field_sigma_beta(model, receivers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sigma, beta) [P, F] at every point the renderer samples for ``receivers`` (fixed ray grid)."""
    X = model.check_receivers(receivers)
    model.render(X)
    sigma, beta = model.sampled_sigma_beta()
    return sigma.cpu().numpy().astype(float), beta.cpu().numpy().astype(float)
