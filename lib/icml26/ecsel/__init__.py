"""ECSEL: Explainable Classification via Signomial Equation Learning (Lumadjeng, Birbil, Acar; ICML 2026;
arXiv 2601.21789). Model library of the ``ecsel`` chapter. Equation and section numbers refer to the
research brief ``papers/ecsel.md`` (model Eq. 1, losses Eq. 2-3, staged optimisation Sec. 2.3, explanations
Sec. 2.4), whose numbering is not the paper's (its full text was not retrievable); the authors' recipe is
read from their released ``ecsel.py``.

* estimators (scikit-learn): :class:`SignomialRegressor`, :class:`SignomialClassifier` (``recipe='staged'`` or
  ``'authors'``)
* core: :func:`fit_signomial` (staged schedule), :func:`fit_signomial_authors` (authors' recipe),
  :func:`fit_signomial_authors_grid` (the same at many (lam, lr) side by side), :func:`polish_authors` (its
  L-BFGS-B polish, ours), :func:`fit_signomial_lsq` (least squares by variable projection), :func:`signomial_scores`
* explanations: :func:`elasticity`, :func:`counterfactual`, :func:`boundary_sensitivity`,
  :func:`attribution`, :func:`exact_shapley`, :func:`term_values`, :func:`log_score`
* benchmark: :data:`FEYNMAN`, :func:`census`, :func:`signomial_terms`, :func:`recovered`, :func:`snap_value`
* baselines: :func:`log_ols`, :func:`stlsq`, :func:`gplearn_fit`, :func:`library_ceiling`
* data: :func:`load_classification`, :func:`osi_like`, :func:`paysim_like`
* experiments / sizes: :func:`run_recovery`, :func:`select_signomial`, :func:`run_classification`,
  :func:`case_study`, :func:`run_case_studies`, :func:`density_fits`, :data:`PRESETS`
"""
from __future__ import annotations

from .baselines import (EXACT_NMSE, NARROW_GRID, WIDE_GRID, gplearn_fit, library_ceiling, log_ols, nmse,
                        power_library, stlsq, stlsq_engine_name)
from .data import Dataset, load_classification, osi_like, paysim_like
from .estimators import (AUTHORS_RANGE, PAPER_RANGE, RECIPES, SignomialClassifier, SignomialRegressor, auto_batch_size,
                         check_positive, loglinear_warm_start)
from .experiments import (IN_DOMAIN, PUBLISHED_CONFIGS, SMOKE_SUBSET, STLSQ_LIBRARIES, THRESHOLDS, baseline_models,
                          case_study, density_fits, dominant_term, feynman_split, gap_to_best, is_ecsel, minority_recall,
                          recovery_rates, run_case_studies, run_classification, run_jobs, run_recovery,
                          select_signomial, strongest_peer,
                          time_to_solution_ratio, training_curves, weighted_f1, within_best, within_best_means)
from .reference import authors_reference, authors_softmax_reference
from .explain import (attribution, boundary_sensitivity, counterfactual, elasticity, exact_shapley, log_score,
                      term_values)
from .feynman import (FEYNMAN, FeynmanEquation, census, design_matrix, r2, recovered, refit_terms, signomial_ids,
                      signomial_terms, snap_value, terms_predict, terms_to_sympy)
from .model import (BETA_MAX, FitResult, authors_init, fit_signomial, fit_signomial_authors, fit_signomial_authors_grid,
                    fit_signomial_lsq, polish_authors, signomial_scores)
from .presets import MULTI_TERM, PRESETS

__all__ = [
    "AUTHORS_RANGE", "BETA_MAX", "IN_DOMAIN", "PUBLISHED_CONFIGS", "authors_reference", "authors_softmax_reference", "gap_to_best",
    "within_best_means", "Dataset", "EXACT_NMSE", "FEYNMAN", "FeynmanEquation", "FitResult", "MULTI_TERM",
    "NARROW_GRID", "PAPER_RANGE", "PRESETS", "RECIPES", "SMOKE_SUBSET", "STLSQ_LIBRARIES", "SignomialClassifier",
    "SignomialRegressor", "THRESHOLDS", "WIDE_GRID", "attribution", "authors_init", "baseline_models",
    "auto_batch_size", "boundary_sensitivity", "case_study", "census", "check_positive", "counterfactual", "design_matrix",
    "dominant_term", "elasticity", "exact_shapley", "feynman_split", "fit_signomial", "fit_signomial_authors",
    "gplearn_fit", "library_ceiling", "load_classification", "log_ols", "log_score", "loglinear_warm_start",
    "minority_recall", "nmse", "osi_like", "paysim_like", "power_library", "r2", "recovered", "refit_terms",
    "run_classification", "run_jobs", "run_recovery", "select_signomial", "signomial_ids", "signomial_scores",
    "signomial_terms", "snap_value", "stlsq", "stlsq_engine_name", "term_values", "terms_predict", "terms_to_sympy",
    "weighted_f1", "within_best", "fit_signomial_authors_grid", "is_ecsel", "recovery_rates", "strongest_peer",
    "time_to_solution_ratio", "training_curves", "density_fits", "fit_signomial_lsq", "polish_authors",
    "run_case_studies",
]
