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
from .metrics import decile_losses, t1_accuracy
from .ngram import NGramLM
from .selection import Request, calibrate, exclusive_buckets, perm, select_many
from .world import GENRES, Docs, SynthWeb

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


def _ngram(cfg, docs):
    return NGramLM(docs_vocab_size(cfg), order=cfg["ngram_order"], discount=cfg["ngram_discount"]).fit(docs)


def docs_vocab_size(cfg):
    return cfg["_V"]


def run_seed(cfg: dict, seed: int, log=None) -> dict:
    """Every experiment of one seed (E1-E9 of the chapter); returns a dict of floats, lists and arrays."""
    log = log or (lambda *a: None)
    world = SynthWeb(seed, **cfg["world"])
    V = world.vocab
    cfg = dict(cfg, _V=V.size)
    rng = np.random.default_rng([seed, 3])
    B, ks, n_eval = int(cfg["budget"]), tuple(cfg["ks"]), int(cfg["n_eval_docs"])
    out: dict = {"seed": seed, "budget": B, "ks": ks}

    # ---------------------------------------------------------------- classifiers and calibration
    lq_train = world.web(cfg["n_clf"])
    hq_train = {name: world.hq(name, cfg["n_clf"]) for name in (*E1_SETS, "covering")}
    clfs = {name: QualityClassifier(V, seed=seed).fit_docs(hq, lq_train) for name, hq in hq_train.items()}
    calib = world.web(cfg["n_calib"])
    for clf in clfs.values():
        calibrate(clf, calib)
    out["clf"] = {n: dict(C=c.C_, val_accuracy=c.val_accuracy_) for n, c in clfs.items()}
    eval_lq = world.web(n_eval)
    eval_hq = {name: world.hq(name, n_eval) for name in (*E1_SETS, "covering")}
    deciles_docs = world.hq("orca", cfg["n_decile_docs"])
    log("classifiers")

    # ---------------------------------------------------------------- pass 1: CQF(HQ, k), buckets, random
    req = {"random": Request(None, budget=B, n_eval_docs=n_eval)}
    for name in E1_SETS:
        for k in ks:
            if k < 1:
                req[f"cqf/{name}/{k}"] = Request(name, clfs[name].cdf_.tau(k), np.inf, B,
                                                 n_eval if name == "orca" else 0)
    req["cqf/covering/0.05"] = Request("covering", clfs["covering"].cdf_.tau(0.05), np.inf, B)
    buckets = exclusive_buckets(clfs["orca"].cdf_, cfg["bucket_edges"])
    for j, (lo, hi) in enumerate(buckets):
        req[f"bucket/{j}"] = Request("orca", lo, hi, B, n_eval)
    fracs = np.diff(cfg["bucket_edges"])
    k_min = min(min(ks), float(fracs.min()))
    cap = int(cfg["cap_factor"] * (B + n_eval * 70) / k_min)
    scorers = {n: c.score_matrix for n, c in clfs.items()}
    featurize = clfs["orca"].featurize
    sel = select_many(world.web_stream(cfg["stream_batch"]), scorers, req, cap, featurize)
    for name in E1_SETS:
        sel[f"cqf/{name}/1.0"] = sel["random"]
    out["generated"] = {n: s.generated_tokens for n, s in sel.items()}
    out["kept"] = {n: s.kept_tokens for n, s in sel.items()}
    out["composition"] = {n: s.train.shares(by_tokens=True) for n, s in sel.items()}
    out["bad_share"] = {n: bad_share(s.train) for n, s in sel.items()}
    log("pass 1")

    # ---------------------------------------------------------------- pass 2: recursive CQF, IS pool
    d_hq = sel[f"cqf/orca/{cfg['recursive_k1']}"].train
    rec = QualityClassifier(V, seed=seed).fit_docs(d_hq.take(np.arange(min(cfg["n_clf"], len(d_hq)))), lq_train)
    calibrate(rec, calib)
    pool_tokens = int(B / cfg["is_pool_k"])
    req2 = {"recursive": Request("recursive", rec.cdf_.tau(cfg["recursive_k2"]), np.inf, B),
            "pool": Request(None, budget=pool_tokens)}
    cap2 = int(cfg["cap_factor"] * B / min(cfg["recursive_k2"], cfg["is_pool_k"]))
    sel2 = select_many(world.web_stream(cfg["stream_batch"]), {"recursive": rec.score_matrix}, req2, cap2, featurize)
    pool = sel2["pool"].train
    out["generated"]["recursive"] = sel2["recursive"].generated_tokens
    dsir = DSIRLike(V, n_buckets=cfg["dsir_buckets"]).fit(hq_train["orca"], lq_train)
    sel_dsir = dsir.resample(pool, B, rng)
    crisp = CRISPLike(cfg["crisp_clusters"], seed=seed)
    X_fit = featurize(Docs.concat([hq_train["orca"], lq_train]))
    crisp.fit(X_fit, featurize(hq_train["orca"]), hq_train["orca"].lengths)
    sel_crisp = crisp.resample(pool, featurize(pool), B)
    extra = {"recursive": sel2["recursive"].train, "dsir": sel_dsir, "crisp": sel_crisp}
    for n, d in extra.items():
        out["composition"][n] = d.shares(by_tokens=True)
        out["bad_share"][n] = bad_share(d)
    log("pass 2")

    # ---------------------------------------------------------------- LMs and metrics
    res: dict = {}

    def evaluate(tag, docs, hq_name="orca", deciles=False):
        lm = _ngram(cfg, docs)
        r = dict(t1=t1_accuracy(lm, world), t1_decoy=t1_accuracy(lm, world, decoy=True), lq_loss=lm.loss(eval_lq), hq_loss=lm.loss(eval_hq[hq_name]),
                 task_loss=lm.loss(eval_hq["task"]))
        if deciles:
            r["deciles"] = decile_losses(lm, deciles_docs, clfs["orca"].score_docs(deciles_docs)).tolist()
        res[tag] = r
        return lm

    for name in E1_SETS:
        for k in ks:
            evaluate(f"cqf/{name}/{k}", sel[f"cqf/{name}/{k}"].train, name, deciles=(name == "orca"))
        evaluate(f"hq/{name}", hq_tokens(world, name, B), name)
    evaluate("hq/covering", hq_tokens(world, "covering", B), "covering")
    evaluate("cqf/covering/0.05", sel["cqf/covering/0.05"].train, "covering")
    for n, d in extra.items():
        evaluate(n, d, "orca")
    # E4 (Fig. 6): the top 10 % of the HQ set by its own score vs all of it, equal tokens
    big_hq = hq_tokens(world, "orca", int(B / cfg["hq_top_fraction"] * 1.2))
    s_hq = clfs["orca"].score_docs(big_hq)
    top = big_hq.take(s_hq >= np.quantile(s_hq, 1 - cfg["hq_top_fraction"])).head_tokens(B)
    evaluate("hq/orca_top", top, "orca")
    out["metrics"] = res
    log("n-gram LMs")

    # ---------------------------------------------------------------- E7: data-conditioning matrices
    pk = tuple(cfg["perm_ks"])
    base, base_eval = sel["random"].train, sel["random"].eval
    perm_train = [perm(base, k, np.random.default_rng([seed, 40, i])) for i, k in enumerate(pk)]
    perm_eval = [perm(base_eval, k, np.random.default_rng([seed, 41, i])) for i, k in enumerate(pk)]
    fam_ks = sorted(cfg["family_ks"])  # clean (small k) to dirty (k = 1)
    cqf_train = [sel[f"cqf/orca/{k}"].train for k in fam_ks]
    cqf_eval = [sel[f"cqf/orca/{k}"].eval for k in fam_ks]
    nb = len(buckets)
    bucket_train = [sel[f"bucket/{j}"].train for j in reversed(range(nb))]  # top bucket (cleanest) first
    bucket_eval = [sel[f"bucket/{j}"].eval for j in reversed(range(nb))]

    def matrix(make, trains, evals):
        models = [make(t) for t in trains]
        return np.array([[m.loss(e) for e in evals] for m in models])

    mats = {"ngram/perm": matrix(lambda d: _ngram(cfg, d), perm_train, perm_eval),
            "ngram/cqf": matrix(lambda d: _ngram(cfg, d), cqf_train, cqf_eval),
            "ngram/exclusive": matrix(lambda d: _ngram(cfg, d), bucket_train, bucket_eval)}
    g = cfg["gpt"]
    if g["enabled"]:
        from ..seeding import device

        def make_gpt(d, i=[0]):
            i[0] += 1
            return GPTLM(V.size, steps=g["steps"], batch=g["batch"], lr=g["lr"], seed=1000 * seed + i[0],
                         device=device(), d=g["d"], n_layers=g["layers"], n_heads=g["heads"], ctx=g["ctx"]).fit(d)

        mats["gpt/perm"] = matrix(make_gpt, [t.head_tokens(g["train_tokens"]) for t in perm_train], perm_eval)
        mats["gpt/cqf"] = matrix(make_gpt, [t.head_tokens(g["train_tokens"]) for t in cqf_train], cqf_eval)
        log("TinyGPT")
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


def semireal_composition(cfg: dict) -> dict:
    """Semi-real check (brief §5.10): shares of each LQ source in CQF(k) of real text."""
    from .semireal import SOURCES, build_corpus

    sc = cfg["semireal"]
    words, hq_tr, hq_ho, lq_tr, pool = build_corpus(seed=0, doc_words=sc["doc_words"], n_hq_train=sc["n_hq_train"],
                                                    n_lq_per_source=sc["n_lq_per_source"])

    class _Vocab:
        names, size = words, len(words)

    clf = QualityClassifier(_Vocab, seed=0).fit_docs(hq_tr, lq_tr)
    s = clf.score_docs(pool)
    shares = {}
    for k in sc["ks"]:
        keep = s >= np.quantile(s, 1 - k) if k < 1 else np.ones(len(s), bool)
        shares[k] = {src: float(np.mean(pool.genre[keep] == i)) for i, src in enumerate(SOURCES)}
    return dict(shares=shares, C=clf.C_, val_accuracy=clf.val_accuracy_, n_pool=len(pool), vocab=len(words),
                hq_docs=len(hq_tr), hq_heldout_mean_score=float(clf.score_docs(hq_ho).mean()))
