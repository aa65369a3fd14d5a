"""Notebook and repository hygiene: what every chapter must satisfy before it can enter the book."""
import re
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml

from icml26.registry import CHAPTERS, PARTS, SLUGS, chapter_info

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ANATOMY = ["Paper card", "Theory", "Method", "Experiments", "Interactive", "Claims", "What is and is not reproduced"]


def toc_files() -> list[tuple[str, str]]:
    """(part caption, file) for every entry of _toc.yml."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [(part["caption"], entry["file"]) for part in toc["parts"] for entry in part["chapters"]]


def test_there_is_at_least_one_chapter():
    assert NOTEBOOKS, "no chapter notebooks in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
class TestNotebook:
    def test_is_a_registered_chapter(self, path):
        assert path.stem in SLUGS, f"{path.name} is not in icml26.registry.CHAPTERS"

    def test_outputs_are_stripped(self, path):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                assert not cell.outputs, f"cell {i} has stored outputs: strip them (nbstripout)"
                assert cell.execution_count is None, f"cell {i} has an execution count"

    def test_python3_kernel(self, path):
        spec = nbformat.read(path, as_version=4).metadata.get("kernelspec", {})
        assert spec.get("name") == "python3" and spec.get("language") == "python"

    def test_one_parameters_cell_defining_scale(self, path):
        nb = nbformat.read(path, as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, "exactly one cell must be tagged 'parameters'"
        assert re.search(r"^scale\s*=\s*None\b", tagged[0].source, re.M), "the parameters cell must set `scale = None`"

    def test_uses_the_runtime_and_finishes_with_the_ledger(self, path):
        code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert re.search(rf"Chapter\(\s*[\"']{re.escape(path.stem)}[\"']", code), "the chapter must create icml26.Chapter(<its slug>)"
        assert "scale=scale" in code.replace(" ", ""), "the Chapter must receive the papermill `scale` parameter"
        assert ".finish()" in code, "the chapter must end with ch.finish() (writes results, shows the claims table)"
        assert ".measure(" in code, "a chapter records its measurements through ch.measure(...)"
        # ch.finish() raises ClaimFailed on a flagged claim, and papermill runs nothing after it: a glue in a later cell
        # would be missing from the page and fail the book build (mbr, fresh-clone make book at 2ae4209)
        last = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code" and c.source.strip()][-1]
        assert ".finish()" in last, "ch.finish() must be in the last code cell: nothing after it runs when a claim is flagged"

    def test_declares_every_claim_in_the_paper_card_before_the_theory(self, path):
        """Contract v2: the claims table is declared (and shown) before any experiment runs."""
        cells = nbformat.read(path, as_version=4).cells
        theory = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and re.search(r"^## Theory", c.source, re.M))
        before = "\n".join(c.source for c in cells[:theory] if c.cell_type == "code")
        after = "\n".join(c.source for c in cells[theory:] if c.cell_type == "code")
        assert ".declare(" in before, "declare the claims in the paper card, before ## Theory"
        assert ".paper_card()" in before, "show the declared claims with ch.paper_card() in the paper card"
        assert ".declare(" not in after, "every claim is declared in the paper card; later cells only measure"
        assert ".measure(" not in before, "nothing is measured in the paper card"

    def test_has_the_chapter_anatomy_in_order(self, path):
        headings = [line.lstrip("#").strip() for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"
                    for line in c.source.splitlines() if line.startswith("## ")]
        positions = []
        for section in ANATOMY:
            found = [i for i, h in enumerate(headings) if h.lower().startswith(section.lower())]
            assert found, f"missing section '## {section}'"
            positions.append(found[0])
        assert positions == sorted(positions), f"sections out of order: {headings}"

    def test_is_in_the_toc_under_its_field(self, path):
        entries = dict((f, caption) for caption, f in toc_files())
        key = f"notebooks/{path.stem}"
        assert key in entries, f"{key} is missing from _toc.yml"
        assert entries[key] == chapter_info(path.stem).part


def test_every_toc_entry_exists():
    for _, entry in toc_files():
        candidates = [ROOT / f"{entry}{ext}" for ext in (".md", ".ipynb")]
        assert any(p.exists() for p in candidates), f"_toc.yml lists {entry}, which does not exist"


def test_toc_parts_are_known_fields():
    chapter_parts = {caption for caption, f in toc_files() if f.startswith("notebooks/")}
    assert chapter_parts <= set(PARTS)


def test_registry_slugs_are_unique_and_have_briefs_or_packages():
    assert len(SLUGS) == len(set(SLUGS)) == 19
    assert all(c.package.isidentifier() for c in CHAPTERS)


def _requirement_names(requirements: list[str]) -> dict[str, str]:
    return {re.split(r"[<>=!~\[ ]", r, maxsplit=1)[0].lower(): r.replace(" ", "") for r in requirements}


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared += extra
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    env_requirements = [r for r in pip_section if not r.startswith("-")]  # not pip options (-e ., -c, --extra-index-url)
    assert _requirement_names(env_requirements) == _requirement_names(declared)
    assert "-e ." in pip_section, "environment.yml must install the icml26 package itself"
    assert any(str(d).startswith("python=3.11") for d in env["dependencies"])


def _make_install_requirements() -> tuple[list[str], list[str]]:
    """What `make install` installs (every `pip install` line in the recipe of the install stamp `$(STAMP)`, the
    project's own `-e ".[extras]"` expanded from pyproject.toml): (requirements, those installed with --no-deps).
    Other targets' installs (`make bench`'s mbrs in its own folder) are not part of `make install`."""
    import shlex

    from makefile_recipes import install_recipe

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements, no_deps = [], []
    for line in install_recipe().splitlines():
        if "pip install" not in line:
            continue
        words = iter(shlex.split(line.split("pip install", 1)[1]))
        flags_with_value = {"-c", "--constraint", "-r", "--requirement", "-i", "--index-url", "--extra-index-url", "-f", "--find-links"}
        target = no_deps if "--no-deps" in line else requirements
        for word in words:
            if word in flags_with_value:
                next(words)
            elif word.startswith("-") or word == "pip":  # flags (-e: the project itself), and `--upgrade pip`
                continue
            elif word == "." or word.startswith(".["):
                extras = word[2:-1].split(",") if word.startswith(".[") else []
                target += list(project["dependencies"]) + [r for e in extras for r in project["optional-dependencies"][e]]
            else:
                target.append(word)
    return requirements, no_deps


def test_everything_make_install_installs_is_in_the_binder_environment():
    """Binder builds environment.yml (plus postBuild): it must install every package that `make install` does."""
    requirements, no_deps = _make_install_requirements()
    assert requirements, "found no `pip install` in the Makefile"
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    in_env = set(_requirement_names([r for r in pip_section if not r.startswith("-")]))
    missing = sorted(set(_requirement_names(requirements)) - in_env)
    assert not missing, f"make install installs {missing}, which environment.yml (Binder) does not"
    if no_deps:  # a wheel installed without its dependencies cannot go through conda's pip section
        post_build = ROOT / "postBuild"
        assert post_build.exists(), f"make install installs {no_deps} with --no-deps: Binder needs them in a postBuild"
        text = post_build.read_text()
        missing = [r for r in no_deps if r not in text or "--no-deps" not in text]
        assert not missing, f"postBuild does not install {missing} with --no-deps"
        assert post_build.stat().st_mode & 0o111, "postBuild must be executable"


def test_book_extensions_are_installed_dependencies():
    """The Sphinx extensions _config.yml adds come from the project (icml26.*) or from its declared dependencies."""
    extensions = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"].get("extra_extensions", [])
    declared = set(_requirement_names(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]))
    for extension in extensions:
        assert extension.startswith("icml26.") or extension.lower().replace("_", "-") in declared, \
            f"_config.yml loads the Sphinx extension {extension!r}, which no dependency in pyproject.toml provides"


def test_torch_is_pinned_exactly_everywhere():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch==2.13.0" in project["dependencies"]
    constraints = (ROOT / "constraints.txt").read_text().splitlines()
    assert "torch==2.13.0" in constraints


def test_ci_calls_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make book" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


TYPED_NUMBERS_BASELINE = {
    "ambisur": 11, "ate-mixtures": 0, "basis-rotation": 7, "bfq": 0, "birqa": 0, "cello": 0,
    "constitutional-evolution": 3, "cqf": 0, "dsac-aid": 0, "ecsel": 6, "fedwave": 0, "focalpolicy": 0, "icr": 11,
    "infer": 6, "lion": 0, "mbr": 2, "mice-bench": 0, "minitraffic": 0, "probellm": 5,
}
"""Decimal numbers typed into each chapter's Markdown when contract v3 came in (`icml26.prose`). A ratchet:
a chapter may not add one; a revision that removes some (glues them, `Chapter.glue_full`, or marks a
constant with ``<!-- number-ok: why -->``) lowers its entry here; a chapter not listed must have none."""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_measured_number_is_typed_into_the_prose(path):
    from icml26.prose import typed_numbers

    found = typed_numbers(path)
    allowed = TYPED_NUMBERS_BASELINE.get(path.stem, 0)
    shown = "; ".join(f"cell {t.cell}: {t.number} in '{t.line[:80]}'" for t in found[:8])
    assert len(found) <= allowed, (f"{path.stem}: {len(found)} decimal numbers typed into the prose (at most {allowed}): "
                                   f"{shown}. Glue measured values (ch.glue / ch.glue_full); mark a constant with "
                                   "<!-- number-ok: why -->")
    assert len(found) == allowed, (f"{path.stem}: {len(found)} typed numbers left, fewer than the baseline {allowed}: "
                                   "lower TYPED_NUMBERS_BASELINE so the ratchet holds")
