"""ECSEL: Explainable Classification via Signomial Equation Learning (Lumadjeng, Birbil, Acar; ICML 2026;
arXiv 2601.21789). Model library of the ``ecsel`` chapter; equation numbers refer to the research brief
``papers/ecsel.md`` (model Eq. 1, losses Eq. 2-3, staged optimisation Sec. 2.3, explanations Sec. 2.4).

* estimators (scikit-learn): :class:`SignomialRegressor`, :class:`SignomialClassifier`
* core: :func:`fit_signomial` (staged optimisation), :func:`signomial_scores`
* explanations: :func:`elasticity`, :func:`counterfactual`, :func:`boundary_sensitivity`,
  :func:`attribution`, :func:`exact_shapley`, :func:`term_values`, :func:`log_score`
* benchmark: :data:`FEYNMAN`, :func:`census`, :func:`signomial_terms`, :func:`recovered`, :func:`snap_value`
* baselines: :func:`log_ols`, :func:`stlsq`, :func:`gplearn_fit`
* data: :func:`load_classification`, :func:`osi_like`, :func:`paysim_like`
* experiments / sizes: :func:`run_recovery`, :func:`run_classification`, :func:`case_study`, :data:`PRESETS`
"""
from __future__ import annotations

from .baselines import gplearn_fit, log_ols, power_library, stlsq
from .data import Dataset, load_classification, osi_like, paysim_like
from .estimators import SignomialClassifier, SignomialRegressor, check_positive
from .experiments import SMOKE_SUBSET, case_study, minority_recall, run_classification, run_recovery
from .explain import (attribution, boundary_sensitivity, counterfactual, elasticity, exact_shapley, log_score,
                      term_values)
from .feynman import (FEYNMAN, FeynmanEquation, census, r2, recovered, refit_terms, signomial_ids, signomial_terms,
                      snap_value, terms_predict, terms_to_sympy)
from .model import BETA_MAX, FitResult, fit_signomial, signomial_scores
from .presets import MULTI_TERM, PRESETS

__all__ = [
    "BETA_MAX", "Dataset", "FEYNMAN", "FeynmanEquation", "FitResult", "MULTI_TERM", "PRESETS", "SMOKE_SUBSET",
    "SignomialClassifier", "SignomialRegressor", "attribution", "boundary_sensitivity", "case_study", "census",
    "check_positive", "counterfactual", "elasticity", "exact_shapley", "fit_signomial", "gplearn_fit",
    "load_classification", "log_ols", "log_score", "minority_recall", "osi_like", "paysim_like", "power_library",
    "r2", "recovered", "refit_terms", "run_classification", "run_recovery", "signomial_ids", "signomial_scores",
    "signomial_terms", "snap_value", "stlsq", "term_values", "terms_predict", "terms_to_sympy",
]
