"""Fit time per Feynman equation: ECSEL (icml26.ecsel.SignomialRegressor) vs gplearn's SymbolicRegressor.

Run: ``pytest benchmarks/bench_ecsel.py --benchmark-only`` (``make bench``). The ratio test fits both on the
same equations in one process, interleaved, and prints the time ratio ECSEL / gplearn together with each
method's recovery count: the comparison is "at an equal recovery budget" only in the sense that gplearn
gets a population/generation budget that takes longer than ECSEL's fit, and still recovers less.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from icml26.ecsel import FEYNMAN, SignomialRegressor, gplearn_fit, recovered
from icml26.timing import record_bench

pytest.importorskip("gplearn")
torch.set_num_threads(1)
threadpool_limits(1)  # a 2-thread OpenBLAS spin-waits on a loaded CPU and distorts the ECSEL / gplearn ratio

EQUATIONS = ("I.12.2", "I.47.23", "III.19.51", "I.13.12", "II.2.42", "I.24.6")
N_TRAIN, N_TEST = 300, 500
GPLEARN = dict(population=500, generations=10)


def _data(eid: str, seed: int = 42):
    eq = FEYNMAN[eid]
    rng = np.random.default_rng(seed)
    return eq, eq.sample(N_TRAIN, rng), eq.sample(N_TEST, rng)


@pytest.mark.parametrize("eid", EQUATIONS)
def test_ecsel_fit(benchmark, eid):
    eq, (X, y), _ = _data(eid)
    benchmark.group = "fit one Feynman equation"
    benchmark.pedantic(lambda: SignomialRegressor(n_terms=eq.n_terms, random_state=42).fit(X, y), rounds=1, iterations=1)


def test_ratio_ecsel_vs_gplearn():
    t_e, t_g, rec_e, rec_g = [], [], 0, 0
    for eid in EQUATIONS:
        eq, (X, y), (Xt, yt) = _data(eid)
        t0 = time.perf_counter()
        est = SignomialRegressor(n_terms=eq.n_terms, random_state=42).fit(X, y)
        t_e.append(time.perf_counter() - t0)
        rec_e += recovered(eq.terms, est.terms_, Xt, yt)
        terms, sec, _ = gplearn_fit(X, y, seed=42, **GPLEARN)
        t_g.append(sec)
        rec_g += recovered(eq.terms, terms, Xt, yt)
    ratio = float(np.median(t_e) / np.median(t_g))
    print(f"\nmedian fit time per equation: ECSEL {np.median(t_e):.2f} s, gplearn {np.median(t_g):.2f} s, "
          f"ratio ECSEL/gplearn = {ratio:.3f}; recovered ECSEL {rec_e}/{len(EQUATIONS)}, gplearn {rec_g}/{len(EQUATIONS)}")
    record_bench("ecsel", "fit per Feynman equation (median)", "ECSEL SignomialRegressor", float(np.median(t_e)),
                 "gplearn SymbolicRegressor", float(np.median(t_g)), rounds=1,
                 note=f"median over {len(EQUATIONS)} equations, run in turn; recovered ECSEL {rec_e}, gplearn {rec_g}")
    assert rec_e >= rec_g
    assert ratio <= 1.0
