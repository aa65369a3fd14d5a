"""INFER: implicit neural frequency response fields (Takawale, Roy, Brown; ICML 2026; arXiv 2510.07442).

Model library of the ``infer`` chapter; the paper's equation numbers are not public, so references are
to the research brief ``papers/infer.md`` (§2.1 renderer, §2.2 losses, §3 theory, §5 the scaled-down plan).

* data (pyroomacoustics stand-in for the paper's car cabins): :class:`CabinConfig`, :func:`simulate_cabin`
  -> :class:`CabinData`, :func:`receiver_grid`, :func:`ground_truth_at`, :func:`arrival_samples`, :func:`global_delay`,
  :func:`check_inside`, :func:`linkwitz_riley`, :func:`room_modes`
* Kramers-Kronig and weighting: :func:`hilbert_onesided`, :func:`hilbert_matrix`, :func:`kk_residual` (free delay,
  constant or nothing), :func:`kk_relative_residual`, :func:`negative_time_energy`, :func:`slab_factor`,
  :func:`one_pole_slab`, :func:`reim_kk_residual`, :func:`minimum_phase_phase`, :func:`a_weighting_db`,
  :func:`perceptual_weight`, :func:`hardware_weight`, :func:`spectral_weights`
* models: :class:`InferField` (INFER-lite; ``variant="scalar"`` the scalar-sigma ablation), :class:`AVRField`
  (hybrid AVR-lite), :class:`FreqMLP` (FD-MLP, optionally with the ToF mask), :class:`TimeMLP`, :class:`NAFField`
  (NAF-lite: log-magnitude STFT field, Griffin-Lim phase),
  :func:`sphere_directions`, :func:`render_reference` (the vendored renderer's structure: real cumprod, phase cumsum), :func:`finest_period`
* training: :func:`frequency_loss`, :func:`kk_loss`, :func:`time_loss`, :func:`avr_loss`, :func:`train_model`, :func:`predict`,
  :func:`field_sigma_beta`
* metrics: :func:`magnitude_error_db`, :func:`angle_error`, :func:`wrapped_phase_error`, :func:`pre_arrival_energy`,
  :func:`per_receiver_errors`, :func:`early_energy_removed`, :func:`band_mask`, :func:`avr_battery` (AVR's own
  metric definitions)
* experiments: :data:`MODELS`, :data:`BASELINES`, :data:`PAPER_BASELINES`, :func:`run_all` -> :class:`Results`,
  :func:`evaluate`, :func:`field_diagnostics`, :func:`ground_truth_checks`, :func:`nuisance_study`,
  :func:`slab_kk_error`, :func:`geometric_delay`, :func:`renderer_agreement` (renderer fidelity), :func:`cabin_config`,
  :func:`make_model`; sizes: :data:`PRESETS`
"""
from __future__ import annotations

from .data import (SPEED_OF_SOUND, CabinConfig, CabinData, arrival_samples, cabin_responses, check_inside,
                   global_delay, ground_truth_at, linkwitz_riley, receiver_grid, room_modes, simulate_cabin, simulate_rirs)
from .experiments import (BASELINES, LAMBDA_SWEEP, MODELS, PAPER_BASELINES, Results, anechoic_control, cabin_config,
                          evaluate, field_diagnostics, ground_truth_checks, make_model, min_phase_error, n_parameters, nearest_receiver,
                          position_blind, render_sampling_ratio, tune, validation_split, family,
                          FAMILIES, FAMILY_PROBES, ORACLES, TUNE_SEED, geometric_delay, renderer_agreement, training_signature,
                          nuisance_study, ray_causality, run_all, slab_kk_error, training_recipe)
from .kk import (MAX_SLOPE, NUISANCES, a_weighting_db, even_extension, hardware_weight, hilbert_circular, hilbert_matrix,
                 hilbert_onesided, kk_relative_residual, kk_residual, minimum_phase_phase, negative_time_energy,
                 one_pole_slab, perceptual_weight, reim_kk_residual, slab_factor, spectral_weights)
from .metrics import (angle_error, avr_battery, band_mask, early_energy_removed, magnitude_error_db,
                      per_receiver_errors, pre_arrival_energy, wrapped_phase_error)
from .model import (AVRField, FourierFeatures, FreqMLP, InferField, NAFField, TimeMLP, finest_period, render_fields,
                    render_reference, sphere_directions, transmittance_terms)
from .presets import PRESETS
from .train import (TrainResult, avr_loss, edc_loss, field_sigma_beta, frequency_loss, kk_loss, log_spectral_loss,
                    naf_loss, predict, time_loss, train_model)

__all__ = [
    "AVRField", "BASELINES", "LAMBDA_SWEEP", "MAX_SLOPE", "MODELS", "NUISANCES", "PAPER_BASELINES", "PRESETS",
    "SPEED_OF_SOUND", "CabinConfig", "CabinData", "FourierFeatures", "FreqMLP", "InferField", "Results", "TimeMLP",
    "TrainResult", "a_weighting_db", "avr_battery", "anechoic_control", "angle_error", "arrival_samples", "avr_loss", "edc_loss",
    "band_mask", "cabin_config", "cabin_responses", "check_inside", "early_energy_removed", "evaluate",
    "even_extension", "field_diagnostics", "field_sigma_beta", "finest_period", "frequency_loss", "global_delay",
    "ground_truth_at", "ground_truth_checks", "hardware_weight", "hilbert_circular", "hilbert_matrix",
    "hilbert_onesided", "kk_loss", "kk_relative_residual", "kk_residual", "linkwitz_riley", "magnitude_error_db",
    "make_model", "min_phase_error", "minimum_phase_phase", "n_parameters", "nearest_receiver", "negative_time_energy", "nuisance_study",
    "one_pole_slab", "per_receiver_errors", "ray_causality", "perceptual_weight", "position_blind", "pre_arrival_energy", "predict", "receiver_grid",
    "reim_kk_residual", "render_fields", "render_reference", "room_modes", "run_all", "simulate_cabin", "simulate_rirs",
    "slab_factor", "slab_kk_error", "spectral_weights", "sphere_directions", "time_loss", "naf_loss", "NAFField", "ORACLES", "log_spectral_loss", "geometric_delay", "renderer_agreement", "training_signature",
    "train_model", "training_recipe", "transmittance_terms", "wrapped_phase_error",
    "render_sampling_ratio", "tune", "validation_split", "family", "FAMILIES", "FAMILY_PROBES", "TUNE_SEED",
]
