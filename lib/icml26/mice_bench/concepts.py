"""MICE-mini: the seven-dimension concept space, its concept-directed references and the ground-truth composer.

The paper's unified concept space (Sec. 3.1) has seven visual dimensions: Identity, Object, Style, Scene,
Material, Control (pose / canny / layout maps; "Pose" in the early version) and Appearance. Here each
dimension has ``V`` values (sub-categories) built from real content that ships inside the scikit-image
and Pillow wheels (nothing is downloaded):

* Identity   - faces of ``skimage.data.lfw_subset()`` (the face patch of the character);
* Object     - ``skimage.draw`` shapes and the ``horse`` silhouette (the second entity);
* Material   - ``brick``, ``grass``, ``gravel``, ``moon`` textures and procedural fills (the object's fill);
* Scene      - crops of astronaut, coffee, chelsea, rocket, hubble_deep_field, retina, page, colorwheel;
* Style      - Pillow posterize / emboss / dither, skimage ``sobel``, ``slic`` + ``label2rgb(kind="avg")``,
               ``denoise_tv_chambolle``, pixelate, sepia (a global transform);
* Control    - a layout of the two entities, referenced by its ``canny`` edge map and layout boxes;
* Appearance - an accessory (hat band, glasses, scarf) and a palette tint of the character.

Every dimension also has a neutral default (value ``-1``) used when a case does not reference it. A
concept-directed reference (the paper's "concept-directed captioning", Sec. 3.2) shows only its concept on
a neutral canvas. Two text-only attributes (``tone``: bright/dim, ``frame``: a white frame or not) are
carried by the prompt only, as the paper's prompt-following requirements are.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

DIMENSIONS: tuple[str, ...] = ("Identity", "Object", "Style", "Scene", "Material", "Control", "Appearance")
"""The seven concept dimensions, in the paper's order (final version: "Control", not the early "Pose")."""
N_DIMS = len(DIMENSIONS)
DEFAULT = -1
TEXT_ATTRIBUTES: tuple[str, ...] = ("tone", "frame")
"""Prompt-only requirements (two values each): tone 0 = bright, 1 = dim; frame 0 = none, 1 = white frame."""

SCENES = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "retina", "page", "colorwheel")
MATERIALS = ("brick", "grass", "gravel", "moon", "checker", "stripes", "dots", "wood")
OBJECTS = ("disk", "triangle", "star", "cross", "ring", "diamond", "horse", "crescent")
STYLES = ("posterize", "emboss", "dither", "sobel", "slic", "tv", "pixelate", "scanlines")
ACCESSORIES = ("hat", "glasses", "scarf")
FACE_INDICES = (70, 31, 76, 63, 23, 17, 22, 96)
"""LFW faces picked greedily for the largest minimum pixel distance at 13 px (z-scored), so that identities differ."""
POOL_SIZE = 8
"""Every dimension's pool holds 8 values; V may be 2..8."""

# fractional layouts: (object box centre y, x, half-size), (face box centre y, x, half-size); [0] is the default
_LAYOUTS = (
    ((0.64, 0.50, 0.27), (0.21, 0.50, 0.2)),   # default: object centre, face top centre
    ((0.70, 0.30, 0.27), (0.27, 0.73, 0.2)),
    ((0.70, 0.70, 0.27), (0.27, 0.27, 0.2)),
    ((0.30, 0.30, 0.27), (0.73, 0.73, 0.2)),
    ((0.30, 0.70, 0.27), (0.73, 0.27, 0.2)),
    ((0.50, 0.28, 0.26), (0.50, 0.78, 0.2)),
    ((0.50, 0.72, 0.26), (0.50, 0.22, 0.2)),
    ((0.28, 0.50, 0.26), (0.78, 0.50, 0.2)),
    ((0.66, 0.66, 0.25), (0.24, 0.24, 0.19)),
)
_TINTS = np.array([[1.0, 0.55, 0.55], [0.55, 1.0, 0.55], [0.55, 0.6, 1.0], [1.0, 0.9, 0.4],
                   [0.9, 0.5, 1.0], [0.4, 1.0, 1.0], [1.0, 0.7, 0.3], [0.7, 0.7, 0.7]])
_ACC_COLORS = np.array([[0.9, 0.1, 0.1], [0.1, 0.2, 0.9], [0.95, 0.85, 0.1], [0.1, 0.8, 0.2],
                        [0.8, 0.1, 0.8], [0.0, 0.0, 0.0], [1.0, 0.5, 0.0], [0.1, 0.8, 0.8]])
_MATERIAL_TINTS = np.array([[0.85, 0.45, 0.35], [0.45, 0.8, 0.35], [0.7, 0.7, 0.7], [0.8, 0.8, 0.95],
                            [0.95, 0.95, 0.3], [0.3, 0.6, 0.95], [0.95, 0.4, 0.8], [0.75, 0.55, 0.3]])
NEUTRAL = 0.82


def check_space(size: int, V: int) -> None:
    """Validate a concept-space size: canvas ``size`` x ``size`` pixels and ``V`` values per dimension."""
    if not isinstance(size, (int, np.integer)) or size < 24 or size > 128:
        raise ValueError(f"canvas size must be an integer in [24, 128], got {size!r}")
    if not isinstance(V, (int, np.integer)) or V < 2:
        raise ValueError(f"V (values per dimension) must be an integer >= 2, got {V!r}")
    if V > POOL_SIZE:
        raise ValueError(f"V = {V} exceeds the pools' size ({POOL_SIZE} values per dimension)")


def dimension_index(name: str) -> int:
    """The index of a dimension by name (a clear error for an unknown one)."""
    try:
        return DIMENSIONS.index(name)
    except ValueError:
        raise ValueError(f"unknown dimension {name!r}; the dimensions are {', '.join(DIMENSIONS)}") from None


def check_dimensions(names) -> tuple[int, ...]:
    """Indices of a combination of dimension names; unknown or duplicate names are errors."""
    idx = tuple(dimension_index(n) for n in names)
    if len(set(idx)) != len(idx):
        raise ValueError(f"duplicate dimension in {list(names)}")
    return idx


def value_names(dim: str | int, V: int) -> tuple[str, ...]:
    """Human names of a dimension's first V sub-categories (used in prompts and the interactive panel)."""
    d = DIMENSIONS[dim] if isinstance(dim, (int, np.integer)) else DIMENSIONS[dimension_index(dim)]
    pools = {"Identity": tuple(f"face #{i}" for i in FACE_INDICES), "Object": OBJECTS, "Style": STYLES,
             "Scene": SCENES, "Material": MATERIALS, "Control": tuple(f"layout {i}" for i in range(1, 9)),
             "Appearance": tuple(f"{ACCESSORIES[i % 3]} / tint {i}" for i in range(8))}
    return pools[d][:V]


def _resize(img: np.ndarray, shape) -> np.ndarray:
    from skimage.transform import resize

    return resize(img, shape, order=1, anti_aliasing=True, mode="reflect").astype(np.float64)


def _center_crop(img: np.ndarray, frac: float = 1.0) -> np.ndarray:
    h, w = img.shape[:2]
    s = int(min(h, w) * frac)
    y0, x0 = (h - s) // 2, (w - s) // 2
    return img[y0:y0 + s, x0:x0 + s]


@dataclass(frozen=True)
class Assets:
    """Precomputed pixel assets of the concept space at one canvas size."""

    size: int
    scenes: np.ndarray        # (8, S, S, 3)
    faces: np.ndarray         # (8, F, F) grey faces; F = face box size of the largest layout
    textures: np.ndarray      # (8, S, S, 3) material fills
    shapes: np.ndarray        # (8, S, S) object masks on the full canvas, centred, half-size 0.45 S
    default_texture: np.ndarray


def _shape_mask(name: str, n: int) -> np.ndarray:
    from skimage import data, draw

    m = np.zeros((n, n), bool)
    c, r = n / 2 - 0.5, n * 0.45
    if name == "disk":
        rr, cc = draw.disk((c, c), r, shape=m.shape)
        m[rr, cc] = True
    elif name == "ring":
        rr, cc = draw.disk((c, c), r, shape=m.shape)
        m[rr, cc] = True
        rr, cc = draw.disk((c, c), r * 0.55, shape=m.shape)
        m[rr, cc] = False
    elif name == "crescent":
        rr, cc = draw.disk((c, c), r, shape=m.shape)
        m[rr, cc] = True
        rr, cc = draw.disk((c - r * 0.25, c + r * 0.45), r * 0.8, shape=m.shape)
        m[rr, cc] = False
    elif name == "horse":
        h = data.horse()
        m = _resize((~h).astype(float), (n, n)) > 0.5
    else:
        t = np.linspace(0, 2 * np.pi, 11)[:-1] - np.pi / 2
        polys = {
            "triangle": [(c - r, c), (c + r, c - r), (c + r, c + r)],
            "diamond": [(c - r, c), (c, c + r * 0.8), (c + r, c), (c, c - r * 0.8)],
            "star": [(c + (r if i % 2 == 0 else r * 0.42) * np.sin(a), c + (r if i % 2 == 0 else r * 0.42) * np.cos(a))
                     for i, a in enumerate(t)],
            "cross": [(c - r, c - r * 0.3), (c - r, c + r * 0.3), (c - r * 0.3, c + r * 0.3), (c - r * 0.3, c + r),
                      (c + r * 0.3, c + r), (c + r * 0.3, c + r * 0.3), (c + r, c + r * 0.3), (c + r, c - r * 0.3),
                      (c + r * 0.3, c - r * 0.3), (c + r * 0.3, c - r), (c - r * 0.3, c - r), (c - r * 0.3, c - r * 0.3)],
        }
        ys, xs = zip(*polys[name])
        rr, cc = draw.polygon(np.array(ys), np.array(xs), shape=m.shape)
        m[rr, cc] = True
    return m


@lru_cache(maxsize=4)
def assets(size: int) -> Assets:
    """The real-image assets at canvas ``size`` (cached)."""
    from skimage import data

    check_space(size, 2)
    S = size
    scenes = []
    for name in SCENES:
        img = getattr(data, name)()
        if img.ndim == 2:
            img = np.stack([img] * 3, -1)
        img = img[..., :3].astype(np.float64) / 255.0
        img = _resize(_center_crop(img, 0.8), (S, S))
        scenes.append(0.25 + 0.6 * img)            # softened so the entities stand out
    lfw = data.lfw_subset()
    F = int(round(2 * 0.2 * S)) + 1
    faces = np.stack([_resize(lfw[i], (F, F)) for i in FACE_INDICES])
    textures = []
    yy, xx = np.mgrid[0:S, 0:S] / S
    for i, name in enumerate(MATERIALS):
        if name in ("brick", "grass", "gravel", "moon"):
            g = getattr(data, name)().astype(np.float64) / 255.0
            g = _resize(g[:160, :160], (S, S))
            g = (g - g.min()) / (np.ptp(g) + 1e-9)
        elif name == "checker":
            g = ((np.floor(yy * 8) + np.floor(xx * 8)) % 2).astype(float)
        elif name == "stripes":
            g = (np.sin(2 * np.pi * 6 * (xx + yy)) > 0).astype(float)
        elif name == "dots":
            g = ((np.sin(2 * np.pi * 6 * xx) * np.sin(2 * np.pi * 6 * yy)) > 0.5).astype(float)
        else:  # wood
            g = 0.5 + 0.5 * np.sin(2 * np.pi * (10 * np.hypot(yy - 0.1, xx - 0.2) + 0.3 * np.sin(6 * yy)))
        textures.append((0.35 + 0.65 * g)[..., None] * _MATERIAL_TINTS[i])
    default_texture = np.ones((S, S, 3)) * np.array([0.35, 0.35, 0.42])
    shapes = np.stack([_shape_mask(n, S) for n in OBJECTS])
    return Assets(S, np.stack(scenes), faces, np.stack(textures), shapes, default_texture)


def _box(size: int, cy: float, cx: float, half: float) -> tuple[int, int, int]:
    s = int(round(2 * half * size))
    y0 = int(round(cy * size - s / 2))
    x0 = int(round(cx * size - s / 2))
    y0, x0 = min(max(y0, 0), size - s), min(max(x0, 0), size - s)
    return y0, x0, s


def layout_boxes(control: int, size: int):
    """(object box, face box) as (y0, x0, side) in pixels for a Control value (``-1``: the default layout)."""
    (oy, ox, oh), (fy, fx, fh) = _LAYOUTS[control + 1]
    return _box(size, oy, ox, oh), _box(size, fy, fx, fh)


def _apply_style(img: np.ndarray, style: int) -> np.ndarray:
    """One of the Style transforms (half-strength mix with the image so the content stays recognisable)."""
    from PIL import Image, ImageFilter, ImageOps

    name = STYLES[style]
    u8 = Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8))
    if name == "posterize":
        return np.asarray(ImageOps.posterize(u8, 2), float) / 255.0
    if name == "emboss":
        out = np.asarray(u8.filter(ImageFilter.EMBOSS), float) / 255.0
        return 0.5 * img + 0.5 * out
    if name == "dither":
        out = np.asarray(u8.convert("P", palette=Image.Palette.WEB, dither=Image.Dither.FLOYDSTEINBERG).convert("RGB"),
                         float) / 255.0
        return out
    if name == "sobel":
        from skimage.filters import sobel

        edges = np.stack([sobel(img[..., c]) for c in range(3)], -1)
        return np.clip(0.7 * img + 1.5 * edges.max(-1, keepdims=True), 0, 1)
    if name == "slic":
        from skimage.color import label2rgb
        from skimage.segmentation import slic

        labels = slic(img, n_segments=40, compactness=10, start_label=1)
        return label2rgb(labels, img, kind="avg", bg_label=0)
    if name == "tv":
        from skimage.restoration import denoise_tv_chambolle

        return np.clip(1.15 * denoise_tv_chambolle(img, weight=0.2, channel_axis=-1) - 0.05, 0, 1)
    if name == "pixelate":
        S = img.shape[0]
        small = u8.resize((S // 2, S // 2), Image.Resampling.BOX)
        return np.asarray(small.resize((S, S), Image.Resampling.NEAREST), float) / 255.0
    # scanlines (procedural): every other row darkened, every fourth column brightened
    out = img.copy()
    out[1::2] *= 0.55
    out[:, ::4] = 0.6 * out[:, ::4] + 0.4
    return out


def render(config, size: int, with_mask: bool = False):
    """The ground-truth composer: one oracle image for a full configuration.

    ``config`` holds 9 integers: the 7 dimensions' values (``-1`` = the neutral default) followed by the
    two text attributes (tone, frame). Order: scene -> object (Material fill, placed by Control) -> face
    (Identity, tinted by Appearance) -> accessory (Appearance) -> Style -> tone -> frame. With
    ``with_mask`` also returns the boolean foreground mask (object and face, before Style).
    """
    cfg = np.asarray(config, dtype=int)
    if cfg.shape != (N_DIMS + 2,):
        raise ValueError(f"a configuration has {N_DIMS + 2} entries (7 dimensions, tone, frame), got shape {cfg.shape}")
    A = assets(size)
    S = size
    ident, obj, style, scene, mat, control, appear, tone, frame = (int(v) for v in cfg)
    img = (A.scenes[scene].copy() if scene >= 0 else np.full((S, S, 3), NEUTRAL))
    (oy, ox, os_), (fy, fx, fs) = layout_boxes(control, S)
    from skimage.transform import resize

    if obj >= 0:
        m = resize(A.shapes[obj].astype(float), (os_, os_), order=1, anti_aliasing=True) > 0.5
    else:  # default object: a rounded slab
        m = np.zeros((os_, os_), bool)
        m[os_ // 6: os_ - os_ // 6, :] = True
    tex = (A.textures[mat] if mat >= 0 else A.default_texture)[oy:oy + os_, ox:ox + os_]
    region = img[oy:oy + os_, ox:ox + os_]
    from scipy import ndimage

    outline = ndimage.binary_dilation(m, iterations=1) & ~m
    region[outline] = 0.05                      # a dark contour: the entity's shape reads against any scene
    region[m] = tex[m]
    fg = np.zeros((S, S), bool)
    fg[oy:oy + os_, ox:ox + os_] |= m
    # face
    if ident >= 0:
        face = resize(A.faces[ident], (fs, fs), order=1, anti_aliasing=True)
    else:
        yy, xx = np.mgrid[0:fs, 0:fs] / max(fs - 1, 1)
        face = np.where(((yy - 0.5) / 0.5) ** 2 + ((xx - 0.5) / 0.4) ** 2 <= 1, 0.75, 0.55)
    tint = _TINTS[appear] if appear >= 0 else np.ones(3)
    img[fy:fy + fs, fx:fx + fs] = face[..., None] * tint
    img[fy, fx:fx + fs] = img[fy + fs - 1, fx:fx + fs] = img[fy:fy + fs, fx] = img[fy:fy + fs, fx + fs - 1] = 0.05
    fg[fy:fy + fs, fx:fx + fs] = True
    if appear >= 0:
        col = _ACC_COLORS[appear]
        band = max(2, fs // 5)
        kind = ACCESSORIES[appear % 3]
        if kind == "hat":
            img[fy:fy + band, fx:fx + fs] = col
        elif kind == "glasses":
            y = fy + fs // 3
            img[y:y + max(1, band // 2 + 1), fx:fx + fs] = col
        else:
            img[fy + fs - band:fy + fs, fx:fx + fs] = col
    if style >= 0:
        img = _apply_style(np.clip(img, 0, 1), style)
    if tone == 1:
        img = 0.7 * img
    if frame == 1:
        img[:2], img[-2:], img[:, :2], img[:, -2:] = 1.0, 1.0, 1.0, 1.0
    img = np.clip(img, 0.0, 1.0)
    return (img, fg) if with_mask else img


def render_batch(configs, size: int) -> np.ndarray:
    """Oracle images of many configurations, (N, S, S, 3) float32 in [0, 1]."""
    configs = np.asarray(configs, dtype=int)
    if configs.ndim != 2 or configs.shape[1] != N_DIMS + 2:
        raise ValueError(f"configs must have shape (N, {N_DIMS + 2}), got {configs.shape}")
    return np.stack([render(c, size) for c in configs]).astype(np.float32)


def reference(dim: int, value: int, size: int) -> np.ndarray:
    """The concept-directed reference image of one (dimension, value): only that concept, on a neutral canvas."""
    if not 0 <= dim < N_DIMS:
        raise ValueError(f"dimension index must be in 0..{N_DIMS - 1}, got {dim}")
    if not 0 <= value < POOL_SIZE:
        raise ValueError(f"value must be in 0..{POOL_SIZE - 1}, got {value}")
    A = assets(size)
    S = size
    img = np.full((S, S, 3), NEUTRAL)
    name = DIMENSIONS[dim]
    from skimage.transform import resize

    c0, side = S // 8, S - 2 * (S // 8)
    if name == "Identity":
        img[c0:c0 + side, c0:c0 + side] = resize(A.faces[value], (side, side), order=1)[..., None]
    elif name == "Object":
        m = resize(A.shapes[value].astype(float), (side, side), order=1) > 0.5
        sub = img[c0:c0 + side, c0:c0 + side]
        sub[m] = 0.25
    elif name == "Material":
        img = A.textures[value].copy()
    elif name == "Scene":
        img = A.scenes[value].copy()
    elif name == "Style":
        probe = np.full(N_DIMS + 2, DEFAULT)
        probe[-2:] = 0
        img = _apply_style(render(probe, S), value)
    elif name == "Control":
        from skimage.feature import canny
        from skimage.draw import rectangle_perimeter

        probe = np.full(N_DIMS + 2, DEFAULT)
        probe[-2:] = 0
        probe[5] = value
        _, fg = render(probe, S, with_mask=True)
        edges = canny(fg.astype(float), sigma=1.0)
        img = np.zeros((S, S, 3))
        img[edges] = 1.0
        for (y0, x0, s), col in zip(layout_boxes(value, S), ([0.2, 0.9, 0.2], [0.9, 0.2, 0.9])):
            rr, cc = rectangle_perimeter((y0, x0), extent=(s - 1, s - 1), shape=(S, S), clip=True)
            img[rr, cc] = col
    else:  # Appearance: accessory + palette on a blank face
        probe = np.full(N_DIMS + 2, DEFAULT)
        probe[-2:] = 0
        probe[6] = value
        probe[5] = 7  # layout 7 draws the face large; the face box is cut out of the render and enlarged
        full = render(probe, S)
        (_, (fy, fx, fs)) = layout_boxes(7, S)
        img[c0:c0 + side, c0:c0 + side] = resize(full[fy:fy + fs, fx:fx + fs], (side, side), order=0)
    return np.clip(img, 0, 1).astype(np.float32)


@lru_cache(maxsize=4)
def reference_bank(size: int, V: int) -> np.ndarray:
    """All references, (7, V, S, S, 3) float32."""
    check_space(size, V)
    return np.stack([np.stack([reference(d, v, size) for v in range(V)]) for d in range(N_DIMS)])
