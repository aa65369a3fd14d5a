"""Evaluation metrics (brief §5.3): magnitude error, AVR Angle phase error, pre-time-of-flight energy.

All frequency metrics are averaged over the band [f_lo, f_hi] = [40 Hz, 0.45 fs] on the evaluated
receivers; phases are only ever compared through wrapped differences or cos/sin (never unwrapped).
"""
from __future__ import annotations

import numpy as np

EPS_REL = 1e-3
"""Magnitude floor relative to the RMS ground-truth magnitude, so that dB errors at deep notches stay finite."""


def band_mask(freqs: np.ndarray, fs: float, f_lo: float = 40.0, f_hi_frac: float = 0.45) -> np.ndarray:
    freqs = np.asarray(freqs)
    return (freqs >= f_lo) & (freqs <= f_hi_frac * fs)


def _check_pair(pred: np.ndarray, true: np.ndarray):
    pred, true = np.asarray(pred), np.asarray(true)
    if pred.shape != true.shape:
        raise ValueError(f"prediction shape {pred.shape} != ground-truth shape {true.shape}")
    if not (np.all(np.isfinite(pred)) and np.all(np.isfinite(true))):
        raise ValueError("responses contain NaN or infinite values")
    return pred, true


def magnitude_error_db(pred, true, mask=None, weights=None) -> float:
    """mean_k w_k |20 log10(|H^|+e) - 20 log10(|H|+e)| in dB (weights normalised over the band)."""
    pred, true = _check_pair(pred, true)
    eps = EPS_REL * np.sqrt(np.mean(np.abs(true) ** 2))
    err = np.abs(20 * np.log10(np.abs(pred) + eps) - 20 * np.log10(np.abs(true) + eps))
    return _band_mean(err, mask, weights)


def angle_error(pred, true, mask=None, weights=None) -> float:
    """AVR Angle error mean(|cos a^ - cos a| + |sin a^ - sin a|); chance level 16/pi^2 = 1.621."""
    pred, true = _check_pair(pred, true)
    a, b = np.angle(pred), np.angle(true)
    err = np.abs(np.cos(a) - np.cos(b)) + np.abs(np.sin(a) - np.sin(b))
    return _band_mean(err, mask, weights)


def wrapped_phase_error(pred, true, mask=None, weights=None) -> float:
    """mean |wrap(angle H^ - angle H)| in radians; chance level pi/2."""
    pred, true = _check_pair(pred, true)
    err = np.abs(np.angle(pred * np.conj(true)))
    return _band_mean(err, mask, weights)


def _band_mean(err: np.ndarray, mask, weights) -> float:
    w = np.ones(err.shape[-1]) if weights is None else np.asarray(weights, dtype=float)
    if mask is not None:
        w = w * np.asarray(mask, dtype=float)
    return float(np.sum(err * w) / (err.shape[0] * np.sum(w)) if err.ndim == 2 else np.sum(err * w) / np.sum(w))


def pre_arrival_energy(h: np.ndarray, arrival: np.ndarray, margin: int = 3) -> np.ndarray:
    """Fraction of each response's energy at samples n < floor(arrival) - margin (before the direct sound).

    ``h`` [M, N] time responses, ``arrival`` [M] direct-sound arrival in (fractional) samples.
    """
    h = np.atleast_2d(np.asarray(h, dtype=float))
    start = np.floor(np.asarray(arrival)).astype(int) - int(margin)
    n = np.arange(h.shape[1])
    pre = (n[None, :] < start[:, None])
    e = h ** 2
    return (e * pre).sum(1) / np.maximum(e.sum(1), 1e-30)


def per_receiver_errors(pred, true, mask=None) -> tuple[np.ndarray, np.ndarray]:
    """(magnitude error in dB, Angle error) of each receiver [M], averaged over the band ``mask``."""
    pred, true = _check_pair(np.atleast_2d(pred), np.atleast_2d(true))
    m = np.ones(pred.shape[-1], bool) if mask is None else np.asarray(mask, bool)
    eps = EPS_REL * np.sqrt(np.mean(np.abs(true) ** 2))
    mag = np.abs(20 * np.log10(np.abs(pred) + eps) - 20 * np.log10(np.abs(true) + eps))[:, m].mean(1)
    a, b = np.angle(pred), np.angle(true)
    ang = (np.abs(np.cos(a) - np.cos(b)) + np.abs(np.sin(a) - np.sin(b)))[:, m].mean(1)
    return mag, ang


def early_energy_removed(h: np.ndarray, arrival: np.ndarray, margin: int = 3, window: int = 10) -> np.ndarray:
    """Fraction of each response's *early* energy (samples n < floor(arrival) + window, i.e. the direct
    sound and what precedes it) that a causal mask starting at floor(arrival) - margin would delete.
    A negative ``margin`` is a mask that starts after the arrival."""
    h = np.atleast_2d(np.asarray(h, dtype=float))
    a = np.floor(np.asarray(arrival)).astype(int)
    n = np.arange(h.shape[1])
    e = h ** 2
    removed = (e * (n[None, :] < (a - int(margin))[:, None])).sum(1)
    early = (e * (n[None, :] < (a + int(window))[:, None])).sum(1)
    return removed / np.maximum(early, 1e-30)
