"""INFER: implicit neural frequency response fields (Takawale, Roy, Brown; ICML 2026; arXiv 2510.07442).

Model library of the ``infer`` chapter; equation references are to the research brief ``papers/infer.md``
(§2.1 renderer, §2.2 losses, §3 theory, §5 the scaled-down plan).

* data (pyroomacoustics stand-in for the paper's car cabins): :class:`CabinConfig`, :func:`simulate_cabin`
  -> :class:`CabinData`, :func:`receiver_grid`, :func:`ground_truth_at`, :func:`arrival_samples`, :func:`global_delay`,
  :func:`check_inside`, :func:`linkwitz_riley`, :func:`room_modes`
* Kramers-Kronig and weighting: :func:`hilbert_onesided`, :func:`hilbert_matrix`, :func:`kk_residual`,
  :func:`kk_relative_residual`, :func:`one_pole_slab`, :func:`reim_kk_residual`, :func:`minimum_phase_phase`,
  :func:`a_weighting_db`, :func:`perceptual_weight`, :func:`hardware_weight`, :func:`spectral_weights`
* models: :class:`InferField` (INFER-lite, ``variant="avr"`` = AVR-lite), :class:`FreqMLP`, :class:`TimeMLP`,
  :func:`sphere_directions`
* training: :func:`frequency_loss`, :func:`kk_loss`, :func:`time_loss`, :func:`train_model`, :func:`predict`,
  :func:`field_sigma_beta`
* metrics: :func:`magnitude_error_db`, :func:`angle_error`, :func:`wrapped_phase_error`, :func:`pre_arrival_energy`,
  :func:`per_receiver_errors`, :func:`early_energy_removed`, :func:`band_mask`
* experiments: :data:`MODELS`, :func:`run_all` -> :class:`Results`, :func:`evaluate`, :func:`ground_truth_kk`,
  :func:`slab_kk_error`, :func:`cabin_config`, :func:`make_model`; sizes: :data:`PRESETS`
"""
from __future__ import annotations

from .data import (SPEED_OF_SOUND, CabinConfig, CabinData, arrival_samples, cabin_responses, check_inside,
                   global_delay, ground_truth_at, linkwitz_riley, receiver_grid, room_modes, simulate_cabin, simulate_rirs)
from .experiments import (MODELS, Results, cabin_config, evaluate, ground_truth_kk, make_model, run_all, run_models,
                          slab_kk_error, training_recipe)
from .kk import (a_weighting_db, even_extension, hardware_weight, hilbert_circular, hilbert_matrix, hilbert_onesided,
                 kk_relative_residual, kk_residual, minimum_phase_phase, one_pole_slab, perceptual_weight,
                 reim_kk_residual, spectral_weights)
from .metrics import (angle_error, band_mask, early_energy_removed, magnitude_error_db, per_receiver_errors, pre_arrival_energy,
                      wrapped_phase_error)
from .model import FourierFeatures, FreqMLP, InferField, TimeMLP, sphere_directions
from .presets import PRESETS
from .train import TrainResult, field_sigma_beta, frequency_loss, kk_loss, predict, time_loss, train_model

__all__ = [
    "MODELS", "PRESETS", "SPEED_OF_SOUND", "CabinConfig", "CabinData", "FourierFeatures", "FreqMLP", "InferField",
    "Results", "TimeMLP", "TrainResult", "a_weighting_db", "angle_error", "arrival_samples", "band_mask",
    "cabin_config", "cabin_responses", "check_inside", "early_energy_removed", "evaluate", "even_extension", "field_sigma_beta",
    "frequency_loss", "global_delay", "ground_truth_at", "ground_truth_kk", "hardware_weight", "hilbert_circular", "hilbert_matrix",
    "hilbert_onesided", "kk_loss", "kk_relative_residual", "kk_residual", "linkwitz_riley", "magnitude_error_db",
    "make_model", "minimum_phase_phase", "one_pole_slab", "per_receiver_errors", "perceptual_weight", "pre_arrival_energy", "predict",
    "receiver_grid", "reim_kk_residual", "room_modes", "run_all", "run_models", "simulate_cabin", "simulate_rirs",
    "slab_kk_error", "spectral_weights", "sphere_directions", "time_loss", "train_model", "training_recipe",
    "wrapped_phase_error",
]
