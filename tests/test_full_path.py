"""Every chapter's `full` code path runs end to end, on `smoke` sizes (``ICML26_PRESET_SCALE=smoke``),
so that `repro run SLUG --scale full` cannot rot between real `full` runs."""
import json
from pathlib import Path

import pytest

from icml26.runner import run_chapter

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_full_code_path_runs_on_smoke_sizes(notebook, tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_PRESET_SCALE", "smoke")
    result = run_chapter(notebook, "full", tmp_path / "runs", tmp_path / "results")
    assert result.status == "ok", f"{notebook.stem} at full (smoke sizes): {result.error}; log {result.log}"
    record = json.loads((tmp_path / "results" / "full" / f"{notebook.stem}.json").read_text())
    assert record["scale"] == "full" and record["preset_scale"] == "smoke" and record["status"] == "ok"
    assert all(c["status"] != "not measured" for c in record["claims"])
