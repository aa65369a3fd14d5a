"""Unit tests of icml26.mbr (SynTrans world, utilities vs sacrebleu, decoders, special cases, bad input)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import sacrebleu

from icml26.mbr import (METHODS, PRESETS, NoiseModel, SynTrans, bleu_ratio, channel_scores, from_mix, mbr_decode,
                        multiplicities, noisy_sample, r1_scores, reference_weights, sentence_score, utility_matrix,
                        utility_tensors)
from icml26.mbr.syntrans import slot_orders
from icml26.mbr.experiments import build_split, embedder_for, evaluate, grid_configs, grid_selections

WORDS = ["ab", "abc", "b", "cd", "cdef", "e", "fgh", "abcd", "x", "yz", "Hello,", "world.", "(it's)", "don't", "ü-ß"]


def _random_sentence(rng, words=WORDS, lo=1, hi=14):
    return " ".join(rng.choice(words, size=int(rng.integers(lo, hi))))


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(1)
    return [(_random_sentence(rng), _random_sentence(rng)) for _ in range(300)]


@pytest.mark.parametrize("utility", ["bleu", "chrf", "chrf1"])
def test_matches_sacrebleu_both_directions(pairs, utility):
    ref_metric = {"bleu": lambda h, r: sacrebleu.sentence_bleu(h, [r]).score,
                  "chrf": lambda h, r: sacrebleu.sentence_chrf(h, [r]).score,
                  "chrf1": lambda h, r: sacrebleu.metrics.CHRF(beta=1).sentence_score(h, [r]).score}[utility]
    hyps = [[h] for h, _ in pairs]; refs = [[r] for _, r in pairs]
    fwd, rev = utility_tensors(hyps, refs, (utility,))[utility]
    ours_f = fwd[:, 0, 0]; ours_r = rev[:, 0, 0]
    theirs_f = np.array([ref_metric(h, r) for h, r in pairs]); theirs_r = np.array([ref_metric(r, h) for h, r in pairs])
    assert np.max(np.abs(ours_f - theirs_f)) < 1e-9
    assert np.max(np.abs(ours_r - theirs_r)) < 1e-9


@pytest.mark.parametrize("utility", ["bleu", "chrf"])
def test_tiny_corpus_and_empty_strings_match_sacrebleu(utility):
    # a whole batch shorter than the n-gram order (e.g. one-letter candidates) used to crash the n-gram chaining
    ref_metric = {"bleu": lambda h, r: sacrebleu.sentence_bleu(h, [r]).score,
                  "chrf": lambda h, r: sacrebleu.sentence_chrf(h, [r]).score}[utility]
    for hyps in (["a", "b"], ["", "a"], ["", ""], ["", "a b", "ab c d e f"]):
        fwd, rev = utility_matrix(hyps, hyps, utility)
        for i, j in itertools.product(range(len(hyps)), repeat=2):
            assert abs(fwd[i, j] - ref_metric(hyps[i], hyps[j])) < 1e-9
            assert abs(rev[i, j] - ref_metric(hyps[j], hyps[i])) < 1e-9
    assert mbr_decode(["a", "b"], utility=utility).index in (0, 1)


def test_matrix_equals_pairwise_and_groups_do_not_mix():
    rng = np.random.default_rng(2)
    H = [[_random_sentence(rng) for _ in range(5)] for _ in range(3)]
    R = [[_random_sentence(rng) for _ in range(4)] for _ in range(3)]
    out = utility_tensors(H, R, ("chrf", "bleu"))
    for s in range(3):
        for i in range(5):
            for j in range(4):
                assert out["chrf"][0][s, i, j] == pytest.approx(sacrebleu.sentence_chrf(H[s][i], [R[s][j]]).score, abs=1e-9)
                assert out["bleu"][1][s, i, j] == pytest.approx(sacrebleu.sentence_bleu(R[s][j], [H[s][i]]).score, abs=1e-9)


def test_chrf1_and_softf1_are_exactly_symmetric_chrf_is_not():
    rng = np.random.default_rng(3)
    H = [[_random_sentence(rng) for _ in range(6)]]
    out = utility_tensors(H, H, ("chrf", "chrf1", "softf1"))
    for u in ("chrf1", "softf1"):
        fwd, rev = out[u]
        assert np.array_equal(fwd, rev)
    fwd, rev = out["chrf"]
    assert not np.allclose(fwd, rev)


def test_chrf_asymmetry_sign_is_length_sign():
    rng = np.random.default_rng(4)
    H = [[_random_sentence(rng) for _ in range(30)]]
    fwd, rev = utility_matrix(H[0], H[0], "chrf")
    L = np.array([len("".join(h.split())) for h in H[0]])
    diff = np.sign(fwd - rev); lsign = np.sign(L[:, None] - L[None, :])
    matched = fwd > 0
    assert np.array_equal(diff[matched], lsign[matched])


def test_bleu_ratio_formula():
    assert bleu_ratio(24, 20) == pytest.approx(0.9963, abs=1e-4)
    h = "a b c d e f g h i j k l"; r = "a b c d e f g h"  # all n-gram orders match, no smoothing fires
    ratio = sentence_score(r, h, "bleu") / sentence_score(h, r, "bleu")
    assert ratio == pytest.approx(bleu_ratio(12, 8), rel=1e-9)


def test_syntrans_exact_logprob_and_noise():
    world = SynTrans.make("B", seed=0)
    rng = np.random.default_rng(0)
    tree = world.sample_source(rng)
    refs = world.sample_references(tree, rng, 200)
    lps = np.array([world.log_prob(tree, y) for y in refs])
    assert np.all(np.isfinite(lps)) and np.all(lps <= 0)
    assert world.log_prob(tree, "zzz qqq") == -math.inf
    # on a small sentence, the exact probabilities of the whole support sum to one
    small = {"main": {"subj": {"det": "d0", "noun": "n0", "adjs": [], "pp": None}, "verb": "v0", "obj": None,
                      "adv": "r0"}, "conj": None, "sub": None}
    support = set()
    for _, slots in slot_orders(world.lexicon, small):
        for combo in itertools.product(*[[o for o, _ in slot] for slot in slots]):
            support.add(" ".join(t for out in combo for t in out))
    assert len(support) > 20
    assert sum(math.exp(world.log_prob(small, y)) for y in support) == pytest.approx(1.0, abs=1e-12)
    # and the most frequent of 2000 draws has the frequency exp(log p*) predicts (4 binomial sd)
    draws = world.sample_references(small, rng, 2000)
    vals, counts = np.unique(draws, return_counts=True)
    k = int(np.argmax(counts)); p = math.exp(world.log_prob(small, vals[k]))
    assert abs(counts[k] / 2000 - p) < 4 * math.sqrt(p * (1 - p) / 2000)
    text, lbar = noisy_sample(world, tree, rng, NoiseModel())
    assert text and lbar < 0
    with pytest.raises(ValueError):
        SynTrans.make("C")
    with pytest.raises(ValueError):
        NoiseModel(temperature=0)


def test_special_cases_of_r2():
    rng = np.random.default_rng(5)
    U = rng.uniform(0, 100, (7, 7)); V = rng.uniform(0, 100, (7, 7)); lbar = rng.normal(-1, 0.3, 7)
    c = np.ones(7)
    assert np.allclose(channel_scores(U, V, METHODS["mbr"], ref_counts=c), U.mean(1))
    assert np.allclose(channel_scores(U, V, METHODS["reverse"], ref_counts=c), V.mean(1))
    assert np.allclose(channel_scores(U, V, METHODS["symmetric"], ref_counts=c), (U + V).mean(1) / 2)
    p = np.exp(lbar) / np.exp(lbar).sum()
    assert np.allclose(channel_scores(U, V, METHODS["model"], ref_counts=c, ref_lbar=lbar), U @ p)
    assert np.argmax(channel_scores(U, V, METHODS["map"], hyp_lbar=lbar)) == np.argmax(lbar)
    # symmetric utility: lambda has no effect
    S = (U + U.T) / 2
    for lam in (0.0, 0.3, 1.0):
        assert np.allclose(channel_scores(S, S.T, from_mix(lam, 0, 0), ref_counts=c), S.mean(1))


def test_reference_weights_count_repeats_once():
    refs = ["a", "b", "a", "c", "a"]
    c = multiplicities(refs)
    assert list(c) == [3, 1, 0, 1, 0]
    lbar = np.log(np.array([0.5, 0.2, 0.5, 0.3, 0.5]))
    w1 = reference_weights(c, lbar, 1.0)
    assert np.allclose(w1, [0.5, 0.2, 0, 0.3, 0])
    w0 = reference_weights(c, lbar, 0.0)
    assert np.allclose(w0, [0.6, 0.2, 0, 0.2, 0])


def test_r1_special_cases():
    rng = np.random.default_rng(6)
    U = rng.uniform(1, 100, (6, 6)); V = rng.uniform(1, 100, (6, 6))
    assert np.argmax(r1_scores(U, V, (1, 1, 0, 0))) == np.argmax(U.sum(1))
    assert np.argmax(r1_scores(U, V, (0, 0, 1, 1))) == np.argmax(V.sum(1))


def test_mbr_decode_and_bad_input():
    hyps = ["the cat sat", "the cat sat down", "a dog ran", "the cat sat"]
    res = mbr_decode(hyps, utility="chrf")
    U = utility_matrix(hyps, hyps, "chrf")[0]
    assert res.index == int(np.argmax(U.mean(1)))
    rev = mbr_decode(hyps, utility="bleu", method="reverse")
    assert rev.hypothesis in hyps
    res_nc = mbr_decode(hyps, utility="chrf", method="nc", weights=(1, 0, 0, 0))
    assert res_nc.index == res.index
    with pytest.raises(ValueError, match="non-empty"):
        mbr_decode([])
    with pytest.raises(ValueError, match="unknown utility"):
        mbr_decode(hyps, utility="comet")
    with pytest.raises(ValueError, match="4 entries"):
        mbr_decode(hyps, method="nc", weights=(1, 0, 0))
    with pytest.raises(ValueError, match="unknown method"):
        mbr_decode(hyps, method="beam")
    with pytest.raises(ValueError, match="log-probabilities"):
        mbr_decode(hyps, method="map")
    with pytest.raises(ValueError, match="empty hypothesis"):
        utility_matrix([], ["a"])
    with pytest.raises(ValueError, match="lambda"):
        from_mix(1.5, 0, 0)
    with pytest.raises(ValueError, match="must lie in \\[0, 1\\]"):
        mbr_decode(hyps, method="nc", weights=(1, 0, 0, 1.5))
    with pytest.raises(ValueError, match=">= 0"):
        mbr_decode(hyps, method="nc", weights=(1, -1, 0, 0))


def test_small_split_and_grid_are_deterministic():
    world = SynTrans.make("A", seed=0)
    emb = embedder_for([world])
    d1 = build_split(world, "dev", 8, 6, 5, 0, NoiseModel(), ("chrf", "softf1"), emb, exact_logp=True)
    d2 = build_split(world, "dev", 8, 6, 5, 0, NoiseModel(), ("chrf", "softf1"), emb)
    assert d1.samples == d2.samples and np.array_equal(d1.U["chrf"][0], d2.U["chrf"][0])
    assert d1.U["chrf"][0].shape == (8, 6, 6) and d1.O["softf1"].shape == (8, 6)
    cfgs = grid_configs((0, 0.5, 1), (0, 1), (0, 5))
    assert cfgs[0] == (0, 0, 0) and len(cfgs) == 12
    sel = grid_selections(d1, "chrf", cfgs)
    assert sel.shape == (12, 8)
    assert set(evaluate(d1, sel[0])) == {"chrf", "softf1"}
    assert d1.true_logp.shape == (8, 6)


def test_presets_have_every_scale():
    assert set(PRESETS) == {"smoke", "book", "full"}
    for p in PRESETS.values():
        assert len(p["lams"]) * len(p["deltas"]) * len(p["betas"]) == 75


def test_seq2seq_trains_and_samples():
    torch = pytest.importorskip("torch")
    from icml26.mbr import Seq2Seq, Seq2SeqConfig

    torch.set_num_threads(1)
    world = SynTrans.make("A", seed=0)
    model = Seq2Seq(world, Seq2SeqConfig(d_model=32, heads=2, layers=1, steps=40, batch=16, lr=3e-3, n_train=200, max_len=30))
    losses = model.train()
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    rng = np.random.default_rng(0)
    texts, lbar = model.sample([world.sample_source(rng) for _ in range(2)], 3, rng)
    assert len(texts) == 2 and len(texts[0]) == 3 and lbar.shape == (2, 3) and np.all(np.isfinite(lbar))
