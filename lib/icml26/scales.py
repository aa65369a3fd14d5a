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

BUDGET_SECONDS = {"smoke": 60, "book": 300, "full": None}
"""Wall-clock budget per chapter on 2 CPU cores (None: hours, a GPU when present)."""


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


def select_preset(presets: Mapping[str, Mapping[str, Any]], scale: str) -> Mapping[str, Any]:
    """The sizes of one scale from a chapter's preset table (read-only).

    The table must define every scale, so that no chapter silently lacks one.
    """
    check_scale(scale)
    missing = [s for s in SCALES if s not in presets]
    if missing:
        raise ScaleError(f"preset table lacks the scale(s) {missing}; it must define {list(SCALES)}")
    unknown = [s for s in presets if s not in SCALES]
    if unknown:
        raise ScaleError(f"preset table has unknown scale(s) {unknown}; valid scales are {list(SCALES)}")
    return MappingProxyType(dict(presets[scale]))
