"""Sampling and identity testing of mixtures without ATE (Gay, He, Kocurek, O'Donnell; arXiv 2506.23456).

Model library of the ``ate-mixtures`` chapter. Equation labels (I1-I6, T*, L) refer to Section 3 of
the research brief ``papers/ate-mixtures.md``; they are *our* re-derivation of an ATE special case of
the paper's Theorem 4, not the paper's text.

* models: :class:`ProductMixture` (M1, M2), :class:`CurieWeissMixture` (M3), :func:`states`,
  :data:`MAX_EXACT_N`
* Glauber dynamics: :func:`glauber_matrix`, :func:`evolve`, :func:`tv`, :func:`spectral_gap`,
  :func:`relaxation_time`, :class:`GlauberSampler` (Monte Carlo, any n), :func:`naive_glauber_sweep`
* entropy functionals: :func:`entropy`, :func:`kl`, :func:`local_functional`, :func:`local_kl`,
  :func:`dirichlet_form`, :func:`component_law`, :func:`between_entropy`, :func:`mixture_identities`,
  :func:`ate_constant_lower_bound`, :func:`tstar_bound`
* identity testing: :class:`TesterBudget`, :func:`calibrate`, :func:`rejection_rates`,
  :func:`local_statistic`, :func:`weight_statistic`, :func:`weight_shift`, :func:`local_perturbation`
* experiments: :func:`data_based_tv`, :func:`empirical_starts`, :func:`separated_limit`,
  :func:`identity_checks`, :func:`relaxation_vs_n`, :func:`floor_vs_m`, :func:`mixing_time_vs_n`,
  :func:`power_curves`, :func:`loglog_slope`; sizes in :data:`PRESETS`
"""
from __future__ import annotations

from .entropy import (ate_constant_lower_bound, between_entropy, component_law, density, dirichlet_form, entropy,
                      kl, local_functional, local_kl, mixture_identities, phi, tstar_bound)
from .experiments import (TVCurves, data_based_tv, empirical_starts, floor_vs_m, identity_checks, loglog_slope,
                          mixing_time_vs_n, power_curves, relaxation_vs_n, separated_limit)
from .glauber import (GlauberSampler, evolve, glauber_matrix, naive_glauber_sweep, relaxation_time, spectral_gap,
                      tv)
from .models import (MAX_EXACT_N, CurieWeissMixture, Mixture, ProductMixture, check_probabilities, check_weights,
                     states)
from .presets import PRESETS
from .testing import (TESTERS, TesterBudget, calibrate, local_perturbation, local_statistic, rejection_rates,
                      weight_shift, weight_statistic)

__all__ = [
    "MAX_EXACT_N", "PRESETS", "TESTERS", "CurieWeissMixture", "GlauberSampler", "Mixture", "ProductMixture",
    "TVCurves", "TesterBudget", "ate_constant_lower_bound", "between_entropy", "calibrate", "check_probabilities",
    "check_weights", "component_law", "data_based_tv", "density", "dirichlet_form", "empirical_starts", "entropy",
    "evolve", "floor_vs_m", "glauber_matrix", "identity_checks", "kl", "local_functional", "local_kl",
    "local_perturbation", "loglog_slope", "mixing_time_vs_n", "mixture_identities", "naive_glauber_sweep", "phi",
    "power_curves", "rejection_rates", "relaxation_time", "relaxation_vs_n", "separated_limit", "spectral_gap",
    "states", "tstar_bound", "tv", "weight_shift", "weight_statistic",
]
