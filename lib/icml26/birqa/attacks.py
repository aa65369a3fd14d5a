"""White-box L-inf attacks on a full-reference IQA score (the robustness protocol of the chapter).

Protocol (pitfall 5): only the *distorted* image is perturbed, the reference stays fixed, every iterate is
projected on the eps-ball and clamped to [0, 1], adversarial pairs keep the clean MOS as label, and the
robust score is SROCC(f(ref, dist + delta), MOS). ``objective="boost"`` maximises the predicted quality
(the usual metric-hacking attack), ``"reduce"`` minimises it.

* FGSM (Goodfellow et al. 2015): one step eps * sign(grad);
* I-FGSM (Kurakin et al. 2017): ``steps`` steps of size alpha = eps / 4, projected (equals ART's
  ``ProjectedGradientDescent`` without random start: tests);
* PGD (Madry et al. 2018): I-FGSM from a uniform random start in the ball;
* MI-FGSM (Dong et al. 2018): momentum mu = 1 on the L1-normalised gradient;
* APGD-style (Croce & Hein 2020): step 2 eps, momentum 0.75, the step halved at checkpoints without
  progress, restart from the best point -- a simplified schedule, not AutoAttack's exact one.
BPDA (Athalye et al. 2018) is obtained by attacking a model whose hard LBP is run in ``"bpda"`` mode.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

ATTACKS = ("fgsm", "ifgsm", "pgd", "mifgsm", "apgd")
OBJECTIVES = ("boost", "reduce")
ScoreFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _check(eps, steps, method, objective):
    if method not in ATTACKS:
        raise ValueError(f"unknown attack {method!r}; known: {', '.join(ATTACKS)}")
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive number (L-inf budget on [0, 1] images), got {eps!r}")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")


def _grad(score_fn, ref, x, sign):
    x = x.detach().requires_grad_(True)
    s = score_fn(ref, x)
    g, = torch.autograd.grad((sign * s).sum(), x)
    return g, s.detach()


def _project(x, dist, eps):
    return torch.min(torch.max(x, dist - eps), dist + eps).clamp(0.0, 1.0)


def attack(score_fn: ScoreFn, ref: torch.Tensor, dist: torch.Tensor, eps: float, steps: int = 5,
           method: str = "ifgsm", objective: str = "boost", alpha: float | None = None, seed: int = 0,
           mu: float = 1.0) -> torch.Tensor:
    """The adversarial distorted images (same shape as ``dist``, within eps of it in L-inf, in [0, 1])."""
    _check(eps, steps, method, objective)
    if ref.shape != dist.shape:
        raise ValueError(f"ref and dist must have the same shape, got {tuple(ref.shape)} and {tuple(dist.shape)}")
    sign = 1.0 if objective == "boost" else -1.0
    ref, dist = ref.detach(), dist.detach()
    if method == "fgsm":
        g, _ = _grad(score_fn, ref, dist, sign)
        return _project(dist + eps * g.sign(), dist, eps).detach()
    alpha = eps / 4 if alpha is None else alpha
    x = dist.clone()
    if method == "pgd":
        gen = torch.Generator().manual_seed(seed)
        x = _project(dist + (torch.rand(dist.shape, generator=gen) * 2 - 1).to(dist) * eps, dist, eps)
    if method in ("ifgsm", "pgd"):
        for _ in range(steps):
            g, _ = _grad(score_fn, ref, x, sign)
            x = _project(x + alpha * g.sign(), dist, eps)
        return x.detach()
    if method == "mifgsm":
        m = torch.zeros_like(dist)
        for _ in range(steps):
            g, _ = _grad(score_fn, ref, x, sign)
            m = mu * m + g / g.abs().flatten(1).sum(1).clamp_min(1e-12).view(-1, 1, 1, 1)
            x = _project(x + alpha * m.sign(), dist, eps)
        return x.detach()
    return _apgd(score_fn, ref, dist, eps, steps, sign)


def _apgd(score_fn, ref, dist, eps, steps, sign):
    """APGD-style schedule (simplified): per-sample step sizes, momentum 0.75, halving without progress."""
    n = dist.shape[0]
    view = (-1, 1, 1, 1)
    eta = torch.full((n,), 2.0 * eps)
    checkpoints = sorted({max(1, int(round(steps * p))) for p in (0.22, 0.41, 0.56, 0.68, 0.78)})
    g, s = _grad(score_fn, ref, dist, sign)
    best_x, best_s = dist.clone(), sign * s
    x_prev, x = dist.clone(), _project(dist + eta.view(view) * g.sign(), dist, eps)
    improved = torch.zeros(n)
    last_best = best_s.clone()
    for k in range(1, steps):
        g, s = _grad(score_fn, ref, x, sign)
        val = sign * s
        better = val > best_s
        improved += better.float()
        best_x[better], best_s[better] = x[better], val[better]
        z = _project(x + eta.view(view) * g.sign(), dist, eps)
        x_new = _project(x + 0.75 * (z - x) + 0.25 * (x - x_prev), dist, eps)
        x_prev, x = x, x_new
        if k in checkpoints:
            stall = (improved < 0.75 * k / len(checkpoints)) | (best_s <= last_best)
            eta = torch.where(stall, eta / 2, eta)
            x = torch.where(stall.view(view), best_x, x)
            improved.zero_()
            last_best = best_s.clone()
    g, s = _grad(score_fn, ref, x, sign)
    better = sign * s > best_s
    best_x[better] = x[better]
    return best_x.detach()


def attack_batched(score_fn, ref, dist, eps, steps, method, objective="boost", batch: int = 64, seed: int = 0):
    """`attack` over mini-batches (same result as one call for the deterministic attacks)."""
    out = [attack(score_fn, ref[i:i + batch], dist[i:i + batch], eps, steps, method, objective, seed=seed + i)
           for i in range(0, len(ref), batch)]
    return torch.cat(out)


def ir_score(eps_values, srocc_values, clean_srocc: float) -> float:
    """IR-Score-like integral robustness (after Chistyakova et al. 2024): the trapezoid integral of SROCC(eps)
    from 0 (clean) to eps_max, divided by eps_max (1 = no loss at any budget)."""
    e = np.concatenate([[0.0], np.asarray(eps_values, dtype=float)])
    s = np.concatenate([[clean_srocc], np.asarray(srocc_values, dtype=float)])
    order = np.argsort(e)
    e, s = e[order], s[order]
    return float(np.sum((s[1:] + s[:-1]) / 2 * np.diff(e)) / e[-1])
