"""`NGramLM`: an interpolated absolute-discounting n-gram language model, vectorised (brief §5.6).

    P(w | c) = max(N(c, w) - D, 0) / N(c) + D n_+(c) / N(c) * P(w | c[1:])     (c seen)
    P(w | c) = P(w | c[1:])                                                    (c unseen)

down to the unigram base, ``base="uniform"`` (absolute discounting once more, onto the uniform
distribution over the closed vocabulary: every token has a positive probability) or ``base="mle"``
(the unigram relative frequency, as ``nltk.lm.AbsoluteDiscountingInterpolated``, which it equals).

The counting model is close to an infinite-capacity density estimator (ERM) on its n-gram features:
its HQ loss follows the KL mechanism of Eq. 4.1 / §3.2 without optimisation effects, and it is the
control of the data-conditioning experiment (§7), where it should *not* show a clean-to-dirty order.
n-grams are int64 keys (sum of ``tok * V**j``), counted with `np.unique`, looked up with
`np.searchsorted`: no Python loop over tokens.
"""
from __future__ import annotations

import numpy as np

from .features import check_tokens
from .world import Docs


class NGramLM:
    def __init__(self, vocab_size: int, order: int = 4, discount: float = 0.75, base: str = "uniform"):
        if not isinstance(order, (int, np.integer)) or order < 1:
            raise ValueError(f"n-gram order must be an integer >= 1, got {order!r}")
        if not (0.0 <= float(discount) <= 1.0) or np.isnan(discount):
            raise ValueError(f"discount must lie in [0, 1], got {discount!r}")
        if base not in ("uniform", "mle"):
            raise ValueError(f"base must be 'uniform' or 'mle', got {base!r}")
        if vocab_size < 1 or float(vocab_size) ** order >= 2.0**62:
            raise ValueError(f"vocab_size**order must fit int64 keys, got V={vocab_size}, order={order}")
        self.V, self.order, self.D, self.base = int(vocab_size), int(order), float(discount), base
        self.n_train_tokens = 0

    # ------------------------------------------------------------------------------------------ counting
    def _keys(self, docs: Docs, n: int):
        """(positions, keys) of every n-gram inside a document, ending at each position."""
        t = docs.tokens.astype(np.int64)
        pos_in_doc = np.arange(len(t)) - np.repeat(docs.offsets[:-1], docs.lengths)
        end = np.flatnonzero(pos_in_doc >= n - 1)
        key = np.zeros(len(end), dtype=np.int64)
        for j in range(n):
            key = key * self.V + t[end - (n - 1) + j]
        return end, key

    def fit(self, docs: Docs) -> "NGramLM":
        """Count every n-gram (orders 1..order) inside the documents (none spans two documents)."""
        check_tokens(docs, self.V)
        if docs.n_tokens == 0:
            raise ValueError("NGramLM.fit: no training tokens")
        self.n_train_tokens = docs.n_tokens
        self.unigram = np.bincount(docs.tokens, minlength=self.V).astype(np.float64)
        self.tables = {}
        for n in range(2, self.order + 1):
            _, key = self._keys(docs, n)
            keys, counts = np.unique(key, return_counts=True)
            ctx = keys // self.V
            starts = np.flatnonzero(np.concatenate([[True], ctx[1:] != ctx[:-1]])) if len(ctx) else np.zeros(0, int)
            ctx_keys = ctx[starts]
            N = np.add.reduceat(counts, starts).astype(np.float64) if len(ctx) else np.zeros(0)
            nplus = np.diff(np.concatenate([starts, [len(keys)]])).astype(np.float64)
            self.tables[n] = (keys, counts.astype(np.float64), ctx_keys, N, nplus)
        return self

    def unigram_probs(self) -> np.ndarray:
        N = self.unigram.sum()
        if self.base == "mle":
            return self.unigram / N
        nplus = float((self.unigram > 0).sum())
        return np.maximum(self.unigram - self.D, 0.0) / N + self.D * nplus / N / self.V

    # ------------------------------------------------------------------------------------------- scoring
    def prob_next(self, contexts: np.ndarray, ctx_len: np.ndarray, words: np.ndarray) -> np.ndarray:
        """P(word | the last ``ctx_len`` tokens of each row of ``contexts``), vectorised over rows.

        ``contexts``: (n, m) token ids, right-aligned (the token just before the word is the last column).
        """
        if not hasattr(self, "tables"):
            raise ValueError("NGramLM: fit() before scoring")
        contexts = np.asarray(contexts, dtype=np.int64)
        words = np.asarray(words, dtype=np.int64)
        ctx_len = np.minimum(np.asarray(ctx_len, dtype=np.int64), self.order - 1)
        for a in (contexts, words):
            if a.size and (a.min() < 0 or a.max() >= self.V):
                raise ValueError(f"token ids outside the vocabulary [0, {self.V})")
        p = self.unigram_probs()[words]
        m = contexts.shape[1] if contexts.ndim == 2 else 0
        for l in range(1, min(self.order - 1, m) + 1):
            rows = np.flatnonzero(ctx_len >= l)
            if len(rows) == 0:
                break
            ctx = np.zeros(len(rows), dtype=np.int64)
            for j in range(l):
                ctx = ctx * self.V + contexts[rows, m - l + j]
            keys, counts, ctx_keys, N, nplus = self.tables[l + 1]
            if len(ctx_keys) == 0:
                continue
            ic = np.minimum(np.searchsorted(ctx_keys, ctx), len(ctx_keys) - 1)
            seen = ctx_keys[ic] == ctx
            rows, ic, ctx = rows[seen], ic[seen], ctx[seen]
            full = ctx * self.V + words[rows]
            ik = np.minimum(np.searchsorted(keys, full), len(keys) - 1)
            c = np.where(keys[ik] == full, counts[ik], 0.0)
            p[rows] = np.maximum(c - self.D, 0.0) / N[ic] + self.D * nplus[ic] / N[ic] * p[rows]
        return p

    def token_logprobs(self, docs: Docs) -> np.ndarray:
        """log P(token | its in-document context) in nats, for every token of ``docs``."""
        check_tokens(docs, self.V)
        t = docs.tokens.astype(np.int64)
        m = self.order - 1
        pos_in_doc = np.arange(len(t)) - np.repeat(docs.offsets[:-1], docs.lengths)
        if m:
            idx = np.arange(len(t))[:, None] - np.arange(m, 0, -1)[None, :]
            ctx = t[np.maximum(idx, 0)]
        else:
            ctx = np.zeros((len(t), 0), dtype=np.int64)
        p = self.prob_next(ctx, np.minimum(pos_in_doc, m), t)
        with np.errstate(divide="ignore"):
            return np.log(p)

    def loss(self, docs: Docs) -> float:
        """Mean negative log-likelihood in nats per token on ``docs`` (a ValueError, never a NaN)."""
        if docs.n_tokens == 0:
            raise ValueError("NGramLM.loss: no evaluation tokens")
        lp = self.token_logprobs(docs)
        if not np.all(np.isfinite(lp)):
            raise ValueError("NGramLM.loss: a token has probability 0 (base='mle' and an unseen token, or discount 0)")
        return float(-lp.mean())

    def doc_losses(self, docs: Docs) -> np.ndarray:
        """Mean nats per token of each document."""
        lp = self.token_logprobs(docs)
        return -np.add.reduceat(lp, docs.offsets[:-1]) / np.maximum(docs.lengths, 1)
