"""The three scales every chapter runs at, and the per-chapter preset tables.

Scale resolution (DESIGN.md, "Three scales, one notebook"): the papermill parameter `scale` when it
is injected, else the environment variable ``ICML26_SCALE``, else ``"book"``.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

SCALES: tuple[str, ...] = ("smoke", "book", "full")
DEFAULT_SCALE = "book"
SCALE_ENV_VAR = "ICML26_SCALE"

BUDGET_SECONDS = {"smoke": 60, "book": 300, "full": 2700}
"""Wall-clock budget per chapter on 2 CPU cores (a GPU variant of `full` may be larger)."""


class ScaleError(ValueError):
    """An unknown scale name."""


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ScaleError(f"unknown scale {scale!r}; valid scales are: {', '.join(SCALES)}")
    return scale


def resolve_scale(scale: str | None = None) -> str:
    """The scale to run at: `scale` if given, else ``$ICML26_SCALE``, else ``"book"``."""
    if scale is None or scale == "":
        scale = os.environ.get(SCALE_ENV_VAR) or DEFAULT_SCALE
    return check_scale(str(scale))


GPU_VARIANT_KEY = "gpu"
"""A scale's preset may carry ``"gpu": {...}``: overrides used when the chapter runs on CUDA (a larger
`full` where `device()` finds a GPU). The key itself never reaches the chapter."""


def select_preset(presets: Mapping[str, Mapping[str, Any]], scale: str, on_gpu: bool = False) -> Mapping[str, Any]:
    """The sizes of one scale from a chapter's preset table (read-only), with its GPU variant applied
    when ``on_gpu``.

    The table must define every scale, so that no chapter silently lacks one.
    """
    check_scale(scale)
    missing = [s for s in SCALES if s not in presets]
    if missing:
        raise ScaleError(f"preset table lacks the scale(s) {missing}; it must define {list(SCALES)}")
    unknown = [s for s in presets if s not in SCALES]
    if unknown:
        raise ScaleError(f"preset table has unknown scale(s) {unknown}; valid scales are {list(SCALES)}")
    sizes = dict(presets[scale])
    variant = sizes.pop(GPU_VARIANT_KEY, {})
    if not isinstance(variant, Mapping):
        raise ScaleError(f"the {scale!r} preset's {GPU_VARIANT_KEY!r} entry must be a dict of overrides, got {variant!r}")
    unknown_keys = sorted(set(variant) - set(sizes))
    if unknown_keys:
        raise ScaleError(f"the {scale!r} preset's GPU variant overrides unknown key(s) {unknown_keys}")
    if on_gpu:
        sizes.update(variant)
    return MappingProxyType(sizes)
