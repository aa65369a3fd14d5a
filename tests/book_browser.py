"""The built HTML book in a real browser: headless Chromium from Debian's packages, driven by
Playwright's Python API (its own browser downloads are never used: `executable_path` points at the
system browser, which `.ci/run` installs).

Pages are opened from disk (``file://``) with every other request blocked, which is how a reader
opens a downloaded build without a network: anything the page would still fetch from a CDN fails,
shows as a console error, and fails the test.
"""
from __future__ import annotations

import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser")
INSTALL_HINT = ("headless Chromium is required for the browser test of the built book: run .ci/run once "
                "(it installs Debian's `chromium`), or `apt-get install chromium`, or point ICML26_CHROMIUM at a "
                "Chromium binary")
STATUSES = {"reproduced", "not reproduced", "inconclusive", "not reached"}
FLAG_SUFFIX = " (flagged"
RAW_TEX = ("\\(", "\\[", "\\begin{")

# Visible text outside code, and what raw TeX delimiters it still holds.
RAW_TEX_JS = """(markers) => {
  const walker = document.createTreeWalker(document.querySelector('main') || document.body, NodeFilter.SHOW_TEXT);
  const found = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest('pre, code, script, style, textarea, mjx-container, .highlight')) continue;
    const text = node.textContent;
    if (markers.some(m => text.includes(m))) found.push(text.trim().slice(0, 120));
  }
  return found;
}"""

# The images of the notebook outputs: how many decoded (non-zero size) and which did not.
IMAGES_JS = """() => {
  const images = Array.from(document.querySelectorAll('main .cell_output img, main .output img'));
  return {decoded: images.filter(i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0).length,
          broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src'))};
}"""

# How far the article runs past its own width (px): a table wider than the page must scroll inside it
# (icml26/static/icml26.css), not push the page sideways.
OVERFLOW_JS = """() => {
  const article = document.querySelector('.bd-article') || document.querySelector('main');
  return article.scrollWidth - article.clientWidth;
}"""

# The last table in the outputs that has a `verdict` column (the claims table): its row ids and verdicts.
CLAIMS_TABLE_JS = """() => {
  const tables = Array.from(document.querySelectorAll('main .cell_output table, main .output table'));
  const withStatus = tables.filter(t => Array.from(t.querySelectorAll('thead th')).some(th => th.textContent.trim() === 'verdict'));
  if (!withStatus.length) return null;
  const table = withStatus[withStatus.length - 1];
  const header = Array.from(table.querySelector('thead tr').querySelectorAll('th')).map(th => th.textContent.trim());
  const column = header.indexOf('verdict');
  return Array.from(table.querySelectorAll('tbody tr')).map(tr => {
    const cells = Array.from(tr.querySelectorAll('th, td')).map(c => c.textContent.trim());
    return {id: cells[0], status: cells[column]};
  });
}"""

# Every link of the page that stays in the book: its resolved URL.
LINKS_JS = """() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href).filter(h => h.startsWith('file:'))"""

# The live figure's note: its text, and whether the output just before it in the same cell is a decoded image.
LIVE_NOTE_JS = """(start) => {
  const found = [];
  for (const note of document.querySelectorAll('main .cell_output > *')) {
    if (!note.textContent.trim().startsWith(start)) continue;
    const previous = note.previousElementSibling;
    const img = previous && (previous.tagName === 'IMG' ? previous : previous.querySelector('img'));
    found.push({text: note.textContent.trim(), after_image: !!(img && img.naturalWidth > 0)});
  }
  return found;
}"""


def chromium_path() -> str:
    """The system Chromium; the test fails (never skips) when there is none."""
    candidate = os.environ.get("ICML26_CHROMIUM") or next(filter(None, map(shutil.which, CHROMIUM_CANDIDATES)), None)
    if not candidate or not Path(candidate).exists():
        pytest.fail(INSTALL_HINT, pytrace=False)
    return candidate


@contextmanager
def browser():
    """A headless system Chromium under Playwright, with a context that blocks all but file: and data: URLs."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # part of the [test] extra: make install brings it
        pytest.fail("playwright (Python) is not installed: run `make install`", pytrace=False)
    executable = chromium_path()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            context = chromium.new_context(viewport={"width": 1280, "height": 1000})
            blocked: list[str] = []
            allowed = ["file:", "data:", "blob:"]  # `serve` adds its own loopback origin

            def offline(route):
                if route.request.url.startswith(tuple(allowed)):
                    route.continue_()
                else:
                    blocked.append(route.request.url)
                    route.abort("internetdisconnected")

            context.route("**/*", offline)
            context.blocked, context.allowed = blocked, allowed
            yield context
        finally:
            chromium.close()


@contextmanager
def serve(folder: Path, context):
    """Serve `folder` over HTTP on the loopback interface (as the hosted site serves the book); its base URL."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    context.allowed.append(base)
    try:
        yield base
    finally:
        context.allowed.remove(base)
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class PageVisit:
    """One page opened in the browser, with every console error, page error and failed request it caused."""

    def __init__(self, context, path: Path | str):
        self.path = path
        self.errors: list[str] = []
        self.page = context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url} ({r.failure})"))
        self.page.goto(path if isinstance(path, str) else path.as_uri(), wait_until="load")
        self.typeset()

    def typeset(self) -> int:
        """Wait for MathJax (when the page loads it) to finish; the number of typeset formulas."""
        if self.page.locator("script[src*='mathjax']").count():
            self.page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000)
            self.page.evaluate("() => MathJax.startup.promise")
        return self.page.locator("mjx-container").count()

    def close(self):
        self.page.close()


def broken_links(urls: list[str]) -> list[str]:
    """Book-internal links whose file, or whose #anchor in that file, does not exist."""
    broken, texts = [], {}
    for url in sorted(set(urls)):
        parsed = urlparse(url)
        target = Path(unquote(parsed.path))
        if not target.exists():
            broken.append(url)
            continue
        if parsed.fragment and target.suffix == ".html":
            text = texts.setdefault(target, target.read_text(errors="replace"))
            anchor = unquote(parsed.fragment)
            if f'id="{anchor}"' not in text and f'name="{anchor}"' not in text:
                broken.append(url)
    return broken


def screenshot(page, path: Path, selector: str | None = None) -> Path:
    """A viewport-sized screenshot, scrolled to `selector` when given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if selector and page.locator(selector).count():
        page.locator(selector).first.scroll_into_view_if_needed()
        page.evaluate("(s) => document.querySelector(s).scrollIntoView({block: 'start'})", selector)
    page.screenshot(path=str(path))
    return path


def notebook_figures(notebook: Path) -> int:
    """The figures an executed notebook shows: its image/png outputs, in cells the HTML keeps."""
    import nbformat

    hidden = {"remove-cell", "remove-output"}
    return sum("image/png" in output.get("data", {})
               for cell in nbformat.read(notebook, as_version=4).cells
               if cell.cell_type == "code" and not hidden & set(cell.metadata.get("tags", []))
               for output in cell.get("outputs", []))


MATH_MARKUP = re.compile(r"\$[^$\s][^$]*\$|\\\(|\\\[|\\begin\{")


def notebook_has_math(notebook: Path) -> bool:
    """Whether the notebook's Markdown cells (or LaTeX outputs) hold math that MathJax must typeset."""
    import nbformat

    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type == "markdown" and MATH_MARKUP.search(cell.source):
            return True
        if cell.cell_type == "code" and any("text/latex" in o.get("data", {}) for o in cell.get("outputs", [])):
            return True
    return False
