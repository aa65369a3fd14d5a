"""The chapter's experiments: the ablation ladder over seeds and the per-claim measurements built on it."""
from __future__ import annotations

import os

import numpy as np
import torch

from .metrics import auroc
from .model import SH_C0, eval_sh
from .scene import AMBIGUOUS, Scene, backproject
from .train import RunResult, cloud_metrics, interior_mask, train_run


# relative cost of one iteration of each run (measured at full sizes, review 3): untruncated splats reach more
# pixels, the sparse SfM-like start keeps large Gaussians longer; the pool starts the longest runs first
_RUN_COST = {"A0": 1.3, "A": 1.3, "G": 1.45, "H": 1.5, "M": 1.35, "DS": 1.35}


def ladder_workers(workers: int | None = None) -> int:
    """Processes for `run_ladder`: ``workers`` (default: the cores), capped at the cores and at this chapter's
    share of the machine (``ICML26_CPUS``, set when `repro` runs chapters side by side). On a GPU the processes
    share the device (this renderer launches many small kernels, so one run leaves most of a GPU idle)."""
    n = (os.cpu_count() or 1) if workers is None else int(workers)
    if n < 1:
        raise ValueError(f"ladder_workers: workers must be >= 1, got {workers}")
    return max(1, min(n, os.cpu_count() or 1, int(os.environ.get("ICML26_CPUS", n))))


def _train_task(scene, name: str, cfg: dict, seed: int, device=None) -> RunResult:
    from icml26.chapter import pin_threads

    pin_threads()   # one torch/BLAS thread per worker, as the chapter computes: the same numbers as in-process
    return train_run(scene, name, cfg, seed, device=device)


def run_ladder(scenes, cfg: dict, bar=None, device=None, workers: int | None = None) -> dict[tuple[str, int], RunResult]:
    """Every run of ``cfg['runs']`` for every seed of ``cfg['seeds']`` (runs in ``cfg['single_seed_runs']``
    only for the first seed). ``scenes``: one `Scene` for every seed, or a dict seed -> Scene (one scene variant
    per seed, issue 52). The runs are independent (each seeds itself), so they go to a pool of `ladder_workers`
    spawned processes, one thread each, on ``device`` (review 3: the chapter used one of the machine's two cores);
    the results do not depend on the number of workers (tested). ``bar`` advances by a run's iterations
    when it ends (by iterations in one process)."""
    tasks = []
    for seed_i, seed in enumerate(cfg["seeds"]):
        for name in cfg["runs"]:
            if not (seed_i > 0 and name in cfg["single_seed_runs"]):
                tasks.append((name, seed))
    scene_of = lambda seed: scenes[seed] if isinstance(scenes, dict) else scenes
    n_workers = min(ladder_workers(workers), len(tasks))
    if n_workers <= 1:
        return {(name, seed): train_run(scene_of(seed), name, cfg, seed, progress=bar, device=device)
                for name, seed in tasks}
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    plain = dict(cfg)   # a chapter's preset is a read-only mapping proxy, which does not pickle
    out = {}
    with ProcessPoolExecutor(max_workers=n_workers, mp_context=mp.get_context("spawn")) as pool:
        dev = None if device is None else str(device)
        futures = {pool.submit(_train_task, scene_of(seed), name, plain, seed, dev): (name, seed)
                   for name, seed in sorted(tasks, key=lambda t: -_RUN_COST.get(t[0], 1.0))}
        for f in as_completed(futures):
            out[futures[f]] = f.result()
            if bar is not None:
                bar.update(int(cfg["iters"]))
    return {t: out[t] for t in tasks}


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


def membership_auroc(mask: np.ndarray, region: np.ndarray, weight: np.ndarray | None = None,
                     regions=AMBIGUOUS) -> float:
    """AUROC of a per-Gaussian (binary) mask for 'the Gaussian lies on an ambiguous region' (its nearest GT
    point's label in ``regions``), each Gaussian weighted by ``weight`` (its opacity): how well the mask
    separates ambiguous from well-constrained primitives; exactly 0.5 in expectation for a random mask."""
    y = np.isin(np.asarray(region), regions)
    if y.all() or not y.any():
        raise ValueError("membership_auroc: every Gaussian is on one side; the AUROC is undefined")
    return auroc(np.asarray(mask, float), y, weight)


def planted_mask(target: np.ndarray, n_flag: int, seed: int, odds: float = 2.0) -> np.ndarray:
    """A positive control: ``n_flag`` Gaussians drawn without replacement, each on the target with ``odds`` times
    the weight of one off it (an indicator with a planted, modest preference for the target)."""
    target = np.asarray(target, bool)
    if not 0 < n_flag <= len(target) or odds <= 0:
        raise ValueError(f"planted_mask: need 0 < n_flag <= {len(target)} and odds > 0, got {n_flag}, {odds}")
    w = np.where(target, odds, 1.0)
    rng = np.random.default_rng(seed)
    out = np.zeros(len(target), bool)
    out[rng.choice(len(target), n_flag, replace=False, p=w / w.sum())] = True
    return out


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
    """Mean |k prior - GT| / GT on the ridge and at occlusion edges vs. on smooth interior ground, after aligning
    each view's prior to the GT by its median ratio k (the scale-aligned error of monocular-depth benchmarks, so
    the per-view scale error does not hide the shape error): (ridge, edge, smooth)."""
    from scipy import ndimage

    r, e, s = [], [], []
    for v in scene.train:
        ok = (v.prior > 0) & (v.depth > 0)
        if not ok.any():
            raise ValueError("prior_error_ratio: a training view has no pixel with both a prior and a surface")
        k = float(np.median(v.depth[ok] / v.prior[ok]))
        err = np.abs(k * v.prior - v.depth) / np.maximum(v.depth, 1e-6)
        lab = v.label
        edge = ndimage.maximum_filter(lab, 3) != ndimage.minimum_filter(lab, 3)
        smooth = np.isin(lab, (1, 2)) & ~ndimage.binary_dilation(edge, iterations=1)
        r.append(err[ok & (lab == 6)])
        e.append(err[ok & edge & (lab != 6)])
        s.append(err[ok & smooth])
    return tuple(float(np.mean(np.concatenate(x))) for x in (r, e, s))


def depth_cloud_metrics(scene: Scene, cfg: dict, which: str = "prior") -> dict:
    """The prior's (``which="prior"``) or the GT depth's (``"gt"``, the floor of the evaluation at this
    resolution) depth maps of every training view back-projected and scored exactly as a trained model's depth
    is (`train.cloud_metrics`): what the prior alone would reconstruct, beside the best any depth map can."""
    if which not in ("prior", "gt"):
        raise ValueError(f"depth_cloud_metrics: which must be 'prior' or 'gt', got {which!r}")
    zs = [v.prior if which == "prior" else v.depth for v in scene.train]
    return cloud_metrics([backproject(z, v.cam) for z, v in zip(zs, scene.train)], scene, cfg)


def prior_normal_error(scene: Scene, regions=AMBIGUOUS) -> dict:
    """Mean angle (deg) between the prior depth's normals and the GT normals over the training views, per region
    label and over ``regions``, on the interiors (`train.interior_mask`: away from occlusion edges and region
    borders), and the same for the normals of the GT depth itself (the finite-difference floor)."""
    import torch

    from .render import CameraT, depth_to_normal
    from .scene import REGIONS

    acc = {"prior": {}, "gt": {}}
    for v in scene.train:
        cam = CameraT.of(v.cam)
        inner = interior_mask(v, tuple(r for r in REGIONS if r > 0))
        for key, z in (("prior", v.prior), ("gt", v.depth.astype(np.float32))):
            n = depth_to_normal(torch.as_tensor(z), cam).numpy()
            ang = np.degrees(np.arccos(np.clip((n * v.normal).sum(-1), -1, 1)))
            for r in np.unique(v.label[inner]):
                acc[key].setdefault(int(r), []).append(ang[inner & (v.label == r)])
    out = {}
    for key, d in acc.items():
        per = {r: np.concatenate(x) for r, x in d.items() if r > 0}
        out[key] = {r: float(x.mean()) for r, x in per.items() if len(x)}
        amb = [per[r] for r in regions if r in per]
        out[key]["ambiguous"] = float(np.concatenate(amb).mean()) if amb else float("nan")
    return out
