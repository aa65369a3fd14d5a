"""Aggregations and the early version's formal analyses: per-k means with the official averaging, bootstrap
CIs, the failure taxonomy, the interference matrix, the tipping point, the composite and task profiles."""
from __future__ import annotations

import numpy as np
import pandas as pd

COMPOSITE_WEIGHTS = (0.3, 0.4, 0.15, 0.15)
"""Early version: S = 0.3 S_IF + 0.4 S_CP + 0.15 S_AQ + 0.15 S_PC."""


def per_k(df: pd.DataFrame, metric: str) -> pd.Series:
    """Mean of a metric per k, the official way: averaged within (k, combination, sub-class combination)
    groups first, then over the groups of each k."""
    g = df.groupby(["k", "combination", "subclass"])[metric].mean()
    return g.groupby(level=0).mean()


def bootstrap_ci(values, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (`scipy.stats.bootstrap`, fixed generator); a point when n < 2."""
    from scipy import stats

    x = np.asarray(values, float)
    if len(x) < 2 or np.ptp(x) == 0:
        return float(x.mean()), float(x.mean())
    r = stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=2000, method="percentile",
                        rng=np.random.default_rng(seed))
    return float(r.confidence_interval.low), float(r.confidence_interval.high)


def composite(if_pf, cc, aq, pr, weights=COMPOSITE_WEIGHTS) -> np.ndarray:
    """The early version's composite on 0-100 from 0-10 scores; the weights must sum to 1."""
    w = np.asarray(weights, float)
    if w.shape != (4,) or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError(f"composite weights must be 4 non-negative numbers summing to 1, got {weights}")
    return 10.0 * (w[0] * np.asarray(if_pf) + w[1] * np.asarray(cc) + w[2] * np.asarray(aq) + w[3] * np.asarray(pr))


FAILURES = ("dominance", "omission", "partial preservation", "global failure")


def classify_failure(verdicts, s_if: float, s_aq: float, aq_gate: float = 0.7) -> str | None:
    """The early version's taxonomy of one case (scores in [0, 1]); None when every concept is kept.
    ``aq_gate``: the dominance rule's S_AQ threshold (the early version's 0.7, on its own 0-1 scale).

    dominance: some s_i = 1, the others' sum <= (k - 1) / 3 (our reading of "<< k - 1") and S_AQ > 0.7;
    global failure: S_CP < 0.3 and S_IF < 0.3; partial preservation: S_IF > 0.5 and S_CP < 0.5; omission:
    some s_i = 0 while another concept is kept. The definitions overlap; they are checked from the most
    specific pattern (one concept kept whole) to the least, in that order.
    """
    s = np.asarray(verdicts, float)
    k = len(s)
    cp = s.mean()
    if cp == 1.0:
        return None
    if s.max() == 1 and s.sum() - 1 <= (k - 1) / 3 and s_aq > aq_gate:
        return "dominance"
    if cp < 0.3 and s_if < 0.3:
        return "global failure"
    if s_if > 0.5 and cp < 0.5:
        return "partial preservation"
    if s.min() == 0 and s.sum() > 0:
        return "omission"
    return "global failure"


def aq_scores(df: pd.DataFrame) -> pd.Series:
    """S_AQ in [0, 1] of each case: the mean of the aesthetics and quality analogues / 10."""
    return (df["IAA"] + df["IQA"]) / 20.0


def failure_shares(df: pd.DataFrame, aq_gate: float = 0.7) -> pd.Series:
    """Share of each failure type among a generator's failed creation cases (``aq_gate``: `classify_failure`)."""
    aq = aq_scores(df)
    kinds = [classify_failure(v, pf / 10.0, a, aq_gate) for v, pf, a in zip(df["verdicts"], df["PF"], aq)]
    s = pd.Series([x for x in kinds if x is not None], dtype=object)
    return s.value_counts(normalize=True).reindex(list(FAILURES), fill_value=0.0)


def interference_matrix(df: pd.DataFrame, n_dims: int = 7) -> np.ndarray:
    """M_ij = P(c_i kept | c_j absent) - P(c_i kept | c_j present), over the cases that reference c_i:
    positive = c_j suppresses c_i (the early version's definition, with "isolated" read as "c_j absent")."""
    M = np.full((n_dims, n_dims), np.nan)
    kept = {i: [] for i in range(n_dims)}
    for dims, ver in zip(df["dims"], df["verdicts"]):
        for d, v in zip(dims, ver):
            kept[d].append((set(dims), bool(v)))
    for i in range(n_dims):
        for j in range(n_dims):
            if i == j:
                continue
            with_j = [v for s, v in kept[i] if j in s]
            without = [v for s, v in kept[i] if j not in s]
            if with_j and without:
                M[i, j] = np.mean(without) - np.mean(with_j)
    return M


def second_difference(curve) -> np.ndarray:
    """Delta^2(k) = (S(k) - S(k-1)) - (S(k-1) - S(k-2)) for k = 4..7 of a curve over k = 2..7."""
    c = np.asarray(curve, float)
    return c[2:] - 2 * c[1:-1] + c[:-2]


def tipping_point(curve, ks=(2, 3, 4, 5, 6, 7)) -> int:
    """argmin_k Delta^2(k): where degradation accelerates most."""
    d2 = second_difference(curve)
    return int(np.asarray(ks)[2:][int(np.argmin(d2))])


def spearman_k(series: pd.Series) -> float:
    from scipy import stats

    return float(stats.spearmanr(series.index.values, series.values).statistic)


def task_profiles(matrix: pd.DataFrame, n_clusters: int = 3, seed: int = 0) -> pd.Series:
    """KMeans (sklearn) of the subtasks on their z-scored score profile across generators."""
    from sklearn.cluster import KMeans

    X = matrix.to_numpy(float)
    X = (X - X.mean(0)) / (X.std(0) + 1e-9)
    labels = KMeans(n_clusters=n_clusters, n_init=10, random_state=seed).fit_predict(X)
    return pd.Series(labels, index=matrix.index, name="profile")
