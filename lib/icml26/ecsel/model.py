"""The ECSEL signomial model and two ways of fitting it (paper Eq. 1-3; research brief Sec. 2).

Model (brief Eq. 1): per class c, ``z_c(x) = sum_k alpha_ck prod_j x_j**beta_ckj = sum_k alpha_ck exp(beta_ck . log x)``.
Losses (brief Eq. 2-3): mean squared error (symbolic regression, one signomial) or cross-entropy of
``softmax_c z_c`` (classification, one signomial per class; for two classes one signomial and ``sigmoid(z)``),
plus an L1 penalty.

Sources. The paper's text was not retrievable here; the brief's reading of it (third-party notes) is
"staged optimisation": L-BFGS-B for K = 1, Adam with a strong L1 then a reduced L1 then L-BFGS polishing
for K > 1. The authors' released classifier (``ecsel.py``, public code, read for its recipe and not copied)
does something else: **one stage of mini-batch Adam** on the L1-penalised cross-entropy, L1 on **both the
constants and the exponents**, gradient-norm clipping at 1.0, constants drawn from N(1, 5), exponents 0 with
probability 0.7 and N(0, 1) otherwise, early stopping on the training loss, several restarts. Both are here:

* :func:`fit_signomial` -- the staged schedule as the brief reads it (``recipe='staged'`` of the estimators):
  K = 1: L-BFGS-B on the smooth split form ``beta = beta_plus - beta_minus``, ``beta_pm >= 0``, whose L1 term
  is linear; K > 1: Adam with ``strong * lam`` then Adam with ``lam`` (each step followed by a soft threshold
  of the exponents, a heuristic proximal step: it is not the exact proximal operator of Adam's scaled
  metric), then L-BFGS-B polishing of the ``polish`` best restarts. L1 on the exponents only. Optional
  variable projection (``varpro``, SR only, ours): alpha is the least-squares solution given beta.
* :func:`fit_signomial_authors` -- the authors' recipe (``recipe='authors'``), as described above.

All computation is float64 on the CPU; exponents of the staged fit are clipped to ``|beta| <= BETA_MAX``
(brief pitfall 3).
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
    epochs: int | None = None
    history: np.ndarray | None = None
    polish_history: np.ndarray | None = None


def _check_fit_inputs(logX, y, task: str, n_terms: int, lam: float, restarts: int):
    if task not in ("sr", "clf"):
        raise ValueError(f"task must be 'sr' or 'clf', got {task!r}")
    logX = np.asarray(logX, float)
    if logX.ndim != 2 or len(logX) != len(np.asarray(y)):
        raise ValueError(f"logX must be (n, m) with one target per row, got {logX.shape} and {np.shape(y)}")
    if not np.all(np.isfinite(logX)):
        raise ValueError("logX must be finite (log of strictly positive inputs)")
    if int(n_terms) < 1 or int(restarts) < 1:
        raise ValueError(f"n_terms and restarts must be >= 1, got {n_terms} and {restarts}")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    return logX


def _scores(logX: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Eq. 1 for a batch of restarts: logX (n, m) or (R, n, m), alpha (R, C, K), beta (R, C, K, m) -> z (R, n, C)."""
    spec = "nm,rckm->rnck" if logX.dim() == 2 else "rnm,rckm->rnck"
    expo = torch.einsum(spec, logX, beta).clamp(max=_LOG_CLIP)
    return (torch.exp(expo) * alpha[:, None]).sum(-1)


def _data_loss(task: str, z: torch.Tensor, y: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
    """Per-restart data loss (R,) of the staged schedule: MSE of z[..., 0] (task 'sr') or weighted mean
    cross-entropy ('clf'); ``y`` is (n,) or (R, n)."""
    if task == "sr":
        return ((z[..., 0] - y) ** 2).mean(-1)
    if z.shape[-1] == 1:  # binary: one signomial, p(y=1) = sigmoid(z) = softmax([0, z])
        z = torch.cat([torch.zeros_like(z), z], dim=-1)
    logp = torch.log_softmax(z, dim=-1)
    yy = y.expand(z.shape[0], -1) if y.dim() == 1 else y
    nll = -logp.gather(-1, yy[..., None])[..., 0]
    if w is None:
        return nll.mean(-1)
    return (nll * w).sum(-1) / w.sum()


def _init(task: str, logX, y, R: int, C: int, K: int, m: int, gen: torch.Generator, init_scale: float):
    """Staged recipe's starting points (ours): beta ~ U(-1, 1) * init_scale; alpha by least squares (SR) or
    small terms of alternating sign across restarts (classification; for K > 1 the last term an intercept)."""
    beta = (torch.rand(R, C, K, m, generator=gen, dtype=torch.float64) * 2 - 1) * init_scale
    if task == "sr":  # alpha by least squares given beta (z is linear in alpha)
        Phi = torch.exp(torch.einsum("nm,rkm->rnk", logX, beta[:, 0]).clamp(max=_LOG_CLIP))
        alpha = torch.linalg.lstsq(Phi, y.expand(R, -1)[..., None], driver="gelsd").solution[..., 0][:, None]
        alpha = torch.nan_to_num(alpha).clamp(-1e3, 1e3)
    else:
        alpha = 0.1 * torch.rand(R, C, K, generator=gen, dtype=torch.float64) + 0.05
        alpha = alpha * torch.where(torch.arange(R) % 2 == 0, 1.0, -1.0).to(alpha)[:, None, None]
        if K > 1:
            beta[:, :, -1] = 0.0
            alpha[:, :, -1] = 0.0
    return alpha, beta


def _projected_alpha(logX: torch.Tensor, y: torch.Tensor, beta: torch.Tensor, ridge: float = 1e-10) -> torch.Tensor:
    """Variable projection (SR): the least-squares alpha (R, 1, K) given beta (R, 1, K, m), differentiable.

    Solved by a QR factorisation of the column-normalised design matrix stacked on ``sqrt(ridge) * I`` (a
    ridge that keeps coinciding terms solvable) rather than by the normal equations, which would square the
    condition number of power columns whose values span several decades.
    """
    Phi = torch.exp(torch.einsum("nm,rkm->rnk", logX, beta[:, 0]).clamp(max=_LOG_CLIP))
    norms = Phi.pow(2).mean(1, keepdim=True).sqrt().clamp(min=1e-300)
    P = Phi / norms
    K = P.shape[-1]
    A = torch.cat([P, (ridge ** 0.5) * torch.eye(K, dtype=P.dtype).expand(P.shape[0], K, K)], dim=1)
    b = torch.cat([y.expand(P.shape[0], -1), torch.zeros(P.shape[0], K, dtype=P.dtype)], dim=1)[..., None]
    Q, Rm = torch.linalg.qr(A)
    coef = torch.linalg.solve_triangular(Rm, Q.transpose(1, 2) @ b, upper=True)[..., 0]
    return (coef / norms[:, 0])[:, None]


def _adam_stage(task, logX, y, w, alpha, beta, lam: float, lr: float, steps: int, clip: float = 10.0,
                varpro: bool = False):
    """Full-batch Adam on (alpha, beta) with a soft threshold of beta after each step; returns the best iterate.

    The soft threshold by ``lr * lam`` is a heuristic proximal step (it gives exact zeros; it is not the exact
    proximal map of Adam's diagonal metric). With ``varpro`` (SR only) alpha is not a free parameter but the
    least-squares solution given beta.
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
        with torch.no_grad():  # soft threshold for lam * |beta|_1 (exact zeros), then the range clip
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
                  varpro: bool = False, warm_start=None, restarts_k1: int | None = None, seed: int = 0) -> FitResult:
    """Fit Eq. 1 under the loss of Eq. 2 (``task='clf'``) or Eq. 3 (``task='sr'``) by the staged schedule.

    ``logX`` is ``log x`` (n, m) of strictly positive inputs; ``y`` the target (sr) or class indices (clf).
    K = 1 runs L-BFGS-B from ``restarts`` random starts; K > 1 runs the two Adam stages on all restarts as
    one batch and polishes the ``polish`` best with L-BFGS-B. ``restarts_k1`` (default ``restarts``) is the
    number of starts for K = 1, where each start costs a whole L-BFGS-B run (the first ``restarts_k1`` starts
    are those a fit with ``restarts=restarts_k1`` would draw, so raising ``restarts`` for K > 1 leaves K = 1 fits
    unchanged). ``warm_start=(alpha (C, K), beta (C, K, m))`` replaces restart 0. Returns the restart of lowest
    objective.

    Binary classification: with K > 1 one signomial logit and a sigmoid; with K = 1 one power law per class
    and a softmax (a single power law has a fixed sign, so with the 0.5 threshold it could never change class).
    """
    logX = _check_fit_inputs(logX, y, task, n_terms, lam, restarts)
    C = 1 if task == "sr" or (int(n_classes) == 2 and int(n_terms) > 1) else int(n_classes)
    K, m = int(n_terms), logX.shape[1]
    if K == 1 and restarts_k1 is not None:
        if int(restarts_k1) < 1:
            raise ValueError(f"restarts_k1 must be >= 1, got {restarts_k1}")
        restarts = int(restarts_k1)
    gen = torch.Generator().manual_seed(int(seed))
    lx = torch.as_tensor(logX, dtype=torch.float64)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.float64 if task == "sr" else torch.long)
    w = None if sample_weight is None else torch.as_tensor(np.asarray(sample_weight, float), dtype=torch.float64)
    alpha, beta = _init(task, lx, yt, int(restarts), C, K, m, gen, init_scale)
    if warm_start is not None:
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


def authors_init(rng: np.random.Generator, C: int, K: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The authors' initialisation: constants ~ N(1, 5); each exponent 0 with probability 0.7, else N(0, 1).

    Drawn term by term in the order of their flat parameter layout (class, term, [constant, exponents]).
    """
    alpha = np.zeros((C, K))
    beta = np.zeros((C, K, m))
    for c in range(C):
        for k in range(K):
            alpha[c, k] = rng.normal(1.0, 5.0)
            for j in range(m):
                if rng.random() < 0.3:
                    beta[c, k, j] = rng.normal(0.0, 1.0)
    return alpha, beta


def fit_signomial_authors(logX: np.ndarray, y: np.ndarray, *, task: str, n_classes: int = 1, n_terms: int = 2,
                          lam: float = 1e-3, lr: float = 2e-3, batch_size: int = 64, epochs: int = 800,
                          patience: int = 50, min_delta: float = 1e-6, restarts: int = 1, clip: float = 1.0,
                          sample_weight: np.ndarray | None = None, use_sigmoid: bool = True, polish_iter: int = 0,
                          seed: int = 0) -> FitResult:
    """The authors' recipe: single-stage mini-batch Adam on ``loss + lam * (sum|alpha| + sum|beta|)``.

    As in the released ``ecsel.py``: per restart r a generator seeded ``seed + r`` draws the initialisation
    (:func:`authors_init`) and each epoch's shuffle; every mini-batch step clips the gradient (of the
    penalised loss) to norm ``clip``, skips a non-finite gradient, and takes a bias-corrected Adam step
    (betas 0.9, 0.999, eps 1e-8); the epoch's training loss is the sample-weighted mean of the penalised
    batch losses evaluated after each update; the best epoch's parameters are kept, and a restart stops after
    ``patience`` epochs without an improvement larger than ``min_delta``; the restart of lowest best loss wins.
    Binary classification is one signomial logit and a sigmoid (``use_sigmoid=True``, their default) or, with
    ``use_sigmoid=False`` (their published configurations for ILPD and transfusion), one signomial per class
    and a softmax; multi-class is a softmax. **Objective (Eq. 2 as the authors optimise it).** Their
    monitored multi-class loss is the mean over the n x C one-hot entries, i.e. cross-entropy / C, but the
    gradient their optimiser follows (their analytical gradient, ``(P - Y) / n`` per logit) is that of the
    per-sample mean cross-entropy. So the steps here follow ``grad(mean CE) + lam * sign(theta)`` and early
    stopping reads ``mean CE / C + lam * |theta|_1`` (an earlier revision followed the gradient of CE / C,
    an L1 weight C times theirs). For ``task='sr'`` (the authors released no SR code: this is their
    classifier's optimiser transplanted) the loss is the mean squared error.

    Like theirs, the gradient is analytical (numpy; checked against torch autograd in the unit tests) and the
    logits are clipped to +-500 before the sigmoid or softmax with the gradient ``(P - Y) / n`` kept there
    (:func:`authors_loss_and_grad`; the previous torch version zeroed it, a silent deviation). The
    restarts run side by side as one batch (each with its own shuffle and early stop), which gives the same
    iterates as running them one after the other. ``sample_weight`` (ours; the authors' loss is unweighted)
    makes each batch loss a weighted mean. The result's ``history`` is the kept restart's best-so-far
    training loss after each epoch (the loss of the model that stopping there would return).

    ``polish_iter > 0`` (ours, classification only; 0 is the released recipe) adds the third stage that the
    paper's text describes and the released code omits: L-BFGS-B from the kept iterate on the objective the Adam
    steps follow, to convergence (:func:`polish_authors`); ``polish_history`` then holds that objective per
    iteration.
    """
    return fit_signomial_authors_grid(logX, y, task=task, n_classes=n_classes, n_terms=n_terms, grid=((lam, lr),),
                                      batch_size=batch_size, epochs=epochs, patience=patience, min_delta=min_delta,
                                      restarts=restarts, clip=clip, sample_weight=sample_weight,
                                      use_sigmoid=use_sigmoid, polish_iter=polish_iter, seed=seed)[0]


def fit_signomial_authors_grid(logX: np.ndarray, y: np.ndarray, *, task: str, grid, n_classes: int = 1,
                               n_terms: int = 2, batch_size: int = 64, epochs: int = 800, patience: int = 50,
                               min_delta: float = 1e-6, restarts: int = 1, clip: float = 1.0,
                               sample_weight: np.ndarray | None = None, use_sigmoid: bool = True,
                               polish_iter: int = 0, seed: int = 0) -> list[FitResult]:
    """:func:`fit_signomial_authors` at every ``(lam, lr)`` of ``grid``, all run side by side as one batch of
    ``len(grid) * restarts`` independent rows (restart r of every grid point seeded ``seed + r``). Each row
    follows its own shuffle, steps and early stop, so result g equals ``fit_signomial_authors(lam=grid[g][0],
    lr=grid[g][1], ...)`` (checked in the unit tests); the batch only shares the per-step numpy overhead, which
    on these small data sets is most of the cost. ``polish_iter``: see :func:`fit_signomial_authors` (each grid
    point's kept restart is polished). Returns one :class:`FitResult` per grid point."""
    grid = [(float(l), float(r)) for l, r in grid]
    if not grid:
        raise ValueError("grid needs at least one (lam, lr) pair")
    for lam, lr in grid:
        _check_fit_inputs(logX, y, task, n_terms, lam, restarts)
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr}")
    logX = np.asarray(logX, float)
    if int(batch_size) < 1 or int(epochs) < 1 or int(patience) < 1:
        raise ValueError(f"batch_size, epochs, patience must be >= 1, got {batch_size}, {epochs}, {patience}")
    if int(polish_iter) < 0 or (int(polish_iter) > 0 and task != "clf"):
        raise ValueError(f"polish_iter must be >= 0 (and 0 for task='sr'), got {polish_iter}")
    n, m = logX.shape
    C = 1 if task == "sr" or (int(n_classes) == 2 and use_sigmoid) else int(n_classes)
    K, Rr, G = int(n_terms), int(restarts), len(grid)
    R = G * Rr
    lam_r = np.repeat([g[0] for g in grid], Rr)
    lr_r = np.repeat([g[1] for g in grid], Rr)
    rngs = [np.random.default_rng(int(seed) + r) for _ in range(G) for r in range(Rr)]
    inits = [authors_init(g, C, K, m) for g in rngs]
    alpha = np.stack([a for a, _ in inits])  # (R, C, K)
    beta = np.stack([b for _, b in inits])  # (R, C, K, m)
    yv = np.asarray(y, float if task == "sr" else int)
    wv = None if sample_weight is None else np.asarray(sample_weight, float)

    def forward(lxb, yb, wb, a, b, monitored: bool, grad: bool):
        return authors_loss_and_grad(task, lxb, yb, wb, a, b, lam_r, C, monitored=monitored, grad=grad)

    m1, m2 = [np.zeros_like(alpha), np.zeros_like(beta)], [np.zeros_like(alpha), np.zeros_like(beta)]
    t = np.zeros(R)
    b1, b2, eps = 0.9, 0.999, 1e-8
    best_loss = np.full(R, np.inf)
    best_a, best_b = alpha.copy(), beta.copy()
    wait = np.zeros(R, dtype=int)
    active = np.ones(R, dtype=bool)
    stopped = np.full(R, int(epochs))
    history = []
    bs = int(batch_size)
    epoch = 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for epoch in range(int(epochs)):
            perms = np.stack([g.permutation(n) for g in rngs])  # (R, n)
            epoch_loss = np.zeros(R)
            n_finite = np.zeros(R, dtype=int)
            for start in range(0, n, bs):
                idx = perms[:, start:start + bs]
                lxb, yb = logX[idx], yv[idx]
                wb = None if wv is None else wv[idx]
                _, ga, gb = forward(lxb, yb, wb, alpha, beta, monitored=False, grad=True)
                norm = np.sqrt((ga ** 2).sum((1, 2)) + (gb ** 2).sum((1, 2, 3)))
                step = active & np.isfinite(norm)
                scale = np.where(norm > clip, clip / np.where(step, norm, 1.0), 1.0)
                t = t + step
                tt = np.maximum(t, 1)
                for i, (p, g) in enumerate(((alpha, ga), (beta, gb))):
                    shape = (-1,) + (1,) * (p.ndim - 1)
                    g = np.nan_to_num(g * scale.reshape(shape))
                    s = step.reshape(shape)
                    m1[i] = np.where(s, b1 * m1[i] + (1 - b1) * g, m1[i])
                    m2[i] = np.where(s, b2 * m2[i] + (1 - b2) * g * g, m2[i])
                    corr1, corr2 = (1 - b1 ** tt).reshape(shape), (1 - b2 ** tt).reshape(shape)
                    upd = lr_r.reshape(shape) * (m1[i] / corr1) / (np.sqrt(m2[i] / corr2) + eps)
                    p -= np.where(s, upd, 0.0)
                after, _, _ = forward(lxb, yb, wb, alpha, beta, monitored=True, grad=False)
                ok = np.isfinite(after) & step  # a skipped step's batch is not counted, as theirs
                epoch_loss += np.where(ok, after, 0.0) * idx.shape[1]
                n_finite += ok
            # an epoch with no finite batch loss counts as inf (no improvement), as theirs
            epoch_mean = np.where(n_finite > 0, epoch_loss / n, np.inf)
            monitored = np.where(active, epoch_mean, best_loss)
            better = active & (monitored < best_loss - min_delta)
            best_loss = np.where(better, monitored, best_loss)
            best_a[better], best_b[better] = alpha[better], beta[better]
            wait = np.where(better, 0, wait + active)
            newly = active & (wait >= int(patience))
            stopped[newly] = epoch + 1
            active = active & ~newly
            history.append(best_loss.copy())
            if not active.any():
                break
    history = np.array(history)  # (epochs run, R)
    out = []
    for g in range(G):
        rows = slice(g * Rr, (g + 1) * Rr)
        bl = np.nan_to_num(best_loss[rows], nan=np.inf)
        r = g * Rr + int(np.argmin(bl))
        last = int(stopped[rows].max())
        a_r, b_r, polished = best_a[r].copy(), best_b[r].copy(), None
        if int(polish_iter) > 0:
            a_r, b_r, polished = polish_authors(logX, yv, a_r, b_r, lam=float(lam_r[r]), C=C, sample_weight=wv,
                                                maxiter=int(polish_iter))
        out.append(FitResult(alpha=a_r, beta=b_r, objective=float(best_loss[r]),
                             restart_objectives=best_loss[rows].tolist(), epochs=min(last, epoch + 1),
                             history=history[:min(last, epoch + 1), r].copy(), polish_history=polished))
    return out


def cross_entropy_and_grad(U: np.ndarray, y: np.ndarray, w: np.ndarray | None, alpha: np.ndarray, beta: np.ndarray,
                           grad: bool = True):
    """Mean cross-entropy of a signomial classifier and its gradient (Eq. 1-2, no clipping): log-features
    ``U (n, m)``, class indices ``y``, optional sample weights ``w``, ``alpha (C, K)``, ``beta (C, K, m)``; one
    class row (``C = 1``) is a sigmoid logit, several a softmax (stable log-sum-exp). Returns
    ``(loss, d loss / d alpha, d loss / d beta)`` (the gradients None without ``grad``)."""
    from scipy.special import expit, logsumexp

    C, K = alpha.shape
    n, m = U.shape
    e = np.minimum((U @ beta.reshape(C * K, m).T).reshape(n, C, K), 700.0)
    T = np.exp(e)
    z = (T * alpha[None]).sum(-1)  # (n, C)
    if C == 1:
        per = np.logaddexp(0.0, z[:, 0]) - y * z[:, 0]
        dz = (expit(z[:, 0]) - y)[:, None]
    else:
        lse = logsumexp(z, axis=1)
        per = lse - z[np.arange(n), y]
        dz = np.exp(z - lse[:, None]) - np.eye(C)[y]
    dw = np.full(n, 1.0 / n) if w is None else w / w.sum()
    loss = float(per @ dw)
    if not grad:
        return loss, None, None
    G = (dz * dw[:, None])[..., None] * T  # (n, C, K)
    ga = G.sum(0)
    gb = np.einsum("nck,nm->ckm", G * alpha[None], U)
    return loss, ga, gb


def polish_authors(logX: np.ndarray, y: np.ndarray, alpha: np.ndarray, beta: np.ndarray, *, lam: float, C: int,
                   sample_weight: np.ndarray | None = None, maxiter: int = 3000):
    """L-BFGS-B polishing (ours; the third stage of the paper's text, absent from the released code) of a
    classifier fitted by the authors' recipe: from ``alpha (C, K)``, ``beta (C, K, m)``, minimise the objective
    their Adam steps follow, the per-sample mean cross-entropy plus ``lam * (|alpha|_1 + |beta|_1)``, full batch,
    on the smooth split form ``theta = theta+ - theta-``, ``theta+- >= 0`` (the L1 term becomes linear; exact
    zeros are reached at the bound). The data term and its gradient are :func:`authors_loss_and_grad`'s (with
    their +-500 logit clip). Stops at L-BFGS-B's own tolerance or after ``maxiter`` iterations.

    Returns ``(alpha, beta, history)``: the polished parameters (the starting ones if the polish did not lower
    the objective) and the objective (at ``theta+ - theta-``) at the start and after each iteration (a converged
    polish ends flat).
    """
    a0, b0 = np.asarray(alpha, float), np.asarray(beta, float)
    Cc, K = a0.shape
    m = b0.shape[-1]
    na, nb = Cc * K, Cc * K * m
    U, yv = np.asarray(logX, float), np.asarray(y, int)
    w = None if sample_weight is None else np.asarray(sample_weight, float)
    if a0.shape[0] != (1 if int(C) == 1 else int(C)):
        raise ValueError(f"alpha has {a0.shape[0]} class rows for C = {C}")

    def split(x):
        return (x[:na] - x[na:2 * na]).reshape(Cc, K), (x[2 * na:2 * na + nb] - x[2 * na + nb:]).reshape(Cc, K, m)

    def fun(x):
        a, b = split(x)
        data, ga, gb = cross_entropy_and_grad(U, yv, w, a, b)
        f = data + lam * float(x.sum())
        g = np.concatenate([ga.ravel(), -ga.ravel(), gb.ravel(), -gb.ravel()]) + lam
        if not (np.isfinite(f) and np.all(np.isfinite(g))):
            f, g = 1e12, np.zeros_like(x)
        return f, g

    def value(x):  # the objective at theta = theta+ - theta- (the split penalty is >= |theta|_1, equal at the optimum)
        a, b = split(x)
        return cross_entropy_and_grad(U, yv, w, a, b, grad=False)[0] + lam * float(np.abs(a).sum() + np.abs(b).sum())

    x0 = np.concatenate([np.clip(a0, 0, None).ravel(), np.clip(-a0, 0, None).ravel(),
                         np.clip(b0, 0, None).ravel(), np.clip(-b0, 0, None).ravel()])
    history = [value(x0)]
    res = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * len(x0),
                                  callback=lambda xk: history.append(value(xk)),
                                  options=dict(maxiter=int(maxiter), maxfun=2 * int(maxiter), ftol=1e-12, gtol=1e-9))
    final = value(res.x)
    if not (np.isfinite(final) and final <= history[0]):
        return a0.copy(), b0.copy(), np.array(history[:1])
    if final != history[-1]:  # the returned point, if the last callback did not see it
        history.append(final)
    a, b = split(res.x)
    return a, b, np.array(history)


def fit_signomial_lsq(logX: np.ndarray, y: np.ndarray, *, n_terms: int, starts: int = 20, seed: int = 0,
                      beta_max: float = BETA_MAX, max_nfev: int = 400) -> FitResult:
    """Least-squares K-term signomial (Eq. 1, C = 1, no penalty) by **variable projection** (Golub and Pereyra):
    alpha is the linear least-squares solution given the exponents, and the exponents ``|beta| <= beta_max``
    minimise the projected residual (``scipy.optimize.least_squares``, trust-region reflective) from ``starts``
    random starts ``beta ~ U(-beta_max, beta_max)``; the start of least residual wins. For the density check:
    exponential sums are ill-conditioned (near-coincident exponents with large cancelling constants), which a
    joint gradient method on (alpha, beta) reaches poorly. ``objective`` is the training mean squared error."""
    logX = np.asarray(logX, float)
    y = np.asarray(y, float)
    if logX.ndim != 2 or len(logX) != len(y) or not np.all(np.isfinite(logX)) or not np.all(np.isfinite(y)):
        raise ValueError(f"logX must be finite (n, m) with one finite target per row, got {logX.shape}, {y.shape}")
    K, m = int(n_terms), logX.shape[1]
    if K < 1 or int(starts) < 1 or not beta_max > 0:
        raise ValueError(f"need n_terms >= 1, starts >= 1, beta_max > 0; got {n_terms}, {starts}, {beta_max}")

    def design(b):
        return np.exp(np.clip(logX @ b.reshape(K, m).T, -_LOG_CLIP, _LOG_CLIP))

    def resid(b):
        P = design(b)
        c, *_ = np.linalg.lstsq(P, y, rcond=None)
        return P @ c - y

    rng = np.random.default_rng(int(seed))
    best_cost, best_b, costs = np.inf, None, []
    for _ in range(int(starts)):
        b0 = rng.uniform(-beta_max, beta_max, K * m)
        with np.errstate(over="ignore", invalid="ignore"):
            out = scipy.optimize.least_squares(resid, b0, bounds=(-beta_max, beta_max), method="trf",
                                               max_nfev=int(max_nfev))
        costs.append(float(2 * out.cost / len(y)))
        if np.isfinite(out.cost) and out.cost < best_cost:
            best_cost, best_b = out.cost, out.x
    if best_b is None:
        raise RuntimeError("no finite least-squares fit from any start")
    c, *_ = np.linalg.lstsq(design(best_b), y, rcond=None)
    return FitResult(alpha=c[None], beta=best_b.reshape(1, K, m), objective=float(2 * best_cost / len(y)),
                     restart_objectives=costs)


def authors_loss_and_grad(task: str, lxb: np.ndarray, yb: np.ndarray, wb: np.ndarray | None, a: np.ndarray,
                          b: np.ndarray, lam: np.ndarray, C: int, monitored: bool = False, grad: bool = True):
    """The penalised loss of the authors' recipe per row (R,) and, with ``grad``, its analytical gradient in
    ``(alpha (R, C, K), beta (R, C, K, m))`` (brief Eq. 1-2), as their ``ecsel.py`` computes them: rows
    ``lxb (R, nb, m)`` of log-features, targets ``yb (R, nb)``, weights ``wb`` (ours) or None, L1 weights
    ``lam (R,)``.

    As theirs: a term's value is ``alpha * x**beta``, a non-finite one replaced by 0 / +-1e10 in the logits (the
    gradient uses the raw value, so an overflow makes the step non-finite and it is skipped); the logits are
    clipped to +-500 before the sigmoid (``C == 1`` with ``task='clf'``) or the softmax; the gradient with
    respect to the logits is ``(P - Y) / n`` from those clipped probabilities (not zero where a logit is clipped);
    the loss clips the probabilities to [1e-15, 1 - 1e-15]; for the softmax the gradient is that of the
    per-sample mean cross-entropy while ``monitored=True`` returns the loss their early stopping reads
    (cross-entropy / C). ``task='sr'``: the squared error of the raw logit."""
    R, nb, m = lxb.shape
    K = a.shape[-1]
    e = np.matmul(lxb, b.reshape(R, C * K, m).transpose(0, 2, 1)).reshape(R, nb, C, K)
    T = np.exp(e)
    term = T * a[:, None]
    z = np.where(np.isfinite(term), term, np.nan_to_num(term, nan=0.0, posinf=1e10, neginf=-1e10)).sum(-1)
    if task == "sr":
        r_ = z[..., 0] - yb
        per, dz = r_ ** 2, (2 * r_)[..., None]
    elif C == 1:  # sigmoid cross-entropy on one logit
        P = 1 / (1 + np.exp(-np.clip(z[..., 0], -500.0, 500.0)))
        Pc = np.clip(P, 1e-15, 1 - 1e-15)
        per = -(yb * np.log(Pc) + (1 - yb) * np.log(1 - Pc))
        dz = (P - yb)[..., None]
    else:  # softmax cross-entropy (the gradient of the per-sample mean, (P - Y) / n, as theirs)
        Zc = np.clip(z, -500.0, 500.0)
        E = np.exp(Zc - Zc.max(-1, keepdims=True))
        P = E / E.sum(-1, keepdims=True)
        Y = np.eye(C)[yb]
        per = -(Y * np.log(np.clip(P, 1e-15, 1 - 1e-15))).sum(-1)
        dz = P - Y
        if monitored:
            per = per / C
    if wb is None:
        data, dw = per.mean(-1), np.full(per.shape, 1.0 / nb)
    else:
        sw = wb.sum(-1, keepdims=True)
        data, dw = (per * wb).sum(-1) / sw[:, 0], wb / sw
    loss = data + lam * (np.abs(a).sum((1, 2)) + np.abs(b).sum((1, 2, 3)))
    if not grad:
        return loss, None, None
    Gk = (dz * dw[..., None])[..., None] * T  # (R, nb, C, K): d loss / d alpha per sample
    ga = Gk.sum(1) + lam[:, None, None] * np.sign(a)
    gb = (np.matmul((Gk * a[:, None]).reshape(R, nb, C * K).transpose(0, 2, 1), lxb).reshape(R, C, K, m)
          + lam[:, None, None, None] * np.sign(b))
    return loss, ga, gb


def signomial_scores(X: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Eq. 1 in numpy: X (n, m) > 0, alpha (C, K), beta (C, K, m) -> z (n, C)."""
    return (np.exp(np.einsum("nm,ckm->nck", np.log(X), beta)) * alpha[None]).sum(-1)
