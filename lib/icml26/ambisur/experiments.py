"""The chapter's experiments: the ablation ladder over seeds and the per-claim measurements built on it."""
from __future__ import annotations

import numpy as np
import torch

from .model import SH_C0, eval_sh
from .scene import Scene
from .train import RunResult, train_run


def run_ladder(scene: Scene, cfg: dict, bar=None) -> dict[tuple[str, int], RunResult]:
    """Every run of ``cfg['runs']`` for every seed of ``cfg['seeds']`` (runs in ``cfg['single_seed_runs']``
    only for the first seed)."""
    out = {}
    for seed_i, seed in enumerate(cfg["seeds"]):
        for name in cfg["runs"]:
            if seed_i > 0 and name in cfg["single_seed_runs"]:
                continue
            out[(name, seed)] = train_run(scene, name, cfg, seed, progress=bar)
    return out


def n_iterations(cfg: dict) -> int:
    n_runs = len(cfg["runs"]) * len(cfg["seeds"]) - len(cfg["single_seed_runs"]) * (len(cfg["seeds"]) - 1)
    return n_runs * int(cfg["iters"])


def per_seed(results, name: str, key: str, seeds) -> list[float]:
    """The metric ``key`` of run ``name`` for each seed (``region:<id>`` reads a per-region CD)."""
    vals = []
    for s in seeds:
        m = results[(name, s)].metrics
        vals.append(m["region"][int(key.split(":")[1])] if key.startswith("region:") else m[key])
    return vals


def ratio(results, a: str, b: str, key: str, seeds) -> list[float]:
    """Per-seed ratio metric(a) / metric(b)."""
    return [x / y for x, y in zip(per_seed(results, a, key, seeds), per_seed(results, b, key, seeds))]


def enrichment(flags: np.ndarray, region: np.ndarray, target: int) -> float:
    """P(region = target | flagged) / P(region = target): how much flagged Gaussians concentrate on a region."""
    flags = np.asarray(flags, bool)
    base = float(np.mean(region == target))
    if base == 0 or not flags.any():
        return float("nan")
    return float(np.mean(region[flags] == target) / base)


def mask_auroc(mask: np.ndarray, dist: np.ndarray, quantile: float = 0.75) -> float:
    """AUROC of the (binary) ambiguity mask for 'surface distance above its quantile' (sklearn)."""
    from sklearn.metrics import roc_auc_score

    y = dist > np.quantile(dist, quantile)
    return float(roc_auc_score(y, np.asarray(mask, float)))


def random_mask(mask: np.ndarray, seed: int) -> np.ndarray:
    """A random mask flagging the same number of Gaussians (the indicator's negative control)."""
    rng = np.random.default_rng(seed)
    out = np.zeros(len(mask), bool)
    out[rng.choice(len(mask), int(np.sum(mask)), replace=False)] = True
    return out


def sh_quadrature_u(sh: torch.Tensor, n: int) -> np.ndarray:
    """sqrt( int_{S^2} ||c(d) - k_00 Y_00||^2 dOmega ) by Gauss-Legendre (n) x uniform (2n) quadrature, pre-clamp:
    equals u_i if the 3DGS real SH basis is orthonormal (Parseval, theory section)."""
    x, wq = np.polynomial.legendre.leggauss(n)
    phi = (np.arange(2 * n) + 0.5) * np.pi / n
    ct, ph = np.meshgrid(x, phi, indexing="ij")
    st = np.sqrt(1 - ct ** 2)
    dirs = torch.as_tensor(np.stack([st * np.cos(ph), st * np.sin(ph), ct], -1).reshape(-1, 3), dtype=torch.float64)
    wts = torch.as_tensor((wq[:, None] * np.full(2 * n, np.pi / n)[None]).reshape(-1), dtype=torch.float64)
    sh = sh.detach().double()
    out = []
    for k in range(len(sh)):
        c = eval_sh(dirs, sh[k:k + 1].expand(len(dirs), -1, -1)) - SH_C0 * sh[k, 0]
        out.append(float(torch.sqrt((wts[:, None] * c ** 2).sum())))
    return np.array(out)


def prior_error_ratio(scene: Scene) -> tuple[float, float, float]:
    """Mean |prior - GT| / GT on the ridge and at occlusion edges vs. on smooth interior ground: (ridge, edge,
    smooth). A prior that is right everywhere would make global prior regularisation win trivially."""
    from scipy import ndimage

    r, e, s = [], [], []
    for v in scene.train:
        ok = (v.prior > 0) & (v.depth > 0)
        err = np.abs(v.prior - v.depth) / np.maximum(v.depth, 1e-6)
        lab = v.label
        edge = ndimage.maximum_filter(lab, 3) != ndimage.minimum_filter(lab, 3)
        smooth = np.isin(lab, (1, 2)) & ~ndimage.binary_dilation(edge, iterations=1)
        r.append(err[ok & (lab == 6)])
        e.append(err[ok & edge & (lab != 6)])
        s.append(err[ok & smooth])
    return tuple(float(np.mean(np.concatenate(x))) for x in (r, e, s))
