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
KRON_METHODS = ("adam", "uni", "bi", "exact", "exact_uni")


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


def _quadratic_problem(lam, Q, w0, *, method: str, tau: int, steps: int, lr: float, betas: tuple[float, float],
                       sigma: float, freq: int, shampoo_beta: float | None, seed: int):
    """The set-up shared by :func:`run_quadratic` and :func:`update_alignment`: inputs checked, the noise
    ``sigma diag(lam)^{1/2} xi`` drawn from ``numpy.random.default_rng(seed)``, the weight ``w`` (``d x 1``, float64),
    its optimizer with the basis of ``method`` (``"adam"``: identity, ``"exact"``: ``U = Q``, ``"br"``: estimated)
    and the stash of the last ``tau + 1`` iterates. Returns ``(Qt, lam_t, noise, w, opt, hist)``."""
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
    return Qt, lam_t, noise, w, opt, hist


def run_quadratic(lam, Q, w0, *, method: str, tau: int, steps: int, lr: float = 1e-2,
                  betas: tuple[float, float] = (0.9, 0.999), sigma: float = 0.05, freq: int = 10,
                  shampoo_beta: float | None = None, seed: int = 0) -> QuadraticRun:
    """Adam / exact-eigenbasis Adam / basis rotation on ``1/2 w^T Q diag(lam) Q^T w`` with delay ``tau``.

    float64 throughout; no weight decay; ``xi`` drawn from ``numpy.random.default_rng(seed)``.
    """
    Qt, lam_t, noise, w, opt, hist = _quadratic_problem(
        lam, Q, w0, method=method, tau=tau, steps=steps, lr=lr, betas=betas, sigma=sigma,
        freq=freq, shampoo_beta=shampoo_beta, seed=seed)
    d = lam_t.numel()
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


def update_alignment(lam, Q, w0, *, method: str, tau: int, steps: int, lr: float = 1e-2,
                     betas: tuple[float, float] = (0.9, 0.999), sigma: float = 0.05, freq: int = 10,
                     shampoo_beta: float | None = None, seed: int = 0, burn_in: float = 0.2) -> float:
    """The paper's mechanism ("delayed updates diverge from their true counterparts"), measured.

    Runs :func:`run_quadratic`'s delayed optimizer and, at every step, also computes the update the
    *same optimizer state* would have made from the fresh gradient at the current iterate (same noise
    draw ``xi_t``), then restores the state. Returns the mean cosine between the applied (delayed) and
    the fresh update over the steps after the first ``burn_in`` fraction. ``method``: ``"adam"`` (identity
    basis), ``"br"`` (the basis estimated by Algorithm 2) or ``"exact"`` (Adam frozen in the exact eigenbasis
    ``U = Q``: what basis rotation would do with a perfect estimate; the positive control of claim C8b).
    """
    import copy

    if steps < 2 or not 0 <= burn_in < 1:
        raise ValueError("steps must be >= 2 and burn_in in [0, 1)")
    Qt, lam_t, noise, w, opt, hist = _quadratic_problem(
        lam, Q, w0, method=method, tau=tau, steps=steps, lr=lr, betas=betas, sigma=sigma,
        freq=freq, shampoo_beta=shampoo_beta, seed=seed)
    d = lam_t.numel()

    def grad_at(x, t):
        return (Qt @ (lam_t * (Qt.T @ x.ravel()) + noise[t])).reshape(d, 1)

    cos = []
    for t in range(steps):
        before = w.detach().clone()
        saved = {k: copy.deepcopy(v) for k, v in opt.state.items()}
        w.grad = grad_at(before, t)
        opt.step()
        fresh = (w.detach() - before).ravel()
        with torch.no_grad():
            w.copy_(before)
        for k, v in saved.items():
            opt.state[k] = v
        w.grad = grad_at(hist[0], t)
        opt.step()
        delayed = (w.detach() - before).ravel()
        hist.append(w.detach().clone())
        den = float(fresh.norm() * delayed.norm())
        cos.append(float(fresh @ delayed) / den if den > 0 else 1.0)
    return float(np.mean(cos[int(burn_in * steps):]))


def kronecker_regression(*, method: str, tau: int, steps: int, seed: int = 0, m: int = 16, n: int = 32,
                         cond_a: float = 100.0, cond_x: float = 10.0, lr: float = 1e-2, sigma: float = 0.05,
                         freq: int = 10, shampoo_beta: float = 0.95, last: int = 200) -> float:
    """The brief's Kronecker toy: matrix regression ``W in R^{m x n}`` with loss
    ``1/2 tr((W - W*)^T A (W - W*) S_x)`` (Hessian ``S_x (x) A``), ``A`` and ``S_x`` both randomly rotated.

    Stochastic gradient ``G = A (W - W*) S_x + sigma A^{1/2} Xi S_x^{1/2}`` (so ``E[G G^T] ~ A`` and
    ``E[G^T G] ~ S_x`` near the optimum, Fisher ~ Hessian), delayed by ``tau`` steps. ``method``:
    ``"adam"`` (identity basis), ``"uni"`` (one-sided rotation, the smaller side: left), ``"bi"`` (both), or
    ``"exact"``: Adam frozen in the exact two-sided eigenbasis ``Q_A (x) Q_x`` (basis rotation with a perfect
    estimate: the lemma's minimiser, a diagnostic of the estimator's own cost), or ``"exact_uni"``: Adam frozen in
    the exact left eigenbasis ``Q_A`` only (one-sided rotation with a perfect estimate; the lemma's middle term).
    Returns the excess risk averaged over the last ``last`` steps.
    """
    if method not in KRON_METHODS:
        raise ValueError(f"method must be one of {KRON_METHODS}, got {method!r}")
    if tau < 0 or steps < 1 or not 1 <= last <= steps or m > n:
        raise ValueError("need tau >= 0, 1 <= last <= steps and m <= n (the left side is the smaller one)")
    rng = np.random.default_rng(seed)
    Qa, Qx = random_rotation(m, 2 * seed + 1), random_rotation(n, 2 * seed + 2)
    la, lx = np.logspace(0, -np.log10(cond_a), m), np.logspace(0, -np.log10(cond_x), n)
    A = torch.tensor(Qa @ np.diag(la) @ Qa.T)
    Sx = torch.tensor(Qx @ np.diag(lx) @ Qx.T)
    A_h = torch.tensor(Qa @ np.diag(np.sqrt(la)) @ Qa.T)
    Sx_h = torch.tensor(Qx @ np.diag(np.sqrt(lx)) @ Qx.T)
    W_star = torch.tensor(rng.standard_normal((m, n)))
    xi = torch.tensor(rng.standard_normal((steps, m, n)))
    W = torch.nn.Parameter(torch.zeros(m, n, dtype=torch.float64))
    opt = BasisRotationAdam([W], lr=lr, weight_decay=0.0, freq=freq, shampoo_beta=shampoo_beta,
                            geometry="uni" if method == "uni" else "bi")
    if method == "adam":
        opt.fix_basis(W)
    elif method == "exact":
        opt.fix_basis(W, left=torch.tensor(Qa), right=torch.tensor(Qx))
    elif method == "exact_uni":
        opt.fix_basis(W, left=torch.tensor(Qa))
    hist = deque([W.detach().clone()] * (tau + 1), maxlen=tau + 1)
    risks = []
    for t in range(steps):
        D = hist[0] - W_star
        W.grad = A @ D @ Sx + sigma * A_h @ xi[t] @ Sx_h
        opt.step()
        hist.append(W.detach().clone())
        E = W.detach() - W_star
        risks.append(0.5 * float(torch.trace(E.T @ A @ E @ Sx)))
    return float(np.mean(risks[-last:]))
