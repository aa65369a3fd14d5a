"""Geometry metrics: DTU-style Chamfer (mean of accuracy and completeness, capped), TnT-style precision /
recall / F1, per-region Chamfer, and per-Gaussian surface distance (scipy ``cKDTree``)."""
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
            a = acc[pl == r].mean() if np.any(pl == r) else np.nan
            out["region"][int(r)] = float((a + comp[gt_labels == r].mean()) / 2)
        out["_acc"], out["_comp"], out["_pl"] = acc, comp, pl
    return out


def region_cd(res: dict, gt_labels, regions) -> float:
    """Chamfer restricted to a set of regions: (mean acc of predicted points there + mean comp of GT there) / 2."""
    gt_labels = np.asarray(gt_labels)
    pm = np.isin(res["_pl"], regions)
    gm = np.isin(gt_labels, regions)
    return float((res["_acc"][pm].mean() + res["_comp"][gm].mean()) / 2)


def surface_distance(points, gt, gt_labels):
    """Distance of each point (e.g. a Gaussian's mean) to the nearest GT point, and that point's region."""
    d, nn = cKDTree(_pts(gt, "gt")).query(_pts(points, "points"))
    return d, np.asarray(gt_labels)[nn]
