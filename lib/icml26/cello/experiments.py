"""The chapter's experiments: one seed = a fresh cohort, fresh encoders and fresh aggregators.

`run_seed` renders a cohort, trains the stage-1 encoders (protein-supervised cells for Cello, cell
SimCLR for C-SSL, patch SimCLR for the patch pipelines), caches embeddings, trains every aggregator on
the training slides and evaluates on held-out slides (split by slide). The foundation-model stand-in
P-FM is pre-trained once per run (`pretrain_fm`) on a pool of unlabelled slides disjoint from the test
slides, as a frozen foundation encoder would be, and shared by the seeds.
"""
from __future__ import annotations

import copy
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from . import slides as sl
from .encoders import (CellEncoder, FoundationEncoder, PatchEncoder, crops_to_tensor, embed, train_protein_encoder,
                       train_simclr)
from .train import (Bags, auc, colour_histogram_auc, deletion_aopc, fit_mil, localisation_auroc, make_bags, make_model,
                    pooled_baseline, predict, route_gap)

CELLO_VARIANTS = {  # name -> Cello keyword arguments: the ablations the claims rest on (brief 5.3); the mean-pool
    "Cello": {},      # (pool="mean") and flat (hierarchical=False) ablations carry no claim and were cut for seeds
    "Cello -consistency": dict(gamma=0.0),
    "Cello -prototype": dict(local="linear"),
}
PATCH_MODELS = {"P-ABMIL": "abmil", "P-Gated": "gated", "P-DSMIL": "dsmil"}
# the patch and foundation-model baselines among which C4a's best baseline is chosen (on validation slides);
# C-SSL, C-Gated and PC-Gated are Cello's own ablations, compared separately (derived claims)
PATCH_BASELINES = ("P-Mean", "P-Max", "P-ABMIL", "P-Gated", "P-DSMIL", "P-FM")
# C4's positive control: a baseline at chance by construction (gated ABMIL on Cello's cells, trained and
# early-stopped on permuted slide labels, so it never sees a label tied to its input)
CHANCE = "Chance (gated, permuted labels)"


@dataclass
class Encoded:
    """One cohort's slides with their cached embeddings."""

    slides: list
    cells: list            # protein-supervised cell embeddings, per slide
    cells_ssl: list        # cell SimCLR embeddings (C-SSL)
    tiles: list            # patch SimCLR embeddings (overlapping tiles)
    tiles_fm: list         # P-FM embeddings
    tile_pos: list         # which tiles hold a lesion cell
    extra: dict = field(default_factory=dict)


def _tile_positive(s, cfg):
    _, corners = sl.extract_tiles(s.he, cfg["tile"], cfg["tile"] // 2)
    c = s.centroids[s.lesion]
    t = cfg["tile"]
    return np.array([bool(((c[:, 0] >= a) & (c[:, 0] < a + t) & (c[:, 1] >= b) & (c[:, 1] < b + t)).any()) for a, b in corners])


def cohort(cfg, seed: int, n: int, m=None, kappa=None, keep_ihc: int = 0, protein: bool = True):
    return sl.make_cohort(seed, n, size=cfg["size"], spacing=cfg["spacing"], m=cfg["m_range"] if m is None else m,
                          kappa=cfg["kappa"] if kappa is None else kappa, tile=cfg["tile"], keep_ihc=keep_ihc, protein=protein)


def cell_tensors(slides, cfg):
    return [crops_to_tensor(sl.extract_crops(s.he, s.centroids, cfg["crop"])) for s in slides]


def tile_tensors(slides, cfg, stride=None):
    return [crops_to_tensor(sl.extract_tiles(s.he, cfg["tile"], stride or cfg["tile"] // 2)[0]) for s in slides]


def pretrain_fm(cfg, seed: int = 10_000):
    """P-FM: SimCLR on tiles of ``fm_slides`` unlabelled slides (no IHC), several times the labelled pool,
    with a wider encoder than the small-pool one (`FoundationEncoder`, ``fm_width`` times the channels,
    average and max pooling). Returns (encoder, number of tiles, SimCLR losses)."""
    pool = cohort(cfg, seed, cfg["fm_slides"], protein=False)
    tiles = np.concatenate([sl.extract_tiles(s.he, cfg["tile"], cfg["tile"] // 2)[0] for s in pool])
    torch.manual_seed(seed)   # the encoder's initial weights
    enc, losses = train_simclr(FoundationEncoder(cfg["dim"], cfg["fm_width"]), torch.from_numpy(tiles), steps=cfg["fm_steps"],
                               batch=cfg["patch_batch"], shift=8, seed=seed)
    return enc, len(tiles), losses


def protein_encoder(cfg, slides, seed: int, monitor_slides=None):
    """Stage 1 of Cello on the cells of ``slides``: (encoder, protein head, curves of
    `train_protein_encoder`); ``monitor_slides``: held-out slides whose cells give the learning curve."""
    crops = torch.cat(cell_tensors(slides, cfg))
    protein = np.concatenate([s.protein for s in slides])
    monitor = None
    if monitor_slides:
        monitor = (torch.cat(cell_tensors(monitor_slides, cfg)), np.concatenate([s.protein for s in monitor_slides]))
    # the hard negatives refreshed every 25 steps, at most 40 times (full's 2000 steps: every 50): a mining pass
    # costs ~5 training steps
    steps = cfg["protein_steps"]
    return train_protein_encoder(crops, protein, dim=cfg["dim"], steps=steps, batch=cfg["protein_batch"],
                                 threshold=cfg["protein_threshold"], seed=seed, hard_every=max(25, steps // 40), monitor=monitor)


def zscore_fit(feats: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-dimension mean and standard deviation of the instances of the training slides."""
    x = torch.cat(feats)
    return x.mean(0), x.std(0).clamp_min(1e-6)


def zscore(feats: list[torch.Tensor], stats: tuple[torch.Tensor, torch.Tensor]) -> list[torch.Tensor]:
    mu, sd = stats
    return [(f - mu) / sd for f in feats]


class Encoders:
    """The stage-1 encoders of one seed (trained on the training slides only).

    Cell SimCLR (C-SSL) runs as many steps as the protein encoder, on half its batch (each crop is seen
    in two views): the same number of steps and of crop forward passes per step, so that neither
    encoder of the protein-supervision comparison has more training (review 3). ``val_slides``: their
    cells give the protein encoder's held-out learning curve (``protein_curves``).

    Every embedding handed to an aggregator is standardised per dimension with the statistics of the
    training slides' instances (`encode` with ``fit=True`` first). Raw embeddings put the informative
    directions at a scale of ~0.06 beside nuisance directions of ~0.5: a gated ABMIL at the first
    version's learning rate did not learn even a planted one-standard-deviation lesion shift in 40
    epochs (training loss 0.695 -> 0.692); standardised, gated ABMIL, DSMIL and Cello learn it (test AUC
    0.99, 0.96, 0.97 at their preset rates; a one-seed book-cohort probe; torchmil's plain ABMIL untried)."""

    def __init__(self, cfg, train_slides, seed, fm, val_slides=None):
        crops = torch.cat(cell_tensors(train_slides, cfg))
        self.cell, self.protein_head, self.protein_curves = protein_encoder(cfg, train_slides, seed, val_slides)
        self.protein_losses = self.protein_curves["train"]
        self.stats: dict = {}
        torch.manual_seed(seed)   # initial weights drawn from the seed, not from the global RNG's history
        self.cell_ssl, self.cssl_losses = train_simclr(CellEncoder(cfg["dim"]), crops, steps=cfg["cssl_steps"],
                                                       batch=cfg["protein_batch"] // 2, shift=1, seed=seed)
        ssl_tiles = torch.cat(tile_tensors(train_slides, cfg, stride=cfg["tile"]))  # distinct tiles of the labelled slides
        torch.manual_seed(seed)
        self.patch, self.patch_losses = train_simclr(PatchEncoder(cfg["dim"]), ssl_tiles, steps=cfg["patch_steps"],
                                                     batch=cfg["patch_batch"], shift=8, seed=seed)
        self.n_patch_pool = len(ssl_tiles)
        self.fm = fm

    def encode(self, slides, cfg, which=("cells", "cells_ssl", "tiles", "tiles_fm"), fit: bool = False) -> Encoded:
        """Cached, standardised embeddings of ``slides`` by the encoders named in ``which`` (the others left
        empty); ``fit``: these are the training slides, whose statistics standardise every later call."""
        cells = cell_tensors(slides, cfg) if {"cells", "cells_ssl"} & set(which) else []
        tiles = tile_tensors(slides, cfg) if {"tiles", "tiles_fm"} & set(which) else []
        enc = dict(cells=(self.cell, cells), cells_ssl=(self.cell_ssl, cells), tiles=(self.patch, tiles), tiles_fm=(self.fm, tiles))
        out = {}
        for k, (e, xs) in enc.items():
            if k not in which:
                out[k] = []
                continue
            raw = [embed(e, x) for x in xs]
            if fit:
                self.stats[k] = zscore_fit(raw)
            if k not in self.stats:
                raise ValueError(f"encode the training slides first (fit=True): no statistics for {k!r}")
            out[k] = zscore(raw, self.stats[k])
        return Encoded(slides, out["cells"], out["cells_ssl"], out["tiles"], out["tiles_fm"], [_tile_positive(s, cfg) for s in slides])

    def raw_cells(self, h: torch.Tensor) -> torch.Tensor:
        """Standardised protein-supervised cell embeddings back on the encoder's scale (for its head)."""
        mu, sd = self.stats["cells"]
        return h * sd + mu


def label_regions(slides, n_lab: int, rng, classes=(sl.R_NORMAL, sl.R_LYMPHOID, sl.R_LESION)):
    """n_lab labelled tiles per local class, drawn from the given (training) slides; -1 elsewhere."""
    out = [np.full(len(s.region_labels), -1) for s in slides]
    for k in classes:
        cand = [(i, r) for i, s in enumerate(slides) for r in np.flatnonzero(s.region_labels == k)]
        if len(cand) < 1:
            raise ValueError(f"no training tile of local class {sl.REGION_CLASSES[k]}")
        for j in rng.choice(len(cand), size=min(n_lab, len(cand)), replace=False):
            i, r = cand[j]
            out[i][r] = k
    return out


def bags_of(enc: Encoded, which: str, cfg, region_labels=None):
    n_regions = (cfg["size"] // cfg["tile"]) ** 2
    y = [s.label for s in enc.slides]
    if which in ("cells", "cells_ssl"):
        return make_bags(getattr(enc, which), y, [s.region for s in enc.slides], region_labels,
                         [s.lesion for s in enc.slides], n_regions=n_regions)
    return make_bags(getattr(enc, which), y, None, None, enc.tile_pos)


def tile_mean_bags(enc: Encoded, cfg, which: str = "cells") -> "Bags":
    """PC-Gated's bags: one instance per non-overlapping tile, the mean of its cells' embeddings (the same
    protein-supervised features as Cello, at patch granularity; empty tiles dropped)."""
    n_regions = (cfg["size"] // cfg["tile"]) ** 2
    feats, pos = [], []
    for s, h in zip(enc.slides, getattr(enc, which)):
        r = torch.as_tensor(s.region, dtype=torch.long)
        tot = torch.zeros(n_regions, h.shape[1]).index_add_(0, r, h)
        cnt = torch.bincount(r, minlength=n_regions)
        keep = cnt > 0
        feats.append(tot[keep] / cnt[keep].unsqueeze(1))
        lesion_tiles = np.zeros(n_regions, bool)
        lesion_tiles[s.region[s.lesion]] = True
        pos.append(lesion_tiles[keep.numpy()])
    return make_bags(feats, [s.label for s in enc.slides], None, None, pos)


def _fit_eval(kind, train, test, cfg, seed, val=None, **kw):
    """Build (seeded: ablations start from the same weights), train with early stopping on ``val``, and
    return (model, test AUC, test attention, validation AUC)."""
    torch.manual_seed(seed)
    model = make_model(kind, cfg["dim"], (cfg["size"] // cfg["tile"]) ** 2, **kw)
    lr = cfg["lr"] if kind == "cello" else cfg["lr_mil"]   # each family at a rate where it learns (`Encoders`)
    fit_mil(model, train, epochs=cfg["epochs"], lr=lr, batch=cfg["batch"], seed=seed, val=val)
    score, att = predict(model, test)
    return model, auc(test.Y.numpy(), score), att, model.val_auc


def relabel(bags: Bags, y) -> Bags:
    """The same bags with other slide labels (C4's chance baseline trains on permuted labels)."""
    return Bags(bags.X, bags.mask, bags.region, torch.as_tensor(np.asarray(y), dtype=torch.float32), bags.region_labels,
                bags.inst_pos)


def chunk_mean(losses, n_points: int = 20) -> tuple[list[int], list[float]]:
    """A per-step loss averaged over ``n_points`` equal chunks of steps: (last step of each chunk, mean)."""
    losses = np.asarray(losses, dtype=float)
    edges = np.linspace(0, len(losses), min(n_points, len(losses)) + 1).astype(int)
    return [int(b) for b in edges[1:]], [float(losses[a:b].mean()) for a, b in zip(edges[:-1], edges[1:])]


def probit_dprime(a: float) -> float:
    """d' = sqrt 2 Phi^{-1}(AUC), the separation T1 gives for an AUC (AUC clipped to [0.001, 0.999])."""
    from scipy.stats import norm
    return float(np.sqrt(2) * norm.ppf(np.clip(a, 1e-3, 1 - 1e-3)))


def split_slides(slides, n_train: int, n_val: int):
    """Training slides first, then a label-balanced validation set (n_val // 2 of each class), the rest test."""
    rest = list(range(n_train, len(slides)))
    val = [i for i in rest if slides[i].label == 0][: n_val // 2] + [i for i in rest if slides[i].label == 1][: n_val // 2]
    test = [i for i in rest if i not in set(val)]
    return slides[:n_train], [slides[i] for i in val], [slides[i] for i in test]


def run_seed(cfg, seed: int, fm, curve: bool = True) -> dict:
    """Everything measured on one seed (see the module docstring); ``curve``: also the data-efficiency
    curve (run on the first ``curve_seeds`` seeds). ``res["timings"]``: seconds per part."""
    timings: dict[str, float] = {}

    @contextmanager
    def timed(name):
        t0 = time.perf_counter()
        yield
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0

    rng = np.random.default_rng(seed)
    with timed("render"):
        slides = cohort(cfg, seed, cfg["n_slides"], keep_ihc=2)
    n_tr = cfg["n_train"]
    train_s, val_s, test_s = split_slides(slides, n_tr, cfg["n_val"])
    with timed("encoders"):
        encs = Encoders(cfg, train_s, seed, fm, val_slides=val_s)
    with timed("encode"):
        tr = encs.encode(train_s, cfg, fit=True)
        va, te = encs.encode(val_s, cfg), encs.encode(test_s, cfg)
    rl = label_regions(train_s, cfg["n_lab"], rng)
    cb_tr, cb_va, cb_te = bags_of(tr, "cells", cfg, rl), bags_of(va, "cells", cfg), bags_of(te, "cells", cfg)
    res = dict(auc={}, auc_val={}, best_epoch={}, val_curve={}, loc={}, n_patch_pool=encs.n_patch_pool, n_val=len(val_s),
               n_test=len(test_s), val_epochs=None)
    models = {}

    def run(name, kind, b_tr, b_va, b_te, **kw):
        with timed("fit " + name):
            models[name], res["auc"][name], att, res["auc_val"][name] = _fit_eval(kind, b_tr, b_te, cfg, seed, val=b_va, **kw)
        res["best_epoch"][name] = models[name].best_epoch
        res["val_curve"][name] = models[name].val_curve
        res["val_epochs"] = models[name].val_epochs
        return att

    for name, kw in CELLO_VARIANTS.items():
        res["loc"][name] = localisation_auroc(run(name, "cello", cb_tr, cb_va, cb_te, **kw), cb_te)
    run("C-SSL (Cello, no protein)", "cello", bags_of(tr, "cells_ssl", cfg, rl), bags_of(va, "cells_ssl", cfg),
        bags_of(te, "cells_ssl", cfg))
    run("C-Gated (cells, no local)", "gated", cb_tr, cb_va, cb_te)
    run("PC-Gated (protein cells, tile mean)", "gated", tile_mean_bags(tr, cfg), tile_mean_bags(va, cfg),
        tile_mean_bags(te, cfg))
    # C4p's baseline: chance by construction (labels permuted independently of the slides, validation too)
    prng = np.random.default_rng(seed + 31)
    run(CHANCE, "gated", relabel(cb_tr, prng.permutation(cb_tr.Y.numpy())), relabel(cb_va, prng.permutation(cb_va.Y.numpy())),
        cb_te)
    pb_tr, pb_va, pb_te = bags_of(tr, "tiles", cfg), bags_of(va, "tiles", cfg), bags_of(te, "tiles", cfg)
    for how in ("mean", "max"):
        nm = f"P-{how.capitalize()}"
        res["auc"][nm], res["auc_val"][nm] = pooled_baseline(pb_tr, pb_te, how, seed, val=pb_va)
    for name, kind in PATCH_MODELS.items():
        att = run(name, kind, pb_tr, pb_va, pb_te)
        if kind == "gated":
            res["loc"][name] = localisation_auroc(att, pb_te)
    fb_tr, fb_va, fb_te = bags_of(tr, "tiles_fm", cfg), bags_of(va, "tiles_fm", cfg), bags_of(te, "tiles_fm", cfg)
    run("P-FM", "gated", fb_tr, fb_va, fb_te)
    res["colour_hist"] = colour_histogram_auc([s.he for s in train_s], [s.label for s in train_s],
                                              [s.he for s in test_s], [s.label for s in test_s])
    cello, nocons, pg = models["Cello"], models["Cello -consistency"], models["P-Gated"]
    with timed("faithfulness"):
        # faithfulness (C7): deletion of the top-attended cells, on the logit, over the correctly
        # classified positive test slides, k up to twice the largest lesion
        ks = cfg["del_ks"]
        _, att = predict(cello, cb_te)
        res["aopc"] = deletion_aopc(cello, cb_te, att, ks)
        res["aopc_nocons"] = deletion_aopc(nocons, cb_te, predict(nocons, cb_te)[1], ks)
        # positive control (C7p): delete the true lesion cells first; if this does not lower the logit,
        # no ranking can, and the deletion test is uninformative
        res["aopc_oracle"] = deletion_aopc(cello, cb_te, cb_te.inst_pos.numpy().astype(float), ks)
        res["aopc_oracle_nocons"] = deletion_aopc(nocons, cb_te, cb_te.inst_pos.numpy().astype(float), ks)
        rnd = np.random.default_rng(seed + 7)
        res["aopc_random"] = float(np.mean([deletion_aopc(cello, cb_te, rnd.random(att.shape), ks) for _ in range(3)]))
        shuffled = np.stack([rnd.permutation(a) for a in att])
        res["aopc_shuffled"] = deletion_aopc(cello, cb_te, shuffled, ks)
        res["route_gap"] = {n: route_gap(models[n], cb_te) for n in ("Cello", "Cello -consistency")}
    # permutation invariance (C2)
    perm = torch.randperm(cb_te.X.shape[1], generator=torch.Generator().manual_seed(seed))
    s0 = cello.predict(cb_te.X, cb_te.mask, cb_te.region, return_inst_pred=False)
    s1 = cello.predict(cb_te.X[:, perm], cb_te.mask[:, perm], cb_te.region[:, perm], return_inst_pred=False)
    res["perm_diff"] = float((torch.sigmoid(s0) - torch.sigmoid(s1)).abs().max())
    with timed("local, probes"):
        # local task (C8): prototype vs linear head on the test tiles, then a new class from 5 examples
        res.update(local_task(models["Cello"], models["Cello -prototype"], cb_tr, cb_te, train_s, test_s, cfg, rng))
        # protein probes (C5): cell-type linear probe on frozen embeddings, protein vs SimCLR encoder
        res["probe"] = cell_type_probe(tr, te, cfg, seed)
        # the per-cell separation Delta/sigma of T1 on the trained encoder (marker-A logit, lesion vs other
        # test cells) and the cells per tile P: T1's prediction for the lesion-size sweep
        res["delta_sigma"] = delta_over_sigma(encs.protein_head, te, encs.raw_cells)
        res["protein_abn_head"] = head_lesion_vs_mimic(encs.protein_head, te, encs.raw_cells)
        res["cells_per_tile"] = float(np.mean([s.n_cells for s in slides]) / (cfg["size"] // cfg["tile"]) ** 2)
        # C9's diagnosis: can each tile encoder tell a lesion tile from a reactive (mimic) tile at all?
        res["tile_probe"] = tile_probe(tr, te, cfg)
    with timed("kappa0, sweep"):
        # negative control (C4n): the trained pipelines on kappa = 0 twins, pairs of a positive and a negative
        # slide with identical pixels (tested): no model can score them apart, every gap must vanish
        twins = sl.make_twin_cohort(seed * 100 + 1, cfg["kappa0_slides"] // 2, size=cfg["size"], spacing=cfg["spacing"],
                                    m=cfg["m_range"], kappa=0.0, tile=cfg["tile"])
        k0 = encs.encode(twins, cfg, ("cells", "tiles"))
        cb0, pb0 = bags_of(k0, "cells", cfg), bags_of(k0, "tiles", cfg)
        res["kappa0"] = dict(cello=auc(cb0.Y.numpy(), predict(cello, cb0)[0]), patch=auc(pb0.Y.numpy(), predict(pg, pb0)[0]))
        # lesion-size sweep (C4b): fresh test slides with a fixed m, same trained models and encoders
        res["m_sweep"] = {}
        for m in cfg["m_sweep"]:
            es = encs.encode(cohort(cfg, seed * 100 + m, cfg["sweep_slides"], m=int(m), protein=False), cfg, ("cells", "tiles"))
            cbt, pbt = bags_of(es, "cells", cfg), bags_of(es, "tiles", cfg)
            res["m_sweep"][int(m)] = dict(cello=auc(cbt.Y.numpy(), predict(cello, cbt)[0]),
                                          patch=auc(pbt.Y.numpy(), predict(pg, pbt)[0]))
    # data efficiency: fewer labelled slides. "Cello" keeps the protein encoder of all training slides,
    # "Cello, protein n" retrains it on the n labelled slides only (review 3: protein is supervision too)
    res["curve"] = {}
    with timed("curve"):
        for n in (cfg["n_train_curve"] if curve else ()):
            idx = list(range(min(n, len(cb_tr))))
            rl_n = label_regions(train_s[:len(idx)], cfg["n_lab"], np.random.default_rng(seed))
            cbn = bags_of(Encoded(tr.slides[:len(idx)], tr.cells[:len(idx)], [], [], [], []), "cells", cfg, rl_n)
            cbn_ssl = bags_of(Encoded(tr.slides[:len(idx)], [], tr.cells_ssl[:len(idx)], [], [], []), "cells_ssl", cfg, rl_n)
            enc_n = protein_encoder(cfg, train_s[:len(idx)], seed)[0]
            raw = [[embed(enc_n, c) for c in cell_tensors(ss, cfg)] for ss in (train_s[:len(idx)], val_s, test_s)]
            st = zscore_fit(raw[0])   # its own training slides' statistics
            own = [Encoded(ss, zscore(r, st), [], [], [], []) for ss, r in zip((train_s[:len(idx)], val_s, test_s), raw)]
            res["curve"][int(n)] = {
                "Cello": _fit_eval("cello", cbn, cb_te, cfg, seed, val=cb_va)[1],
                "Cello, protein n": _fit_eval("cello", bags_of(own[0], "cells", cfg, rl_n), bags_of(own[2], "cells", cfg), cfg,
                                              seed, val=bags_of(own[1], "cells", cfg))[1],
                "C-SSL": _fit_eval("cello", cbn_ssl, bags_of(te, "cells_ssl", cfg), cfg, seed, val=bags_of(va, "cells_ssl", cfg))[1],
                "P-FM": _fit_eval("gated", fb_tr.subset(idx), fb_te, cfg, seed, val=fb_va)[1],
                "P-Gated": _fit_eval("gated", pb_tr.subset(idx), pb_te, cfg, seed, val=pb_va)[1]}
        if curve:
            res["curve"][n_tr] = {k: res["auc"][v] for k, v in (("Cello", "Cello"), ("Cello, protein n", "Cello"),
                                                                ("C-SSL", "C-SSL (Cello, no protein)"), ("P-FM", "P-FM"),
                                                                ("P-Gated", "P-Gated"))}
    i = int(np.flatnonzero([s.label for s in test_s])[0])   # the first positive test slide
    res["example"] = dict(slide=test_s[i], train_slides=train_s[:2])
    ex = test_s[i]
    res["example"]["cell_att"] = att[i][: ex.n_cells]
    res["example"]["patch_att"] = predict(pg, pb_te.subset([i]))[1][0]
    res["encoder_losses"] = {"protein": encs.protein_losses, "cell SimCLR": encs.cssl_losses, "patch SimCLR": encs.patch_losses}
    res["protein_monitor"] = (encs.protein_curves["steps"], encs.protein_curves["monitor"])
    res["models"] = dict(cello=cello, patch_gated=pg, encoders=encs)
    res["timings"] = timings
    return res


@torch.no_grad()
def delta_over_sigma(head, te: Encoded, raw=lambda h: h) -> float:
    """T1's per-cell separation on the trained stage-1 encoder: (mean marker-A logit of the lesion test
    cells - that of the other test cells) / their pooled standard deviation. ``raw`` undoes the
    standardisation of the cached embeddings (`Encoders.raw_cells`)."""
    z = head(raw(torch.cat(te.cells)))[:, 0].numpy()
    les = np.concatenate([s.lesion for s in te.slides])
    a, b = z[les], z[~les]
    return float((a.mean() - b.mean()) / np.sqrt(0.5 * (a.var(ddof=1) + b.var(ddof=1))))


@torch.no_grad()
def head_lesion_vs_mimic(head, te: Encoded, raw=lambda h: h) -> float:
    """AUROC of the protein head's marker-A logit, lesion vs mimic test cells: whether stage 1 learned the
    one distinction the slide label turns on from the protein signal alone (no label, no probe)."""
    z = head(raw(torch.cat(te.cells)))[:, 0].numpy()
    types = np.concatenate([s.types for s in te.slides])
    sel = np.isin(types, (sl.LESION, sl.MIMIC))
    return auc(types[sel] == sl.LESION, z[sel])


def tile_probe(tr: Encoded, te: Encoded, cfg) -> dict:
    """Linear-probe AUROC of lesion vs reactive-mimic tiles (the label's cause vs its stain-matched
    confounder) from each tile representation: the small-pool patch encoder (P-Gated's), the FM
    stand-in (P-FM's) and the per-tile mean of the protein-supervised cell embeddings (PC-Gated's).
    Non-overlapping tiles; trained on the training slides, scored on the test slides."""
    g = (cfg["size"] - cfg["tile"]) // (cfg["tile"] // 2) + 1      # overlapping grid, stride tile / 2
    n_side = cfg["size"] // cfg["tile"]
    own = np.array([2 * i * g + 2 * j for i in range(n_side) for j in range(n_side)])   # its non-overlapping tiles

    def data(enc: Encoded, which: str):
        X, y = [], []
        for k, s in enumerate(enc.slides):
            lab = s.region_labels
            if which == "cells":
                r = torch.as_tensor(s.region, dtype=torch.long)
                h = enc.cells[k]
                cnt = torch.bincount(r, minlength=len(lab)).clamp_min(1).unsqueeze(1)
                f = (torch.zeros(len(lab), h.shape[1]).index_add_(0, r, h) / cnt).numpy()
            else:
                f = getattr(enc, which)[k].numpy()[own]
            keep = np.isin(lab, (sl.R_LESION, sl.R_REACTIVE))
            X.append(f[keep])
            y.append(lab[keep] == sl.R_LESION)
        return np.concatenate(X), np.concatenate(y)

    out = {}
    for name, which in (("patch SimCLR", "tiles"), ("FM stand-in", "tiles_fm"), ("protein cells, tile mean", "cells")):
        Xtr, ytr = data(tr, which)
        Xte, yte = data(te, which)
        if len(np.unique(ytr)) < 2 or len(np.unique(yte)) < 2:
            out[name] = float("nan")
            continue
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000, C=1.0)).fit(Xtr, ytr)
        out[name] = auc(yte, clf.decision_function(Xte))
    return out


@torch.no_grad()
def local_task(cello, linear, cb_tr, cb_te, train_s, test_s, cfg, rng) -> dict:
    """Macro-F1 of the local head (prototypes vs linear) on test tiles of the 3 trained classes, and the
    recall of a new class ('reactive') added from 5 example tiles without retraining (brief 5.4)."""
    out_p, out_l = cello.route(cb_te.X, cb_te.mask, cb_te.region), linear.route(cb_te.X, cb_te.mask, cb_te.region)
    lab = torch.as_tensor(np.stack([s.region_labels for s in test_s]))
    keep = (lab != sl.R_REACTIVE) & (out_p["rmask"] > 0)
    y = lab[keep].numpy()
    f1_p = f1_score(y, out_p["p_r"][keep].argmax(-1).numpy(), average="macro")
    f1_l = f1_score(y, out_l["p_r"][keep].argmax(-1).numpy(), average="macro")
    # new class: 5 reactive tiles of the training slides -> prototypes
    ztr = cello.route(cb_tr.X, cb_tr.mask, cb_tr.region)["z_r"]
    lab_tr = np.stack([s.region_labels for s in train_s])
    cand = np.argwhere(lab_tr == sl.R_REACTIVE)
    pick = cand[rng.choice(len(cand), size=min(cfg["n_new"], len(cand)), replace=False)]
    head = copy.deepcopy(cello.head)   # the trained head is left untouched
    k_new = head.add_class(ztr[pick[:, 0], pick[:, 1]])
    pred = head.scores(out_p["z_r"]).argmax(-1)
    allk = out_p["rmask"] > 0
    y_all = lab[allk].numpy()
    pred_all = pred[allk].numpy()
    recall_new = float((pred_all[y_all == sl.R_REACTIVE] == k_new).mean())
    old = y_all != sl.R_REACTIVE
    f1_old_after = f1_score(y_all[old], np.where(pred_all[old] == k_new, -1, pred_all[old]), average="macro",
                            labels=[0, 1, 2])
    return dict(f1_proto=float(f1_p), f1_linear=float(f1_l), recall_new=recall_new, f1_old_after=float(f1_old_after),
                n_reactive_test=int((y_all == sl.R_REACTIVE).sum()))


def cell_type_probe(tr: Encoded, te: Encoded, cfg, seed) -> dict:
    """Linear probes on frozen cell embeddings, protein-supervised vs SimCLR encoder: the 5 cell types
    (balanced accuracy, ``protein``/``ssl``) and the abnormal-class direction of T3, lesion vs mimic
    (the two enlarged, stain-matched types; AUROC on test cells, ``protein_abn``/``ssl_abn``)."""
    from sklearn.metrics import balanced_accuracy_score
    rng = np.random.default_rng(seed)
    out = {}
    for name, attr in (("protein", "cells"), ("ssl", "cells_ssl")):
        Xtr, ytr = torch.cat(getattr(tr, attr)).numpy(), np.concatenate([s.types for s in tr.slides])
        Xte, yte = torch.cat(getattr(te, attr)).numpy(), np.concatenate([s.types for s in te.slides])
        i = rng.choice(len(Xtr), size=min(cfg["probe_cells"], len(Xtr)), replace=False)
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000, C=1.0)).fit(Xtr[i], ytr[i])
        out[name] = float(balanced_accuracy_score(yte, clf.predict(Xte)))
        abn_tr, abn_te = np.isin(ytr, (sl.LESION, sl.MIMIC)), np.isin(yte, (sl.LESION, sl.MIMIC))
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000, C=1.0))
        clf.fit(Xtr[abn_tr], ytr[abn_tr] == sl.LESION)
        out[name + "_abn"] = auc(yte[abn_te] == sl.LESION, clf.decision_function(Xte[abn_te]))
    return out
