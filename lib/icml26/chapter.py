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

Contract v3 (DESIGN.md): `declare` carries the paper's words, the region's metric bounds and the links
a fair verdict needs (positive and negative control, fidelity checks, training curves); `curve` records
a training curve and judges its convergence; `published_full` reads the chapter's committed `full`
results and `glue_full` glues its values, so the prose about `full` is generated, never typed;
`paper_card` also shows the declarations that changed since that published run.
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
from .convergence import DEFAULT_RTOL, TrainingCurve
from .ledger import (CONTRACT, DEFAULT_TIMING_TOLERANCE, KINDS, ClaimFailed, ClaimsIncomplete, Ledger,
                     declaration_changes, jsonable, record_claims, tally)
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
        words: str = "",
        bounds: tuple[float, float] | None = None,
        positive_control: str | None = None,
        negative_control: str | None = None,
        fidelity=None,
        curves=None,
        min_seeds: int | None = None,
        timing: bool = False,
        timing_tolerance: float = DEFAULT_TIMING_TOLERANCE,
    ):
        """Declare one claim in the paper card, before any experiment: what is tested and how.

        ``kind``: ``paper`` | ``derived`` | ``check`` (DESIGN.md). ``words``: the paper's words the claim
        tests, quoted. ``check``: the claim's region. ``bounds``: the range of the measured metric (an
        unreachable or unfailable region is an error). ``holds_at``: the scales at which a claim that is
        not reproduced flags the run. ``positive_control`` / ``negative_control``: claim ids of the same
        test where the effect is present by construction / where the test must fail. ``fidelity``: the
        ``check`` ids the method's pieces rest on. ``curves``: the training curves (`curve`) of the models
        the claim uses. A negative verdict needs the positive control reproduced, every fidelity check
        reproduced and every curve converged; else the claim is ``inconclusive`` (`icml26.ledger`).
        ``min_seeds``: a method comparison, measured with `icml26.stats.over_seeds` over at least that
        many seeds at ``book`` and ``full``. ``timing=True``: a speed ratio measured with
        `icml26.timing.speed_ratio`, inconclusive when its rounds disagree by more than ``timing_tolerance``.
        """
        return self.ledger.declare(id, statement, kind=kind, paper_value=paper, paper_source=source, check=check,
                                   holds_at=holds_at, min_seeds=min_seeds, timing=timing, timing_tolerance=timing_tolerance,
                                   words=words, bounds=bounds, positive_control=positive_control,
                                   negative_control=negative_control, fidelity=fidelity, curves=curves)

    def curve(self, name: str, steps, values, label: str = "loss", minimize: bool = True, rtol: float = DEFAULT_RTOL,
              atol: float = 0.0) -> TrainingCurve:
        """Record a trained model's curve (`values`: one row per seed, or one row) and judge its convergence
        with the book's rule (`icml26.convergence`); claims declared with ``curves=(name,)`` are capped at
        ``inconclusive`` while it has not converged. Draw it with ``.plot()``."""
        return self.ledger.record_curve(TrainingCurve.build(name, steps, values, label, minimize, rtol, atol))

    def paper_card(self, show_changes: bool = True):
        """The declared claims (id, kind, statement, the paper's words and value, the region, its controls,
        the scales), shown before any result; then, when the declarations differ from those of the
        chapter's published `full` run, the generated table of what changed (`declaration_changes`)."""
        if not self.ledger.claims:
            raise ClaimFailed(f"chapter {self.slug} declared no claims: declare them before showing the paper card")
        self.ledger.validate_links()
        if show_changes:
            changes = self.declaration_changes()
            if changes is not None and len(changes):
                from IPython.display import Markdown, display

                display(Markdown("**Declarations changed since the published `full` run** "
                                 f"(`results/full/{self.slug}.json`; *narrowed*: a weaker test than was declared):"))
                display(changes)
        return self.ledger.declarations_table()

    def declaration_changes(self):
        """What changed in the declarations since the published `full` run, as a DataFrame (id, what, old,
        new, narrowed); None when no `full` run is published."""
        import pandas as pd

        record = self.published_full(current_only=False)
        if record is None:
            return None
        rows = [vars(c) for c in declaration_changes(self.ledger.claims, record)]
        return pd.DataFrame(rows, columns=["id", "what", "old", "new", "narrowed"])

    def measure(self, id: str, value: Any, note: str = "", untestable: str = ""):
        """Record the measured value of a declared claim (a number, a boolean, a symbolic value, or a
        `SeedSummary` over seeds, tested on its mean); `untestable`, a reason why this measurement cannot
        test the claim here, records it as ``inconclusive`` (`Ledger.measure`)."""
        return self.ledger.measure(id, value, note=note, untestable=untestable)

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

    def published_full(self, current_only: bool = True) -> dict[str, Any] | None:
        """The chapter's committed `full` results (``results/full/<slug>.json`` of the checkout, whatever
        ``$ICML26_RESULTS_DIR`` a run writes to: the published run is the committed one), with a
        ``"state"``: ``current`` when its cache key is this checkout's `full` key, else ``stale``. None
        when none is published, it is a structure run, or (``current_only``) it is stale."""
        from .paths import repo_root

        path = repo_root() / "results" / "full" / f"{self.slug}.json"
        if not path.exists():
            return None
        record = json.loads(path.read_text())
        if record.get("preset_scale", record.get("scale")) != "full":
            return None
        notebook = notebooks_dir() / f"{self.slug}.ipynb"
        state = "unknown"
        if notebook.exists():
            from .cachekey import chapter_key

            state = "current" if record.get("cache_key") == chapter_key(notebook, "full") else "stale"
        if current_only and state != "current":
            return None
        return {**record, "state": state}

    def glue_full(self, prefix: str = "full") -> dict[str, Any] | None:
        """Glue the published `full` run's results so that the prose about `full` is generated: for each
        claim ``{prefix}_<id>_measured``, ``{prefix}_<id>_verdict`` and ``{prefix}_<id>_reason``; each value
        the run glued as ``{prefix}_<name>`` (its own ``{prefix}_*`` keys excepted); and ``{prefix}_summary``,
        a sentence with its counts and commit. Without a current `full` run every key is glued as a
        sentence saying so (the page builds, and nobody reads a stale number as current). In a run at
        `full` itself, the keys say that this page is that run (its claims table is below). Returns the
        record used, or None."""
        if self.scale == "full":
            this = "*(this page is the `full` run: see its claims table)*"
            for claim in self.ledger.claims:
                for field in ("measured", "verdict", "reason"):
                    self.glue(f"{prefix}_{claim.id}_{field}", this, fmt="{}")
            self.glue(f"{prefix}_summary", this, fmt="{}")
            return None
        record = self.published_full(current_only=True)
        stale = self.published_full(current_only=False)
        own = f"{prefix}_"
        if record is None:
            missing = ("*(no current `full` run: the published one is stale)*" if stale is not None
                       else "*(no `full` run published)*")
            for claim in self.ledger.claims:
                for field in ("measured", "verdict", "reason"):
                    self.glue(f"{prefix}_{claim.id}_{field}", missing, fmt="{}")
            for name in (stale or {}).get("glued", {}):
                if not name.startswith(own):
                    self.glue(f"{prefix}_{name}", missing, fmt="{}")
            self.glue(f"{prefix}_summary", missing, fmt="{}")
            return None
        claims = {c["id"]: c for c in record_claims(record)}
        for id in sorted({c.id for c in self.ledger.claims} | set(claims)):
            c = claims.get(id)
            self.glue(f"{prefix}_{id}_measured", c["measured_text"] if c else "*(not in the full run)*", fmt="{}")
            self.glue(f"{prefix}_{id}_verdict", c["status"] if c else "*(not in the full run)*", fmt="{}")
            self.glue(f"{prefix}_{id}_reason", (c.get("reason") or "none") if c else "*(not in the full run)*", fmt="{}")
        for name, value in record.get("glued", {}).items():
            if not name.startswith(own):
                self.glue(f"{prefix}_{name}", value, fmt="{}" if isinstance(value, str) else None)
        paper = tally(list(claims.values()), "paper")
        commit = ((record.get("git") or {}).get("commit") or "unknown")[:10]
        self.glue(f"{prefix}_summary", f"the published `full` run (commit `{commit}`, "
                  f"{record.get('timings', {}).get('total', float('nan')):.0f} s, {record.get('preset_variant', 'cpu')}) "
                  f"reproduced {paper['reproduced']} of {paper['total']} paper claims ({paper['not reproduced']} not "
                  f"reproduced, {paper['inconclusive']} inconclusive, {paper['not reached']} not reached)", fmt="{}")
        return record

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
            "contract": CONTRACT,
            "slug": self.slug,
            "title": self.title,
            "scale": self.scale,
            "preset_scale": self.preset_scale,
            "preset_variant": "gpu" if self.device.type == "cuda" else "cpu",
            "seed": self.seed,
            "status": "failed" if failed and not self.structure_run else "ok",
            "counts": {kind: tally(claims, kind) for kind in KINDS},
            "claims": claims,
            "curves": [c.to_json() for c in self.ledger.curves],
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
        unrecorded = self.ledger.unrecorded_curves()
        if unrecorded:
            raise ClaimsIncomplete("linked training curves never recorded (ch.curve): "
                                   + ", ".join(f"{name} (linked by {id})" for id, name in unrecorded))
        failed = self.ledger.failed
        if failed and not self.structure_run:
            lines = "\n".join(f"  {c.id}: {c.statement} -- measured {c.measured_text}, region {c.comparison}: {c.status}"
                              + (f" ({c.reason})" if c.reason else "") for c in failed)
            raise ClaimFailed(f"{len(failed)} claim(s) flagged at scale {self.scale!r}: declared to hold there, their "
                              f"verdict is not 'reproduced':\n{lines}")
        return table

