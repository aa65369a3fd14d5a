"""ICR: evaluating the representation space of diffusion models (Li, Jia et al., ICML 2026; arXiv 2606.09718).

Model library of the ``icr`` chapter. Equation numbers refer to the paper as summarised in the research
brief ``papers/icr.md`` (Eq. 4: Fisher directions; Eq. 5: ICR; App. B.6: two-view estimator; App. D: Prop. D.1).

* data: :func:`load_digits_split`, :func:`training_subset`, :func:`augment`, :func:`perturb`, :data:`AUG_LEVELS`
* model: :class:`EDMDenoiser` (EDM preconditioning) around :class:`TinyUNet` (8x8 conv U-Net), :data:`LAYERS`
* training / sampling: :func:`train_edm`, :func:`heldout_loss`, :func:`heun_sample`, :func:`edm_sigmas`,
  :func:`empirical_optimal_denoiser`
* estimators: :func:`icr` (two-view), :func:`icr_multiview`, :func:`decompose_two_view`, :func:`decompose_views`,
  :func:`icr_from_covariances`, :func:`regularised_residual`, :func:`fisher_eigenvalues`,
  :func:`lda_fisher_eigenvalues` (sklearn peer), :func:`debiased_trace`, :func:`plugin_mean_lambda_bias`,
  :func:`predicted_plugin_icr`, :func:`predicted_plugin_shift`, :func:`trace_ratio`, :func:`normalised_traces`
* metrics: :func:`linear_probe`, :func:`memorization_ratio`, :func:`nn_distances`, :func:`class_agreement_at_k`
* claim metrics: :func:`window_distance`, :func:`dip`, :func:`window_contrast`, :func:`early_stop_gain`,
  :func:`random_stop_gain`, :func:`stop_room`, :func:`energy_growth`, :func:`memorisation_rise`,
  :func:`limited_stats`, :func:`rich_stats`, :func:`spearman`, :func:`saturation`, :func:`crossing_step`,
  :func:`scaling_exponent`, :func:`rise_until`, :func:`stop_excess`, :func:`random_index_distance`,
  :func:`binned_curve`; theory: :func:`prop_d1_fixed_data`
* experiments: :func:`sigma_sweep`, :func:`icr_sigma_curve`, :func:`training_trajectory`, :func:`window_trajectory`,
  :func:`estimator_robustness`, :func:`rich_task`,
  :func:`limited_task`, :func:`run_tasks`, :data:`PRESETS`
"""
from __future__ import annotations

from .data import AUG_LEVELS, DigitsSplit, augment, load_digits_split, perturb, training_subset
from .estimators import (REGULARISERS, ICRResult, alignment, debiased_trace, decompose_two_view, decompose_views,
                         fisher_eigenvalues, icr, icr_from_covariances, icr_multiview, kappa, l2_normalise,
                         lda_fisher_eigenvalues, normalised_traces, plugin_mean_lambda_bias, predicted_plugin_icr,
                         prop_d1_fixed_data,
                         predicted_plugin_shift, regularised_residual, trace_ratio)
from .experiments import (SigmaSweep, Trajectory, crossing_step, dip, early_stop_gain, energy_growth, estimator_robustness,
                          extract_views, icr_sigma_curve, icr_variants, limited_stats, limited_task, log_checkpoints,
                          memorisation_onset, memorisation_rise, pixel_views, random_stop_gain, rich_stats, rich_task,
                          run_tasks, saturation, scaling_exponent, sigma_sweep, spearman, stop_room, training_trajectory, two_view_icr, views_needed,
                          window_contrast, window_distance, rise_until, stop_excess, random_index_distance,
                          window_trajectory, binned_curve)
from .metrics import class_agreement_at_k, linear_probe, memorised_fraction, memorization_ratio, nn_distances
from .model import LAYERS, EDMDenoiser, TinyUNet
from .presets import PRESETS
from .sampler import edm_sigmas, empirical_optimal_denoiser, heun_sample
from .train import TrainedEDM, edm_loss, heldout_loss, train_edm

__all__ = [
    "AUG_LEVELS", "DigitsSplit", "EDMDenoiser", "ICRResult", "LAYERS", "PRESETS", "REGULARISERS", "SigmaSweep",
    "TinyUNet", "TrainedEDM", "Trajectory", "alignment", "augment", "class_agreement_at_k", "debiased_trace",
    "decompose_two_view", "decompose_views", "edm_loss", "edm_sigmas", "empirical_optimal_denoiser",
    "estimator_robustness", "extract_views", "fisher_eigenvalues", "heldout_loss", "heun_sample", "icr",
    "icr_from_covariances", "icr_multiview", "icr_variants", "kappa", "l2_normalise", "lda_fisher_eigenvalues",
    "limited_task", "linear_probe", "load_digits_split", "log_checkpoints", "memorisation_onset",
    "memorised_fraction", "memorization_ratio", "nn_distances", "normalised_traces", "perturb", "pixel_views",
    "plugin_mean_lambda_bias", "predicted_plugin_icr", "predicted_plugin_shift", "regularised_residual", "rich_task", "run_tasks",
    "sigma_sweep", "trace_ratio", "train_edm", "training_subset", "training_trajectory", "views_needed",
    "dip", "early_stop_gain", "energy_growth", "limited_stats", "rich_stats", "spearman", "two_view_icr",
    "window_distance", "prop_d1_fixed_data", "icr_sigma_curve", "memorisation_rise", "random_stop_gain", "stop_room",
    "window_contrast", "saturation", "crossing_step", "scaling_exponent", "rise_until", "stop_excess",
    "random_index_distance", "window_trajectory", "binned_curve",
]
