"""Failure-mode consolidation: failure-aware embeddings, clustering, boundary-aware rule induction.

Failure-aware embedding ([A]; the exact form is ours, the paper's is not public):
``phi(x) = [z(x) || PCA_16(h(x)) || lambda psi(x)]`` with z the interpretable item features
(`space.features`), h a representation of the probe (the model's hidden state for SmolLM2; a character
n-gram vector of the prompt for the rule-based oracle, which has none) and psi the failure signature
(sign and log-size of the error, whether the answer echoes an operand or misses by a power of ten),
lambda = 2. The *plain* embedding drops psi. Failures are clustered with `sklearn.cluster.HDBSCAN`
(no planted labels used). Boundary-aware induction: for each cluster, its ``n_neighbours`` nearest
*passing* probes in [z || h] space are the contrast class; a depth-3 `DecisionTreeClassifier` on z
separates them and its purest positive leaf, read as a conjunction and prefixed with the categorical context
all the cluster's failures share (`shared_context`: operation, form, template, operand lengths, which the local
contrast cannot see because the neighbours share it too), is the mode's rule. The
failures-only baseline describes a cluster by what its failures share (the bounding box of z).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .space import FEATURES, features, options, truth_value

PSI = ("sign", "log_err", "echo_operand", "power_of_ten", "closed_form")


def signature(items, answers) -> np.ndarray:
    """psi: how each answer is wrong (zeros for a correct answer)."""
    rows = []
    for it, ans in zip(items, answers):
        t = truth_value(it)
        if it.form == "free_text":
            y = int(ans)
        elif it.form == "multiple_choice":
            y = options(it)[int(ans)]
        else:
            y = t  # a true/false verdict carries no value: only "closed_form" marks it
        err = y - t
        rows.append([np.sign(err), np.log10(1 + abs(err)), float(y in (it.a, it.b) and y != t),
                     float(err != 0 and abs(err) in (10, 100, 1000)), float(it.form != "free_text")])
    return np.asarray(rows, dtype=float).reshape(len(rows), len(PSI))


def text_vectors(texts, n_features: int = 256) -> np.ndarray:
    """Character 1-3-gram counts of the prompts (`sklearn.feature_extraction.text.HashingVectorizer`)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    hv = HashingVectorizer(analyzer="char", ngram_range=(1, 3), n_features=n_features, alternate_sign=False,
                           norm="l2")
    return hv.transform(list(texts)).toarray()


def _standardise(x: np.ndarray) -> np.ndarray:
    sd = x.std(0)
    return (x - x.mean(0)) / np.where(sd > 0, sd, 1.0)


def embed(z: np.ndarray, h: np.ndarray, psi: np.ndarray | None, lam: float = 2.0, n_pca: int = 16,
          seed: int = 0) -> np.ndarray:
    """[std(z) || std(PCA(h)) || lam * std(psi)] (psi None: the plain embedding)."""
    from sklearn.decomposition import PCA

    if lam < 0:
        raise ValueError(f"lambda must be >= 0, got {lam}")
    z, h = np.asarray(z, float), np.asarray(h, float)
    if z.ndim != 2 or h.ndim != 2 or len(z) != len(h):
        raise ValueError(f"z and h must be 2-d with one row per probe, got {z.shape} and {h.shape}")
    if not (np.isfinite(z).all() and np.isfinite(h).all()):
        raise ValueError("z and h must be finite")
    k = max(1, min(n_pca, h.shape[1], len(h) - 1))
    hp = PCA(n_components=k, random_state=seed).fit_transform(h) if len(h) > 2 else h[:, :k]
    parts = [_standardise(z), _standardise(hp)]
    if psi is not None:
        parts.append(lam * _standardise(np.asarray(psi, float)))
    return np.hstack(parts)


def cluster(phi: np.ndarray, min_cluster_size: int = 5) -> np.ndarray:
    """HDBSCAN labels (-1 = noise); fewer than ``min_cluster_size`` points: all noise."""
    from sklearn.cluster import HDBSCAN

    if len(phi) < max(2, min_cluster_size):
        return np.full(len(phi), -1)
    return HDBSCAN(min_cluster_size=min_cluster_size, copy=True).fit_predict(phi)


@dataclass
class Rule:
    """A conjunction of thresholds on `FEATURES`: [(feature, '<=' | '>', threshold), ...]."""

    terms: list

    def mask(self, z: np.ndarray) -> np.ndarray:
        m = np.ones(len(z), dtype=bool)
        for f, op, thr in self.terms:
            col = z[:, FEATURES.index(f)]
            m &= (col <= thr) if op == "<=" else (col > thr)
        return m

    def text(self) -> str:
        """Readable: per feature, an equality for an integer interval of width 1, else the tightest bounds."""
        parts = []
        for f in dict.fromkeys(t[0] for t in self.terms):
            lo = max([thr for g, op, thr in self.terms if g == f and op == ">"], default=-np.inf)
            hi = min([thr for g, op, thr in self.terms if g == f and op == "<="], default=np.inf)
            if np.isfinite(lo) and np.isfinite(hi) and np.floor(hi) == hi and hi - lo == 0.5:
                parts.append(f"{f} = {hi:g}")
            else:
                parts += ([f"{f} > {lo:g}"] if np.isfinite(lo) else []) + ([f"{f} <= {hi:g}"] if np.isfinite(hi) else [])
        return " AND ".join(parts) or "(everything)"


def tree_rule(z_pos: np.ndarray, z_neg: np.ndarray, depth: int = 3, seed: int = 0) -> Rule:
    """Boundary-aware rule: a depth-``depth`` tree separating failures (1) from passing neighbours (0); the
    positive leaf with the most failures among the purest ones, read as a conjunction."""
    from sklearn.tree import DecisionTreeClassifier

    X = np.vstack([z_pos, z_neg])
    y = np.r_[np.ones(len(z_pos)), np.zeros(len(z_neg))]
    clf = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y)
    t = clf.tree_
    best, best_key = None, None
    stack = [(0, [])]
    while stack:
        node, terms = stack.pop()
        if t.children_left[node] == -1:
            counts = t.value[node][0] * t.weighted_n_node_samples[node]
            pos = counts[1] if len(counts) > 1 else 0.0
            key = (pos / max(counts.sum(), 1e-9), pos)
            if pos > 0 and (best_key is None or key > best_key):
                best, best_key = terms, key
            continue
        f, thr = FEATURES[t.feature[node]], float(t.threshold[node])
        stack.append((t.children_left[node], terms + [(f, "<=", thr)]))
        stack.append((t.children_right[node], terms + [(f, ">", thr)]))
    return Rule(best or [])


CONTEXT = ("op_add", "op_sub", "op_mul", "op_cmp", "form_free", "form_mc", "form_tf", "template", "len_a", "len_b")


def shared_context(z_pos: np.ndarray) -> list:
    """The categorical context every failure of a cluster shares (operation, form, template, operand
    lengths), as equality terms: the part of a mode's description that a local contrast with same-context
    neighbours cannot see."""
    terms = []
    for f in CONTEXT:
        col = z_pos[:, FEATURES.index(f)]
        if np.all(col == col[0]):
            terms += [(f, ">", float(col[0]) - 0.5), (f, "<=", float(col[0]))]
    return terms


def box_rule(z_pos: np.ndarray) -> Rule:
    """Failures-only rule: the bounding box of the failures on every feature (all 19 terms, also on the features
    whose range the failures span fully: those terms select nothing away but are printed by `Rule.text`), each
    lower bound at ``lo - 0.5`` (a half-step below the smallest value: on an integer feature the box itself; on
    ``log_answer``, a log10, a lower end about 3x below the smallest answer, so not quite the box). It does *not* have the lower recall: the boundary-aware rule of `induce` is
    this box's categorical part (`shared_context`) plus the purest leaf of a depth-3 tree, so it is nearly a
    subset of the box and its recall is measured lower (claims P4, P4f; the chapter's table)."""
    terms = []
    for j, f in enumerate(FEATURES):
        lo, hi = z_pos[:, j].min(), z_pos[:, j].max()
        terms += [(f, ">", lo - 0.5), (f, "<=", hi)]
    return Rule(terms)


def induce(fail_items, fail_phi_plain, fail_labels, pass_items, pass_phi_plain, n_neighbours: int = 10,
           seed: int = 0, tree_only: bool = False):
    """Rules for every cluster: ``[(cluster, boundary Rule, failures-only Rule, n_failures), ...]``; with
    ``tree_only``, a fifth element: the contrastive tree rule alone, without the shared-context prefix (the
    ablation that tells the boundary-aware rule apart from the box whose categorical part it shares)."""
    from sklearn.neighbors import NearestNeighbors

    zf, zp = features(fail_items), features(pass_items)
    out = []
    if len(pass_items) == 0:
        return out
    nn = NearestNeighbors(n_neighbors=min(n_neighbours, len(pass_items))).fit(pass_phi_plain)
    for c in sorted(set(int(l) for l in fail_labels) - {-1}):
        members = np.flatnonzero(np.asarray(fail_labels) == c)
        _, idx = nn.kneighbors(fail_phi_plain[members])
        neighbours = np.unique(idx.ravel())
        local = tree_rule(zf[members], zp[neighbours], seed=seed)
        boundary = Rule(shared_context(zf[members]) + local.terms)
        out.append((c, boundary, box_rule(zf[members]), len(members)) + ((local,) if tree_only else ()))
    return out


def rule_vs_mode(rule: Rule, z_fresh: np.ndarray, in_mode: np.ndarray) -> tuple[float, float]:
    """(precision, recall) of a rule against one planted mode on fresh items."""
    m = rule.mask(z_fresh)
    inter = float((m & in_mode).sum())
    return inter / max(m.sum(), 1), inter / max(in_mode.sum(), 1)
