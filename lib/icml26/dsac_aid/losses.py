"""Critic targets and losses of SAC, DSAC-T and DSAC-AID (research brief §2.1-2.2; official code
`gops/algorithm/dsacaid.py`, `DSACAID._compute_loss_q`, commit 640e85a4).

The paper's text is not public, so the equations are cited from the official code. Two critic losses:
`aid_release_loss` (``use_huber_loss=False``, the released Gym-MuJoCo configurations, the chapter's default)
and `aid_loss` (the Huber branch of the generic / DMC script). Shapes: S seeds, N ensemble members, B batch;
tensors are (S, N, B) or (S, B).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def ensemble_uncertainty(q: torch.Tensor, sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """U_epi = Var_i Q_i (unbiased, ddof 1, as `torch.var`) and U_ale = mean_i sigma_i^2, over dim 1 (brief §2.2).

    For the equal-weight mixture (1/N) sum_i N(Q_i, sigma_i^2) the total variance is
    U_ale + (N - 1)/N U_epi (law of total variance): the code's ddof-1 variance is N/(N-1) times the
    mixture's epistemic term.
    """
    if q.shape[1] < 2:
        raise ValueError(f"ensemble uncertainty needs N >= 2 members (ddof-1 variance), got N = {q.shape[1]}")
    return q.var(dim=1, unbiased=True), (sigma**2).mean(dim=1)


def aid_lcb(q: torch.Tensor, sigma: torch.Tensor, lam_l: float, beta: torch.Tensor | float) -> torch.Tensor:
    """Q^LCB = Qbar - sqrt(lambda_L^2 U_epi + beta^2 U_ale) (brief §2.2, the adaptive weighted recombination).

    Special cases: beta = 0 gives the epistemic ensemble LCB Qbar - lambda_L std_i Q_i; lambda_L = beta = 0 the
    ensemble mean. ``beta`` is a scalar or one value per seed, shape (S, 1).
    """
    u_epi, u_ale = ensemble_uncertainty(q, sigma)
    return q.mean(dim=1) - torch.sqrt(lam_l**2 * u_epi + beta**2 * u_ale + 1e-12)


def epistemic_lcb(q: torch.Tensor, lam: float) -> torch.Tensor:
    """Qbar - lambda sqrt(Var_i Q_i): the exploit actor's objective (brief §2.2, "target policy")."""
    return q.mean(dim=1) - lam * torch.sqrt(q.var(dim=1, unbiased=True) + 1e-12)


def symmetric_ucb(q: torch.Tensor, sigma: torch.Tensor, lam_u: float, beta: torch.Tensor | float) -> torch.Tensor:
    """Qbar + sqrt(lambda_U^2 U_epi + beta^2 U_ale): the optimistic behaviour actor's objective (brief §2.2)."""
    u_epi, u_ale = ensemble_uncertainty(q, sigma)
    return q.mean(dim=1) + torch.sqrt(lam_u**2 * u_epi + beta**2 * u_ale + 1e-12)


def clip_sample_target(y_z: torch.Tensor, q_sg: torch.Tensor, sigma_bar: torch.Tensor, bound: float = 3.0) -> torch.Tensor:
    """y_z^b = Q + clip(y_z - Q, -3 sigma_bar, 3 sigma_bar) (DSAC-T refinement 3; sigma_bar per member)."""
    c = bound * sigma_bar
    return q_sg + torch.maximum(torch.minimum(y_z - q_sg, c), -c)


def dsact_loss(q: torch.Tensor, sigma: torch.Tensor, y_q: torch.Tensor, y_zb: torch.Tensor, sigma_bar: torch.Tensor,
               eps: float = 0.1, scale: torch.Tensor | None = None) -> torch.Tensor:
    """The DSAC-T variance-adjusted surrogate (brief §2.1, refinement 3), summed over members, mean over batch:

    L_i = (sigma_bar_i^2 + eps) E[ -(y_q - Q_i)^sg / (sigma_i^sg2 + eps) Q_i
                                   - ((Q_i^sg - y_zb)^2 - sigma_i^sg2) / (sigma_i^sg3 + eps) sigma_i ].

    Its gradients are the Gaussian-NLL gradients times (sigma_bar^2 + eps) sigma^2 / (sigma^2 + eps) (mean) and
    (sigma_bar^2 + eps) sigma^3 / (sigma^3 + eps) (std); ``scale`` overrides the factor (sigma_bar^2 + eps).
    """
    qs, ss = q.detach(), sigma.detach()
    factor = (sigma_bar**2 + eps) if scale is None else scale
    lq = -((y_q - qs) / (ss**2 + eps)) * q
    ls = -(((qs - y_zb) ** 2 - ss**2) / (ss**3 + eps)) * sigma
    return (factor * (lq + ls)).mean(dim=-1).sum(dim=-1)


def aid_release_loss(q: torch.Tensor, sigma: torch.Tensor, y_q: torch.Tensor, y_zb: torch.Tensor, sigma_bar: torch.Tensor,
                     u_epi: torch.Tensor, u_epi_bar: torch.Tensor, eps: float = 0.1, homogeneous: bool = True,
                     epi_step_scale: bool = True) -> torch.Tensor:
    """The DSAC-AID critic loss of the released Gym-MuJoCo configurations (``use_huber_loss=False``), per seed:

    L_i = -E[ rho_q,i Q_i (y_q - Q_i)^sg + rho_sigma,i sigma_i ((Q_i^sg - y_zb,i)^2 - sigma_i^sg2) / d_i ],
    rho_q = (sigma_bar_i^2 + Ubar_epi + eps) / (sigma_i^sg2 + U_epi(s, a) + eps)    (``epi_step_scale``; else
            without the two U_epi terms),
    homogeneous (humanoid):     rho_sigma = (sigma_bar_i^2 + eps) / (sigma_i^sg2 + eps), d_i = sigma_i^sg + eps;
    non-homogeneous (ant):      rho_sigma = (sigma_bar_i^2 + eps) / (sigma_i^sg3 + eps), d_i = 1;
    summed over members, eps = 0.1, no clipping of the ratios (the code clips them only in the Huber branch).

    Its gradient in Q_i is rho_q (Q_i - y_q): a weighted least-squares fit of the *mean* target; its gradient in
    sigma_i vanishes where E[(Q - y_zb)^2] = sigma^2: the variance fixed point of the Gaussian NLL (Theory).
    """
    qs, ss = q.detach(), sigma.detach().clamp_min(0.0)
    if epi_step_scale:
        rho_q = (sigma_bar**2 + u_epi_bar + eps) / (ss**2 + u_epi.unsqueeze(1) + eps)
    else:
        rho_q = (sigma_bar**2 + eps) / (ss**2 + eps)
    resid = (qs - y_zb) ** 2 - ss**2
    if homogeneous:
        ls = (sigma_bar**2 + eps) / (ss**2 + eps) * sigma * resid / (ss + eps)
    else:
        ls = (sigma_bar**2 + eps) / (ss**3 + eps) * sigma * resid
    lq = rho_q * q * (y_q - qs)
    return -(lq + ls).mean(dim=-1).sum(dim=-1)


def aid_loss(q: torch.Tensor, sigma: torch.Tensor, y_q: torch.Tensor, y_zb: torch.Tensor, sigma_bar: torch.Tensor,
             u_epi: torch.Tensor, u_epi_bar: torch.Tensor, eps: float = 0.1, delta: float = 50.0) -> torch.Tensor:
    """The DSAC-AID critic loss of the generic / DMC script (640e85a4, `use_huber_loss=True`), per seed:

    L_i = E[ rho_q Huber_delta(Q_i, y_q) + rho_sigma Huber_delta(sigma_i^2, (Q_i^sg - y_zb_i)^2) / (2 sigma_i^sg2 + eps) ],
    rho_q = clip((sigma_bar_i^2 + Ubar_epi + eps) / (sigma_i^sg2 + U_epi(s, a) + eps), 0.1, 10),
    rho_sigma = clip((sigma_bar_i^2 + eps) / (sigma_i^sg2 + eps), 0.01, 100); summed over members.

    With delta small against the reward's jumps this fits the Huber *location* of the target, not its mean (on a
    7 Bernoulli(0.1) reward with delta = 1: p / (1 - p) = 0.11 against the mean 0.7; `tests/test_dsac_aid.py`).
    """
    qs, ss2 = q.detach(), sigma.detach() ** 2
    rho_q = ((sigma_bar**2 + u_epi_bar + eps) / (ss2 + u_epi.unsqueeze(1) + eps)).clamp(0.1, 10.0)
    rho_s = ((sigma_bar**2 + eps) / (ss2 + eps)).clamp(0.01, 100.0)
    lq = rho_q * F.huber_loss(q, y_q.expand_as(q), reduction="none", delta=delta)
    ls = rho_s * F.huber_loss(sigma**2, (qs - y_zb) ** 2, reduction="none", delta=delta) / (2 * ss2 + eps)
    return (lq + ls).mean(dim=-1).sum(dim=-1)
