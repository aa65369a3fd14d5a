"""ICR of 512 samples x 128-d features: icml26.icr.icr vs a direct scipy.linalg.eigh generalised-eigen
computation; and the Heun sampler's throughput (images per second).

Run: ``pytest benchmarks/bench_icr.py --benchmark-only`` (``make bench``). The ratio test times ours and the
scipy reference interleaved in one process, checks that they agree, and prints ours / scipy.
"""
from __future__ import annotations


import numpy as np
import pytest
import scipy.linalg as sla
import torch

from icml26.icr import EDMDenoiser, heun_sample, icr
from icml26.timing import interleaved_best, record_bench

N, D = 512, 128


def _views(seed: int = 0):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(N, D)) @ rng.normal(size=(D, D)) / np.sqrt(D)
    return s + rng.normal(size=(N, D)), s + rng.normal(size=(N, D))


def scipy_reference(h1: np.ndarray, h2: np.ndarray) -> float:
    """The direct route: covariances, then scipy's generalised symmetric eigensolver (same tau)."""
    cov_d = np.cov(h1 - h2, rowvar=False)
    sigma_xi = cov_d / 2
    sigma_s = np.cov((h1 + h2) / 2, rowvar=False) - cov_d / 4
    tau = 1e-4 * np.trace(sigma_xi) / D
    lam = sla.eigh(sigma_s, sigma_xi + tau * np.eye(D), eigvals_only=True)
    return float(D / (D + lam.sum()))


def ours(h1: np.ndarray, h2: np.ndarray) -> float:
    return icr(h1, h2).icr


@pytest.mark.parametrize("name", ["icml26_icr", "scipy_eigh"])
def test_icr_512x128(benchmark, name):
    h1, h2 = _views()
    fn = ours if name == "icml26_icr" else scipy_reference
    benchmark.group = "ICR, 512 samples x 128-d"
    value = benchmark(fn, h1, h2)
    assert 0 < value <= 1


def test_ratio_ours_vs_scipy():
    h1, h2 = _views()
    assert abs(ours(h1, h2) - scipy_reference(h1, h2)) < 1e-9
    best = interleaved_best({"ours": lambda: ours(h1, h2), "scipy": lambda: scipy_reference(h1, h2)}, rounds=30)
    ratio = best["ours"] / best["scipy"]  # minima: robust to other load on the machine
    print(f"\nICR 512x128: ours {1e3 * best['ours']:.2f} ms, scipy eigh {1e3 * best['scipy']:.2f} ms (best of 30), ratio {ratio:.2f}")
    record_bench("icr", "ICR of two 512x128 views", "ours", best["ours"], "scipy.linalg.eigh reference", best["scipy"], rounds=30)
    assert ratio < 3.0


@pytest.mark.parametrize("channels", [(8, 16, 32), (16, 32, 64)])
def test_heun_sampler_throughput(benchmark, channels):
    net = EDMDenoiser(0.75, channels).eval()
    benchmark.group = "Heun sampler, 18 steps, 256 images"
    out = benchmark.pedantic(lambda: heun_sample(net, 256, steps=18, seed=0), rounds=3, iterations=1)
    assert out.shape == (256, 1, 8, 8)
    ips = 256 / benchmark.stats.stats.median
    print(f"\nHeun sampler {channels}: {ips:.0f} images/s")
