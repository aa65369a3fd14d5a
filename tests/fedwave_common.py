"""The tiny configuration and pretrained base shared by the FedWave unit tests (test_fedwave*.py)."""
from __future__ import annotations

import pytest

from icml26 import fedwave as fw

CFG = dict(fw.PRESETS["smoke"], d=16, n_layers=1, n_heads=2, pretrain_steps=2, pretrain_samples=64, rounds=2,
           local_steps=2, n_per_client=16)


@pytest.fixture(scope="module")
def base():
    """A two-step pretrained frozen decoder at CFG (module-scoped: one per test file)."""
    return fw.pretrain_base(CFG, seed=0)
