"""The HTML book built from every chapter's `smoke` batch run works in a real browser.

The batch runs (tests/smoke_runs.py) are shared with the thread-count check that follows nbval's run of
each chapter (conftest.py), so each chapter is executed once in batch per test session: the book of
every written chapter plus the toy chapter, built as `repro book` builds it, opened in headless
Chromium without a network.
"""
import json
import shutil
import time
from pathlib import Path

import pytest

from icml26.runner import run_chapter
from smoke_runs import all_smoke_runs, smoke_results

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "_build" / "test-artifacts" / "browser"
"""Where the browser test leaves its screenshots for a person to look at (gitignored, kept after the run)."""


@pytest.fixture(scope="module")
def smoke_html(tmp_path_factory):
    """The HTML book of every written chapter (the `smoke_run`s) and the executed toy chapter."""
    from icml26.bookbuild import jupyter_book_build, stage_book
    from toy_chapter import make_toy_root

    runs, results = all_smoke_runs(tmp_path_factory), smoke_results(tmp_path_factory)
    tmp = tmp_path_factory.mktemp("smoke-html")
    root = make_toy_root(tmp / "root", with_chapters=True)
    results_root = tmp / "results"
    shutil.copytree(results, results_root)
    toy = run_chapter(root / "notebooks" / "toy.ipynb", "smoke", tmp / "runs", results_root)
    runs = {**runs, "toy": toy}
    executed = {slug: Path(r.notebook) for slug, r in runs.items() if r.notebook and Path(r.notebook).exists()}
    stage = stage_book(tmp / "src", "smoke", executed, {slug: r.status for slug, r in runs.items()}, results_root,
                       execute=True, root=root)
    code = jupyter_book_build(stage, tmp / "out", strict=True)
    return {"code": code, "html": tmp / "out" / "_build" / "html", "runs": runs, "executed": executed,
            "results": results_root}


@pytest.mark.slow
def test_built_book_in_a_browser(smoke_html):
    """Every chapter page as a reader sees it offline: no console errors, its figures decoded, its claims
    table with a status per claim, typeset math and no raw TeX, the live figure's note, no parameters
    cell, internal links that resolve; the scorecard's headline and its links to the chapters and back."""
    from book_browser import (CLAIMS_TABLE_JS, FLAG_SUFFIX, IMAGES_JS, LINKS_JS, LIVE_NOTE_JS, OVERFLOW_JS, RAW_TEX,
                              RAW_TEX_JS, STATUSES,
                              PageVisit, broken_links, browser, notebook_figures, notebook_has_math, screenshot, serve)
    from icml26.ledger import PAPER, record_claims, tally
    from icml26.scorecard import verdict_counts
    from icml26.widgets import LIVE_NOTE

    start = time.perf_counter()
    html, runs = smoke_html["html"], smoke_html["runs"]
    problems = [] if smoke_html["code"] == 0 else ["jupyter-book build -W reported warnings (see the build log above)"]
    problems += [f"{slug}: the smoke run failed ({r.error}; log {r.log})" for slug, r in runs.items() if not r.ok]
    note_start = LIVE_NOTE.split(";")[0].strip("*")
    shots = []
    with browser() as context:
        for slug, notebook in sorted(smoke_html["executed"].items()):
            page_file = html / "notebooks" / f"{slug}.html"
            if not page_file.exists():
                problems.append(f"{slug}: no page {page_file}")
                continue
            visit = PageVisit(context, page_file)
            say = lambda text: problems.append(f"{slug}: {text}")  # noqa: E731
            page = visit.page
            figures = notebook_figures(notebook)
            images = page.evaluate(IMAGES_JS)
            if images["decoded"] < figures:
                say(f"{images['decoded']} decoded images on the page, the executed notebook has {figures} figures")
            if images["broken"]:
                say(f"images that do not decode: {images['broken']}")
            results_file = smoke_html["results"] / "smoke" / f"{slug}.json"
            claims = json.loads(results_file.read_text())["claims"] if results_file.exists() else []
            table = page.evaluate(CLAIMS_TABLE_JS)
            if table is None:
                say("no claims table (a table with a verdict column) in the outputs")
            else:
                for row in table:
                    row["status"] = row["status"].split(FLAG_SUFFIX)[0]
                bad = [row for row in table if row["status"] not in STATUSES]
                if bad:
                    say(f"claims table rows without a status: {bad}")
                if [(c["id"], c["status"]) for c in claims] != [(r["id"], r["status"]) for r in table]:
                    say(f"the claims table {[(r['id'], r['status']) for r in table]} is not the results file's "
                        f"{[(c['id'], c['status']) for c in claims]}")
            overflow = page.evaluate(OVERFLOW_JS)
            if overflow > 2:
                say(f"the page runs {overflow} px past the article's width (a table does not fit)")
            if notebook_has_math(notebook) and page.locator("mjx-container").count() == 0:
                say("the notebook has math but the page has no typeset math (MathJax output)")
            raw = page.evaluate(RAW_TEX_JS, list(RAW_TEX))
            if raw:
                say(f"raw TeX in the page text: {raw[:3]}")
            notes = page.evaluate(LIVE_NOTE_JS, note_start)
            if not notes or not all(n["after_image"] for n in notes):
                say(f"the live figure's static figure and the line under it are missing: {notes}")
            code = "\n".join(page.locator("main pre").all_inner_texts())
            if "scale = None" in code or "# Parameters" in code:
                say("the parameters cell (or papermill's injected parameters) shows in the page")
            broken = broken_links(page.evaluate(LINKS_JS))
            if broken:
                say(f"broken internal links: {broken[:5]}")
            if slug == "infer" or (slug == "toy" and not shots):
                shots.append(screenshot(page, ARTIFACTS / f"{slug}-paper-card.png", "#paper-card"))
            visit.close()
            problems += [f"{slug}: {e}" for e in visit.errors]

        # the scorecard: its headline, a link to each chapter that opens it, and the way back
        scorecard = html / "book" / "scorecard.html"
        visit = PageVisit(context, scorecard)
        page = visit.page
        text = page.inner_text("main")
        records = [json.loads(p.read_text()) for p in sorted((smoke_html["results"] / "smoke").glob("*.json"))]
        paper = tally([c for r in records for c in record_claims(r)], PAPER)
        headline = f"at smoke: {verdict_counts(paper)}"
        if headline not in text:
            problems.append(f"scorecard: the headline {headline!r} is not on the page")
        shots.append(screenshot(page, ARTIFACTS / "scorecard.png"))
        if page.evaluate(OVERFLOW_JS) > 2:
            problems.append(f"scorecard: the page runs {page.evaluate(OVERFLOW_JS)} px past the article's width")
        for slug in sorted(smoke_html["executed"]):
            link = page.locator(f"main table a[href$='notebooks/{slug}.html']")
            if not link.count():
                problems.append(f"scorecard: no row links to the {slug} chapter")
                continue
            link.first.click()
            page.wait_for_load_state("load")
            if not page.url.endswith(f"notebooks/{slug}.html") or not page.locator("main h1").count():
                problems.append(f"scorecard: the {slug} link opens {page.url}")
            back = page.locator("a[href$='book/scorecard.html']")
            if not back.count():
                problems.append(f"{slug}: no link back to the scorecard")
                page.goto(scorecard.as_uri())
                continue
            back.first.click()
            page.wait_for_load_state("load")
            if not page.url.endswith("book/scorecard.html"):
                problems.append(f"{slug}: the scorecard link opens {page.url}")
        problems += [f"scorecard: {e}" for e in visit.errors]

        # served over HTTP, as the hosted site is: the same MathJax copy typesets the math
        with serve(html, context) as base:
            for slug in [s for s in ("infer", "toy") if s in smoke_html["executed"]]:
                visit = PageVisit(context, f"{base}notebooks/{slug}.html")
                if not visit.page.locator("mjx-container").count():
                    problems.append(f"{slug} over http: no typeset math")
                visit.close()
                problems += [f"{slug} over http: {e}" for e in visit.errors]
        if context.blocked:
            problems.append(f"pages requested the network: {sorted(set(context.blocked))[:5]}")
    print(f"\nbrowser test: {time.perf_counter() - start:.0f} s; screenshots: {', '.join(map(str, shots))}")
    assert not problems, "\n".join(problems)
