"""Progress bars that suit both a live notebook and a batch run (papermill, nbval, the book build)."""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable

BATCH_ENV_VAR = "ICML26_BATCH"


def in_batch() -> bool:
    """True when a chapter runs unattended (set by `repro`, the test suite and the book build)."""
    return os.environ.get(BATCH_ENV_VAR, "") not in ("", "0")


def progress(iterable: Iterable | None = None, desc: str = "", total: int | None = None, **kwargs):
    """A tqdm bar: a widget in a live notebook, a plain text bar on stderr in batch runs.

    Batch runs update rarely (every 10 s) so that executed notebooks stay small and readable.
    """
    if in_batch():
        from tqdm.std import tqdm

        kwargs.setdefault("mininterval", 10.0)
        kwargs.setdefault("file", sys.stderr)
        kwargs.setdefault("ascii", True)
    else:
        from tqdm.auto import tqdm
    return tqdm(iterable, desc=desc, total=total, **kwargs)
