"""Unit tests of icml26.cqf (world, features, classifier, selection, baselines, n-gram LM, metrics, toy)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from icml26.cqf import (PRESETS, CRISPLike, DSIRLike, Docs, NGramLM, QualityClassifier, Request, ScoreCDF, SynthWeb,
                        calibrate, conditioning_fraction, cqf_composition, cqf_select, decile_losses,
                        exclusive_buckets, hashed_features, k_star, kl_curve, perm, select_many, t1_accuracy)
from icml26.cqf.gpt import GPTLM


@pytest.fixture(scope="module")
def world():
    return SynthWeb(seed=0)


@pytest.fixture(scope="module")
def clf(world):
    c = QualityClassifier(world.vocab, seed=0).fit_docs(world.hq("orca", 600), world.web(600))
    calibrate(c, world.web(3000))
    return c


# --------------------------------------------------------------------------- world
def test_world_is_seeded_and_mixes_genres(world):
    a, b = SynthWeb(seed=3).web(500), SynthWeb(seed=3).web(500)
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.genre, b.genre)
    shares = world.web(20000).shares()
    assert shares["FAQ"] == pytest.approx(0.05, abs=0.01) and shares["CHAT"] == pytest.approx(0.40, abs=0.02)
    hq = world.hq("orca", 5000).shares()
    assert hq["HQ-QA"] == pytest.approx(0.5, abs=0.03) and hq["HQ-CHAT"] == pytest.approx(0.3, abs=0.03)


def test_test_facts_are_tail_facts_absent_from_hq(world):
    V = world.vocab
    assert world.test_facts[:, 0].min() >= 100
    hq = world.hq("orca", 3000)
    ents = hq.tokens[(hq.tokens >= V.entity0) & (hq.tokens < V.relation0)] - V.entity0
    assert ents.max() < 60                       # HQ facts: the 60 most popular entities only
    assert np.all(np.bincount(world.test_truth, minlength=4) > 30)  # the truth is not always first


def test_stream_ids_never_repeat(world):
    a, b = world.web(100), world.web(100)
    assert np.intersect1d(a.ids, b.ids).size == 0


def test_docs_take_and_head(world):
    d = world.web(50)
    t = d.take([3, 1])
    assert t.texts(world.vocab) == [d.texts(world.vocab)[3], d.texts(world.vocab)[1]]
    h = d.head_tokens(500)
    assert h.n_tokens >= 500 and h.n_tokens - h.lengths[-1] < 500


def test_bad_world_parameters():
    with pytest.raises(ValueError):
        SynthWeb(web_mix=(0.5, 0.5, 0.1, 0.0, 0.0))
    with pytest.raises(ValueError):
        SynthWeb(n_hq_entities=200, tail_rank=100)
    with pytest.raises(ValueError):
        SynthWeb().hq("nope", 3)


# --------------------------------------------------------------------------- features and classifier
def test_hashed_features_equal_hashing_vectorizer(world):
    from sklearn.feature_extraction.text import HashingVectorizer

    d = world.web(200)
    hv = HashingVectorizer(tokenizer=str.split, token_pattern=None, lowercase=False, ngram_range=(1, 2), n_features=2**12)
    assert abs(hashed_features(d, world.vocab) - hv.transform(d.texts(world.vocab))).max() < 1e-12
    raw = HashingVectorizer(tokenizer=str.split, token_pattern=None, lowercase=False, ngram_range=(1, 2),
                            n_features=2**12, norm=None)
    assert abs(hashed_features(d, world.vocab, norm=None) - raw.transform(d.texts(world.vocab))).max() < 1e-12


def test_token_ids_outside_vocab_are_rejected(world):
    bad = Docs(np.array([0, 5, world.vocab.size]), np.array([0, 3]), np.array([0]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        hashed_features(bad, world.vocab)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        NGramLM(world.vocab.size).fit(bad)


def test_classifier_separates_and_rejects_one_class(world, clf):
    s = clf.score_docs(world.web(3000))
    g = world.web(0).genre  # noqa: F841 - API smoke
    assert clf.C_ in (0.01, 0.1, 1.0, 10.0) and clf.val_accuracy_ > 0.6
    assert np.all((s >= 0) & (s <= 1))
    with pytest.raises(ValueError):
        QualityClassifier(world.vocab).fit_docs(world.hq("orca", 10), world.web(0))
    with pytest.raises(ValueError, match="both classes"):
        QualityClassifier(world.vocab).fit(np.zeros((4, 2)), np.ones(4))


def test_calibration_must_not_overlap_training(world):
    lq = world.web(300)
    c = QualityClassifier(world.vocab).fit_docs(world.hq("orca", 300), lq)
    with pytest.raises(ValueError, match="overlap"):
        calibrate(c, lq)


# --------------------------------------------------------------------------- selection
def test_tau_k_keeps_fraction_k_of_fresh_lq(world, clf):
    fresh = clf.score_docs(world.web(6000))
    for k in (0.5, 0.2, 0.05):
        assert np.mean(fresh >= clf.cdf_.tau(k)) == pytest.approx(k, abs=0.25 * k + 0.01)
    assert clf.cdf_.tau(1.0) == -np.inf


@pytest.mark.parametrize("k", [0.0, -0.1, 1.5, float("nan")])
def test_bad_k(clf, world, k):
    with pytest.raises(ValueError):
        cqf_select(world.web_stream(1000), clf, k, 1000)


def test_cqf_select_streams_without_repetition_and_costs_budget_over_k(world, clf):
    sel = cqf_select(world.web_stream(2000), clf, 0.1, 20_000)
    assert sel.kept_tokens >= 20_000 and len(np.unique(sel.train.ids)) == len(sel.train)
    assert 4 < sel.generated_tokens / sel.kept_tokens < 25  # about 1/k
    assert np.all(clf.score_docs(sel.train) >= clf.cdf_.tau(0.1) - 1e-12)
    with pytest.raises(ValueError, match="budget"):
        cqf_select(world.web_stream(1000), clf, 0.1, 0)


def test_generation_cap_names_generated_and_kept(world, clf):
    with pytest.raises(ValueError, match="generated .* kept"):
        select_many(world.web_stream(500), {"s": clf.score_matrix}, {"x": Request("s", 2.0, np.inf, 1000)},
                    20_000, clf.featurize)


def test_nan_scores_are_rejected(world, clf):
    with pytest.raises(ValueError, match="NaN"):
        select_many(world.web_stream(200), {"s": lambda X: np.full(X.shape[0], np.nan)},
                    {"x": Request("s", 0.0, np.inf, 100)}, 10_000, clf.featurize)
    with pytest.raises(ValueError):
        ScoreCDF(np.array([0.1, np.nan]))


def test_exclusive_buckets_partition_the_scores(clf):
    b = exclusive_buckets(clf.cdf_)
    assert b[0][0] == -np.inf and b[-1][1] == np.inf
    assert all(hi == lo for (_, hi), (lo, _) in zip(b[:-1], b[1:]))
    with pytest.raises(ValueError):
        exclusive_buckets(clf.cdf_, (0.0, 0.5, 0.4, 1.0))


def test_perm_shuffles_with_probability_k(world):
    d = world.web(400)
    rng = np.random.default_rng(0)
    assert np.array_equal(perm(d, 0.0, rng).tokens, d.tokens)
    p = perm(d, 1.0, rng)
    changed = [not np.array_equal(p.tokens[a:b], d.tokens[a:b]) for a, b in zip(d.offsets[:-1], d.offsets[1:])]
    assert np.mean(changed) > 0.95
    for a, b in zip(d.offsets[:-1], d.offsets[1:]):
        assert np.array_equal(np.sort(p.tokens[a:b]), np.sort(d.tokens[a:b]))
    with pytest.raises(ValueError):
        perm(d, 1.2, rng)


# --------------------------------------------------------------------------- n-gram LM
def test_ngram_matches_nltk(world):
    from nltk.lm import AbsoluteDiscountingInterpolated
    from nltk.util import everygrams

    tr, te = world.web(150), world.web(10)
    lm = NGramLM(world.vocab.size, base="mle").fit(tr)
    sents = [[str(x) for x in tr.tokens[a:b]] for a, b in zip(tr.offsets[:-1], tr.offsets[1:])]
    ref = AbsoluteDiscountingInterpolated(4, discount=0.75)
    ref.fit([list(everygrams(s, max_len=4)) for s in sents], vocabulary_text=[x for s in sents for x in s])
    lp, seen = lm.token_logprobs(te), set(tr.tokens.tolist())
    n = 0
    for d in range(len(te)):
        a, b = te.offsets[d], te.offsets[d + 1]
        doc = [str(x) for x in te.tokens[a:b]]
        for i, w in enumerate(doc):
            if int(w) in seen:
                assert np.exp(lp[a + i]) == pytest.approx(ref.score(w, doc[max(0, i - 3):i] or None), abs=1e-10)
                n += 1
    assert n > 200


def test_ngram_uniform_base_normalises_and_never_gives_zero(world):
    lm = NGramLM(world.vocab.size).fit(world.web(300))
    ctx = np.tile(world.web(1).tokens[:3], (world.vocab.size, 1))
    p = lm.prob_next(ctx, np.full(world.vocab.size, 3), np.arange(world.vocab.size))
    assert p.sum() == pytest.approx(1.0, abs=1e-10) and p.min() > 0
    assert np.isfinite(lm.loss(world.hq("task", 50)))


@pytest.mark.parametrize("kw", [dict(order=0), dict(discount=1.5), dict(discount=-0.1), dict(base="kn")])
def test_ngram_bad_parameters(world, kw):
    with pytest.raises(ValueError):
        NGramLM(world.vocab.size, **kw)


def test_ngram_zero_probability_is_an_error_not_nan(world):
    lm = NGramLM(world.vocab.size, base="mle").fit(world.hq("task", 20))
    with pytest.raises(ValueError, match="probability 0"):
        lm.loss(world.web(20))


def test_more_facts_raise_t1(world):
    low = t1_accuracy(NGramLM(world.vocab.size).fit(world.hq("orca", 400)), world)
    high = t1_accuracy(NGramLM(world.vocab.size).fit(world.hq("covering", 400)), world)
    assert low < 0.4 and high > low + 0.15


def test_deciles_and_conditioning_fraction(world, clf):
    hq = world.hq("orca", 400)
    lm = NGramLM(world.vocab.size).fit(world.web(500))
    d = decile_losses(lm, hq, clf.score_docs(hq))
    assert d.shape == (10,) and np.all(np.isfinite(d))
    L = np.array([[1.0, 0.5], [2.0, 1.0]])
    assert conditioning_fraction(L) == 1.0
    with pytest.raises(ValueError):
        conditioning_fraction(np.array([[np.nan, 1], [1, 1]]))


# --------------------------------------------------------------------------- baselines
def test_dsir_matches_data_selection(world, tmp_path):
    ds = pytest.importorskip("data_selection")
    hq, lq, probe = world.hq("orca", 60), world.web(60), world.web(20)
    for name, docs in (("raw", lq), ("target", hq)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": s}) + "\n" for s in docs.texts(world.vocab)))
    peer = ds.HashedNgramDSIR([str(tmp_path / "raw.jsonl")], [str(tmp_path / "target.jsonl")], cache_dir=str(tmp_path / "c"),
                              num_proc=1, ngrams=2, num_buckets=10000, min_example_length=0)
    peer.fit_importance_estimator(num_tokens_to_fit="all")
    ours = DSIRLike(world.vocab, 10000, mode="sha256").fit(hq, lq)
    want = np.array([peer.importance_estimator(peer.featurizer(s)) for s in probe.texts(world.vocab)])
    assert np.max(np.abs(ours.log_weights(probe) - want)) < 1e-9


def test_dsir_and_crisp_resample_without_repetition(world, clf):
    pool = world.web(3000)
    d = DSIRLike(world.vocab).fit(world.hq("orca", 300), world.web(300)).resample(pool, 10_000, np.random.default_rng(0))
    assert d.n_tokens >= 10_000 and len(np.unique(d.ids)) == len(d)
    hq = world.hq("orca", 300)
    X_fit = clf.featurize(Docs.concat([hq, world.web(300)]))
    c = CRISPLike(8).fit(X_fit, clf.featurize(hq), hq.lengths).resample(pool, clf.featurize(pool), 10_000)
    assert c.n_tokens >= 9_500 and len(np.unique(c.ids)) == len(c)
    with pytest.raises(ValueError, match="pool"):
        DSIRLike(world.vocab).fit(hq, pool).resample(world.web(5), 10_000, np.random.default_rng(0))


# --------------------------------------------------------------------------- GPT, toy, presets
def test_tiny_gpt_trains_and_scores(world):
    d = world.web(300)
    lm = GPTLM(world.vocab.size, steps=30, batch=8, d=32, n_layers=1, n_heads=2, ctx=32).fit(d)
    ev = world.web(20)
    lp = lm.token_logprobs(ev)
    assert lp.shape == (ev.n_tokens,) and np.all(np.isfinite(lp))
    assert lm.loss(ev) < np.log(world.vocab.size)
    assert 0 <= t1_accuracy(lm, world) <= 1


def test_toy_kl_and_k_star():
    a, b = (0.5, 0.2, 0.3, 0.0), (0.05, 0.2, 0.4, 0.35)
    assert kl_curve(a, b, [1.0, 0.5])[0] == pytest.approx(1.065, abs=1e-3)
    assert k_star(a, b) == pytest.approx(5 / 14, abs=1e-3)
    assert k_star((5 / 7, 2 / 7, 0, 0), b) == pytest.approx(0.07, abs=1e-3)
    assert cqf_composition(a, b, 0.05)[0] == pytest.approx(1.0)


def test_presets_have_the_same_keys():
    keys = [set(p) - {"gpu"} for p in PRESETS.values()]
    assert all(k == keys[0] for k in keys)
    assert len(PRESETS["book"]["seeds"]) >= 5 and len(PRESETS["full"]["seeds"]) >= 5   # T1 differences: >= 5 seeds
    assert all(3 <= PRESETS[s]["gpt_seeds"] <= len(PRESETS[s]["seeds"]) for s in ("book", "full"))
    assert all(set(p["gpt"]) == set(PRESETS["smoke"]["gpt"]) for p in PRESETS.values())
    assert set(PRESETS["full"]["gpu"]["gpt"]) == set(PRESETS["full"]["gpt"])  # the GPU variant replaces the whole dict


def test_semireal_corpus_does_not_depend_on_what_the_kernel_imported():
    """The corpus from installed text is the same in a bare process and one that imported more first
    (submodules appear in dir() once imported; some scipy.stats docstrings carry unseeded sample output)."""
    import subprocess
    import sys

    probe = ("import hashlib, sys\n"
             "if sys.argv[1] == 'more':\n"
             "    import matplotlib.pyplot, torch.nn, torch.distributions, torch.testing, scipy.optimize, sympy.printing\n"
             "from icml26.cqf import semireal\n"
             "v, *parts = semireal.build_corpus(0)\n"
             "print(len(v), hashlib.md5(b''.join(p.tokens.tobytes() for p in parts)).hexdigest())\n")
    outs = [subprocess.run([sys.executable, "-c", probe, state], capture_output=True, text=True, check=True).stdout
            for state in ("bare", "more")]
    assert outs[0] == outs[1]


# --------------------------------------------------------------------------- revision (issue 50)
def test_t1_scores_the_qa_prompt_and_the_prose_task_apart(world):
    """T1 is the QA prompt alone; a model that saw the test facts only as QA lines answers T1 and not the
    prose task, and the summed probe (the first version) is a third, different number."""
    from icml26.cqf.metrics import t1_logprobs

    lm = NGramLM(world.vocab.size).fit(world.generate_genre("HQ-QA-COVER", 3000, np.random.default_rng(0)))
    qa, prose = t1_accuracy(lm, world), t1_accuracy(lm, world, template="prose")
    assert qa > 0.9 and prose < 0.5
    assert np.allclose(t1_logprobs(lm, world, "sum"), t1_logprobs(lm, world, "qa") + t1_logprobs(lm, world, "prose"))
    with pytest.raises(ValueError, match="template"):
        t1_accuracy(lm, world, template="both")


def test_tail_range_sets_the_test_facts():
    w = SynthWeb(seed=0, n_entities=400, tail_rank=150, tail_end=250)
    assert w.test_facts[:, 0].min() >= 150 and w.test_facts[:, 0].max() < 250
    with pytest.raises(ValueError, match="tail_end"):
        SynthWeb(n_entities=300, tail_rank=100, tail_end=400)
    with pytest.raises(ValueError, match="n_test_facts"):
        SynthWeb(n_entities=300, tail_rank=100, tail_end=110, n_test_facts=300)


def test_gpt_vectorised_scoring_equals_a_per_document_loop(world):
    import torch

    lm = GPTLM(world.vocab.size, steps=5, batch=4, d=16, n_layers=1, n_heads=2, ctx=16).fit(world.web(200))
    docs = world.web(15)
    ref = np.zeros(docs.n_tokens)
    with torch.no_grad():
        for i in range(len(docs)):
            a, b = docs.offsets[i], docs.offsets[i + 1]
            seq = np.concatenate([[world.vocab.tok(".")], docs.tokens[a:b]])
            for s in range(0, len(seq) - 1, 16):
                chunk = torch.tensor(seq[s:s + 17], dtype=torch.long)
                lp = torch.log_softmax(lm.model(chunk[None, :-1]), -1)[0]
                ref[a + s:a + s + len(chunk) - 1] = lp.gather(-1, chunk[1:, None])[:, 0].numpy()
    assert np.allclose(lm.token_logprobs(docs), ref, atol=1e-5)


def test_gpt_checkpoints_and_curve(world):
    ev = [world.web(10), world.web(10)]
    lm = GPTLM(world.vocab.size, steps=12, batch=4, d=16, n_layers=1, n_heads=2, ctx=16).fit(world.web(200), ev, (6, 12))
    assert lm.eval_history_.shape == (2, 2) and np.allclose(lm.eval_history_[-1], [lm.loss(e) for e in ev])
    assert len(lm.train_curve_) == 10
    with pytest.raises(ValueError, match="eval_at"):
        GPTLM(world.vocab.size, steps=4, d=16, n_layers=1, n_heads=2, ctx=16).fit(world.web(50), ev, (9,))


def test_deciles_never_empty_with_tied_scores(world):
    docs = world.hq("orca", 200)
    lm = NGramLM(world.vocab.size).fit(world.web(300))
    out = decile_losses(lm, docs, np.r_[np.zeros(150), np.ones(50)])
    assert np.all(np.isfinite(out))


def test_hashed_features_with_an_empty_last_document(world):
    d = world.web(5)
    empty = Docs(d.tokens, np.r_[d.offsets, d.offsets[-1]], np.r_[d.genre, 0], np.r_[d.ids, 99])
    X = hashed_features(empty, world.vocab)
    assert X.shape[0] == 6 and X[5].nnz == 0 and np.allclose(abs(X[:5].multiply(X[:5]).sum(axis=1) - 1), 0)


def test_controls_of_t1(world):
    from icml26.cqf.experiments import planted, shuffled_label_classifier

    hq, lq = world.hq("orca", 400), world.web(400)
    shuffled = shuffled_label_classifier(world, hq, lq, seed=0)
    assert shuffled.val_accuracy_ < 0.65          # nothing to learn from shuffled labels
    base = world.web(2000)
    p = planted(world, base, 40_000, 0.05, seed=0)
    assert abs(p.n_tokens - 40_000) < 400
    assert t1_accuracy(NGramLM(world.vocab.size).fit(p), world) > t1_accuracy(NGramLM(world.vocab.size).fit(base.head_tokens(40_000)), world)
    with pytest.raises(ValueError):
        planted(world, base, 40_000, 1.5, seed=0)
    with pytest.raises(ValueError, match="genre"):
        planted(world, base, 40_000, 0.05, seed=0, genre="FAQ")


def test_prose_knowledge_does_not_reach_the_qa_prompt(world):
    """PC-T1p's premise: a 4-gram trained on the test facts stated as prose answers the prose task, not the
    QA prompt (its context `e r ?` never occurs in prose)."""
    lm = NGramLM(world.vocab.size).fit(world.generate_genre("HQ-PROSE-COVER", 3000, np.random.default_rng(0)))
    assert t1_accuracy(lm, world, template="prose") > 0.9 and t1_accuracy(lm, world) < 0.5


def test_oracle_is_matches_the_hq_genre_mix_without_repetition(world):
    from icml26.cqf.experiments import oracle_is

    pool = world.web(4000)
    o = oracle_is(pool, "orca", 20_000, np.random.default_rng(0))
    docs = o.shares()
    assert o.n_tokens >= 20_000 and len(np.unique(o.ids)) == len(o)
    assert docs["FAQ"] == pytest.approx(0.5, abs=0.03) and docs["CHAT"] == pytest.approx(0.3, abs=0.03)
    assert docs["SPAM"] == docs["MISINFO"] == 0
    with pytest.raises(ValueError, match="pool holds"):
        oracle_is(world.web(300), "orca", 20_000, np.random.default_rng(0))


def test_importance_samplers_report_their_fidelity(world, clf):
    """P4 / P5: CRISP's kept cluster histogram against the HQ histogram; DSIR's effective sample size."""
    from icml26.cqf.baselines import kish_ess

    assert kish_ess(np.zeros(7)) == pytest.approx(7.0)
    assert kish_ess(np.array([0.0, -np.inf, 0.0])) == pytest.approx(2.0)
    assert kish_ess(np.array([0.0, -50.0, -60.0])) == pytest.approx(1.0, abs=1e-9)
    with pytest.raises(ValueError):
        kish_ess(np.array([-np.inf, -np.inf]))
    pool = world.web(3000)
    hq = world.hq("orca", 300)
    crisp = CRISPLike(8)
    crisp.fit(clf.featurize(world.web(300)), clf.featurize(hq), hq.lengths).resample(pool, clf.featurize(pool), 10_000)
    assert 0 <= crisp.tv_ < 0.05
    dsir = DSIRLike(world.vocab).fit(hq, world.web(300))
    d = dsir.resample(pool, 10_000, np.random.default_rng(0))
    assert dsir.n_drawn_ == len(d) and 1 <= dsir.ess_ <= len(pool)
    assert dsir.ess_ < dsir.n_drawn_   # summed n-gram log-ratios are peaked: a ratio filter, not a sampler


def test_format_invariant_reader_rewrites_fact_sentences_only(world):
    """C3q-r's reader: `e r is v` becomes `q : e r ? v`; QA lines, chat and spam are unchanged; with it, facts
    stated in prose reach the QA prompt (which the plain 4-gram cannot, PC-T1p)."""
    from icml26.cqf import format_invariant

    V = world.vocab
    docs = world.web(300)
    out = format_invariant(docs, V)
    n_facts = int(np.sum(docs.tokens == V.tok("is")))
    assert out.n_tokens == docs.n_tokens + 2 * n_facts and len(out) == len(docs)
    assert np.sum(out.tokens == V.tok("is")) == 0
    assert np.array_equal(out.ids, docs.ids) and np.array_equal(out.genre, docs.genre)
    chat = docs.take(docs.genre == 2)
    assert np.array_equal(format_invariant(chat, V).tokens, chat.tokens)
    txt = format_invariant(world.generate_genre("PROSE", 1, np.random.default_rng(0)), V).texts(V)[0]
    assert "q : e" in txt and " ? v" in txt
    prose = world.generate_genre("HQ-PROSE-COVER", 3000, np.random.default_rng(0))
    assert t1_accuracy(NGramLM(V.size).fit(format_invariant(prose, V)), world) > 0.9
    assert len(format_invariant(Docs.concat([]), V)) == 0
