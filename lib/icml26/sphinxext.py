"""A Sphinx extension for the book's HTML (listed in `_config.yml`): pages that load cleanly in a browser.

- Each script is included once per page. sphinx-thebe 0.3.1 adds its inline configuration script
  (``const THEBE_JS_URL = ...``) from an ``env-before-read-docs`` handler, to the registry and to the
  builder, once with the file name ``None`` and once ``''``, so Sphinx 7.4 does not see that they are
  the same and every page gets two copies: the second throws "Identifier 'THEBE_JS_URL' has already been
  declared" on every page.
- Tables fit the page (``static/icml26.css``): wide ones scroll inside the article instead of running
  off it, and long cells wrap (the scorecard, the claims tables, the paper cards).
- The theme's first-visit colour mode is ``auto`` (the pydata theme otherwise logs "Got invalid theme
  mode" as a console error on a reader's first visit, before anything is stored).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

STATIC = Path(__file__).resolve().parent / "static"


def _script_key(script: Any) -> tuple:
    """What a script is, whatever its priority: its file ('' or None for an inline one) and attributes (the body)."""
    attributes = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), tuple(sorted((str(k), str(v)) for k, v in attributes.items()))


def dedupe_scripts(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def set_default_mode(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    if not context.get("default_mode"):
        context["default_mode"] = "auto"


def add_static_path(app, config) -> None:
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("config-inited", add_static_path)
    app.add_css_file("icml26.css")
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.connect("html-page-context", set_default_mode)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
