"""The book builds: a structure check with Sphinx warnings as errors, no execution.

Also the scorecard generator, which fills the scorecard page from a build's results files.
"""
import json
from pathlib import Path

import pytest

from icml26.bookbuild import SCORECARD_MARKER, jupyter_book_build, stage_book
from icml26.registry import CHAPTERS
from icml26.scorecard import load_results, render_markdown, summary_rows

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
        "claims": [{"id": f"C{i}", "statement": f"claim {i}", "paper_value": "p", "paper_source": "Thm 1",
                    "measured_text": "0.5", "comparison": "<= 1", "holds_at": ["book"], "status": s}
                   for i, s in enumerate(statuses)],
        "timings": {"total": 12.0}, "git": {"commit": "abcdef1234567"},
    }


def test_scorecard_lists_every_chapter_and_claim(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "lion.json").write_text(json.dumps(_record("lion", ["reproduced", "not reproduced"])))
    (tmp_path / "book" / "mbr.json").write_text(json.dumps(_record("mbr", ["FAILED"])))
    records = load_results(tmp_path, "book")
    rows = {r["slug"]: r for r in summary_rows(records, written={"lion", "mbr"}, run_status={"mbr": "failed"})}
    assert len(rows) == len(CHAPTERS)
    assert rows["lion"]["status"] == "ok" and rows["lion"]["reproduced"] == 1 and rows["lion"]["not reproduced"] == 1
    assert rows["mbr"]["status"] == "run failed" and rows["mbr"]["failed"] == 1
    assert rows["ecsel"]["status"] == "not yet written"
    text = render_markdown(records, "book", written={"lion", "mbr"})
    assert "1 of 3 claims reproduced" in text
    assert "| C1 | claim 1 | p | Thm 1 | 0.5 | <= 1 | book | **not reproduced** |" in text
