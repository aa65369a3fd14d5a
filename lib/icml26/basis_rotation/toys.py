"""Quadratic toys of the paper's intuition section (brief section 3).

Objective ``f(w) = 1/2 w^T H w`` with ``H = Q diag(lam) Q^T``; ``Q = I`` is the *aligned* problem,
a random or 2-D rotation the *misaligned* one. Stochastic gradients
``g = Q (diag(lam) Q^T w + sigma diag(lam)^{1/2} xi)`` have covariance ``sigma^2 H`` (Fisher ~
Hessian, so the gradient statistics reveal the eigenbasis), and with the same ``xi`` the rotated
problem is exactly the aligned one seen in coordinates ``Q``. Delay: the gradient applied at step
``t`` was computed at ``w_{t - tau}`` (a single stage with delay ``tau``).

Every method here is :class:`~icml26.basis_rotation.optim.BasisRotationAdam` on the ``d x 1``
weight: ``"adam"`` freezes the identity basis (plain Adam), ``"exact"`` freezes ``U = Q`` (Adam in
the exact eigenbasis), ``"br"`` estimates the basis with Algorithm 2.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import torch

from .optim import BasisRotationAdam

TOY_METHODS = ("adam", "exact", "br")


def rotation2d(theta: float) -> np.ndarray:
    """The 2 x 2 rotation by ``theta`` radians."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def random_rotation(d: int, seed: int) -> np.ndarray:
    """A Haar-random orthogonal ``d x d`` matrix (QR of a Gaussian with sign fix)."""
    if d < 1:
        raise ValueError("d must be >= 1")
    z = np.random.default_rng(seed).standard_normal((d, d))
    q, r = np.linalg.qr(z)
    return q * np.sign(np.diag(r))


@dataclass
class QuadraticRun:
    loss: np.ndarray          # f(w_t), t = 0..steps
    path: np.ndarray          # iterates, (steps + 1, d)


def run_quadratic(lam, Q, w0, *, method: str, tau: int, steps: int, lr: float = 1e-2,
                  betas: tuple[float, float] = (0.9, 0.999), sigma: float = 0.05, freq: int = 10,
                  shampoo_beta: float | None = None, seed: int = 0) -> QuadraticRun:
    """Adam / exact-eigenbasis Adam / basis rotation on ``1/2 w^T Q diag(lam) Q^T w`` with delay ``tau``.

    float64 throughout; no weight decay; ``xi`` drawn from ``numpy.random.default_rng(seed)``.
    """
    if method not in TOY_METHODS:
        raise ValueError(f"method must be one of {TOY_METHODS}, got {method!r}")
    if tau < 0 or steps < 1:
        raise ValueError("tau must be >= 0 and steps >= 1")
    lam = np.asarray(lam, dtype=float)
    Q = np.asarray(Q, dtype=float)
    d = lam.size
    if Q.shape != (d, d) or np.asarray(w0).shape != (d,):
        raise ValueError(f"shapes: lam ({d},), Q ({d}, {d}), w0 ({d},) expected")
    if np.any(lam <= 0):
        raise ValueError("the Hessian eigenvalues lam must be positive")
    xi = np.random.default_rng(seed).standard_normal((steps, d))
    Qt = torch.tensor(Q)
    lam_t = torch.tensor(lam)
    noise = torch.tensor(sigma * np.sqrt(lam) * xi)
    w = torch.nn.Parameter(torch.tensor(np.asarray(w0, dtype=float)).reshape(d, 1))
    opt = BasisRotationAdam([w], lr=lr, betas=betas, weight_decay=0.0, freq=freq, shampoo_beta=shampoo_beta)
    if method == "adam":
        opt.fix_basis(w)
    elif method == "exact":
        opt.fix_basis(w, left=Qt)
    hist = deque([w.detach().clone()] * (tau + 1), maxlen=tau + 1)
    path = np.empty((steps + 1, d))
    path[0] = w.detach().numpy().ravel()

    def loss_of(x):
        z = Qt.T @ x.ravel()
        return 0.5 * float((lam_t * z * z).sum())

    losses = np.empty(steps + 1)
    losses[0] = loss_of(w.detach())
    for t in range(steps):
        stale = hist[0].ravel()
        g = Qt @ (lam_t * (Qt.T @ stale) + noise[t])
        w.grad = g.reshape(d, 1)
        opt.step()
        hist.append(w.detach().clone())
        path[t + 1] = w.detach().numpy().ravel()
        losses[t + 1] = loss_of(w.detach())
    return QuadraticRun(losses, path)


def steady_state_loss(run: QuadraticRun, last: int) -> float:
    """Mean loss over the last ``last`` steps (the steady-state level Adam's noise floor sits at)."""
    if not 1 <= last <= run.loss.size:
        raise ValueError("last must be in [1, len(loss)]")
    return float(run.loss[-last:].mean())
