"""The chapter's experiments: equation recovery (paper Sec. 5.1), classification (Sec. 5.2), case studies (Sec. 6)."""
from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.metrics import accuracy_score, f1_score, recall_score
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ..progress import progress
from .baselines import gplearn_fit, log_ols, stlsq
from .data import Dataset
from .estimators import SignomialClassifier, SignomialRegressor
from .feynman import FEYNMAN, r2, recovered, terms_predict

SMOKE_SUBSET = ("I.12.1", "I.14.4", "I.29.4", "I.34.8", "I.47.23", "II.3.24", "III.15.14", "III.19.51",
                "I.13.4", "I.13.12", "II.37.1", "I.24.6")
"""The fixed 12-equation subset: 8 power laws (one with a negative coefficient) + 4 multi-term signomials."""


def run_recovery(eq_ids: Sequence[str], seeds: Sequence[int], *, n_train: int, n_test: int, methods: Sequence[str],
                 ecsel: dict, gplearn: dict | None = None, gplearn_ids: Sequence[str] | None = None,
                 joint_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per (equation, seed, method): recovered?, test R^2, fit seconds.

    Methods: ``ecsel`` (staged + variable projection, K = true number of terms), ``ecsel_joint`` (the staged
    optimisation as published, on ``joint_ids``), ``log_ols``, ``stlsq``, ``gplearn`` (on ``gplearn_ids``).
    """
    rows = []
    jobs = [(e, s) for e in eq_ids for s in seeds]
    for eid, seed in progress(jobs, desc="recovery"):
        eq = FEYNMAN[eid]
        rng = np.random.default_rng(seed)
        X, y = eq.sample(n_train, rng)
        Xt, yt = eq.sample(n_test, rng)
        for method in methods:
            if method == "gplearn" and gplearn_ids is not None and eid not in gplearn_ids:
                continue
            if method == "ecsel_joint" and joint_ids is not None and eid not in joint_ids:
                continue
            program = ""
            if method in ("ecsel", "ecsel_joint"):
                t0 = time.perf_counter()
                est = SignomialRegressor(n_terms=eq.n_terms, random_state=seed, varpro=(method == "ecsel"), **ecsel)
                est.fit(X, y)
                sec = time.perf_counter() - t0
                terms = est.terms_
                pred = est.predict(Xt)
                program = str(est.to_sympy(eq.names))
            else:
                if method == "log_ols":
                    terms, sec = log_ols(X, y)
                elif method == "stlsq":
                    terms, sec = stlsq(X, y)
                elif method == "gplearn":
                    terms, sec, program = gplearn_fit(X, y, seed=seed, **(gplearn or {}))
                else:
                    raise ValueError(f"unknown method {method!r}")
                pred = terms_predict(terms, Xt) if terms is not None else np.full(len(yt), np.mean(y))
            rows.append(dict(eq=eid, seed=seed, K=eq.n_terms, m=eq.n_vars, method=method,
                             recovered=recovered(eq.terms, terms, Xt, yt), r2=r2(yt, pred), seconds=sec,
                             expression=program))
    return pd.DataFrame(rows)


def minority_recall(y_true, y_pred) -> float:
    """Recall of the least frequent class in ``y_true``."""
    vals, counts = np.unique(y_true, return_counts=True)
    c = vals[np.argmin(counts)]
    return float(recall_score(y_true == c, y_pred == c))


def baseline_models(names: Sequence[str], seed: int) -> dict:
    """The classification baselines of the paper's table, sklearn implementations."""
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    all_models = dict(
        LR=make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        Tree=DecisionTreeClassifier(max_depth=5, random_state=seed),
        RF=RandomForestClassifier(n_estimators=200, random_state=seed, n_jobs=1),
        HGB=HistGradientBoostingClassifier(random_state=seed),
        MLP=make_pipeline(StandardScaler(), MLPClassifier((64,), max_iter=1000, random_state=seed)),
    )
    return {n: all_models[n] for n in names}


def select_ecsel(X, y, grid: Sequence[dict], base: dict, seed: int) -> dict:
    """Pick the ECSEL configuration of best validation accuracy (25 % of the training fold held out)."""
    if len(grid) == 1:
        return dict(grid[0])
    Xa, Xv, ya, yv = train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)
    scores = [accuracy_score(yv, SignomialClassifier(random_state=seed, **base, **g).fit(Xa, ya).predict(Xv)) for g in grid]
    return dict(grid[int(np.argmax(scores))])


def run_classification(datasets: Sequence[Dataset], *, folds: int, grid: Sequence[dict], ecsel: dict,
                       baselines: Sequence[str], seed: int = 0) -> pd.DataFrame:
    """Stratified k-fold CV: accuracy, macro-F1 and minority recall per (dataset, fold, method)."""
    rows = []
    jobs = [(d, k, tr, te) for d in datasets
            for k, (tr, te) in enumerate(StratifiedKFold(folds, shuffle=True, random_state=seed).split(d.X, d.y))]
    for d, k, tr, te in progress(jobs, desc="classification"):
        models = {n: clone(m) for n, m in baseline_models(baselines, seed).items()}
        g = grid
        if len(np.unique(d.y)) == 2:  # one binary logit z = alpha x**beta has a fixed sign: K >= 2 (an intercept term)
            g = [dict(c, n_terms=max(2, c.get("n_terms", 1))) for c in grid]
            g = [dict(t) for t in dict.fromkeys(tuple(sorted(c.items())) for c in g)]
        cfg = select_ecsel(d.X[tr], d.y[tr], g, ecsel, seed)
        models["ECSEL"] = SignomialClassifier(random_state=seed, **ecsel, **cfg)
        for name, model in models.items():
            t0 = time.perf_counter()
            model.fit(d.X[tr], d.y[tr])
            pred = model.predict(d.X[te])
            rows.append(dict(dataset=d.name, fold=k, method=name, accuracy=100 * accuracy_score(d.y[te], pred),
                             f1=100 * f1_score(d.y[te], pred, average="macro"),
                             minority_recall=100 * minority_recall(d.y[te], pred), seconds=time.perf_counter() - t0,
                             config=str(cfg) if name == "ECSEL" else ""))
    return pd.DataFrame(rows)


def case_study(data: Dataset, *, ecsel: dict, seed: int = 0, test_size: float = 0.3) -> dict:
    """Fit ECSEL on raw positive features (feature_map='none', so exponents keep their units) and LR."""
    Xtr, Xte, ytr, yte = train_test_split(data.X, data.y, test_size=test_size, random_state=seed, stratify=data.y)
    t0 = time.perf_counter()
    est = SignomialClassifier(feature_map="none", random_state=seed, **ecsel).fit(Xtr, ytr)
    fit_s = time.perf_counter() - t0
    lr = baseline_models(["LR"], seed)["LR"].fit(Xtr, ytr)
    # the feature-carrying term: the largest total |exponent| (with K = 2 the other term is intercept-like)
    k = int(np.argmax(np.abs(est.beta_[0]).sum(1)))
    out = dict(model=est, lr=lr, dominant=k, beta=dict(zip(data.feature_names, est.beta_[0, k])), fit_seconds=fit_s,
               X_test=Xte, y_test=yte)
    for name, m in (("ecsel", est), ("lr", lr)):
        p = m.predict(Xte)
        out[f"{name}_accuracy"] = 100 * accuracy_score(yte, p)
        out[f"{name}_f1"] = 100 * f1_score(yte, p)
        out[f"{name}_minority_recall"] = 100 * minority_recall(yte, p)
    return out
