"""BiRQA-small forward (feature maps included) against its peers, and one PGD step against ART's.

Run: ``pytest benchmarks/bench_birqa.py`` (``make bench``). The ratio tests time the contenders interleaved in
one process (``icml26.timing.interleaved_best``), on 2 torch threads, and record in ``results/bench/birqa.json``:

* like for like: our SSIM map (``features.ssim_map``, the 11-tap Gaussian window, valid part, averaged) vs
  pytorch-msssim's ``ssim`` with the same window on the same luma images at 512^2 and 1920x1080 (the same work);
* BiRQA-small vs pytorch-msssim's SSIM at 512^2 and 1920x1080: **not** the same work (a learned pyramid of four
  maps against one classical map), reported as what the pyramid costs over one SSIM map;
* BiRQA-small vs the LPIPS-VGG16 architecture in plain torch at 512^2, and BiRQA at the brief's size (C = 32,
  L = 4) vs a TOPIQ-like architecture (ResNet-50 trunk + top-down cross-attention, plain torch, untrained: the
  paper's "previous SOTA" class) at 512^2: model-against-model ratios (different algorithms, not a kernel
  comparison), recorded, not asserted (the chapter's C7 judges the paper's "~3x" from interleaved rounds; a
  ratio near the region's edge would make an assertion flaky);
* one I-FGSM/PGD step (ours) vs ART 1.20.1's ``ProjectedGradientDescent`` with ``max_iter=1`` on the same
  model (the same algorithm: the peer), bounded by 1.0.
CPU only; on a GPU the fair peers would be compiled models.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.birqa import BiRQA, LPIPSVGG16, TopIQLike, attack
from icml26.timing import interleaved_best, record_bench

pytorch_msssim = pytest.importorskip("pytorch_msssim")
THREADS = 2
SIZES = {"512x512": (512, 512), "1920x1080": (1080, 1920)}


@pytest.fixture(autouse=True)
def two_threads():
    old = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    yield
    torch.set_num_threads(old)


def _pair(h, w, seed=0):
    g = torch.Generator().manual_seed(seed)
    ref = torch.rand(1, 3, h, w, generator=g)
    return ref, (ref + 0.05 * torch.randn(ref.shape, generator=g)).clamp(0, 1)


def _birqa():
    torch.manual_seed(0)
    return BiRQA(levels=3, channels=12).eval()


@pytest.mark.parametrize("size", list(SIZES))
def test_birqa_forward(benchmark, size):
    ref, dist = _pair(*SIZES[size])
    model = _birqa()
    benchmark.group = f"FR-IQA forward, {size}"
    with torch.no_grad():
        benchmark(lambda: model(ref, dist))


@pytest.mark.parametrize("size", list(SIZES))
def test_ratio_ssim_map_vs_pytorch_msssim(size):
    from icml26.birqa.features import ssim_map
    from icml26.birqa.metrics import _luma

    ref, dist = _pair(*SIZES[size])
    a, b = _luma(ref), _luma(dist)
    fns = {"ours": lambda: ssim_map(a, b, window=11, pad=False).mean(),
           "peer": lambda: pytorch_msssim.ssim(b, a, data_range=1.0, win_size=11)}
    assert abs(float(fns["ours"]()) - float(fns["peer"]())) < 1e-4          # the same work, the same value
    best = interleaved_best(fns, rounds=5)
    rec = record_bench("birqa", f"SSIM map {size}: ours vs pytorch-msssim (11-tap window, luma)",
                       "icml26.birqa.features.ssim_map", best["ours"], "pytorch_msssim.ssim 1.0.0 (win_size=11)",
                       best["peer"], 5, note=f"{THREADS} torch threads; like for like")
    assert rec["ratio"] > 0


@pytest.mark.parametrize("size", list(SIZES))
def test_ratio_birqa_vs_pytorch_msssim(size):
    ref, dist = _pair(*SIZES[size])
    model = _birqa()
    with torch.no_grad():
        fns = {"birqa": lambda: model(ref, dist), "ssim": lambda: pytorch_msssim.ssim(dist, ref, data_range=1.0)}
        for f in fns.values():
            f()
        best = interleaved_best(fns, rounds=5)
    rec = record_bench("birqa", f"forward {size}: BiRQA-small vs SSIM", "icml26.birqa.BiRQA (features included)",
                       best["birqa"], "pytorch_msssim.ssim 1.0.0", best["ssim"], 5,
                       note=f"{THREADS} torch threads; not the same work: the learned pyramid of four maps over one SSIM map")
    assert rec["ratio"] > 0


def test_ratio_birqa_vs_lpips_vgg16_architecture():
    ref, dist = _pair(512, 512)
    model, vgg = _birqa(), LPIPSVGG16().eval()
    with torch.no_grad():
        fns = {"birqa": lambda: model(ref, dist), "vgg": lambda: vgg(ref, dist)}
        for f in fns.values():
            f()
        best = interleaved_best(fns, rounds=3)
    rec = record_bench("birqa", "forward 512x512: BiRQA-small vs LPIPS-VGG16 arch", "icml26.birqa.BiRQA",
                       best["birqa"], "LPIPS-VGG16 architecture (plain torch)", best["vgg"], 3,
                       note=f"{THREADS} torch threads; model against model (the paper: ~3x faster than previous SOTA)")
    assert rec["ratio"] > 0


def test_ratio_brief_size_birqa_vs_topiq_like_architecture():
    ref, dist = _pair(512, 512)
    torch.manual_seed(0)
    model, topiq = BiRQA(levels=4, channels=32).eval(), TopIQLike().eval()
    with torch.no_grad():
        fns = {"birqa": lambda: model(ref, dist), "topiq": lambda: topiq(ref, dist)}
        best = interleaved_best(fns, rounds=3)
    rec = record_bench("birqa", "forward 512x512: BiRQA (C=32, L=4) vs TOPIQ-like arch", "icml26.birqa.BiRQA(levels=4, channels=32)",
                       best["birqa"], "TOPIQ-like architecture (icml26.birqa.TopIQLike, plain torch)", best["topiq"], 3,
                       note=f"{THREADS} torch threads; model against model (the paper's ~3x faster than previous SOTA), "
                            "not a kernel comparison")
    assert rec["ratio"] > 0


def test_ratio_pgd_step_vs_art():
    pytest.importorskip("art")
    from art.attacks.evasion import ProjectedGradientDescent
    from art.estimators.classification import PyTorchClassifier

    model = _birqa()
    g = torch.Generator().manual_seed(1)
    ref = torch.rand(16, 3, 64, 64, generator=g)
    dist = (ref + 0.05 * torch.randn(ref.shape, generator=g)).clamp(0, 1)

    class TwoLogits(torch.nn.Module):
        def forward(self, x):
            f = model(ref, x, check=False)
            return torch.stack([-f, f], 1)

    clf = PyTorchClassifier(TwoLogits(), loss=torch.nn.CrossEntropyLoss(), input_shape=(3, 64, 64), nb_classes=2,
                            clip_values=(0.0, 1.0))
    eps = 4 / 255
    art_pgd = ProjectedGradientDescent(clf, norm=np.inf, eps=eps, eps_step=eps / 4, max_iter=1, num_random_init=0,
                                       batch_size=16, verbose=False)
    y0, x = np.zeros(16, dtype=int), dist.numpy()
    fns = {"ours": lambda: attack(lambda r, d: model(r, d, check=False), ref, dist, eps, 1, "ifgsm"),
           "art": lambda: art_pgd.generate(x, y=y0)}
    for f in fns.values():
        f()
    best = interleaved_best(fns, rounds=5)
    rec = record_bench("birqa", "one I-FGSM step, 16 x 64^2 pairs", "icml26.birqa.attack", best["ours"],
                       "ART 1.20.1 ProjectedGradientDescent (max_iter=1)", best["art"], 5,
                       note=f"{THREADS} torch threads; same model, same gradient")
    assert rec["ratio"] <= 1.0
