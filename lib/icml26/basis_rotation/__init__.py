"""Basis rotation against staleness in asynchronous pipeline parallelism (Jung, Shin & Lee, ICML 2026;
arXiv 2602.03515). Model library of the ``basis-rotation`` chapter; algorithm numbers refer to the
research brief ``papers/basis-rotation.md`` (Algorithm 1: Adam in a rotated basis, Algorithm 2:
eigenbasis estimation, section 2.1: asynchronous 1F1B with weight stashing).

* optimizers: :class:`BasisRotationAdam` (variants ``source`` in {"2nd", "1st"} x ``geometry`` in
  {"bi", "uni"}), :data:`METHODS` (AdamW / PipeDream-LR / NAdamW baselines, the four variants and the AdamW
  beta1 = 0.6 momentum control),
  :func:`make_stage_optimizer`, :func:`rotated_weights`, :func:`warmup_cosine`, :func:`pipedream_lr_factor`
* pipeline emulator: :func:`stage_delays`, :func:`split_stages`, :class:`AsyncPipeline`,
  :func:`train_pipeline` -> :class:`TrainRun`, :func:`iterations_to_target`
* models / data: :class:`DeepMLP`, :class:`TinyGPT`, :class:`TeacherRegression`, :func:`stdlib_corpus`,
  :class:`CharCorpus`
* toys: :func:`run_quadratic`, :func:`rotation2d`, :func:`random_rotation`, :func:`steady_state_loss`
* the paper's P = 32 numbers carried to the chapter's P by an *assumed* rule (equivalent staleness, exponent
  alpha) and its band: :func:`equivalent_staleness`, :func:`scaled_slowdown`, :func:`scaled_ratio`,
  :func:`scaled_reduction`, :data:`CARRY_LAWS`, :func:`carry_band`, :func:`lenient_end`, :func:`band_reading`,
  :func:`fit_alpha`; censored slowdowns: :func:`seed_slowdown`, :func:`censoring_reason`
* coverage (issue 53, item 6): :func:`depth_growth` (the depth pathology), :func:`stash_degradation` and
  :func:`final_loss` (training without weight stashing, ``train_pipeline(..., stash=False)``),
  :func:`split_freqs` (the two-level refresh allocation of the direction test), :func:`intersection_union`
* fidelity: :mod:`~icml26.basis_rotation.reference` (the golden fixture of the official class's outputs,
  :func:`~icml26.basis_rotation.reference.golden_differential`; a paraphrase of the official step; the SOAP cross-check)
* Hessian diagnostic: :func:`l11_ratio`, :func:`weight_hessian`, :func:`rotate_hessian`, :func:`cauchy_l11_estimate`
* experiments / sizes: :func:`delay_sweep`, :func:`exact_invariance`, :func:`trajectories_2d`,
  :func:`mlp_task`, :func:`gpt_task`, :func:`slowdown_sweep`, :func:`slowdown_table`, :func:`mean_curve`,
  :func:`hessian_diagnostic` (with a random-rotation control), :func:`pipeline_block_misalignment` (the pipeline MLP's
  own blocks, Hessian-vector products only), :data:`PRESETS`
* the headline at matched synchronous speed (claim C4m): :func:`fastest_lr`, :func:`matched_lr`, :func:`secant_lr` (the rule
  that picks each method's learning rate from its grid), :func:`lr_frontier` (slowdown against synchronous speed over a
  grid) and :func:`frontier_at` (read between its rates), :func:`subset_seeds` (per-seed pairs across experiments with fewer seeds);
  :func:`matched_speed_runs` (the whole rule: grids, secant step, chosen rates, frontier),
  :func:`async_tuned` (each method at its rate with the fewest iterations at depth: claims C4t, C4ts)
* parallel runs: :func:`run_sweeps` (several sweeps at once, in a pool of single-thread workers), :func:`pool_map` (any
  seeded module-level job, the toys, in the same pool), :func:`pool_workers`, :func:`sweep_workers`
* readings before a verdict (:mod:`~icml26.basis_rotation.verdicts`): :func:`gate`, :func:`pipeline_reason`,
  :func:`censored_ratio_reason`, :func:`compare_censored`, :func:`join_reasons`
"""
from __future__ import annotations

from .data import STDLIB_MODULES, CharCorpus, TeacherRegression, stdlib_corpus
from .experiments import (Task, alignment_sweep, async_tuned, censoring_reason, delay_sweep, depth_growth, exact_invariance,
                          fastest_lr, final_loss, gpt_task, matched_speed_runs, hessian_diagnostic, pipeline_block_misalignment, intersection_union, levels_2d, lr_frontier, frontier_at,
                          matched_lr, mean_curve, mlp_task, r_2d, run_sweeps, secant_lr, seed_iterations, seed_slowdown, slowdown_sweep,
                          slowdown_table, slowdown_vs_target, stash_degradation, stash_mode_gaps, subset_seeds,
                          sweep_workers, pool_map, pool_workers, trajectories_2d)
from .hessian import cauchy_l11_estimate, l11_ratio, rotate_hessian, weight_hessian
from .models import DeepMLP, TinyGPT
from .optim import (BASELINES, METHODS, VARIANTS, BasisRotationAdam, MultiOptimizer, make_stage_optimizer,
                    pipedream_lr_factor, rotated_weights, warmup_cosine)
from .pipeline import (T_CORR_FRACTION, WARMUP_FRACTION, AsyncPipeline, TrainRun, iterations_to_target, split_freqs,
                       split_stages, stage_aware_freqs, stage_delays, train_pipeline)
from .presets import PRESETS
from .theory import (CARRY_LAWS, PAPER_P, PAPER_SLOWDOWN, PAPER_SYNC_RATIO, band_reading, strict_end, carry_band, equivalent_staleness,
                     fit_alpha, lenient_end, scaled_ratio, scaled_reduction, scaled_slowdown)
from .verdicts import censored_ratio_reason, compare_censored, gate, join_reasons, pipeline_reason
from .toys import (KRON_METHODS, TOY_METHODS, QuadraticRun, kronecker_regression, random_rotation, rotation2d,
                   run_quadratic, steady_state_loss, update_alignment)

__all__ = [
    "AsyncPipeline", "BASELINES", "BasisRotationAdam", "CharCorpus", "DeepMLP", "METHODS", "MultiOptimizer",
    "PRESETS", "QuadraticRun", "STDLIB_MODULES", "TOY_METHODS", "Task", "TeacherRegression", "TinyGPT", "TrainRun",
    "VARIANTS", "cauchy_l11_estimate", "delay_sweep", "exact_invariance", "gpt_task", "hessian_diagnostic",
    "iterations_to_target", "l11_ratio", "make_stage_optimizer", "mean_curve", "mlp_task", "pipedream_lr_factor",
    "random_rotation", "rotate_hessian", "rotated_weights", "rotation2d", "run_quadratic", "slowdown_sweep",
    "slowdown_table", "split_stages", "stage_delays", "stdlib_corpus", "steady_state_loss", "train_pipeline",
    "trajectories_2d", "warmup_cosine", "alignment_sweep", "levels_2d", "r_2d", "seed_iterations",
    "slowdown_vs_target", "PAPER_P", "PAPER_SLOWDOWN", "PAPER_SYNC_RATIO", "equivalent_staleness", "scaled_ratio",
    "scaled_reduction", "scaled_slowdown", "CARRY_LAWS", "band_reading", "carry_band", "fit_alpha", "lenient_end", "strict_end",
    "censoring_reason", "seed_slowdown", "depth_growth", "final_loss", "intersection_union", "stash_degradation",
    "split_freqs", "T_CORR_FRACTION", "WARMUP_FRACTION", "stage_aware_freqs", "update_alignment", "kronecker_regression",
    "KRON_METHODS", "fastest_lr", "matched_lr", "secant_lr", "subset_seeds", "stash_mode_gaps", "run_sweeps",
    "sweep_workers", "pool_map", "pool_workers", "lr_frontier", "frontier_at", "async_tuned", "pipeline_block_misalignment", "matched_speed_runs", "censored_ratio_reason", "compare_censored", "gate", "join_reasons",
    "pipeline_reason",
]
