"""The benchmark's reference subjects: the oracle and four baselines of known behaviour.

The paper evaluates 13 image models; none can run here. Stand-ins with controlled behaviour:

* `oracle`      - the ground-truth composer (upper bound: must score CC = 10);
* `blend`       - the pixel mean of the references ("superficial composition" in its purest form);
* `collage`     - the references side by side on one canvas;
* `dominant`    - renders only the most dominant referenced concept (Style > Scene > Material > ...),
                  an engineered "dominance" failure of the early version's taxonomy;
* `random`      - a valid render with random values of the referenced dimensions (the chance floor 10/V).

The learned subjects live in `readout` (the concept-readout generators the claims are tested on) and
`pixel` (the pixel decoder, a disclosed negative result), both on the conditioning of `conditioning`.
"""
from __future__ import annotations

import math

import numpy as np

from .concepts import DEFAULT, render, render_batch

DOMINANCE_ORDER = (2, 3, 4, 1, 0, 6, 5)
"""Style, Scene, Material, Object, Identity, Appearance, Control: who wins in `dominant`."""


def _refs_tensor(bank: np.ndarray, dims, values) -> np.ndarray:
    return np.stack([bank[d, v] for d, v in zip(dims, values)])


def blend(bank: np.ndarray, dims, values, source=None) -> np.ndarray:
    """Pixel mean of the references (and the source image, for editing)."""
    imgs = list(_refs_tensor(bank, dims, values))
    if source is not None:
        imgs.append(source)
    return np.mean(imgs, axis=0).astype(np.float32)


def collage(bank: np.ndarray, dims, values, source=None) -> np.ndarray:
    """The references (and the source) tiled side by side on one canvas, each downscaled to a grid cell."""
    from skimage.transform import resize

    imgs = ([source] if source is not None else []) + list(_refs_tensor(bank, dims, values))
    S = bank.shape[2]
    g = math.ceil(math.sqrt(len(imgs)))
    cell = S // g
    out = np.full((S, S, 3), 0.5, np.float32)
    for i, im in enumerate(imgs):
        r, c = divmod(i, g)
        out[r * cell:(r + 1) * cell, c * cell:(c + 1) * cell] = resize(im, (cell, cell), order=1, anti_aliasing=True)
    return out


def dominant(config: np.ndarray, dims, size: int) -> np.ndarray:
    """Render only the dominant referenced concept (the others reset to default)."""
    keep = next(d for d in DOMINANCE_ORDER if d in dims)
    cfg = np.asarray(config).copy()
    for d in dims:
        if d != keep:
            cfg[d] = DEFAULT
    return render(cfg, size).astype(np.float32)


def random_valid(config: np.ndarray, dims, V: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """A valid render with uniformly random values of the referenced dimensions."""
    cfg = np.asarray(config).copy()
    for d in dims:
        cfg[d] = int(rng.integers(0, V))
    return render(cfg, size).astype(np.float32)


def baseline_outputs(name: str, bank: np.ndarray, cases, size: int, V: int, seed: int,
                     sources: np.ndarray | None = None) -> np.ndarray:
    """Outputs of one reference baseline (oracle, blend, collage, dominant, random) on cases."""
    rng = np.random.default_rng(seed)
    if name == "oracle":
        return render_batch(np.stack([c.config for c in cases]), size)
    out = []
    for i, c in enumerate(cases):
        src = None if sources is None else sources[i]
        if name == "blend":
            out.append(blend(bank, c.dims, c.values, src))
        elif name == "collage":
            out.append(collage(bank, c.dims, c.values, src))
        elif name == "dominant":
            out.append(dominant(c.config, c.dims, size))
        elif name == "random":
            out.append(random_valid(c.config, c.dims, V, size, rng))
        else:
            raise ValueError(f"unknown baseline {name!r}; choose oracle, blend, collage, dominant, random")
    return np.stack(out).astype(np.float32)
