"""Geometry metrics: DTU-style Chamfer (mean of accuracy and completeness, capped), TnT-style precision /
recall / F1, per-region Chamfer (scipy ``cKDTree``), and the chapter's one ROC-AUC wrapper (scikit-learn)."""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree


def _pts(x, name):
    x = np.asarray(x, float)
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"{name} must be an (M, 3) point cloud, got shape {x.shape}")
    if len(x) == 0:
        raise ValueError(f"{name} is an empty point cloud")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite points")
    return x


def chamfer(pred, gt, cap: float, tau: float, gt_labels=None) -> dict:
    """acc = mean_pred min(d(pred, GT), cap), comp = mean_GT min(d(GT, pred), cap), CD = (acc + comp) / 2;
    P, R = fractions within tau, F1; with ``gt_labels`` the same per region (a predicted point takes the label of
    its nearest GT point)."""
    pred, gt = _pts(pred, "pred"), _pts(gt, "gt")
    if not (cap > 0 and tau > 0):
        raise ValueError(f"chamfer: cap and tau must be > 0, got {cap}, {tau}")
    d_pg, nn = cKDTree(gt).query(pred)
    d_gp, _ = cKDTree(pred).query(gt)
    acc, comp = np.minimum(d_pg, cap), np.minimum(d_gp, cap)
    P, R = float((d_pg < tau).mean()), float((d_gp < tau).mean())
    out = dict(acc=float(acc.mean()), comp=float(comp.mean()), cd=float((acc.mean() + comp.mean()) / 2),
               precision=P, recall=R, f1=float(2 * P * R / (P + R)) if P + R > 0 else 0.0)
    if gt_labels is not None:
        gt_labels = np.asarray(gt_labels)
        pl = gt_labels[nn]
        out["region"] = {}
        for r in np.unique(gt_labels):
            a = acc[pl == r].mean() if np.any(pl == r) else cap   # no point there: the worst accuracy
            out["region"][int(r)] = float((a + comp[gt_labels == r].mean()) / 2)
        out["_acc"], out["_comp"], out["_pl"], out["_cap"] = acc, comp, pl, cap
    return out


def region_cd(res: dict, gt_labels, regions) -> float:
    """Chamfer restricted to a set of regions: (mean acc of predicted points there + mean comp of GT there) / 2;
    with no predicted point there the accuracy term is the cap (the worst), as in `chamfer`'s per-region values."""
    gt_labels = np.asarray(gt_labels)
    if "_pl" not in res:
        raise ValueError("region_cd: pass the result of chamfer(..., gt_labels=...)")
    pm = np.isin(res["_pl"], regions)
    gm = np.isin(gt_labels, regions)
    if not gm.any():
        raise ValueError(f"region_cd: no GT point in regions {tuple(regions)}")
    acc = res["_acc"][pm].mean() if pm.any() else res["_cap"]
    return float((acc + res["_comp"][gm].mean()) / 2)


def auroc(score, target, weight=None) -> float:
    """scikit-learn's ROC AUC of ``score`` for the binary ``target`` (optionally weighted); NaN when the target
    has one class only."""
    from sklearn.metrics import roc_auc_score

    target = np.asarray(target, bool)
    score = np.asarray(score, float)
    if score.shape != target.shape:
        raise ValueError(f"auroc: score {score.shape} and target {target.shape} differ")
    if target.all() or not target.any():
        return float("nan")
    return float(roc_auc_score(target, score, sample_weight=weight))
