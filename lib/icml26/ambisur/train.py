"""Training runs of the ablation ladder (brief 5.2-5.3): one config, components switched on one by one.

    A0  3DGS-style alpha-blended depth, no truncation            (depth-model baseline)
    A   PGSR-lite plane depth + prior depth (the paper's ablation baseline row)
    B   A + Gaussian Primitive Truncation (gamma = 2)
    C   B + Ray-Colour Consistency (middle window of the schedule)
    D   C + SH ambiguity indicator + ALR                         (AmbiSuR-lite)
    E   C + ALR with U = 1 (global prior-normal regularisation: the selectivity control)
    F   C + ALR with a random mask of the same flagged fraction  (the indicator control)
    G   A without any prior: no prior depth loss, random initial points (is the scene ambiguous at all?)

Loss (brief 2.2): (0.8 L1 + 0.2 D-SSIM) + 100 mean_vis min_k s_ik + 0.015 L_sv (t > 0.23 T)
+ 0.1 |Z_prior - Z| / extent (t > 0.03 T) + ALR 0.1 (t > 0.23 T); RCC in (T/6, T/2] with lambda_rc = 15 / (3HW);
schedules are the official 30k-iteration ones scaled by T. No densification, NCC or multi-view terms
(a fixed number of Gaussians; a documented deviation).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .losses import (alr_loss, depth_normal_loss, photometric, prior_depth_loss, psnr, rcc_lambda_per_pixel,
                     sh_ambiguity)
from .metrics import chamfer, surface_distance
from .model import GaussianModel
from .render import CameraT, depth_to_normal, render
from .scene import Scene

RUNS: dict[str, dict] = {
    "A0": dict(depth_mode="blend", trunc=None, rcc=False, alr=None, prior=True),
    "A": dict(depth_mode="plane", trunc=None, rcc=False, alr=None, prior=True),
    "B": dict(depth_mode="plane", trunc=2.0, rcc=False, alr=None, prior=True),
    "C": dict(depth_mode="plane", trunc=2.0, rcc=True, alr=None, prior=True),
    "D": dict(depth_mode="plane", trunc=2.0, rcc=True, alr="indicator", prior=True),
    "E": dict(depth_mode="plane", trunc=2.0, rcc=True, alr="global", prior=True),
    "F": dict(depth_mode="plane", trunc=2.0, rcc=True, alr="random", prior=True),
    "G": dict(depth_mode="plane", trunc=None, rcc=False, alr=None, prior=False),
}
RUN_LABELS = {"A0": "A0 alpha-blended z", "A": "A PGSR-lite+prior", "B": "B +GPT", "C": "C +RCC",
              "D": "D +indicator+ALR", "E": "E ALR, U=1", "F": "F ALR, random mask", "G": "G no prior (random init)"}


@dataclass
class Hyper:
    """Weights and schedule fractions (official values, schedules scaled from 30k iterations)."""

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


def prior_normals(scene: Scene) -> list[torch.Tensor]:
    out = []
    for v in scene.train:
        cam = CameraT.of(v.cam)
        out.append(depth_to_normal(torch.as_tensor(v.prior), cam) * torch.as_tensor(v.prior > 0)[..., None])
    return out


def init_model(scene: Scene, n: int, sh_degree: int, seed: int, source: str = "prior") -> GaussianModel:
    """Initial Gaussians: ``source="prior"`` back-projects the prior depth (as the official code starts from DA3
    points); ``source="random"`` draws uniform points in the scene's bounding box with random colours (3DGS's
    random initialisation), for the run without any prior (G)."""
    rng = np.random.default_rng(seed)
    if source == "random":
        lo, hi = np.array([-1.0, -1.0, 0.0]), np.array([1.0, 1.0, 0.6])
        pts = lo + (hi - lo) * rng.random((n, 3))
        return GaussianModel.from_points(pts, rng.random((n, 3)), sh_degree, seed)
    if source != "prior":
        raise ValueError(f"init_model: source must be 'prior' or 'random', got {source!r}")
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
    if len(points) == 0:
        return points
    keys = np.floor(points / voxel).astype(np.int64)
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.ravel()
    out = np.zeros((inv.max() + 1, 3))
    np.add.at(out, inv, points)
    return out / np.bincount(inv)[:, None]


@torch.no_grad()
def evaluate(model: GaussianModel, scene: Scene, run: dict, cfg: dict) -> tuple[dict, dict]:
    """Chamfer / F1 / per-region CD of back-projected depth (A > 0.5) from the training views, test PSNR, normal
    error on test views, spillover mass, ray-colour variance, and the per-Gaussian indicator data."""
    trunc, mode = run["trunc"], run["depth_mode"]
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
    ps, nerr = [], []
    for v in scene.test:
        r = render(model, v.cam, trunc, depth_mode=mode)
        ps.append(psnr(r.color, torch.as_tensor(v.rgb)))
        m = (r.alpha > 0.5) & torch.as_tensor(v.depth > 0)
        cos = (r.normal_d * torch.as_tensor(v.normal, dtype=torch.float32)).sum(-1).clamp(-1, 1)[m]
        nerr.append(float(torch.rad2deg(torch.arccos(cos)).mean()) if bool(m.any()) else 90.0)
    from .metrics import region_cd
    from .scene import AMBIGUOUS

    metrics = dict(cd=res["cd"], acc=res["acc"], comp=res["comp"], f1=res["f1"], precision=res["precision"],
                   recall=res["recall"], region=res["region"], cd_ambiguous=region_cd(res, scene.point_labels, AMBIGUOUS),
                   cd_ridge=region_cd(res, scene.point_labels, (6,)), psnr=float(np.mean(ps)),
                   normal_err=float(np.mean(nerr)), tail_mass=float(np.mean(tails)), vrc=float(np.mean(vrc)),
                   n_points=len(pred))
    mask, u, hi, lo = sh_ambiguity(model.sh, cfg_h(cfg).upper, cfg_h(cfg).lower, cfg_h(cfg).lower_max)
    dist, lab = surface_distance(model.means.numpy(), scene.points, scene.point_labels)
    per_g = dict(u=u.numpy(), high=hi.numpy(), low=lo.numpy(), mask=mask.numpy().astype(bool), dist=dist, region=lab,
                 opacity=model.opacities.numpy())
    return metrics, per_g


def cfg_h(cfg: dict) -> Hyper:
    return Hyper(**cfg.get("hyper", {}))


def train_run(scene: Scene, name: str, cfg: dict, seed: int, progress=None) -> RunResult:
    """Fit one run of the ladder (module docstring) with ``cfg['iters']`` iterations, one view per iteration."""
    if name not in RUNS:
        raise ValueError(f"train_run: unknown run {name!r}; known: {', '.join(RUNS)}")
    run, h, T = RUNS[name], cfg_h(cfg), int(cfg["iters"])
    torch.manual_seed(seed)
    rng = np.random.default_rng(1000 + seed)
    model = init_model(scene, cfg["n_gauss"], cfg["sh_degree"], seed, source="prior" if run["prior"] else "random")
    groups = [dict(params=[model.means], lr=h.lr["means"] * scene.extent, name="means"),
              dict(params=[model.log_scales], lr=h.lr["scales"]), dict(params=[model.quats], lr=h.lr["quats"]),
              dict(params=[model.opacity_logits], lr=h.lr["opacity"])]
    sh_dc = model.sh
    opt = torch.optim.Adam(groups, eps=1e-15)
    opt_sh = torch.optim.Adam([dict(params=[sh_dc], lr=1.0)], eps=1e-15)   # holds the state of `_sh_step`
    band_lr = torch.full((sh_dc.shape[1], 1), h.lr["sh_rest"])
    band_lr[0] = h.lr["sh_dc"]
    npri = prior_normals(scene)
    cams = [CameraT.of(v.cam) for v in scene.train]
    imgs = [torch.as_tensor(v.rgb) for v in scene.train]
    priors = [torch.as_tensor(v.prior) for v in scene.train]
    H, W = cams[0].H, cams[0].W
    lam_rc = rcc_lambda_per_pixel(h.rcc_lambda_rel, H, W)
    rand_score = torch.as_tensor(rng.random(len(model)), dtype=torch.float32)
    log = dict(it=[], tail=[], vrc=[], flagged=[], loss=[])
    order = np.concatenate([rng.permutation(len(cams)) for _ in range(T // len(cams) + 1)])
    vrc_window_end = None
    for it in range(1, T + 1):
        k = int(order[it - 1])
        frac = it / T
        rcc_on = run["rcc"] and h.rcc_window[0] < frac <= h.rcc_window[1]
        alr_on = run["alr"] is not None and frac > h.alr_from
        amb = None
        if run["alr"] == "indicator":
            amb = sh_ambiguity(model.sh, h.upper, h.lower, h.lower_max)[0]
        elif run["alr"] == "global":
            amb = torch.ones(len(model))
        elif run["alr"] == "random":
            frac_flag = float(sh_ambiguity(model.sh, h.upper, h.lower, h.lower_max)[0].mean())
            amb = (rand_score < frac_flag).float()
        r = render(model, cams[k], run["trunc"], rcc_lambda=lam_rc if rcc_on else 0.0, amb_mask=amb,
                   depth_mode=run["depth_mode"])
        loss = photometric(r.color, imgs[k], h.lam_ssim)
        if bool(r.visible.any()):
            loss = loss + h.w_minscale * model.scales[r.visible].min(-1).values.mean()
        if frac > h.sv_from:
            loss = loss + h.w_sv * depth_normal_loss(r.normal_d, r.normal, r.alpha, imgs[k])
        if run["prior"] and frac > h.prior_from:
            loss = loss + h.w_prior * prior_depth_loss(r.depth, priors[k], scene.extent)
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
        if it % cfg["log_every"] == 0 or it == T:
            with torch.no_grad():
                rl = render(model, cams[0], run["trunc"], depth_mode=run["depth_mode"])
                log["it"].append(it)
                log["tail"].append(float(rl.tail_mass))
                log["vrc"].append(float(rl.ray_var.mean()))
                log["flagged"].append(float(sh_ambiguity(model.sh, h.upper, h.lower, h.lower_max)[0].mean()))
                log["loss"].append(float(loss))
        if it == int(h.rcc_window[1] * T):
            with torch.no_grad():
                vrc_window_end = float(np.mean([float(render(model, c, run["trunc"]).ray_var.mean()) for c in cams]))
        if progress is not None:
            progress.update(1)
    model.eval()
    metrics, per_g = evaluate(model, scene, run, cfg)
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
