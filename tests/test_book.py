"""The book builds: a structure check with Sphinx warnings as errors, no execution.

Also the scorecard generator, which fills the scorecard page from a build's results files.
"""
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from icml26.bookbuild import SCORECARD_MARKER, jupyter_book_build, stage_book
from icml26.registry import CHAPTERS
from icml26.scorecard import full_state, load_results, render_markdown, summary_rows

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("book")
    stage = stage_book(tmp / "src", "book", {}, {}, tmp / "results", execute=False)
    code = jupyter_book_build(stage, tmp / "out", strict=True)
    return code, tmp / "out" / "_build" / "html"


def test_structure_build_has_no_warnings(built_book):
    code, html = built_book
    assert code == 0, "jupyter-book build -W failed: see the warnings above"
    assert (html / "index.html").exists()


def test_every_chapter_page_is_built_with_launch_buttons(built_book):
    _, html = built_book
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = html / "notebooks" / f"{notebook.stem}.html"
        assert page.exists(), f"no page for {notebook.name}"
        text = page.read_text()
        assert "mybinder.org/v2/gh/" in text, "Binder launch button missing"
        assert "colab.research.google.com/github/" in text, "Colab launch button missing"
        assert "github.com/icml26-repro/icml26-book" in text, "repository link missing"


def test_bibliography_and_scorecard_pages(built_book):
    _, html = built_book
    assert "Executable Books Community. Jupyter Book" in (html / "book" / "references.html").read_text()
    scorecard = (html / "book" / "scorecard.html").read_text()
    assert "Structure check build" in scorecard


def test_scorecard_page_has_its_marker():
    assert SCORECARD_MARKER in (ROOT / "book" / "scorecard.md").read_text()


def _record(slug, statuses):
    return {
        "slug": slug, "title": f"Title of {slug}", "scale": "book", "seed": 0,
        "status": "failed" if "FAILED" in statuses else "ok",
        "claims": [{"id": f"C{i}", "statement": f"claim {i}", "kind": kind, "paper_value": "p", "paper_source": "Thm 1",
                    "measured_text": "0.5", "comparison": "<= 1", "holds_at": ["book"], "status": s}
                   for i, (s, kind) in enumerate(statuses)],
        "timings": {"total": 12.0}, "git": {"commit": "abcdef1234567"},
    }


def test_scorecard_lists_every_chapter_and_claim(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "lion.json").write_text(json.dumps(_record(
        "lion", [("reproduced", "paper"), ("not reproduced", "paper"), ("reproduced", "check"), ("reproduced", "derived")])))
    (tmp_path / "book" / "mbr.json").write_text(json.dumps(_record("mbr", [("FAILED", "paper"), ("reproduced", "check")])))
    records = load_results(tmp_path, "book")
    rows = {r["slug"]: r for r in summary_rows(records, written={"lion", "mbr"}, run_status={"mbr": "failed"})}
    assert len(rows) == len(CHAPTERS)
    lion = rows["lion"]
    assert lion["status"] == "ok" and (lion["paper reproduced"], lion["paper claims"], lion["paper not reproduced"]) == (1, 2, 1)
    assert (lion["checks passed"], lion["checks"], lion["derived reproduced"], lion["derived claims"]) == (1, 1, 1, 1)
    assert rows["mbr"]["status"] == "run failed" and rows["mbr"]["failed"] == 1 and rows["mbr"]["paper reproduced"] == 0
    assert rows["ecsel"]["status"] == "not yet written"
    text = render_markdown(records, "book", written={"lion", "mbr"})
    # the headline counts paper claims only; checks and derived claims are counted apart
    assert "1 of 3 paper claims reproduced at `book`" in text
    assert "derived from the theory: 1 of 1" in text and "our own checks: 2 of 2 passed" in text
    assert "| C1 | paper | claim 1 | p | Thm 1 | 0.5 | <= 1 | book | **not reproduced** |" in text
    assert "[lion](../notebooks/lion.ipynb)" in text


def _full_record(slug, key, preset_scale="full"):
    record = _record(slug, [("reproduced", "paper"), ("not reproduced", "paper")])
    record.update(scale="full", preset_scale=preset_scale, cache_key=key, counts={})
    return record


def test_scorecard_full_column_is_current_stale_or_invalid(tmp_path):
    from icml26.cachekey import chapter_key

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for slug in ("lion", "mbr", "ecsel"):
        shutil.copy2(ROOT / "notebooks" / "lion.ipynb", notebooks / f"{slug}.ipynb")
    full = {"lion": _full_record("lion", chapter_key(notebooks / "lion.ipynb", "full")),
            "mbr": _full_record("mbr", "an-old-key"),
            "ecsel": _full_record("ecsel", chapter_key(notebooks / "ecsel.ipynb", "full"), preset_scale="smoke")}
    rows = {r["slug"]: r for r in summary_rows({}, {"lion", "mbr", "ecsel"}, full_records=full, notebooks_dir=notebooks)}
    assert rows["lion"]["full"]["state"] == "current" and rows["lion"]["full"]["reproduced"] == 1
    assert rows["mbr"]["full"]["state"] == "stale"
    assert rows["ecsel"]["full"]["state"] == "invalid"  # a structure run is never published as a result
    text = render_markdown({}, "book", {"lion", "mbr", "ecsel"}, full_records=full, notebooks_dir=notebooks)
    assert "1/2 @ abcdef1234" in text and "(**stale**)" in text
    # editing the notebook's code makes the published full result stale
    nb = nbformat.read(notebooks / "lion.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
    nbformat.write(nb, notebooks / "lion.ipynb")
    assert full_state("lion", full["lion"], notebooks)["state"] == "stale"


def test_performance_page_from_bench_results(tmp_path, monkeypatch):
    from icml26.perfpage import render_performance
    from icml26.timing import record_bench

    assert "No benchmark results" in render_performance(tmp_path / "bench")
    monkeypatch.setenv("ICML26_BENCH_DIR", str(tmp_path / "bench"))
    record_bench("lion", "step", "ours", 0.002, "lion-pytorch", 0.004, rounds=5)
    record_bench("lion", "other", "ours", 0.003, "peer", 0.001, rounds=5, note="slower here")
    with pytest.raises(ValueError, match="positive"):
        record_bench("lion", "bad", "ours", float("nan"), "peer", 0.001, rounds=5)
    with pytest.raises(KeyError):
        record_bench("no-such", "k", "ours", 1.0, "peer", 1.0, rounds=1)
    record = json.loads((tmp_path / "bench" / "lion.json").read_text())
    assert set(record["comparisons"]) == {"step", "other"} and record["comparisons"]["step"]["ratio"] == 0.5
    assert "cpus" in record["comparisons"]["step"]["machine"]
    page = render_performance(tmp_path / "bench")
    assert "| **0.5** |" in page and "| **3** |" in page and "slower here" in page


def test_committed_bench_results_cover_every_benchmark():
    bench = {p.stem.removeprefix("bench_").replace("_", "-") for p in (ROOT / "benchmarks").glob("bench_*.py")}
    recorded = {p.stem for p in (ROOT / "results" / "bench").glob("*.json")}
    assert bench <= recorded, f"make bench has not recorded {sorted(bench - recorded)} (results/bench/ is committed)"


def test_executed_book_with_glue_and_claims_builds_without_warnings(tmp_path):
    """The `make book` path end to end on a one-chapter toy book: papermill run, staging, scorecard, -W build."""
    import shutil

    import nbformat
    import yaml

    from icml26.runner import run_chapter

    root = tmp_path / "toy"
    shutil.copytree(ROOT / "book", root / "book")
    shutil.copy2(ROOT / "_config.yml", root / "_config.yml")
    toc = {"format": "jb-book", "root": "book/intro", "parts": [
        {"caption": "Using this book", "chapters": [{"file": "book/running"}, {"file": "book/methodology"}, {"file": "book/scorecard"}, {"file": "book/performance"}]},
        {"caption": "Toy", "chapters": [{"file": "notebooks/toy"}]},
        {"caption": "Back matter", "chapters": [{"file": "book/references"}]}]}
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (root / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("scale = None")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A toy chapter"),
        params,
        nbformat.v4.new_code_cell(
            "import numpy as np, torch, icml26\n"
            "import matplotlib.pyplot as plt\n"
            "ch = icml26.Chapter('toy', scale=scale, title='Toy', presets={s: {} for s in icml26.SCALES})\n"
            "ch.glue('np_value', np.float64(0.125))\nch.glue('torch_value', torch.tensor(2.5))\n"
            "ch.glue('text_value', 1 / 3, fmt='{:.2f}')\n"
            "plt.plot([1, 2], [3, 4]); plt.xlabel('x'); plt.show()"),
        nbformat.v4.new_markdown_cell("Values {glue:text}`np_value:.3f`, {glue:text}`torch_value:.1f` and {glue:md}`text_value`."),
        nbformat.v4.new_code_cell(
            "ch.declare('C1', 'an eighth', kind='paper', paper='1/8', source='toy', "
            "check=icml26.close_to(0.125, atol=1e-12), holds_at=icml26.SCALES)\nch.paper_card()"),
        nbformat.v4.new_code_cell("ch.measure('C1', np.float64(0.125))\nch.finish()"),
    ]
    nbformat.write(nb, root / "notebooks" / "toy.ipynb")

    result = run_chapter(root / "notebooks" / "toy.ipynb", "smoke", tmp_path / "runs", tmp_path / "results")
    assert result.status == "ok", result.error
    stage = stage_book(tmp_path / "src", "smoke", {"toy": Path(result.notebook)}, {"toy": "ok"},
                       tmp_path / "results", execute=True, root=root)
    assert jupyter_book_build(stage, tmp_path / "out", strict=True) == 0, "the executed toy book has Sphinx warnings"
    html = tmp_path / "out" / "_build" / "html"
    page = (html / "notebooks" / "toy.html").read_text()
    assert "0.125" in page and "2.5" in page and "0.33" in page
    scorecard = (html / "book" / "scorecard.html").read_text()
    assert "an eighth" in scorecard and "1 of 1 paper claims reproduced" in scorecard
