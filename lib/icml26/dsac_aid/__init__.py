"""DSAC-AID: Taming the Aleatoric Impulse in Off-Policy RL (ICML 2026), scaled-down reproduction.

Public API: the JackpotLine testbed and the NoisyReward wrapper (`envs`), batched MLPs (`nets`), the critic
targets and losses of SAC / DSAC-T / DSAC-AID (`losses`), a per-member re-statement of the official critic loss
for the fidelity checks (`reference`), the agents and the released configurations (`agents`), replay, training
loop and the soft-MC evaluator (`training`), the experiments (`experiments`) and `PRESETS`.
"""
from __future__ import annotations

from .agents import AGENTS, PAPER_BETA_EVENTS, RELEASED, AgentConfig, BatchedAgent, agent_config, events_scaled_beta_lr
from .envs import JACKPOT_ENV_ID, VARIANTS, JackpotLine, NoisyReward, make_jackpot, register_envs, true_q
from .experiments import SURGE_DESIGN, SURGE_WINDOW, JackpotRun, surge_overestimate, t_power, beta_events, clipped_sigma_fixed_point, analytic_sigma, impulse, late_mean, run_control, warmup_design, dsact_fidelity_gap, run_jackpot, toy_config
from .losses import aid_lcb, aid_loss, aid_release_loss, clip_sample_target, dsact_loss, ensemble_uncertainty, epistemic_lcb, symmetric_ucb
from .nets import BatchedMLP, polyak_
from .presets import PRESETS
from .reference import OfficialState, official_dsact_loss, official_behaviour_loss, official_beta_trainer, official_critic_loss, official_policy_loss
from .training import BatchedReplay, TrainLog, soft_mc_bias, train

register_envs()

__all__ = [
    "AGENTS", "RELEASED", "OfficialState", "official_behaviour_loss", "official_beta_trainer", "official_critic_loss", "official_policy_loss", "aid_release_loss", "late_mean", "AgentConfig", "BatchedAgent", "BatchedMLP", "BatchedReplay", "JACKPOT_ENV_ID", "JackpotLine", "JackpotRun",
    "NoisyReward", "PRESETS", "TrainLog", "VARIANTS", "agent_config", "PAPER_BETA_EVENTS", "events_scaled_beta_lr", "beta_events", "clipped_sigma_fixed_point", "aid_lcb", "aid_loss", "clip_sample_target",
    "dsact_loss", "ensemble_uncertainty", "epistemic_lcb", "impulse", "make_jackpot", "polyak_", "analytic_sigma", "warmup_design", "dsact_fidelity_gap",
    "official_dsact_loss", "SURGE_DESIGN", "SURGE_WINDOW", "surge_overestimate", "t_power",
    "register_envs", "run_control", "run_jackpot", "soft_mc_bias", "symmetric_ucb", "toy_config", "train", "true_q",
]
