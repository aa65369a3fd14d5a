"""Evaluation (brief §5.4): T1 fact-QA accuracy by 4-way LM scoring, losses on held-out sets and deciles.

T1 is the ARC-Easy analogue: for each test fact (a tail fact in no HQ set) the LM scores the four
single-token candidates (truth + 3 fixed distractors of the same relation) after the **QA prompt**
``q : e r ?`` (the brief's §5.4 definition, the format of the task); the argmax is the answer (chance 25 %).
The prose template ``e r is`` is a second task (``template="prose"``), reported on its own: adding the two
templates' log-probabilities (``template="sum"``, the chapter's first version) lets the prose term, which
backs off to the head entities' values when a selection holds no tail-entity prose, swamp the QA answer
(the review's probe; kept only as a diagnostic). Any LM with ``prob_next(contexts, ctx_len, words)`` can
be scored.
"""
from __future__ import annotations

import numpy as np

from .world import Docs, SynthWeb, Vocab

TEMPLATES = ("qa", "prose", "sum")


def format_invariant(docs: Docs, vocab: Vocab) -> Docs:
    """The training text of a *format-invariant reader*: every fact sentence ``e r is v`` rewritten as the QA
    line ``q : e r ? v`` (misinformation ``e r is v' <spam>`` too), everything else unchanged.

    A 4-gram keys a fact's value on the three tokens before it, so a fact stated in prose never reaches the
    QA prompt (PC-T1p); an LM that has learned to transfer knowledge between surface forms would. The same
    4-gram trained on this text is that reader, idealised: it pools every statement of (e, r) whatever its
    format, and reads wrong statements as readily as right ones. Used for the chapter's C3q-r only."""
    t = docs.tokens.astype(np.int64)
    n = len(t)
    if n == 0:
        return docs
    is_e = (t >= vocab.entity0) & (t < vocab.entity0 + vocab.n_entities)
    is_r = (t >= vocab.relation0) & (t < vocab.relation0 + vocab.n_relations)
    doc = docs.doc_of_token
    hit = np.zeros(n, dtype=bool)
    hit[:-2] = is_e[:-2] & is_r[1:-1] & (t[2:] == vocab.tok("is")) & (doc[:-2] == doc[2:])
    idx = np.flatnonzero(hit)
    t = t.copy()
    t[idx + 2] = vocab.tok("?")
    rep = np.ones(n, dtype=np.int64)
    rep[idx] = 3  # 'q' ':' inserted before the entity
    pos = np.cumsum(rep) - 1  # new position of every original token
    out = np.empty(int(rep.sum()), dtype=np.int64)
    out[pos] = t
    out[pos[idx] - 2], out[pos[idx] - 1] = vocab.tok("q"), vocab.tok(":")
    lengths = np.bincount(doc, weights=rep, minlength=len(docs)).astype(np.int64)
    return Docs(out, np.concatenate([[0], np.cumsum(lengths)]), docs.genre.copy(), docs.ids.copy())


def t1_logprobs(lm, world: SynthWeb, template: str = "qa") -> np.ndarray:
    """(n_test_facts, 4) log-probabilities of the candidates after the QA prompt (``"qa"``), the prose
    template (``"prose"``) or the sum of both (``"sum"``, diagnostic)."""
    if template not in TEMPLATES:
        raise ValueError(f"template must be one of {TEMPLATES}, got {template!r}")
    V = world.vocab
    e = V.entity0 + world.test_facts[:, 0]
    r = V.relation0 + world.test_facts[:, 1]
    n = len(e)
    cand = V.value_id(world.test_facts[:, 1][:, None], world.test_candidates)  # (n, 4)
    qa = np.stack([np.full(n, V.tok("q")), np.full(n, V.tok(":")), e, r, np.full(n, V.tok("?"))], axis=1)
    prose = np.stack([np.full(n, V.tok(".")), np.full(n, V.tok(".")), e, r, np.full(n, V.tok("is"))], axis=1)
    use = {"qa": ((qa, 5),), "prose": ((prose, 3),), "sum": ((qa, 5), (prose, 3))}[template]
    total = np.zeros((n, 4))
    for ctx, ctx_len in use:
        rows = np.repeat(ctx, 4, axis=0)
        p = np.asarray(lm.prob_next(rows, np.full(len(rows), ctx_len), cand.ravel()), dtype=float)
        if not np.all(np.isfinite(p)) or np.any(p <= 0):
            raise ValueError("T1: non-positive or NaN candidate probabilities")
        total += np.log(p).reshape(n, 4)
    return total


def t1_correct(lm, world: SynthWeb, template: str = "qa") -> np.ndarray:
    """Per test fact: whether the true value's candidate gets the highest log-probability (ties: the first)."""
    return np.argmax(t1_logprobs(lm, world, template), axis=1) == world.test_truth


def t1_accuracy(lm, world: SynthWeb, template: str = "qa") -> float:
    """Fraction of test facts whose true value gets the highest log-probability (chance 0.25)."""
    return float(np.mean(t1_correct(lm, world, template)))


def decile_losses(lm, docs, scores: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Loss (nats/token) of each score decile of held-out HQ documents (Fig. 5), lowest decile first.

    Deciles are equal-count bins of the score ranks (ties broken by position), so no bin is ever empty."""
    scores = np.asarray(scores, dtype=float)
    if len(scores) != len(docs):
        raise ValueError("one score per document")
    if not np.all(np.isfinite(scores)):
        raise ValueError("NaN scores")
    if len(scores) < n_bins:
        raise ValueError(f"need at least {n_bins} documents for {n_bins} bins, got {len(scores)}")
    per_doc = lm.doc_losses(docs)
    rank = np.empty(len(scores), dtype=np.int64)
    rank[np.argsort(scores, kind="stable")] = np.arange(len(scores))
    b = rank * n_bins // len(scores)
    w = docs.lengths.astype(float)
    return np.array([np.sum(per_doc[b == j] * w[b == j]) / np.sum(w[b == j]) for j in range(n_bins)])


def conditioning_fraction(L: np.ndarray) -> float:
    """Fraction of negative entries of L(k, k') - L(k', k') above the diagonal (train cleaner than test,
    ks sorted from clean to dirty): the share of clean-to-dirty pairs where cleaner training wins (§7)."""
    L = np.asarray(L, dtype=float)
    if L.ndim != 2 or L.shape[0] != L.shape[1]:
        raise ValueError("L must be a square matrix")
    if not np.all(np.isfinite(L)):
        raise ValueError("L has NaN entries")
    D = L - np.diag(L)[None, :]
    iu = np.triu_indices(len(L), 1)
    return float(np.mean(D[iu] < 0))
