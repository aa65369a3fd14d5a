"""Sampling and Identity-Testing Without Approximate Tensorization of Entropy (Gay, He, Kocurek, O'Donnell;
arXiv 2506.23456).

Model library of the ``ate-mixtures`` chapter. Equation labels (I1-I6, T*, L) refer to Section 3 of
the research brief ``papers/ate-mixtures.md``; they are *our* re-derivation of an ATE special case of
the paper's Theorem 4, not the paper's text.

* models: :class:`ProductMixture` (M1, M2), :class:`CurieWeissMixture` (M3), :class:`PairPenaltyMixture` (star-like
  components, MLSI without ATE uniformly in n), :func:`states`, :data:`MAX_EXACT_N`
* Glauber dynamics: :func:`glauber_matrix`, :func:`evolve`, :func:`evolve_continuous`, :func:`tv`, :func:`spectral_gap`,
  :func:`relaxation_time`, :func:`lumped_chain` (exact law of |x|, any n), :class:`GlauberSampler` (Monte Carlo, any n)
* entropy functionals: :func:`entropy`, :func:`kl`, :func:`local_functional`, :func:`local_kl`,
  :func:`dirichlet_form`, :func:`component_law`, :func:`between_entropy`, :func:`mixture_identities`,
  :func:`ate_constant_lower_bound`, :func:`tstar_bound`, :func:`empirical_constant`, :func:`entropy_form_constant` (the c the
  data demand), :func:`mlsi_form_bound`, :func:`mlsi_form_constant` (the MLSI form for one start);
  :func:`functional_constant` (numerical ATE/MLSI constants)
* identity testing: :class:`TesterBudget`, :func:`calibrate`, :func:`rejections`, :func:`rejection_rates`,
  :func:`local_statistic`, :func:`weight_statistic`, :func:`weight_shift`, :func:`local_perturbation`,
  :func:`weight_power_exact`, :func:`weight_power_ncx2`, :func:`local_query_moments`, :func:`local_budget`,
  :func:`oracle_calls`, :func:`mix_budget` (T_mix's fewest samples + calls), :func:`null_pvalue`, :func:`fisher_statistic` (T_comb)
* experiments: :func:`data_based_tv`, :func:`empirical_starts`, :func:`separated_limit`,
  :func:`identity_checks`, :func:`relaxation_vs_n`, :func:`floor_vs_m`, :func:`mixing_time_vs_n`,
  :func:`power_curves`, :func:`loglog_slope`, :func:`rival_slope`, :func:`slope_edge` (the slope test against
  the log-factor law), :func:`separated_limit_k`, :func:`mode_prediction` (the floor from every slow mode), :func:`floor_vs_k`,
  :func:`cw_constants`, :func:`budget_vs_n`, :func:`power_z`, :func:`combined_z`, :func:`sidak_z`,
  :func:`conditional_prediction`, :func:`sampled_conditional_mean`, :func:`cdf_mid`, :func:`batches`,
  :func:`calls_sweep` (T_loc oracle calls over n and eps), :func:`efficiency_vs_n`, :func:`growth_ratio`, :func:`growth_edge`
  (the testers' needed budget against n, polynomial or exponential), :func:`mlsi_only` (F2d), :func:`star_tv_from_data`
  (C13s), :func:`tv_at_nlogn` (C3n); sizes in :data:`PRESETS`
* rates at any n (exact lumped chains of exchangeable models): :func:`lumped_mixing_time`, :func:`rate_vs_n`,
  :func:`bound_times` (entropy vs Poincare bounds against the exact time), :func:`corner_start`, :func:`level_start`,
  :func:`level_law`, :func:`level_log_law`, :func:`tail_slope`, :func:`fit_laws`, :class:`UniformLevel`
"""
from __future__ import annotations

from .constants import ConstantEstimate, functional_constant
from .entropy import (IDENTITY_KEYS, ate_constant_lower_bound, between_entropy, component_law, density, dirichlet_form, empirical_constant, entropy, entropy_form_constant,
                      kl, local_functional, local_kl, mixture_identities, mlsi_form_bound, mlsi_form_constant, phi, tstar_bound)
from .experiments import (FAMILIES, TVCurves, batches, budget_vs_n, calls_sweep, cdf_mid, combined_z,
                          component_tv, conditional_prediction, cw_constants, data_based_tv, data_based_tv_continuous, efficiency_vs_n,
                          empirical_starts, floor_vs_k, floor_vs_m, growth_edge, growth_ratio, identity_checks, loglog_slope,
                          mixing_time_vs_n, mlsi_only, mode_prediction, power_curves, power_z, relaxation_vs_n, rival_slope,
                          sampled_conditional_mean, separated_limit, separated_limit_k, sidak_z, slope_edge, star_tv_from_data,
                          tv_at_nlogn)
from .glauber import GlauberSampler, evolve, evolve_continuous, glauber_matrix, lumped_chain, relaxation_time, spectral_gap, tv
from .models import (MAX_EXACT_N, CurieWeissMixture, Mixture, PairPenaltyMixture, ProductMixture, check_probabilities,
                     check_weights, states)
from .presets import PRESETS
from .rates import (FIT_LAWS, UniformLevel, bound_times, corner_start, fit_laws, level_law, level_log_law, level_start,
                    lumped_mixing_time, rate_vs_n, tail_slope)
from .testing import (T_W_CHI2, TESTERS, MixBudget, TesterBudget, calibrate, fisher_statistic, label_law, local_budget,
                      local_perturbation, local_query_moments, local_statistic, mix_budget, null_pvalue, oracle_calls,
                      rejection_rates, rejections, split_perturbation, weight_power_exact, weight_power_ncx2, weight_shift,
                      weight_statistic)

__all__ = [
    "FAMILIES", "FIT_LAWS", "UniformLevel", "cdf_mid", "conditional_prediction", "batches", "calls_sweep", "corner_start", "fit_laws",
    "level_law", "level_log_law", "lumped_mixing_time", "bound_times", "efficiency_vs_n", "growth_ratio", "growth_edge", "mlsi_only",
    "star_tv_from_data", "tv_at_nlogn",
    "mix_budget", "MixBudget", "PairPenaltyMixture", "mlsi_form_bound", "mlsi_form_constant",
    "mode_prediction", "oracle_calls", "rate_vs_n", "split_perturbation", "tail_slope", "combined_z", "sidak_z", "sampled_conditional_mean",
    "rival_slope", "slope_edge", "level_start", "null_pvalue", "fisher_statistic",
    "IDENTITY_KEYS", "MAX_EXACT_N", "PRESETS", "TESTERS", "T_W_CHI2", "ConstantEstimate", "budget_vs_n",
    "component_tv", "cw_constants", "empirical_constant", "entropy_form_constant", "floor_vs_k", "functional_constant", "label_law",
    "local_budget", "local_query_moments", "lumped_chain", "power_z", "rejections",
    "separated_limit_k", "weight_power_exact", "weight_power_ncx2", "CurieWeissMixture", "GlauberSampler", "Mixture", "ProductMixture",
    "TVCurves", "TesterBudget", "ate_constant_lower_bound", "between_entropy", "calibrate", "check_probabilities",
    "check_weights", "component_law", "data_based_tv", "data_based_tv_continuous", "evolve_continuous", "density", "dirichlet_form", "empirical_starts", "entropy",
    "evolve", "floor_vs_m", "glauber_matrix", "identity_checks", "kl", "local_functional", "local_kl",
    "local_perturbation", "loglog_slope", "mixing_time_vs_n", "mixture_identities", "phi",
    "power_curves", "rejection_rates", "relaxation_time", "relaxation_vs_n", "separated_limit", "spectral_gap",
    "states", "tstar_bound", "tv", "weight_shift", "weight_statistic",
]
