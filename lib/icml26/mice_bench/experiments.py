"""The chapter's experiment driver: build MICE-mini, freeze the evaluators, train the generators, score.

Order matters (pitfall "evaluator leakage"): the concept CNN and the PR/IAA/IQA calibration see oracle
renders only and are frozen before any generator is trained.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from . import evaluators as ev
from .cases import Case, creation_cases, editing_cases
from .concepts import DEFAULT, N_DIMS, check_space, reference_bank, render, render_batch
from .generators import baseline_outputs
from .pixel import PixelDecoderGenerator, generate_pixel, train_pixel
from .readout import ConceptReadoutGenerator, generate, head_accuracy, train_readout

BASELINES = ("oracle", "blend", "collage", "dominant", "random")


def random_configs(n: int, V: int, rng: np.random.Generator, k_max: int = N_DIMS) -> np.ndarray:
    """Random configurations: k ~ U{1..k_max} referenced dimensions (the rest default), random values and text."""
    cfg = np.full((n, N_DIMS + 2), DEFAULT)
    for i in range(n):
        k = int(rng.integers(1, k_max + 1))
        dims = rng.choice(N_DIMS, size=k, replace=False)
        cfg[i, dims] = rng.integers(0, V, size=k)
    cfg[:, N_DIMS:] = rng.integers(0, 2, size=(n, 2))
    return cfg


def config_case(cfg: np.ndarray) -> Case:
    dims = tuple(int(d) for d in np.flatnonzero(cfg[:N_DIMS] != DEFAULT))
    return Case({}, dims, tuple(int(cfg[d]) for d in dims), cfg.copy(), text=(int(cfg[-2]), int(cfg[-1])))


def edit_mask(src_img: np.ndarray, tgt_img: np.ndarray) -> np.ndarray:
    """The exact ground-truth edit region: pixels where source and target renders differ, dilated by the SSIM
    window radius (5 px), so that every SSIM window outside it sees unedited pixels only."""
    from scipy import ndimage

    m = np.abs(src_img - tgt_img).max(-1) > 1e-6
    return ndimage.binary_dilation(m, iterations=5) if m.any() else m


@dataclass
class EvalSet:
    """One seed's creation evaluation cases and their ground-truth renders. Each seed draws its own set (the
    same per-k counts, fresh sub-classes and text), so the spread of a per-seed value over seeds contains the
    sampling of the evaluation cases (review of 1ae09b8, finding 4: CC_7 rests on one combination, 14 cases
    at `full`), not only the generator's training seed. With ``cfg["judge_per_seed"]`` each set also has its own
    judge (``classifier``, trained with the seed's own initialisation and batch order on the same renders) and
    its coherence reference, so that the spread contains the judge's training variance too; otherwise these
    fields are None and the space's one judge reads every set."""

    seed: int
    create: list
    create_gt: np.ndarray
    classifier: object = None
    coherence_ref: float | None = None
    classifier_accuracy: float | None = None
    judge_val: tuple = ()
    judge_val_epochs: tuple = ()


def eval_case_seed(seed: int) -> int:
    """The case-generator seed of evaluation seed ``seed`` (seed 0 keeps the earlier revision's cases)."""
    return 202 + 1000 * int(seed)


@dataclass
class Space:
    size: int
    V: int
    bank: np.ndarray
    classifier: ev.ConceptClassifier
    calibration: ev.Calibration
    classifier_accuracy: float
    train_create: tuple
    train_edit: tuple
    create: list
    create_gt: np.ndarray
    edit: list
    edit_src: np.ndarray
    edit_gt: np.ndarray
    edit_masks: np.ndarray
    edit_local: np.ndarray
    extra: dict = field(default_factory=dict)
    evals: dict = field(default_factory=dict)

    def eval_set(self, seed: int) -> EvalSet:
        """The evaluation set of ``seed`` (`EvalSet`); seeds without their own set use the first one's."""
        if seed in self.evals:
            return self.evals[seed]
        return EvalSet(-1, self.create, self.create_gt)


def concept_keys(configs: np.ndarray) -> set[tuple[int, ...]]:
    """The concept part (the 7 dimensions, text attributes ignored) of configurations, as hashable keys: two
    configurations with the same key differ at most in tone / frame."""
    return {tuple(int(v) for v in c[:N_DIMS]) for c in np.asarray(configs)}


def overlap_share(train_configs: np.ndarray, eval_configs: np.ndarray) -> float:
    """Share of evaluation configurations whose concept part occurs in the training configurations (review D6)."""
    keys = concept_keys(train_configs)
    ev_ = np.asarray(eval_configs)
    return float(np.mean([tuple(int(v) for v in c[:N_DIMS]) in keys for c in ev_])) if len(ev_) else 0.0


def disjoint_configs(n: int, V: int, rng: np.random.Generator, exclude: set, k_max: int = N_DIMS) -> np.ndarray:
    """`random_configs` with every configuration whose concept part is in ``exclude`` redrawn: the training
    renders of the judge and the generators never show an evaluation case's concepts (issue 46, item 5)."""
    out = random_configs(n, V, rng, k_max)
    for _ in range(100):
        bad = np.array([tuple(int(v) for v in c[:N_DIMS]) in exclude for c in out])
        if not bad.any():
            return out
        out[bad] = random_configs(int(bad.sum()), V, rng, k_max)
    raise ValueError("could not draw training configurations disjoint from the evaluation cases")


def build_space(cfg, seed: int = 0, progress=None, eval_seeds=None) -> Space:
    """Render the banks, train and freeze the concept CNN, calibrate PR/IAA/IQA, make the eval cases.

    The evaluation cases are drawn first: one creation set per evaluation seed (``eval_seeds``, default
    ``cfg["seeds"]``; `EvalSet`, `eval_case_seed`) and one editing set. Every training configuration (the
    judge's renders and the generators' creation and editing cases) whose concept part equals an evaluation
    case's (creation target of any seed's set, editing source or target) is redrawn.
    ``extra["overlap_before"]``: the per-k share of the first set's creation cases that the training renders
    would have contained without the exclusion (the earlier revision's leak); ``extra["overlap_after"]``: the
    same after it over every set (0 by construction, measured).

    The judge is early-stopped on its own validation renders (``cfg["n_val"]``, disjoint from training, test
    and evaluation configurations; `evaluators.train_classifier`): ``extra["judge_val"]`` is its
    validation accuracy (twice per epoch, at ``extra["judge_val_epochs"]``), ``extra["judge_best_epoch"]`` the
    epoch of the check kept. ``cfg["judge_per_seed"]`` (optional, default False): one judge per evaluation seed
    (`EvalSet`)."""
    size, V = int(cfg["size"]), int(cfg["V"])
    check_space(size, V)
    eval_seeds = tuple(cfg["seeds"]) if eval_seeds is None else tuple(eval_seeds)
    if not eval_seeds:
        raise ValueError("at least one evaluation seed is needed")
    sets = {s: creation_cases(int(cfg["n_create"]), V, eval_case_seed(s) + seed) for s in eval_seeds}
    create = sets[eval_seeds[0]]
    edit = editing_cases(int(cfg["n_edit"]), V, seed + 303)
    all_create_cfg = np.stack([c.config for cs in sets.values() for c in cs])
    eval_cfg = np.concatenate([all_create_cfg, np.stack([c.config for c in edit] + [c.source for c in edit])])
    exclude = concept_keys(eval_cfg)
    rng = np.random.default_rng(seed)
    bank = reference_bank(size, V)
    naive = random_configs(int(cfg["n_renders"]), V, np.random.default_rng(seed))
    configs = disjoint_configs(int(cfg["n_renders"]), V, rng, exclude)
    create_cfg = np.stack([c.config for c in create])
    ks = np.array([c.k for c in create])
    overlap_before = {int(k): overlap_share(naive, create_cfg[ks == k]) for k in sorted(set(ks))}
    images = render_batch(configs, size)
    test_cfg = disjoint_configs(int(cfg["n_test"]), V, rng, exclude)
    test_img = render_batch(test_cfg, size)
    val_cfg = disjoint_configs(int(cfg["n_val"]), V, rng, exclude)
    val_img = render_batch(val_cfg, size)
    clf = ev.train_classifier(images, configs, V, epochs=int(cfg["clf_epochs"]), seed=seed, progress=progress,
                              val=(val_img, val_cfg))
    test_pred, test_coh = ev.judge_read(clf, test_img)
    acc, coh_ref = ev.accuracy(test_pred, test_cfg), float(np.median(test_coh))
    cal = ev.calibrate(test_img, seed=seed)
    # generator training data: the same oracle renders (targets), and editing pairs (none touching an eval case)
    train_create = ([config_case(c) for c in configs], images)
    tr_edit = [c for c in editing_cases(int(cfg["n_train_edit"]), V, seed + 101)
               if tuple(int(v) for v in c.config[:N_DIMS]) not in exclude
               and tuple(int(v) for v in c.source[:N_DIMS]) not in exclude]
    train_edit = (tr_edit, render_batch(np.stack([c.source for c in tr_edit]), size),
                  render_batch(np.stack([c.config for c in tr_edit]), size))
    train_all = np.stack([c.config for c in tr_edit] + [c.source for c in tr_edit] + list(configs) + list(val_cfg)
                         + list(test_cfg))
    all_ks = np.array([c.k for cs in sets.values() for c in cs])
    overlap_after = {int(k): overlap_share(train_all, all_create_cfg[all_ks == k]) for k in sorted(set(all_ks))}
    overlap_after["edit"] = overlap_share(train_all, np.stack([c.config for c in edit] + [c.source for c in edit]))
    evals = {s: EvalSet(s, cs, render_batch(np.stack([c.config for c in cs]), size)) for s, cs in sets.items()}
    first = evals[eval_seeds[0]]
    first.classifier, first.coherence_ref, first.classifier_accuracy = clf, coh_ref, acc
    first.judge_val, first.judge_val_epochs = tuple(clf.val_history), tuple(clf.val_epochs)
    if cfg.get("judge_per_seed", False):
        for s_ in eval_seeds[1:]:
            judge = ev.train_classifier(images, configs, V, epochs=int(cfg["clf_epochs"]), seed=seed + s_,
                                        progress=progress, val=(val_img, val_cfg))
            es = evals[s_]
            es.classifier = judge
            test_pred, test_coh = ev.judge_read(judge, test_img)
            es.coherence_ref = float(np.median(test_coh))
            es.classifier_accuracy = ev.accuracy(test_pred, test_cfg)
            es.judge_val, es.judge_val_epochs = tuple(judge.val_history), tuple(judge.val_epochs)
    create_gt = evals[eval_seeds[0]].create_gt
    edit_src = render_batch(np.stack([c.source for c in edit]), size)
    edit_gt = render_batch(np.stack([c.config for c in edit]), size)
    masks = np.stack([edit_mask(s_, t) for s_, t in zip(edit_src, edit_gt)])
    frac = masks.reshape(len(masks), -1).mean(1)
    local = np.array([not c.extra["global"] for c in edit]) & (frac > 0) & (frac < 1)
    return Space(size, V, bank, clf, cal, acc, train_create, train_edit, create, create_gt, edit, edit_src, edit_gt,
                 masks, local, extra={"test_cfg": test_cfg, "test_img": test_img, "overlap_before": overlap_before,
                                      "overlap_after": overlap_after, "coherence_ref": coh_ref,
                                      "judge_val": list(clf.val_history), "judge_val_epochs": list(clf.val_epochs),
                                      "judge_best_epoch": float(clf.best_epoch)},
                 evals=evals)


def injected_outputs(space, keep_prob: dict[int, float], seed: int, cases=None) -> np.ndarray:
    """Oracle renders of the creation cases with known degradation injected (the measurement-validity study,
    issue 46 item 6): each referenced concept of a k-reference case is kept independently with probability
    ``keep_prob[k]`` and otherwise reset to the neutral default. The expected CC of the outputs is
    10 x keep_prob[k] x (judge accuracy), so the pipeline (judge + official per-k averaging at the evaluation
    set's n_k) should recover the injected curve; a constant ``keep_prob`` injects no k-dependence at all.
    ``cases``: the evaluation cases (default ``space.create``; e.g. a seed's `EvalSet.create`)."""
    for k, p in keep_prob.items():
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"keep probability for k = {k} must be in [0, 1], got {p}")
    rng = np.random.default_rng(seed)
    out = []
    for c in (space.create if cases is None else cases):
        if c.k not in keep_prob:
            raise ValueError(f"no keep probability for k = {c.k}")
        cfg_i = c.config.copy()
        for d in c.dims:
            if rng.random() >= keep_prob[c.k]:
                cfg_i[d] = DEFAULT
        out.append(cfg_i)
    return render_batch(np.stack(out), space.size)


def ghosted_outputs(cases, size: int, V: int, n_uncertain, samples: int, seed: int) -> np.ndarray:
    """Oracle renders with known *ghosting* injected (the controls of the PR claim M2c): for each case, the
    output is the mean of ``samples`` renders of its configuration in which ``n_uncertain(k, rng)`` of its
    referenced dimensions (chosen at random) take an independent uniform sub-class in every render, as a
    generator unsure of those concepts outputs a blend of its candidates (`readout.generate`). The concepts
    and the render are otherwise exact, so only the amount of blending changes: with ``n_uncertain`` growing in
    k, PR must fall with k beyond the oracle (positive control); with a constant number, it must not (negative
    control: k-independent blending)."""
    from .readout import render_mean

    if samples < 2:
        raise ValueError(f"ghosting needs at least 2 samples per output, got {samples}")
    rng = np.random.default_rng(seed)
    rows = []
    for c in cases:
        u = int(n_uncertain(c.k, rng))
        if not 0 <= u <= c.k:
            raise ValueError(f"n_uncertain must lie in [0, k = {c.k}], got {u}")
        dims = rng.choice(np.asarray(c.dims), size=u, replace=False) if u else np.array([], int)
        row = np.repeat(c.config[None].copy(), samples, 0)
        for d in dims:
            row[:, d] = rng.integers(0, V, size=samples)
        rows.append(row)
    return render_mean(np.stack(rows), size)


def _judge(space: Space, eval_set: EvalSet | None = None):
    """(judge, its coherence reference) that reads ``eval_set``: the set's own, else the space's."""
    if eval_set is not None and eval_set.classifier is not None:
        return eval_set.classifier, eval_set.coherence_ref
    return space.classifier, space.extra["coherence_ref"]


def noref_pr(space: Space, outputs: np.ndarray, eval_set: EvalSet | None = None, parts=None,
             coherence: np.ndarray | None = None) -> np.ndarray:
    """The chapter's PR: `evaluators.pr_noref_scores` with the judge's entity-coherence check, referenced to its
    median on held-out oracle renders (``space.extra["coherence_ref"]``, or the set's own judge's)."""
    clf, ref = _judge(space, eval_set)
    coh = ev.judge_coherence(clf, outputs) if coherence is None else coherence
    return ev.pr_noref_scores(outputs, space.calibration, coh, ref, parts=parts)


def score_creation(space: Space, outputs: np.ndarray, eval_set: EvalSet | None = None, light: bool = False) -> pd.DataFrame:
    """Per-case creation scores on ``eval_set`` (default: the first seed's set), read by the set's judge when it
    has one (else the space's): CC, PF, PR (no-reference,
    `evaluators.pr_noref_scores`), PR_nojudge (the same without the judge's coherence term: ghosting and
    manifold only, so that a PR result can be read apart from the judge CC uses), the earlier full-reference PR
    and its parts (diagnostics), IAA, IQA, IS and the per-concept verdicts. ``light``: the columns the claims
    read only (CC, PF, PR, PR_nojudge, verdicts); the diagnostics and the perceptual analogues are NaN (the
    injected controls)."""
    es = eval_set if eval_set is not None else EvalSet(-1, space.create, space.create_gt)
    outputs = ev.check_images(outputs, space.size, "outputs")
    if len(outputs) != len(es.create):
        raise ValueError(f"{len(outputs)} outputs for {len(es.create)} evaluation cases")
    pred, coherence = ev.judge_read(_judge(space, es)[0], outputs)
    noref = ev.noref_parts(outputs, space.calibration)
    pr_noref = noref_pr(space, outputs, es, parts=noref, coherence=coherence)
    answers = ev.concept_answers(pred, es.create)
    nan = np.full(len(outputs), np.nan)
    if light:
        parts = {"artefact": nan, "ghosting": noref["ghosting"], "manifold": noref["manifold"]}
    else:
        parts = ev.pr_parts(outputs, es.create_gt, space.calibration, noref=noref)
    return pd.DataFrame({
        "case": np.arange(len(es.create)),
        "k": [c.k for c in es.create],
        "combination": [c.record["combination"] for c in es.create],
        "subclass": [str(c.values) for c in es.create],
        "CC": [ev.cc_official(a) for a in answers],
        "PF": ev.pf_scores(pred, es.create),
        "PR": pr_noref,
        "PR_nojudge": ev.pr_noref_scores(outputs, space.calibration, parts=noref),
        "PR_fullref": 10.0 * np.cbrt(parts["artefact"] * parts["ghosting"] * parts["manifold"]),
        "PR_artefact": parts["artefact"], "PR_ghosting": parts["ghosting"], "PR_manifold": parts["manifold"],
        "IAA": nan if light else ev.aesthetics_scores(outputs, space.calibration),
        "IQA": nan if light else ev.quality_scores(outputs, space.calibration),
        "IS": nan if light else ev.structure_scores(outputs, es.create_gt),
        "verdicts": [tuple(a == "yes" for a in ans) for ans in answers],
        "dims": [c.dims for c in es.create],
    })


def score_editing(space: Space, outputs: np.ndarray) -> pd.DataFrame:
    """Per-case editing scores: CC, IF, PR, NERC (local edits only; NaN for global ones), IAA, IQA."""
    outputs = ev.check_images(outputs, space.size, "outputs")
    pred, coherence = ev.judge_read(space.classifier, outputs)
    nerc = np.full(len(outputs), np.nan)
    loc = np.flatnonzero(space.edit_local)
    if len(loc):
        nerc[loc] = ev.nerc_scores(outputs[loc], space.edit_src[loc], space.edit_masks[loc])
    return pd.DataFrame({
        "case": np.arange(len(space.edit)),
        "category": [c.category for c in space.edit],
        "subtask": [f"{c.category}/{c.extra['subtask']}" for c in space.edit],
        "k": [c.k for c in space.edit],
        "CC": ev.cc_scores(pred, space.edit),
        "IF": ev.if_scores(pred, space.edit),
        "PR": noref_pr(space, outputs, coherence=coherence),
        "NERC": nerc,
        "IAA": ev.aesthetics_scores(outputs, space.calibration),
        "IQA": ev.quality_scores(outputs, space.calibration),
    })


def learned_specs(cfg) -> list[tuple[str, int, int]]:
    """(name, m, max_k) of the learned generators: one per capacity, plus the k <= 3 variant at the largest m."""
    specs = [(f"G{m}", int(m), N_DIMS) for m in cfg["capacities"]]
    if cfg["k3_variant"]:
        m = max(cfg["capacities"])
        specs.append((f"G{m}-k<=3", m, 3))
    return specs


def run_learned(space: Space, cfg, name: str, m: int, max_k: int, seed: int):
    """Train one concept-readout generator (one seed); returns (creation outputs on the seed's evaluation set
    `Space.eval_set`, editing outputs, losses, model, held-out head accuracy on the evaluation cases: creation
    and editing, see `readout.head_accuracy`)."""
    torch.manual_seed(1000 * seed + m + max_k)
    model = ConceptReadoutGenerator(space.size, m, space.V, width=int(cfg["width"]), hidden=int(cfg["hidden"]),
                                    aggregator=cfg["aggregator"])
    losses = train_readout(model, space.bank, space.train_create, space.train_edit, steps=int(cfg["steps"]),
                           batch=int(cfg["batch"]), lr=float(cfg["lr"]), seed=seed, max_k=max_k,
                           edit_fraction=float(cfg["edit_fraction"]))
    S = int(cfg["samples"])
    create = space.eval_set(seed).create
    out_c, q_c = generate(model, space.bank, create, samples=S, seed=seed, return_probs=True)
    out_e, q_e = generate(model, space.bank, space.edit, sources=space.edit_src, samples=S, seed=seed + 1,
                          return_probs=True)
    acc = {"create": head_accuracy(q_c, create, space.V), "edit": head_accuracy(q_e, space.edit, space.V)}
    return out_c, out_e, losses, model, acc


def run_pixel(space: Space, cfg, m: int, seed: int):
    """Train the pixel decoder (the negative result) with the readout generators' budget (steps, batch, lr);
    returns (creation outputs, losses)."""
    torch.manual_seed(1000 * seed + m)
    model = PixelDecoderGenerator(space.size, m, aggregator=cfg["aggregator"])
    losses = train_pixel(model, space.bank, space.train_create, space.train_edit, steps=int(cfg["pixel_steps"]),
                         batch=int(cfg["batch"]), lr=float(cfg["pixel_lr"]), seed=seed,
                         edit_fraction=float(cfg["edit_fraction"]))
    return generate_pixel(model, space.bank, space.create), losses


def run_baselines(space: Space, seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for name in BASELINES:
        c = baseline_outputs(name, space.bank, space.create, space.size, space.V, seed)
        if name == "oracle":
            e = space.edit_gt.copy()
        else:
            e = baseline_outputs(name, space.bank, space.edit, space.size, space.V, seed, sources=space.edit_src)
        out[name] = (c, e)
    return out
