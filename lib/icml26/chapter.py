"""The chapter runtime: one object per notebook run that ties scale, preset, seed, claims and results.

A chapter notebook starts with

    scale = None                      # the papermill `parameters` cell
    ch = icml26.Chapter("lion", scale=scale, seed=0)
    cfg = ch.preset                   # this scale's sizes, from icml26.lion.PRESETS

records claims with `ch.claim(...)`, puts numbers into the prose with `ch.glue(...)`, and ends with
`ch.finish()`, which writes `results/<scale>/<slug>.json`, shows the claims table and raises
`ClaimFailed` when a claim fails at a scale where it is declared to hold.
"""
from __future__ import annotations

import importlib
import json
import time
from collections.abc import Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import provenance
from .checks import Check, python_scalar
from .ledger import ClaimFailed, Ledger, jsonable
from .paths import results_dir
from .registry import SLUGS, chapter_info
from .scales import BUDGET_SECONDS, resolve_scale, select_preset
from .seeding import device, seed_everything
from .style import use_book_style


def _load_presets(slug: str) -> Mapping[str, Mapping[str, Any]]:
    package = chapter_info(slug).package
    module = importlib.import_module(f"icml26.{package}")
    if not hasattr(module, "PRESETS"):
        raise AttributeError(f"icml26.{package} defines no PRESETS table (one dict of sizes per scale)")
    return module.PRESETS


class Chapter:
    """One run of one chapter at one scale."""

    def __init__(
        self,
        slug: str,
        scale: str | None = None,
        seed: int = 0,
        presets: Mapping[str, Mapping[str, Any]] | None = None,
        title: str | None = None,
    ):
        self.t0 = time.perf_counter()
        self.slug = slug
        self.scale = resolve_scale(scale)
        if title is None:
            if slug not in SLUGS:
                raise KeyError(f"unknown chapter {slug!r}; known chapters: {', '.join(SLUGS)} (or pass title=)")
            title = chapter_info(slug).title
        self.title = title
        self.seed = int(seed)
        self.rng = seed_everything(self.seed)
        self.device = device()
        self.preset = select_preset(presets if presets is not None else _load_presets(slug), self.scale)
        self.ledger = Ledger(self.scale)
        self.timings: dict[str, float] = {}
        self.glued: dict[str, Any] = {}
        use_book_style()

    def __repr__(self) -> str:
        return f"Chapter({self.slug!r}, scale={self.scale!r}, seed={self.seed}, device={self.device})"

    @contextmanager
    def timed(self, section: str):
        """Time a section of the chapter; the seconds go into the results file."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[section] = self.timings.get(section, 0.0) + time.perf_counter() - start

    def claim(
        self,
        id: str,
        statement: str,
        *,
        paper: str,
        source: str,
        measured: Any,
        check: Check,
        holds_at,
        note: str = "",
    ):
        """Record one claim: the paper's value and where it stands, our measurement and its test."""
        return self.ledger.record(
            id, statement, paper_value=paper, paper_source=source, measured=measured,
            check=check, holds_at=holds_at, note=note,
        )

    def glue(self, name: str, value: Any, fmt: str | None = None) -> Any:
        """Make a computed value available to the prose through myst-nb ``glue``.

        Without ``fmt`` the raw value is glued (refer to it as ``{glue:text}`name:.3f```); with ``fmt``
        (e.g. ``"{:.3f}"``) a formatted Markdown string is glued (refer to it as ``{glue:md}`name```).
        """
        from IPython.display import Markdown
        from myst_nb import glue

        value = python_scalar(value)  # myst-nb cannot format the repr of a numpy/torch scalar
        shown = Markdown(fmt.format(value)) if fmt is not None else value
        glue(name, shown, display=False)
        self.glued[name] = fmt.format(value) if fmt is not None else value
        return value

    def results_path(self) -> Path:
        return results_dir(self.scale) / f"{self.slug}.json"

    def record(self) -> dict[str, Any]:
        total = time.perf_counter() - self.t0
        failed = self.ledger.failed
        return {
            "slug": self.slug,
            "title": self.title,
            "scale": self.scale,
            "seed": self.seed,
            "status": "failed" if failed else "ok",
            "claims": [c.to_json() for c in self.ledger.claims],
            "preset": jsonable(self.preset),
            "timings": {**{k: round(v, 3) for k, v in self.timings.items()}, "total": round(total, 3)},
            "budget_seconds": BUDGET_SECONDS[self.scale],
            "glued": jsonable(self.glued),
            "versions": provenance.package_versions(),
            "git": provenance.git_state(),
            "machine": provenance.machine(),
            "device": str(self.device),
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }

    def finish(self, show: bool = True):
        """Write `results/<scale>/<slug>.json`, show the claims table, fail on a failed declared claim."""
        if not self.ledger.claims:
            raise ClaimFailed(f"chapter {self.slug} recorded no claims: nothing was tested")
        record = self.record()
        path = self.results_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2) + "\n")
        table = self.ledger.table()
        if show:
            from IPython.display import display

            display(table)
        failed = self.ledger.failed
        if failed:
            lines = "\n".join(f"  {c.id}: {c.statement} -- measured {c.measured_text}, test {c.comparison}" for c in failed)
            raise ClaimFailed(f"{len(failed)} claim(s) failed at scale {self.scale!r}, where they are declared to hold:\n{lines}")
        return table

