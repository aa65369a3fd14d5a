"""icml26.bfq: Bootstrapped Flow Q-Learning (BFQ, arXiv 2606.10613) and its baselines on generated offline data.

* `FlowMapPolicy`: the flow-map policy pi_theta(a_t, r, t; s) = a_t - (t - r) u_theta, its one-step
  sampler and the composition / boundary / L_BC losses (`flowmap`).
* `BehaviorRegularizedAgent`: the DQL/OFQL actor-critic scaffold shared by BC, TD3+BC, DQL-5, FQL,
  FM-K, OFQL-lite and BFQ (`agent`); baselines' generative models in `baselines`, OFQL-lite's MeanFlow
  policy in `meanflow`.
* Data: 2-D toys, `Bandit4Env`, scripted behaviour on Reacher-v5 / Pendulum-v1 / MountainCar (`data`).
* `theory`: the Gaussian closed forms and the linear-Gaussian fixed point of L_BC.
"""
from .agent import GRID_KNOB, METHODS, AgentConfig, BehaviorRegularizedAgent, scaled_dql_ema
from .baselines import DeterministicActor, DiffusionPolicy, FlowMatchingPolicy, NoiseActor, TwinCritic, vp_beta_schedule
from .conventions import from_fql_velocity, interpolate, to_fql_time, to_fql_velocity, velocity_target
from .data import (BANDIT_MODES, BANDIT_SIGMA, DATASETS, ENVS, TOYS, Bandit4Env, OfflineDataset, ScriptedPolicy,
                   bandit_dataset, bandit_reward, evaluate, evaluate_bandit, mode_coverage, normalized_score, parse_dataset, reference_returns, rollout_dataset,
                   toy_samples)
from .flowmap import FlowMapPolicy, check_times, member_lambdas
from .meanflow import MeanFlowPolicy
from .metrics import sliced_w2
from .nets import EnsembleMLP, sinusoidal_embedding
from .presets import PRESETS
from .theory import euler_slope, linear_gaussian_fixed_point

__all__ = [
    "AgentConfig", "GRID_KNOB", "MeanFlowPolicy", "bandit_dataset", "bandit_reward", "evaluate_bandit", "BANDIT_MODES", "BANDIT_SIGMA", "Bandit4Env", "BehaviorRegularizedAgent", "DATASETS",
    "DeterministicActor", "DiffusionPolicy", "ENVS", "EnsembleMLP", "FlowMapPolicy", "FlowMatchingPolicy", "METHODS",
    "NoiseActor", "OfflineDataset", "PRESETS", "ScriptedPolicy", "TOYS", "TwinCritic", "check_times", "euler_slope",
    "evaluate", "from_fql_velocity", "interpolate", "linear_gaussian_fixed_point", "member_lambdas", "mode_coverage",
    "normalized_score", "parse_dataset", "reference_returns", "rollout_dataset", "scaled_dql_ema", "sinusoidal_embedding", "sliced_w2",
    "to_fql_time", "to_fql_velocity", "toy_samples", "velocity_target", "vp_beta_schedule",
]
