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
from toy_chapter import make_toy_root

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
    """Binder and Colab open the chapter's own notebook: the path in each launch link exists in the checkout."""
    import re
    from urllib.parse import parse_qs, unquote, urlparse

    _, html = built_book
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = html / "notebooks" / f"{notebook.stem}.html"
        assert page.exists(), f"no page for {notebook.name}"
        text = page.read_text()
        assert "github.com/icml26-repro/icml26-book" in text, "repository link missing"
        binder = re.findall(r'href="(https://mybinder\.org/v2/gh/[^"]+)"', text)
        colab = re.findall(r'href="(https://colab\.research\.google\.com/github/[^"]+)"', text)
        assert binder, f"{notebook.stem}: Binder launch button missing"
        assert not colab, f"{notebook.stem}: a Colab button, where nothing installs icml26 (book/running.md)"
        expected = f"notebooks/{notebook.name}"
        for url in binder:
            parsed = urlparse(url.replace("&amp;", "&"))
            assert parsed.path.startswith("/v2/gh/icml26-repro/icml26-book/main"), url
            target = unquote(parse_qs(parsed.query)["urlpath"][0]).split("/", 1)[1]  # tree/<path>
            assert target == expected and (ROOT / target).exists(), f"Binder opens {target!r}, not {expected!r}"


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
    # a v2 file (no "contract"): its paper claim that was not reproduced reads as inconclusive (no power shown)
    assert lion["status"] == "ok" and (lion["paper"]["reproduced"], lion["paper"]["total"]) == (1, 2)
    assert (lion["paper"]["not reproduced"], lion["paper"]["inconclusive"]) == (0, 1)
    assert (lion["check"]["reproduced"], lion["check"]["total"], lion["derived"]["reproduced"], lion["derived"]["total"]) == (1, 1, 1, 1)
    assert rows["mbr"]["status"] == "run failed" and rows["mbr"]["flagged"] == 1 and rows["mbr"]["paper"]["reproduced"] == 0
    assert rows["ecsel"]["status"] == "not yet written"
    text = render_markdown(records, "book", written={"lion", "mbr"})
    # the headline counts paper claims only, by verdict; checks and derived claims are counted apart
    assert "at `book`: 1 / 0 / 2 / 0 of 3" in text
    assert "derived from the theory at `book`: 1 of 1" in text and "our own checks: 2 of 2 passed" in text
    assert "| C1 | paper | claim 1 | p (Thm 1) | 0.5 | <= 1 | **inconclusive** (v2): no power shown (a verdict from before contract v3) |" in text
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
    assert rows["lion"]["full"]["inconclusive"] == 1  # a v2 "not reproduced": no power was shown
    assert rows["mbr"]["full"]["state"] == "stale"
    assert rows["ecsel"]["full"]["state"] == "invalid"  # a structure run is never published as a result
    text = render_markdown({}, "book", {"lion", "mbr", "ecsel"}, full_records=full, notebooks_dir=notebooks)
    assert "1 / 0 / 1 / 0 of 2 @ abcdef1234 (v2)" in text and "(**stale**)" in text
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
    from icml26.runner import run_chapter
    from icml26.widgets import LIVE_NOTE

    root = make_toy_root(tmp_path / "toy")
    result = run_chapter(root / "notebooks" / "toy.ipynb", "smoke", tmp_path / "runs", tmp_path / "results")
    assert result.status == "ok", result.error
    stage = stage_book(tmp_path / "src", "smoke", {"toy": Path(result.notebook)}, {"toy": "ok"},
                       tmp_path / "results", execute=True, root=root)
    assert jupyter_book_build(stage, tmp_path / "out", strict=True) == 0, "the executed toy book has Sphinx warnings"
    html = tmp_path / "out" / "_build" / "html"
    page = (html / "notebooks" / "toy.html").read_text()
    assert "0.125" in page and "2.5" in page and "0.33" in page
    # the parameters cell and papermill's injected one are not shown; the live figure's note is
    assert "scale = None" not in page and "# Parameters" not in page and "injected-parameters" not in page
    assert LIVE_NOTE.split(":")[0].strip("*") in page and "<code class=\"docutils literal notranslate\"><span class=\"pre\">slope</span></code>" in page
    # math goes through the MathJax copy served by the build
    assert '<script defer="defer" src="../_static/mathjax/tex-chtml.js' in page, "MathJax must come from the build"
    assert "cdn.jsdelivr.net" not in page and "require.min.js" not in page, "the page loads scripts from a CDN"
    # icml26.sphinxext: sphinx-thebe's inline script once (a second copy throws in the browser), a valid first-visit mode
    assert page.count("const THEBE_JS_URL") == 1 and '<body data-default-mode="auto">' in page
    assert (html / "_static" / "mathjax" / "tex-chtml.js").exists()
    assert (html / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2" / "MathJax_Main-Regular.woff").exists()
    scorecard = (html / "book" / "scorecard.html").read_text()
    assert "an eighth" in scorecard and "at <code class=\"docutils literal notranslate\"><span class=\"pre\">smoke</span></code>: 1 / 0 / 0 / 0 of 1" in scorecard


def test_a_failed_chapter_is_staged_as_a_failed_page_and_the_book_still_builds(tmp_path):
    """A chapter whose run failed has no glue values: its page says it failed (with the error) and shows
    its prose values as not computed, and the strict build of the whole book still passes."""
    from icml26.bookbuild import NOT_COMPUTED

    import nbformat

    root = make_toy_root(tmp_path / "toy")
    stripped = root / "notebooks" / "toy.ipynb"  # never executed: every glue key is missing
    nb = nbformat.read(stripped, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"][-1]  # ch.finish()'s cell
    code.outputs = [nbformat.v4.new_output("error", ename="ClaimFailed", evalue="C1 failed", traceback=[
        "\x1b[0;31m---------\x1b[0m", "\x1b[0;31mClaimFailed\x1b[0m                 Traceback (most recent call last)",
        "Cell \x1b[0;32mIn[18], line 48\x1b[0m", "     44 ch.finish()", "",
        "\x1b[0;31mClaimFailed\x1b[0m: 1 claim(s) failed:\n  C1: measured 0.6 \u00b1 0.2 (n=3), test >= 2"])]
    nbformat.write(nb, stripped)  # a traceback with colour codes and a non-ASCII character, as ch.finish() raises it
    stage = stage_book(tmp_path / "src", "smoke", {"toy": stripped}, {"toy": "failed"}, tmp_path / "results",
                       execute=True, root=root, run_errors={"toy": "RuntimeError: boom in `cell` [3]"})
    assert jupyter_book_build(stage, tmp_path / "out", strict=True) == 0, "a failed chapter broke the book build"
    page = (tmp_path / "out" / "_build" / "html" / "notebooks" / "toy.html").read_text()
    assert "This chapter <strong>failed</strong>" in page and "RuntimeError:" in page and "boom" in page
    assert NOT_COMPUTED.strip("*") in page
    assert "measured 0.6 \u00b1 0.2 (n=3)" in page and "\x1b" not in page  # the traceback, as plain text


def test_staging_hides_the_parameters_cells(tmp_path):
    """The staged copies tag the parameters and injected-parameters cells remove-cell; the sources are untouched."""
    import nbformat

    from icml26.bookbuild import stage_notebook

    nb = nbformat.v4.new_notebook()
    params, injected, plain = (nbformat.v4.new_code_cell(s) for s in ("scale = None", "# Parameters\nscale = 'smoke'\n", "x = 1"))
    params.metadata["tags"] = ["parameters"]
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells = [params, injected, plain]
    nbformat.write(nb, tmp_path / "source.ipynb")
    before = (tmp_path / "source.ipynb").read_text()
    stage_notebook(tmp_path / "source.ipynb", tmp_path / "staged.ipynb")
    staged = nbformat.read(tmp_path / "staged.ipynb", as_version=4)
    assert [c.metadata.get("tags", []) for c in staged.cells] == [
        ["parameters", "remove-cell"], ["injected-parameters", "remove-cell"], []]
    assert (tmp_path / "source.ipynb").read_text() == before


def test_chapter_pages_do_not_show_the_parameters_cell(built_book):
    _, html = built_book
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = html / "notebooks" / f"{notebook.stem}.html"
        assert page.exists(), f"no page for {notebook.name}"
        text = page.read_text()
        assert "tag_parameters" not in text and "scale = None" not in text and "scale</span> <span class=\"o\">=</span> <span class=\"kc\">None" not in text, \
            f"{notebook.stem}: the parameters cell shows in the HTML"


def test_a_crashed_page_keeps_the_values_its_run_glued():
    """Only the glue keys the crashed run never produced become "not computed". (A run that completed with
    flagged claims is staged as its page of verdicts: tests/test_contract_v3.py.)"""
    import nbformat

    from icml26.bookbuild import NOT_COMPUTED, _mark_failed

    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("ch.glue('a', 0.5)")
    code.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": "0.5"},
                                           metadata={"scrapbook": {"name": "a", "mime_prefix": "x/"}})]
    nb.cells = [nbformat.v4.new_markdown_cell("# T"), code,
                nbformat.v4.new_markdown_cell("kept {glue:text}`a:.3f`, lost {glue:text}`b:.2f` and {glue:md}`c`")]
    _mark_failed(nb, "RuntimeError: boom")
    prose = nb.cells[-1].source
    assert "{glue:text}`a:.3f`" in prose and prose.count(NOT_COMPUTED) == 2
    assert "results are missing" in nb.cells[1].source and "boom" in nb.cells[1].source
