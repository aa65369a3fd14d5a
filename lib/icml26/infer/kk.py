"""Kramers-Kronig (Hilbert-transform) relations and the spectral weighting (brief §2.2, §3).

Sign convention: numpy's DFT, X(w) = sum_n x_n exp(-j w n). Then

* a causal minimum-phase H has  angle H = - Hilbert{ ln|H| }                     (brief §3.3)
* a passive slab factor tau(f) = exp(-sigma(f) du) exp(+j beta(f) du) (INFER's transmittance, §2.1)
  that is minimum phase has  beta = + Hilbert{ sigma }  independent of du        (brief §2.2, KK)
* any causal sequence supported in [0, N/2) has  Im H = - Hilbert{ Re H }  on the N-point grid
  (so an N-sample impulse response needs 2x zero padding)                      (brief §3.4)

``Hilbert`` here acts along the frequency axis of a periodic (full-circle) spectrum: the imaginary
part of the analytic signal, as in ``scipy.signal.hilbert``, with H{cos n w} = sin n w for 0 < n < N/2.
A function given on the one-sided grid k = 0..N/2 is first extended evenly to the full circle.
The KK loss and the perceptual / hardware weighting are *reconstructed* (brief §2.2: [recon]).
"""
from __future__ import annotations

import numpy as np
import torch
from scipy import signal


def _analytic_multiplier(n: int) -> np.ndarray:
    h = np.zeros(n)
    h[0] = 1.0
    if n % 2 == 0:
        h[n // 2] = 1.0
        h[1:n // 2] = 2.0
    else:
        h[1:(n + 1) // 2] = 2.0
    return h


def even_extension(x: np.ndarray | torch.Tensor):
    """[x_0 .. x_{F-1}] on the one-sided grid -> [x_0 .. x_{F-1}, x_{F-2} .. x_1] (length N = 2F - 2)."""
    if isinstance(x, torch.Tensor):
        return torch.cat([x, torch.flip(x[..., 1:-1], dims=[-1])], dim=-1)
    return np.concatenate([x, x[..., 1:-1][..., ::-1]], axis=-1)


def hilbert_circular(x: np.ndarray) -> np.ndarray:
    """Hilbert transform of a real periodic sequence along the last axis (= Im scipy.signal.hilbert)."""
    return np.imag(signal.hilbert(np.asarray(x, dtype=float), axis=-1))


def hilbert_onesided(x: np.ndarray | torch.Tensor):
    """Hilbert transform of a real function of frequency given on the one-sided grid [..., F].

    Even extension to the full circle (N = 2F - 2), FFT, multiply by [1, 2, .., 2, 1, 0, .., 0], IFFT,
    imaginary part, first F values. Works on numpy arrays and (differentiably) on torch tensors.
    """
    if isinstance(x, torch.Tensor):
        if x.shape[-1] < 3:
            raise ValueError("need at least 3 frequency bins")
        ext = even_extension(x)
        n = ext.shape[-1]
        mult = torch.as_tensor(_analytic_multiplier(n), dtype=ext.dtype, device=ext.device)
        z = torch.fft.ifft(torch.fft.fft(ext, dim=-1) * mult, dim=-1)
        return z.imag[..., : x.shape[-1]]
    x = np.asarray(x, dtype=float)
    if x.shape[-1] < 3:
        raise ValueError("need at least 3 frequency bins")
    return hilbert_circular(even_extension(x))[..., : x.shape[-1]]


def hilbert_matrix(n_freq: int) -> np.ndarray:
    """The one-sided Hilbert transform as a real [F, F] matrix K: hilbert_onesided(x) = x @ K (it is linear)."""
    return hilbert_onesided(np.eye(n_freq))


_K_CACHE: dict[tuple, torch.Tensor] = {}


def kk_residual(sigma, beta, remove_constant: bool = True):
    """Per-point KK residual r = beta - beta_inf - Hilbert{sigma} on the one-sided grid [..., F].

    ``beta_inf`` is a per-point constant (subtracted as the frequency mean when ``remove_constant``):
    a constant phase-velocity offset is not constrained by KK (brief §7, pitfall 3). Torch inputs use
    the cached matrix form (:func:`hilbert_matrix`), which is differentiable and fast.
    """
    if isinstance(sigma, torch.Tensor):
        key = (sigma.shape[-1], sigma.dtype, sigma.device)
        if key not in _K_CACHE:
            _K_CACHE[key] = torch.as_tensor(hilbert_matrix(sigma.shape[-1]), dtype=sigma.dtype, device=sigma.device)
        r = beta - sigma @ _K_CACHE[key]
        return r - r.mean(-1, keepdim=True) if remove_constant else r
    r = np.asarray(beta, dtype=float) - hilbert_onesided(np.asarray(sigma, dtype=float))
    return r - r.mean(-1, keepdims=True) if remove_constant else r


def kk_relative_residual(sigma, beta) -> float:
    """||beta - beta_inf - H{sigma}|| / ||beta - mean beta|| over all points and bins (brief §5.3)."""
    sigma = np.asarray(sigma, dtype=float)
    beta = np.asarray(beta, dtype=float)
    r = kk_residual(sigma, beta)
    b = beta - beta.mean(-1, keepdims=True)
    return float(np.linalg.norm(r) / max(np.linalg.norm(b), 1e-12))


def one_pole_slab(a: float, n_fft: int, du: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """An analytic causal, minimum-phase slab tau(w) = (1-a) / (1 - a e^{-jw}) on the one-sided grid.

    Returns (sigma, beta) per unit length with tau = exp(-sigma du) exp(+j beta du).
    """
    if not 0 <= a < 1:
        raise ValueError(f"the slab is causal and stable only for 0 <= a < 1, got {a}")
    w = 2 * np.pi * np.arange(n_fft // 2 + 1) / n_fft
    tau = (1 - a) / (1 - a * np.exp(-1j * w))
    return -np.log(np.abs(tau)) / du, np.angle(tau) / du


def reim_kk_residual(h: np.ndarray, n_fft: int) -> float:
    """Relative residual of Im H = -Hilbert{Re H} for H = DFT_{n_fft}(h), over a batch of responses.

    Exact (to rounding) when every response fits in the first half of the n_fft grid.
    """
    h = np.atleast_2d(np.asarray(h, dtype=float))
    if n_fft < h.shape[-1]:
        raise ValueError(f"n_fft={n_fft} is smaller than the response length {h.shape[-1]}")
    H = np.fft.fft(h, n_fft, axis=-1)
    pred = -hilbert_circular(H.real)
    return float(np.linalg.norm(H.imag - pred) / np.linalg.norm(H.imag))


def minimum_phase_phase(magnitude: np.ndarray, n_fft: int) -> np.ndarray:
    """Phase of the minimum-phase response with the given one-sided magnitude: -Hilbert{ln|H|}."""
    mag = np.asarray(magnitude, dtype=float)
    if mag.shape[-1] != n_fft // 2 + 1:
        raise ValueError(f"magnitude must have n_fft/2+1 = {n_fft // 2 + 1} bins, got {mag.shape[-1]}")
    return -hilbert_onesided(np.log(np.maximum(mag, 1e-12)))


# ---------------------------------------------------------------- spectral weighting (brief §2.2) ---

def a_weighting_db(f: np.ndarray) -> np.ndarray:
    """IEC 61672 A-weighting A(f) = 20 log10 R_A(f) + 2.00 dB (R_A of brief §2.2); -inf at f = 0."""
    f = np.asarray(f, dtype=float)
    f2 = f ** 2
    with np.errstate(divide="ignore"):
        ra = (12194.0 ** 2 * f2 ** 2) / ((f2 + 20.6 ** 2) * np.sqrt((f2 + 107.7 ** 2) * (f2 + 737.9 ** 2)) * (f2 + 12194.0 ** 2))
        return 20 * np.log10(ra) + 2.00


def perceptual_weight(f: np.ndarray, w_min: float = 0.05) -> np.ndarray:
    """w_perc = max(10^(A(f)/20), w_min): A-weighting as an amplitude weight, floored so that the modal
    region below ~200 Hz is not ignored (brief §7, pitfall 9)."""
    return np.maximum(10 ** (a_weighting_db(f) / 20), w_min)


def hardware_weight(f: np.ndarray, fc: float, depth: float = 0.7, octaves: float = 0.5) -> np.ndarray:
    """w_hw = 1 - depth * exp(-log2(f/fc)^2 / (2 b^2)): de-emphasise the loudspeaker crossover band."""
    if not 0 <= depth < 1:
        raise ValueError(f"depth must be in [0, 1), got {depth}")
    f = np.maximum(np.asarray(f, dtype=float), 1e-6)
    return 1 - depth * np.exp(-np.log2(f / fc) ** 2 / (2 * octaves ** 2))


def spectral_weights(f: np.ndarray, fc: float, perceptual: bool = True, hardware: bool = True,
                     w_min: float = 0.05, depth: float = 0.7, octaves: float = 0.5) -> np.ndarray:
    """w_k = w_perc * w_hw normalised to mean 1 (uniform weights when both are off)."""
    w = np.ones_like(np.asarray(f, dtype=float))
    if perceptual:
        w = w * perceptual_weight(f, w_min)
    if hardware:
        w = w * hardware_weight(f, fc, depth, octaves)
    return w / w.mean()
