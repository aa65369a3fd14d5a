"""What the notebook runs: data + oracle, baselines, vanilla/AT/AAT (+ controls) per seed, the rank-direction
robustness protocol (attacks.py), the out-of-sample anchored bound, ablations, speed."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from . import data as D
from .attacks import UNSEEN, attack_batched, attack_directed, ir_score, rank_direction
from .bound import anchored_bound, stratified_anchors
from .features import feature_pyramid
from .metrics import BASELINES, HIGHER_IS_WORSE, krcc, plcc, srocc
from .model import BiRQA
from .oracle import ensemble_mos, level_mos, oracle_components
from .train import adversarial_finetune, clean_finetune, grad_l1, predict, train_vanilla


@dataclass
class Data:
    pairs: D.PairSet
    train: np.ndarray
    test: np.ndarray
    components: dict
    mos: np.ndarray          # observed (15 raters)
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

    def probe(self, n_attack: int, n: int = 64) -> np.ndarray:
        """Held-out test pairs outside the attack subset of ``n_attack`` (at most ``n``, evenly spaced): the pairs on
        which the adversarial trainers' attacked-SROCC curve is recorded (never trained on, never in a claim)."""
        rest = np.setdiff1d(self.test, self.attack_subset(n_attack))
        if len(rest) < 8:
            raise ValueError(f"only {len(rest)} held-out test pairs outside the attack subset: lower n_attack")
        return rest[np.linspace(0, len(rest) - 1, min(n, len(rest))).round().astype(int)]


def build_data(cfg, device=None, references=None) -> Data:
    """Pairs, oracle MOS, the split by source and the cached feature maps; image tensors and feature maps on
    ``device`` (default: ``icml26.device()``, CUDA when present). ``references``: a subset of `data.REFERENCES`
    (default all; the unit tests use a few)."""
    kinds = list(D.DISTORTIONS)[:cfg["n_kinds"]]
    pairs = D.build_pairs(D.REFERENCES if references is None else references, kinds, cfg["dist_levels"], cfg["n_crops"], cfg["size"], cfg["side"], cfg["seed"])
    train, test = D.split_by_source(pairs)
    comps = oracle_components(pairs.ref, pairs.dist)
    rng = np.random.default_rng(cfg["seed"] + 7)
    mos, _ = ensemble_mos(comps, rng)
    mos_lvl, _ = level_mos(pairs.ref, pairs.kind, pairs.level, rng)
    pairs.mos = mos
    ref, dist = torch.from_numpy(pairs.ref), torch.from_numpy(pairs.dist)
    with torch.no_grad():
        feats = [torch.cat(f) for f in zip(*[feature_pyramid(ref[i:i + 256], dist[i:i + 256], cfg["levels"], cfg["window"])
                                             for i in range(0, len(ref), 256)])]
    if device is None:
        from ..seeding import device as pick

        device = pick()
    ref, dist, feats = ref.to(device), dist.to(device), [f.to(device) for f in feats]
    return Data(pairs, train, test, comps, mos, mos_lvl, float(mos[train].mean()), float(mos[train].std()),
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
        return {name: fn(r, d, check=False).double().cpu().numpy() for name, fn in BASELINES.items()}


def make_birqa(cfg, seed: int, device=None, **switches) -> BiRQA:
    """A freshly initialised BiRQA of the preset's size (``switches``: the ablations), on ``device``
    (default ``icml26.device()``)."""
    torch.manual_seed(seed)
    kw = dict(levels=cfg["levels"], channels=cfg["channels"], window=cfg["window"])
    if switches.pop("one_scale", False):
        kw["levels"] = 1
    return BiRQA(**kw, **switches).to(device or _device())


def _device():
    from ..seeding import device

    return device()


ABLATION_SWITCHES = {"-CSRAM": dict(csram=False), "-SCGB": dict(scgb=False), "mean head": dict(head="mean"),
                     "one scale": dict(one_scale=True)}


def train_birqa(cfg, data: Data, seed: int, epochs: int | None = None, monitor=None, monitor_log: list | None = None,
                stop_after: int | None = None, **switches) -> tuple[BiRQA, list]:
    """Vanilla BiRQA trained from scratch on the training pairs (``switches``: the ablations). ``monitor``
    (``model -> float``, `attacked_srocc_monitor`): its held-out curve, ``(step, value)`` into ``monitor_log``;
    ``stop_after``: stop after that many steps (an under-trained model; `train_vanilla`)."""
    model = make_birqa(cfg, seed, **switches)
    feats = [f[data.train] for f in data.feats][:model.levels]
    y = data.z(data.train)
    hist = train_vanilla(model, feats, y, epochs or cfg["epochs"], cfg["batch"], cfg["lr"], seed, monitor=monitor,
                         monitor_log=monitor_log, stop_after=stop_after)
    return model, hist


def attacked_srocc_monitor(cfg, data: Data):
    """A callable ``model -> SROCC`` on the held-out probe pairs (`Data.probe`) under the training adversary
    (PGD, ``at_steps`` steps of 2.5 eps / steps, eps_train, the rank direction about the training mean MOS): the
    curve of vanilla and of the adversarial trainers that the convergence rule judges (vanilla's cosine-annealed
    training loss falls to its last step at any length; the adversarial trainers' per-step loss mixes MOS bands).
    The probe pairs are test pairs outside the attack subset: never trained on, never in an attacked claim."""
    idx = data.probe(cfg["n_attack"], cfg["n_probe"])
    r, d, mos = data.ref[idx], data.dist[idx], data.mos[idx]
    direction = rank_direction(mos, center=float(data.mos[data.train].mean()))
    eps, steps = cfg["eps_train"], cfg["at_steps"]

    def monitor(model) -> float:
        adv = attack_directed(lambda a, b: model(a, b, check=False), r, d, eps, steps, "pgd", direction,
                              cfg["attack_batch"], seed=1, alpha=_alpha(eps, steps))
        return srocc(predict(model, r, adv).numpy(), mos)

    return monitor


def fit_seed(cfg, data: Data, seed: int) -> dict:
    """Vanilla BiRQA, then fine-tuned from it with the same extra epochs and batch: AT (the lab's FR AT, clean
    labels, both directions), AAT, the second AT arm ``at_low`` (Chistyakova et al. 2024's label lowering) when the
    preset asks for it, and the controls ``more`` and ``more_b`` (vanilla + the same epochs on clean pairs, two
    batch orders: the null pair of C3g/C5's negative controls). ``vanilla_curve``: vanilla's held-out attacked
    SROCC, ``(step, value)`` before training and after each tenth of its steps (`attacked_srocc_monitor`)."""
    mon = attacked_srocc_monitor(cfg, data)
    curve: list = []
    vanilla, hist = train_birqa(cfg, data, seed, monitor=mon, monitor_log=curve)
    tr = data.train
    feats = [f[tr] for f in data.feats]
    z = data.z(tr)
    args = (data.ref[tr], data.dist[tr], feats, z)
    # vanilla_probe: the held-out attacked SROCC of the trained vanilla (the curve's last point, = mon(vanilla)),
    # where AT's and AAT's curves start
    out = dict(vanilla=vanilla, history=hist, vanilla_curve=curve, vanilla_probe=curve[-1][1])
    out["at"], out["at_log"] = adversarial_finetune(vanilla, *args, False, cfg, seed, label="clean", monitor=mon)
    out["aat"], out["aat_log"] = adversarial_finetune(vanilla, *args, True, cfg, seed, monitor=mon)
    if cfg["at_lowering_arm"]:
        out["at_low"], out["at_low_log"] = adversarial_finetune(vanilla, *args, False, cfg, seed, label="ssim")
    out["more"], out["more_history"] = clean_finetune(vanilla, feats, z, cfg, seed)
    out["more_b"], _ = clean_finetune(vanilla, feats, z, cfg, seed + 1000)
    return out


def clean_srocc(model, data: Data, idx=None) -> float:
    idx = data.test if idx is None else idx
    return srocc(predict(model, data.ref[idx], data.dist[idx]).numpy(), data.mos[idx])


def permuted_srocc(model, data: Data, seed: int = 0) -> float:
    """SROCC of the model's test scores given to a random permutation of the test pairs: a metric that knows
    nothing about each pair's quality, by construction (SROCC ~ 0 +- 1/sqrt(n)): the foil of the positive
    controls of clean-accuracy tests."""
    idx = data.test
    p = predict(model, data.ref[idx], data.dist[idx]).numpy()
    return srocc(p[np.random.default_rng(seed + 99).permutation(len(p))], data.mos[idx])


def _alpha(eps: float, steps: int) -> float:
    """Step of the iterative evaluation attacks: 2.5 eps / steps (Madry et al. 2018's travel)."""
    return 2.5 * eps / steps


def robust_eval(model, data: Data, cfg, attacks=None, eps_scale: float = 1.0, sweep: bool = False,
                diagnostics: bool = False, bpda: bool = False) -> dict:
    """The rank-direction protocol (attacks.py) on the attack subset of test pairs: SROCC(attacked, MOS) under
    each attack at eps_main / 255 (times ``eps_scale``), each pair's |y^_adv - z| (z-scored MOS units) and
    the attacked predictions (`attack_error`: the error they add); optionally the eps sweep of ``sweep_attack`` (eps_list, the lab's grid), the
    uniform-boost and mixed-half diagnostics, BPDA through the hard LBP, and ||grad f||_1.

    ``eps_scale`` < 1 is the positive control of the robustness claims: attacking ``f`` with budget
    ``eps_scale * eps`` is attacking ``f_c(ref, x) = f(ref, dist + (x - dist) * eps_scale)`` with budget eps
    (up to the [0, 1] clamp), a model made 1 / eps_scale times less sensitive to the perturbation by construction."""
    idx = data.attack_subset(cfg["n_attack"])
    r, d, mos, z = data.ref[idx], data.dist[idx], data.mos[idx], data.z(idx)
    score = lambda a, b: model(a, b, check=False)
    direction = rank_direction(mos)
    p_clean = predict(model, r, d).numpy()
    out = {"clean": srocc(p_clean, mos), "clean_err": np.abs(p_clean - z), "p_clean": p_clean, "z": z}
    eps = cfg["eps_main"] / 255 * eps_scale
    for name in attacks or cfg["attacks"]:
        steps = 1 if name == "fgsm" else cfg["attack_steps"]
        adv = attack_directed(score, r, d, eps, steps, name, direction, cfg["attack_batch"], alpha=_alpha(eps, steps))
        p = predict(model, r, adv).numpy()
        out[name] = srocc(p, mos)
        out[name + ":p"] = p
    if sweep:
        out["sweep"] = {}
        for e in cfg["eps_list"]:
            if e == cfg["eps_main"] and cfg["sweep_attack"] in out and cfg["sweep_attack"] != "fgsm":
                # the same attack, budget, steps, step size and seed as the main call above: reuse its SROCC
                out["sweep"][e] = out[cfg["sweep_attack"]]
                continue
            s_e = e / 255 * eps_scale
            adv = attack_directed(score, r, d, s_e, cfg["attack_steps"], cfg["sweep_attack"], direction,
                                  cfg["attack_batch"], alpha=_alpha(s_e, cfg["attack_steps"]))
            out["sweep"][e] = srocc(predict(model, r, adv).numpy(), mos)
        out["ir_score"] = ir_score([e / 255 for e in out["sweep"]], list(out["sweep"].values()), out["clean"])
    if diagnostics:
        adv = attack_batched(score, r, d, eps, cfg["attack_steps"], "ifgsm", "boost", cfg["attack_batch"],
                             alpha=_alpha(eps, cfg["attack_steps"]))
        p = predict(model, r, adv).numpy()
        out["boost"] = srocc(p, mos)
        out["boost:shift"] = float(np.mean(p - p_clean))
        out["boost:mixed"] = srocc(np.where(mixed_mask(len(idx)), p, p_clean), mos)
        g = grad_l1(model, r, d)
        out["grad_l1"] = float(g.mean())
        # first-order model of the rank-direction attack: y^ + direction * eps * ||grad f||_1 (attacks.py, T6)
        out["first_order"] = srocc(p_clean + direction * eps * g, mos)
        out["first_order_boost"] = srocc(p_clean + eps * g, mos)
    if bpda:
        out.update(bpda_eval(model, data, cfg, idx, direction))
    if "grad_l1" not in out:
        out["grad_l1"] = float(grad_l1(model, r, d).mean())
    return out


def attack_error(res: dict, attacks) -> np.ndarray:
    """Per attacked pair, the error the attacks add: max over ``attacks`` of |y^_adv - z| - |y^_clean - z|
    (z-scored MOS units; `robust_eval`'s result ``res``). The clean misfit cancels, so the statistic measures
    what the attack does, not how well the model fits."""
    clean = np.abs(res["p_clean"] - res["z"])
    return np.max([np.abs(res[a + ":p"] - res["z"]) - clean for a in attacks], axis=0)


def mixed_mask(n: int, seed: int = 0) -> np.ndarray:
    """The *mixed* diagnostic's attacked half: a fixed random half of the ``n`` attack-subset pairs (the same
    pairs for every model and seed). Only those are boosted; the others keep their clean scores."""
    if n < 2:
        raise ValueError(f"the mixed protocol needs at least 2 pairs, got {n}")
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).permutation(n)[: n // 2]] = True
    return mask


def out_of_sample_bound(model, data: Data, cfg, res: dict, seed: int = 0):
    """The anchored bound (B) used *out of sample*: MOS-stratified anchors from the **training** pairs with
    their clean predictions, the attacked **test** pairs (each pair's worst prediction over the attacks of
    ``res``, from `robust_eval`). Returns the `BoundCheck` (per pair: error, bound, coverage)."""
    rng = np.random.default_rng(seed + 5)
    a = data.train[stratified_anchors(data.mos[data.train], cfg["n_anchors"], rng)]
    p_a = predict(model, data.ref[a], data.dist[a]).numpy()
    z = data.z(data.attack_subset(cfg["n_attack"]))
    preds = np.stack([res[k + ":p"] for k in cfg["attacks"]])
    worst = preds[np.abs(preds - z).argmax(0), np.arange(len(z))]
    return anchored_bound(z, worst, data.z(a), p_a, cfg["lam"], warn=False)


def bpda_eval(model, data: Data, cfg, idx, direction) -> dict:
    """Gradient-masking check under the rank-direction I-FGSM: the model evaluated with *hard* LBP, attacked
    (a) naively through the hard LBP (zero gradient in that branch), (b) with BPDA (hard forward, soft
    backward); the soft model attacked through soft LBP is `robust_eval`'s ``ifgsm``."""
    r, d, mos = data.ref[idx], data.dist[idx], data.mos[idx]
    eps, steps, old = cfg["eps_main"] / 255, cfg["attack_steps"], model.lbp
    res = {}
    try:
        for label, mode in (("naive_hard", "hard"), ("bpda", "bpda")):
            model.lbp = mode
            adv = attack_directed(lambda a, b: model(a, b, check=False), r, d, eps, steps, "ifgsm", direction,
                                  cfg["attack_batch"], alpha=_alpha(eps, steps))
            model.lbp = "hard"
            res[label] = srocc(predict(model, r, adv).numpy(), mos)
        model.lbp = "hard"
        res["hard_clean"] = srocc(predict(model, r, d).numpy(), mos)
        model.lbp = "soft"
        adv = attack_directed(lambda a, b: model(a, b, check=False), r, d, eps, steps, "ifgsm", direction,
                              cfg["attack_batch"], alpha=_alpha(eps, steps))
        res["soft_ifgsm"] = srocc(predict(model, r, adv).numpy(), mos)
    finally:
        model.lbp = old
    return res


def speed(cfg, models: dict | None = None, threads: int | None = None, side: int | None = None) -> dict:
    """Best forward time (s) on one ``side``^2 pair (default ``speed_side``), on the CPU, interleaved, on
    ``speed_threads`` torch threads (restored afterwards): BiRQA-small (the chapter's size, features included),
    BiRQA at the brief's size (C = 32, L = 4), the LPIPS-VGG16 architecture, a TOPIQ-like network (ResNet-50
    trunk + cross-scale attention; the paper's "previous SOTA" class) and ``models`` (name -> callable(ref, dist))."""
    from ..timing import interleaved_best
    from .model import LPIPSVGG16, TopIQLike

    threads = threads or cfg["speed_threads"]
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(0)
        s = side or cfg["speed_side"]
        ref = torch.rand(1, 3, s, s, generator=g)
        dist = (ref + 0.05 * torch.randn(ref.shape, generator=g)).clamp(0, 1)
        cpu = torch.device("cpu")
        ours = make_birqa(cfg, 0, device=cpu).eval()
        torch.manual_seed(0)
        brief = BiRQA(levels=4, channels=32, window=cfg["window"]).eval()
        vgg, topiq = LPIPSVGG16().eval(), TopIQLike().eval()
        with torch.no_grad():
            fns = {"BiRQA-small": lambda: ours(ref, dist), "BiRQA (C=32, L=4)": lambda: brief(ref, dist),
                   "LPIPS-VGG16 arch": lambda: vgg(ref, dist), "TOPIQ-like arch": lambda: topiq(ref, dist)}
            for name, fn in (models or {}).items():
                fns[name] = (lambda f: lambda: f(ref, dist))(fn)
            best = interleaved_best(fns, cfg["speed_rounds"])
    finally:
        torch.set_num_threads(old)
    return best
