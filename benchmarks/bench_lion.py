"""One optimizer step on 10M parameters: icml26.lion.Lion vs lion_pytorch.Lion vs torch.optim.AdamW(foreach).

Run: ``pytest benchmarks/bench_lion.py --benchmark-only`` (``make bench``). The ratio test times ours
and lion-pytorch interleaved in one process and prints (and bounds) ours / lion-pytorch.
"""
from __future__ import annotations


import pytest
import torch

from icml26.lion import Lion
from icml26.timing import interleaved_best, record_bench

lion_pytorch = pytest.importorskip("lion_pytorch")

N_PARAMS = 10_000_000
SHAPES = [(2048, 2048), (2048, 2048), (1_611_392,)]  # 4,194,304 * 2 + 1,611,392 = 10,000,000


def _params_with_grads(seed: int = 0) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in SHAPES]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g)
    assert sum(p.numel() for p in params) == N_PARAMS
    return params


def _optimizers() -> dict[str, torch.optim.Optimizer]:
    kw = dict(lr=1e-4, weight_decay=0.1)
    return {
        "icml26_lion": Lion(_params_with_grads(), betas=(0.9, 0.99), **kw),
        "icml26_lion_nocheck": Lion(_params_with_grads(), betas=(0.9, 0.99), check_finite=False, **kw),
        "lion_pytorch": lion_pytorch.Lion(_params_with_grads(), betas=(0.9, 0.99), **kw),
        "adamw_foreach": torch.optim.AdamW(_params_with_grads(), foreach=True, **kw),
    }


@pytest.mark.parametrize("name", ["icml26_lion", "icml26_lion_nocheck", "lion_pytorch", "adamw_foreach"])
def test_step_10m(benchmark, name):
    opt = _optimizers()[name]
    opt.step()  # allocate state
    benchmark.group = "optimizer step, 10M params"
    benchmark(opt.step)


def test_ratio_ours_vs_lion_pytorch():
    opts = _optimizers()
    ours, theirs = opts["icml26_lion"], opts["lion_pytorch"]
    ours.step(), theirs.step()
    best = interleaved_best({"ours": ours.step, "lion-pytorch": theirs.step}, rounds=15)
    ratio = best["ours"] / best["lion-pytorch"]
    print(f"\nLion step on 10M params: ours {best['ours'] * 1e3:.1f} ms, lion-pytorch {best['lion-pytorch'] * 1e3:.1f} ms, "
          f"ratio ours/lion-pytorch = {ratio:.3f}")
    record_bench("lion", "optimizer step, 10M parameters", "icml26.lion.Lion", best["ours"],
                 "lion-pytorch Lion", best["lion-pytorch"], rounds=15)
    assert ratio <= 1.05
