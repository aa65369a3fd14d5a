"""Every chapter at `smoke` through the papermill runner: its claims table does not depend on the thread
count (contract v2: measured values depend neither on the machine's load nor on its torch/BLAS threads).

`smoke_book` executes every written chapter once at `smoke` with two threads per kernel; the
determinism test re-runs each with one thread and compares. The same executed notebooks can serve
any test that needs a built book of real chapters (one execution per chapter, not one per test).
nbval executes each notebook at `smoke` separately (testpaths include notebooks/).
"""
import json
from pathlib import Path

import pytest

from icml26.runner import run_chapter

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def claims_table(results_root: Path, slug: str) -> list[tuple]:
    """(id, status, measured text, measured value) of every claim but timing ratios."""
    claims = json.loads((results_root / "smoke" / f"{slug}.json").read_text())["claims"]
    return [(c["id"], c["status"], c["measured_text"], json.dumps(c["measured"])) for c in claims if not c["timing"]]


@pytest.fixture(scope="module")
def smoke_book(tmp_path_factory):
    """Every chapter executed at `smoke`, two threads per kernel: {slug: RunResult}, and the results root."""
    root = tmp_path_factory.mktemp("smoke-book")
    runs = {nb.stem: run_chapter(nb, "smoke", root / "runs", root / "results", threads=2) for nb in NOTEBOOKS}
    return runs, root / "results"


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_smoke_claims_do_not_depend_on_the_thread_count(notebook, smoke_book, tmp_path):
    runs, results = smoke_book
    two = runs[notebook.stem]
    assert two.status == "ok", f"{notebook.stem} at smoke, 2 threads: {two.error}; log {two.log}"
    one = run_chapter(notebook, "smoke", tmp_path / "runs", tmp_path / "results", threads=1)
    assert one.status == "ok", f"{notebook.stem} at smoke, 1 thread: {one.error}; log {one.log}"
    assert claims_table(tmp_path / "results", notebook.stem) == claims_table(results, notebook.stem), \
        "the claims table changed with the thread count"
