"""INFER's rendering kernel against its peer, the vendored formulation, and the surrogate against the simulator.

Run: ``pytest benchmarks/bench_infer.py`` (``make bench``). Kernels, at the book preset's sizes
(``bench_receivers`` receivers x 14 rays x ``n_samples`` samples x 129 bins, one torch thread):

* **render kernel** -- :func:`icml26.infer.render_fields` (real arithmetic, exact exponential of the
  exclusive cumulative sum) against :func:`icml26.infer.render_reference`, a transcription of the vendored
  INFER renderer's structure (``AVRRenderFD_FreqDep_PhaseCorrection_new``: a real ``torch.cumprod`` of
  1 - alpha + 1e-10, a real ``torch.cumsum`` of beta du, one complex exponential), on the same fields;
  forward only (a query) and forward + backward (a training step's rendering). No PyPI package
  implements INFER or AVR; the vendored formulation is the peer of the same algorithm.
* **surrogate query vs simulator** -- an INFER-lite query (network + renderer + mask; the cost does not
  depend on the weights) against pyroomacoustics' image-source simulation of the same responses
  (with the crossover filtering and the rfft). Not the same algorithm: recorded for scale.

Ratios are best times from one `icml26.timing.interleaved_best` run, recorded in ``results/bench/infer.json``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26 import infer as I
from icml26.timing import interleaved_best, record_bench

pytest.importorskip("pyroomacoustics")

CFG = I.PRESETS["book"]
N_RECEIVERS = int(CFG["bench_receivers"])
ROUNDS = 7


@pytest.fixture(scope="module")
def fields():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    R = CFG["n_azi"] * CFG["n_ele"] + 2
    F = CFG["n_fft"] // 2 + 1
    shape = (N_RECEIVERS, R, CFG["n_samples"], F)
    sigma = torch.rand(shape, generator=gen) * 2
    beta = torch.randn(shape, generator=gen)
    s_re, s_im = torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)
    d = torch.linspace(0.05, CFG["far"], CFG["n_samples"])
    freqs = torch.arange(F, dtype=torch.float32) * CFG["fs"] / CFG["n_fft"]
    return sigma, beta, s_re, s_im, d, freqs


@pytest.fixture(scope="module")
def surrogate():
    torch.set_num_threads(1)
    cabin = I.cabin_config(CFG)
    rng = np.random.default_rng(0)
    receivers = rng.uniform(cabin.margin, np.asarray(cabin.room) - cabin.margin, (N_RECEIVERS, 3))
    data = I.simulate_cabin(I.CabinConfig(**{**cabin.__dict__, "grid": (3, 2, 1)}))
    torch.manual_seed(0)
    model = I.make_model("INFER-lite", data, CFG).eval()
    return cabin, receivers, model


def _ours(f):
    return I.render_fields(*f)


def _peer(f):
    sigma, beta, s_re, s_im, d, freqs = f
    return I.render_reference(sigma, beta, torch.complex(s_re, s_im), d, freqs)


def _with_grad(f):
    sigma, beta, s_re, s_im, d, freqs = f
    return tuple(x.clone().requires_grad_(True) for x in (sigma, beta, s_re, s_im)) + (d, freqs)


def _backward(render, f):
    g = _with_grad(f)
    H = render(g)
    (H.real.square().sum() + H.imag.square().sum()).backward()
    return g[0].grad


def test_render_kernels_agree(fields):
    np.testing.assert_allclose(_ours(fields).numpy(), _peer(fields).numpy(), rtol=2e-3, atol=2e-3)


def test_render_ours(benchmark, fields):
    benchmark.group = "INFER render kernel (forward)"
    assert benchmark(_ours, fields).shape == (N_RECEIVERS, fields[-1].numel())


def test_render_vendored(benchmark, fields):
    benchmark.group = "INFER render kernel (forward)"
    assert benchmark(_peer, fields).shape == (N_RECEIVERS, fields[-1].numel())


def test_ratio_render_kernel(fields):
    sizes = f"{N_RECEIVERS} receivers x {fields[0].shape[1]} rays x {fields[0].shape[2]} samples x {fields[0].shape[3]} bins"
    best = interleaved_best({"ours": lambda: _ours(fields), "peer": lambda: _peer(fields)}, rounds=ROUNDS)
    print(f"\nrender forward ({sizes}): ours {best['ours'] * 1e3:.2f} ms, vendored {best['peer'] * 1e3:.2f} ms, "
          f"ratio {best['ours'] / best['peer']:.2f}")
    record_bench("infer", "INFER render kernel, forward", "render_fields (real arithmetic)", best["ours"],
                 "vendored formulation (real cumprod, phase cumsum)", best["peer"], rounds=ROUNDS, note=sizes)
    best = interleaved_best({"ours": lambda: _backward(_ours, fields), "peer": lambda: _backward(_peer, fields)},
                            rounds=ROUNDS)
    print(f"render forward + backward: ours {best['ours'] * 1e3:.2f} ms, vendored {best['peer'] * 1e3:.2f} ms, "
          f"ratio {best['ours'] / best['peer']:.2f}")
    record_bench("infer", "INFER render kernel, forward + backward", "render_fields (real arithmetic)", best["ours"],
                 "vendored formulation (real cumprod, phase cumsum)", best["peer"], rounds=ROUNDS, note=sizes)


def _query(model, receivers):
    return I.predict(model, receivers, chunk=N_RECEIVERS)


def _simulate(cabin, receivers):
    return np.fft.rfft(I.cabin_responses(cabin, receivers), cabin.n_fft, axis=-1)


def test_ratio_surrogate_vs_simulator(surrogate):
    cabin, receivers, model = surrogate
    assert _query(model, receivers).shape == _simulate(cabin, receivers).shape
    best = interleaved_best({"field": lambda: _query(model, receivers), "sim": lambda: _simulate(cabin, receivers)},
                            rounds=5)
    print(f"\n{N_RECEIVERS} responses: INFER-lite query {best['field'] * 1e3:.1f} ms, pyroomacoustics ISM "
          f"(max_order {cabin.max_order}) {best['sim'] * 1e3:.1f} ms, ratio {best['field'] / best['sim']:.2f}")
    record_bench("infer", f"surrogate query vs simulator, {N_RECEIVERS} responses", "INFER-lite query (network + render + mask)",
                 best["field"], "pyroomacoustics image-source simulation", best["sim"], rounds=5,
                 note="not the same algorithm: the cost of a query of the learned field against re-simulating")
