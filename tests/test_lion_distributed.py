"""The multi-process distributed Lion (torch.distributed, gloo) agrees with the vectorised simulator."""
from __future__ import annotations

import numpy as np
import pytest

from icml26.lion import PeriodicObjective, run_distributed, simulate

METHODS = ("dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv")
D, N, T = 20, 3, 30
KW = dict(x0=0.0, center=1.0, c_eta=8.0, weight_decay="theorem")  # regime (b) as the chapter runs it


@pytest.fixture(scope="module")
def runs():
    obj = PeriodicObjective.make(D, N, sigma=1.0, heterogeneity=0.5, seed=3, curvature_noise=0.5)  # the chapter's objective
    return obj, run_distributed(obj, METHODS, T, seed=7, timeout_s=120, **KW)


@pytest.mark.parametrize("method", METHODS)
def test_multiprocess_iterates_equal_simulator(runs, method):
    obj, results = runs
    sim = simulate(method, obj, [T], 1, seed=7, record_iterates=True, **KW)
    r = results[method]
    assert r.ranks_agree and r.iterates.shape == (T + 1, D)
    assert np.abs(r.iterates - r.iterates[0]).max() > 0.1  # it moved
    np.testing.assert_allclose(r.iterates, sim.iterates[:, 0, 0], atol=1e-12, rtol=0)


def test_bytes_per_step(runs):
    _, results = runs
    for method in ("mv", "uu", "uu_vr", "sign_mv"):
        assert (results[method].bytes_up, results[method].bytes_down) == ((D + 7) // 8,) * 2  # 1 bit each way
    assert results["dist"].bytes_up == D * 8  # float64 all-reduce payload
    assert results["dist"].fp32_allreduce_bytes == D * 4


def test_even_workers_majority_vote_needs_random_ties():
    obj = PeriodicObjective.make(8, 2, seed=0)
    with pytest.raises(ValueError, match="tie"):
        run_distributed(obj, ["mv"], 5, tie="zero")
    with pytest.raises(ValueError):
        run_distributed(PeriodicObjective.make(8, 1), ["dist"], 5)
