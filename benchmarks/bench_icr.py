"""The icr chapter's two kernels against peer implementations of the same algorithms, threads pinned to one:

* the Fisher step of ICR (all generalised eigenvalues of the V-view scatter pair, Eq. 4) for 512 images x 8 views
  x 64-d features: ``icml26.icr`` (within/between scatter, then ``scipy.linalg.eigh(a, b)``) against
  scikit-learn's ``LinearDiscriminantAnalysis(solver="eigen")`` with the image id as class label (the review's
  suggested peer; its eigenvalues map exactly onto ours, checked here);
* EDM's deterministic Heun sampler (Karras et al. 2022, Alg. 1; 18 steps, 35 network evaluations) driving the same
  tiny U-Net: ``icml26.icr.heun_sample`` against diffusers' ``HeunDiscreteScheduler`` (``prediction_type="sample"``,
  stepped on the same EDM sigmas). diffusers is not a dependency of the book; the comparison is skipped without it.

Run: ``pytest benchmarks/bench_icr.py`` (``make bench``). Each ratio is ours / peer from one
`icml26.timing.interleaved_best` run and is recorded in ``results/bench/icr.json``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.chapter import pin_threads
from icml26.icr import EDMDenoiser, edm_sigmas, fisher_eigenvalues, heun_sample, lda_fisher_eigenvalues
from icml26.icr.estimators import within_between
from icml26.timing import interleaved_best, record_bench

N, V, D = 512, 8, 64


@pytest.fixture(autouse=True)
def one_thread():
    pin_threads(1)


def _views(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(N, D)) @ rng.normal(size=(D, D)) / np.sqrt(D)
    return s[:, None, :] + rng.normal(size=(N, V, D))


def ours_fisher(views: np.ndarray) -> np.ndarray:
    return fisher_eigenvalues(*within_between(views))


def sklearn_fisher(views: np.ndarray):
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    x = views.reshape(N * V, D)
    return LinearDiscriminantAnalysis(solver="eigen").fit(x, np.repeat(np.arange(N), V))


def test_fisher_step_vs_sklearn_lda():
    views = _views()
    lam = ours_fisher(views)
    np.testing.assert_allclose(lda_fisher_eigenvalues(views), lam, rtol=0, atol=1e-9 * np.abs(lam).max())
    rounds = 5
    best = interleaved_best({"ours": lambda: ours_fisher(views), "sklearn": lambda: sklearn_fisher(views)}, rounds=rounds)
    ratio = best["ours"] / best["sklearn"]
    print(f"\nFisher step {N}x{V}x{D}: ours {1e3 * best['ours']:.2f} ms, sklearn LDA {1e3 * best['sklearn']:.2f} ms, ratio {ratio:.3f}")
    record_bench("icr", f"Fisher eigenvalues, {N} images x {V} views x {D}-d", "icml26.icr (scatter + scipy eigh)",
                 best["ours"], "sklearn LinearDiscriminantAnalysis(solver='eigen').fit", best["sklearn"], rounds=rounds,
                 note="one thread; same eigenvalues to 1e-9 (checked); sklearn's class loop over 512 image ids dominates")
    assert ratio < 1.0  # a vectorised scatter must beat a per-class loop; fails if ours regresses badly


def _diffusers_heun(net: EDMDenoiser, n: int, steps: int = 18, seed: int = 0) -> torch.Tensor:
    """diffusers' Heun stepping on EDM's sigmas, the model called as D(x; sigma) (``prediction_type="sample"``)."""
    from diffusers import HeunDiscreteScheduler

    sched = HeunDiscreteScheduler(prediction_type="sample")
    sched.set_timesteps(steps)
    s = edm_sigmas(steps).float()
    sched.sigmas = torch.cat([s[:1], s[1:-1].repeat_interleave(2), s[-1:]])
    sched.timesteps = torch.arange(len(sched.sigmas) - 1, dtype=torch.float32)
    sched.set_begin_index(0)
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn((n, 1, 8, 8), generator=gen, dtype=torch.float64) * float(s[0])).float()
    with torch.no_grad():
        for i, t in enumerate(sched.timesteps):  # the model sees sigmas[i] in first- and second-order steps alike
            x = sched.step(net(x, float(sched.sigmas[i])), t, x).prev_sample
    return x


def test_heun_sampler_vs_diffusers():
    pytest.importorskip("diffusers")
    torch.manual_seed(0)
    net = EDMDenoiser(0.75, (16, 32, 64)).eval()
    with torch.no_grad():  # a non-trivial denoiser: perturb the zero-initialised output layer
        for p in net.parameters():
            p.add_(0.05 * torch.randn_like(p))
    n = 256
    ours = heun_sample(net, n, steps=18, seed=0)
    peer = _diffusers_heun(net, n, steps=18, seed=0)
    assert float((ours - peer).abs().max()) < 1e-3  # same algorithm (float32 vs float64 sigma arithmetic)
    import diffusers

    rounds = 3
    best = interleaved_best({"ours": lambda: heun_sample(net, n, steps=18, seed=0),
                             "diffusers": lambda: _diffusers_heun(net, n, steps=18, seed=0)}, rounds=rounds)
    ratio = best["ours"] / best["diffusers"]
    print(f"\nHeun 18 steps x {n} images: ours {best['ours']:.3f} s, diffusers {best['diffusers']:.3f} s, ratio {ratio:.3f}")
    record_bench("icr", f"EDM Heun sampler, 18 steps, {n} images, (16, 32, 64) U-Net", "icml26.icr.heun_sample",
                 best["ours"], f"diffusers {diffusers.__version__} HeunDiscreteScheduler (EDM sigmas)", best["diffusers"],
                 rounds=rounds, note="one thread; same samples to 1e-3 (checked); the network evaluations dominate both")
    assert ratio < 1.5
