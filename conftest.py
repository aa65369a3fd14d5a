"""Test-session settings shared by the unit tests and nbval.

Chapter notebooks collected by nbval run at the `smoke` scale unless ICML26_SCALE says otherwise, and
write their results into a scratch folder so a test run never overwrites the book's results. nbval's
kernel runs a chapter as a reader's Jupyter does (not in batch mode, so `live_figure` builds its
panels) on one thread; after the chapter's last cell one more item, `LivePanels`, drives every control
of every panel in that kernel (tests/live_kernel.py) and checks that the chapter's claims table equals
that of its batch run on two threads (tests/smoke_runs.py; contract v2: measured values depend neither
on the machine's load nor on its threads). One execution serves nbval, the live path and the
thread-count check. Under pytest-xdist each worker gets one thread
per core it owns, so two workers do not fight over the two cores.
"""
import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("ICML26_SCALE", "smoke")
os.environ.setdefault("ICML26_BATCH", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("ICML26_RESULTS_DIR", os.path.join(tempfile.gettempdir(), f"icml26-test-results-{os.getpid()}"))
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    os.environ.setdefault("OMP_NUM_THREADS", threads)
    os.environ.setdefault("MKL_NUM_THREADS", threads)


TESTS = Path(__file__).resolve().parent / "tests"
sys.path.insert(0, str(TESTS))  # live_kernel and smoke_runs, for the nbval items below
NBVAL_THREADS = 1


def _is_nbval_file(node) -> bool:
    return type(node).__name__ == "IPyNbFile"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    """Start each nbval kernel (its notebook's setup, before the first cell) live, on `NBVAL_THREADS`
    threads; the test process's own environment is left as it was."""
    nbfile = item.parent
    if not _is_nbval_file(nbfile) or getattr(nbfile, "kernel", None) is not None:
        yield
        return
    from live_kernel import live_kernel_env

    saved = dict(os.environ)
    os.environ.pop("ICML26_BATCH", None)
    os.environ.update(live_kernel_env(NBVAL_THREADS))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def pytest_collection_modifyitems(session, config, items):
    """Append a `LivePanels` item after the last cell of each notebook nbval collected."""
    last = {}
    for index, item in enumerate(items):
        if _is_nbval_file(item.parent):
            last[item.parent] = index
    for nbfile, index in sorted(last.items(), key=lambda pair: -pair[1]):
        items.insert(index + 1, LivePanels.from_parent(nbfile, name="live panels, thread count"))


def run_in_kernel(kernel, code: str, timeout: float = 600) -> str:
    """Execute `code` in nbval's running kernel; the text it printed."""
    client = kernel.kc
    msg_id = client.execute(code, allow_stdin=False)
    text = []
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            text.append(content["text"])
        elif kind == "error":
            text.append("\n".join(content["traceback"]))
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(text)


class LivePanels(pytest.Item):
    """After nbval's run of a chapter: every control of every live panel redraws the figure (in nbval's
    kernel, where the chapter ran as in Jupyter), and the claims table equals the batch run's."""

    def runtest(self):
        from live_kernel import DRIVER, describe, live_problems, parse_report
        from smoke_runs import BATCH_THREADS, claims_table, smoke_results, smoke_run

        notebook = Path(str(self.parent.fspath))
        slug = notebook.stem
        kernel = self.parent.kernel
        assert kernel is not None and kernel.is_alive(), f"{slug}: nbval's kernel is not running"
        results = Path(os.environ["ICML26_RESULTS_DIR"])
        finished = (results / "smoke" / f"{slug}.json").exists()
        error = "" if finished else "no results file: the chapter did not reach ch.finish() (see its failing cells)"
        report = parse_report(run_in_kernel(kernel, DRIVER))
        print(describe(slug, report))
        problems = live_problems(report, error)
        assert not problems, f"{slug}:\n" + "\n".join(problems)
        batch = smoke_run(notebook, self.config._tmp_path_factory)
        assert batch.status == "ok", f"{slug} at smoke in batch, {BATCH_THREADS} threads: {batch.error}; log {batch.log}"
        assert claims_table(results, slug) == claims_table(smoke_results(self.config._tmp_path_factory), slug), \
            f"{slug}: the claims table changed with the thread count ({NBVAL_THREADS} live vs {BATCH_THREADS} in batch)"

    def repr_failure(self, excinfo):
        """The assertion's message, without pytest's and pluggy's frames."""
        if isinstance(excinfo.value, AssertionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, f"{self.parent.name}::{self.name}"
