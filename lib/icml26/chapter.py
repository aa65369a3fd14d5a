"""The chapter runtime: one object per notebook run that ties scale, preset, seed, claims and results.

A chapter notebook starts with

    scale = None                      # the papermill `parameters` cell
    ch = icml26.Chapter("lion", scale=scale, seed=0)
    cfg = ch.preset                   # this scale's sizes, from icml26.lion.PRESETS

declares every claim in the paper card with `ch.declare(...)` and shows them with `ch.paper_card()`,
records measurements with `ch.measure(id, value)` (or `ch.not_reached(id, reason)`), puts numbers into
the prose with `ch.glue(...)`, and ends with `ch.finish()`, which writes `results/<scale>/<slug>.json`,
shows the claims table and raises `ClaimFailed` when a claim fails at a scale where it is declared to
hold, or `ClaimsIncomplete` when a declared claim was never measured.

Determinism: a chapter computes on `COMPUTE_THREADS` torch and BLAS threads whatever the machine, so
that its measured values depend neither on the core count nor on the load (a different thread count
changes the order of floating-point reductions, and an oversubscribed BLAS spin-waits).

Structure runs: with ``$ICML26_PRESET_SCALE`` set (e.g. ``smoke``) a run at another scale takes that
scale's sizes. The tests use it to run every chapter's ``full`` code path quickly; the results file
records it, such a run never fails on a claim's value, and the scorecard never publishes it.
"""
from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import provenance
from .checks import Check, python_scalar
from .ledger import KINDS, ClaimFailed, ClaimsIncomplete, Ledger, jsonable, tally
from .paths import notebooks_dir, results_dir
from .registry import SLUGS, chapter_info
from .scales import BUDGET_SECONDS, check_scale, resolve_scale, select_preset
from .seeding import device, seed_everything
from .style import use_book_style

COMPUTE_THREADS = 1
PRESET_SCALE_ENV_VAR = "ICML26_PRESET_SCALE"
CACHE_KEY_ENV_VAR = "ICML26_CACHE_KEY"


def pin_threads(threads: int = COMPUTE_THREADS) -> None:
    """Fix torch's and the BLAS libraries' thread counts for the rest of this process."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(threads)
    threadpool_limits(threads)


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
        pin_threads()
        self.preset_scale = check_scale(os.environ.get(PRESET_SCALE_ENV_VAR) or self.scale)
        self.preset = select_preset(presets if presets is not None else _load_presets(slug), self.preset_scale,
                                    on_gpu=self.device.type == "cuda")
        self.ledger = Ledger(self.scale, check_seeds=not self.structure_run)
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

    @property
    def structure_run(self) -> bool:
        """Whether this run takes another scale's sizes (module docstring): its values are not results."""
        return self.preset_scale != self.scale

    def declare(
        self,
        id: str,
        statement: str,
        *,
        kind: str,
        paper: str,
        source: str,
        check: Check,
        holds_at,
        min_seeds: int | None = None,
        timing: bool = False,
    ):
        """Declare one claim in the paper card, before any experiment: what is tested and how.

        ``kind``: ``paper`` | ``derived`` | ``check`` (DESIGN.md). ``holds_at``: the scales at which a
        failure breaks the run. ``min_seeds``: a method comparison, measured with
        `icml26.stats.over_seeds` over at least that many seeds at ``book`` and ``full``. ``timing=True``:
        a speed ratio measured interleaved in this run (the only value allowed to vary between runs).
        """
        return self.ledger.declare(id, statement, kind=kind, paper_value=paper, paper_source=source, check=check,
                                   holds_at=holds_at, min_seeds=min_seeds, timing=timing)

    def paper_card(self):
        """The declared claims (id, kind, statement, the paper's value, the test), shown before any result."""
        if not self.ledger.claims:
            raise ClaimFailed(f"chapter {self.slug} declared no claims: declare them before showing the paper card")
        return self.ledger.declarations_table()

    def measure(self, id: str, value: Any, note: str = ""):
        """Record the measured value of a declared claim (a number, a boolean, a symbolic value, or a
        `SeedSummary` over seeds, tested on its mean)."""
        return self.ledger.measure(id, value, note=note)

    def not_reached(self, id: str, reason: str):
        """Record that a declared claim could not be measured at this scale, and why."""
        return self.ledger.not_reached(id, reason)

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

    def cache_key(self) -> str | None:
        """The runner's cache key of this run (`icml26.cachekey`), else computed from the checkout's notebook."""
        if os.environ.get(CACHE_KEY_ENV_VAR):
            return os.environ[CACHE_KEY_ENV_VAR]
        notebook = notebooks_dir() / f"{self.slug}.ipynb"
        if not notebook.exists():
            return None
        from .cachekey import chapter_key

        return chapter_key(notebook, self.scale)

    def record(self) -> dict[str, Any]:
        total = time.perf_counter() - self.t0
        claims = [c.to_json() for c in self.ledger.claims]
        failed = self.ledger.failed or self.ledger.unmeasured
        return {
            "slug": self.slug,
            "title": self.title,
            "scale": self.scale,
            "preset_scale": self.preset_scale,
            "preset_variant": "gpu" if self.device.type == "cuda" else "cpu",
            "seed": self.seed,
            "status": "failed" if failed and not self.structure_run else "ok",
            "counts": {kind: tally(claims, kind) for kind in KINDS},
            "claims": claims,
            "preset": jsonable(self.preset),
            "timings": {**{k: round(v, 3) for k, v in self.timings.items()}, "total": round(total, 3)},
            "budget_seconds": BUDGET_SECONDS[self.scale],
            "glued": jsonable(self.glued),
            "versions": provenance.package_versions(),
            "git": provenance.git_state(),
            "machine": provenance.machine(),
            "device": str(self.device),
            "threads": COMPUTE_THREADS,
            "cache_key": self.cache_key(),
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }

    def finish(self, show: bool = True):
        """Write `results/<scale>/<slug>.json`, show the claims table, fail on a failed declared claim or a
        declared claim never measured."""
        if not self.ledger.claims:
            raise ClaimFailed(f"chapter {self.slug} declared no claims: nothing was tested")
        record = self.record()
        path = self.results_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2) + "\n")
        table = self.ledger.table()
        if show:
            from IPython.display import display

            display(table)
        unmeasured = self.ledger.unmeasured
        if unmeasured:
            raise ClaimsIncomplete(f"{len(unmeasured)} declared claim(s) never measured at scale {self.scale!r} "
                                   f"(measure them or call not_reached(id, reason)): {', '.join(c.id for c in unmeasured)}")
        failed = self.ledger.failed
        if failed and not self.structure_run:
            lines = "\n".join(f"  {c.id}: {c.statement} -- measured {c.measured_text}, test {c.comparison}" for c in failed)
            raise ClaimFailed(f"{len(failed)} claim(s) failed at scale {self.scale!r}, where they are declared to hold:\n{lines}")
        return table

