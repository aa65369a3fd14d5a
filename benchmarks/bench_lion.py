"""One optimizer step on 10M parameters: icml26.lion.Lion vs lion_pytorch.Lion vs torch.optim.AdamW(foreach),
in two layouts: 3 large tensors, and 300 small tensors (the case ``torch._foreach_*`` kernels exist for:
one fused call instead of one Python-level op per tensor). Plus LionVR's optimizer work per step.

Run: ``pytest benchmarks/bench_lion.py`` (``make bench``). The ratio tests time the contenders interleaved in
one process (``icml26.timing.interleaved_best``) and record in ``results/bench/lion.json``:

* ours / lion-pytorch (the same algorithm: the peer) for both layouts, bounded by 1.05;
* ours / AdamW(foreach) for both layouts (a reference point: AdamW keeps two state tensors, Lion one);
* LionVR / Lion: the extra optimizer work of the STORM step (two parameter swaps, the correction), with a
  closure that only installs precomputed gradients, so the gradient evaluations are not timed. No PyPI
  package implements Lion with STORM momentum; our own Lion step is the fastest honest reference.
CPU only here; on a GPU the fair peers would be lion-pytorch's triton kernel or ``torch.compile``.
"""
from __future__ import annotations

import pytest
import torch

from icml26.lion import Lion, LionVR
from icml26.timing import interleaved_best, record_bench

lion_pytorch = pytest.importorskip("lion_pytorch")

N_PARAMS = 10_000_000
LAYOUTS = {
    "3 tensors": [(2048, 2048), (2048, 2048), (1_611_392,)],          # 4,194,304 * 2 + 1,611,392
    "300 tensors": [(100, 333)] * 299 + [(N_PARAMS - 299 * 33_300,)],  # 299 * 33,300 + 43,300
}
ROUNDS = 15


def _params_with_grads(shapes, seed: int = 0) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in shapes]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g)
    assert sum(p.numel() for p in params) == N_PARAMS
    return params


def _optimizer(name: str, shapes) -> torch.optim.Optimizer:
    kw = dict(lr=1e-4, weight_decay=0.1)
    params = _params_with_grads(shapes)
    return {
        "icml26_lion": lambda: Lion(params, betas=(0.9, 0.99), **kw),
        "icml26_lion_nocheck": lambda: Lion(params, betas=(0.9, 0.99), check_finite=False, **kw),
        "lion_pytorch": lambda: lion_pytorch.Lion(params, betas=(0.9, 0.99), **kw),
        "adamw_foreach": lambda: torch.optim.AdamW(params, foreach=True, **kw),
    }[name]()


def _lion_vr_step(shapes):
    """A LionVR step function whose closure only installs precomputed gradients (optimizer work only)."""
    params = _params_with_grads(shapes)
    grads = [p.grad.clone() for p in params]
    opt = LionVR(params, lr=1e-4, betas=(0.9, 0.9), weight_decay=0.1)

    def closure():
        for p, g in zip(params, grads):
            p.grad = g
        return None

    opt.step()  # t = 1: m_1 from p.grad
    return lambda: opt.step(closure)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", ["icml26_lion", "icml26_lion_nocheck", "lion_pytorch", "adamw_foreach"])
def test_step_10m(benchmark, name, layout):
    opt = _optimizer(name, LAYOUTS[layout])
    opt.step()  # allocate state
    benchmark.group = f"optimizer step, 10M params in {layout}"
    benchmark(opt.step)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_ratios_ours_vs_lion_pytorch_and_adamw(layout):
    shapes = LAYOUTS[layout]
    opts = {name: _optimizer(name, shapes) for name in ("icml26_lion", "lion_pytorch", "adamw_foreach")}
    for opt in opts.values():
        opt.step()
    best = interleaved_best({name: opt.step for name, opt in opts.items()}, rounds=ROUNDS)
    ours, peer, adamw = best["icml26_lion"], best["lion_pytorch"], best["adamw_foreach"]
    print(f"\nLion step, 10M params in {layout}: ours {ours * 1e3:.1f} ms, lion-pytorch {peer * 1e3:.1f} ms, "
          f"AdamW(foreach) {adamw * 1e3:.1f} ms; ours/lion-pytorch = {ours / peer:.3f}, ours/AdamW = {ours / adamw:.3f}")
    record_bench("lion", f"optimizer step, 10M parameters in {layout}", "icml26.lion.Lion", ours,
                 "lion-pytorch Lion", peer, rounds=ROUNDS)
    record_bench("lion", f"optimizer step vs AdamW, 10M parameters in {layout}", "icml26.lion.Lion", ours,
                 "torch.optim.AdamW(foreach=True)", adamw, rounds=ROUNDS,
                 note="a reference point, not the same algorithm: AdamW keeps two state tensors, Lion one")
    assert ours / peer <= 1.05


def test_ratio_lion_vr_vs_lion():
    shapes = LAYOUTS["3 tensors"]
    lion = _optimizer("icml26_lion", shapes)
    lion.step()
    vr_step = _lion_vr_step(shapes)
    vr_step()
    best = interleaved_best({"lion_vr": vr_step, "lion": lion.step}, rounds=ROUNDS)
    ratio = best["lion_vr"] / best["lion"]
    print(f"\nLionVR step (optimizer work only), 10M params in 3 tensors: {best['lion_vr'] * 1e3:.1f} ms, "
          f"Lion {best['lion'] * 1e3:.1f} ms, ratio {ratio:.2f}")
    record_bench("lion", "LionVR step (optimizer work only), 10M parameters in 3 tensors", "icml26.lion.LionVR",
                 best["lion_vr"], "icml26.lion.Lion (no PyPI LionVR exists)", best["lion"], rounds=ROUNDS,
                 note="closure installs precomputed gradients: the two gradient evaluations per step are not timed")
    assert ratio < 10.0
