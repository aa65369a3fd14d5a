"""Evaluation metrics (brief §5.3): magnitude error, AVR Angle phase error, pre-time-of-flight energy, and
AVR's time-domain battery (Amp, envelope, T60, EDT, C50).

All frequency metrics are averaged over the band [f_lo, f_hi] = [40 Hz, 0.45 fs] on the evaluated
receivers; phases are only ever compared through wrapped differences or cos/sin (never unwrapped).
The magnitude floor ``eps`` is ``EPS_REL`` times a reference RMS magnitude: by default the RMS of the
ground truth passed in; pass ``ref_rms`` to put per-receiver maps and the table on the same scale
(the chapter passes 1, the RMS of its normalised training responses).
"""
from __future__ import annotations

import numpy as np
from scipy import signal

EPS_REL = 1e-3
"""Magnitude floor relative to the reference RMS magnitude, so that dB errors at deep notches stay finite."""


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


def _eps(true: np.ndarray, ref_rms: float | None) -> float:
    rms = np.sqrt(np.mean(np.abs(true) ** 2)) if ref_rms is None else float(ref_rms)
    return EPS_REL * rms


def magnitude_error_map(pred, true, ref_rms: float | None = None) -> np.ndarray:
    """|20 log10(|H^|+e) - 20 log10(|H|+e)| per receiver and bin (dB)."""
    pred, true = _check_pair(pred, true)
    eps = _eps(true, ref_rms)
    return np.abs(20 * np.log10(np.abs(pred) + eps) - 20 * np.log10(np.abs(true) + eps))


def angle_error_map(pred, true) -> np.ndarray:
    """AVR Angle error |cos a^ - cos a| + |sin a^ - sin a| per receiver and bin."""
    pred, true = _check_pair(pred, true)
    a, b = np.angle(pred), np.angle(true)
    return np.abs(np.cos(a) - np.cos(b)) + np.abs(np.sin(a) - np.sin(b))


def _band_mean(err: np.ndarray, mask, weights, axis_receivers: bool = False):
    w = np.ones(err.shape[-1]) if weights is None else np.asarray(weights, dtype=float)
    if mask is not None:
        w = w * np.asarray(mask, dtype=float)
    per = (err * w).sum(-1) / w.sum()
    return per if axis_receivers else float(np.mean(per))


def magnitude_error_db(pred, true, mask=None, weights=None, ref_rms: float | None = None) -> float:
    """mean_k w_k |20 log10(|H^|+e) - 20 log10(|H|+e)| in dB (weights normalised over the band)."""
    return _band_mean(magnitude_error_map(pred, true, ref_rms), mask, weights)


def angle_error(pred, true, mask=None, weights=None) -> float:
    """AVR Angle error mean(|cos a^ - cos a| + |sin a^ - sin a|); chance level 16/pi^2 = 1.621."""
    return _band_mean(angle_error_map(pred, true), mask, weights)


def wrapped_phase_error(pred, true, mask=None, weights=None) -> float:
    """mean |wrap(angle H^ - angle H)| in radians; chance level pi/2."""
    pred, true = _check_pair(pred, true)
    return _band_mean(np.abs(np.angle(pred * np.conj(true))), mask, weights)


def per_receiver_errors(pred, true, mask=None, ref_rms: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(magnitude error in dB, Angle error) of each receiver [M], averaged over the band ``mask``: the
    same functions as the table, so that with the same ``ref_rms`` their means are the table's values."""
    pred, true = np.atleast_2d(pred), np.atleast_2d(true)
    return (_band_mean(magnitude_error_map(pred, true, ref_rms), mask, None, axis_receivers=True),
            _band_mean(angle_error_map(pred, true), mask, None, axis_receivers=True))


def pre_arrival_energy(h: np.ndarray, arrival: np.ndarray, margin: int = 3) -> np.ndarray:
    """Fraction of each response's energy at samples n < floor(arrival) - margin (before the direct sound).

    ``h`` [M, N] time responses, ``arrival`` [M] direct-sound arrival in (fractional) samples. Samples
    at negative times (the second half of a circular response) are *not* counted here; see
    :func:`icml26.infer.kk.negative_time_energy`.
    """
    h = np.atleast_2d(np.asarray(h, dtype=float))
    start = np.floor(np.asarray(arrival)).astype(int) - int(margin)
    n = np.arange(h.shape[1])
    pre = (n[None, :] < start[:, None])
    e = h ** 2
    return (e * pre).sum(1) / np.maximum(e.sum(1), 1e-30)


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


# ------------------------------------------------------------ AVR's time-domain battery (brief §5.3) ---

def amplitude_error(pred, true, mask=None, bins: int = 32) -> float:
    """AVR Amp: mean |A^ - A| / A with A the moving sum of |H| over ``bins`` frequency bins (in the band)."""
    pred, true = _check_pair(np.atleast_2d(pred), np.atleast_2d(true))
    m = np.ones(pred.shape[-1], bool) if mask is None else np.asarray(mask, bool)
    kernel = np.ones(bins)
    a_p = np.apply_along_axis(lambda x: np.convolve(x, kernel, "valid"), -1, np.abs(pred[:, m]))
    a_t = np.apply_along_axis(lambda x: np.convolve(x, kernel, "valid"), -1, np.abs(true[:, m]))
    return float(np.mean(np.abs(a_p - a_t) / np.maximum(a_t, 1e-12)))


def envelope_error(h_pred, h_true) -> float:
    """Mean |env(h^) - env(h)| / max env(h) per response, env = |analytic signal| (scipy.signal.hilbert)."""
    h_pred, h_true = _check_pair(np.atleast_2d(h_pred), np.atleast_2d(h_true))
    e_p, e_t = np.abs(signal.hilbert(h_pred, axis=-1)), np.abs(signal.hilbert(h_true, axis=-1))
    return float(np.mean(np.mean(np.abs(e_p - e_t), -1) / np.maximum(e_t.max(-1), 1e-30)))


def schroeder_db(h: np.ndarray) -> np.ndarray:
    """Energy decay curve 10 log10(sum_{m>=n} h_m^2 / sum h^2) of each response [M, N] (dB)."""
    e = np.atleast_2d(np.asarray(h, dtype=float)) ** 2
    edc = np.cumsum(e[:, ::-1], axis=1)[:, ::-1]
    with np.errstate(divide="ignore"):
        return 10 * np.log10(np.maximum(edc, 1e-300) / np.maximum(edc[:, :1], 1e-300))


def decay_time(h: np.ndarray, fs: float, start_db: float, stop_db: float) -> np.ndarray:
    """Time (s) to decay by 60 dB extrapolated from a least-squares line through the Schroeder curve
    between ``start_db`` and ``stop_db`` (T60 from -5 to -25 dB: T20 x 3; EDT from 0 to -10 dB).
    NaN where the curve never reaches ``stop_db``."""
    edc = schroeder_db(h)
    t = np.arange(edc.shape[1]) / fs
    out = np.full(len(edc), np.nan)
    for i, c in enumerate(edc):
        sel = (c <= start_db) & (c >= stop_db)
        if sel.sum() >= 2 and c.min() <= stop_db:
            slope = np.polyfit(t[sel], c[sel], 1)[0]
            out[i] = -60.0 / slope if slope < 0 else np.nan
    return out


def clarity_db(h: np.ndarray, arrival: np.ndarray, fs: float, ms: float = 50.0) -> np.ndarray:
    """C50: 10 log10(energy in the first ``ms`` after the direct sound / energy after it), per response."""
    h = np.atleast_2d(np.asarray(h, dtype=float))
    e = h ** 2
    n = np.arange(h.shape[1])
    a = np.floor(np.asarray(arrival)).astype(int)
    early = (e * ((n[None] >= a[:, None]) & (n[None] < a[:, None] + int(round(ms * 1e-3 * fs))))).sum(1)
    late = (e * (n[None] >= a[:, None] + int(round(ms * 1e-3 * fs)))).sum(1)
    return 10 * np.log10(np.maximum(early, 1e-30) / np.maximum(late, 1e-30))


def time_battery(h_pred, h_true, arrival, fs: float) -> dict[str, float]:
    """AVR's time-domain metrics: envelope error, T60 error (%), EDT error (ms), C50 error (dB); means
    over responses (T60/EDT over the responses where both curves reach the fit range)."""
    h_pred, h_true = _check_pair(np.atleast_2d(h_pred), np.atleast_2d(h_true))
    t60_p, t60_t = decay_time(h_pred, fs, -5, -25), decay_time(h_true, fs, -5, -25)
    edt_p, edt_t = decay_time(h_pred, fs, 0, -10), decay_time(h_true, fs, 0, -10)
    c_p, c_t = clarity_db(h_pred, arrival, fs), clarity_db(h_true, arrival, fs)
    ok60, okedt = np.isfinite(t60_p) & np.isfinite(t60_t), np.isfinite(edt_p) & np.isfinite(edt_t)
    return {
        "envelope error": envelope_error(h_pred, h_true),
        "T60 error (%)": float(np.mean(100 * np.abs(t60_p - t60_t)[ok60] / t60_t[ok60])) if ok60.any() else float("nan"),
        "EDT error (ms)": float(np.mean(1e3 * np.abs(edt_p - edt_t)[okedt])) if okedt.any() else float("nan"),
        "C50 error (dB)": float(np.mean(np.abs(c_p - c_t))),
    }
