"""CQF's core kernels against the best peers on PyPI, as ratios measured in one process.

(a) 4-gram language model: fit on 200k tokens + score 20k tokens, `icml26.cqf.NGramLM` vs
    `nltk.lm.AbsoluteDiscountingInterpolated` (the same interpolated absolute-discounting model; nltk is
    timed on a 20k-token fit and scaled linearly, since its 200k-token fit takes minutes).
(b) DSIR importance weights: featurise + score 10k documents, `icml26.cqf.DSIRLike` vs
    `data_selection.HashedNgramDSIR` (featurizer + importance_estimator, the same log-weights).
Run: ``pytest benchmarks/bench_cqf.py`` (``make bench``).
"""
from __future__ import annotations

import numpy as np
import pytest

from icml26.cqf import DSIRLike, NGramLM, SynthWeb
from icml26.timing import interleaved_best, record_bench

nltk_lm = pytest.importorskip("nltk.lm")
data_selection = pytest.importorskip("data_selection")


def _docs_until(world, tokens):
    d = world.web(int(tokens / 55) + 100)
    return d.head_tokens(tokens)


def test_ratio_ngram_vs_nltk():
    from nltk.util import everygrams

    world = SynthWeb(0)
    train, test = _docs_until(world, 200_000), _docs_until(world, 20_000)
    small = train.head_tokens(20_000)
    sents = [[str(x) for x in small.tokens[a:b]] for a, b in zip(small.offsets[:-1], small.offsets[1:])]
    tsents = [[str(x) for x in test.tokens[a:b]] for a, b in zip(test.offsets[:-1], test.offsets[1:])]
    tsents = tsents[: max(1, len(tsents) // 10)]  # nltk scores 2k tokens, scaled by 10

    def ours():
        NGramLM(world.vocab.size).fit(train).token_logprobs(test)

    def peer():
        m = nltk_lm.AbsoluteDiscountingInterpolated(4, discount=0.75)
        m.fit([list(everygrams(s, max_len=4)) for s in sents], vocabulary_text=[x for s in sents for x in s])
        for s in tsents:
            for i, w in enumerate(s):
                m.score(w, s[max(0, i - 3):i] or None)

    best = interleaved_best({"ours": ours, "nltk": peer}, rounds=3)
    scale = train.n_tokens / small.n_tokens  # fit time is linear in the tokens; scoring scaled by 10 (below)
    peer_seconds = best["nltk"] * scale  # scoring 2k vs 20k tokens: about the same factor
    ratio = best["ours"] / peer_seconds
    print(f"\n4-gram fit 200k + score 20k: ours {best['ours']:.3f} s, nltk (scaled from 20k / 2k) {peer_seconds:.1f} s, "
          f"ratio ours/nltk = {ratio:.4f} ({1 / ratio:.0f}x faster)")
    record_bench("cqf", "4-gram fit (200k tokens) + score (20k tokens)", "icml26.cqf.NGramLM", best["ours"],
                 "nltk.lm AbsoluteDiscountingInterpolated (linear scaling from 20k-token fit, 2k-token scoring)",
                 peer_seconds, rounds=3)
    assert ratio <= 1 / 20


def test_ratio_dsir_vs_data_selection(tmp_path):
    import json

    world = SynthWeb(0)
    hq, lq = world.hq("orca", 300), world.web(300)
    probe = world.web(10_000)
    for name, docs in (("raw", lq), ("target", hq)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": s}) + "\n" for s in docs.texts(world.vocab)))
    peer_model = data_selection.HashedNgramDSIR([str(tmp_path / "raw.jsonl")], [str(tmp_path / "target.jsonl")],
                                                cache_dir=str(tmp_path / "c"), num_proc=1, ngrams=2, num_buckets=10000,
                                                min_example_length=0)
    peer_model.fit_importance_estimator(num_tokens_to_fit="all")
    ours_model = DSIRLike(world.vocab, 10000, mode="sha256").fit(hq, lq)
    texts = probe.texts(world.vocab)
    sub = texts[:1000]  # data-selection scores 1k documents, scaled by 10

    def ours():
        ours_model.log_weights(probe)

    def peer():
        for s in sub:
            peer_model.importance_estimator(peer_model.featurizer(s))

    best = interleaved_best({"ours": ours, "peer": peer}, rounds=3)
    peer_seconds = best["peer"] * len(texts) / len(sub)
    ratio = best["ours"] / peer_seconds
    print(f"\nDSIR weights of 10k docs: ours {best['ours']:.3f} s, data-selection (scaled from 1k) {peer_seconds:.2f} s, "
          f"ratio = {ratio:.4f} ({1 / ratio:.0f}x faster)")
    record_bench("cqf", "DSIR featurise + score 10k documents", "icml26.cqf.DSIRLike (sha256 mode)", best["ours"],
                 "data-selection HashedNgramDSIR featurizer + importance_estimator (linear scaling from 1k docs)",
                 peer_seconds, rounds=3)
    assert ratio <= 1 / 10
