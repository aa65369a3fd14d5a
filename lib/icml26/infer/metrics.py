"""Evaluation metrics (brief §5.3): magnitude error, AVR Angle phase error, pre-time-of-flight energy, and
AVR's metric battery (:func:`avr_battery`: Angle, Amp, envelope, T60, EDT, C50 with AVR's own definitions).

The chapter's own frequency metrics are averaged over the band [f_lo, f_hi] = [40 Hz, 0.45 fs] on the evaluated
receivers (AVR's battery uses the full FFT, as its code); phases are only ever compared through wrapped differences or cos/sin (never unwrapped).
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


# ------------------------------------------------------------ AVR's metric battery (brief §5.3) ---

def _avr_decay_times(edc_db: np.ndarray, fs: float, init_db: float = -5.0, end_db: float = -25.0,
                     factor: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """(T60, EDT) in seconds from normalised energy-decay curves [M, N] (dB), as AVR's ``t60_EDT_cal``:
    EDT = 6 x the time of the sample nearest -10 dB; T60 = 3 x the time between -5 and -25 dB on the line
    fitted (least squares) between the samples nearest those levels. NaN where the curve has fewer than two
    samples in that range (a response that never decays 25 dB: AVR's code has no answer there)."""
    from scipy import stats

    t60, edt = np.full(len(edc_db), np.nan), np.full(len(edc_db), np.nan)
    for i, e in enumerate(edc_db):
        edt[i] = int(np.argmin(np.abs(e + 10.0))) / fs * 6.0
        a, b = int(np.argmin(np.abs(e - init_db))), int(np.argmin(np.abs(e - end_db)))
        if b - a >= 1:
            x = np.arange(a, b + 1) / fs
            slope, intercept = stats.linregress(x, e[a:b + 1])[:2]
            if slope < 0:
                t60[i] = factor * ((end_db - intercept) / slope - (init_db - intercept) / slope)
    return t60, edt


def avr_battery(h_pred, h_true, fs: float, window: int = 32) -> dict[str, float]:
    """AVR's evaluation metrics (official ``metric_cal``, transcribed without its multi-resolution STFT term),
    on time responses [M, N]: ``AVR Angle`` = mean |cos a^ - cos a| + mean |sin a^ - sin a| over every bin of
    the full FFT; ``AVR Amp`` = mean |A^ - A| / A with A the ``window``-bin moving sum of |FFT| (scipy
    ``convolve1d``, reflected edges); ``AVR envelope`` = mean |env^ - env| / max env (Hilbert envelope);
    ``AVR T60 (%)`` = 100 mean |T60^ - T60| / T60 and ``AVR EDT (ms)`` from :func:`_avr_decay_times` on the
    Schroeder curve 10 log10(sum_{m>=n} h_m^2 + 1e-9) normalised at n = 0; ``AVR C50 (dB)`` with the 50 ms
    counted **from t = 0** (the response's first sample, as AVR), not from the direct sound. Means over
    responses (T60/EDT over the finite ones)."""
    from scipy import ndimage

    h_pred, h_true = _check_pair(np.atleast_2d(h_pred), np.atleast_2d(h_true))
    Fp, Ft = np.fft.fft(h_pred, axis=-1), np.fft.fft(h_true, axis=-1)
    a_p, a_t = np.angle(Fp), np.angle(Ft)
    angle = float(np.mean(np.abs(np.cos(a_t) - np.cos(a_p))) + np.mean(np.abs(np.sin(a_t) - np.sin(a_p))))
    amp_t = ndimage.convolve1d(np.abs(Ft), np.ones(window), axis=-1)
    amp_p = ndimage.convolve1d(np.abs(Fp), np.ones(window), axis=-1)
    amp = float(np.mean(np.abs(amp_t - amp_p) / np.maximum(amp_t, 1e-30)))
    env_t, env_p = np.abs(signal.hilbert(h_true, axis=-1)), np.abs(signal.hilbert(h_pred, axis=-1))
    env = float(np.mean(np.abs(env_t - env_p) / np.maximum(env_t.max(-1, keepdims=True), 1e-30)))

    def edc(h):
        e = 10.0 * np.log10(np.cumsum(h[:, ::-1] ** 2 + 1e-9, axis=-1)[:, ::-1])
        return e - e[:, :1]

    t60_t, edt_t = _avr_decay_times(edc(h_true), fs)
    t60_p, edt_p = _avr_decay_times(edc(h_pred), fs)
    ok = np.isfinite(t60_t) & np.isfinite(t60_p)
    n50 = int(0.05 * fs)

    def c50(h):
        early, late = (h[:, :n50] ** 2).sum(-1), (h[:, n50:] ** 2).sum(-1)
        return 10.0 * np.log10(np.maximum(early, 1e-30) / np.maximum(late, 1e-30))

    return {
        "AVR Angle": angle, "AVR Amp": amp, "AVR envelope": env,
        "AVR T60 (%)": float(np.mean(100 * np.abs(t60_t - t60_p)[ok] / t60_t[ok])) if ok.any() else float("nan"),
        "AVR EDT (ms)": float(np.mean(1e3 * np.abs(edt_t - edt_p))),
        "AVR C50 (dB)": float(np.mean(np.abs(c50(h_true) - c50(h_pred)))),
    }
