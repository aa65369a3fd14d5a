"""The synthetic scene: real textures on exact geometry, a numpy ray caster, GT points and a stand-in prior.

A stand-in for DTU / Tanks and Temples (which cannot be downloaded here). It keeps what the paper's two
ambiguities need: a well-textured region (brick/grass/gravel photographs from ``skimage.data`` as albedo),
a textureless region, a glossy sphere whose highlight moves with the view (view-dependent colour, the
high end of the SH indicator), a textureless box casting a shadow, and a thin ridge (fine detail where a
monocular/metric prior over-smooths). Every pixel has exact depth, normal and a region label.

Camera convention (OpenCV / gsplat): x right, y down, z forward; ``X_cam = R X_world + t``; pixel centres
at integer + 0.5.
"""
from __future__ import annotations

import contextlib
import io
import logging
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

REGIONS = {0: "background", 1: "textured ground", 2: "textureless ground", 3: "specular sphere", 4: "box",
           5: "shadow", 6: "ridge"}
AMBIGUOUS = (2, 3, 4, 5)   # textureless ground, specular sphere, textureless box, shadow
SPHERE_C, SPHERE_R = np.array([0.45, 0.4, 0.3]), 0.3
BOX_LO, BOX_HI = np.array([0.25, -0.7, 0.0]), np.array([0.6, -0.35, 0.3])
RIDGE_LO, RIDGE_HI = np.array([-0.6, -0.1, 0.0]), np.array([-0.5, 0.8, 0.1])
GROUND = 1.0                   # the ground is [-1, 1]^2 at z = 0; its x < 0 half is textured
LIGHT = np.array([-0.5, 0.35, 1.0]) / np.linalg.norm([-0.5, 0.35, 1.0])
AMBIENT, KS, SHININESS = 0.25, 0.6, 40.0
SPECULAR_MIN = 0.05            # a GT point "bears a highlight" when its specular term exceeds this in some view


@dataclass(frozen=True)
class Layout:
    """Where the sphere, the box and the ridge stand (world units). Variant 0 is the chapter's reference scene;
    other variants move the sphere and the box (issue 52: more than one scene)."""

    sphere_c: np.ndarray = field(default_factory=lambda: SPHERE_C.copy())
    sphere_r: float = SPHERE_R
    box_lo: np.ndarray = field(default_factory=lambda: BOX_LO.copy())
    box_hi: np.ndarray = field(default_factory=lambda: BOX_HI.copy())
    ridge_lo: np.ndarray = field(default_factory=lambda: RIDGE_LO.copy())
    ridge_hi: np.ndarray = field(default_factory=lambda: RIDGE_HI.copy())


def layout(variant: int = 0) -> Layout:
    """Scene variant ``variant``: 0 the reference layout; otherwise the sphere (radius 0.25-0.33) and the box are
    moved within the textureless half (x > 0) so every region keeps its type and no object overlaps another."""
    if int(variant) != variant or variant < 0:
        raise ValueError(f"layout: variant must be an int >= 0, got {variant!r}")
    if variant == 0:
        return Layout()
    rng = np.random.default_rng(7919 + int(variant))
    r = float(rng.uniform(0.25, 0.33))
    sc = np.array([rng.uniform(0.3, 0.6), rng.uniform(0.15, 0.5), r])
    size = np.array([rng.uniform(0.28, 0.4), rng.uniform(0.28, 0.4), rng.uniform(0.22, 0.35)])
    lo = np.array([rng.uniform(0.2, 0.95 - size[0]), rng.uniform(-0.85, -0.25 - size[1]), 0.0])
    return Layout(sc, r, lo, lo + size)


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: intrinsics ``K`` (3x3), world-to-camera ``R`` (3x3), ``t`` (3), image ``H`` x ``W``."""

    K: np.ndarray
    R: np.ndarray
    t: np.ndarray
    H: int
    W: int

    def __post_init__(self):
        K = np.asarray(self.K, float)
        if K.shape != (3, 3) or np.asarray(self.R).shape != (3, 3) or np.asarray(self.t).shape != (3,):
            raise ValueError("Camera: K and R must be 3x3 and t of length 3")
        if not (K[0, 0] > 0 and K[1, 1] > 0):
            raise ValueError(f"Camera: focal lengths must be > 0, got fx={K[0, 0]}, fy={K[1, 1]}")
        if int(self.H) < 1 or int(self.W) < 1:
            raise ValueError(f"Camera: image size must be positive, got H={self.H}, W={self.W}")
        if not (np.all(np.isfinite(K)) and np.all(np.isfinite(self.R)) and np.all(np.isfinite(self.t))):
            raise ValueError("Camera: non-finite intrinsics or pose")

    @property
    def center(self) -> np.ndarray:
        return -self.R.T @ self.t

    @property
    def viewmat(self) -> np.ndarray:
        M = np.eye(4)
        M[:3, :3], M[:3, 3] = self.R, self.t
        return M

    def pixel_rays(self, ss: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Unit world-space ray directions through ``ss x ss`` sub-pixel samples: (H, W, ss*ss, 3), and the
        camera-space ``K^-1 p~`` of the pixel centres (H, W, 3), whose z is 1."""
        offs = (np.arange(ss) + 0.5) / ss
        u = np.arange(self.W)[None, :, None, None] + offs[None, None, :, None]
        v = np.arange(self.H)[:, None, None, None] + offs[None, None, None, :]
        u, v = np.broadcast_arrays(u, v)
        pix = np.stack([u, v, np.ones_like(u)], -1).reshape(self.H, self.W, ss * ss, 3)
        cam = pix @ np.linalg.inv(self.K).T
        d = cam @ self.R   # R^T cam per row
        d /= np.linalg.norm(d, axis=-1, keepdims=True)
        uc, vc = np.meshgrid(np.arange(self.W) + 0.5, np.arange(self.H) + 0.5)
        kinv = np.stack([uc, vc, np.ones_like(uc)], -1) @ np.linalg.inv(self.K).T
        return d, kinv


def look_at(eye, target, H: int, W: int, fov_deg: float) -> Camera:
    eye, target = np.asarray(eye, float), np.asarray(target, float)
    z = target - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, [0.0, 0.0, 1.0])
    if np.linalg.norm(x) < 1e-9:   # looking straight up or down: any horizontal x
        x = np.array([1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    R = np.stack([x, y, z])
    f = 0.5 * W / np.tan(np.deg2rad(fov_deg) / 2)
    K = np.array([[f, 0, W / 2], [0, f, H / 2], [0, 0, 1.0]])
    return Camera(K, R, -R @ eye, H, W)


def ring_cameras(n: int, H: int, W: int, radius: float = 2.4, elevations=(30.0, 55.0), fov_deg: float = 42.0,
                 phase: float = 0.0) -> list[Camera]:
    cams = []
    for k in range(n):
        az = 2 * np.pi * (k + phase) / n
        el = np.deg2rad(elevations[k % len(elevations)])
        eye = radius * np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
        cams.append(look_at(eye, [0.0, 0.0, 0.1], H, W, fov_deg))
    return cams


# ----------------------------------------------------------------------------------------- ray casting

def _ray_box(o, d, lo, hi):
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d
        t0, t1 = (lo - o) * inv, (hi - o) * inv
    tmin, tmax = np.minimum(t0, t1), np.maximum(t0, t1)
    tn, tf = np.nanmax(tmin, -1), np.nanmin(tmax, -1)
    hit = (tf >= tn) & (tf > 1e-6)
    t = np.where(tn > 1e-6, tn, np.inf)
    t = np.where(hit, t, np.inf)
    axis = np.nanargmax(tmin, -1)
    n = np.zeros_like(o)
    rows = np.arange(len(o))
    n[rows, axis] = -np.sign(d[rows, axis])
    return t, n


def ray_cast(o: np.ndarray, d: np.ndarray, ridge: bool = True, lay: Layout | None = None):
    """Nearest hit of rays ``o + t d`` (M, 3): distance t (inf on a miss), unit normal, region label."""
    lay = Layout() if lay is None else lay
    M = len(o)
    t_best = np.full(M, np.inf)
    nrm = np.zeros((M, 3))
    label = np.zeros(M, int)
    with np.errstate(divide="ignore", invalid="ignore"):   # ground z = 0
        tg = -o[:, 2] / d[:, 2]
    pg = o + tg[:, None] * d
    ok = (d[:, 2] < 0) & (tg > 1e-6) & (np.abs(pg[:, 0]) <= GROUND) & (np.abs(pg[:, 1]) <= GROUND)
    upd = ok & (tg < t_best)
    t_best[upd], nrm[upd], label[upd] = tg[upd], [0, 0, 1], np.where(pg[upd, 0] < 0, 1, 2)
    oc = o - lay.sphere_c   # sphere
    b = np.einsum("ij,ij->i", oc, d)
    disc = b * b - (np.einsum("ij,ij->i", oc, oc) - lay.sphere_r ** 2)
    ts = -b - np.sqrt(np.maximum(disc, 0))
    upd = (disc > 0) & (ts > 1e-6) & (ts < t_best)
    t_best[upd], label[upd] = ts[upd], 3
    nrm[upd] = (o[upd] + ts[upd, None] * d[upd] - lay.sphere_c) / lay.sphere_r
    boxes = [(lay.box_lo, lay.box_hi, 4)] + ([(lay.ridge_lo, lay.ridge_hi, 6)] if ridge else [])
    for lo, hi, lab in boxes:
        tb, nb = _ray_box(o, d, lo, hi)
        upd = tb < t_best
        t_best[upd], nrm[upd], label[upd] = tb[upd], nb[upd], lab
    return t_best, nrm, label


def _textures(texels: int) -> np.ndarray:
    """Albedo of the textured half: skimage's brick, grass and gravel photographs as the R, G, B channels."""
    from skimage import data
    from skimage.transform import resize

    chans = [resize(getattr(data, name)().astype(float), (2 * texels, texels), anti_aliasing=True)
             for name in ("brick", "grass", "gravel")]
    tex = np.stack([(c - c.min()) / (c.max() - c.min() + 1e-12) for c in chans], -1)
    return 0.15 + 0.8 * tex


def specular(normals, view_dirs, lit) -> np.ndarray:
    """The Blinn-Phong highlight KS (n . h)^SHININESS of a lit point seen along ``view_dirs`` (camera to point)."""
    h = LIGHT[None] - view_dirs
    h /= np.linalg.norm(h, axis=-1, keepdims=True)
    return KS * np.clip(np.einsum("ij,ij->i", normals, h), 0, None) ** SHININESS * lit


def shade(points, normals, label, view_dirs, tex, lay: Layout | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lambert + ambient + shadow rays, Blinn-Phong (half-vector) highlight on the sphere; returns RGB and
    the shadow flag."""
    M = len(points)
    alb = np.zeros((M, 3))
    gnd = (label == 1) | (label == 6)
    ty, tx = tex.shape[:2]
    iy = np.clip(((points[gnd, 1] + 1) / 2 * ty).astype(int), 0, ty - 1)
    ix = np.clip(((points[gnd, 0] + 1) * tx).astype(int), 0, tx - 1)
    alb[gnd] = tex[iy, ix]
    alb[label == 2] = 0.6
    alb[label == 3] = [0.75, 0.3, 0.25]
    alb[label == 4] = [0.35, 0.55, 0.75]
    hit = label > 0
    so = points + 1e-4 * normals
    ts, _, _ = ray_cast(so[hit], np.broadcast_to(LIGHT, (int(hit.sum()), 3)).copy(), lay=lay)
    lit = np.zeros(M, bool)
    lit[hit] = ~np.isfinite(ts)
    ndl = np.clip(normals @ LIGHT, 0, None) * lit
    rgb = alb * (AMBIENT + (1 - AMBIENT) * ndl[:, None])
    spec = specular(normals, view_dirs, lit)
    rgb[label == 3] += spec[label == 3, None]
    rgb[~hit] = 0.0
    shadow = hit & ~lit & ((label == 1) | (label == 2))
    return np.clip(rgb, 0, 1), shadow


@dataclass
class View:
    """One rendered view: RGB (H, W, 3), depth z (H, W; 0 where nothing is hit), camera-space normal,
    region label, the stand-in prior depth, its normals, and the camera."""

    cam: Camera
    rgb: np.ndarray
    depth: np.ndarray
    normal: np.ndarray
    label: np.ndarray
    prior: np.ndarray = field(default=None)


def render_view(cam: Camera, tex: np.ndarray, ss: int = 2, lay: Layout | None = None) -> View:
    dirs, kinv = cam.pixel_rays(ss)
    H, W = cam.H, cam.W
    o = np.broadcast_to(cam.center, (H * W * ss * ss, 3)).copy()
    d = dirs.reshape(-1, 3)
    t, n, lab = ray_cast(o, d, lay=lay)
    p = o + np.where(np.isfinite(t), t, 0)[:, None] * d
    rgb, shadow = shade(p, n, lab, d, tex, lay)
    rgb = rgb.reshape(H, W, ss * ss, 3).mean(2)
    dc, kc = cam.pixel_rays(1)   # the pixel centre carries the geometry and the label
    oc = np.broadcast_to(cam.center, (H * W, 3)).copy()
    t, n, lab = ray_cast(oc, dc.reshape(-1, 3), lay=lay)
    pc = oc + np.where(np.isfinite(t), t, 0)[:, None] * dc.reshape(-1, 3)
    _, shadow = shade(pc, n, lab, dc.reshape(-1, 3), tex, lay)
    lab = np.where(shadow, 5, lab)
    z = ((pc - cam.center) @ cam.R.T)[:, 2] * np.isfinite(t)
    ncam = n @ cam.R.T
    return View(cam, rgb.astype(np.float32), z.reshape(H, W), ncam.reshape(H, W, 3), lab.reshape(H, W))


def occlusion_edges(z: np.ndarray, rel_jump: float = 0.03) -> np.ndarray:
    """Pixels next to a depth discontinuity: a relative jump > ``rel_jump`` to a 4-neighbour, or a surface pixel
    next to background (0)."""
    z = np.asarray(z, float)
    out = np.zeros(z.shape, bool)
    for ax in (0, 1):
        a, b = np.moveaxis(z, ax, 0)[:-1], np.moveaxis(z, ax, 0)[1:]
        jump = np.abs(a - b) > rel_jump * np.maximum(np.minimum(a, b), 1e-6)
        jump |= (a > 0) != (b > 0)
        o = np.moveaxis(out, ax, 0)
        o[:-1] |= jump
        o[1:] |= jump
    return out & (z > 0) | ndimage.binary_dilation(out) & (z > 0)


def smooth_noise(shape, rng: np.random.Generator, corr_px: float) -> np.ndarray:
    """A unit-variance Gaussian random field, white noise low-passed by a Gaussian of ``corr_px`` pixels."""
    f = ndimage.gaussian_filter(rng.standard_normal(shape), corr_px, mode="wrap")
    return f / max(float(f.std()), 1e-12)


def backproject(z: np.ndarray, cam: Camera, mask: np.ndarray | None = None) -> np.ndarray:
    """World points (M, 3) of the pixels of the depth map ``z`` (H, W; z along the optical axis) where ``z > 0``
    (and ``mask``): ``X = R^T (z K^-1 p~ - t)``. The one back-projection of the chapter (prior start, SfM start,
    evaluation)."""
    z = np.asarray(z, float)
    if z.shape != (cam.H, cam.W):
        raise ValueError(f"backproject: depth must be ({cam.H}, {cam.W}), got {z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError("backproject: depth has non-finite entries")
    m = z > 0 if mask is None else (np.asarray(mask, bool) & (z > 0))
    _, kinv = cam.pixel_rays(1)
    return ((z[..., None] * kinv)[m] - cam.t) @ cam.R


def prior_depth(cam: Camera, gt_depth: np.ndarray, rng: np.random.Generator, blur_px: float,
                bias: float = 0.005, noise: float = 0.015, corr_px: float | None = None, scale_sd: float = 0.06,
                shift_sd: float = 0.01, lay: Layout | None = None) -> np.ndarray:
    """Stand-in for a Depth-Anything-3 metric depth: the scene WITHOUT the ridge (fine detail lost), blurred in a
    band of ``ceil(blur_px)`` px around occlusion edges (edges smeared, as learned priors do), times a per-view
    scale error ``1 + N(0, scale_sd)`` plus a per-view shift ``N(0, shift_sd) x`` the view's mean depth (a
    monocular metric estimate is right up to such a per-image error), times a low-frequency multiplicative tilt
    ``bias`` and a spatially smooth noise field of relative size ``noise`` (correlation ``corr_px``, default
    ``4 blur_px``): learned priors are smooth, so their normals stay good on smooth surfaces while their depths are
    off by a few per cent. 0 where no surface.

    Revisions (issue 52). Review 1: the first prior blurred everywhere with i.i.d. per-pixel noise; its normals were
    9-24 deg wrong where ALR acts. Review 2: the second prior (0.3 % smooth noise, no per-view error) was a
    near-oracle: back-projected through the chapter's evaluation it beat every trained model, also on the
    textured ground where photometry is well constrained, against the paper's premise. The per-view scale/shift
    error and the larger correlated noise make it worse than photometric geometry there (check K8) and keep it
    better where photometry is ambiguous (K9)."""
    for name, v in (("bias", bias), ("noise", noise), ("scale_sd", scale_sd), ("shift_sd", shift_sd)):
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"prior_depth: {name} must be >= 0, got {v}")
    if not blur_px > 0:
        raise ValueError(f"prior_depth: blur_px must be > 0, got {blur_px}")
    corr_px = 4.0 * blur_px if corr_px is None else corr_px
    H, W = cam.H, cam.W
    dirs, _ = cam.pixel_rays(1)
    o = np.broadcast_to(cam.center, (H * W, 3)).copy()
    t, _, lab = ray_cast(o, dirs.reshape(-1, 3), ridge=False, lay=lay)
    pc = o + np.where(np.isfinite(t), t, 0)[:, None] * dirs.reshape(-1, 3)
    z = (((pc - cam.center) @ cam.R.T)[:, 2] * np.isfinite(t)).reshape(H, W)
    valid = (z > 0).astype(float)
    num = ndimage.gaussian_filter(z, blur_px, mode="nearest")
    den = ndimage.gaussian_filter(valid, blur_px, mode="nearest")
    zb = np.where(den > 1e-3, num / np.maximum(den, 1e-3), 0.0)
    band = ndimage.binary_dilation(occlusion_edges(z), iterations=max(int(np.ceil(blur_px)) - 1, 0)) \
        if blur_px > 1 else occlusion_edges(z)
    zb = np.where(band, zb, z)
    vv, uu = np.mgrid[0:H, 0:W] / max(H, W)
    phase = rng.uniform(0, 2 * np.pi, 2)
    zb = zb * (1 + bias * np.sin(2 * np.pi * uu + phase[0]) * np.cos(np.pi * vv + phase[1]))
    zb = zb * (1 + noise * smooth_noise((H, W), rng, corr_px))
    mean_z = float(z[z > 0].mean()) if (z > 0).any() else 0.0
    zb = zb * (1 + scale_sd * rng.standard_normal()) + shift_sd * mean_z * rng.standard_normal()
    return np.where((gt_depth > 0) & (valid > 0), np.maximum(zb, 1e-3), 0.0).astype(np.float32)


def sfm_points(scene: "Scene", n: int, rng: np.random.Generator, noise: float = 0.5, sigma: float = 1.0):
    """An SfM-like sparse start (H, M): pixels drawn with probability proportional to the Harris corner response
    of the image (scikit-image ``corner_harris``, the kind of feature SfM matches), never next to an occlusion edge
    (a silhouette is not a fixed surface point), back-projected with the GT depth plus Gaussian noise of ``noise``
    pixel footprints along each axis; colours from the images. Textureless surfaces give no corners, so the start is
    sparse there, as real SfM is (measured in the chapter); shadow corners and the sphere's highlight still give
    some. It keeps SfM's independence from any depth prior; it has no outliers and no triangulation error beyond
    ``noise`` (its bias, in H's favour, is stated in the chapter)."""
    from skimage.feature import corner_harris

    if n < 1 or noise < 0:
        raise ValueError(f"sfm_points: need n >= 1 and noise >= 0, got {n}, {noise}")
    def gather(margin: bool):
        pts, cols, wts = [], [], []
        for v in scene.train:
            resp = np.clip(corner_harris(v.rgb.mean(-1).astype(float), sigma=sigma), 0, None)
            edge = occlusion_edges(v.depth)
            m = (v.depth > 0) & ~(ndimage.binary_dilation(edge) if margin else edge)
            pts.append(backproject(v.depth, v.cam, m))
            cols.append(v.rgb[m])
            wts.append(resp[m])
        return np.concatenate(pts), np.concatenate(cols), np.concatenate(wts)

    pts, cols, wts = gather(True)
    if not (wts > 0).any():   # tiny images (tests): the margin around occlusion edges leaves no corner
        pts, cols, wts = gather(False)
    if not (wts > 0).any():
        raise ValueError("sfm_points: the images have no corner at all")
    p = wts / wts.sum()
    sel = rng.choice(len(pts), size=n, replace=int((p > 0).sum()) < n, p=p)
    return pts[sel] + noise * scene.footprint * rng.standard_normal((n, 3)), cols[sel]


# ----------------------------------------------------------------------------------------- GT points

def _meshes(lay: Layout):
    import trimesh

    ground = trimesh.Trimesh(vertices=[[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], faces=[[0, 1, 2], [0, 2, 3]])
    sphere = trimesh.creation.icosphere(subdivisions=4, radius=lay.sphere_r)
    sphere.apply_translation(lay.sphere_c)
    box = trimesh.creation.box(extents=lay.box_hi - lay.box_lo)
    box.apply_translation((lay.box_hi + lay.box_lo) / 2)
    ridge = trimesh.creation.box(extents=lay.ridge_hi - lay.ridge_lo)
    ridge.apply_translation((lay.ridge_hi + lay.ridge_lo) / 2)
    return {"ground": ground, "sphere": sphere, "box": box, "ridge": ridge}


def gt_points(cams: list[Camera], spacing: float, seed: int, tex: np.ndarray, lay: Layout | None = None):
    """Area-uniform GT surface samples (trimesh ``sample_surface_even``), kept only where a training camera
    sees them (the DTU ObsMask analogue); returns points (M, 3), their region labels (M,) and the largest
    specular term any training view sees at each (0 off the sphere): the view-dependent radiance."""
    import trimesh

    lay = Layout() if lay is None else lay
    pts, labs = [], []
    for name, mesh in _meshes(lay).items():
        count = int(np.ceil(mesh.area / spacing ** 2))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            logging.getLogger("trimesh").setLevel(logging.ERROR)   # it reports how many samples it kept
            p, _ = trimesh.sample.sample_surface_even(mesh, count, radius=0.7 * spacing, seed=seed)
        p = np.asarray(p, float)
        if name == "sphere":
            p = lay.sphere_c + lay.sphere_r * (p - lay.sphere_c) / np.linalg.norm(p - lay.sphere_c, axis=1, keepdims=True)
        pts.append(p)
    pts = np.concatenate(pts)
    seen = np.zeros(len(pts), bool)
    label = np.zeros(len(pts), int)
    on_sphere = np.abs(np.linalg.norm(pts - lay.sphere_c, axis=1) - lay.sphere_r) < 1e-6
    sph_n = (pts - lay.sphere_c) / lay.sphere_r
    ts, _, _ = ray_cast(pts + 1e-4 * sph_n, np.broadcast_to(LIGHT, pts.shape).copy(), lay=lay)
    sph_lit = on_sphere & ~np.isfinite(ts)
    spec_max = np.zeros(len(pts))
    for cam in cams:
        xc = pts @ cam.R.T + cam.t
        uv = xc @ cam.K.T
        u, v = uv[:, 0] / xc[:, 2], uv[:, 1] / xc[:, 2]
        inside = (xc[:, 2] > 0.01) & (u >= 0) & (u < cam.W) & (v >= 0) & (v < cam.H)
        d = pts - cam.center
        dist = np.linalg.norm(d, axis=1)
        t, n, lab = ray_cast(np.broadcast_to(cam.center, d.shape).copy(), d / dist[:, None], lay=lay)
        vis = inside & (np.abs(t - dist) < 1e-4 * dist + 1e-6)
        seen |= vis
        spec_max = np.maximum(spec_max, specular(sph_n, d / dist[:, None], sph_lit & vis))
        label = np.where(vis, lab, label)
    # shadow: ground points that the light does not reach
    gnd = (label == 1) | (label == 2)
    ts, _, _ = ray_cast(pts[gnd] + 1e-4 * np.array([0, 0, 1.0]), np.broadcast_to(LIGHT, (int(gnd.sum()), 3)).copy(),
                        lay=lay)
    sh = np.zeros(len(pts), bool)
    sh[gnd] = np.isfinite(ts)
    label = np.where(sh, 5, label)
    return pts[seen], label[seen], spec_max[seen]


@dataclass
class Scene:
    train: list[View]
    test: list[View]
    points: np.ndarray
    point_labels: np.ndarray
    extent: float
    footprint: float   # world size of one pixel at the scene centre (sets the F-score threshold)
    point_specular: np.ndarray = field(default=None)   # max specular term over training views per GT point
    layout: Layout = field(default_factory=Layout)
    variant: int = 0


def make_scene(size: int, n_train: int, n_test: int, seed: int = 0, texels: int = 6, ss: int = 2,
               gt_spacing: float = 0.02, prior_blur_px: float = 1.0, variant: int = 0) -> Scene:
    """Render the training and test views, GT points and the stand-in prior (module docstring) of scene
    ``variant`` (`layout`)."""
    if size < 8 or n_train < 2 or n_test < 1:
        raise ValueError(f"make_scene: need size >= 8, n_train >= 2, n_test >= 1; got {size}, {n_train}, {n_test}")
    rng = np.random.default_rng(seed)
    lay = layout(variant)
    tex = _textures(texels)
    train_cams = ring_cameras(n_train, size, size)
    test_cams = ring_cameras(n_test, size, size, elevations=(42.0,), phase=0.37)
    train = [render_view(c, tex, ss, lay) for c in train_cams]
    test = [render_view(c, tex, ss, lay) for c in test_cams]
    for v in train:
        v.prior = prior_depth(v.cam, v.depth, rng, blur_px=prior_blur_px, lay=lay)
    pts, labs, spec = gt_points(train_cams, gt_spacing, seed, tex, lay)
    centres = np.stack([c.center for c in train_cams])
    extent = float(1.1 * np.max(np.linalg.norm(centres - centres.mean(0), axis=1)))
    cam = train_cams[0]
    footprint = float(np.linalg.norm(cam.center) / cam.K[0, 0])
    return Scene(train, test, pts, labs, extent, footprint, spec, lay, int(variant))


def mono_disparity(prior: np.ndarray, rng: np.random.Generator, shift: float = 0.05) -> np.ndarray:
    """Stand-in for a Depth-Anything-V2 relative disparity (AmbiSuR-MONO): s / Z_prior + b with an unknown
    per-view scale s ~ U(0.5, 2) and shift b ~ U(-shift, shift) x mean(s / Z_prior); 0 where there is no prior.
    It keeps the metric prior's shape errors (ridge lost, edges blurred) and loses its scale and offset."""
    if shift < 0:
        raise ValueError(f"mono_disparity: shift must be >= 0, got {shift}")
    m = prior > 0
    if not m.any():
        raise ValueError("mono_disparity: the prior has no pixel > 0")
    s = rng.uniform(0.5, 2.0)
    disp = np.where(m, s / np.where(m, prior, 1.0), 0.0)
    b = rng.uniform(-shift, shift) * float(disp[m].mean())
    return np.where(m, disp + b, 0.0).astype(np.float32)
