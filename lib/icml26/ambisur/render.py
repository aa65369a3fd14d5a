"""A pure-torch PGSR-style rasterizer with Gaussian Primitive Truncation (brief 2.1, 2.3 (1)).

Per view: EWA projection with the 0.3 px^2 low-pass (gsplat's ``_fully_fused_projection``), ONE global sort of
the Gaussians by camera-space depth, then for every pixel p and Gaussian i

    r_i(p)^2 = Delta^T Sigma'^-1 Delta,    alpha_i(p) = min(0.99, o_i exp(-r^2/2)) * 1[r^2 <= gamma^2]   (GPT)
    alpha = 0 where alpha < 1/255 (the 3DGS skip),  w_i = alpha_i prod_{j<i} (1 - alpha_j),  stop when T < 1e-4,

and the buffers C = sum w c + T_N bg, N = sum w n, D = sum w |n . mu|, A = sum w, the plane depth
Z = D / (-N . K^-1 p~) (PGSR), the ambiguity map U = sum w m, and the depth-normal N_d of Z.
The GPT cut is a ``torch.where`` before the skip, so no gradient flows from r > gamma (pitfall 2).

Tile culling is exact: a Gaussian can reach a pixel only within ``sqrt(r2_max lambda_max(Sigma'))`` px of its
centre, r2_max = min(gamma^2, 2 ln(255 o)) (alpha >= 1/255 needs that), so culled and dense images agree.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from .model import GaussianModel
from .scene import Camera

EPS2D = 0.3
NEAR = 0.01
ALPHA_MAX, ALPHA_MIN, T_MIN = 0.99, 1.0 / 255.0, 1e-4
HARD_CUT_SIGMA = math.sqrt(math.log(255.0) / 50.0)   # the official "power x 100" trick is a hard cut above this


@dataclass
class CameraT:
    """A `Camera` as torch tensors: K, R, t, centre and the grid K^-1 p~ of pixel centres (H, W, 3)."""

    K: torch.Tensor
    R: torch.Tensor
    t: torch.Tensor
    center: torch.Tensor
    kinv: torch.Tensor
    H: int
    W: int

    @classmethod
    def of(cls, cam: Camera, device=None) -> "CameraT":
        """The tensors of ``cam`` on ``device`` (the CPU when None)."""
        f = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float32, device=device)
        _, kinv = cam.pixel_rays(1)
        return cls(f(cam.K), f(cam.R), f(cam.t), f(cam.center), f(kinv), int(cam.H), int(cam.W))


def _cam(camera, device=None) -> CameraT:
    if isinstance(camera, CameraT):
        return camera
    return CameraT.of(camera, device)


def project(means: torch.Tensor, covars: torch.Tensor, cam: CameraT, eps2d: float = EPS2D):
    """EWA splatting (Zwicker et al.), as gsplat's ``_persp_proj`` (with its 1.3 tan-fov clamp of the Jacobian):
    camera-space means (N, 3), 2-D means (N, 2), 2-D covariances + eps2d I (N, 2, 2), conics (N, 3)."""
    mc = means @ cam.R.T + cam.t
    fx, fy, cx, cy = cam.K[0, 0], cam.K[1, 1], cam.K[0, 2], cam.K[1, 2]
    tx, ty, tz = mc.unbind(-1)
    tan_x, tan_y = 0.5 * cam.W / fx, 0.5 * cam.H / fy
    tx = tz * torch.clamp(tx / tz, min=-(cx / fx + 0.3 * tan_x), max=(cam.W - cx) / fx + 0.3 * tan_x)
    ty = tz * torch.clamp(ty / tz, min=-(cy / fy + 0.3 * tan_y), max=(cam.H - cy) / fy + 0.3 * tan_y)
    O = torch.zeros_like(tz)
    J = torch.stack([fx / tz, O, -fx * tx / tz ** 2, O, fy / tz, -fy * ty / tz ** 2], -1).reshape(-1, 2, 3)
    JW = J @ cam.R                                   # (N, 2, 3): J W, then J W Sigma W^T J^T
    cov2d = JW @ covars @ JW.transpose(-1, -2) + eps2d * torch.eye(2, device=means.device)
    means2d = (mc @ cam.K[:2, :3].T) / mc[:, 2:3]
    det = (cov2d[:, 0, 0] * cov2d[:, 1, 1] - cov2d[:, 0, 1] * cov2d[:, 1, 0]).clamp(min=1e-10)
    conic = torch.stack([cov2d[:, 1, 1] / det, -(cov2d[:, 0, 1] + cov2d[:, 1, 0]) / 2 / det, cov2d[:, 0, 0] / det], -1)
    return mc, means2d, cov2d, conic


class RayColorConsistency(torch.autograd.Function):
    """RCC (brief 2.3 (2)) as the official code injects it: identity on the colours in forward; in backward
    dL/dc_i += lambda_rc sum_p sg(w_i(p)) (c_i - sg(C(p))) = lambda_rc (W_i c_i - S_i), with the detached
    per-Gaussian sums W_i = sum_p w_i(p) and S_i = sum_p w_i(p) C(p)."""

    @staticmethod
    def forward(ctx, colors, W, S, lam):
        ctx.save_for_backward(colors.detach(), W, S)
        ctx.lam = float(lam)
        return colors.clone()

    @staticmethod
    def backward(ctx, grad):
        c, W, S = ctx.saved_tensors
        return grad + ctx.lam * (W[:, None] * c - S), None, None, None


@dataclass
class Render:
    color: torch.Tensor      # (H, W, 3)
    normal: torch.Tensor     # (H, W, 3), camera frame, blended (not normalised)
    dist: torch.Tensor       # (H, W)
    alpha: torch.Tensor      # (H, W)
    depth: torch.Tensor      # (H, W): plane depth Z (or alpha-blended z with depth_mode="blend")
    depth_blend: torch.Tensor
    ambiguity: torch.Tensor  # (H, W): U(p) = sum w m
    normal_d: torch.Tensor   # (H, W, 3): normal of the back-projected depth (unit, toward the camera)
    ray_var: torch.Tensor    # (H, W): sum_i w_i ||c_i - C||^2 (foreground colour, black background)
    tail_mass: torch.Tensor  # scalar: weight from r > tail_sigma / total weight
    weight_sum: torch.Tensor  # (N,), detached: sum_p w_i(p)
    visible: torch.Tensor    # (N,) bool: in front of the camera and reaching >= 1 pixel
    colors: torch.Tensor     # (N, 3) the per-Gaussian colours of this view


def gaussian_normals(model: GaussianModel, cam: CameraT, means_c: torch.Tensor) -> torch.Tensor:
    """PGSR normal: the rotation column of the smallest scale, in the camera frame, flipped toward the camera."""
    Rm = model.rotations()
    k = torch.argmin(model.log_scales.detach(), dim=-1)
    n = torch.gather(Rm, 2, k[:, None, None].expand(-1, 3, 1))[..., 0]
    nc = n @ cam.R.T
    flip = torch.where((nc * means_c).sum(-1) > 0, -1.0, 1.0)
    return nc * flip[:, None]


def depth_to_normal(depth: torch.Tensor, cam: CameraT) -> torch.Tensor:
    """Unit normals (H, W, 3) of the back-projected depth map (kornia's ``depth_to_normals``: the cross product of
    Sobel derivatives of the point map), toward the camera. Deviation, named: the official ``depth_pcd2normal``
    uses central differences of the point map; Sobel smooths across three rows, which at 32-48 px lowers the noise
    and widens edges by one pixel."""
    from kornia.geometry.depth import depth_to_normals

    n = depth_to_normals(depth[None, None], cam.K[None])[0].permute(1, 2, 0)
    X = depth[..., None] * cam.kinv
    flip = torch.where((n * X).sum(-1, keepdim=True) > 0, -1.0, 1.0)
    return n * flip


def _composite(pix, m2d, conic, opac, valid, gamma, tail_sigma):
    """Weights (G, P, K) of K depth-sorted Gaussians at P pixels in G groups, and the tail weight (G, P)."""
    d = pix[:, :, None, :] - m2d[:, None, :, :]
    a, b, c = conic.unbind(-1)
    r2 = a[:, None] * d[..., 0] ** 2 + 2 * b[:, None] * d[..., 0] * d[..., 1] + c[:, None] * d[..., 1] ** 2
    alpha = torch.clamp_max(opac[:, None] * torch.exp(-0.5 * r2), ALPHA_MAX)
    keep = valid[:, None, :] & (r2 >= 0)
    if gamma is not None:
        keep = keep & (r2 <= gamma * gamma)          # GPT: the cut comes before the 1/255 skip
    alpha = torch.where(keep, alpha, torch.zeros_like(alpha))
    alpha = torch.where(alpha >= ALPHA_MIN, alpha, torch.zeros_like(alpha))
    T_incl = torch.cumprod(1 - alpha, -1)
    alpha = torch.where(T_incl.detach() >= T_MIN, alpha, torch.zeros_like(alpha))   # early stop, T < 1e-4
    T = torch.cumprod(1 - alpha, -1)
    T_excl = torch.cat([torch.ones_like(T[..., :1]), T[..., :-1]], -1)
    w = alpha * T_excl
    tail = (w.detach() * (r2.detach() > tail_sigma ** 2)).sum(-1)
    return w, tail


@torch.no_grad()
def composite_weights(model: GaussianModel, camera, trunc_sigma: float | None = 2.0) -> torch.Tensor:
    """The dense blending weights w_i(p) (H*W, N) of one view, columns in the model's order (no tiling): the
    reference the tiled renderer and RCC's per-Gaussian sums are checked against."""
    _check_render_args(model, trunc_sigma, 0.0, None, None, None)
    cam = _cam(camera, model.means.device)
    mc, m2d, _, conic = project(model.means, model.covariances(), cam)
    opac = model.opacities
    order = torch.argsort(mc[:, 2], stable=True)
    valid = (mc[:, 2] > NEAR) & (opac >= ALPHA_MIN)
    uc, vc = torch.meshgrid(torch.arange(cam.W, device=mc.device) + 0.5, torch.arange(cam.H, device=mc.device) + 0.5,
                            indexing="xy")
    pix = torch.stack([uc, vc], -1).reshape(1, -1, 2)
    w, _ = _composite(pix, m2d[order][None], conic[order][None], opac[order][None], valid[order][None], trunc_sigma,
                      2.0)
    out = torch.zeros(pix.shape[1], len(model), device=mc.device)
    out[:, order] = w[0]
    return out


def _check_render_args(model, trunc_sigma, rcc_lambda, bg, amb_mask, tile):
    if not isinstance(model, GaussianModel):
        raise ValueError("render: model must be a GaussianModel")
    model.validate()
    if trunc_sigma is not None:
        if not (isinstance(trunc_sigma, (int, float)) and math.isfinite(trunc_sigma) and trunc_sigma > 0):
            raise ValueError(f"render: trunc_sigma must be > 0 (or None for no truncation), got {trunc_sigma!r}")
        if trunc_sigma < HARD_CUT_SIGMA:
            warnings.warn(f"trunc_sigma={trunc_sigma} < {HARD_CUT_SIGMA:.3f}: the official 'power x 100' trick "
                          "would not be a hard cut there (this renderer cuts exactly)", stacklevel=3)
    if not (math.isfinite(rcc_lambda) and rcc_lambda >= 0):
        raise ValueError(f"render: rcc_lambda must be >= 0, got {rcc_lambda!r}")
    if bg is not None and rcc_lambda > 0 and float(torch.as_tensor(bg).abs().max()) > 0:
        warnings.warn("RCC with a non-black background: sg(C) includes T_N bg, the official gradient is then "
                      "no longer the exact gradient of the ray-colour variance", stacklevel=3)
    if amb_mask is not None and tuple(amb_mask.shape) != (len(model),):
        raise ValueError(f"render: amb_mask must have shape ({len(model)},), got {tuple(amb_mask.shape)}")
    if tile is not None and (int(tile) != tile or tile < 1):
        raise ValueError(f"render: tile must be a positive int or None, got {tile!r}")


def render(model: GaussianModel, camera, trunc_sigma: float | None = 2.0, *, bg=None, rcc_lambda: float = 0.0,
           amb_mask: torch.Tensor | None = None, tile: int | None = 8, tail_sigma: float = 2.0,
           depth_mode: str = "plane", cull_scale: float = 1.0) -> Render:
    """Render every buffer of one view (module docstring). ``trunc_sigma=None``: no GPT (plain 3DGS/PGSR
    splats). ``rcc_lambda``: the per-pixel RCC weight (official 1e-5), injected in backward into the colours.
    ``amb_mask``: the per-Gaussian ambiguity flags m_i (float), rendered into U. ``tile=None``: dense, else the
    exact tile culling with ``tile x tile`` px tiles (``cull_scale`` < 1 shrinks the culling radius: a negative
    control, no longer exact). ``depth_mode``: "plane" (PGSR) or "blend" (3DGS)."""
    _check_render_args(model, trunc_sigma, rcc_lambda, bg, amb_mask, tile)
    if depth_mode not in ("plane", "blend"):
        raise ValueError(f"render: depth_mode must be 'plane' or 'blend', got {depth_mode!r}")
    dev = model.means.device
    cam = _cam(camera, dev)
    H, W, N = cam.H, cam.W, len(model)
    mc, m2d, cov2d, conic = project(model.means, model.covariances(), cam)
    opac = model.opacities
    z = mc[:, 2]
    order = torch.argsort(z.detach(), stable=True)              # one global depth sort per view
    normals = gaussian_normals(model, cam, mc)
    colors = model.colors(cam.center)
    valid_g = (z.detach() > NEAR) & (opac.detach() >= ALPHA_MIN)
    uc, vc = torch.meshgrid(torch.arange(W, device=dev) + 0.5, torch.arange(H, device=dev) + 0.5, indexing="xy")
    pix_all = torch.stack([uc, vc], -1).reshape(-1, 2)           # row-major (H, W)
    mask = amb_mask.detach().float() if amb_mask is not None else torch.zeros(N, device=dev)

    if tile is None:
        idx = order[None]
        groups = torch.zeros(1, H * W, dtype=torch.long, device=dev)
        pix = pix_all[None]
        pix_ids = torch.arange(H * W, device=dev)[None]
        valid = valid_g[idx]
    else:
        with torch.no_grad():
            r2max = 2 * torch.log(torch.clamp_min(255.0 * opac, 1e-30))
            if trunc_sigma is not None:
                r2max = torch.clamp_max(r2max, trunc_sigma ** 2)
            a, b, c = cov2d[:, 0, 0], cov2d[:, 0, 1], cov2d[:, 1, 1]
            lam = (a + c) / 2 + torch.sqrt(((a - c) / 2) ** 2 + b ** 2)
            rad = cull_scale * torch.sqrt(torch.clamp_min(r2max, 0) * lam) + 1e-3
            ok = valid_g & (r2max >= 0)
            ty_, tx_ = (H + tile - 1) // tile, (W + tile - 1) // tile
            x0 = torch.arange(tx_, device=dev) * tile + 0.5
            y0 = torch.arange(ty_, device=dev) * tile + 0.5
            x1, y1 = torch.clamp_max(x0 + tile - 1, W - 0.5), torch.clamp_max(y0 + tile - 1, H - 0.5)
            ms = m2d.detach()[order]
            rs, oks = rad[order], ok[order]
            hitx = (ms[None, :, 0] >= x0[:, None] - rs) & (ms[None, :, 0] <= x1[:, None] + rs)   # (tx, N)
            hity = (ms[None, :, 1] >= y0[:, None] - rs) & (ms[None, :, 1] <= y1[:, None] + rs)   # (ty, N)
            hit = (hity[:, None, :] & hitx[None, :, :] & oks).reshape(ty_ * tx_, N)
            K = max(int(hit.sum(1).max()), 1)
            pos = torch.argsort((~hit).to(torch.int8), dim=1, stable=True)[:, :K]
            valid = torch.gather(hit, 1, pos)
            idx = order[pos]
            # pixel ids of each tile (padded tiles at the border repeat a pixel, masked below)
            ly, lx = torch.meshgrid(torch.arange(tile, device=dev), torch.arange(tile, device=dev), indexing="ij")
            ty_i, tx_i = torch.meshgrid(torch.arange(ty_, device=dev), torch.arange(tx_, device=dev), indexing="ij")
            py = (ty_i.reshape(-1, 1) * tile + ly.reshape(1, -1))
            px = (tx_i.reshape(-1, 1) * tile + lx.reshape(1, -1))
            inimg = (py < H) & (px < W)
            pix_ids = torch.where(inimg, py.clamp_max(H - 1) * W + px.clamp_max(W - 1), torch.full_like(py, H * W))
            pix = pix_all[pix_ids.clamp_max(H * W - 1)]

    w, tail = _composite(pix, m2d[idx], conic[idx], opac[idx], valid, trunc_sigma, tail_sigma)
    if tile is not None:
        w = w * inimg[..., None]
        tail = tail * inimg
    flat_idx = torch.where(valid, idx, torch.full_like(idx, N))

    def per_gaussian(values):   # (G, K, F) -> (N, F), summed over groups
        out = torch.zeros(N + 1, values.shape[-1], device=dev)
        out.index_add_(0, flat_idx.reshape(-1), values.reshape(-1, values.shape[-1]))
        return out[:N]

    wd = w.detach()
    weight_sum = per_gaussian(wd.sum(1)[..., None])[:, 0]
    if rcc_lambda > 0:
        C_det = torch.einsum("gpk,gkc->gpc", wd, colors.detach()[idx])
        S = per_gaussian(torch.einsum("gpk,gpc->gkc", wd, C_det))
        colors = RayColorConsistency.apply(colors, weight_sum, S, rcc_lambda)
    dist = (normals * mc).sum(-1).abs()
    feats = torch.cat([colors, normals, dist[:, None], z[:, None], mask[:, None], (colors ** 2).sum(-1, keepdim=True)], -1)
    out_g = torch.einsum("gpk,gkf->gpf", w, feats[idx])
    out = torch.zeros(H * W + 1, feats.shape[-1], device=dev)
    out = out.index_add(0, pix_ids.reshape(-1), out_g.reshape(-1, feats.shape[-1]))[: H * W].reshape(H, W, -1)
    tail_img = torch.zeros(H * W + 1, device=dev).index_add(0, pix_ids.reshape(-1), tail.reshape(-1))[: H * W]
    A = w.sum(-1)
    A = torch.zeros(H * W + 1, device=dev).index_add(0, pix_ids.reshape(-1), A.reshape(-1))[: H * W].reshape(H, W)
    Cfg, Nrm, Dst, Zb, U, csq = out[..., :3], out[..., 3:6], out[..., 6], out[..., 7], out[..., 8], out[..., 9]
    bgv = torch.zeros(3, device=dev) if bg is None else torch.as_tensor(bg, dtype=torch.float32, device=dev)
    color = Cfg + (1 - A)[..., None] * bgv
    denom = -(Nrm * cam.kinv).sum(-1)
    safe = denom > 1e-6
    Zp = torch.where(safe, Dst / torch.where(safe, denom, torch.ones_like(denom)), torch.zeros_like(denom))
    Zbl = torch.where(A > 1e-6, Zb / torch.where(A > 1e-6, A, torch.ones_like(A)), torch.zeros_like(A))
    depth = Zp if depth_mode == "plane" else Zbl
    ray_var = csq - 2 * (Cfg ** 2).sum(-1) + A * (Cfg ** 2).sum(-1)
    visible = torch.zeros(N, dtype=torch.bool, device=dev)
    visible[flat_idx.reshape(-1)[flat_idx.reshape(-1) < N]] = True
    visible &= weight_sum > 0
    tail_mass = tail_img.sum() / A.detach().sum().clamp_min(1e-12)
    return Render(color, Nrm, Dst, A, depth, Zbl, U, depth_to_normal(depth, cam), ray_var, tail_mass, weight_sum,
                  visible, colors)
