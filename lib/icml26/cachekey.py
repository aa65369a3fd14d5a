"""The cache key of a chapter run: a content hash of everything its results depend on.

The key covers the notebook's code cells and kernel, the chapter's subpackage ``icml26/<pkg>/``, the
shared runtime modules, the pinned constraints and the scale. `repro book` reuses an executed chapter
whose key is unchanged; the scorecard marks a published `full` result *stale* when the key it was
computed with differs from the current one. (jupyter-cache keys on code cells only, so it would miss a
change in the library; this key does not.)
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .paths import repo_root
from .registry import SLUGS, chapter_info

PACKAGE_DIR = Path(__file__).resolve().parent
ORCHESTRATION_MODULES = {"__main__.py", "cli.py", "runner.py", "bookbuild.py", "scorecard.py", "cachekey.py", "perfpage.py",
                         "sphinxext.py"}
"""Modules that run or report chapters but are not imported by them: editing them re-executes nothing."""


def _chapter_package_dir(slug: str) -> Path | None:
    if slug not in SLUGS:
        return None
    folder = PACKAGE_DIR / chapter_info(slug).package
    return folder if folder.is_dir() else None


def chapter_key(notebook: Path, scale: str) -> str:
    """A content hash of everything a chapter's executed outputs depend on (module docstring)."""
    import nbformat

    notebook = Path(notebook)
    digest = hashlib.sha256()
    digest.update(f"scale={scale}\n".encode())
    nb = nbformat.read(notebook, as_version=4)
    digest.update(json.dumps(nb.metadata.get("kernelspec", {}), sort_keys=True).encode())
    for cell in nb.cells:
        if cell.cell_type == "code":
            digest.update(cell.source.encode() + b"\0")
    sources = sorted(p for p in PACKAGE_DIR.glob("*.py") if p.name not in ORCHESTRATION_MODULES)
    package = _chapter_package_dir(notebook.stem)
    if package is not None:
        sources += sorted(package.rglob("*.py"))
    constraints = repo_root() / "constraints.txt"
    if constraints.exists():
        sources.append(constraints)
    for path in sources:  # names relative to the checkout, so a key does not depend on where it lies
        name = path.relative_to(PACKAGE_DIR.parent) if path.is_relative_to(PACKAGE_DIR.parent) else path.name
        digest.update(str(name).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
