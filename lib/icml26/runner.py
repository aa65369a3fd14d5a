"""Batch execution of chapter notebooks with papermill, one at a time or on a Dask cluster.

`run_chapters` is what `repro run` and `repro book` call. Each chapter runs in its own kernel with the
scale injected as the papermill parameter ``scale``; its executed notebook and log land in
``runs/<scale>/<slug>.ipynb|.log`` and its claims in ``results/<scale>/<slug>.json``. A failing chapter
is recorded and the others go on.

Caching (``reuse=True``, used by `repro book`): a chapter is re-executed only when its *key*
(`icml26.cachekey.chapter_key`) changed. The key is handed to the kernel, so the results file records it.
A run that ended in `ClaimFailed` (it ran to its claims table, and claims failed where declared) is a
result too, and deterministic: it is reused like an ``ok`` run and reported again as failed.

A `full` results file is published (committed under ``results/full/``): a `full` run that crashes before
`ch.finish()` keeps the previously published file in place and reports no claims of its own; one that
finishes is published whatever its claims (a claim that fails where declared is a result too).
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .cachekey import chapter_key
from .chapter import CACHE_KEY_ENV_VAR
from .ledger import PAPER, REPRODUCED, record_claims, tally

CLAIM_FAILED = "ClaimFailed"
"""`icml26.ClaimFailed`'s name, as papermill reports the notebook's exception."""
PUBLISHED_SCALES = ("full",)
"""Scales whose results files are committed: a failed run must not delete the last good one."""
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR",
                    "--IPKernelApp.exec_lines=import pandas; pandas.set_option('display.max_rows', 1000)"]
"""Quiet the kernel's start-up warnings (ipykernel's "running over TCP without encryption", once per
chapter: the kernel listens on localhost only); its errors still reach the log. Pandas shows up to 1000 rows, so a
chapter's claims table and paper card are never cut to "..." on the page (pandas' default stops at 60 rows). Set
here, in the runner, the batch runs' settings do not enter the chapters' cache keys."""
CPUS_ENV_VAR = "ICML26_CPUS"
"""The cores a chapter may use when several run at once (`repro book`'s jobs share the machine): chapters that start
a pool of single-thread workers (icr, ecsel) cap its size at this. Unset for one chapter at a time. The pools' tasks
seed themselves, so the numbers do not depend on it; not keyed."""
CELL_TIMEOUT = {"smoke": 300, "book": 1800, "full": None}
"""Per-cell papermill timeout in seconds for a chapter with the whole machine: generous multiples of the scale
budgets (which are set on 2 cores); none for `full`. A hang guard, not a budget (a chapter's time is reported, and
judged, apart from it): `cell_timeout` scales it to the chapter's share of the machine. `book` was 900 s: in a
fresh-clone `make book` (2 jobs, 8a5b3bd) with other work on the machine (load 3.4-4.5 on 2 cores), icr's and infer's
training cells, working, passed the scaled 1800 s and their pages lost every claim; a hang guard must not kill slow work."""


def cell_timeout(scale: str, threads: int | None = None, cpus: int | None = None) -> int | None:
    """`CELL_TIMEOUT` of ``scale`` for a chapter given ``threads`` of the machine's ``cpus`` (default: all of them):
    the budgets are set for the whole machine, so a chapter that `repro book --jobs N` pins to 1/N of it gets N
    times the time. (At 2 jobs on 2 cores, ambisur, 333 s alone with its two-process pool, ran its one training cell
    past the unscaled 900 s on its one core: the chapter crashed and its page showed no claims.)"""
    base = CELL_TIMEOUT.get(scale)
    if base is None:
        return None
    cpus = cpus or os.cpu_count() or 1
    share = cpus / threads if threads else 1.0
    return int(round(base * max(1.0, share)))


@dataclass
class RunResult:
    slug: str
    scale: str
    status: str  # "ok", "failed" or "cached"
    seconds: float
    claims_held: int = 0
    claims_total: int = 0
    claims_failed: int = 0
    notebook: str = ""
    log: str = ""
    error: str = ""
    paper_reproduced: int = 0
    paper_total: int = 0
    error_type: str = ""  # the notebook's exception class name, e.g. "ClaimFailed"

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "cached")

    @property
    def claims_failed_only(self) -> bool:
        """The run reached ``ch.finish()`` and wrote its claims table; it failed only because claims were
        not reproduced where they are declared to hold (flagged: a finding with its verdicts), not because
        it crashed."""
        return self.status == "failed" and self.error_type == CLAIM_FAILED and self.claims_failed > 0


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _claims_summary(results_file: Path) -> dict[str, int]:
    """The RunResult claim counts of a results file: all kinds, and the paper claims apart."""
    claims = record_claims(json.loads(results_file.read_text())) if results_file.exists() else []
    counts, paper = tally(claims), tally(claims, PAPER)
    return {"claims_held": counts[REPRODUCED], "claims_total": counts["total"], "claims_failed": counts["failed_here"],
            "paper_reproduced": paper[REPRODUCED], "paper_total": paper["total"]}


def _cached(out: Path, key: str, results_file: Path) -> dict | None:
    """The run metadata of an executed notebook that is reusable at `key`: an ``ok`` run, or one that
    ended in `ClaimFailed` (complete and deterministic); None when it must be executed again."""
    if not (out.exists() and results_file.exists()):
        return None
    import nbformat

    meta = nbformat.read(out, as_version=4).metadata.get("icml26", {})
    if meta.get("key") != key:
        return None
    if meta.get("status") == "ok" or (meta.get("status") == "failed" and meta.get("error_type") == CLAIM_FAILED):
        return meta
    return None


def _refresh_prose(source: Path, executed: Path) -> None:
    """Give a cached executed notebook the source's current Markdown cells.

    The key covers code cells only, so an edit of the prose reuses the execution; the book must still
    show the new prose. Code cells (identical by the key) keep their outputs, in order, and papermill's
    injected-parameters cell stays after the parameters cell.
    """
    import nbformat

    src = nbformat.read(source, as_version=4)
    ex = nbformat.read(executed, as_version=4)
    injected = [c for c in ex.cells if "injected-parameters" in c.metadata.get("tags", [])]
    executed_code = iter(c for c in ex.cells if c.cell_type == "code" and c not in injected)
    cells = []
    for cell in src.cells:
        if cell.cell_type != "code":
            cells.append(cell)
            continue
        cells.append(next(executed_code))
        if "parameters" in cell.metadata.get("tags", []):
            cells.extend(injected)
    if [c.source for c in cells] != [c.source for c in ex.cells]:
        ex.cells = cells
        nbformat.write(ex, executed)


def _describe_error(exc: Exception) -> str:
    """One line: the notebook's own exception (name, first line, cell) rather than papermill's wrapper."""
    if hasattr(exc, "ename") and hasattr(exc, "evalue"):
        first = str(exc.evalue).strip().splitlines()[0] if str(exc.evalue).strip() else ""
        cell = getattr(exc, "exec_count", None)
        return f"{exc.ename}: {first}" + (f" (cell [{cell}])" if cell else "")
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def run_chapter(
    notebook: str | Path,
    scale: str,
    runs_dir: str | Path,
    results_root: str | Path,
    reuse: bool = False,
    threads: int | None = None,
    progress: bool = False,
) -> RunResult:
    """Execute one chapter notebook with papermill at `scale`; never raises for a failing chapter."""
    import nbformat
    import papermill

    notebook = Path(notebook).resolve()
    slug = notebook.stem
    runs_dir = Path(runs_dir).resolve()
    runs_dir.mkdir(parents=True, exist_ok=True)
    out, log_path = runs_dir / f"{slug}.ipynb", runs_dir / f"{slug}.log"
    results_file = Path(results_root).resolve() / scale / f"{slug}.json"
    key = chapter_key(notebook, scale)
    cached = _cached(out, key, results_file) if reuse else None
    if cached is not None:
        _refresh_prose(notebook, out)
        if cached["status"] == "failed":
            return RunResult(slug, scale, "failed", 0.0, notebook=str(out), log=str(log_path), error=cached.get("error", ""),
                             error_type=CLAIM_FAILED, **_claims_summary(results_file))
        return RunResult(slug, scale, "cached", 0.0, notebook=str(out), log=str(log_path), **_claims_summary(results_file))

    previous = results_file.with_suffix(".json.previous")
    if results_file.exists():  # a failed run must not leave an older run's claims behind as its own
        results_file.replace(previous)
    env = {
        CACHE_KEY_ENV_VAR: key,
        "ICML26_SCALE": scale,
        "ICML26_BATCH": "1",
        "ICML26_RESULTS_DIR": str(Path(results_root).resolve()),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    if threads:  # the chapter's share of the machine: its BLAS threads, and the cap on any worker pool it starts
        env.update({"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), CPUS_ENV_VAR: str(threads)})

    logger = logging.getLogger("papermill")
    handler = logging.FileHandler(log_path, mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    start = time.perf_counter()
    status, error, error_type = "ok", "", ""
    try:
        with _environment(env):
            papermill.execute_notebook(
                str(notebook), str(out), parameters={"scale": scale}, cwd=str(notebook.parent),
                kernel_name="python3", log_output=True, progress_bar=progress,
                execution_timeout=cell_timeout(scale, threads), extra_arguments=KERNEL_ARGUMENTS,
            )
    except Exception as exc:  # a failing chapter is a result, not a crash of the batch
        status = "failed"
        error = _describe_error(exc)
        error_type = getattr(exc, "ename", type(exc).__name__)
        with log_path.open("a") as log:
            log.write("\n" + traceback.format_exc())
    finally:
        logger.removeHandler(handler)
        handler.close()
    seconds = time.perf_counter() - start
    if out.exists():
        nb = nbformat.read(out, as_version=4)
        nb.metadata["icml26"] = {"key": key, "status": status, "scale": scale, "seconds": round(seconds, 1)}
        if status == "failed":
            nb.metadata["icml26"].update(error=error, error_type=error_type)
        nbformat.write(nb, out)
    counts = _claims_summary(results_file)
    if not results_file.exists() and scale in PUBLISHED_SCALES and previous.exists():
        previous.replace(results_file)  # the run crashed before finish(): keep the last published results
        counts = {}
    previous.unlink(missing_ok=True)
    return RunResult(slug, scale, status, seconds, notebook=str(out), log=str(log_path), error=error, error_type=error_type,
                     **counts)


def run_chapters(
    notebooks: Sequence[Path],
    scale: str,
    runs_dir: Path,
    results_root: Path,
    jobs: int = 1,
    scheduler: str | None = None,
    reuse: bool = False,
    on_result: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Run chapters: sequentially in this process (jobs=1), or as tasks on a Dask cluster.

    ``scheduler`` is the address of an existing dask.distributed scheduler; otherwise ``jobs > 1``
    starts a local cluster of that many single-threaded worker processes. Both go through the same
    `Client.submit` path, so moving to a real cluster changes one flag. The workers must see the same
    filesystem paths (a shared checkout) and have `icml26` installed.
    """
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    results: list[RunResult] = []

    def done(result: RunResult) -> None:
        results.append(result)
        if on_result:
            on_result(result)

    if scheduler is None and jobs == 1:
        show_cells = sys.stderr.isatty()  # papermill's per-cell bar, for a person watching a terminal
        for nb in notebooks:
            done(run_chapter(nb, scale, runs_dir, results_root, reuse=reuse, progress=show_cells))
        return results

    from dask.distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        threads = max(1, (os.cpu_count() or 1) // jobs)
    else:
        client = Client(scheduler)
        threads = None
    try:
        # an existing cluster: as many chapters at once as it has threads now (at least one)
        limit = jobs if scheduler is None else sum(client.nthreads().values())

        def submit(nb):
            return client.submit(run_chapter, str(nb), scale, str(runs_dir), str(results_root), reuse, threads,
                                 key=f"repro-{Path(nb).stem}-{scale}-{time.time_ns()}", pure=False)

        ordered = longest_first(notebooks, Path(results_root) / scale)
        for slug, outcome in in_flight_at_most(submit, ordered, limit, name=lambda nb: Path(nb).stem):
            if isinstance(outcome, Exception):  # a worker lost mid-run: report it as that chapter's failure
                outcome = RunResult(slug, scale, "failed", 0.0, error=f"{type(outcome).__name__}: {outcome}")
            done(outcome)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return results


def longest_first(notebooks: Sequence[Path], results_dir: Path) -> list[Path]:
    """The chapters ordered for a parallel run: those never run at this scale first, then by the wall time of their
    last run (``timings.total`` in ``results_dir/<slug>.json``), longest first, so that no long chapter starts last
    while the other workers run out of work. Ties keep the given order."""
    def last_seconds(nb: Path) -> float:
        try:
            return float(json.loads((results_dir / f"{Path(nb).stem}.json").read_text())["timings"]["total"])
        except (OSError, ValueError, KeyError, TypeError):
            return math.inf
    return sorted(notebooks, key=last_seconds, reverse=True)


def in_flight_at_most(submit: Callable, items: Sequence, limit: int, name: Callable = str):
    """Run ``submit(item)`` (a Dask future) for every item with at most ``limit`` (>= 1) in flight, submitting
    the next as one finishes; yields ``(name(item), result or the exception it raised)`` in completion order.

    Why not submit everything at once: each chapter's task key is its own task group, so the scheduler does
    not queue them (it queues only large groups of "root-ish" tasks); it assigns every task to a worker up
    front, by duration estimates it does not have for hour-long chapters, and work stealing does not move
    them: a fresh-clone `make book` at 2 jobs had assigned 5 chapters to one worker and 14 to the other, and the
    first sat idle while 10 waited on the second. Handing a worker its next chapter only when it is free keeps
    both busy."""
    from dask.distributed import as_completed

    waiting = list(items)
    name_of = {}

    def start():
        item = waiting.pop(0)
        future = submit(item)
        name_of[future] = name(item)
        return future

    running = as_completed([start() for _ in range(min(max(1, limit), len(waiting)))])
    for future in running:
        try:
            outcome = future.result()
        except Exception as exc:
            outcome = exc
        yield name_of.pop(future), outcome
        if waiting:
            running.add(start())


def result_rows(results: Sequence[RunResult]) -> list[dict]:
    return [asdict(r) for r in results]
