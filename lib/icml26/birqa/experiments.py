"""What the notebook runs: data + oracle, baselines, vanilla/AT/AAT per seed, attacks, ablations, speed."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from . import data as D
from .attacks import attack, attack_batched, ir_score
from .features import feature_pyramid
from .metrics import BASELINES, HIGHER_IS_WORSE, krcc, plcc, srocc
from .model import BiRQA
from .oracle import ensemble_mos, level_mos, oracle_components
from .train import adversarial_finetune, grad_l1, predict, train_vanilla

UNSEEN = ("mifgsm", "apgd")
"""Attacks never used in (AT/AAT) training, which uses PGD."""


@dataclass
class Data:
    pairs: D.PairSet
    train: np.ndarray
    test: np.ndarray
    components: dict
    mos: np.ndarray          # observed (15 raters)
    mos_true: np.ndarray
    mos_level: np.ndarray    # the level-based oracle (observed)
    z_mean: float
    z_std: float
    ref: torch.Tensor
    dist: torch.Tensor
    feats: list

    def z(self, idx):
        return (self.mos[idx] - self.z_mean) / self.z_std

    def attack_subset(self, n: int) -> np.ndarray:
        """A fixed, evenly spaced subset of the test pairs (every type and level represented)."""
        n = min(n, len(self.test))
        return self.test[np.linspace(0, len(self.test) - 1, n).round().astype(int)]


def build_data(cfg) -> Data:
    kinds = list(D.DISTORTIONS)[:cfg["n_kinds"]]
    pairs = D.build_pairs(D.REFERENCES, kinds, cfg["dist_levels"], cfg["n_crops"], cfg["size"], cfg["side"], cfg["seed"])
    train, test = D.split_by_source(pairs)
    comps = oracle_components(pairs.ref, pairs.dist)
    rng = np.random.default_rng(cfg["seed"] + 7)
    mos, true = ensemble_mos(comps, rng)
    mos_lvl, _ = level_mos(pairs.ref, pairs.kind, pairs.level, rng)
    pairs.mos = mos
    ref, dist = torch.from_numpy(pairs.ref), torch.from_numpy(pairs.dist)
    with torch.no_grad():
        feats = [torch.cat(f) for f in zip(*[feature_pyramid(ref[i:i + 256], dist[i:i + 256], cfg["levels"], cfg["window"])
                                             for i in range(0, len(ref), 256)])]
    return Data(pairs, train, test, comps, mos, true, mos_lvl, float(mos[train].mean()), float(mos[train].std()),
                ref, dist, feats)


def score_table(scores: dict[str, np.ndarray], data: Data, idx) -> "pd.DataFrame":
    import pandas as pd

    rows = {}
    for name, s in scores.items():
        s = -np.asarray(s) if name in HIGHER_IS_WORSE else np.asarray(s)
        rows[name] = {"SROCC": srocc(s, data.mos[idx]), "PLCC": plcc(s, data.mos[idx]), "KRCC": krcc(s, data.mos[idx]),
                      "SROCC vs level oracle": srocc(s, data.mos_level[idx])}
    return pd.DataFrame(rows).T


def baseline_scores(data: Data, idx) -> dict[str, np.ndarray]:
    r, d = data.ref[idx], data.dist[idx]
    with torch.no_grad():
        return {name: fn(r, d, check=False).double().numpy() for name, fn in BASELINES.items()}


def make_birqa(cfg, seed: int, **switches) -> BiRQA:
    torch.manual_seed(seed)
    kw = dict(levels=cfg["levels"], channels=cfg["channels"], window=cfg["window"])
    if switches.pop("one_scale", False):
        kw["levels"] = 1
    return BiRQA(**kw, **switches)


ABLATION_SWITCHES = {"-CSRAM": dict(csram=False), "-SCGB": dict(scgb=False), "mean head": dict(head="mean"),
                     "one scale": dict(one_scale=True)}


def train_birqa(cfg, data: Data, seed: int, epochs: int | None = None, **switches) -> tuple[BiRQA, list]:
    model = make_birqa(cfg, seed, **switches)
    feats = [f[data.train] for f in data.feats][:model.levels]
    hist = train_vanilla(model, feats, data.z(data.train), epochs or cfg["epochs"], cfg["batch"], cfg["lr"], seed)
    return model, hist


def fit_seed(cfg, data: Data, seed: int) -> dict:
    """Vanilla BiRQA, then AT and AAT fine-tuned from it (matched batch), for one seed."""
    vanilla, hist = train_birqa(cfg, data, seed)
    tr = data.train
    feats = [f[tr] for f in data.feats]
    at, at_log = adversarial_finetune(vanilla, data.ref[tr], data.dist[tr], feats, data.z(tr), False, cfg, seed)
    aat, aat_log = adversarial_finetune(vanilla, data.ref[tr], data.dist[tr], feats, data.z(tr), True, cfg, seed)
    return dict(vanilla=vanilla, at=at, aat=aat, history=hist, at_log=at_log, aat_log=aat_log)


def clean_srocc(model, data: Data, idx=None) -> float:
    idx = data.test if idx is None else idx
    return srocc(predict(model, data.ref[idx], data.dist[idx]).numpy(), data.mos[idx])


def robust_eval(model, data: Data, cfg, attacks=None, eps_sweep: bool = True, bpda: bool = False) -> dict:
    """SROCC under each attack (boost, eps_main/255) on the attack subset; optionally the I-FGSM eps sweep,
    the IR-score, BPDA through hard LBP and ||grad f||_1."""
    idx = data.attack_subset(cfg["n_attack"])
    r, d, mos = data.ref[idx], data.dist[idx], data.mos[idx]
    score = lambda a, b: model(a, b, check=False)
    p_clean = predict(model, r, d).numpy()
    out = {"clean": srocc(p_clean, mos)}
    eps = cfg["eps_main"] / 255
    half = mixed_mask(len(idx))
    for name in attacks or cfg["attacks"]:
        steps = 1 if name == "fgsm" else cfg["attack_steps"]
        adv = attack_batched(score, r, d, eps, steps, name, "boost", cfg["attack_batch"])
        p = predict(model, r, adv).numpy()
        out[name] = srocc(p, mos)
        out[name + ":shift"] = float(np.mean(p - p_clean))
        out[name + ":mixed"] = srocc(np.where(half, p, p_clean), mos)
    if eps_sweep:
        sweep = {}
        for e in cfg["eps_list"]:
            if e == cfg["eps_main"] and "ifgsm" in out:
                sweep[e] = out["ifgsm"]
                continue
            adv = attack_batched(score, r, d, e / 255, cfg["attack_steps"], "ifgsm", "boost", cfg["attack_batch"])
            sweep[e] = srocc(predict(model, r, adv).numpy(), mos)
        out["sweep"] = sweep
        out["ir_score"] = ir_score([e / 255 for e in sweep], list(sweep.values()), out["clean"])
    if bpda:
        out.update(bpda_eval(model, data, cfg, idx))
    out["grad_l1"] = float(grad_l1(model, r, d).mean())
    return out


def mixed_mask(n: int, seed: int = 0) -> np.ndarray:
    """The *mixed* protocol's attacked half: a fixed random half of the ``n`` attack-subset pairs (the same
    pairs for every model and seed). Only those are boosted; the others keep their clean scores, so a uniform
    boost, which leaves an all-attacked ranking intact, moves the attacked pairs past the clean ones, as when
    one method's outputs are tuned against the metric and then ranked against everyone else's."""
    if n < 2:
        raise ValueError(f"the mixed protocol needs at least 2 pairs, got {n}")
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).permutation(n)[: n // 2]] = True
    return mask


def rank_attack(model, data: Data, cfg) -> float:
    """I-FGSM at eps_main that *boosts* the pairs whose MOS is below the median and *reduces* the others: an
    attacker aiming at the ranking itself (never used in training, so an unseen attack for AT and AAT). For
    vanilla it is the negative control of the budget (N1); AAT - vanilla under it is C3r. SROCC after it."""
    idx = data.attack_subset(cfg["n_attack"])
    r, d, mos = data.ref[idx], data.dist[idx], data.mos[idx]
    sgn = torch.where(torch.from_numpy(mos < np.median(mos)), 1.0, -1.0)
    out = []
    for i in range(0, len(idx), cfg["attack_batch"]):
        sl = slice(i, i + cfg["attack_batch"])
        s_i = sgn[sl]
        out.append(attack(lambda a, b: s_i * model(a, b, check=False), r[sl], d[sl], cfg["eps_main"] / 255,
                          cfg["attack_steps"], "ifgsm", "boost"))
    return srocc(predict(model, r, torch.cat(out)).numpy(), mos)


def bpda_eval(model, data: Data, cfg, idx) -> dict:
    """Gradient-masking check: the model evaluated with *hard* LBP, attacked (a) naively through the hard
    LBP (zero gradient in that branch), (b) with BPDA (hard forward, soft backward); and (c) the soft
    model attacked through soft LBP, for reference."""
    r, d, mos = data.ref[idx], data.dist[idx], data.mos[idx]
    eps, steps, old = cfg["eps_main"] / 255, cfg["attack_steps"], model.lbp
    res = {}
    try:
        for label, mode in (("naive_hard", "hard"), ("bpda", "bpda")):
            model.lbp = mode
            adv = attack_batched(lambda a, b: model(a, b, check=False), r, d, eps, steps, "ifgsm", "boost", cfg["attack_batch"])
            model.lbp = "hard"
            res[label] = srocc(predict(model, r, adv).numpy(), mos)
        model.lbp = "hard"
        res["hard_clean"] = srocc(predict(model, r, d).numpy(), mos)
    finally:
        model.lbp = old
    return res


def speed(cfg, models: dict | None = None, threads: int | None = None) -> dict:
    """Best forward time (s) on one ``speed_side``^2 pair of BiRQA-small (features included), the LPIPS-VGG16
    architecture and ``models`` (name -> callable(ref, dist)), interleaved, on ``speed_threads`` torch threads
    (restored afterwards)."""
    from ..timing import interleaved_best
    from .model import LPIPSVGG16

    threads = threads or cfg["speed_threads"]
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(0)
        s = cfg["speed_side"]
        ref = torch.rand(1, 3, s, s, generator=g)
        dist = (ref + 0.05 * torch.randn(ref.shape, generator=g)).clamp(0, 1)
        torch.manual_seed(0)
        ours, vgg = make_birqa(cfg, 0).eval(), LPIPSVGG16().eval()
        with torch.no_grad():
            fns = {"BiRQA-small": lambda: ours(ref, dist), "LPIPS-VGG16 arch": lambda: vgg(ref, dist)}
            for name, fn in (models or {}).items():
                fns[name] = (lambda f: lambda: f(ref, dist))(fn)
            for f in fns.values():
                f()
            best = interleaved_best(fns, cfg["speed_rounds"])
    finally:
        torch.set_num_threads(old)
    return best
