"""Rendering INFER-lite for a batch of receivers vs simulating the same responses with pyroomacoustics.

Run: ``pytest benchmarks/bench_infer.py --benchmark-only`` (``make bench``). The ratio test times both,
interleaved in one process, and prints responses per second and the ratio field / simulation.
The field is untrained (the cost of rendering does not depend on the weights); sizes are the book preset.
"""
from __future__ import annotations


import numpy as np
import pytest
import torch

from icml26 import infer as I
from icml26.timing import interleaved_best, record_bench

pytest.importorskip("pyroomacoustics")

CFG = I.PRESETS["book"]
N_RECEIVERS = 32


@pytest.fixture(scope="module")
def setup():
    torch.set_num_threads(1)
    cabin = I.cabin_config(CFG)
    rng = np.random.default_rng(0)
    receivers = rng.uniform(cabin.margin, np.asarray(cabin.room) - cabin.margin, (N_RECEIVERS, 3))
    data = I.simulate_cabin(I.CabinConfig(**{**cabin.__dict__, "grid": (3, 2, 1)}))
    torch.manual_seed(0)
    model = I.make_model("INFER-lite", data, CFG).eval()
    return cabin, receivers, model


def _render(model, receivers):
    return I.predict(model, receivers, chunk=N_RECEIVERS)


def _simulate(cabin, receivers):
    h = I.cabin_responses(cabin, receivers)
    return np.fft.rfft(h, cabin.n_fft, axis=-1)


def test_render_field(benchmark, setup):
    cabin, receivers, model = setup
    benchmark.group = f"{N_RECEIVERS} frequency responses"
    out = benchmark(_render, model, receivers)
    assert out.shape == (N_RECEIVERS, cabin.n_freq)


def test_simulate_pyroomacoustics(benchmark, setup):
    cabin, receivers, _ = setup
    benchmark.group = f"{N_RECEIVERS} frequency responses"
    out = benchmark(_simulate, cabin, receivers)
    assert out.shape == (N_RECEIVERS, cabin.n_freq)


def test_ratio_field_vs_simulation(setup):
    cabin, receivers, model = setup
    best = interleaved_best({"field": lambda: _render(model, receivers), "sim": lambda: _simulate(cabin, receivers)}, rounds=5)
    rate_field, rate_sim = N_RECEIVERS / best["field"], N_RECEIVERS / best["sim"]
    print(f"\n{N_RECEIVERS} responses (N={cabin.n_fft}, max_order={cabin.max_order}): INFER-lite render "
          f"{rate_field:.0f} responses/s, pyroomacoustics ISM {rate_sim:.0f} responses/s, "
          f"ratio field/simulation = {rate_field / rate_sim:.2f}")
    record_bench("infer", f"{N_RECEIVERS} frequency responses", "INFER-lite field render", best["field"],
                 "pyroomacoustics image-source simulation", best["sim"], rounds=5)
