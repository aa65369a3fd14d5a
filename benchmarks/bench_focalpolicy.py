"""FocalPolicy's kernels against their best peers on PyPI (``make bench``; not part of ``make test``).

* The FCO frequency loss on a (128, 12, 4) batch, forward + backward: ours (one precomputed orthonormal DCT-II
  matrix, ``einsum``) vs the same loss through ``torch_dct.dct(norm="ortho")`` (the official code's dependency,
  FFT-based, time moved to the last axis and back as the released code does). Same values to 1e-6.
* One-step FocalPolicy inference (one network call) vs FM-10 through ``flow_matching``'s Euler ``ODESolver``
  (10 calls) on the same network and batch: the speed-up one-step generation buys.

Ratios are measured interleaved in one process (``icml26.timing.interleaved_best``) and recorded in
``results/bench/focalpolicy.json``.
"""
from __future__ import annotations

import pytest
import torch

from icml26.focalpolicy import freq_loss, make_policy
from icml26.focalpolicy.experiments import VARIANTS
from icml26.timing import interleaved_best, record_bench

torch_dct = pytest.importorskip("torch_dct")
flow_matching = pytest.importorskip("flow_matching")
ROUNDS = 30
REPEAT = 20


def _peer_freq_loss(pred, target):
    a = torch_dct.dct(pred.transpose(1, 2), norm="ortho").transpose(1, 2)
    b = torch_dct.dct(target.transpose(1, 2), norm="ortho").transpose(1, 2)
    return ((a - b) ** 2).sum(dim=(1, 2)).mean()


def _loss_step(fn, pred, target):
    def run():
        for _ in range(REPEAT):
            p = pred.detach().requires_grad_(True)
            fn(p, target).backward()
    return run


def test_fco_loss_vs_torch_dct():
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    pred, target = torch.randn(128, 12, 4, generator=g), torch.randn(128, 12, 4, generator=g)
    assert torch.allclose(freq_loss(pred, target), _peer_freq_loss(pred, target), rtol=1e-5)
    best = interleaved_best({"ours": _loss_step(freq_loss, pred, target),
                             "torch_dct": _loss_step(_peer_freq_loss, pred, target)}, rounds=ROUNDS)
    ratio = best["ours"] / best["torch_dct"]
    print(f"\nFCO frequency loss fwd+bwd (128, 12, 4): ours {best['ours'] / REPEAT * 1e6:.0f} us, "
          f"torch_dct {best['torch_dct'] / REPEAT * 1e6:.0f} us, speed-up {1 / ratio:.1f}x")
    record_bench("focalpolicy", "FCO frequency loss, forward + backward, (128, 12, 4)", "icml26.focalpolicy.freq_loss",
                 best["ours"] / REPEAT, "torch_dct.dct(norm='ortho') (the official code's path)", best["torch_dct"] / REPEAT,
                 rounds=ROUNDS, note="one torch thread; the same loss value to 1e-5")
    assert 1 / ratio >= 3.0


def test_one_step_inference_vs_fm10_ode_solver():
    from flow_matching.solver import ODESolver

    torch.set_num_threads(1)
    torch.manual_seed(0)
    pol = make_policy(VARIANTS["FocalPolicy"], 39, 4, "mlp").eval()
    obs = torch.randn(64, 2, 39)
    cond = pol._cond(obs)
    noise = torch.randn(64, 12, 4)
    solver = ODESolver(velocity_model=lambda x, t: pol.velocity(x, t.expand(x.shape[0]), cond))

    @torch.no_grad()
    def one_step():
        for _ in range(REPEAT):
            pol.sample_normalized(cond, noise)

    @torch.no_grad()
    def fm10():
        for _ in range(REPEAT):
            solver.sample(x_init=noise, step_size=0.1, method="euler")

    best = interleaved_best({"one_step": one_step, "fm10": fm10}, rounds=ROUNDS)
    ratio = best["one_step"] / best["fm10"]
    print(f"\nInference, batch 64, MLP: one-step {best['one_step'] / REPEAT * 1e6:.0f} us, FM-10 ODESolver "
          f"{best['fm10'] / REPEAT * 1e6:.0f} us, speed-up {1 / ratio:.1f}x")
    record_bench("focalpolicy", "chunk inference, batch 64: one-step FocalPolicy vs FM-10 (flow_matching Euler ODESolver)",
                 "icml26.focalpolicy FocalPolicy one-step", best["one_step"] / REPEAT,
                 "flow_matching ODESolver(euler, step 0.1), same network", best["fm10"] / REPEAT, rounds=ROUNDS,
                 note="one torch thread; the same MLP velocity network for both")
    assert 1 / ratio >= 5.0


def test_benchmark_fco_loss(benchmark):
    g = torch.Generator().manual_seed(0)
    pred, target = torch.randn(128, 12, 4, generator=g), torch.randn(128, 12, 4, generator=g)
    benchmark.group = "FCO frequency loss"
    benchmark(_loss_step(freq_loss, pred, target))
