"""Every chapter's `full` code path runs (on `smoke` sizes), and `smoke` gives the same claims table
whatever the thread count (contract v2: a chapter's measured values do not depend on the machine's
load or its torch/BLAS threads).

nbval executes each notebook at `smoke` separately (tests/../notebooks); these runs go through the
same papermill runner as `repro run`.
"""
import json
from pathlib import Path

import pytest

from icml26.runner import run_chapter

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _claims(results_root: Path, scale: str, slug: str) -> list[dict]:
    return json.loads((results_root / scale / f"{slug}.json").read_text())["claims"]


@pytest.fixture
def structure_env(monkeypatch):
    monkeypatch.setenv("ICML26_PRESET_SCALE", "smoke")


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_full_code_path_runs_on_smoke_sizes(notebook, tmp_path, structure_env):
    result = run_chapter(notebook, "full", tmp_path / "runs", tmp_path / "results")
    assert result.status == "ok", f"{notebook.stem} at full (smoke sizes): {result.error}; log {result.log}"
    record = json.loads((tmp_path / "results" / "full" / f"{notebook.stem}.json").read_text())
    assert record["scale"] == "full" and record["preset_scale"] == "smoke"
    assert all(c["status"] != "not measured" for c in record["claims"])


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_smoke_claims_do_not_depend_on_the_thread_count(notebook, tmp_path, monkeypatch):
    monkeypatch.delenv("ICML26_PRESET_SCALE", raising=False)
    tables = []
    for threads in (1, 2):
        root = tmp_path / f"threads{threads}"
        result = run_chapter(notebook, "smoke", root / "runs", root / "results", threads=threads)
        assert result.status == "ok", f"{notebook.stem} at smoke, {threads} thread(s): {result.error}"
        tables.append([(c["id"], c["status"], c["measured_text"], json.dumps(c["measured"])) for c in
                       _claims(root / "results", "smoke", notebook.stem) if not c["timing"]])
    assert tables[0] == tables[1], "the claims table changed with the thread count"
