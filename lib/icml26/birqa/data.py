"""Real reference images and KADID-10k-style distortions (the data stand-in of the chapter).

References: the photographs bundled in the scikit-image wheel (no download), colour and grey (grey ones
replicated to RGB). ``motorcycle_left`` / ``motorcycle_right`` are the two views of one stereo pair: they
share a *source* group, so a split by source never puts one view in train and the other in test.

Distortions follow KADID-10k's taxonomy (Lin, Hosu & Saupe 2019) at 5 monotone levels, implemented with
Pillow (JPEG, JPEG2000, blur, posterize, enhancers, pixelate), scipy.ndimage (motion blur, channel shift,
median) and scikit-image (noises, gamma, chroma diffusion). The issue proposed albumentations 2.0.8 for
part of them; it pulls opencv into the environment, so the same operations are done with these libraries.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

COLOUR_REFS = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "immunohistochemistry", "retina",
               "colorwheel", "motorcycle_left", "motorcycle_right")
GREY_REFS = ("camera", "brick", "grass", "gravel", "moon", "page", "text", "coins", "cell", "clock")
REFERENCES = COLOUR_REFS + GREY_REFS
TEST_SOURCES = ("chelsea", "rocket", "immunohistochemistry", "brick", "page", "coins")
"""The held-out source images (6 of 19 sources; 3 colour, 3 grey): test content is never seen in training."""


def source_of(name: str) -> str:
    """The source group of a reference (the two stereo views are one source)."""
    return "motorcycle" if name.startswith("motorcycle") else name


def load_reference(name: str) -> np.ndarray:
    """An RGB float image in [0, 1] from skimage.data (grey images replicated to three channels)."""
    import skimage.data as sd
    from skimage.util import img_as_float

    if name not in REFERENCES:
        raise ValueError(f"unknown reference {name!r}; known: {', '.join(REFERENCES)}")
    if name.startswith("motorcycle"):
        left, right, _ = sd.stereo_motorcycle()
        img = left if name.endswith("left") else right
    else:
        img = getattr(sd, name)()
    img = img_as_float(img)
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    return np.clip(img[..., :3], 0, 1)


def reference_crops(name: str, n_crops: int, size: int, side: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``n_crops`` random ``size``x``size`` crops of the reference resized (anti-aliased) to short side ``side``."""
    from skimage.transform import resize

    img = load_reference(name)
    h, w = img.shape[:2]
    scale = side / min(h, w)
    img = resize(img, (max(size, round(h * scale)), max(size, round(w * scale))), anti_aliasing=True)
    H, W = img.shape[:2]
    out = []
    for _ in range(n_crops):
        r, c = rng.integers(0, H - size + 1), rng.integers(0, W - size + 1)
        out.append(np.ascontiguousarray(img[r:r + size, c:c + size]))
    return out


# --------------------------------------------------------------------------- distortions (KADID-10k types)

def _pil(x):
    from PIL import Image

    return Image.fromarray((np.clip(x, 0, 1) * 255 + 0.5).astype(np.uint8))


def _arr(im):
    return np.asarray(im, dtype=np.float64) / 255.0


def _codec(x, fmt, **kw):
    from PIL import Image

    buf = io.BytesIO()
    _pil(x).save(buf, format=fmt, **kw)
    buf.seek(0)
    return _arr(Image.open(buf).convert("RGB"))


def jpeg(x, level, rng):
    return _codec(x, "JPEG", quality=(43, 36, 24, 7, 2)[level - 1])


def jpeg2000(x, level, rng):
    return _codec(x, "JPEG2000", quality_mode="dB", quality_layers=[(38, 33, 29, 26, 23)[level - 1]])


def gaussian_blur(x, level, rng):
    from PIL import ImageFilter

    return _arr(_pil(x).filter(ImageFilter.GaussianBlur((0.4, 0.7, 1.0, 1.5, 2.2)[level - 1])))


def motion_blur(x, level, rng):
    from scipy import ndimage

    n = (3, 5, 7, 9, 13)[level - 1]
    k = np.zeros((n, n))
    k[n // 2, :] = 1.0 / n
    return np.stack([ndimage.convolve(x[..., c], k, mode="reflect") for c in range(3)], -1)


def white_noise(x, level, rng):
    from skimage.util import random_noise

    return random_noise(x, mode="gaussian", var=(0.0005, 0.001, 0.002, 0.004, 0.008)[level - 1], rng=rng)


def impulse_noise(x, level, rng):
    from skimage.util import random_noise

    return random_noise(x, mode="s&p", amount=(0.002, 0.005, 0.01, 0.02, 0.04)[level - 1], rng=rng)


def multiplicative_noise(x, level, rng):
    from skimage.util import random_noise

    return random_noise(x, mode="speckle", var=(0.002, 0.005, 0.01, 0.02, 0.04)[level - 1], rng=rng)


def pixelate(x, level, rng):
    from PIL import Image

    im = _pil(x)
    f = (0.8, 0.6, 0.45, 0.33, 0.25)[level - 1]
    small = im.resize((max(1, round(im.width * f)), max(1, round(im.height * f))), Image.BOX)
    return _arr(small.resize(im.size, Image.NEAREST))


def posterize(x, level, rng):
    from PIL import ImageOps

    return _arr(ImageOps.posterize(_pil(x), (5, 4, 3, 2, 1)[level - 1]))


def desaturate(x, level, rng):
    from PIL import ImageEnhance

    return _arr(ImageEnhance.Color(_pil(x)).enhance((0.7, 0.5, 0.3, 0.15, 0.0)[level - 1]))


def contrast(x, level, rng):
    from PIL import ImageEnhance

    return _arr(ImageEnhance.Contrast(_pil(x)).enhance((0.85, 0.7, 0.55, 0.4, 0.25)[level - 1]))


def sharpen(x, level, rng):
    from PIL import ImageEnhance

    return _arr(ImageEnhance.Sharpness(_pil(x)).enhance((2.0, 3.0, 5.0, 8.0, 12.0)[level - 1]))


def brighten(x, level, rng):
    from skimage.exposure import adjust_gamma

    return adjust_gamma(x, (0.85, 0.7, 0.55, 0.45, 0.35)[level - 1])


def darken(x, level, rng):
    from skimage.exposure import adjust_gamma

    return adjust_gamma(x, (1.2, 1.45, 1.8, 2.3, 3.0)[level - 1])


def colour_shift(x, level, rng):
    from scipy import ndimage

    s = (0.5, 1.0, 1.5, 2.0, 3.0)[level - 1]
    out = x.copy()
    out[..., 0] = ndimage.shift(x[..., 0], (0, s), mode="nearest", order=1)
    out[..., 2] = ndimage.shift(x[..., 2], (0, -s), mode="nearest", order=1)
    return out


def chroma_diffusion(x, level, rng):
    from skimage.color import rgb2ycbcr, ycbcr2rgb
    from skimage.filters import gaussian

    ycc = rgb2ycbcr(x)
    s = (0.7, 1.2, 2.0, 3.0, 4.5)[level - 1]
    for c in (1, 2):
        ycc[..., c] = gaussian(ycc[..., c], sigma=s, preserve_range=True)
    return ycbcr2rgb(ycc)


def denoise(x, level, rng):
    from scipy import ndimage
    from skimage.util import random_noise

    noisy = random_noise(x, mode="gaussian", var=(0.001, 0.002, 0.004, 0.008, 0.016)[level - 1], rng=rng)
    return np.stack([ndimage.median_filter(noisy[..., c], size=3, mode="reflect") for c in range(3)], -1)


def colour_block(x, level, rng):
    h, w = x.shape[:2]
    out = x.copy()
    b = max(2, h // 8)
    for _ in range((1, 2, 3, 5, 7)[level - 1]):
        r, c = rng.integers(0, h - b + 1), rng.integers(0, w - b + 1)
        out[r:r + b, c:c + b] = rng.uniform(0, 1, size=3)
    return out


DISTORTIONS = {
    # ordered so that the first k types of a preset are diverse (blur, codec, noise, colour, spatial, tone)
    "gaussian_blur": gaussian_blur, "jpeg": jpeg, "white_noise": white_noise, "desaturate": desaturate,
    "pixelate": pixelate, "contrast": contrast, "jpeg2000": jpeg2000, "impulse_noise": impulse_noise,
    "colour_shift": colour_shift, "sharpen": sharpen, "motion_blur": motion_blur, "brighten": brighten,
    "darken": darken, "posterize": posterize, "chroma_diffusion": chroma_diffusion, "denoise": denoise,
    "multiplicative_noise": multiplicative_noise, "colour_block": colour_block,
}
KADID_NAMES = {  # KADID-10k's names for the same types
    "gaussian_blur": "gaussian blur", "jpeg": "jpeg", "white_noise": "white noise", "desaturate": "colour saturation 1",
    "pixelate": "pixelate", "contrast": "contrast change", "jpeg2000": "jpeg2000", "impulse_noise": "impulse noise",
    "colour_shift": "colour shift", "sharpen": "high sharpen", "motion_blur": "motion blur", "brighten": "brighten",
    "darken": "darken", "posterize": "colour quantisation", "chroma_diffusion": "colour diffusion",
    "denoise": "denoise", "multiplicative_noise": "multiplicative noise", "colour_block": "colour block",
}


def distort(x: np.ndarray, kind: str, level: int, rng: np.random.Generator) -> np.ndarray:
    """One distortion of a float RGB image in [0, 1] at ``level`` in 1..5 (monotone in severity)."""
    if kind not in DISTORTIONS:
        raise ValueError(f"unknown distortion {kind!r}; known: {', '.join(DISTORTIONS)}")
    if not 1 <= int(level) <= 5:
        raise ValueError(f"level must be in 1..5, got {level}")
    return np.clip(DISTORTIONS[kind](x, int(level), rng), 0.0, 1.0)


@dataclass
class PairSet:
    """Reference/distorted pairs: ``ref``, ``dist`` float32 ``[N, 3, S, S]``; per pair its reference name,
    source group, distortion type and level; ``mos`` filled in by the oracle."""

    ref: np.ndarray
    dist: np.ndarray
    ref_name: np.ndarray
    source: np.ndarray
    kind: np.ndarray
    level: np.ndarray
    mos: np.ndarray | None = None

    def __len__(self):
        return len(self.ref)


def build_pairs(refs, kinds, levels, n_crops: int, size: int, side: int, seed: int = 0) -> PairSet:
    """Every (reference crop, distortion type, level) pair, deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    R, D, names, kinds_, levels_ = [], [], [], [], []
    for name in refs:
        for crop in reference_crops(name, n_crops, size, side, rng):
            for kind in kinds:
                for level in levels:
                    R.append(crop)
                    D.append(distort(crop, kind, level, rng))
                    names.append(name)
                    kinds_.append(kind)
                    levels_.append(level)
    to_t = lambda a: np.ascontiguousarray(np.stack(a).transpose(0, 3, 1, 2).astype(np.float32))
    names = np.array(names)
    return PairSet(to_t(R), to_t(D), names, np.array([source_of(n) for n in names]), np.array(kinds_),
                   np.array(levels_))


def split_by_source(pairs: PairSet, test_sources=TEST_SOURCES) -> tuple[np.ndarray, np.ndarray]:
    """Train / test indices split by source image (never by pair)."""
    test = np.isin(pairs.source, list(test_sources))
    if test.all() or not test.any():
        raise ValueError("the split must leave both train and test sources non-empty")
    return np.flatnonzero(~test), np.flatnonzero(test)
