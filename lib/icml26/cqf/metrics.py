"""Evaluation (brief §5.4): T1 fact-QA accuracy by 4-way LM scoring, losses on held-out sets and deciles.

T1 is the ARC-Easy analogue: for each test fact (a tail fact in no HQ set) the LM scores the four
single-token candidates (truth + 3 fixed distractors of the same relation) after the web's two fact
templates, ``q : e r ?`` (FAQ) and ``e r is`` (prose), summing the two log-probabilities; the argmax is the
answer (chance 25 %). Any LM with ``prob_next(contexts, ctx_len, words)`` can be scored.
"""
from __future__ import annotations

import numpy as np

from .world import SynthWeb


def t1_logprobs(lm, world: SynthWeb) -> np.ndarray:
    """(n_test_facts, 4) summed log-probabilities of the candidates under the two templates."""
    V = world.vocab
    e = V.entity0 + world.test_facts[:, 0]
    r = V.relation0 + world.test_facts[:, 1]
    n = len(e)
    cand = V.value_id(world.test_facts[:, 1][:, None], world.test_candidates)  # (n, 4)
    qa = np.stack([np.full(n, V.tok("q")), np.full(n, V.tok(":")), e, r, np.full(n, V.tok("?"))], axis=1)
    prose = np.stack([np.full(n, V.tok(".")), np.full(n, V.tok(".")), e, r, np.full(n, V.tok("is"))], axis=1)
    total = np.zeros((n, 4))
    for ctx, ctx_len in ((qa, 5), (prose, 3)):
        rows = np.repeat(ctx, 4, axis=0)
        p = np.asarray(lm.prob_next(rows, np.full(len(rows), ctx_len), cand.ravel()), dtype=float)
        if not np.all(np.isfinite(p)) or np.any(p <= 0):
            raise ValueError("T1: non-positive or NaN candidate probabilities")
        total += np.log(p).reshape(n, 4)
    return total


def t1_accuracy(lm, world: SynthWeb, decoy: bool = False) -> float:
    """Fraction of test facts whose true value gets the highest summed log-probability (chance 0.25).

    ``decoy=True`` scores against a wrong answer key (the next candidate instead of the truth): the
    negative control of the T1 claims, whose accuracy must not rise with filtering.
    """
    key = (world.test_truth + 1) % 4 if decoy else world.test_truth
    return float(np.mean(np.argmax(t1_logprobs(lm, world), axis=1) == key))


def decile_losses(lm, docs, scores: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Loss (nats/token) of each score decile of held-out HQ documents (Fig. 5), lowest decile first."""
    scores = np.asarray(scores, dtype=float)
    if len(scores) != len(docs):
        raise ValueError("one score per document")
    if not np.all(np.isfinite(scores)):
        raise ValueError("NaN scores")
    per_doc = lm.doc_losses(docs)
    edges = np.quantile(scores, np.linspace(0, 1, n_bins + 1))
    b = np.clip(np.searchsorted(edges, scores, side="right") - 1, 0, n_bins - 1)
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
