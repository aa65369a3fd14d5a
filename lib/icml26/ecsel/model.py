"""The ECSEL signomial model and its staged optimisation (paper Sec. 3, Eq. 1-3; brief Sec. 2).

Model (Eq. 1): per class c, ``z_c(x) = sum_k alpha_ck prod_j x_j**beta_ckj = sum_k alpha_ck exp(beta_ck . log x)``.
Losses (Eq. 2-3): mean squared error (symbolic regression, one signomial) or mean cross-entropy of
``softmax_c z_c`` (classification, one signomial per class; for two classes and K > 1 one signomial
and ``sigmoid(z)``), plus ``lam * sum |beta|`` (L1 on the
exponents only: a zero exponent drops a feature from a term).

Staged optimisation (Sec. 3.3):

* K = 1: L-BFGS-B on the smooth split form ``beta = beta_plus - beta_minus``, ``beta_pm >= 0``, whose
  L1 term is linear, ``lam * sum (beta_plus + beta_minus)``; multi-start over random initialisations.
* K > 1: Adam with a strong L1 (``strong * lam``, structure discovery), Adam with the reduced L1
  (refinement), each step followed by a soft-threshold (proximal) step so that exponents reach exact
  zeros, then L-BFGS-B polishing of the best Adam iterate; the restarts run as one batch.

All computation is float64 on the CPU; exponents are clipped to ``|beta| <= BETA_MAX`` (brief pitfall 3).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.optimize
import torch

BETA_MAX = 6.0
_LOG_CLIP = 60.0


@dataclass
class FitResult:
    """Fitted parameters ``alpha (C, K)``, ``beta (C, K, m)`` and the objective of the kept restart."""

    alpha: np.ndarray
    beta: np.ndarray
    objective: float
    restart_objectives: list[float] = field(default_factory=list)


def _scores(logX: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Eq. 1 for a batch of restarts: alpha (R, C, K), beta (R, C, K, m) -> z (R, n, C)."""
    expo = torch.einsum("nm,rckm->rnck", logX, beta).clamp(max=_LOG_CLIP)
    return (torch.exp(expo) * alpha[:, None]).sum(-1)


def _data_loss(task: str, z: torch.Tensor, y: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
    """Per-restart data loss (R,): MSE of z[..., 0] (task 'sr') or weighted mean cross-entropy ('clf')."""
    if task == "sr":
        return ((z[..., 0] - y) ** 2).mean(-1)
    if z.shape[-1] == 1:  # binary: one signomial, p(y=1) = sigmoid(z) = softmax([0, z])
        z = torch.cat([torch.zeros_like(z), z], dim=-1)
    logp = torch.log_softmax(z, dim=-1)
    nll = -logp.gather(-1, y.expand(z.shape[0], -1)[..., None])[..., 0]
    if w is None:
        return nll.mean(-1)
    return (nll * w).sum(-1) / w.sum()


def _init(task: str, logX, y, R: int, C: int, K: int, m: int, gen: torch.Generator, init_scale: float):
    beta = (torch.rand(R, C, K, m, generator=gen, dtype=torch.float64) * 2 - 1) * init_scale
    if task == "sr":  # alpha by least squares given beta (z is linear in alpha)
        Phi = torch.exp(torch.einsum("nm,rkm->rnk", logX, beta[:, 0]).clamp(max=_LOG_CLIP))
        alpha = torch.linalg.lstsq(Phi, y.expand(R, -1)[..., None], driver="gelsd").solution[..., 0][:, None]
        alpha = torch.nan_to_num(alpha).clamp(-1e3, 1e3)
    else:  # small terms of alternating sign across restarts; for K > 1 the last term starts as an intercept
        alpha = 0.1 * torch.rand(R, C, K, generator=gen, dtype=torch.float64) + 0.05
        alpha = alpha * torch.where(torch.arange(R) % 2 == 0, 1.0, -1.0).to(alpha)[:, None, None]
        if K > 1:
            beta[:, :, -1] = 0.0
            alpha[:, :, -1] = 0.0
    return alpha, beta


def _projected_alpha(logX: torch.Tensor, y: torch.Tensor, beta: torch.Tensor, ridge: float = 1e-10) -> torch.Tensor:
    """Variable projection (SR): the least-squares alpha (R, 1, K) given beta (R, 1, K, m), differentiable."""
    Phi = torch.exp(torch.einsum("nm,rkm->rnk", logX, beta[:, 0]).clamp(max=_LOG_CLIP))
    G = Phi.transpose(1, 2) @ Phi
    G = G + ridge * (torch.diagonal(G, dim1=1, dim2=2).mean(-1)[:, None, None] + 1e-300) * torch.eye(G.shape[-1], dtype=G.dtype)
    return torch.linalg.solve(G, Phi.transpose(1, 2) @ y[None, :, None])[..., 0][:, None]


def _adam_stage(task, logX, y, w, alpha, beta, lam: float, lr: float, steps: int, clip: float = 10.0,
                varpro: bool = False):
    """Adam on (alpha, beta) with a proximal soft-threshold on beta after each step; returns the best iterate.

    With ``varpro`` (SR only) alpha is not a free parameter but the least-squares solution given beta.
    """
    alpha = alpha.clone().requires_grad_(True)
    beta = beta.clone().requires_grad_(True)
    opt = torch.optim.Adam([beta] if varpro else [alpha, beta], lr=lr)
    best_obj = torch.full((alpha.shape[0],), float("inf"), dtype=torch.float64)
    best_a, best_b = alpha.detach().clone(), beta.detach().clone()
    for _ in range(int(steps)):
        opt.zero_grad(set_to_none=True)
        if varpro:
            alpha = torch.nan_to_num(_projected_alpha(logX, y, beta)).clamp(-1e6, 1e6)
        data = _data_loss(task, _scores(logX, alpha, beta), y, w)
        obj = (data + lam * beta.abs().sum((1, 2, 3))).detach()
        better = torch.isfinite(obj) & (obj < best_obj)
        best_obj = torch.where(better, obj, best_obj)
        best_a[better], best_b[better] = alpha.detach()[better], beta.detach()[better]
        loss = torch.nan_to_num(data, nan=1e6, posinf=1e6).sum()
        loss.backward()
        params = [beta] if varpro else [alpha, beta]
        for p in params:
            torch.nan_to_num_(p.grad, nan=0.0, posinf=0.0, neginf=0.0)
        torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        with torch.no_grad():  # proximal step for lam * |beta|_1 (exact zeros), then the range clip
            thr = lr * lam
            beta.copy_(torch.sign(beta) * (beta.abs() - thr).clamp(min=0.0))
            beta.clamp_(-BETA_MAX, BETA_MAX)
    return best_a, best_b, best_obj


def _lbfgsb(task, logX, y, w, alpha0: np.ndarray, beta0: np.ndarray, lam: float, maxiter: int):
    """L-BFGS-B on the split form beta = b+ - b-, b+- in [0, BETA_MAX] (smooth L1); one restart."""
    C, K, m = beta0.shape
    na, nb = C * K, C * K * m
    x0 = np.concatenate([alpha0.ravel(), np.clip(beta0, 0, None).ravel(), np.clip(-beta0, 0, None).ravel()])
    bounds = [(None, None)] * na + [(0.0, BETA_MAX)] * (2 * nb)

    def fun(x):
        t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        alpha = t[:na].reshape(1, C, K)
        beta = (t[na:na + nb] - t[na + nb:]).reshape(1, C, K, m)
        obj = _data_loss(task, _scores(logX, alpha, beta), y, w)[0] + lam * t[na:].sum()
        if not torch.isfinite(obj):
            return 1e12, np.zeros_like(x)
        obj.backward()
        return float(obj.detach()), np.nan_to_num(t.grad.numpy().copy())

    res = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                                  options=dict(maxiter=int(maxiter), maxfun=int(2 * maxiter), ftol=1e-15, gtol=1e-10))
    x = res.x
    alpha = x[:na].reshape(C, K)
    beta = (x[na:na + nb] - x[na + nb:]).reshape(C, K, m)
    return alpha, beta, float(res.fun)


def fit_signomial(logX: np.ndarray, y: np.ndarray, *, task: str, n_classes: int = 1, n_terms: int = 1,
                  lam: float = 1e-4, restarts: int = 4, adam_steps: tuple[int, int] = (600, 300),
                  lr: tuple[float, float] = (0.05, 0.01), strong: float = 10.0, lbfgs_iter: int = 300,
                  polish: int = 2, init_scale: float = 1.0, sample_weight: np.ndarray | None = None,
                  varpro: bool = False, warm_start=None, seed: int = 0) -> FitResult:
    """Fit Eq. 1 under the loss of Eq. 2 (``task='clf'``) or Eq. 3 (``task='sr'``) by the staged optimisation.

    ``logX`` is ``log x`` (n, m) of strictly positive inputs; ``y`` the target (sr) or class indices (clf).
    K = 1 runs L-BFGS-B from ``restarts`` random starts; K > 1 runs the two Adam stages on all restarts as
    one batch and polishes the ``polish`` best with L-BFGS-B. Returns the restart of lowest objective.
    """
    if task not in ("sr", "clf"):
        raise ValueError(f"task must be 'sr' or 'clf', got {task!r}")
    # binary with K > 1: one logit signomial (sigmoid); with K = 1 one power law per class (a single power-law
    # logit has a fixed sign and could never cross the decision threshold)
    C = 1 if task == "sr" or (int(n_classes) == 2 and int(n_terms) > 1) else int(n_classes)
    K, m = int(n_terms), logX.shape[1]
    if K < 1 or restarts < 1:
        raise ValueError("n_terms and restarts must be >= 1")
    gen = torch.Generator().manual_seed(int(seed))
    lx = torch.as_tensor(np.asarray(logX, float), dtype=torch.float64)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.float64 if task == "sr" else torch.long)
    w = None if sample_weight is None else torch.as_tensor(np.asarray(sample_weight, float), dtype=torch.float64)
    alpha, beta = _init(task, lx, yt, int(restarts), C, K, m, gen, init_scale)
    if warm_start is not None:  # replace restart 0 by a given starting point (alpha (C, K), beta (C, K, m))
        alpha[0] = torch.as_tensor(warm_start[0], dtype=torch.float64)
        beta[0] = torch.as_tensor(warm_start[1], dtype=torch.float64)
    if K > 1:
        vp = bool(varpro) and task == "sr"
        alpha, beta, _ = _adam_stage(task, lx, yt, w, alpha, beta, strong * lam, lr[0], adam_steps[0], varpro=vp)
        alpha, beta, obj = _adam_stage(task, lx, yt, w, alpha, beta, lam, lr[1], adam_steps[1], varpro=vp)
        order = torch.argsort(torch.nan_to_num(obj, nan=float("inf"))).tolist()[:max(1, int(polish))]
    else:
        order = list(range(int(restarts)))
    results = []
    for r in order:
        a, b, f = _lbfgsb(task, lx, yt, w, alpha[r].numpy(), beta[r].numpy(), lam, lbfgs_iter)
        results.append((f if np.isfinite(f) else np.inf, a, b))
    f, a, b = min(results, key=lambda t: t[0])
    return FitResult(alpha=a, beta=b, objective=float(f), restart_objectives=[float(t[0]) for t in results])


def signomial_scores(X: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Eq. 1 in numpy: X (n, m) > 0, alpha (C, K), beta (C, K, m) -> z (n, C)."""
    return (np.exp(np.einsum("nm,ckm->nck", np.log(X), beta)) * alpha[None]).sum(-1)
