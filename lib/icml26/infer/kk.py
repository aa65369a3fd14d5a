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

NUISANCES = ("linear", "constant", "none")
MAX_SLOPE = 2 * np.pi / 343.0
"""Largest free slope of beta in f (rad per metre per Hz): 2 pi / c, an advance that exactly cancels the
geometric propagation delay exp(-j 2 pi f du / c) of the slab; anything steeper is faster than
instantaneous, i.e. acausal."""


def _hilbert_of(sigma):
    if isinstance(sigma, torch.Tensor):
        key = (sigma.shape[-1], sigma.dtype, sigma.device)
        if key not in _K_CACHE:
            _K_CACHE[key] = torch.as_tensor(hilbert_matrix(sigma.shape[-1]), dtype=sigma.dtype, device=sigma.device)
        return sigma @ _K_CACHE[key]
    return hilbert_onesided(np.asarray(sigma, dtype=float))


def kk_residual(sigma, beta, freqs=None, nuisance: str = "linear"):
    """Per-point KK residual on the interior bins k = 1..F-2: r = beta - H{sigma} - (free nuisance term).

    ``sigma``, ``beta`` [..., F] on the one-sided grid (numpy or torch; torch stays differentiable).
    The nuisance the relation leaves free (brief §7 pitfall 3, corrected):

    * ``"linear"`` (default): a per-point term b f linear in frequency, a pure delay of the slab (the
      1/c_inf term of the subtracted acoustic KK relation). It is fitted per point by least squares on
      the interior bins and clipped to b <= :data:`MAX_SLOPE`, so a delay of any length is free while an
      advance beyond the slab's own propagation delay (acausal) is penalised. A constant phase
      offset exp(j c) is *not* free: it is acausal (its impulse response is c-weighted sinc tails on
      both sides of t = 0) and projects only partly onto f.
    * ``"constant"``: the per-point frequency mean is removed (the previous revision of this chapter):
      it frees the acausal constant and penalises the causal delay. Kept for the design study.
    * ``"none"``: nothing removed.

    DC and Nyquist are excluded: H{sigma} vanishes there identically and INFER-lite pins beta to 0
    there (a real response has a real DC and Nyquist gain). ``freqs`` [F] in Hz (default: bin index,
    for which :data:`MAX_SLOPE` has no meaning and the slope is not clipped).
    """
    if nuisance not in NUISANCES:
        raise ValueError(f"nuisance must be one of {NUISANCES}, got {nuisance!r}")
    torch_in = isinstance(sigma, torch.Tensor)
    if not torch_in:
        sigma, beta = np.asarray(sigma, dtype=float), np.asarray(beta, dtype=float)
    if sigma.shape != beta.shape:
        raise ValueError(f"sigma and beta must have the same shape, got {tuple(sigma.shape)} and {tuple(beta.shape)}")
    F = sigma.shape[-1]
    if F < 4:
        raise ValueError("need at least 4 frequency bins")
    r = (beta - _hilbert_of(sigma))[..., 1:-1]
    if nuisance == "constant":
        return r - r.mean(-1, keepdim=True) if torch_in else r - r.mean(-1, keepdims=True)
    if nuisance == "none":
        return r
    if freqs is None:
        f, cap = np.arange(1, F - 1, dtype=float), np.inf
    else:
        freqs = np.asarray(freqs, dtype=float)
        if freqs.shape != (F,):
            raise ValueError(f"freqs must have the {F} bins of sigma, got shape {freqs.shape}")
        f, cap = freqs[1:-1], MAX_SLOPE
    if torch_in:
        ft = torch.as_tensor(f, dtype=r.dtype, device=r.device)
        b = (r * ft).sum(-1, keepdim=True) / (ft * ft).sum()
        return r - torch.clamp(b, max=cap) * ft
    b = (r * f).sum(-1, keepdims=True) / (f * f).sum()
    return r - np.minimum(b, cap) * f


def kk_relative_residual(sigma, beta, freqs=None, nuisance: str = "linear", weights=None) -> float:
    """||r|| / ||beta|| over points and interior bins (brief §5.3), r = :func:`kk_residual`.

    ``weights`` [P] (optional): per-point weights (e.g. the rendering weight alpha |T| of each sampled
    point), applied to both norms.
    """
    sigma = np.asarray(sigma, dtype=float)
    beta = np.asarray(beta, dtype=float)
    r = kk_residual(sigma, beta, freqs, nuisance)
    b = beta[..., 1:-1]
    if weights is not None:
        w = np.sqrt(np.asarray(weights, dtype=float))[:, None]
        r, b = r * w, b * w
    return float(np.linalg.norm(r) / max(np.linalg.norm(b), 1e-12))


def negative_time_energy(H, n_fft: int) -> np.ndarray:
    """Fraction of the energy of h = irfft(H, n_fft) at negative times (the second half of the circle,
    n >= n_fft/2): zero for a causal response shorter than n_fft/2. ``H`` [..., n_fft/2 + 1]."""
    H = np.asarray(H)
    if H.shape[-1] != n_fft // 2 + 1:
        raise ValueError(f"H must have n_fft/2+1 = {n_fft // 2 + 1} bins, got {H.shape[-1]}")
    e = np.fft.irfft(H, n_fft, axis=-1) ** 2
    return e[..., n_fft // 2:].sum(-1) / np.maximum(e.sum(-1), 1e-30)


def slab_factor(sigma, beta, du: float, freqs, c: float = 343.0) -> np.ndarray:
    """The slab's transfer function with its own propagation: exp((-sigma + j beta) du) exp(-j 2 pi f du / c)."""
    sigma, beta, freqs = (np.asarray(x, dtype=float) for x in (sigma, beta, freqs))
    return np.exp((-sigma + 1j * beta) * du) * np.exp(-2j * np.pi * freqs * du / c)


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
