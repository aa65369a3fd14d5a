"""Each chapter executed once per test session at `smoke` in batch with two threads per kernel, whichever
pytest-xdist worker asks for it first, and shared by every test that needs it: the thread-count check
after nbval's run of the chapter (conftest.py) and the browser test of the built book
(tests/test_chapter_runs.py). The runs live in a folder all workers of the session see, one lock per
chapter, so no chapter is executed twice and the two workers share the work.
"""
import dataclasses
import fcntl
import json
import os
from pathlib import Path

from icml26.runner import RunResult, run_chapter

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BATCH_THREADS = 2
"""OpenMP/MKL threads of the batch runs (nbval's kernels get one: the claims must not depend on it)."""


def claims_table(results_root: Path, slug: str) -> list[tuple]:
    """(id, status, measured text, measured value) of every claim but timing ratios."""
    claims = json.loads((Path(results_root) / "smoke" / f"{slug}.json").read_text())["claims"]
    return [(c["id"], c["status"], c["measured_text"], json.dumps(c["measured"])) for c in claims if not c["timing"]]


def session_dir(tmp_path_factory) -> Path:
    """A folder of this test session that every xdist worker sees (the workers' common base), else the
    session's own base folder."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def smoke_results(tmp_path_factory) -> Path:
    """The results root of the shared batch runs (their claims are under ``smoke/``)."""
    return session_dir(tmp_path_factory) / "smoke-book" / "results"


def smoke_run(notebook: Path, tmp_path_factory, wait: bool = True) -> RunResult | None:
    """The chapter executed at `smoke` in batch with `BATCH_THREADS` threads, once per session.

    With ``wait=False`` returns None instead of waiting while another worker is running it."""
    root = session_dir(tmp_path_factory) / "smoke-book"
    root.mkdir(exist_ok=True)
    record = root / f"{Path(notebook).stem}.run.json"
    with open(root / f"{Path(notebook).stem}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return None
        if not record.exists():
            result = run_chapter(notebook, "smoke", root / "runs", root / "results", threads=BATCH_THREADS)
            record.write_text(json.dumps(dataclasses.asdict(result)))
    return RunResult(**json.loads(record.read_text()))


def all_smoke_runs(tmp_path_factory) -> dict[str, RunResult]:
    """Every chapter's `smoke_run`: first those no other worker is running, then a wait for the rest."""
    runs: dict[str, RunResult] = {}
    for wait in (False, True):
        for notebook in NOTEBOOKS:
            if notebook.stem not in runs and (run := smoke_run(notebook, tmp_path_factory, wait)) is not None:
                runs[notebook.stem] = run
    return runs
