"""Sizes of the ecsel chapter at the three scales (DESIGN.md "Three scales, one notebook").

Measured wall times of the whole notebook on the shared 2-core machine are in the chapter's report
(smoke target <= 60 s, book <= 5 min); ``full`` runs for tens of minutes to hours.
"""
from __future__ import annotations

from typing import Any

from .experiments import SMOKE_SUBSET

MULTI_TERM = ("I.11.19", "I.13.4", "I.13.12", "I.24.6", "II.2.42", "II.36.38", "II.37.1")
_ECSEL_SR = dict(lam=1e-4, restarts=4, adam_steps=(600, 300), polish=2)

PRESETS: dict[str, dict[str, Any]] = {
    # whole notebook, repro run on the shared 2-core machine: 26-59 s depending on its load (40 s typical)
    "smoke": dict(
        sr_ids=SMOKE_SUBSET, sr_seeds=(42,), n_train=200, n_test=1000, ecsel_sr=_ECSEL_SR,
        sr_methods=("ecsel", "log_ols", "stlsq", "gplearn"), joint_ids=(), gplearn_ids=SMOKE_SUBSET,
        gplearn=dict(population=200, generations=5),
        clf_datasets=("iris", "wine", "breast_cancer"), clf_folds=3, clf_grid=(dict(n_terms=1, lam=1e-3),),
        clf_ecsel=dict(restarts=1, adam_steps=(150, 75)), clf_baselines=("LR", "Tree", "HGB"),
        osi_n=3000, paysim_n=6000, case_ecsel=dict(n_terms=2, lam=1e-4, restarts=1, adam_steps=(200, 100)),
    ),
    # whole notebook: 124 s (196 s under heavy load)
    "book": dict(
        sr_ids="all", sr_seeds=(42,), n_train=500, n_test=1000, ecsel_sr=_ECSEL_SR,
        sr_methods=("ecsel", "ecsel_joint", "log_ols", "stlsq", "gplearn"), joint_ids=MULTI_TERM,
        gplearn_ids=tuple(dict.fromkeys(SMOKE_SUBSET + MULTI_TERM)), gplearn=dict(population=500, generations=10),
        clf_datasets=("iris", "wine", "breast_cancer", "digits"), clf_folds=5,
        clf_grid=(dict(n_terms=1, lam=1e-3), dict(n_terms=1, lam=1e-2)),
        clf_ecsel=dict(restarts=2), clf_baselines=("LR", "Tree", "RF", "HGB", "MLP"),
        osi_n=10000, paysim_n=20000, case_ecsel=dict(n_terms=2, lam=1e-4, restarts=3),
    ),
    # not run here: 45 equations x 5 seeds, gplearn on all, 9-point ECSEL grid; about an hour or more
    "full": dict(
        sr_ids="all", sr_seeds=(42, 43, 44, 45, 46), n_train=1000, n_test=1000,
        ecsel_sr=dict(lam=1e-4, restarts=8, adam_steps=(2000, 1000), polish=3),
        sr_methods=("ecsel", "ecsel_joint", "log_ols", "stlsq", "gplearn"), joint_ids=None, gplearn_ids=None,
        gplearn=dict(population=1000, generations=20),
        clf_datasets=("iris", "wine", "breast_cancer", "digits"), clf_folds=5,
        clf_grid=tuple(dict(n_terms=k, lam=l) for k in (1, 2, 3) for l in (1e-4, 1e-3, 1e-2)),
        clf_ecsel=dict(restarts=3), clf_baselines=("LR", "Tree", "RF", "HGB", "MLP"),
        osi_n=30000, paysim_n=60000, case_ecsel=dict(n_terms=2, lam=1e-4, restarts=4),
    ),
}
