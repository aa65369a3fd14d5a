"""Lion in centralized and distributed settings (Jiang et al., ICML 2026; arXiv 2508.12327).

Model library of the ``lion`` chapter. Algorithm / theorem numbers refer to the research brief
``papers/lion.md`` (Algorithms 1-4, Theorems 1-7, bounds B1-B7, objective O1).

* optimizers (standard betas, ``beta_paper = 1 - beta_std``): :class:`Lion` (Alg. 1), :class:`LionVR`
  (Alg. 2, STORM), :class:`Signum`; :func:`paper_betas_to_std`, :func:`std_betas_to_paper`
* compression (Alg. 3-4): :func:`unbiased_sign`, :func:`majority_vote`, :func:`aggregate`,
  :func:`uplink`, :func:`downlink`, :func:`pack_signs`, :func:`unpack_signs`, :func:`payload_bits`
* objective O1 and schedules: :class:`PeriodicObjective`, :func:`theorem_schedule`, :data:`METHODS`
* simulator: :func:`simulate` -> :class:`SimResult`; :func:`fit_loglog_slope`
* multi-process: :func:`run_distributed` -> ``{method: DistributedResult}``; :func:`lion_worker`
* digits: :class:`DigitsData`, :func:`train_digits` -> :class:`DigitsRun`
* experiments / sizes: :func:`run_all`, :func:`summarize`, :data:`PRESETS`
"""
from __future__ import annotations

from .compression import (AGGREGATION_RULES, aggregate, downlink, majority_vote, pack_signs, payload_bits,
                          unbiased_sign, unpack_signs, uplink)
from .digits import (DISTRIBUTED_METHODS, SINGLE_NODE_METHODS, DigitsData, DigitsRun, label_skew_shards,
                     train_digits)
from .distributed import DistributedResult, WorkerConfig, lion_worker, run_distributed
from .experiments import (REGIMES, ExperimentSet, d_scaling_experiment, distributed_demo, digits_experiment, mv_plateau_experiment,
                          rate_experiment, run_all, slopes, speedup_experiment, summarize)
from .objectives import PeriodicObjective, node_phases
from .optim import Lion, LionVR, Signum, paper_betas_to_std, std_betas_to_paper
from .presets import PRESETS
from .schedules import METHODS, Schedule, theorem_schedule
from .simulator import RandomStream, SimResult, fit_loglog_slope, lion_loop, simulate

__all__ = [
    "AGGREGATION_RULES", "DISTRIBUTED_METHODS", "DigitsData", "DigitsRun", "DistributedResult", "ExperimentSet",
    "Lion", "LionVR", "METHODS", "PRESETS", "PeriodicObjective", "REGIMES", "RandomStream", "SINGLE_NODE_METHODS",
    "Schedule", "SimResult", "Signum", "WorkerConfig", "aggregate", "d_scaling_experiment", "digits_experiment", "distributed_demo",
    "downlink", "fit_loglog_slope", "label_skew_shards", "lion_loop", "lion_worker", "majority_vote",
    "mv_plateau_experiment", "node_phases", "pack_signs", "paper_betas_to_std", "payload_bits", "rate_experiment",
    "run_all", "run_distributed", "simulate", "slopes", "speedup_experiment", "std_betas_to_paper", "summarize",
    "theorem_schedule", "train_digits", "unbiased_sign", "unpack_signs", "uplink",
]
