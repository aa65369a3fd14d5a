"""Readers' environments get the versions CI tests (issue 60).

CI installs `make install`'s requirements held to the exact pins of `constraints.txt`. Binder and conda build
`environment.yml` (its pip section) and then run `postBuild`. These tests keep the two in step version by
version: the pip section is held by `-c constraints.txt` and takes torch from PyPI's CPU index, every
requirement it names is pinned in constraints.txt at a version its own specifier accepts, postBuild's
--no-deps installs are the Makefile's and pin constraints.txt's versions, and the environment the tests run in
(CI's `.venv`, or one built from environment.yml) holds exactly constraints.txt's versions. No network, < 1 s.
"""
import re
import shlex
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version
from makefile_recipes import install_recipe

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
NOT_PINNED_BY_PIP_FREEZE = {"pip", "setuptools", "wheel", "distribute"}
"""What `pip freeze`, which wrote constraints.txt, leaves out; the project itself is not pinned either."""
CUDA_RUNTIME = re.compile(r"^(nvidia-.*|triton|cuda-.*)$")
"""What a CUDA build of torch brings in (on a GPU machine, PyPI's torch): the CPU pins do not cover it."""


def constraints() -> dict[str, str]:
    """constraints.txt as {canonical name: pinned version}; every line must be an exact `name==version` pin."""
    pins = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"constraints.txt:{number}: {line!r} is not an exact pin"
        name = canonicalize_name(req.name)
        assert name not in pins, f"constraints.txt pins {name} twice"
        pins[name] = specs[0].version
    return pins


def pip_section() -> list[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)


def _options(lines: list[str]) -> list[list[str]]:
    return [shlex.split(line) for line in lines if line.startswith("-")]


def _requirements(lines: list[str]) -> list[Requirement]:
    return [Requirement(line) for line in lines if not line.startswith("-")]


def _no_deps_installs(text: str) -> dict[str, tuple[str, list[str]]]:
    """{canonical name: (pinned version, the words of its command)} for every `pip install --no-deps` in `text`."""
    found = {}
    for line in text.splitlines():
        if "pip install" not in line or "--no-deps" not in line or line.lstrip().startswith("#"):
            continue
        words = shlex.split(line.split("pip install", 1)[1])
        for word in words:
            if not word.startswith("-") and "==" in word:
                req = Requirement(word)
                found[canonicalize_name(req.name)] = (next(iter(req.specifier)).version, words)
    return found


def _public(version: str) -> str:
    """A version without its local label: torch's `2.13.0+cpu` is the release `2.13.0`."""
    return Version(version).public


def test_environment_yml_is_held_to_constraints_txt():
    constraint_files = [words[1] for words in _options(pip_section()) if words[0] in ("-c", "--constraint")]
    assert constraint_files == ["constraints.txt"], \
        "environment.yml's pip section must carry `-c constraints.txt` (the pins CI tests), once"
    assert (ROOT / "environment.yml").parent.joinpath(constraint_files[0]).is_file()


def test_torch_comes_from_pytorchs_cpu_index():
    """Binder has no GPU: PyPI's torch for Linux is the multi-GB CUDA build; the CPU index has `2.13.0+cpu`, which
    satisfies `torch==2.13.0` and sorts above the PyPI release, so pip takes it."""
    indexes = [words[1] for words in _options(pip_section()) if words[0] in ("--extra-index-url", "--index-url", "-i")]
    assert indexes == [CPU_INDEX], f"environment.yml must add PyTorch's CPU index {CPU_INDEX}, found {indexes}"
    torch = [r for r in _requirements(pip_section()) if canonicalize_name(r.name) == "torch"]
    assert len(torch) == 1 and str(torch[0].specifier) == f"=={constraints()['torch']}", \
        f"environment.yml must pin torch=={constraints()['torch']}, as constraints.txt does"


def test_every_requirement_of_environment_yml_is_pinned_in_constraints_at_a_version_it_accepts():
    pins = constraints()
    for req in _requirements(pip_section()):
        name = canonicalize_name(req.name)
        assert name in pins, f"environment.yml installs {req}, which constraints.txt does not pin"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"environment.yml asks {req}, but constraints.txt pins {name}=={pins[name]}: the two have drifted"


def pyproject_requirements() -> list[Requirement]:
    """Every requirement pyproject.toml declares: the dependencies and each optional extra (test, bench)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"] + [r for extra in project["optional-dependencies"].values()
                                                                for r in extra]]


def test_every_requirement_of_pyproject_is_pinned_in_constraints_at_a_version_it_accepts():
    """`make install` is `pip install -c constraints.txt -e ".[test,bench]"`: each requirement, the bench extra's
    numba (ate-mixtures' jitted benchmark peer) included, must have its exact pin, inside its specifier."""
    pins = constraints()
    for req in pyproject_requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"pyproject.toml requires {req}, which constraints.txt does not pin"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"pyproject.toml asks {req}, but constraints.txt pins {name}=={pins[name]}: the two have drifted"
    assert "numba" in {canonicalize_name(r.name) for r in pyproject_requirements()}, "the bench extra must carry numba"
    assert "llvmlite" in pins, "numba's llvmlite must be pinned with it"


@pytest.mark.parametrize("source", ["postBuild", "Makefile"])
def test_no_deps_installs_pin_the_versions_of_constraints_txt(source):
    pins = constraints()
    installs = _no_deps_installs((ROOT / source).read_text())
    assert installs, f"{source} installs nothing with --no-deps"
    for name, (version, words) in installs.items():
        assert name in pins, f"{source} installs {name}=={version} with --no-deps; constraints.txt does not pin it"
        assert version == pins[name], f"{source} installs {name}=={version}, constraints.txt pins {pins[name]}"
        assert "-c" in words and words[words.index("-c") + 1] == "constraints.txt", \
            f"{source}: `pip install --no-deps ... {name}` must carry `-c constraints.txt`"


def test_postbuild_installs_what_make_install_installs_without_dependencies():
    post_build = ROOT / "postBuild"
    assert post_build.stat().st_mode & 0o111, "postBuild must be executable"
    assert post_build.read_text().startswith("#!/bin/bash\n")
    ours = {name: version for name, (version, _) in _no_deps_installs(post_build.read_text()).items()}
    make = {name: version for name, (version, _) in _no_deps_installs(install_recipe()).items()}
    assert ours == make, f"postBuild installs {ours} with --no-deps, `make install` {make}"


def test_the_environment_under_test_is_constraints_txt():
    """The versions these tests run on are constraints.txt's, distribution by distribution: in CI's `.venv`
    (built by `make install`) this ties constraints.txt to what CI tests; in an environment built from
    environment.yml and postBuild it shows that they install exactly those versions."""
    pins = constraints()
    installed = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"] or "")
        if name and name not in NOT_PINNED_BY_PIP_FREEZE and name != "icml26" and not CUDA_RUNTIME.match(name):
            installed[name] = dist.version
    unpinned = sorted(f"{n}=={v}" for n, v in installed.items() if n not in pins)
    drifted = sorted(f"{n}: installed {v}, pinned {pins[n]}" for n, v in installed.items()
                     if n in pins and _public(v) != pins[n])
    assert not unpinned, f"installed but not pinned in constraints.txt (pip freeze it in): {unpinned}"
    assert not drifted, f"the installed versions differ from constraints.txt: {drifted}"
