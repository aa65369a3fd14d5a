"""Procedural pathology "slides" with micro-lesions and a paired IHC render (brief 5.1) [ours].

A stand-in for whole-slide images: an H&E-like field of five cell types rendered by Beer-Lambert
optics (`stains`), with clusters of ``m`` abnormal cells (micro-lesions) in positive slides. The
shortcuts a real cohort would not have are closed by construction (brief, pitfall 2):

* every slide, positive or negative, carries two clusters of ``m`` enlarged, darker cells; in a
  negative slide both are *reactive mimics* (T4), in a positive one one of them is a lesion (T3).
  T3 and T4 share the nuclear radius and, exactly, the mean hematoxylin density of every nucleus:
  they differ only in shape irregularity and chromatin texture, scaled by the subtlety knob kappa;
* cell count, stain vectors (+-5 % per slide), density scale and lymphoid aggregates are drawn
  independently of the label;
* at ``kappa = 0`` a lesion cell is rendered exactly like a normal epithelial cell (and a mimic too).

The protein channel (a paired IHC render, DAB on the same hematoxylin counterstain) is measured per
cell by colour deconvolution and is a *training target only*; nothing at test time reads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from .stains import STAINS, deconvolve, jitter_stains, render_od

CELL_TYPES = ("normal", "lymphocyte", "fibroblast", "lesion", "mimic")
NORMAL, LYMPHOCYTE, FIBROBLAST, LESION, MIMIC = range(5)
MARKERS = ("A (tumour, Ki-67-like)", "B (CD3-like)")
# P(marker positive | cell type), brief 5.1 table
P_POSITIVE = np.array([[0.05, 0.01], [0.05, 0.90], [0.03, 0.01], [0.85, 0.01], [0.15, 0.01]])
REGION_CLASSES = ("normal", "lymphoid", "lesion", "reactive")
R_NORMAL, R_LYMPHOID, R_LESION, R_REACTIVE = range(4)


@dataclass(eq=False)
class Slide:
    """One rendered slide. ``he`` is the only test-time input; ``protein`` and masks are training
    targets / evaluation labels."""

    he: np.ndarray             # (S, S, 3) uint8, the H&E-like render
    centroids: np.ndarray      # (N, 2) int, (row, col) of each nucleus (oracle detector)
    types: np.ndarray          # (N,) int in CELL_TYPES
    protein: np.ndarray        # (N, 2) float, per-cell DAB density measured on the paired IHC renders
    protein_true: np.ndarray   # (N, 2) float, the rendered marker intensity (ground truth)
    label: int                 # 1: a micro-lesion is present
    region: np.ndarray         # (N,) int, index of the non-overlapping tile that holds each cell
    region_labels: np.ndarray  # (R,) int in REGION_CLASSES
    m: int
    kappa: float
    ihc: np.ndarray | None = field(default=None, repr=False)  # (S, S, 3) uint8 marker-A IHC (kept on request)

    @property
    def lesion(self) -> np.ndarray:
        return self.types == LESION

    @property
    def n_cells(self) -> int:
        return len(self.types)


def _check_params(size: int, spacing: float, m: int, kappa: float, tile: int):
    if not 0.0 <= kappa <= 1.0 or not np.isfinite(kappa):
        raise ValueError(f"kappa (lesion subtlety) must be in [0, 1], got {kappa}")
    if int(m) != m or m < 1:
        raise ValueError(f"lesion size m must be an integer >= 1, got {m}")
    if size < 32 or tile < 8 or size % tile:
        raise ValueError(f"canvas size {size} must be >= 32 and a multiple of the tile size {tile}")
    if not 6 <= spacing <= size / 4:
        raise ValueError(f"cell spacing must be in [6, size/4], got {spacing}")


def _layout(rng, size, spacing):
    """Jittered-grid centroids, at least 3 px from the border."""
    g = np.arange(spacing / 2, size - spacing / 2 + 1e-9, spacing)
    yy, xx = np.meshgrid(g, g, indexing="ij")
    pts = np.stack([yy.ravel(), xx.ravel()], 1) + rng.uniform(-0.3, 0.3, (yy.size, 2)) * spacing
    return np.clip(np.rint(pts), 4, size - 5).astype(int)


def _smooth_field(rng, size, sigma):
    f = ndimage.gaussian_filter(rng.standard_normal((size, size)), sigma, mode="wrap")
    return (f - f.mean()) / (f.std() + 1e-12)


def _nuclei(rng, types, kappa, box, fibre_angle):
    """Per-cell hematoxylin density in a (box, box) window: (N, box, box). Radii in px (brief table)."""
    n = len(types)
    h = box // 2
    yy, xx = np.mgrid[-h:h + 1, -h:h + 1].astype(float)
    rho = np.hypot(yy, xx)[None]
    phi = np.arctan2(yy, xx)[None]
    a = np.full(n, 3.5)
    b = np.full(n, 3.5)
    level = np.full(n, 0.55)
    ecc = rng.uniform(0.85, 1.0, n)
    a[types == LYMPHOCYTE], b[types == LYMPHOCYTE], level[types == LYMPHOCYTE] = 2.5, 2.5, 0.85
    a[types == FIBROBLAST], b[types == FIBROBLAST], level[types == FIBROBLAST] = 5.0, 1.8, 0.50
    big = (types == LESION) | (types == MIMIC)
    a[big] = b[big] = 3.5 + 1.0 * kappa
    level[big] = 0.55 + 0.25 * kappa
    a = a * rng.uniform(0.9, 1.1, n)
    b = b * rng.uniform(0.9, 1.1, n) * np.where(types == FIBROBLAST, 1.0, ecc)
    level = level * rng.uniform(0.93, 1.07, n)
    theta = np.where(types == FIBROBLAST, fibre_angle + rng.normal(0, 0.25, n), rng.uniform(0, np.pi, n))
    psi = phi - theta[:, None, None]
    r_ell = a[:, None, None] * b[:, None, None] / np.sqrt((b[:, None, None] * np.cos(psi)) ** 2 + (a[:, None, None] * np.sin(psi)) ** 2)
    # irregular contour r(phi) = r0 (1 + sum_q a_q cos(q phi + phase_q)), lesion cells only, amplitude ~ kappa
    amp = np.where(types == LESION, 0.40 * kappa, 0.0)
    wobble = sum(rng.uniform(0.5, 1.0, (n, 1, 1)) * np.cos(q * phi + rng.uniform(0, 2 * np.pi, (n, 1, 1))) for q in (2, 3, 4))
    r_b = r_ell * (1 + amp[:, None, None] * wobble)
    mask = 1.0 / (1.0 + np.exp(-(r_b - rho) / 0.5))
    # chromatin texture, zero-mean noise of unit std. Lesion (T3) and mimic (T4) nuclei share its
    # amplitude and the nucleolus, so their pixel-value histograms match (a colour histogram cannot
    # tell them apart, pitfall 2); T3's chromatin is coarse-clumped (spatially correlated), T4's fine.
    # At kappa = 0 both reduce to a normal epithelial nucleus.
    white = rng.standard_normal((n, box, box))
    fine = ndimage.uniform_filter(white, size=(1, 2, 2))
    coarse = ndimage.gaussian_filter(white, sigma=(0, 1.2, 1.2))
    fine /= fine.std(axis=(1, 2), keepdims=True) + 1e-12
    coarse /= coarse.std(axis=(1, 2), keepdims=True) + 1e-12
    w = np.where(types == LESION, min(1.0, 2 * kappa), 0.0)[:, None, None]
    noise = (1 - w) * fine + w * coarse
    noise /= noise.std(axis=(1, 2), keepdims=True) + 1e-12
    tex_amp = np.where(big, 0.10 + 0.35 * kappa, 0.10)
    tex = 1 + tex_amp[:, None, None] * noise
    nuc_pos = rng.uniform(-1.2, 1.2, (n, 2))
    nucleolus = np.exp(-((yy[None] - nuc_pos[:, 0, None, None]) ** 2 + (xx[None] - nuc_pos[:, 1, None, None]) ** 2) / 1.0)
    tex = tex + np.where(big, 0.6 * kappa, 0.0)[:, None, None] * nucleolus
    od = np.clip(mask * tex, 0, None)
    # exact mean matching: every nucleus carries mean density `level` over its soft mask
    od *= (level * mask.sum(axis=(1, 2)) / (od.sum(axis=(1, 2)) + 1e-12))[:, None, None]
    return od, mask


def _scatter(canvas, centroids, patches):
    """Add (N, box, box) windows into an (S, S) canvas at the centroids (overlaps add)."""
    n, box, _ = patches.shape
    h = box // 2
    dy, dx = np.mgrid[-h:h + 1, -h:h + 1]
    rows = centroids[:, 0, None, None] + dy[None]
    cols = centroids[:, 1, None, None] + dx[None]
    ok = (rows >= 0) & (rows < canvas.shape[0]) & (cols >= 0) & (cols < canvas.shape[1])
    np.add.at(canvas, (rows[ok], cols[ok]), patches[ok])


def make_slide(rng: np.random.Generator, label: int, size: int = 192, spacing: float = 12.0, m: int = 8,
               kappa: float = 0.5, tile: int = 64, stain_jitter: float = 0.05, keep_ihc: bool = False, protein: bool = True) -> Slide:
    """Render one slide (brief 5.1). ``label`` 1 puts one lesion cluster of ``m`` T3 cells in the
    epithelium; every slide has (another) cluster of ``m`` T4 reactive mimics."""
    _check_params(size, spacing, m, kappa, tile)
    if label not in (0, 1):
        raise ValueError(f"slide label must be 0 or 1, got {label}")
    cent = _layout(rng, size, spacing)
    n = len(cent)
    epi_field = _smooth_field(rng, size, size / 6)
    epi = epi_field[cent[:, 0], cent[:, 1]] > 0
    types = np.where(epi, NORMAL, FIBROBLAST)
    types[(~epi) & (rng.random(n) < 0.2)] = LYMPHOCYTE
    if rng.random() < 0.5:  # a lymphoid aggregate, independent of the label
        c = rng.uniform(0.2, 0.8, 2) * size
        types[np.hypot(*(cent - c).T) < size / 9] = LYMPHOCYTE
    epi_idx = np.flatnonzero(types == NORMAL)
    if len(epi_idx) < 2 * m + 2:
        raise ValueError(f"lesion of m = {m} cells is larger than its epithelium ({len(epi_idx)} epithelial cells): "
                         "lower m or enlarge the canvas")
    kinds = [MIMIC, LESION] if label else [MIMIC, MIMIC]
    free = epi_idx.copy()
    for kind in kinds:  # m nearest epithelial cells around a random epithelial seed
        seed = free[rng.integers(len(free))]
        d = np.hypot(*(cent[free] - cent[seed]).T)
        chosen = free[np.argsort(d, kind="stable")[:m]]
        types[chosen] = kind
        free = np.setdiff1d(free, chosen)
    box = int(2 * np.ceil(6.5) + 1)
    h_od, nuc_mask = _nuclei(rng, types, kappa, box, fibre_angle=rng.uniform(0, np.pi))
    H = np.zeros((size, size))
    _scatter(H, cent, h_od)
    yy, xx = np.mgrid[0:size, 0:size]
    fa = rng.uniform(0, np.pi)
    epi_px = epi_field > 0
    E = 0.22 + 0.05 * _smooth_field(rng, size, 3) + 0.08 * epi_px + 0.04 * (~epi_px) * np.sin(0.6 * (xx * np.cos(fa) + yy * np.sin(fa)))
    E = np.clip(E, 0.02, None)
    scale = rng.uniform(0.85, 1.15)
    stains = jitter_stains(rng, stain_jitter)
    he = render_od(np.stack([scale * (H + 0.03), scale * E, np.zeros_like(H)], -1), stains)
    he = np.clip(he + rng.normal(0, 0.01, he.shape), 0, 1)
    # proteins: positivity x LogNormal intensity, rendered as nuclear DAB in two paired IHC images
    pos = rng.random((n, 2)) < P_POSITIVE[types]
    p_true = pos * np.clip(0.55 * rng.lognormal(0, 0.3, (n, 2)), 0, 1.2) + 0.02 * rng.random((n, 2))
    measured = np.zeros((n, 2))
    ihc_keep = None
    k = 3
    dy, dx = np.mgrid[-k:k + 1, -k:k + 1]
    disc = (dy ** 2 + dx ** 2) <= 2.5 ** 2
    for j in range(2 if protein else 0):  # unlabelled slides (SSL pools) skip the IHC renders
        D = np.zeros((size, size))
        _scatter(D, cent, nuc_mask * p_true[:, j, None, None])
        ihc = render_od(np.stack([scale * (H + 0.03), 0.02 * np.ones_like(H), scale * D], -1), stains)
        ihc = np.clip(ihc + rng.normal(0, 0.01, ihc.shape), 1e-3, 1)
        dab = deconvolve(ihc)[..., 2]
        win = dab[cent[:, 0, None, None] + dy[None], cent[:, 1, None, None] + dx[None]]
        measured[:, j] = win[:, disc].mean(1)
        if j == 0 and keep_ihc:
            ihc_keep = (ihc * 255).round().astype(np.uint8)
    g = size // tile
    region = (cent[:, 0] // tile) * g + cent[:, 1] // tile
    region_labels = region_classes(types, region, g * g)
    return Slide(he=(he * 255).round().astype(np.uint8), centroids=cent, types=types, protein=measured,
                 protein_true=p_true, label=int(label), region=region, region_labels=region_labels, m=int(m),
                 kappa=float(kappa), ihc=ihc_keep)


def region_classes(types: np.ndarray, region: np.ndarray, n_regions: int) -> np.ndarray:
    """Tile labels (REGION_CLASSES): lesion if it holds >= 2 lesion cells, reactive if >= 2 mimics,
    lymphoid if >= 40 % lymphocytes, else normal (priority in that order)."""
    counts = np.zeros((n_regions, len(CELL_TYPES)))
    np.add.at(counts, (region, types), 1)
    total = counts.sum(1)
    lab = np.full(n_regions, R_NORMAL)
    lab[counts[:, LYMPHOCYTE] >= 0.4 * np.maximum(total, 1)] = R_LYMPHOID
    lab[counts[:, MIMIC] >= 2] = R_REACTIVE
    lab[counts[:, LESION] >= 2] = R_LESION
    return lab


def make_cohort(seed: int, n_slides: int, *, size: int = 192, spacing: float = 12.0, m=(4, 12), kappa: float = 0.5,
                tile: int = 64, keep_ihc: int = 0, protein: bool = True) -> list[Slide]:
    """A balanced cohort: labels alternate 0/1 (then shuffled), m drawn uniformly from the closed
    range ``m`` (a pair) or fixed (an int). ``keep_ihc``: keep the IHC image of the first k slides."""
    if n_slides < 2:
        raise ValueError(f"need at least 2 slides, got {n_slides}")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n_slides) % 2)
    out = []
    for i, y in enumerate(labels):
        mi = int(m) if np.isscalar(m) else int(rng.integers(m[0], m[1] + 1))
        for attempt in range(50):  # a layout whose epithelium is too small for the clusters is redrawn
            try:
                out.append(make_slide(rng, int(y), size=size, spacing=spacing, m=mi, kappa=kappa, tile=tile,
                                      keep_ihc=i < keep_ihc, protein=protein))
                break
            except ValueError as err:
                if "larger than its epithelium" not in str(err) or attempt == 49:
                    raise
    return out


def make_twin_cohort(seed: int, n_pairs: int, *, size: int = 192, spacing: float = 12.0, m=(4, 12), kappa: float = 0.0,
                     tile: int = 64) -> list[Slide]:
    """Pairs (positive, negative) rendered from the same random state: the two slides of a pair differ only
    in the kind of one cluster (lesion or mimic). At ``kappa = 0`` both kinds render as normal epithelium,
    so a pair's H&E images are identical (tested) and no model can score them apart: the negative
    control of the chapter's comparisons (C4n). No IHC is rendered (nothing reads it at test time)."""
    if n_pairs < 1:
        raise ValueError(f"need at least one pair, got {n_pairs}")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_pairs):
        mi = int(m) if np.isscalar(m) else int(rng.integers(m[0], m[1] + 1))
        for attempt in range(50):
            state = int(rng.integers(2 ** 62))
            try:
                pair = [make_slide(np.random.default_rng(state), y, size=size, spacing=spacing, m=mi, kappa=kappa, tile=tile,
                                   protein=False) for y in (1, 0)]
                break
            except ValueError as err:
                if "larger than its epithelium" not in str(err) or attempt == 49:
                    raise
        out += pair
    return out


def extract_crops(image: np.ndarray, centroids: np.ndarray, size: int, fill: int = 255) -> np.ndarray:
    """Batched (N, size, size, C) crops centred on integer centroids, padded with ``fill`` (white glass)
    at the border.

    One gather from a strided window view of the padded canvas instead of a per-nucleus loop (see
    benchmarks/bench_cello.py; the first version's element-wise fancy-indexing gather was slower than a
    plain slicing loop, measured at 0.8x on 2000 nuclei)."""
    image = np.asarray(image)
    if image.ndim != 3:
        raise ValueError(f"image must be (H, W, C), got {image.shape}")
    if size < 1 or size > min(image.shape[:2]):
        raise ValueError(f"crop size {size} is larger than the canvas {image.shape[:2]}")
    centroids = np.asarray(centroids)
    if centroids.ndim != 2 or centroids.shape[1] != 2:
        raise ValueError(f"centroids must be (N, 2), got {centroids.shape}")
    lo = size // 2
    pad = np.pad(image, ((lo, size), (lo, size), (0, 0)), constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(pad, (size, size), axis=(0, 1))   # (H', W', C, size, size)
    return np.ascontiguousarray(win[centroids[:, 0], centroids[:, 1]].transpose(0, 2, 3, 1))


def extract_tiles(image: np.ndarray, tile: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """(T, tile, tile, C) tiles on a grid with the given stride, and their top-left corners (T, 2)."""
    S = image.shape[0]
    if tile > S or stride < 1:
        raise ValueError(f"tile {tile} larger than the canvas {S} or stride {stride} < 1")
    starts = np.arange(0, S - tile + 1, stride)
    win = np.lib.stride_tricks.sliding_window_view(image, (tile, tile), axis=(0, 1))[starts][:, starts]
    tiles = win.reshape(-1, image.shape[2], tile, tile).transpose(0, 2, 3, 1)
    corners = np.stack(np.meshgrid(starts, starts, indexing="ij"), -1).reshape(-1, 2)
    return np.ascontiguousarray(tiles), corners
