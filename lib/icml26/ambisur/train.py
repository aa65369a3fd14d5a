"""Training runs of the ablation ladder (brief 5.2-5.3): one config, components switched on one by one.

    A0  3DGS-style alpha-blended depth, no truncation            (depth-model baseline)
    A   PGSR-lite plane depth + prior depth (the paper's ablation baseline row)
    B   A + Gaussian Primitive Truncation (gamma = 2)
    C   B + Ray-Colour Consistency (middle window of the schedule)
    D   C + SH ambiguity indicator + ALR                         (AmbiSuR-lite)
    E   C + ALR with U = 1 (global prior-normal regularisation: the selectivity control)
    F   C + ALR with a random mask of the same flagged fraction  (the indicator control)
    G   A without any prior: no prior depth loss, random initial points (is the scene ambiguous at all?)
    H   PGSR-lite without any prior, SfM-like start (Table 1/2's PGSR: the paper's baseline among methods)
    M   D with a monocular (affine-invariant) disparity prior instead of the metric one (AmbiSuR-MONO)

Loss (brief 2.2): (0.8 L1 + 0.2 D-SSIM) + 100 mean_vis min_k s_ik + 0.015 L_sv (t > 0.23 T)
+ 0.1 |Z_prior - Z| / extent (t > 0.03 T) + ALR 0.1 (t > 0.23 T); RCC in (T/6, T/2] with lambda_rc = 15 / (3HW);
SH degree raised by one every T/30 iterations (official: every 1000 of 30k). Schedules are the official
30k-iteration ones scaled by T. No densification, NCC or multi-view terms (a fixed number of Gaussians; a
documented deviation). MONO (M): the official ``DepthAnythingv2Loss`` (patch-normalised, weight 0.1 decaying to
0.01 from T/10) in place of the metric depth term, and ALR's prior normals from the rescaled inverse disparity.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.spatial import cKDTree

from .losses import (alr_loss, depth_normal_loss, mono_depth_loss, photometric, prior_depth_loss, psnr,
                     rcc_lambda_per_pixel, sh_ambiguity)
from .metrics import chamfer, region_cd
from .model import GaussianModel
from .render import CameraT, depth_to_normal, render
from .scene import AMBIGUOUS, REGIONS, Scene, mono_disparity

_BASE = dict(depth_mode="plane", trunc=None, rcc=False, alr=None, prior="metric", init="prior")
RUNS: dict[str, dict] = {
    "A0": dict(_BASE, depth_mode="blend"),
    "A": dict(_BASE),
    "B": dict(_BASE, trunc=2.0),
    "C": dict(_BASE, trunc=2.0, rcc=True),
    "D": dict(_BASE, trunc=2.0, rcc=True, alr="indicator"),
    "E": dict(_BASE, trunc=2.0, rcc=True, alr="global"),
    "F": dict(_BASE, trunc=2.0, rcc=True, alr="random"),
    "G": dict(_BASE, prior=None, init="random"),
    "H": dict(_BASE, prior=None, init="sfm"),
    "M": dict(_BASE, trunc=2.0, rcc=True, alr="indicator", prior="mono", init="sfm"),
}
RUN_LABELS = {"A0": "A0 alpha-blended z", "A": "A PGSR-lite+prior", "B": "B +GPT", "C": "C +RCC",
              "D": "D +indicator+ALR", "E": "E ALR, U=1", "F": "F ALR, random mask", "G": "G no prior (random init)",
              "H": "H PGSR-lite, no prior (SfM init)", "M": "M AmbiSuR-lite, mono prior"}


@dataclass
class Hyper:
    """Loss weights, indicator quantiles and schedule fractions: the official values, schedules scaled from 30k
    iterations. The learning rates are NOT the official ones: raised 2-12x for schedules 15-100x shorter
    (official: means 1.6e-4, SH DC 2.5e-3, SH rest 1.25e-4, opacity 0.05, scales 5e-3, rotation 1e-3)."""

    lam_ssim: float = 0.2
    w_minscale: float = 100.0
    w_sv: float = 0.015
    w_prior: float = 0.1
    w_alr: float = 0.1
    rcc_lambda_rel: float = 15.0
    sv_from: float = 7000 / 30000
    prior_from: float = 1000 / 30000
    rcc_window: tuple = (5000 / 30000, 15000 / 30000)
    alr_from: float = 7000 / 30000
    upper: float = 0.95
    lower: float = 0.10
    lower_max: float = 0.2
    sh_up_every: float = 1000 / 30000     # one SH degree more every 1000 of 30k iterations (official train.py)
    w_mono: float = 0.1
    mono_from: float = 3000 / 30000
    mono_end_mult: float = 0.1
    lr: dict = field(default_factory=lambda: dict(means=2e-3, sh_dc=1e-2, sh_rest=5e-4, opacity=0.05, scales=1e-2,
                                                  quats=5e-3))


@dataclass
class RunResult:
    name: str
    seed: int
    metrics: dict
    log: dict
    model: GaussianModel
    per_gaussian: dict


def prior_normals(scene: Scene, depths=None) -> list[torch.Tensor]:
    """Normals of the prior depth of every training view (of ``depths`` when given), 0 where there is none."""
    out = []
    for k, v in enumerate(scene.train):
        z = v.prior if depths is None else depths[k]
        cam = CameraT.of(v.cam)
        out.append(depth_to_normal(torch.as_tensor(z), cam) * torch.as_tensor(z > 0)[..., None])
    return out


def mono_priors(scene: Scene, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The MONO stand-in of every training view (`scene.mono_disparity`) and the depth ALR reads from it, as the
    official code does: 1 / max(disparity, 1e-3) (its rescaling to the rendered depth's maximum does not change
    normals)."""
    rng = np.random.default_rng(50_000 + seed)
    disp = [mono_disparity(v.prior, rng) for v in scene.train]
    inv = [np.where(d > 0, 1.0 / np.maximum(d, 1e-3), 0.0).astype(np.float32) for d in disp]
    return disp, inv


def sfm_points(scene: Scene, n: int, rng: np.random.Generator, noise: float = 0.5):
    """An SfM-like sparse start: pixels drawn with probability proportional to the squared image gradient
    (features: texture, shadow boundaries and silhouettes), back-projected with the GT depth plus Gaussian noise of
    ``noise`` pixel footprints along each axis; colours from the images. At 32 px the silhouettes and shadow edges
    dominate, so this start is NOT sparser on the textureless ground than on the textured one (measured; unlike
    real SfM)."""
    from scipy import ndimage

    pts, cols, wts = [], [], []
    for v in scene.train:
        g = v.rgb.mean(-1)
        grad = np.hypot(ndimage.sobel(g, 0), ndimage.sobel(g, 1))
        m = v.depth > 0
        Xc = v.depth[..., None] * CameraT.of(v.cam).kinv.numpy()
        pts.append((Xc[m] - v.cam.t) @ v.cam.R)
        cols.append(v.rgb[m])
        wts.append(grad[m] ** 2)
    pts, cols, wts = np.concatenate(pts), np.concatenate(cols), np.concatenate(wts)
    sel = rng.choice(len(pts), size=n, replace=False, p=wts / wts.sum())
    return pts[sel] + noise * scene.footprint * rng.standard_normal((n, 3)), cols[sel]


def init_model(scene: Scene, n: int, sh_degree: int, seed: int, source: str = "prior") -> GaussianModel:
    """Initial Gaussians: ``source="prior"`` back-projects the prior depth (as the official code starts from DA3
    points); ``source="random"`` draws uniform points in the scene's bounding box with random colours (3DGS's
    random initialisation), for the run without any prior (G); ``source="sfm"`` starts from `sfm_points` (H, M)."""
    if n < 4:
        raise ValueError(f"init_model: need n >= 4 Gaussians, got {n}")
    rng = np.random.default_rng(seed)
    if source == "random":
        lo, hi = np.array([-1.0, -1.0, 0.0]), np.array([1.0, 1.0, 0.6])
        pts = lo + (hi - lo) * rng.random((n, 3))
        return GaussianModel.from_points(pts, rng.random((n, 3)), sh_degree, seed)
    if source == "sfm":
        pts, cols = sfm_points(scene, n, rng)
        return GaussianModel.from_points(pts, cols, sh_degree, seed)
    if source != "prior":
        raise ValueError(f"init_model: source must be 'prior', 'random' or 'sfm', got {source!r}")
    pts, cols = [], []
    for v in scene.train:
        m = v.prior > 0
        Xc = v.prior[..., None] * CameraT.of(v.cam).kinv.numpy()
        pts.append((Xc[m] - v.cam.t) @ v.cam.R)
        cols.append(v.rgb[m])
    pts, cols = np.concatenate(pts), np.concatenate(cols)
    sel = rng.choice(len(pts), size=n, replace=len(pts) < n)
    jitter = 0.25 * scene.footprint * rng.standard_normal((n, 3))
    return GaussianModel.from_points(pts[sel] + jitter, cols[sel], sh_degree, seed)


def backproject(Z: torch.Tensor, A: torch.Tensor, cam) -> np.ndarray:
    m = (A > 0.5) & (Z > 0)
    Xc = (Z[..., None] * CameraT.of(cam).kinv)[m].numpy()
    return (Xc - cam.t) @ cam.R


def voxel_down(points: np.ndarray, voxel: float) -> np.ndarray:
    """The centroid of the points in each occupied voxel (point-cloud-utils' ``downsample_point_cloud_on_voxel_grid``)."""
    if len(points) == 0:
        return points
    import point_cloud_utils as pcu

    lo = np.floor(points.min(0) / voxel) * voxel   # the grid of voxels [k voxel, (k + 1) voxel)
    n = np.floor((points.max(0) - lo) / voxel).astype(int) + 1
    return np.asarray(pcu.downsample_point_cloud_on_voxel_grid(voxel, np.ascontiguousarray(points), min_bound=lo,
                                                               max_bound=lo + n * voxel), float)


def _auroc(score: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None) -> float:
    """sklearn's ROC AUC of ``score`` for the binary ``target`` (NaN when the target has one class only)."""
    from sklearn.metrics import roc_auc_score

    target = np.asarray(target, bool)
    if target.all() or not target.any():
        return float("nan")
    return float(roc_auc_score(target, np.asarray(score, float), sample_weight=weight))


@torch.no_grad()
def evaluate(model: GaussianModel, scene: Scene, run: dict, cfg: dict, seed: int = 0) -> tuple[dict, dict]:
    """Chamfer / F1 / per-region CD, accuracy and completeness of back-projected depth (A > 0.5) from the
    training views; on the test views: PSNR, the depth-normal error overall and per region, and the per-pixel
    AUROC of the rendered ambiguity map U(p) (and of a random mask's) for the top quartile of |Z - Z_gt|;
    spillover mass, ray-colour variance, and the per-Gaussian indicator data."""
    trunc, mode = run["trunc"], run["depth_mode"]
    h = cfg_h(cfg)
    pts, tails, vrc = [], [], []
    for v in scene.train:
        r = render(model, v.cam, trunc, depth_mode=mode)
        pts.append(backproject(r.depth, r.alpha, v.cam))
        tails.append(float(r.tail_mass))
        vrc.append(float(r.ray_var.mean()))
    pred = voxel_down(np.concatenate(pts), scene.footprint / 2)
    if len(pred) == 0:
        pred = np.full((1, 3), 1e3)
    res = chamfer(pred, scene.points, cap=cfg["cd_cap"], tau=cfg["f_tau"], gt_labels=scene.point_labels)
    mask, u, hi, lo = sh_ambiguity(model.sh, h.upper, h.lower, h.lower_max)
    rmask = torch.zeros_like(mask)
    rmask[torch.as_tensor(np.random.default_rng(30_000 + seed).choice(len(mask), int(mask.sum()), replace=False),
                          dtype=torch.long)] = 1.0
    ps, nerr, nlab, U, Ur, derr = [], [], [], [], [], []
    for v in scene.test:
        r = render(model, v.cam, trunc, depth_mode=mode, amb_mask=mask)
        rr = render(model, v.cam, trunc, depth_mode=mode, amb_mask=rmask)
        ps.append(psnr(r.color, torch.as_tensor(v.rgb)))
        m = ((r.alpha > 0.5) & torch.as_tensor(v.depth > 0)).numpy()
        cos = (r.normal_d * torch.as_tensor(v.normal, dtype=torch.float32)).sum(-1).clamp(-1, 1)
        ang = torch.rad2deg(torch.arccos(cos)).numpy()
        nerr.append(ang[m])
        nlab.append(v.label[m])
        U.append(r.ambiguity.numpy()[m])
        Ur.append(rr.ambiguity.numpy()[m])
        derr.append(np.abs(r.depth.numpy() - v.depth)[m])
    nerr, nlab, derr = np.concatenate(nerr), np.concatenate(nlab), np.concatenate(derr)
    U, Ur = np.concatenate(U), np.concatenate(Ur)
    top = derr > np.quantile(derr, 0.75) if len(derr) else derr.astype(bool)
    labs = scene.point_labels
    metrics = dict(cd=res["cd"], acc=res["acc"], comp=res["comp"], f1=res["f1"], precision=res["precision"],
                   recall=res["recall"], region=res["region"], cd_ambiguous=region_cd(res, labs, AMBIGUOUS),
                   cd_ridge=region_cd(res, labs, (6,)), psnr=float(np.mean(ps)),
                   normal_err=float(nerr.mean()) if len(nerr) else 90.0,
                   normal_err_ambiguous=float(nerr[np.isin(nlab, AMBIGUOUS)].mean()) if np.isin(nlab, AMBIGUOUS).any()
                   else float("nan"),
                   region_normal={r: float(nerr[nlab == r].mean()) if np.any(nlab == r) else float("nan") for r in REGIONS
                                  if r > 0},
                   region_acc={r: float(res["_acc"][res["_pl"] == r].mean()) if np.any(res["_pl"] == r) else float("nan")
                               for r in res["region"]},
                   region_comp={r: float(res["_comp"][labs == r].mean()) for r in res["region"]},
                   u_pixel_auroc=_auroc(U, top), u_pixel_auroc_random=_auroc(Ur, top),
                   tail_mass=float(np.mean(tails)), vrc=float(np.mean(vrc)), n_points=len(pred),
                   flagged=float(mask.mean()))
    dist, nn = cKDTree(scene.points).query(model.means.numpy())
    lab = labs[nn]
    spec = scene.point_specular[nn] if scene.point_specular is not None else np.zeros(len(nn))
    per_g = dict(u=u.numpy(), high=hi.numpy(), low=lo.numpy(), mask=mask.numpy().astype(bool), dist=dist, region=lab,
                 opacity=model.opacities.numpy(), specular=spec)
    return metrics, per_g


def cfg_h(cfg: dict) -> Hyper:
    return Hyper(**cfg.get("hyper", {}))


def active_degree(it: int, T: int, L: int, every: float) -> int:
    """The SH degree in use at iteration ``it`` of ``T``: 0 at the start, one more every ``every * T``
    iterations (official 3DGS/AmbiSuR: ``oneupSHdegree`` every 1000 of 30k iterations), at most L."""
    step = max(int(round(every * T)), 1)
    return min(L, (it - 1) // step)


def train_run(scene: Scene, name: str, cfg: dict, seed: int, progress=None, device=None) -> RunResult:
    """Fit one run of the ladder (module docstring) with ``cfg['iters']`` iterations, one view per iteration, on
    ``device`` (the CPU when None); the returned model is on the CPU."""
    if name not in RUNS:
        raise ValueError(f"train_run: unknown run {name!r}; known: {', '.join(RUNS)}")
    run, h, T = RUNS[name], cfg_h(cfg), int(cfg["iters"])
    dev = torch.device("cpu") if device is None else torch.device(device)
    torch.manual_seed(seed)
    rng = np.random.default_rng(1000 + seed)
    model = init_model(scene, cfg["n_gauss"], cfg["sh_degree"], seed, source=run["init"]).to(dev)
    groups = [dict(params=[model.means], lr=h.lr["means"] * scene.extent, name="means"),
              dict(params=[model.log_scales], lr=h.lr["scales"]), dict(params=[model.quats], lr=h.lr["quats"]),
              dict(params=[model.opacity_logits], lr=h.lr["opacity"])]
    sh_dc = model.sh
    opt = torch.optim.Adam(groups, eps=1e-15)
    opt_sh = torch.optim.Adam([dict(params=[sh_dc], lr=1.0)], eps=1e-15)   # holds the state of `_sh_step`
    band_lr = torch.full((sh_dc.shape[1], 1), h.lr["sh_rest"], device=dev)
    band_lr[0] = h.lr["sh_dc"]
    if run["prior"] == "mono":
        mono, mono_depth = mono_priors(scene, seed)
        npri = [n.to(dev) for n in prior_normals(scene, mono_depth)]
        monos = [torch.as_tensor(d, device=dev) for d in mono]
        patch = max(4, int(round(cfg["size"] * cfg.get("mono_patch", 0.35))))
    else:
        npri = [n.to(dev) for n in prior_normals(scene)]
    cams = [CameraT.of(v.cam, dev) for v in scene.train]
    imgs = [torch.as_tensor(v.rgb, device=dev) for v in scene.train]
    priors = [torch.as_tensor(v.prior, device=dev) for v in scene.train]
    H, W = cams[0].H, cams[0].W
    lam_rc = rcc_lambda_per_pixel(h.rcc_lambda_rel, H, W)
    rand_score = torch.as_tensor(rng.random(len(model)), dtype=torch.float32, device=dev)
    log = dict(it=[], tail=[], vrc=[], flagged=[], loss=[], photo=[])
    order = np.concatenate([rng.permutation(len(cams)) for _ in range(T // len(cams) + 1)])
    vrc_window_end = None
    photo_acc = []
    for it in range(1, T + 1):
        k = int(order[it - 1])
        frac = it / T
        model.active_sh = active_degree(it, T, model.L, h.sh_up_every)
        rcc_on = run["rcc"] and h.rcc_window[0] < frac <= h.rcc_window[1]
        alr_on = run["alr"] is not None and frac > h.alr_from
        amb = None
        if run["alr"] == "indicator":
            amb = sh_ambiguity(model.sh, h.upper, h.lower, h.lower_max)[0]
        elif run["alr"] == "global":
            amb = torch.ones(len(model), device=dev)
        elif run["alr"] == "random":
            frac_flag = float(sh_ambiguity(model.sh, h.upper, h.lower, h.lower_max)[0].mean())
            amb = (rand_score < frac_flag).float()
        r = render(model, cams[k], run["trunc"], rcc_lambda=lam_rc if rcc_on else 0.0, amb_mask=amb,
                   depth_mode=run["depth_mode"])
        photo = photometric(r.color, imgs[k], h.lam_ssim)
        loss = photo
        if bool(r.visible.any()):
            loss = loss + h.w_minscale * model.scales[r.visible].min(-1).values.mean()
        if frac > h.sv_from:
            loss = loss + h.w_sv * depth_normal_loss(r.normal_d, r.normal, r.alpha, imgs[k])
        if run["prior"] == "metric" and frac > h.prior_from:
            loss = loss + h.w_prior * prior_depth_loss(r.depth, priors[k], scene.extent)
        elif run["prior"] == "mono" and frac >= h.mono_from:
            mult = h.mono_end_mult ** ((frac - h.mono_from) / (1 - h.mono_from))
            loss = loss + h.w_mono * mult * mono_depth_loss(r.depth, monos[k], r.alpha, patch)
        if alr_on:   # no densification here, so the ALR backward cannot feed densification statistics
            loss = loss + alr_loss(r.normal_d, npri[k], r.ambiguity, r.alpha, h.w_alr)
        opt.zero_grad(set_to_none=True)
        opt_sh.zero_grad(set_to_none=True)
        loss.backward()
        for g in opt.param_groups:
            if g.get("name") == "means":
                g["lr"] = h.lr["means"] * scene.extent * (0.01 ** frac)
        opt.step()
        _sh_step(opt_sh, band_lr)
        photo_acc.append(float(photo.detach()))
        if it % cfg["log_every"] == 0 or it == T:
            with torch.no_grad():
                rl = render(model, cams[0], run["trunc"], depth_mode=run["depth_mode"])
                log["it"].append(it)
                log["tail"].append(float(rl.tail_mass))
                log["vrc"].append(float(rl.ray_var.mean()))
                log["flagged"].append(float(sh_ambiguity(model.sh, h.upper, h.lower, h.lower_max)[0].mean()))
                log["loss"].append(float(loss))
                log["photo"].append(float(np.mean(photo_acc)))   # the training photometric loss since the last log
                photo_acc = []
        if it == int(h.rcc_window[1] * T):
            with torch.no_grad():
                vrc_window_end = float(np.mean([float(render(model, c, run["trunc"]).ray_var.mean()) for c in cams]))
        if progress is not None:
            progress.update(1)
    model.eval()
    model.active_sh = None
    model = model.cpu()
    metrics, per_g = evaluate(model, scene, run, cfg, seed)
    metrics["vrc_window_end"] = vrc_window_end
    return RunResult(name, seed, metrics, log, model, per_g)


def _sh_step(opt_sh, band_lr):
    """Adam on the SH coefficients with per-band learning rates (DC vs. the view-dependent bands, rest = DC/20)."""
    for g in opt_sh.param_groups:
        for p in g["params"]:
            if p.grad is None:
                continue
            st = opt_sh.state.setdefault(p, {})
            if not st:
                st["step"], st["m"], st["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
            st["step"] += 1
            gr = p.grad
            st["m"].mul_(0.9).add_(gr, alpha=0.1)
            st["v"].mul_(0.999).addcmul_(gr, gr, value=0.001)
            mh = st["m"] / (1 - 0.9 ** st["step"])
            vh = st["v"] / (1 - 0.999 ** st["step"])
            with torch.no_grad():
                p.sub_(band_lr * mh / (vh.sqrt() + 1e-15))
