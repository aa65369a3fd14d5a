"""Every chapter's `full` code path runs end to end, on `smoke` sizes (``ICML26_PRESET_SCALE=smoke``),
so that `repro run SLUG --scale full` cannot rot between real `full` runs."""
import json
from pathlib import Path

import pytest

from icml26.runner import run_chapter

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


class _FullCodePath:
    """The full code path of one chapter; `notebook` is set by the subclass made for it below."""

    notebook: Path

    @pytest.mark.slow
    def test_full_code_path_runs_on_smoke_sizes(self, tmp_path, monkeypatch):
        slug = self.notebook.stem
        monkeypatch.setenv("ICML26_PRESET_SCALE", "smoke")
        result = run_chapter(self.notebook, "full", tmp_path / "runs", tmp_path / "results")
        assert result.status == "ok", f"{slug} at full (smoke sizes): {result.error}; log {result.log}"
        record = json.loads((tmp_path / "results" / "full" / f"{slug}.json").read_text())
        assert record["scale"] == "full" and record["preset_scale"] == "smoke" and record["status"] == "ok"
        assert all(c["status"] != "not measured" for c in record["claims"])


for _notebook in NOTEBOOKS:  # one class per chapter (one xdist scope each, so `--dist loadscope` spreads them)
    _name = "TestFullPath_" + _notebook.stem.replace("-", "_")
    globals()[_name] = type(_name, (_FullCodePath,), {"notebook": _notebook, "__doc__": f"The {_notebook.stem} chapter."})
