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


def time_loss(f_t: torch.Tensor, f_r: torch.Tensor, window: tuple[int, int], members: int = 1) -> torch.Tensor:
    """``mean((f_t - f_r)^2)`` over the chunk indices ``window = (start, stop)``, one value per member
    (``members`` blocks of rows; shape ``(members,)``)."""
    a, b = window
    if not 0 <= a < b <= f_t.shape[1]:
        raise ValueError(f"time-loss window {window} does not fit a horizon of {f_t.shape[1]}")
    return ((f_t[:, a:b] - f_r[:, a:b]) ** 2).reshape(members, -1).mean(1)


def _freq_per_member(diff: torch.Tensor, freq: str, members: int) -> torch.Tensor:
    """The frequency loss of each member's rows of ``diff = f - A`` (``DCT[f] - DCT[A] = DCT[f - A]``, linear)."""
    d2 = dct_ortho(diff) ** 2
    if freq == "ortho":                                   # per-sample sum over (k, d), mean over the batch
        return d2.sum(dim=(1, 2)).reshape(members, -1).mean(1)
    return (torch.softmax(d2.detach(), dim=1) * d2).sum(dim=1).reshape(members, -1).mean(1)   # adaptive


def freq_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The released frequency loss: per-sample sum over (frequency, dim) of the squared orthonormal DCT-II
    difference, averaged over the batch (equal to the full-horizon SSE by Parseval).

    Computed as ``DCT[pred - target]`` (the DCT is linear): one transform instead of two, the same value.
    """
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)} and {tuple(target.shape)}")
    return _freq_per_member(pred - target, "ortho", 1)[0]


def adaptive_freq_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The unused adaptive variant: ``mean_{b,d} sum_k softmax_k(D^2)_{k,d} D^2_{k,d}`` (weights detached)."""
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)} and {tuple(target.shape)}")
    return _freq_per_member(pred - target, "adaptive", 1)[0]


def fco_loss(f_t: torch.Tensor, f_r: torch.Tensor, target: torch.Tensor, w_f: float | torch.Tensor, n_action_steps: int,
             window_start: int = 0, freq: str = "ortho", full_horizon: bool = False,
             members: int = 1) -> tuple[torch.Tensor, dict[str, float]]:
    """``L_time`` over ``[window_start, window_start + n)`` plus ``w_f`` times the frequency loss: the one
    implementation of the FCO, called by `policies.FocalPolicy.compute_loss` and by the chapter's checks.

    ``freq``: ``"ortho"`` (the released loss) or ``"adaptive"`` (the unused softmax-weighted one).
    ``full_horizon``: the -FCO ablation (the time loss on the whole horizon, no frequency term).
    ``members``: a seed ensemble stacks its members along the batch (member-major rows); each member's loss
    is computed on its own rows and the returned loss is their mean (each member gets its own gradient
    after multiplying by ``members``); ``w_f`` is one number or one value per member.
    Returns the loss and its parts (floats, means over members) for logging.
    """
    for name, x in (("f_t", f_t), ("f_r", f_r), ("target", target)):
        check_chunk(x, name)
    w = torch.as_tensor(w_f, dtype=f_t.dtype, device=f_t.device).reshape(-1)
    if not torch.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"w_f must be a number >= 0 (or one per member), got {w_f!r}")
    if w.numel() not in (1, members):
        raise ValueError(f"w_f has {w.numel()} values for {members} member(s)")
    if freq not in ("ortho", "adaptive"):
        raise ValueError(f"freq must be 'ortho' or 'adaptive', got {freq!r}")
    if members < 1 or f_t.shape[0] % members:
        raise ValueError(f"a batch of {f_t.shape[0]} rows does not split into {members} member(s)")
    S = members
    if full_horizon:
        lt = time_loss(f_t, f_r, (0, f_t.shape[1]), S)
        lf = torch.zeros_like(lt)
    else:
        lt = time_loss(f_t, f_r, (window_start, window_start + n_action_steps), S)
        lf = _freq_per_member(f_t - target, freq, S)
    loss = (lt + w * lf).mean()
    return loss, {"time": float(lt.mean().detach()), "freq": float(lf.mean().detach())}
