"""ICR: evaluating the representation space of diffusion models (Li, Jia et al., ICML 2026; arXiv 2606.09718).

Model library of the ``icr`` chapter. Equation numbers refer to the paper as summarised in the research
brief ``papers/icr.md`` (Eq. 5: ICR; App. B.6: two-view estimator; App. D: Prop. D.1).

* data: :func:`load_digits_split`, :func:`training_subset`, :func:`augment`, :func:`perturb`, :data:`AUG_LEVELS`
* model: :class:`EDMDenoiser` (EDM preconditioning) around :class:`TinyUNet` (8x8 conv U-Net), :data:`LAYERS`
* training / sampling: :func:`train_edm`, :func:`heun_sample`, :func:`edm_sigmas`, :func:`empirical_optimal_denoiser`
* ICR: :func:`icr` (two-view), :func:`icr_multiview`, :func:`decompose_two_view`, :func:`decompose_views`,
  :func:`icr_from_covariances`, :func:`fisher_eigenvalues`, :func:`debiased_trace`, :func:`trace_ratio`, :func:`normalised_traces`
* metrics: :func:`linear_probe`, :func:`memorization_ratio`, :func:`nn_distances`, :func:`class_agreement_at_k`
* experiments: :func:`sigma_sweep`, :func:`training_trajectory`, :func:`estimator_robustness`, :data:`PRESETS`
"""
from __future__ import annotations

from .data import AUG_LEVELS, DigitsSplit, augment, load_digits_split, perturb, training_subset
from .experiments import (SigmaSweep, Trajectory, estimator_robustness, extract_views, log_checkpoints,
                          memorisation_onset, pixel_views, sigma_sweep, training_trajectory, views_needed)
from .icr import (ICRResult, alignment, debiased_trace, decompose_two_view, decompose_views, fisher_eigenvalues, icr,
                  icr_from_covariances, icr_multiview, l2_normalise, normalised_traces, trace_ratio)
from .metrics import class_agreement_at_k, linear_probe, memorization_ratio, nn_distances
from .model import LAYERS, EDMDenoiser, TinyUNet
from .presets import PRESETS
from .sampler import edm_sigmas, empirical_optimal_denoiser, heun_sample
from .train import TrainedEDM, edm_loss, train_edm

__all__ = [
    "AUG_LEVELS", "DigitsSplit", "EDMDenoiser", "ICRResult", "LAYERS", "PRESETS", "SigmaSweep", "TinyUNet",
    "TrainedEDM", "Trajectory", "alignment", "augment", "class_agreement_at_k", "debiased_trace", "decompose_two_view",
    "decompose_views", "edm_loss", "edm_sigmas", "empirical_optimal_denoiser", "estimator_robustness",
    "extract_views", "fisher_eigenvalues", "heun_sample", "icr", "icr_from_covariances", "icr_multiview",
    "l2_normalise", "linear_probe", "load_digits_split", "log_checkpoints", "memorisation_onset",
    "memorization_ratio", "nn_distances", "normalised_traces", "perturb", "pixel_views", "sigma_sweep",
    "trace_ratio", "train_edm", "training_subset", "training_trajectory", "views_needed",
]
