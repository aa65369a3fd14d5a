"""Per-member re-statements of the official updates, the oracles for the fidelity checks (F1) and the tests:
the critic loss (`official_critic_loss`), the two actor losses (`official_policy_loss`,
`official_behaviour_loss`) and the trainer's beta loop with torch's Adam (`official_beta_trainer`).

`official_critic_loss` follows `DSACAID._compute_loss_q` and `_compute_target_q` of
`yzy-yuzhouyang/GOPS` (`gops/algorithm/dsacaid.py`, commit 640e85a4) step by step for one seed, with a Python
loop over the N critics and the code's order of operations: the per-member EMA sigma_bar_i and the EMA of the
mean ensemble variance are advanced with the current batch *before* the loss; the LCB of the target critics at
(s', a') is Qbar' - lambda_L sqrt(clip(U_epi' + (beta / lambda_L)^2 U_ale', 1e-8)); the sample target of member i
is r + gamma (1 - d)(z'_i - alpha log pi(a'|s')) with z'_i = Q'_i + clip(xi_i, +-3) sigma'_i, clipped to
Q_i +- 3 sigma_bar_i; the loss is the Huber or the non-Huber branch with eps (the code's ``bias``) = 0.1.
It is written for reading against the code, not for speed; the library's batched `BatchedAgent.losses`
must agree with it to 1e-6 (tests and the chapter's claim F1).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class OfficialState:
    """The official algorithm's running statistics (None before the first batch, as in the code)."""

    mean_sigmas: list[torch.Tensor | None]
    mean_u_epistemic: torch.Tensor | None = None
    mean_uncertainty: torch.Tensor | None = None


def official_critic_loss(qs: list[torch.Tensor], sigmas: list[torch.Tensor], q_next: list[torch.Tensor],
                         sigma_next: list[torch.Tensor], xi: list[torch.Tensor], rew: torch.Tensor, done: torch.Tensor,
                         log_prob_next: torch.Tensor, *, alpha: float, beta: float, gamma: float, lambda_lower: float,
                         tau_b: float, state: OfficialState, use_huber_loss: bool, homogeneous: bool,
                         epi_step_scale: bool, delta: float = 50.0) -> torch.Tensor:
    """The official critic loss of one seed (module docstring). ``qs[i], sigmas[i]``: online member i at (s, a),
    shape (B,), with gradients; ``q_next, sigma_next``: target members at (s', a'); ``xi[i]``: member i's standard
    normal draws for z'_i; ``state`` is updated in place like the code's attributes."""
    n = len(qs)
    bias = 0.1
    for i in range(n):   # EMA of each member's batch-mean sigma, before the loss
        m = torch.mean(sigmas[i].detach())
        state.mean_sigmas[i] = m if state.mean_sigmas[i] is None else (1 - tau_b) * state.mean_sigmas[i] + tau_b * m
    q_tensor = torch.stack(qs).detach()
    u_epistemic = torch.var(q_tensor, dim=0)
    m = torch.mean(u_epistemic)
    state.mean_u_epistemic = m if state.mean_u_epistemic is None else (1 - tau_b) * state.mean_u_epistemic + tau_b * m
    with torch.no_grad():
        qn = torch.stack(q_next)
        u_next_epi = torch.var(qn, dim=0)
        u_next_ale = torch.mean(torch.stack(sigma_next) ** 2, dim=0)
        factor = (beta / lambda_lower) ** 2
        uncertainty = torch.sqrt(torch.clip(u_next_epi + factor * u_next_ale, min=1e-8))
        target_q_next = torch.mean(qn, dim=0) - lambda_lower * uncertainty
        mu = lambda_lower * torch.mean(uncertainty)
        state.mean_uncertainty = mu if state.mean_uncertainty is None else \
            (1 - tau_b) * state.mean_uncertainty + tau_b * mu
    total = 0.0
    for i in range(n):
        z_next = q_next[i] + torch.clamp(xi[i], -3, 3) * sigma_next[i]
        target_q = (rew + (1 - done) * gamma * (target_q_next - alpha * log_prob_next)).detach()
        target_z = rew + (1 - done) * gamma * (z_next - alpha * log_prob_next)
        bound = 3 * state.mean_sigmas[i]
        target_zb = (qs[i].detach() + torch.clamp(target_z - qs[i].detach(), -bound, bound)).detach()
        s_sg = torch.clamp(sigmas[i], min=0.0).detach()
        if epi_step_scale:
            q_ratio = (state.mean_sigmas[i] ** 2 + state.mean_u_epistemic + bias) / (s_sg**2 + u_epistemic + bias)
        else:
            q_ratio = (state.mean_sigmas[i] ** 2 + bias) / (s_sg**2 + bias)
        if homogeneous:
            s_ratio = (state.mean_sigmas[i] ** 2 + bias) / (s_sg**2 + bias)
        else:
            s_ratio = (state.mean_sigmas[i] ** 2 + bias) / (s_sg**3 + bias)
        if use_huber_loss:
            q_ratio, s_ratio = q_ratio.clamp(0.1, 10), s_ratio.clamp(0.01, 100)
            resid = (qs[i].detach() - target_zb) ** 2
            loss = torch.mean(q_ratio * F.huber_loss(qs[i], target_q, delta=delta, reduction="none")
                              + s_ratio * F.huber_loss(sigmas[i] ** 2, resid, delta=delta, reduction="none")
                              / (2 * s_sg**2 + bias))
        else:
            sig_term = s_ratio * sigmas[i] * ((qs[i].detach() - target_zb) ** 2 - s_sg**2)
            if homogeneous:
                sig_term = sig_term / (s_sg + bias)
            loss = -torch.mean(q_ratio * qs[i] * (target_q - qs[i]).detach() + sig_term)
        total = total + loss
    return total


def official_policy_loss(qs: list[torch.Tensor], log_prob: torch.Tensor, *, alpha: float, lambda_lower: float) -> torch.Tensor:
    """`DSACAID._compute_loss_policy` for one seed: mean(alpha log pi(a|s) - (Qbar - lambda_L sqrt(clamp(Var_i Q_i, 1e-8))))
    with ``qs[i]`` member i's Q at the freshly sampled action a ~ pi (B,) and alpha a number (no gradient)."""
    q_all = torch.stack(qs)
    u_epistemic = torch.var(q_all, dim=0)
    target_q = torch.mean(q_all, dim=0) - lambda_lower * torch.sqrt(torch.clamp(u_epistemic, min=1e-8))
    return (alpha * log_prob - target_q).mean()


def official_behaviour_loss(qs: list[torch.Tensor], sigmas: list[torch.Tensor], log_prob: torch.Tensor, *, alpha: float,
                            beta: float, lambda_upper: float) -> torch.Tensor:
    """`DSACAID._compute_loss_behavior_policy` for one seed: mean(alpha log pi_b - (Qbar + lambda_U sqrt(clip(U_epi +
    (beta / lambda_U)^2 U_ale, 1e-8)))) at a ~ pi_b (the symmetric UCB)."""
    q_all = torch.stack(qs)
    u_epistemic = torch.var(q_all, dim=0)
    u_aleatoric = torch.mean(torch.stack(sigmas) ** 2, dim=0)
    factor = (beta / lambda_upper) ** 2
    target_q = torch.mean(q_all, dim=0) + lambda_upper * torch.sqrt(torch.clip(u_epistemic + factor * u_aleatoric, min=1e-8))
    return (alpha * log_prob - target_q).mean()


def official_beta_trainer(biases: list[float], mean_uncertainty: list[float], *, beta0: float, lr: float,
                          q_bias_lower_threshold: float, freeze_early_beta: bool) -> list[float]:
    """The trainer's beta loop for one seed (`OffSerialDsacaidTrainer.step`, `DSACAID.local_update`,
    `_compute_gradient`'s beta branch, `_compute_loss_beta`, `_get_beta`), one evaluation event at a time, with
    torch's own Adam on the scalar parameter: while ``early_stage_flag`` the event's overestimation is 0 (the flag
    drops at the first bias > 0.2 q_thr); an overestimation > 0 skips the step; else loss = -beta *
    max(b, q_thr) / max(Ubar, 0.1), one Adam step, and beta is clamped at 0 when read. ``mean_uncertainty[k]`` is
    Ubar at event k. Returns beta after each event. (Synchronous: the code consumes an evaluation one interval
    late, through Ray.)"""
    beta = torch.nn.Parameter(torch.tensor(beta0, dtype=torch.float64))
    opt = torch.optim.Adam([beta], lr=lr)
    early = bool(freeze_early_beta)
    out = []
    for b, u in zip(biases, mean_uncertainty):
        if early:
            if b > 0.2 * q_bias_lower_threshold:
                early = False
            over = 0.0
        else:
            over = float(b)
        if not over > 0:
            over = max(over, q_bias_lower_threshold) / max(float(u), 0.1)
            opt.zero_grad()
            (-beta * over).backward()
            opt.step()
        if beta.item() < 0:
            with torch.no_grad():
                beta.fill_(0.0)
        out.append(beta.item())
    return out


def official_dsact_loss(q1: torch.Tensor, q1_std: torch.Tensor, q2: torch.Tensor, q2_std: torch.Tensor,
                        q1_next: torch.Tensor, q1_next_std: torch.Tensor, q2_next: torch.Tensor, q2_next_std: torch.Tensor,
                        z1: torch.Tensor, z2: torch.Tensor, rew: torch.Tensor, done: torch.Tensor,
                        log_prob_next: torch.Tensor, *, alpha: float, gamma: float, tau_b: float,
                        mean_stds: list[torch.Tensor | None]) -> torch.Tensor:
    """DSAC-T's non-Huber critic loss for one seed, transcribed from the equations of `DSACT._compute_loss_q` and
    `_compute_target_q` (`yzy-yuzhouyang/GOPS`, `gops/algorithm/dsact.py`, ``use_huber_loss=False``), written
    independently of the library's batched `losses.dsact_loss` (review of 5287791: the DSAC-T oracle F2):

    * each critic's EMA of its batch-mean std (``mean_stds[k]``, None before the first batch) advances *before* the loss;
    * z'_k = Q'_k + clamp(z_k, +-3) sigma'_k for each target critic; q_next = min(Q'_1, Q'_2) and the sample of the
      critic that is smaller; y_q = r + (1 - d) gamma (q_next - alpha log pi'), y_z likewise with the sample;
    * y_z is clipped to Q_k +- 3 mean_std_k; eps ("bias") = 0.1;
    * L_k = (mean_std_k^2 + eps) mean[-(y_q - Q_k)^sg / (sigma_k^sg2 + eps) Q_k
                                      - ((Q_k^sg - y_zb)^2 - sigma_k^sg2) / (sigma_k^sg3 + eps) sigma_k].

    All tensors (B,); ``mean_stds`` is updated in place. Returns L_1 + L_2."""
    eps = 0.1
    for k, std in enumerate((q1_std, q2_std)):
        m = torch.mean(std.detach())
        mean_stds[k] = m if mean_stds[k] is None else (1 - tau_b) * mean_stds[k] + tau_b * m
    s1, s2 = q1_next + torch.clamp(z1, -3, 3) * q1_next_std, q2_next + torch.clamp(z2, -3, 3) * q2_next_std
    q_next = torch.min(q1_next, q2_next)
    q_next_sample = torch.where(q1_next < q2_next, s1, s2)
    y_q = (rew + (1 - done) * gamma * (q_next - alpha * log_prob_next)).detach()
    y_s = rew + (1 - done) * gamma * (q_next_sample - alpha * log_prob_next)
    total = torch.zeros(())
    for q, std, ms in ((q1, q1_std, mean_stds[0]), (q2, q2_std, mean_stds[1])):
        bound = 3 * ms.detach()
        y_zb = (q.detach() + torch.clamp(y_s - q.detach(), -bound, bound)).detach()
        sd = torch.clamp(std, min=0.0).detach()
        total = total + (ms.detach() ** 2 + eps) * torch.mean(
            -(y_q - q).detach() / (sd**2 + eps) * q - ((q.detach() - y_zb) ** 2 - sd**2) / (sd**3 + eps) * std)
    return total
