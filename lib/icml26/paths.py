"""Where the book's files live: the repository root, `results/<scale>/`, `runs/<scale>/`."""
from __future__ import annotations

import os
from pathlib import Path

RESULTS_ENV_VAR = "ICML26_RESULTS_DIR"


def repo_root() -> Path:
    """The checkout holding `_toc.yml`: found from this package's location, else from the cwd upwards."""
    here = Path(__file__).resolve().parent.parent.parent  # lib/icml26/paths.py -> repo root
    if (here / "_toc.yml").exists():
        return here
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "_toc.yml").exists():
            return folder
    return Path.cwd()


def notebooks_dir() -> Path:
    return repo_root() / "notebooks"


def results_dir(scale: str) -> Path:
    """`results/<scale>/` of the checkout, or of ``$ICML26_RESULTS_DIR`` when set."""
    base = Path(os.environ[RESULTS_ENV_VAR]) if os.environ.get(RESULTS_ENV_VAR) else repo_root() / "results"
    return base / scale


def runs_dir(scale: str) -> Path:
    return repo_root() / "runs" / scale
