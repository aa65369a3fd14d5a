"""What a result was computed with: package versions, git commit, machine."""
from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata

from .paths import repo_root

TRACKED_PACKAGES = (
    "icml26", "torch", "numpy", "scipy", "sympy", "scikit-learn", "matplotlib", "seaborn",
    "pandas", "papermill", "jupyter-book", "myst-nb", "nbval",
)


def package_versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES + tuple(extra):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def git_state() -> dict[str, object]:
    """The checkout's commit and whether library or notebook files differ from it (None without git)."""
    root = repo_root()

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", "lib", "notebooks") if commit else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def machine() -> dict[str, object]:
    info: dict[str, object] = {"platform": platform.platform(), "processor": platform.machine(), "executable": sys.executable}
    try:
        import os

        info["cpus"] = os.cpu_count()
        import torch

        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:  # pragma: no cover
        pass
    return info
