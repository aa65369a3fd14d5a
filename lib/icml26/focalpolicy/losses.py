"""The Foresight Composite Objective (FCO, brief §2.4) and its released / unused variants.

With ``n = n_action_steps``, ``T`` the horizon and ``f_theta(x_t, t) = x_t + (1 - t) v_theta(x_t, t)``:

    L_time = mean_{b, k in window, d} (f_theta - sg f_r)^2          (proximal chunk: window = indices 0..n-1)
    L_freq = mean_b sum_{k < T, d} (DCT[f_theta] - DCT[A])^2          (all chunks, against the ground truth)
    L      = L_time + w_f L_freq,  w_f = 1e-4.

By Parseval (``C`` orthonormal) ``L_freq`` is exactly the full-horizon x-prediction SSE, so each distal
element is weighted ``w_f n D_a`` times a proximal one (1.6e-3 at ``D_a = 4``). The *adaptive* variant of
the released code (not called by its ``compute_loss``) weights each frequency by ``softmax_k(D^2)``
(detached) and is genuinely frequency-selective.
"""
from __future__ import annotations

import torch

from ._checks import check_chunk
from .dct import dct_ortho


def time_loss(f_t: torch.Tensor, f_r: torch.Tensor, window: tuple[int, int]) -> torch.Tensor:
    """``mean((f_t - f_r)^2)`` over the chunk indices ``window = (start, stop)``."""
    a, b = window
    if not 0 <= a < b <= f_t.shape[1]:
        raise ValueError(f"time-loss window {window} does not fit a horizon of {f_t.shape[1]}")
    return ((f_t[:, a:b] - f_r[:, a:b]) ** 2).mean()


def freq_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The released frequency loss: per-sample sum over (frequency, dim) of the squared orthonormal DCT-II
    difference, averaged over the batch (equal to the full-horizon SSE by Parseval).

    Computed as ``DCT[pred - target]`` (the DCT is linear): one transform instead of two, the same value.
    """
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)} and {tuple(target.shape)}")
    diff = pred - target
    return (dct_ortho(diff) ** 2).sum() / diff.shape[0]


def adaptive_freq_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The unused adaptive variant: ``mean_{b,d} sum_k softmax_k(D^2)_{k,d} D^2_{k,d}`` (weights detached)."""
    d2 = (dct_ortho(pred) - dct_ortho(target)) ** 2
    w = torch.softmax(d2.detach(), dim=1)
    return (w * d2).sum(dim=1).mean()


def fco_loss(f_t: torch.Tensor, f_r: torch.Tensor, target: torch.Tensor, w_f: float, n_action_steps: int,
             window_start: int = 0, freq: str = "ortho") -> tuple[torch.Tensor, dict[str, float]]:
    """``L_time`` over ``[window_start, window_start + n)`` plus ``w_f`` times the frequency loss.

    ``freq``: ``"ortho"`` (the released loss) or ``"adaptive"`` (the unused softmax-weighted one).
    Returns the loss and its parts (floats) for logging.
    """
    for name, x in (("f_t", f_t), ("f_r", f_r), ("target", target)):
        check_chunk(x, name)
    if not (isinstance(w_f, (int, float)) and w_f >= 0):
        raise ValueError(f"w_f must be a number >= 0, got {w_f!r}")
    if freq not in ("ortho", "adaptive"):
        raise ValueError(f"freq must be 'ortho' or 'adaptive', got {freq!r}")
    lt = time_loss(f_t, f_r, (window_start, window_start + n_action_steps))
    lf = freq_loss(f_t, target) if freq == "ortho" else adaptive_freq_loss(f_t, target)
    return lt + w_f * lf, {"time": float(lt.detach()), "freq": float(lf.detach())}
