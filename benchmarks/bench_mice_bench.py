"""The MICE-mini judge's throughput, against the fastest honest references on PyPI.

No PyPI package implements MICE-Bench (the official evaluator calls a VLM API and a UniPercept GPU
checkpoint). Two comparisons, timed interleaved in one process (``icml26.timing.interleaved_best``) and
recorded in ``results/bench/mice-bench.json`` (record it from a committed tree: the record names its commit):

* **evaluator throughput** on 1,872 creation outputs (the paper's creation size) + NERC on the editing
  outputs, with the chapter's scoring as it is now: the judge's CC, the **no-reference PR** of the chapter
  (`evaluators.noref_parts`: ghosting + PCA manifold, and the judge's entity coherence,
  `evaluators.pr_noref_scores`) and NERC. Ours runs them batched; the reference runs the same judge and checks
  image by image (as the official scripts loop over records), with scikit-image's ``structural_similarity``
  for NERC. This is a batching ablation of one implementation, not a peer: no other implementation of the
  same evaluator exists. (The earlier record timed the full-reference PR, which the chapter no longer uses.)
* **masked SSIM**: ours (the separable Gaussian filter of `scipy.ndimage.correlate1d` over the whole batch, float64) against
  scikit-image's ``structural_similarity(..., gaussian_weights=True, full=True)`` averaged over the mask, image
  by image: the same map to 1e-15 (claim M0f), the same separable float64 filtering, one thread. (The earlier
  peer, torchmetrics, ran a non-separable 11 x 11 filter: not like for like.) Target: ratio <= 1.2.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.mice_bench import cases, concepts, evaluators as ev
from icml26.timing import interleaved_best, record_bench

N_CREATE, N_EDIT, SIZE, V = 1872, 300, 32, 8
ROUNDS = 3


@pytest.fixture(scope="module")
def workload():
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    create = cases.creation_cases(N_CREATE, V, seed=0)
    gt = concepts.render_batch(np.stack([c.config for c in create]), SIZE)
    outputs = np.clip(gt + 0.05 * rng.standard_normal(gt.shape).astype(np.float32), 0, 1)
    edit = cases.editing_cases(N_EDIT, V, seed=0)
    src = concepts.render_batch(np.stack([c.source for c in edit]), SIZE)
    tgt = concepts.render_batch(np.stack([c.config for c in edit]), SIZE)
    masks = np.abs(src - tgt).max(-1) > 1e-6
    keep = masks.reshape(len(masks), -1).any(1) & ~masks.reshape(len(masks), -1).all(1)
    torch.manual_seed(0)
    clf = ev.ConceptClassifier(V).eval()
    for p in clf.parameters():
        p.requires_grad_(False)
    cal = ev.calibrate(gt[:600])
    return dict(create=create, gt=gt, outputs=outputs, src=src[keep], tgt=tgt[keep], masks=masks[keep], clf=clf, cal=cal)


COHERENCE_REF = 0.5


def _ours(w):
    pred = ev.predict(w["clf"], w["outputs"])
    cc = ev.cc_scores(pred, w["create"])
    pr = ev.pr_noref_scores(w["outputs"], w["cal"], ev.judge_coherence(w["clf"], w["outputs"]), COHERENCE_REF)
    nerc = ev.nerc_scores(w["tgt"], w["src"], w["masks"])
    return cc, pr, nerc


def _per_image(w):
    from skimage.metrics import structural_similarity

    cc, pr, nerc = [], [], []
    for i, c in enumerate(w["create"]):
        x = w["outputs"][i:i + 1]
        pred = ev.predict(w["clf"], x, batch=1)
        cc.append(ev.cc_scores(pred, [c])[0])
        pr.append(ev.pr_noref_scores(x, w["cal"], ev.judge_coherence(w["clf"], x, batch=1), COHERENCE_REF)[0])
    for x, y, m in zip(w["tgt"], w["src"], w["masks"]):
        _, full = structural_similarity(x.astype(np.float64), y.astype(np.float64), gaussian_weights=True, sigma=1.5,
                                        use_sample_covariance=False, data_range=1.0, channel_axis=-1, full=True)
        nerc.append(10 * np.clip(full.mean(-1)[~m].mean(), 0, 1))
    return np.array(cc), np.array(pr), np.array(nerc)


def test_evaluator_matches_the_per_image_loop(workload):
    a, b = _ours(workload), _per_image(workload)
    for x, y in zip(a, b):
        assert np.allclose(x, y, atol=1e-5)


def test_evaluator_throughput(workload, benchmark):
    best = interleaved_best({"ours": lambda: _ours(workload), "per-image": lambda: _per_image(workload)}, rounds=ROUNDS)
    rec = record_bench("mice-bench", "evaluator on 1,872 creation outputs + NERC", "icml26.mice_bench batched judge",
                       best["ours"], "per-image loop (skimage structural_similarity for NERC)", best["per-image"], ROUNDS,
                       note="7-head concept CNN (CC) + no-reference PR (ghosting, PCA manifold, judge coherence) + NERC, "
                            "32x32, one thread; a batching ablation (no peer implements this evaluator); issue target 0.1 not met")
    benchmark.pedantic(lambda: _ours(workload), rounds=1, iterations=1)
    print(rec["ratio"])
    assert rec["ratio"] <= 0.5


def test_masked_ssim_vs_skimage(workload, benchmark):
    from skimage.metrics import structural_similarity

    x, y, m = workload["tgt"].astype(np.float64), workload["src"].astype(np.float64), workload["masks"]

    def peer():
        out = []
        for xi, yi, mi in zip(x, y, m):
            _, full = structural_similarity(xi, yi, gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
                                            data_range=1.0, channel_axis=-1, full=True)
            out.append(full.mean(-1)[~mi].mean())
        return np.array(out)

    def ours():
        return ev.masked_ssim(x, y, m)

    assert np.allclose(ours(), peer(), atol=1e-10)
    best = interleaved_best({"ours": ours, "skimage": peer}, rounds=5)
    rec = record_bench("mice-bench", "masked SSIM (NERC)", "icml26.mice_bench.masked_ssim", best["ours"],
                       "skimage structural_similarity (Gaussian, full map) + mask, per image", best["skimage"], 5,
                       note=f"{len(x)} edits, 32x32x3, float64, separable Gaussian filtering on both sides, one thread; "
                            "target ratio <= 1.2")
    benchmark.pedantic(ours, rounds=1, iterations=1)
    assert rec["ratio"] <= 1.2
