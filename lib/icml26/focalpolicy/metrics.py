"""Coherence and fidelity metrics of executed trajectories (brief §3.6; the paper's exact metrics are not public).

For an executed action sequence ``a_1..a_N`` replanned every ``n`` steps:

* boundary-jump ratio ``rho = J_b / J_i``: ``J_b`` the mean ``||a_j - a_{j-1}||`` over the first actions of
  new chunks (``j = kn``), ``J_i`` the same over all other steps; pooled over rollouts (1 for a smooth path);
* mean squared jerk ``mean ||Delta^2 a||^2`` (the actions are position deltas: the third difference of the
  executed positions);
* high-frequency energy ratio: the share of the orthonormal DCT-II energy of the action sequence above
  ``cutoff * N`` (default 1/3: periods below 6 steps, faster than the expert's wiggle);
* side switches after commitment (ChunkReach2D): sign changes of ``y`` while ``|x| < 0.5`` and ``|y| > 0.1``;
* sliced Wasserstein-2 between predicted and demonstrated chunks (POT).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.fft


def _seq(a) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"an action sequence must be shaped (N, D_a), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("action sequence contains NaN or infinite values")
    return a


def boundary_and_interior_jumps(actions, n_action_steps: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-step jump norms ``||a_j - a_{j-1}||`` split into chunk boundaries and interior steps."""
    if n_action_steps < 1:
        raise ValueError(f"n_action_steps must be >= 1, got {n_action_steps}")
    a = _seq(actions)
    if len(a) < 2:
        return np.zeros(0), np.zeros(0)
    jumps = np.linalg.norm(np.diff(a, axis=0), axis=1)          # jump j-1 -> j at index j-1
    j = np.arange(1, len(a))
    at_boundary = ((j - offset) % n_action_steps == 0)
    return jumps[at_boundary], jumps[~at_boundary]


def boundary_jump_ratio(sequences: Sequence, n_action_steps: int) -> float:
    """``rho = J_b / J_i`` pooled over the sequences (NaN when no boundary or interior step exists)."""
    b, i = [], []
    for s in sequences:
        jb, ji = boundary_and_interior_jumps(s, n_action_steps)
        b.append(jb)
        i.append(ji)
    b, i = np.concatenate(b) if b else np.zeros(0), np.concatenate(i) if i else np.zeros(0)
    if b.size == 0 or i.size == 0 or i.mean() == 0:
        return float("nan")
    return float(b.mean() / i.mean())


def mean_squared_jerk(sequences: Sequence) -> float:
    """Mean over sequences of ``mean_j ||Delta^2 a_j||^2``."""
    vals = [np.mean(np.sum(np.diff(_seq(s), n=2, axis=0) ** 2, axis=1)) for s in sequences if len(s) >= 3]
    return float(np.mean(vals)) if vals else float("nan")


def hf_energy_ratio(sequences: Sequence, cutoff: float = 1 / 3) -> float:
    """Mean over sequences of the DCT-II energy share above ``cutoff * N`` (mean removed per dim)."""
    if not 0 < cutoff < 1:
        raise ValueError(f"cutoff must lie in (0, 1), got {cutoff}")
    vals = []
    for s in sequences:
        a = _seq(s)
        if len(a) < 4:
            continue
        c = scipy.fft.dct(a - a.mean(0), type=2, norm="ortho", axis=0)
        e = (c ** 2).sum(1)
        k = int(np.ceil(cutoff * len(a)))
        if e.sum() > 0:
            vals.append(e[k:].sum() / e.sum())
    return float(np.mean(vals)) if vals else float("nan")


def dct_spectrum(sequences: Sequence, n_bins: int = 32) -> np.ndarray:
    """Mean DCT-II energy per normalised frequency bin (0 = DC, 1 = Nyquist), for spectra plots."""
    out = np.zeros(n_bins)
    count = 0
    for s in sequences:
        a = _seq(s)
        if len(a) < 4:
            continue
        e = (scipy.fft.dct(a - a.mean(0), type=2, norm="ortho", axis=0) ** 2).sum(1)
        f = np.arange(len(a)) / len(a)
        out += np.bincount(np.minimum((f * n_bins).astype(int), n_bins - 1), weights=e, minlength=n_bins) / len(a)
        count += 1
    return out / max(count, 1)


def side_switches(positions, x_band: float = 0.5, y_min: float = 0.1) -> int:
    """Sign changes of y while passing the obstacle (``|x| < x_band``, ``|y| > y_min``): a change of mode."""
    p = np.asarray(positions, dtype=float)
    sel = (np.abs(p[:, 0]) < x_band) & (np.abs(p[:, 1]) > y_min)
    s = np.sign(p[sel, 1])
    return int(np.sum(s[1:] != s[:-1])) if s.size > 1 else 0


def crossing_side(positions) -> float:
    """y at the first step with x >= 0 (the side taken around the obstacle); NaN when x never reaches 0."""
    p = np.asarray(positions, dtype=float)
    idx = np.nonzero(p[:, 0] >= 0)[0]
    return float(p[idx[0], 1]) if idx.size else float("nan")


def sliced_w2(x, y, n_projections: int = 200, seed: int = 0) -> float:
    """Sliced Wasserstein-2 distance between two point clouds (rows), via ``ot.sliced_wasserstein_distance``."""
    import ot

    x, y = np.asarray(x, dtype=float).reshape(len(x), -1), np.asarray(y, dtype=float).reshape(len(y), -1)
    return float(ot.sliced_wasserstein_distance(x, y, n_projections=n_projections, p=2, seed=seed))
