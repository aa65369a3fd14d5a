"""Utility matrix for 64 candidates x 64 pseudo-references (chrF and BLEU, both directions):
icml26.mbr.utility_tensors (one pass of sparse match statistics) vs sacrebleu pair by pair.

Run: ``pytest benchmarks/bench_mbr.py --benchmark-only`` (``make bench``). The ratio test times both in
one process, checks the scores are identical (|diff| < 1e-9) and bounds the speed-up (target >= 10x).
"""
from __future__ import annotations


import numpy as np
import pytest
import sacrebleu

from icml26.mbr import NoiseModel, SynTrans, noisy_samples, utility_tensors
from icml26.timing import interleaved_best, record_bench

N = 64


def _candidates(seed: int = 0) -> list[str]:
    world = SynTrans.make("A", seed)
    rng = np.random.default_rng(seed)
    tree = world.sample_source(rng)
    return [t for t, _ in noisy_samples(world, tree, rng, NoiseModel(), N)]


def ours(hyps):
    out = utility_tensors([hyps], [hyps], ("chrf", "bleu"))
    return out["chrf"][0][0], out["chrf"][1][0], out["bleu"][0][0], out["bleu"][1][0]


def theirs(hyps):
    chrf = np.array([[sacrebleu.sentence_chrf(h, [r]).score for r in hyps] for h in hyps])
    bleu = np.array([[sacrebleu.sentence_bleu(h, [r]).score for r in hyps] for h in hyps])
    return chrf, chrf.T, bleu, bleu.T  # the reverse direction u(r, h) is the transpose when H = R


@pytest.mark.parametrize("impl", ["icml26", "sacrebleu"])
def test_utility_matrix_64x64(benchmark, impl):
    hyps = _candidates()
    benchmark.group = "chrF + BLEU utility matrix, 64 x 64, both directions"
    benchmark(ours if impl == "icml26" else theirs, hyps)


def test_ratio_ours_vs_sacrebleu():
    hyps = _candidates()
    a, b = ours(hyps), theirs(hyps)
    for x, y in zip(a, b):
        assert np.max(np.abs(x - y)) < 1e-9
    best = interleaved_best({"ours": lambda: ours(hyps), "sacrebleu": lambda: theirs(hyps)}, rounds=3)
    ratio = best["sacrebleu"] / best["ours"]
    print(f"\n64x64 chrF+BLEU, both directions: ours {best['ours'] * 1e3:.1f} ms, sacrebleu pair by pair "
          f"{best['sacrebleu'] * 1e3:.1f} ms, speed-up = {ratio:.1f}x")
    record_bench("mbr", "64x64 chrF+BLEU utility matrix, both directions", "ours (vectorised)", best["ours"],
                 "sacrebleu sentence scores pair by pair", best["sacrebleu"], rounds=3)
    assert ratio >= 10
