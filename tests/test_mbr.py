"""Unit tests of icml26.mbr (SynTrans world, utilities vs sacrebleu, decoders, special cases, bad input)."""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
import sacrebleu

from icml26.mbr import (MAP_CONFIG, MBR_CONFIG, METHODS, PRESETS, NoiseModel, SynTrans, beta_unit, bleu_ratio,
                        calibrated_lbar, channel_scores, channel_subset, config_index, corpus_chrf_from_stats,
                        corpus_chrf_single_refs, from_mix, mbr_decode, multiplicities, noisy_sample, paired_bootstrap,
                        r1_configs, r1_grid_selections, r1_scores, reference_weights, rowwise_spearman, run_study,
                        select_config, sentence_score, shared_tokens, spearman, string_noise, utility_matrix,
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
    # delta > 0 without multiplicities would weight every repeat again: refused
    with pytest.raises(ValueError, match="ref_counts"):
        channel_scores(U, V, METHODS["model"], ref_lbar=lbar)
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
    with pytest.raises(ValueError, match="non-negative"):
        r1_scores(-U, V, (1, 1, 0, 0))
    with pytest.raises(ValueError, match="positive"):
        r1_scores(U, V, (1, 1, 0, 0), prior_h=np.zeros(6))


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
    assert mbr_decode(hyps, method="map", hyp_lbar=[-1.0, -0.5, -2.0, -1.0]).index == 1
    with pytest.raises(ValueError, match="hyp_lbar"):
        mbr_decode(hyps, method="map", hyp_lbar=[-1.0, np.nan, -2.0, -1.0])
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
    emb = embedder_for(world)
    d1 = build_split(world, "dev", 8, 6, 5, 0, NoiseModel(), ("chrf", "softf1"), emb, exact_logp=True)
    d2 = build_split(world, "dev", 8, 6, 5, 0, NoiseModel(), ("chrf", "softf1"), emb)
    assert d1.samples == d2.samples and np.array_equal(d1.U["chrf"][0], d2.U["chrf"][0])
    assert d1.U["chrf"][0].shape == (8, 6, 6) and d1.O["softf1"].shape == (8, 6) and d1.dev["chrf"].shape == (8, 6)
    assert d1.chrf_stats["m"].shape == (6, 8, 6, 5)
    cfgs = grid_configs((0, 0.5, 1), (0, 1), (0, 5))
    assert cfgs[0] == MBR_CONFIG and cfgs[-1] == MAP_CONFIG and len(cfgs) == 13
    sel = grid_selections(d1, "chrf", cfgs)
    assert sel.shape == (13, 8)
    assert set(evaluate(d1, sel[0])) == {"chrf", "softf1"}
    assert d1.true_logp.shape == (8, 6)
    # the dev signal is the utility against the one held-out reference
    assert d1.dev["chrf"][3, 2] == pytest.approx(sentence_score(d1.samples[3][2], d1.heldout[3], "chrf"), abs=1e-9)
    with pytest.raises(ValueError, match="MBR"):
        grid_configs((0.5,), (0,), (0,))
    with pytest.raises(ValueError, match="not in the grid"):
        config_index(cfgs, (0.3, 0, 0))


def test_channel_subsets_and_map():
    cfgs = grid_configs((0, 0.5, 1), (0, 1), (0, 2))
    lam = channel_subset(cfgs, "lambda")
    assert lam[0] == config_index(cfgs, MBR_CONFIG) and {cfgs[c] for c in lam} == {(0, 0, 0), (0.5, 0, 0), (1, 0, 0)}
    assert {cfgs[c] for c in channel_subset(cfgs, "beta")} == {(0, 0, 0), (0, 0, 2), MAP_CONFIG}
    assert {cfgs[c] for c in channel_subset(cfgs, "delta")} == {(0, 0, 0), (0, 1, 0)}
    assert len(channel_subset(cfgs, "all")) == len(cfgs)
    with pytest.raises(ValueError, match="unknown channel"):
        channel_subset(cfgs, "gamma")
    world = SynTrans.make("A", seed=0)
    d = build_split(world, "test", 10, 6, 4, 1, NoiseModel(), ("bleu",), embedder_for(world))
    assert np.array_equal(select_config(d, "bleu", MAP_CONFIG), np.argmax(d.lbar, axis=-1))
    assert beta_unit(d, "bleu") > 0
    # a huge finite b is MAP up to ties in lbar
    assert np.array_equal(select_config(d, "bleu", (0.0, 0.0, 1e9)), select_config(d, "bleu", MAP_CONFIG))


def test_softf1_embedders_are_per_task():
    a, b = SynTrans.make("A", seed=0), SynTrans.make("B", seed=0)
    shared = shared_tokens([a, b])
    assert shared  # the pseudo-word vocabularies overlap: one merged table would mix the tasks' concepts
    for world in (a, b):
        emb = embedder_for(world)
        for sid, syns in world.lexicon.synonyms.items():
            vecs = [emb.vector(w) for w in syns]
            # near, not identical: about the declared cosine (0.8), well above unrelated tokens
            assert all(0.6 < float(vecs[0] @ v) < 0.999 for v in vecs[1:]), f"synonyms of {sid} are not near"
    with pytest.raises(ValueError, match="one embedder per task"):
        embedder_for([a, b])


def test_calibrated_scores():
    rng = np.random.default_rng(0)
    trace = rng.normal(-1, 0.5, (400, 12)); eps = rng.standard_normal((400, 12))
    assert np.array_equal(calibrated_lbar(trace, eps, 1.0), trace)
    for c in (0.0, 0.5):
        lb = calibrated_lbar(trace, eps, c)
        assert np.allclose(lb.mean(-1), trace.mean(-1) + trace.std(-1) * np.sqrt(1 - c * c) * eps.mean(-1))
        corr = np.mean([np.corrcoef(lb[s], trace[s])[0, 1] for s in range(400)])
        assert corr == pytest.approx(c, abs=0.05)
    with pytest.raises(ValueError, match="calibration"):
        calibrated_lbar(trace, eps, 1.5)
    noise = string_noise([["a", "b", "a"], ["c", "c", "c"]], np.random.default_rng(1))
    assert noise[0, 0] == noise[0, 2] != noise[0, 1] and noise[1, 0] == noise[1, 1] == noise[1, 2]
    world = SynTrans.make("A", seed=0)
    d = build_split(world, "test", 6, 5, 4, 0, NoiseModel(), ("chrf",), embedder_for(world), calibration=0.3)
    assert d.calibration == 0.3 and np.array_equal(d.recalibrated(1.0).lbar, d.lbar_trace)
    assert d.recalibrated(1.0).samples is d.samples  # only the scores change


def test_corpus_chrf_matches_sacrebleu():
    world = SynTrans.make("B", seed=0)
    d = build_split(world, "test", 25, 5, 3, 2, NoiseModel(), ("chrf",), embedder_for(world))
    sel = np.random.default_rng(0).integers(0, 5, 25)
    ours = corpus_chrf_single_refs(d, sel)
    hyps = [d.samples[s][i] for s, i in enumerate(sel)]
    for k in range(3):
        assert ours[k] == pytest.approx(sacrebleu.corpus_chrf(hyps, [[r[k] for r in d.oracle_refs]]).score, abs=1e-9)
    with pytest.raises(ValueError, match="shape"):
        corpus_chrf_from_stats(np.zeros((4, 3)), np.zeros((4, 3)), np.zeros((4, 3)))


def test_paired_bootstrap_and_correlations():
    rng = np.random.default_rng(0)
    diffs = [rng.normal(1.0, 1.0, 200) for _ in range(3)]
    mean, lo, hi = paired_bootstrap(diffs, 500, seed=0)
    assert lo < mean < hi and lo > 0.7 and hi < 1.3
    assert paired_bootstrap([np.zeros(5)], 100) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        paired_bootstrap([np.zeros(0)])
    assert math.isnan(spearman(np.ones(5), np.arange(5)))  # undefined, not 0
    assert rowwise_spearman(np.arange(12.0).reshape(2, 6), np.arange(12.0).reshape(2, 6)) == pytest.approx(1.0)


def test_r1_grid_contains_mbr():
    world = SynTrans.make("A", seed=0)
    d = build_split(world, "test", 12, 6, 4, 0, NoiseModel(), ("chrf",), embedder_for(world))
    cfgs = r1_configs((0.0, 1.0), (1.0,), (0.0,), priors=("u",))
    assert cfgs[0] == ("u", 1.0, 1.0, 0.0, 0.0)
    sel = r1_grid_selections(d, "chrf", cfgs)
    mbr_scores = d.U["chrf"][0].mean(-1)
    assert np.allclose(mbr_scores[np.arange(12), sel[0]], mbr_scores.max(-1))


def test_presets_have_every_scale():
    assert set(PRESETS) == {"smoke", "book", "full"}
    for name, p in PRESETS.items():
        cfgs = grid_configs(p["lams"], p["deltas"], p["betas"])
        assert len(cfgs) == len(p["lams"]) * len(p["deltas"]) * len(p["betas"]) + 1  # + MAP
        assert 0.0 <= p["calibration"] <= 1.0 and min(p["calibrations"]) == 0.0 and max(p["calibrations"]) == 1.0
        assert p["n_seeds"] >= 3  # method comparisons are measured over >= 3 seeds
    assert PRESETS["full"]["model"] == "seq2seq" and "sweep" in PRESETS["full"]


def test_run_study_over_seeds_and_recalibration():
    p = dict(PRESETS["smoke"], n_seeds=2, n_sources=6, n_samples=5, n_oracle=4, tasks=("A",), utilities=("chrf", "bleu"),
             n_dev_sources=20, n_planted_refs=0)
    st = run_study(p, show_progress=False)
    assert st.seeds == [0, 1] and set(st.splits) == {(s, "A", sp) for s in (0, 1) for sp in ("dev", "test")}
    assert st.configs[st.mbr] == MBR_CONFIG
    tuned, base = st.gain("A", "chrf", "lambda")
    assert len(tuned) == len(base) == 2
    assert st.tuned(0, "A", "chrf", "lambda") in channel_subset(st.configs, "lambda")
    st1 = st.recalibrated(1.0)
    assert st1.calibration == 1.0 and st1.splits[(0, "A", "test")].U is st.splits[(0, "A", "test")].U
    # lambda-only selections do not look at the model score, so they cannot change with the calibration
    lam = channel_subset(st.configs, "lambda")
    assert np.array_equal(st1.selections[(0, "A", "test", "chrf")][lam], st.selections[(0, "A", "test", "chrf")][lam])
    # the cache carried over by recalibration (what does not read the model score) changes no selection
    for c in (0.0, 0.5):
        d = st.splits[(1, "A", "dev")].recalibrated(c)
        fresh = dataclasses.replace(d, _cache={})
        assert d._cache and np.array_equal(grid_selections(d, "bleu", st.configs), grid_selections(fresh, "bleu", st.configs))
    with pytest.raises(ValueError, match="model"):
        run_study(dict(p, model="beam"))


def test_seq2seq_hold_schedule():
    """The "hold" learning-rate schedule (full's): linear warm-up, a cosine from the peak to final_lr x peak, then that
    rate held constant over the last `hold` of the steps, where the convergence rule's last fifth lies; the schedule is
    what the optimizer sees; bad settings are refused."""
    torch = pytest.importorskip("torch")
    from icml26.mbr import Seq2Seq, Seq2SeqConfig
    from icml26.mbr.seq2seq import lr_factor

    cfg = Seq2SeqConfig(steps=1000, schedule="hold", warmup=0.05, hold=0.6, final_lr=0.1)
    f = np.array([lr_factor(i, cfg) for i in range(cfg.steps)])
    assert f[0] == pytest.approx(1 / 50) and f[49] == pytest.approx(1.0)           # warm-up over 5 % of the steps
    assert np.all(np.diff(f[50:400]) <= 1e-12) and f[50] == pytest.approx(1.0)      # the cosine falls monotonically
    assert np.all(f[400:] == 0.1)                                                   # held over the last 60 %
    assert f[399] > 0.1 and f[399] == pytest.approx(0.1, abs=1e-4)                  # continuous into the hold
    # the rule's judged last fifth (steps 800..1000) lies inside the hold
    assert np.all(f[int(0.8 * cfg.steps):] == cfg.final_lr)
    for bad in (dict(schedule="linear"), dict(hold=1.0), dict(warmup=0.5, hold=0.5), dict(final_lr=0.0), dict(hold=-0.1)):
        with pytest.raises(ValueError):
            Seq2SeqConfig(**bad)
    # the optimizer follows the schedule: after training, the rate is the held one
    torch.set_num_threads(1)
    small = Seq2SeqConfig(d_model=16, heads=2, layers=1, steps=20, batch=4, lr=1e-3, n_train=20, max_len=12,
                          schedule="hold", hold=0.5, final_lr=0.2, n_evals=4)
    model = Seq2Seq(SynTrans.make("A", seed=0), small)
    seen = []
    orig = torch.optim.AdamW.step

    def spy(self, *a, **k):
        seen.append(self.param_groups[0]["lr"])
        return orig(self, *a, **k)
    try:
        torch.optim.AdamW.step = spy
        model.train(n_heldout=8)
    finally:
        torch.optim.AdamW.step = orig
    assert seen == pytest.approx([1e-3 * lr_factor(i, small) for i in range(small.steps)])
    assert model.heldout[0] == [0, 5, 10, 15, 20]                                   # cfg.n_evals decides the cadence


def test_seq2seq_trains_and_samples():
    torch = pytest.importorskip("torch")
    from icml26.mbr import Seq2Seq, Seq2SeqConfig

    torch.set_num_threads(1)
    world = SynTrans.make("A", seed=0)
    model = Seq2Seq(world, Seq2SeqConfig(d_model=32, heads=2, layers=1, steps=40, batch=16, lr=3e-3, n_train=200, max_len=30))
    losses = model.train(n_heldout=32, n_evals=4)
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    # the held-out KL(p* || p_theta) curve (the chapter's convergence curve): at step 0 and evenly to the end, finite,
    # falling with training; drawn from its own stream, so training itself is unchanged by it
    steps_kl, kl = model.heldout
    assert steps_kl == [0, 10, 20, 30, 40] and np.all(np.isfinite(kl)) and kl[-1] < kl[0]
    again = Seq2Seq(world, Seq2SeqConfig(d_model=32, heads=2, layers=1, steps=40, batch=16, lr=3e-3, n_train=200, max_len=30))
    assert np.allclose(again.train(n_evals=0), losses) and again.heldout == ([], [])
    rng = np.random.default_rng(0)
    texts, lbar = model.sample([world.sample_source(rng) for _ in range(2)], 3, rng)
    assert len(texts) == 2 and len(texts[0]) == 3 and lbar.shape == (2, 3) and np.all(np.isfinite(lbar))
    # sampling encodes once and decodes step by step: the same logits as nn.Transformer.forward
    srcs = model._encode_src([world.sample_source(rng) for _ in range(3)])
    tgt = model.target_batch([world.sample_reference(world.sample_source(rng), rng) for _ in range(3)])[:, :-1]
    T = tgt.shape[1]
    with torch.no_grad():
        direct = model.out(model.net(model.src_emb(srcs) + model.pos(torch.arange(srcs.shape[1])),
                                     model.tgt_emb(tgt) + model.pos(torch.arange(T)),
                                     tgt_mask=torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1),
                                     src_key_padding_mask=srcs == 0, tgt_key_padding_mask=tgt == 0,
                                     memory_key_padding_mask=srcs == 0))
        assert torch.allclose(direct, model._logits(srcs, tgt), atol=1e-6)
    # epsilon above every probability (a flat, untrained model): the most probable token is kept, no NaN
    flat = Seq2Seq(world, Seq2SeqConfig(d_model=16, heads=2, layers=1, steps=1, batch=4, n_train=10, max_len=6, epsilon=0.9))
    texts, lbar = flat.sample([world.sample_source(rng)], 4, rng)
    assert len(texts[0]) == 4 and np.all(np.isfinite(lbar))
    # a truncated reference gets no end-of-sentence token; a short one does
    short = Seq2Seq(world, Seq2SeqConfig(d_model=16, heads=2, layers=1, steps=1, batch=4, n_train=10, max_len=3))
    words = world.lexicon.target_vocabulary
    tgt = short.target_batch([" ".join(words[:5]), " ".join(words[:2])])
    from icml26.mbr.seq2seq import BOS, EOS
    assert tgt[0].tolist() == [BOS] + [short.tgt_ids[w] for w in words[:3]]
    assert tgt[1].tolist() == [BOS] + [short.tgt_ids[w] for w in words[:2]] + [EOS]
    # log_prob (KL(p* || p_theta) in the chapter): teacher-forced log p of whole outputs, EOS included, equal to the
    # sum of the step log-softmax; a log-probability (<= 0) per pair, batched or not
    trees = [world.sample_source(rng) for _ in range(3)]
    refs = [world.sample_reference(t, rng) for t in trees]
    lp = model.log_prob(trees, refs)
    assert lp.shape == (3,) and np.all(lp <= 0) and np.allclose(lp, model.log_prob(trees, refs, batch=1), atol=1e-5)
    tgt = model.target_batch(refs[:1])
    with torch.no_grad():
        steps = torch.log_softmax(model._logits(model._encode_src(trees[:1]), tgt[:, :-1]), -1)[0]
    assert lp[0] == pytest.approx(float(sum(steps[k, tgt[0, k + 1]] for k in range(tgt.shape[1] - 1))), abs=1e-4)
    with pytest.raises(ValueError, match="one reference per tree"):
        model.log_prob(trees, refs[:2])


def test_seq2seq_study_runs():
    """The `full` code path (a trained seq2seq sampler per task) on tiny sizes."""
    pytest.importorskip("torch")
    p = dict(PRESETS["full"], n_seeds=1, n_sources=3, n_samples=4, n_oracle=4, tasks=("A",), utilities=("chrf",),
             n_dev_sources=3, n_planted_refs=2,
             seq2seq=dict(d_model=16, heads=2, layers=1, steps=5, batch=8, lr=3e-3, n_train=50, max_len=30, epsilon=0.02))
    st = run_study(p, show_progress=False)
    d = st.splits[(0, "A", "test")]
    assert st.model == "seq2seq" and d.calibration == 1.0 and np.all(np.isfinite(d.lbar))
    assert all(isinstance(h, str) for hs in d.samples for h in hs)
    # the second regime: the same trained models (Study.models), sampled at another temperature, no training
    from icml26.mbr import resampled_factory
    assert set(st.models) == {"A"} and st.curves["A"] == list(st.models["A"].losses)
    hot = run_study(dict(p, n_planted_refs=0), sampler_factory=resampled_factory(st.models, 1.3), show_progress=False)
    assert hot.models["A"] is st.models["A"] and np.all(np.isfinite(hot.splits[(0, "A", "test")].lbar))
    with pytest.raises(ValueError, match="temperature"):
        resampled_factory(st.models, 0.0)


def test_bleu_ratio_needs_every_order():
    with pytest.raises(ValueError, match=">= 4"):
        bleu_ratio(3, 10)
    assert bleu_ratio(11, 10) > 1 > bleu_ratio(24, 20)  # reverse favours 1 extra token, not 4 (T5)


def test_softf1_is_order_aware_symmetric_and_bounded():
    """SoftF1 sees word order (a bag of concepts would not), stays symmetric like BERTScore-F1, lies in
    [0, 100], and scores a synonym swap between an exact match and an unrelated sentence."""
    world = SynTrans.make("A", seed=0)
    emb = embedder_for(world)
    syn = next(s for s in world.lexicon.synonyms.values() if len(s) > 1)
    words = world.lexicon.target_vocabulary[:6]
    sent = " ".join(words)
    swapped = " ".join(words[1::-1] + words[2:])
    assert sentence_score(sent, sent, "softf1", emb) == pytest.approx(100.0)
    assert sentence_score(swapped, sent, "softf1", emb) < 100.0 - 1e-6
    with_syn, other_syn = f"{sent} {syn[0]}", f"{sent} {syn[1]}"
    assert 80 < sentence_score(with_syn, other_syn, "softf1", emb) < 100
    hyps, refs = [[sent, swapped, with_syn]], [[other_syn, "zzq yyq", sent]]
    fwd, rev = utility_tensors(hyps, refs, ("softf1",), emb)["softf1"]
    assert np.all(fwd >= 0) and np.all(fwd <= 100 + 1e-9)
    fwd_t, _ = utility_tensors(refs, hyps, ("softf1",), emb)["softf1"]
    assert np.allclose(rev[0], fwd_t[0].T)


def test_r1_grid_and_bayes_oracle():
    """R1's grid contains MBR first and selects as r1_scores does (both priors); the Bayes oracle returns
    one candidate per source and utility."""
    from icml26.mbr import R1_MBR_CONFIG, bayes_selection, r1_configs, r1_grid_selections, r1_scores

    world = SynTrans.make("A", seed=0)
    d = build_split(world, "test", 6, 5, 4, 0, NoiseModel(), ("chrf", "softf1"), embedder_for(world))
    cfgs = r1_configs((0.0, 1.0), (1.0,), (0.0, 0.5))
    assert cfgs[0] == R1_MBR_CONFIG and {c[0] for c in cfgs} == {"u", "m"}
    sel = r1_grid_selections(d, "softf1", cfgs)
    for k, (prior, a, b, g, dl) in enumerate(cfgs):
        ph = None if prior == "u" else np.exp(d.lbar)
        ref = np.argmax(r1_scores(*d.U["softf1"], (a, b, g, dl), prior_h=ph, prior_r=ph), axis=-1)
        assert np.array_equal(sel[k], ref)
    with pytest.raises(ValueError, match="prior"):
        r1_configs((0.0,), (1.0,), (0.0,), priors=("x",))
    b = bayes_selection(world, d, ("chrf", "softf1"), 16, 4, 0, embedder_for(world))
    assert set(b) == {"chrf", "softf1"} and b["chrf"].shape == (4,)


def test_planted_control_selects_with_its_own_references_on_both_splits():
    """The planted configuration picks by fresh p* draws on dev and test alike (same strength), never by the
    references that score it, so its test score is not in-sample."""
    from icml26.mbr import PLANTED, bayes_selection

    p = dict(PRESETS["smoke"], n_seeds=1, n_sources=6, n_dev_sources=6, n_samples=5, n_oracle=4, tasks=("A",),
             utilities=("chrf",))
    st = run_study(p, show_progress=False)
    pl = st.with_planted(8)
    assert pl.configs[-1] == PLANTED and len(pl.configs) == len(st.configs) + 1
    for split, stream in (("dev", 11), ("test", 12)):
        d = st.splits[(0, "A", split)]
        want = bayes_selection(st.worlds["A"], d, ("chrf",), 8, d.n_sources, 0, st.embedders["A"], stream=stream)["chrf"]
        assert np.array_equal(pl.selections[(0, "A", split, "chrf")][-1], want)
    d = st.splits[(0, "A", "test")]
    assert np.isclose(pl.test[(0, "A", "chrf")][-1], d.O["chrf"][np.arange(d.n_sources), want].mean())


def test_channel_subsets_of_a_planted_grid_and_of_r1():
    """The one-channel sub-grids of a grid with the planted configuration (the positive control's study):
    the planted configuration belongs to no channel's sub-grid (it used to crash the lambda/delta/beta
    sub-grids, which unpacked it as (lambda, delta, b)); the full grid keeps it; an R1 grid has no
    one-channel sub-grids and says so."""
    from icml26.mbr import PLANTED, R1_MBR_CONFIG

    cfgs = grid_configs((0, 1), (0, 1), (0, 2)) + [PLANTED]
    for channel in ("lambda", "delta", "beta"):
        sub = channel_subset(cfgs, channel)
        assert sub == channel_subset(cfgs[:-1], channel) and len(cfgs) - 1 not in sub
    assert channel_subset(cfgs, "all")[-1] == len(cfgs) - 1
    with pytest.raises(ValueError, match="R2's"):
        channel_subset(r1_configs((0.0, 1.0), (1.0,), (0.0,)), "lambda", R1_MBR_CONFIG)
    # through the Study, as the notebook would call it: every channel tunes and gains on the planted study
    p = dict(PRESETS["smoke"], n_seeds=1, n_sources=6, n_dev_sources=6, n_samples=5, n_oracle=4, tasks=("A",),
             utilities=("chrf",))
    pl = run_study(p, show_progress=False).with_planted(4)
    for channel in ("lambda", "delta", "beta", "all"):
        tuned, base = pl.gain("A", "chrf", channel)
        assert len(tuned) == len(base) == 1 and np.isfinite(tuned[0])
        if channel != "all":
            assert pl.configs[pl.tuned(0, "A", "chrf", channel)] != PLANTED


def test_zscores_equal_scipy_population_zscore():
    """zscores is scipy.stats.zscore with ddof = 0 (the population spread over configurations), and
    zeros, not NaN, on a grid whose configurations all score the same."""
    from scipy.stats import zscore
    from icml26.mbr import zscores

    x = np.random.default_rng(0).normal(3.0, 2.0, 106)
    assert np.allclose(zscores(x), zscore(x, ddof=0), atol=1e-12)
    assert not np.allclose(zscores(x), zscore(x, ddof=1))   # the ddof matters: the check can fail
    assert np.array_equal(zscores(np.full(5, 7.0)), np.zeros(5))
    with pytest.raises(ValueError, match="1-d"):
        zscores(np.ones((2, 3)))


def test_fast_softf1_and_shared_hypothesis_rows_equal_the_padded_reference_paths():
    """utility_tensors' SoftF1 (flat tokens, segment maxima) equals the padded embedding + masked maxima of
    `_softf1_group`, empty strings included; with references that start with the hypotheses (H = R, then
    more) the n-gram rows shared with the hypotheses give the same BLEU/chrF as sacrebleu."""
    from icml26.mbr.metrics import _f1, _softf1_group

    world = SynTrans.make("B", seed=0)
    emb = embedder_for(world)
    rng = np.random.default_rng(5)
    trees = [world.sample_source(rng) for _ in range(4)]
    H = [[noisy_sample(world, t, rng, NoiseModel())[0] for _ in range(5)] for t in trees]
    R = [h + world.sample_references(t, rng, 3) for h, t in zip(H, trees)]
    H[1][2] = R[1][2] = ""; R[2][6] = ""
    out = utility_tensors(H, R, ("bleu", "chrf", "softf1"), emb)
    flat_h = [h for g in H for h in g]; flat_r = [r for g in R for r in g]
    Eh, mh = emb.embed([h.split() for h in flat_h]); Er, mr = emb.embed([r.split() for r in flat_r])
    for s in range(4):
        P, Rc = _softf1_group(Eh[s * 5:(s + 1) * 5], mh[s * 5:(s + 1) * 5], Er[s * 8:(s + 1) * 8], mr[s * 8:(s + 1) * 8])
        assert np.allclose(out["softf1"][0][s], _f1(P, Rc), atol=1e-9) and np.allclose(out["softf1"][1][s], _f1(Rc, P), atol=1e-9)
        for i, j in ((0, 0), (2, 2), (3, 6), (4, 7)):
            assert out["chrf"][0][s, i, j] == pytest.approx(sacrebleu.sentence_chrf(H[s][i], [R[s][j]]).score, abs=1e-9)
            assert out["bleu"][1][s, i, j] == pytest.approx(sacrebleu.sentence_bleu(R[s][j], [H[s][i]]).score, abs=1e-9)


def test_dev_split_without_oracle_references_and_planted_picks_in_the_same_pass():
    """A dev split may carry no oracle references (no claim reads them), a test split may not; the planted picks
    computed inside build_split equal bayes_selection's on the planted stream, and with_planted reuses them."""
    from icml26.mbr import PLANTED_STREAMS, bayes_selection

    world = SynTrans.make("A", seed=0)
    emb = embedder_for(world)
    d = build_split(world, "dev", 7, 5, 0, 3, NoiseModel(), ("chrf", "softf1"), emb, n_planted=6)
    assert d.O == {} and d.chrf_stats == {} and d.dev["chrf"].shape == (7, 5)
    assert d.dev["chrf"][4, 1] == pytest.approx(sentence_score(d.samples[4][1], d.heldout[4], "chrf"), abs=1e-9)
    want = bayes_selection(world, d, ("chrf", "softf1"), 6, 7, 3, emb, stream=PLANTED_STREAMS["dev"])
    assert d.n_planted == 6 and all(np.array_equal(d.planted[u], want[u]) for u in want)
    with pytest.raises(ValueError, match="n_oracle"):
        build_split(world, "test", 7, 5, 0, 3, NoiseModel(), ("chrf",), emb)
    p = dict(PRESETS["smoke"], n_seeds=1, n_sources=5, n_dev_sources=6, n_samples=4, n_oracle=3, tasks=("A",),
             utilities=("chrf",), n_planted_refs=4)
    st = run_study(p, show_progress=False)
    pl = st.with_planted(4)
    for split in ("dev", "test"):
        d = st.splits[(0, "A", split)]
        want = bayes_selection(st.worlds["A"], d, ("chrf",), 4, d.n_sources, 0, st.embedders["A"], stream=PLANTED_STREAMS[split])
        assert np.array_equal(pl.selections[(0, "A", split, "chrf")][-1], want["chrf"])


def test_paper_grid_z_unit_and_intersection_union():
    """The paper-like sub-grid keeps the configurations with every channel weight in [0, 1] (no MAP, no b > 1;
    R1: beta, delta <= 1); z_gain is the score difference over that sub-grid's spread; the intersection-union
    reading picks the interval that decides "every setting" for at_least and at_most regions."""
    import icml26
    from icml26.mbr import PLANTED, intersection_union, paper_grid, z_gain, zscores
    from icml26.stats import over_seeds

    cfgs = grid_configs((0, 1), (0, 1), (0, 0.5, 1, 4)) + [PLANTED]
    keep = paper_grid(cfgs)
    assert all(cfgs[i][2] <= 1 for i in keep) and len(keep) == 12 and MBR_CONFIG in [cfgs[i] for i in keep]
    assert config_index(cfgs, MAP_CONFIG) not in keep and len(cfgs) - 1 not in keep
    r1 = r1_configs((0.0, 1.0), (0.5, 1.0, 2.0), (0.0, 1.0))
    assert all(r1[i][2] <= 1 for i in paper_grid(r1)) and len(paper_grid(r1)) == 2 * 2 * 2 * 2
    x = np.array([1.0, 2.0, 3.0, 100.0])
    assert z_gain(x, 2, 0, [0, 1, 2]) == pytest.approx(2.0 / np.std([1.0, 2.0, 3.0]))
    assert z_gain(x, 2, 0) == pytest.approx(2.0 / np.std(x))           # the whole grid: a far worse (or better) config
    assert np.array_equal(zscores(np.full(4, 2.0), [0, 1]), np.zeros(4))
    s = {"a": over_seeds([1.0, 1.1, 0.9]), "b": over_seeds([0.1, -0.2, 0.5]), "c": over_seeds([-1.0, -1.1, -0.9])}
    assert intersection_union(s, icml26.at_least(0.0))[0] == "c"              # wholly below decides
    assert intersection_union({k: s[k] for k in "ab"}, icml26.at_least(0.0))[0] == "b"   # else the lowest lower end
    assert intersection_union({"a": s["a"]}, icml26.at_least(0.0))[1].ci_low > 0   # every interval inside
    assert s["a"].ci_low > 0.25 and intersection_union(s, icml26.at_most(0.25))[0] == "a"   # wholly above an at_most bound
    assert intersection_union({k: s[k] for k in "bc"}, icml26.at_most(0.25))[0] == "b"
    with pytest.raises(ValueError, match="one-sided"):
        intersection_union(s, icml26.between(0, 1))


def test_shuffled_dev_scores_against_the_next_sources_reference():
    """The shuffled-dev null: every dev source is scored against the next source's held-out reference (a cyclic
    shift); test scores and selections are unchanged, and the dev optimum is read from the new signal."""
    p = dict(PRESETS["smoke"], n_seeds=1, n_sources=4, n_dev_sources=6, n_samples=4, n_oracle=3, tasks=("A",),
             utilities=("chrf", "bleu"), n_planted_refs=0)
    st = run_study(p, show_progress=False)
    sh = st.shuffled_dev()
    d = st.splits[(0, "A", "dev")]
    sel = st.selections[(0, "A", "dev", "chrf")]
    want = np.mean([sentence_score(d.samples[s][sel[0, s]], d.heldout[(s + 1) % 6], "chrf") for s in range(6)])
    assert sh.dev[(0, "A", "chrf")][0] == pytest.approx(want, abs=1e-9)
    assert sh.test is st.test and sh.dev[(0, "A", "bleu")].shape == st.dev[(0, "A", "bleu")].shape
    assert not np.allclose(sh.dev[(0, "A", "chrf")], st.dev[(0, "A", "chrf")])
    subset = channel_subset(st.configs, "all")
    assert sh.tuned(0, "A", "chrf") == subset[int(np.argmax(sh.dev[(0, "A", "chrf")][subset]))]
    # the signal computed with the split equals the one computed apart (a split built without it)
    kept = dict(d.dev_shuffled); d.dev_shuffled = {}
    assert all(np.array_equal(st.shuffled_dev().dev[k], v) for k, v in sh.dev.items()) and kept
    assert np.allclose(kept["bleu"], d._cache[("dev_shuffled", ("chrf", "bleu"))]["bleu"], atol=1e-9)


def test_known_and_paper_subgrids_crossfit_and_sign_test():
    """The "known" sub-grid holds the five decoders R2 unifies, the "paper" one the z unit's configurations (and the
    plant); crossfit_z_gain chooses on one half and
    scores on the other (no in-sample maximum); share_on_side is the exact sign test (Clopper-Pearson)."""
    from icml26.mbr import KNOWN_DECODERS, PLANTED, crossfit_z_gain, paper_grid, share_on_side, z_gain

    cfgs = grid_configs((0, 0.5, 1), (0, 1), (0, 0.5, 4)) + [PLANTED]
    known = [cfgs[i] for i in channel_subset(cfgs, "known")]
    assert known[0] == MBR_CONFIG and sorted(map(str, known)) == sorted(map(str, KNOWN_DECODERS.values()))
    paper = channel_subset(cfgs, "paper")
    assert paper[0] == 0 and set(paper) == set(paper_grid(cfgs)) | {len(cfgs) - 1}
    with pytest.raises(ValueError, match="unknown channel"):
        channel_subset(cfgs, "gamma")
    # crossfit: a configuration that wins only on even sources cannot carry its in-sample maximum to odd ones
    S = 40
    vals = np.zeros((3, S)); vals[1, ::2] = 5.0; vals[2] = 1.0 + 0.01 * np.arange(S) % 3
    g = crossfit_z_gain(vals, [0, 1, 2], 0)
    full_pick = int(np.argmax(vals.mean(1)))
    assert g <= z_gain(vals.mean(1), full_pick, 0) + 1e-12
    honest = np.array([[0.0] * S, [1.0] * S])              # a real, uniform gain is kept whole
    assert crossfit_z_gain(honest, [0, 1], 0) == pytest.approx(z_gain(honest.mean(1), 1, 0))
    with pytest.raises(ValueError):
        crossfit_z_gain(vals[:, :3], [0, 1], 0)
    r = share_on_side(10, 10)
    assert r.mean == 1.0 and r.ci_low == pytest.approx(0.025 ** 0.1) and r.n == 10 and r.method == "exact binomial"
    assert share_on_side(5, 5).ci_low < 0.5 < share_on_side(9, 10).ci_low     # 5 of 5 cannot reject p = 1/2 at 5 %
    assert math.isnan(share_on_side(0, 0).mean)
    with pytest.raises(ValueError):
        share_on_side(3, 2)


def _tie_study():
    p = dict(PRESETS["smoke"], n_seeds=1, n_sources=4, n_dev_sources=8, n_samples=6, n_oracle=3, tasks=("A",),
             utilities=("chrf", "chrf1"), n_planted_refs=0)
    return run_study(p, show_progress=False)


def test_ties_mean_several_genuinely_different_dev_best_configurations():
    """A tie is MBR dev-best *together with* a genuinely different configuration (another decoder on dev, or, given a
    side, one on the other side). A strict MBR optimum is a preference for MBR, never a tie (the fresh review of
    04544d5: the old rule, best dev score - MBR's <= 1e-12, held whenever MBR won, so every MBR optimum was a "tie")."""
    st = _tie_study()
    s = st.seeds[0]
    sel = st.selections[(s, "A", "dev", "chrf")]
    other = next(i for i in range(len(st.configs)) if i != st.mbr and not np.array_equal(sel[i], sel[st.mbr]))
    lam1 = config_index(st.configs, (1.0, 0.0, 0.0))

    def with_dev(values):
        return dataclasses.replace(st, dev={k: np.asarray(values, float) for k in st.dev})

    # MBR strictly best by 0.3: no tie (the old rule called it one), and tuning returns MBR by preference
    strict = np.zeros(len(st.configs)); strict[st.mbr] = 0.3
    st_strict = with_dev(strict)
    assert not st_strict.ties_mbr(s, "A", "chrf") and st_strict.tuned(s, "A", "chrf") == st.mbr
    assert st_strict.dev_best(s, "A", "chrf") == [st.mbr]
    assert not st_strict.ties_mbr(s, "A", "chrf", side=lambda c: c[0] <= 0.25)
    # an exact duplicate of MBR's dev score by a configuration that decodes differently: a tie
    dup = np.zeros(len(st.configs)); dup[st.mbr] = dup[other] = 0.3
    st_dup = with_dev(dup)
    assert st_dup.ties_mbr(s, "A", "chrf") and st_dup.tuned(s, "A", "chrf") == st.mbr
    # ... on the value tested: lambda = 1 duplicates MBR's score on the other side of lambda <= 0.25, a tie; lambda =
    # 0.25 on the same side, none
    side = lambda c: c[0] <= 0.25
    dup1 = np.zeros(len(st.configs)); dup1[st.mbr] = dup1[lam1] = 0.3
    assert with_dev(dup1).ties_mbr(s, "A", "chrf", side=side)
    lam_q = config_index(st.configs, (0.25, 0.0, 0.0))
    dupq = np.zeros(len(st.configs)); dupq[st.mbr] = dupq[lam_q] = 0.3
    assert not with_dev(dupq).ties_mbr(s, "A", "chrf", side=side)
    # a configuration that decodes as MBR does (lambda under the symmetric chrF1, I3) is MBR on dev: no tie
    sel1 = st.selections[(s, "A", "dev", "chrf1")]
    assert np.array_equal(sel1[lam1], sel1[st.mbr])
    assert not with_dev(dup1).ties_mbr(s, "A", "chrf1")
    # another configuration strictly best: no tie with MBR either
    worse = np.zeros(len(st.configs)); worse[other] = 0.3
    assert not with_dev(worse).ties_mbr(s, "A", "chrf")


# ----------------------------------------------------------------------------- the `gpu` variant of `full` (issue 56)

def test_full_on_cuda_runs_the_gpu_variant_and_keeps_the_cpu_sizes_without(monkeypatch):
    """`device()` reporting CUDA (torch.cuda.is_available patched; nothing touches a GPU) selects the variant: the
    256-draw plant on 1000 dev sources, a larger training batch, the utility pool; every claim's seeds unchanged.
    Without CUDA (or with ICML26_DEVICE=cpu) `full` keeps the CPU sizes."""
    import torch

    from icml26 import device
    from icml26.scales import select_preset

    monkeypatch.delenv("ICML26_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    gpu = select_preset(PRESETS, "full", on_gpu=device().type == "cuda")
    cpu = select_preset(PRESETS, "full")
    assert (gpu["n_planted_refs"], gpu["n_dev_sources"], gpu["workers"]) == (256, 1000, 15)
    assert gpu["seq2seq"]["batch"] > cpu["seq2seq"]["batch"]
    assert {k: v for k, v in gpu["seq2seq"].items() if k != "batch"} == {k: v for k, v in cpu["seq2seq"].items() if k != "batch"}
    for key in ("seed", "n_seeds", "regime2", "sweep", "n_sources", "n_regret", "n_bayes"):
        assert gpu[key] == cpu[key], key
    monkeypatch.setenv("ICML26_DEVICE", "cpu")
    assert dict(select_preset(PRESETS, "full", on_gpu=device().type == "cuda")) == dict(cpu)
    monkeypatch.delenv("ICML26_DEVICE")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device().type == "cpu" and cpu["workers"] == 1 and cpu["n_planted_refs"] == 192


def test_run_study_utility_pool_gives_the_same_splits(monkeypatch):
    """`workers` > 1 scores the splits in spawned single-thread processes: the same study as one process."""
    import os

    from threadpoolctl import threadpool_limits

    from icml26.mbr.experiments import split_workers

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.delenv("ICML26_CPUS", raising=False)
    assert split_workers(15, 4) == 3 and split_workers(1, 4) == 1 and split_workers(2, 1) == 1
    p = dict(PRESETS["smoke"], n_seeds=1, n_sources=12, n_dev_sources=16, n_planted_refs=4)
    with threadpool_limits(1):   # the chapter's own process computes on one thread (icml26.chapter.pin_threads)
        one, pooled = run_study(p, show_progress=False), run_study({**p, "workers": 2}, show_progress=False)
    assert one.splits.keys() == pooled.splits.keys()
    for key, a in one.splits.items():
        b = pooled.splits[key]
        assert a.samples == b.samples and a.oracle_refs == b.oracle_refs and np.array_equal(a.lbar, b.lbar)
        for u in a.U:
            assert np.array_equal(a.U[u][0], b.U[u][0]) and np.array_equal(a.U[u][1], b.U[u][1])
            assert np.array_equal(a.dev[u], b.dev[u]) and np.array_equal(a.planted[u], b.planted[u])
            if a.O:
                assert np.array_equal(a.O[u], b.O[u])
    assert all(np.array_equal(one.test[k], pooled.test[k]) for k in one.test)


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_seq2seq_trains_samples_and_scores_on_cuda():
    """On a GPU machine: parameters, sampling and the teacher-forced KL all run on the device; numpy comes back."""
    import torch

    from icml26.mbr import Seq2Seq, Seq2SeqConfig
    from icml26.mbr.experiments import make_world

    world = make_world("A", 0)
    small = Seq2SeqConfig(d_model=16, heads=2, layers=1, steps=5, batch=4, lr=1e-3, n_train=20, max_len=12, n_evals=1)
    model = Seq2Seq(world, small, seed=0, device=torch.device("cuda"))
    model.train()
    assert all(q.device.type == "cuda" for q in model.modules.parameters())
    rng = np.random.default_rng(0)
    trees = [world.sample_source(rng) for _ in range(3)]
    samples, lbar = model.sample(trees, 4, rng)
    assert len(samples) == 3 and lbar.shape == (3, 4) and isinstance(lbar, np.ndarray)
    lp = model.log_prob(trees, [world.sample_reference(t, rng) for t in trees])
    assert lp.shape == (3,) and np.all(np.isfinite(lp)) and len(model.heldout[1]) == 2
