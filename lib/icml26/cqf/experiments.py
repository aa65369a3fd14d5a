"""The chapter's experiments (brief §5.7), one seed at a time: `run_seed(cfg, seed)` -> plain numbers.

Per seed: a fresh `SynthWeb`; a quality classifier per HQ set (n HQ + n LQ docs, C by held-out
accuracy); tau_k calibrated on held-out LQ; two streaming passes over fresh web documents fill every
selection without repetition (pass 1: CQF(HQ, k) for every HQ set and k, exclusive buckets, the random
k = 100 % run; pass 2: recursive CQF and the pool of the importance-sampling baselines); then one LM per
selection, scored on held-out LQ, held-out HQ, HQ score deciles and T1.
"""
from __future__ import annotations

import numpy as np

from .baselines import CRISPLike, DSIRLike
from .classifier import QualityClassifier
from .features import hashed_features
from .gpt import GPTLM
from .metrics import decile_losses, format_invariant, t1_accuracy
from .ngram import NGramLM
from .selection import Request, calibrate, exclusive_buckets, perm, select_many
from .world import GENRES, HQ_SETS, Docs, SynthWeb

E1_SETS = ("orca", "knowledge", "task", "clean_orca")


def hq_tokens(world: SynthWeb, name: str, budget: int) -> Docs:
    """Fresh documents of an HQ set filling ``budget`` tokens (the HQ set is generated on demand)."""
    docs = world.hq(name, int(budget / 45) + 50)
    while docs.n_tokens < budget:
        docs = Docs.concat([docs, world.hq(name, int(budget / 45) + 50)])
    return docs.head_tokens(budget)


def bad_share(docs: Docs) -> float:
    """Token share of SPAM + MISINFO (ground truth, diagnostics only)."""
    s = docs.shares(by_tokens=True)
    return s["SPAM"] + s["MISINFO"]


def _ngram(cfg, V, docs):
    return NGramLM(V, order=cfg["ngram_order"], discount=cfg["ngram_discount"]).fit(docs)


def shuffled_label_classifier(world: SynthWeb, hq: Docs, lq: Docs, seed: int) -> QualityClassifier:
    """The negative control of the T1 claims: the same classifier trained on the same HQ + LQ documents
    with their labels shuffled (half of the pooled documents labelled HQ at random)."""
    both = Docs.concat([hq, lq])
    order = np.random.default_rng([seed, 77]).permutation(len(both))
    half = len(hq)
    return QualityClassifier(world.vocab, seed=seed).fit_docs(both.take(order[:half]), both.take(order[half:]))


PLANT_GENRES = ("HQ-QA-COVER", "HQ-PROSE-COVER")


def planted(world: SynthWeb, base: Docs, budget: int, share: float, seed: int, genre: str = "HQ-QA-COVER") -> Docs:
    """The positive control of the T1 claims: the random selection with a ``share`` of its tokens replaced
    by documents half of whose fact lines state test facts (the covering generator): an effect on T1
    present by construction, scored by the same LM, test and seeds. ``genre``: ``"HQ-QA-COVER"`` (QA lines,
    the format of the T1 prompt) or ``"HQ-PROSE-COVER"`` (prose sentences ``e r is v``: the diagnostic of
    whether knowledge stated in prose can reach the QA prompt through the LM at all)."""
    if not 0 < share < 1:
        raise ValueError(f"share must lie in (0, 1), got {share}")
    if genre not in PLANT_GENRES:
        raise ValueError(f"genre must be one of {PLANT_GENRES}, got {genre!r}")
    rng = np.random.default_rng([seed, 78 + PLANT_GENRES.index(genre)])
    qa = world.generate_genre(genre, int(budget * share / 30) + 20, rng)
    return Docs.concat([base.head_tokens(int(budget * (1 - share))), qa.head_tokens(int(budget * share))])


ORACLE_GENRES = {"HQ-QA": "FAQ", "HQ-PROSE": "PROSE", "HQ-CHAT": "CHAT"}


def oracle_is(pool: Docs, hq_name: str, budget: int, rng: np.random.Generator) -> Docs:
    """A genre-level oracle importance sampler (a diagnostic beside the positive control PC-IS of C7-*-hq):
    resample the web pool to the HQ set's genre mixture (document shares, ``HQ_SETS[hq_name]``) with the
    **ground-truth genre labels**, which no real pipeline has. In the toy of §3.2 (types = genres) this is
    importance sampling with the exact ratio, KL(HQ || selection) = 0; in SynthWeb the HQ set also differs
    from the web *inside* a genre (its QA lines are about the popular entities only), which a genre-level
    weight cannot correct. Documents are taken in stream order, never repeated."""
    target = {ORACLE_GENRES[g]: a for g, a in HQ_SETS[hq_name].items()}
    codes = {g: GENRES.index(g) for g in target}
    mean_len = {g: float(pool.lengths[pool.genre == c].mean()) for g, c in codes.items()}
    n_docs = budget / sum(a * mean_len[g] for g, a in target.items())
    parts = []
    for g, a in target.items():
        idx = np.flatnonzero(pool.genre == codes[g])
        need = int(np.ceil(a * n_docs)) + 1
        if len(idx) < need:
            raise ValueError(f"oracle IS: the pool holds {len(idx)} {g} documents, {need} needed")
        parts.append(pool.take(idx[:need]))
    both = Docs.concat(parts)
    return both.take(rng.permutation(len(both))).head_tokens(budget)


def run_seed(cfg: dict, seed: int, log=None, gpt: bool = True) -> dict:
    """Every experiment of one seed (E1-E9 of the chapter); returns a dict of floats, lists and arrays.

    ``gpt=False`` skips the TinyGPT matrices (E7), which the presets run on the first ``gpt_seeds`` seeds
    only: the 4-gram claims get more seeds within the same time budget."""
    log = log or (lambda *a: None)
    world = SynthWeb(seed, **cfg["world"])
    V = world.vocab
    rng = np.random.default_rng([seed, 3])
    B, ks, n_eval = int(cfg["budget"]), tuple(cfg["ks"]), int(cfg["n_eval_docs"])
    out: dict = {"seed": seed, "budget": B, "ks": ks, "test_ranks": world.test_facts[:, 0].tolist()}

    # ---------------------------------------------------------------- classifiers and calibration
    lq_train = world.web(cfg["n_clf"])
    hq_train = {name: world.hq(name, cfg["n_clf"]) for name in (*E1_SETS, "covering")}
    clfs = {name: QualityClassifier(V, seed=seed).fit_docs(hq, lq_train) for name, hq in hq_train.items()}
    clfs["shuffled"] = shuffled_label_classifier(world, hq_train["orca"], lq_train, seed)
    calib = world.web(cfg["n_calib"])
    for clf in clfs.values():
        calibrate(clf, calib)
    out["clf"] = {n: dict(C=c.C_, val_accuracy=c.val_accuracy_) for n, c in clfs.items()}
    eval_lq = world.web(n_eval)
    eval_hq = {name: world.hq(name, n_eval) for name in (*E1_SETS, "covering")}
    deciles_docs = {name: world.hq(name, cfg["n_decile_docs"]) for name in ("orca", "knowledge")}
    log("classifiers")

    # ---------------------------------------------------------------- pass 1: CQF(HQ, k), buckets, random
    k1 = cfg["recursive_k1"]
    req = {"random": Request(None, budget=B)}
    for name in E1_SETS:
        for k in ks:
            if k < 1:
                req[f"cqf/{name}/{k}"] = Request(name, clfs[name].cdf_.tau(k), np.inf, B)
    req["cqf/covering/0.05"] = Request("covering", clfs["covering"].cdf_.tau(0.05), np.inf, B)
    req["cqf/shuffled/0.05"] = Request("shuffled", clfs["shuffled"].cdf_.tau(0.05), np.inf, B)
    # the recursive classifier's positives: the first n_rec documents of the CQF(Orca, k1) stream, i.e. D_HQ's
    # own training documents (the paper trains on D_HQ as the HQ set) and, where n_rec exceeds them, further
    # documents of the same selection
    n_rec = int(cfg["n_rec_clf"])
    req["dhq_clf"] = Request("orca", clfs["orca"].cdf_.tau(k1), np.inf, n_rec * 90)
    buckets = exclusive_buckets(clfs["orca"].cdf_, cfg["bucket_edges"])
    for j, (lo, hi) in enumerate(buckets):
        req[f"bucket/{j}"] = Request("orca", lo, hi, B)
    fracs = np.diff(cfg["bucket_edges"])
    k_min = min(min(ks), float(fracs.min()))
    cap = int(cfg["cap_factor"] * max(B / k_min, n_rec * 90 / k1))
    scorers = {n: c.score_matrix for n, c in clfs.items()}
    featurize = clfs["orca"].featurize
    sel = select_many(world.web_stream(cfg["stream_batch"]), scorers, req, cap, featurize)
    for name in E1_SETS:
        sel[f"cqf/{name}/1.0"] = sel["random"]
    dhq_clf_docs = sel.pop("dhq_clf").train
    out["generated"] = {n: s.generated_tokens for n, s in sel.items()}
    out["kept"] = {n: s.kept_tokens for n, s in sel.items()}
    out["composition"] = {n: s.train.shares(by_tokens=True) for n, s in sel.items()}
    out["composition_docs"] = {n: s.train.shares() for n, s in sel.items() if n.startswith("cqf/orca/") or n == "random"}
    out["bad_share"] = {n: bad_share(s.train) for n, s in sel.items()}
    log("pass 1")

    # ---------------------------------------------------------------- pass 2: recursive CQF, IS pool, held-out
    # sets of the conditioning families (a fresh stream: disjoint from every training set of pass 1)
    d_hq = sel[f"cqf/orca/{k1}"].train
    rec_pos = dhq_clf_docs.take(np.arange(min(n_rec, len(dhq_clf_docs))))
    rec = QualityClassifier(V, seed=seed).fit_docs(rec_pos, world.web(len(rec_pos)))
    calibrate(rec, calib)
    out["rec_clf"] = dict(n_docs=len(rec_pos), C=rec.C_, val_accuracy=rec.val_accuracy_, dhq_docs=len(d_hq),
                          share_in_dhq=float(np.mean(np.isin(rec_pos.ids, d_hq.ids))))
    pool_tokens = int(B / cfg["is_pool_k"])
    fam_ks = sorted(cfg["family_ks"])  # clean (small k) to dirty (k = 1)
    req2 = {"recursive": Request("recursive", rec.cdf_.tau(cfg["recursive_k2"]), np.inf, B),
            "pool": Request(None, budget=pool_tokens)}
    for k in fam_ks:  # held-out documents only (a one-token "budget" keeps one document, dropped)
        req2[f"eval/cqf/{k}"] = Request(None if k == 1 else "orca", -np.inf if k == 1 else clfs["orca"].cdf_.tau(k),
                                        np.inf, 1, n_eval)
    for j, (lo, hi) in enumerate(buckets):
        req2[f"eval/bucket/{j}"] = Request("orca", lo, hi, 1, n_eval)
    cap2 = int(cfg["cap_factor"] * max(B / min(cfg["recursive_k2"], cfg["is_pool_k"]), (n_eval * 70 + 200) / k_min))
    sel2 = select_many(world.web_stream(cfg["stream_batch"]), {"recursive": rec.score_matrix, "orca": clfs["orca"].score_matrix},
                       req2, cap2, featurize)
    pool = sel2["pool"].train
    out["generated"]["recursive"] = sel2["recursive"].generated_tokens
    dsir = DSIRLike(V, n_buckets=cfg["dsir_buckets"]).fit(hq_train["orca"], lq_train)
    sel_dsir = dsir.resample(pool, B, rng)
    crisp = CRISPLike(cfg["crisp_clusters"], seed=seed)
    crisp.fit(featurize(lq_train), featurize(hq_train["orca"]), hq_train["orca"].lengths)  # clusters of LQ (§5)
    sel_crisp = crisp.resample(pool, featurize(pool), B)
    sel_oracle = oracle_is(pool, "orca", B, np.random.default_rng([seed, 79]))
    # fidelity of the two importance samplers to their definitions (P4, P5): CRISP's kept cluster histogram
    # against the HQ histogram; DSIR's effective sample size against the documents it draws
    out["is_fidelity"] = dict(crisp_tv=crisp.tv_, dsir_ess=dsir.ess_, dsir_drawn=dsir.n_drawn_, pool_docs=len(pool))
    extra = {"recursive": sel2["recursive"].train, "dsir": sel_dsir, "crisp": sel_crisp, "oracle_is": sel_oracle}
    for n, d in extra.items():
        out["composition"][n] = d.shares(by_tokens=True)
        out["bad_share"][n] = bad_share(d)
    log("pass 2")

    # ---------------------------------------------------------------- LMs and metrics
    res: dict = {}
    lms: dict = {}

    def evaluate(tag, docs, hq_name="orca", deciles=False):
        lm = _ngram(cfg, V.size, docs)
        r = dict(t1=t1_accuracy(lm, world), t1_prose=t1_accuracy(lm, world, template="prose"),
                 t1_sum=t1_accuracy(lm, world, template="sum"), lq_loss=lm.loss(eval_lq),
                 hq_loss=lm.loss(eval_hq[hq_name]), task_loss=lm.loss(eval_hq["task"]))
        if deciles:
            r["deciles"] = decile_losses(lm, deciles_docs[hq_name], clfs[hq_name].score_docs(deciles_docs[hq_name])).tolist()
        res[tag] = r
        return lm

    for name in E1_SETS:
        for k in ks:
            evaluate(f"cqf/{name}/{k}", sel[f"cqf/{name}/{k}"].train, name, deciles=name in deciles_docs)
        evaluate(f"hq/{name}", hq_tokens(world, name, B), name)
    evaluate("hq/covering", hq_tokens(world, "covering", B), "covering")
    evaluate("cqf/covering/0.05", sel["cqf/covering/0.05"].train, "covering")
    evaluate("cqf/shuffled/0.05", sel["cqf/shuffled/0.05"].train, "orca")
    for share in sorted({*cfg["planted_shares"], cfg["planted_share"]}):  # the T1 positive control and its power sweep
        evaluate(f"planted/{share}", planted(world, sel["random"].train, B, share, seed), "orca")
    # test facts planted as prose: can knowledge stated in prose reach the QA prompt through this LM at all?
    evaluate("planted_prose", planted(world, sel["random"].train, B, cfg["prose_plant_share"], seed, "HQ-PROSE-COVER"), "orca")
    for n, d in extra.items():
        evaluate(n, d, "orca")
    # C3q-r: T1 read by a format-invariant reader (the same 4-gram on text whose fact sentences are rewritten as
    # QA lines, `format_invariant`): random, Knowledge-like CQF(5 %), the shuffled-label control, and the prose
    # plant at the positive control's share
    reader = {"cqf/orca/1.0": sel["random"].train, "cqf/shuffled/0.05": sel["cqf/shuffled/0.05"].train,
              "planted_prose_pc": planted(world, sel["random"].train, B, cfg["planted_share"], seed, "HQ-PROSE-COVER")}
    if 0.05 in ks:
        reader["cqf/knowledge/0.05"] = sel["cqf/knowledge/0.05"].train
    for tag, d in reader.items():
        res.setdefault(tag, {})["t1_reader"] = t1_accuracy(_ngram(cfg, V.size, format_invariant(d, V)), world)
    # E4 (Fig. 6): the top 10 % of the HQ set by its own score vs all of it, equal tokens
    big_hq = hq_tokens(world, "orca", int(B / cfg["hq_top_fraction"] * 1.2))
    s_hq = clfs["orca"].score_docs(big_hq)
    top = big_hq.take(s_hq >= np.quantile(s_hq, 1 - cfg["hq_top_fraction"])).head_tokens(B)
    evaluate("hq/orca_top", top, "orca")
    out["metrics"] = res
    log("n-gram LMs")

    # ---------------------------------------------------------------- E7: data-conditioning matrices
    pk = tuple(cfg["perm_ks"])
    base, base_eval = sel["random"].train, sel2["eval/cqf/1.0"].eval
    perm_train = [perm(base, k, np.random.default_rng([seed, 40, i])) for i, k in enumerate(pk)]
    perm_eval = [perm(base_eval, k, np.random.default_rng([seed, 41, i])) for i, k in enumerate(pk)]
    cqf_train = [sel[f"cqf/orca/{k}"].train for k in fam_ks]
    cqf_eval = [sel2[f"eval/cqf/{k}"].eval for k in fam_ks]
    nb = len(buckets)
    bucket_train = [sel[f"bucket/{j}"].train for j in reversed(range(nb))]  # top bucket (cleanest) first
    bucket_eval = [sel2[f"eval/bucket/{j}"].eval for j in reversed(range(nb))]
    # contamination check: the share of held-out family documents that are in any family's training set
    train_ids = np.concatenate([t.ids for t in cqf_train + bucket_train + [base]])
    out["family_eval_overlap"] = float(np.mean(np.isin(np.concatenate([e.ids for e in cqf_eval + bucket_eval + [base_eval]]),
                                                       train_ids)))

    def matrix(make, trains, evals):
        models = [make(t) for t in trains]
        return np.array([[m.loss(e) for e in evals] for m in models])

    ng = lambda d: _ngram(cfg, V.size, d)  # noqa: E731
    mats = {"ngram/perm": matrix(ng, perm_train, perm_eval), "ngram/cqf": matrix(ng, cqf_train, cqf_eval),
            "ngram/exclusive": matrix(ng, bucket_train, bucket_eval)}
    g = cfg["gpt"]
    curves: dict = {}
    if g["enabled"] and gpt:
        from ..seeding import device

        counter = iter(range(1, 10**6))
        horizons = sorted({max(1, int(round(f * g["steps"]))) for f in g["horizons"]})

        def gpt_matrix(tag, trains, evals, d, at=horizons):
            """L[h, i, j]: TinyGPT trained on member i, tested on the first ``eval_docs`` held-out documents of
            member j, at each horizon h in ``at`` (checkpoints of one cosine run); the training-loss curves go
            to ``curves[tag]``."""
            evals = [e.take(np.arange(min(len(e), int(g["eval_docs"])))) for e in evals]
            L, cur = [], []
            for t in trains:
                lm = GPTLM(V.size, steps=g["steps"], batch=g["batch"], lr=g["lr"], seed=1000 * seed + next(counter),
                           device=device(), d=d, n_layers=g["layers"], n_heads=g["heads"], ctx=g["ctx"])
                lm.fit(t.head_tokens(g["train_tokens"]), eval_sets=evals, eval_at=at)
                L.append(lm.eval_history_)
                cur.append(lm.train_curve_)
            curves[tag] = np.array(cur).tolist()
            return np.transpose(np.array(L), (1, 0, 2))  # (horizons, train, test)

        gp = gpt_matrix("gpt/perm", perm_train, perm_eval, g["d"])
        gc = gpt_matrix("gpt/cqf", cqf_train, cqf_eval, g["d"])
        mats["gpt/perm"], mats["gpt/cqf"] = gp[-1], gc[-1]
        out["gpt_horizons"] = {"steps": horizons, "perm": gp.tolist(), "cqf": gc.tolist()}
        # C9d proxy (Fig. 10): the Perm matrix at the last horizon for the other widths
        out["gpt_widths"] = {int(g["d"]): gp[-1].tolist()}
        for d in g["widths"]:
            if int(d) != int(g["d"]):
                out["gpt_widths"][int(d)] = gpt_matrix(f"gpt/perm/d{d}", perm_train, perm_eval, int(d), horizons[-1:])[-1].tolist()
        # the 4-gram's loss on the clean held-out member: the ERM-like reference of the horizon criterion
        # (on the same held-out documents as TinyGPT's)
        clean_eval = perm_eval[0].take(np.arange(min(len(perm_eval[0]), int(g["eval_docs"]))))
        out["ngram_clean_loss"] = float(ng(perm_train[0]).loss(clean_eval))
        log("TinyGPT")
    out["gpt_curves"] = curves
    out["matrices"] = {k: v.tolist() for k, v in mats.items()}
    out["perm_ks"], out["family_ks"], out["bucket_edges"] = pk, fam_ks, tuple(cfg["bucket_edges"])

    # ---------------------------------------------------------------- E2 / E8 diagnostics (cheap)
    s_cal = {n: c.score_docs(calib) for n, c in clfs.items()}
    raw = QualityClassifier(V, seed=seed, norm=None).fit_docs(hq_train["orca"], lq_train)
    s_raw = raw.score_docs(calib)
    L = calib.lengths
    out["length_bias"] = {
        "ks": ks, "l2": [float(L[s_cal["orca"] >= np.quantile(s_cal["orca"], 1 - k)].mean()) if k < 1 else float(L.mean()) for k in ks],
        "raw": [float(L[s_raw >= np.quantile(s_raw, 1 - k)].mean()) if k < 1 else float(L.mean()) for k in ks],
        "hq_mean_length": float(hq_train["orca"].lengths.mean())}
    if cfg["keep_samples"]:
        from sklearn.decomposition import TruncatedSVD

        n = min(1500, len(calib))
        web_s, hq_s = calib.take(np.arange(n)), eval_hq["orca"]
        X = featurize(Docs.concat([web_s, hq_s]))
        Z = TruncatedSVD(2, random_state=seed).fit_transform(X)
        out["pca"] = dict(web=Z[:n].tolist(), hq=Z[n:].tolist(), web_genre=web_s.genre.tolist(),
                          web_score=s_cal["orca"][:n].tolist(), hq_genre=hq_s.genre.tolist())
        out["calib_scores"] = {"orca": s_cal["orca"].tolist(), "genre": calib.genre.tolist(), "lengths": L.tolist()}
    return out


def semireal_composition(cfg: dict, seed: int = 0) -> dict:
    """Semi-real check (brief §5.10): shares of each LQ source in CQF(k) of real text (``seed`` draws the
    HQ / held-out split of the help topics, the shuffled noise, the spam and the classifier's split)."""
    from .semireal import SOURCES, build_corpus

    sc = cfg["semireal"]
    words, hq_tr, hq_ho, lq_tr, pool = build_corpus(seed=seed, doc_words=sc["doc_words"], n_hq_train=sc["n_hq_train"],
                                                    n_lq_per_source=sc["n_lq_per_source"])

    class _Vocab:
        names, size = words, len(words)

    clf = QualityClassifier(_Vocab, seed=seed).fit_docs(hq_tr, lq_tr)
    s = clf.score_docs(pool)
    shares = {}
    for k in sc["ks"]:
        keep = s >= np.quantile(s, 1 - k) if k < 1 else np.ones(len(s), bool)
        shares[k] = {src: float(np.mean(pool.genre[keep] == i)) for i, src in enumerate(SOURCES)}
    noise = np.isin(pool.genre, [SOURCES.index("shuffled"), SOURCES.index("spam")])
    return dict(shares=shares, noise_pool_share=float(noise.mean()), C=clf.C_, val_accuracy=clf.val_accuracy_, n_pool=len(pool), vocab=len(words),
                hq_docs=len(hq_tr), hq_heldout_mean_score=float(clf.score_docs(hq_ho).mean()))


def noise_removal(cfg: dict, seed: int, n_clfs=(1000, 2000), ks=(0.2, 0.05), n_web: int = 10000) -> dict:
    """Diagnostic of the strength of noise removal (C2): the SPAM + MISINFO token share of the top-k fresh
    web documents by the Orca-like classifier's score, divided by the share in all of them, for classifiers
    trained on n HQ + n LQ documents (``n_clfs``), in this scale's world and in the first version's
    300-entity world (test facts of rank 100-299). Ground-truth genres are read for the diagnostic only.
    Returns ``{"world": {n: [ratio at each k]}, "world300": {...}, "ks": ks}``."""
    worlds = {"world": dict(cfg["world"]), "world300": dict(cfg["world"], n_entities=300, tail_rank=100, tail_end=300)}
    out: dict = {"ks": tuple(ks)}
    for tag, kw in worlds.items():
        out[tag] = {}
        for n in n_clfs:
            world = SynthWeb(seed, **kw)
            clf = QualityClassifier(world.vocab, seed=seed).fit_docs(world.hq("orca", int(n)), world.web(int(n)))
            web = world.web(n_web)
            s, L = clf.score_docs(web), web.lengths
            bad = np.isin(web.genre, [GENRES.index("SPAM"), GENRES.index("MISINFO")])
            base = L[bad].sum() / L.sum()
            keep = [s >= np.quantile(s, 1 - k) for k in ks]
            out[tag][int(n)] = [float(L[m & bad].sum() / L[m].sum() / base) for m in keep]
    return out
