"""Lion in centralized and distributed settings (Jiang et al., ICML 2026; arXiv 2508.12327).

Model library of the ``lion`` chapter. Algorithm / theorem numbers refer to the research brief
``papers/lion.md`` (Algorithms 1-4, Theorems 1-7, bounds B1-B7, objective O1); the brief's numbering,
not necessarily the paper's (its LaTeX labels suggest Lion and Lion-VR are two options of one box).

* optimizers (standard betas, ``beta_paper = 1 - beta_std``): :class:`Lion` (Alg. 1), :class:`LionVR`
  (Alg. 2, STORM), :class:`Signum`; :func:`paper_betas_to_std`, :func:`std_betas_to_paper`; the update
  rules in paper betas, shared by the simulator and the workers: :func:`lion_direction`,
  :func:`ema_momentum`, :func:`storm_direction`, :func:`storm_momentum`, :func:`lion_update`
* compression (Alg. 3-4): :func:`unbiased_sign`, :func:`majority_vote`, :func:`aggregate`,
  :func:`uplink`, :func:`downlink`, :func:`pack_signs`, :func:`unpack_signs`, :func:`payload_bits`
* objective O1 (separable or rotated-anisotropic) and schedules: :class:`PeriodicObjective`,
  :func:`theorem_schedule`, :func:`theorem_weight_decay`, :data:`METHODS`, :data:`BETA1_BANDS`
* simulator: :func:`simulate`, :func:`simulate_variants` -> :class:`SimResult`; :class:`Variant`;
  :func:`fit_loglog_slope`
* the majority-vote plateau from first principles (a birth-death chain): :func:`predicted_plateau`,
  :func:`ou_plateau`, :func:`vote_plus_probability`
* multi-process: :func:`run_distributed` -> ``{method: DistributedResult}``; :func:`lion_worker`
* digits: :class:`DigitsData`, :func:`train_digits` -> :class:`DigitsRun`
* experiments (what the notebook runs) and sizes: ``experiments``, :data:`PRESETS`
"""
from __future__ import annotations

from . import experiments
from .compression import (AGGREGATION_RULES, aggregate, downlink, majority_vote, pack_signs, payload_bits,
                          unbiased_sign, unpack_signs, uplink)
from .digits import (DISTRIBUTED_METHODS, SINGLE_NODE_METHODS, DigitsData, DigitsRun, label_skew_shards,
                     train_digits)
from .distributed import DistributedResult, WorkerConfig, lion_worker, run_distributed
from .objectives import PeriodicObjective, node_phases, random_rotation
from .optim import (Lion, LionVR, Signum, ema_momentum, lion_direction, lion_update, paper_betas_to_std,
                    std_betas_to_paper, storm_direction, storm_momentum)
from .presets import PRESETS
from .plateau import ou_plateau, predicted_plateau, stationary_law, vote_plus_probability
from .schedules import BETA1_BANDS, METHODS, STORM_INTERPOLATION, Schedule, theorem_schedule, theorem_weight_decay
from .simulator import RandomStream, SimResult, Variant, fit_loglog_slope, lion_loop, simulate, simulate_variants

__all__ = [
    "AGGREGATION_RULES", "BETA1_BANDS", "DISTRIBUTED_METHODS", "DigitsData", "DigitsRun", "DistributedResult",
    "Lion", "LionVR", "METHODS", "PRESETS", "PeriodicObjective", "RandomStream", "SINGLE_NODE_METHODS", "Schedule",
    "SimResult", "Signum", "Variant", "WorkerConfig", "aggregate", "downlink", "ema_momentum", "experiments",
    "fit_loglog_slope", "label_skew_shards", "lion_direction", "lion_loop", "lion_update", "lion_worker",
    "majority_vote", "node_phases", "ou_plateau", "pack_signs", "paper_betas_to_std", "payload_bits",
    "predicted_plateau", "random_rotation", "run_distributed", "simulate", "simulate_variants", "stationary_law",
    "std_betas_to_paper", "storm_direction", "storm_momentum", "STORM_INTERPOLATION", "theorem_schedule",
    "theorem_weight_decay", "train_digits", "unbiased_sign", "unpack_signs", "uplink", "vote_plus_probability",
]
