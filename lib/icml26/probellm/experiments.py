"""The chapter's experiments, as functions of a preset: strategy comparison, metrics, induction, cleanliness."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import binom

from . import modes as md
from .space import Item, Space, features, render
from .targets import PlantedOracle
from .tree import SearchResult, search


def mode_counts(oracle: PlantedOracle, failures: Sequence[Item]) -> np.ndarray:
    """Distinct failures inside each planted mode (a failure in two modes counts for both)."""
    return oracle.membership(list(failures)).sum(0) if failures else np.zeros(len(oracle.modes), int)


def recall(oracle: PlantedOracle, result: SearchResult, upto: int, min_failures: int = 3) -> float:
    """Mode recall: the fraction of planted modes with >= ``min_failures`` distinct verified failures."""
    return float((mode_counts(oracle, result.failures(upto)) >= min_failures).mean())


def failure_yield(result: SearchResult, upto: int) -> float:
    """Distinct verified failures per budget unit."""
    return len(result.failures(upto)) / upto


def static_recall_closed_form(q: np.ndarray, B: int, min_failures: int = 3) -> float:
    """E[recall] of i.i.d. probing: mean over modes of P(Bin(B, q_m) >= min_failures)."""
    return float(np.mean(binom.sf(min_failures - 1, B, np.asarray(q))))


def static_recall_se(q: np.ndarray, B: int, repeats: int, min_failures: int = 3) -> float:
    """The standard error of a mean over ``repeats`` static runs that the closed form predicts (modes
    found independently: Var = sum_m P_m (1 - P_m) / M^2)."""
    P = binom.sf(min_failures - 1, B, np.asarray(q))
    return float(math.sqrt(np.sum(P * (1 - P)) / len(P) ** 2 / repeats))


def run_grid(space: Space, oracle: PlantedOracle, strategies, budget: int, seeds, cfg, progress=None, **kw):
    """{strategy: [SearchResult per seed]} at one budget (recall at smaller B is read off the prefix)."""
    out = {}
    jobs = [(s, seed) for s in strategies for seed in seeds]
    it = progress(jobs, desc="searches") if progress else jobs
    for s, seed in it:
        name = s if isinstance(s, str) else f"beta={s:.1f}"
        strat, beta = (s, None) if isinstance(s, str) else ("beta", float(s))
        out.setdefault(name, []).append(search(strat, space, oracle, budget, seed, cfg["C"], beta=beta,
                                               n_seeds=cfg["n_seeds_tree"], width=cfg["width"], **kw))
    return out


def oracle_embedding(oracle: PlantedOracle, fail: Sequence[Item], passing: Sequence[Item], lam: float, n_pca: int,
                     seed: int = 0, shuffle_psi: bool = False):
    """phi of the failures, plain embeddings of failures and passing probes (fitted jointly)."""
    items = list(fail) + list(passing)
    z = features(items)
    h = md.text_vectors([render(i) for i in items])
    plain = md.embed(z, h, None, n_pca=n_pca, seed=seed)
    psi = md.signature(fail, [oracle.answer(i) for i in fail])
    if shuffle_psi:
        psi = psi[np.random.default_rng(seed).permutation(len(psi))]
    nf = len(fail)
    phi = md.embed(z[:nf], h[:nf], psi, lam=lam, n_pca=n_pca, seed=seed)
    return phi, plain[:nf], plain[nf:]


def planted_labels(oracle: PlantedOracle, fail: Sequence[Item]) -> np.ndarray:
    """The planted mode of each failure in exactly one mode, -1 otherwise (background or overlaps)."""
    M = oracle.membership(list(fail))
    return np.where(M.sum(1) == 1, M.argmax(1), -1)


def ari_gain(oracle: PlantedOracle, fail, passing, cfg, seed: int):
    """ARI of HDBSCAN clusters vs planted modes, on failures in exactly one mode: (phi, plain, shuffled psi)."""
    from sklearn.metrics import adjusted_rand_score

    lab = planted_labels(oracle, fail)
    one = lab >= 0
    out = []
    for kind in ("phi", "plain", "shuffled"):
        phi, plain, _ = oracle_embedding(oracle, fail, passing, cfg["lam"], cfg["n_pca"], seed,
                                         shuffle_psi=kind == "shuffled")
        labels = md.cluster(plain if kind == "plain" else phi, cfg["min_cluster_size"])
        out.append(float(adjusted_rand_score(lab[one], labels[one])) if one.sum() >= 2 else 0.0)
    return tuple(out)


def induce_and_match(oracle: PlantedOracle, space: Space, result: SearchResult, cfg, z_fresh, M_fresh, seed: int,
                     upto: int | None = None):
    """Boundary-aware induction on one run's failures with active probing charged to the run's reserve.

    The search part is the first ``B - reserve`` budget units; the reserve buys active probes (micro
    moves of each cluster's members) that join the passing pool. Returns a dict: matched planted modes
    (precision >= 0.8 and recall >= 0.6 against a mode on fresh items), mean best-mode precision of the
    boundary-aware and failures-only rules, the rules, and the active probes used.
    """
    B = result.budget if upto is None else upto
    reserve = int(round(cfg["reserve_frac"] * B))
    part = [p for p in result.probes if p.step < B - reserve]
    fail = [p.item for p in part if p.genuine]
    passing = [p.item for p in part if not p.failed]
    out = dict(matched=set(), matched_single=set(), prec_boundary=[], prec_failonly=[], rules=[], active=0,
               n_fail=len(fail))
    if len(fail) < cfg["min_cluster_size"]:
        return out
    phi, _, _ = oracle_embedding(oracle, fail, passing, cfg["lam"], cfg["n_pca"], seed)
    labels = md.cluster(phi, cfg["min_cluster_size"])
    rng = np.random.default_rng([seed, 11])
    seen = {p.item for p in result.probes}
    clusters = sorted(set(labels.tolist()) - {-1})
    per = reserve // max(1, len(clusters))
    for c in clusters:  # active probing: micro moves of cluster members, charged to the reserve
        members = [fail[i] for i in np.flatnonzero(labels == c)]
        for _ in range(per):
            new, _m = space.perturb(members[rng.integers(len(members))], rng)
            out["active"] += 1
            if new in seen:
                continue
            seen.add(new)
            if not oracle.query([new])[0]:
                passing.append(new)
    out.update(_rules_vs_modes(oracle, fail, passing, labels, cfg, z_fresh, M_fresh, seed))
    return out


def induce_landscape(oracle: PlantedOracle, fail, passing, cfg, z_fresh, M_fresh, seed: int):
    """Cluster a failure landscape in phi and induce both kinds of rules (no search, no active probing)."""
    out = dict(matched=set(), matched_single=set(), prec_boundary=[], prec_failonly=[], rules=[], n_fail=len(fail))
    if len(fail) < cfg["min_cluster_size"]:
        return out
    phi, _, _ = oracle_embedding(oracle, fail, passing, cfg["lam"], cfg["n_pca"], seed)
    labels = md.cluster(phi, cfg["min_cluster_size"])
    out.update(_rules_vs_modes(oracle, list(fail), list(passing), labels, cfg, z_fresh, M_fresh, seed))
    return out


def _rules_vs_modes(oracle, fail, passing, labels, cfg, z_fresh, M_fresh, seed):
    out = dict(matched=set(), matched_single=set(), prec_boundary=[], prec_failonly=[], rules=[])
    masks: dict[int, list] = {}
    items = fail + passing
    plain = md.embed(features(items), md.text_vectors([render(i) for i in items]), None, n_pca=cfg["n_pca"], seed=seed)
    rules = md.induce(fail, plain[:len(fail)], labels, passing, plain[len(fail):], cfg["n_neighbours"], seed)
    for c, rb, rf, n in rules:
        pb = [md.rule_vs_mode(rb, z_fresh, M_fresh[:, j]) for j in range(M_fresh.shape[1])]
        pf = [md.rule_vs_mode(rf, z_fresh, M_fresh[:, j]) for j in range(M_fresh.shape[1])]
        out["prec_boundary"].append(max(p for p, _ in pb))
        out["prec_failonly"].append(max(p for p, _ in pf))
        best = int(np.argmax([p for p, _ in pb]))
        out["rules"].append(dict(cluster=c, n=n, rule=rb.text(), failures_only=rf.text(), mode=oracle.modes[best].name,
                                 precision=pb[best][0], recall=pb[best][1], precision_failonly=max(p for p, _ in pf)))
        out["matched_single"] |= {j for j, (p, r) in enumerate(pb) if p >= 0.8 and r >= 0.6}
        if pb[best][0] >= 0.5:  # a rule is assigned to the mode that holds the majority of its items
            masks.setdefault(best, []).append(rb.mask(z_fresh))
    # a planted mode is matched when the union of the rules assigned to it (the mode holding most of a rule's
    # items) has precision
    # >= 0.8 and recall >= 0.6: HDBSCAN often splits a mode by template or form, which is finer, not wrong
    for j, ms in masks.items():
        union = np.any(ms, axis=0)
        inter = float((union & M_fresh[:, j]).sum())
        if inter / max(union.sum(), 1) >= 0.8 and inter / max(M_fresh[:, j].sum(), 1) >= 0.6:
            out["matched"].add(j)
    return out


def false_failure_fraction(result: SearchResult) -> tuple[float, float]:
    """(fraction of reported failures that are not real, pass rate a of the probes)."""
    rep = [p for p in result.probes if p.failed]
    false = sum(not p.genuine for p in rep)
    a = float(np.mean([not p.genuine for p in result.probes]))
    return (false / len(rep) if rep else 0.0), a


def false_fraction_formula(a: float, eta: float) -> float:
    """Expected false-failure fraction a eta / (a eta + (1 - a)) (a noisy label never equals a wrong answer)."""
    return a * eta / (a * eta + (1 - a))


def strata_meeting(space: Space, oracle: PlantedOracle, n: int = 20000, seed: int = 0) -> dict:
    """How many macro strata contain items of each planted mode (leakage check: strata are coarser)."""
    rng = np.random.default_rng(seed)
    out = {}
    for m in oracle.modes:
        hit = set()
        for s in space.strata:
            for _ in range(max(1, n // len(space.strata))):
                it = space.sample(rng, s)
                if m.predicate(it.op, it.a, it.b, it.form, it.template):
                    hit.add(s)
                    break
        out[m.name] = len(hit)
    return out


def pull_bound(delta: float, T: int) -> float:
    """Auer et al. (2002), Thm 1: E[n_i(T)] <= 8 ln T / Delta^2 + 1 + pi^2 / 3."""
    return 8 * math.log(T) / delta**2 + 1 + math.pi**2 / 3
