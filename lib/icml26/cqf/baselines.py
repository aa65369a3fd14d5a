"""Importance-sampling baselines of §5 / Fig. 7: DSIR-like and CRISP-like resampling of the web.

Both aim at samples distributed like the HQ set (importance sampling), where CQF keeps the documents
with the largest likelihood ratio. They draw from a fixed pool of fresh web documents (the same number
of generated tokens as CQF at ``k_pool``), without repetition.

* DSIR-like (Xie et al. 2023): hashed unigram+bigram multinomials p_HQ, p_LQ; log-weight of a document
  = counts . (log(p_HQ + 1e-8) - log(p_LQ + 1e-8)) (as `data_selection.HashedNgramDSIR`); documents
  resampled without replacement by the Gumbel-top-k trick until the budget is filled.
* CRISP-like (Grangier et al. 2024): k-means (C = 32; the paper uses 4,096 / 260k) on the classifier's
  features; the pool is resampled so that its cluster histogram (in tokens) matches the HQ set's.

Fidelity to the two definitions is measured on every resample: CRISP's ``tv_`` is the total variation
between the kept tokens' cluster histogram and the HQ histogram (0 when the resample is the clustered
importance sample p(c) = p_HQ(c), uniform within a cluster); DSIR's ``ess_`` is the Kish effective sample
size of the pool's importance weights, (sum w)^2 / sum w^2, beside ``n_drawn_``, the documents drawn. An
importance resample without replacement approximates the target only when ``ess_`` is at least
``n_drawn_``; far below it, Gumbel top-k returns the top of the weights (a likelihood-ratio filter).
"""
from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

from .features import ngram_counts
from .world import Docs, Vocab

DSIR_SMOOTH = 1e-8


class DSIRLike:
    def __init__(self, vocab: Vocab, n_buckets: int = 10000, mode: str = "murmur"):
        self.vocab, self.n_buckets, self.mode = vocab, n_buckets, mode

    def fit(self, hq: Docs, lq: Docs) -> "DSIRLike":
        if len(hq) == 0 or len(lq) == 0:
            raise ValueError("DSIR needs HQ (target) and LQ (raw) documents")
        t = np.asarray(ngram_counts(hq, self.vocab, self.n_buckets, self.mode).sum(axis=0)).ravel()
        r = np.asarray(ngram_counts(lq, self.vocab, self.n_buckets, self.mode).sum(axis=0)).ravel()
        self.log_diff = np.log(t / t.sum() + DSIR_SMOOTH) - np.log(r / r.sum() + DSIR_SMOOTH)
        return self

    def log_weights(self, docs: Docs) -> np.ndarray:
        return ngram_counts(docs, self.vocab, self.n_buckets, self.mode) @ self.log_diff

    def resample(self, pool: Docs, budget: int, rng: np.random.Generator) -> Docs:
        """Gumbel-top-k sampling without replacement, proportionally to the importance weights."""
        if budget <= 0:
            raise ValueError(f"budget must be > 0, got {budget}")
        lw = self.log_weights(pool)
        self.ess_ = kish_ess(lw)
        key = lw + rng.gumbel(size=len(pool))
        order = np.argsort(-key, kind="stable")
        out = _fill(pool, order, budget)
        self.n_drawn_ = len(out)
        return out


def kish_ess(log_w) -> float:
    """Kish effective sample size (sum w)^2 / sum w^2 of importance weights given as logs (-inf = 0)."""
    lw = np.asarray(log_w, dtype=float)
    if lw.size == 0 or not np.any(np.isfinite(lw)):
        raise ValueError("kish_ess: no finite log-weight")
    if np.any(np.isnan(lw)):
        raise ValueError("kish_ess: NaN log-weights")
    w = np.exp(lw - lw[np.isfinite(lw)].max())
    return float(w.sum() ** 2 / (w ** 2).sum())


def _fill(pool: Docs, order: np.ndarray, budget: int) -> Docs:
    cum = np.cumsum(pool.lengths[order])
    if cum.size == 0 or cum[-1] < budget:
        raise ValueError(f"the pool ({pool.n_tokens} tokens) cannot fill the budget of {budget} tokens without repetition")
    m = int(np.searchsorted(cum, budget) + 1)
    return pool.take(np.sort(order[:m]))


class CRISPLike:
    def __init__(self, n_clusters: int = 32, seed: int = 0):
        if n_clusters < 2:
            raise ValueError("CRISP needs at least 2 clusters")
        self.n_clusters, self.seed = n_clusters, seed

    def fit(self, X_fit, X_hq, hq_lengths) -> "CRISPLike":
        """k-means on ``X_fit`` (HQ + LQ features); the HQ cluster histogram in tokens from ``X_hq``."""
        self.km = KMeans(self.n_clusters, n_init=1, random_state=self.seed).fit(X_fit)
        c = self.km.predict(X_hq)
        h = np.bincount(c, weights=np.asarray(hq_lengths, float), minlength=self.n_clusters)
        self.hq_hist = h / h.sum()
        return self

    def resample(self, pool: Docs, X_pool, budget: int) -> Docs:
        """Take pool documents cluster by cluster, in stream order, to match the HQ histogram; a cluster
        the pool cannot fill passes its deficit on to the others (proportionally)."""
        c = self.km.predict(X_pool)
        avail = np.bincount(c, weights=pool.lengths.astype(float), minlength=self.n_clusters)
        quota = self.hq_hist * budget
        for _ in range(self.n_clusters):
            over = quota > avail
            if not over.any():
                break
            deficit = (quota - avail)[over].sum()
            quota = np.minimum(quota, avail)
            room = ~over & (self.hq_hist > 0)
            if not room.any():
                break
            quota[room] += deficit * self.hq_hist[room] / self.hq_hist[room].sum()
        keep = np.zeros(len(pool), dtype=bool)
        for j in range(self.n_clusters):
            idx = np.flatnonzero(c == j)
            if quota[j] <= 0 or len(idx) == 0:
                continue
            cum = np.cumsum(pool.lengths[idx])
            m = int(np.searchsorted(cum, quota[j]) + 1)
            keep[idx[:m]] = True
        out = pool.take(keep)
        if out.n_tokens < 0.95 * budget:
            raise ValueError(f"CRISP: the pool fills only {out.n_tokens} of {budget} tokens without repetition")
        self.quota_ = quota
        got = np.bincount(c[keep], weights=pool.lengths[keep].astype(float), minlength=self.n_clusters)
        self.tv_ = float(0.5 * np.abs(got / got.sum() - self.hq_hist).sum())  # fidelity: kept vs HQ histogram
        return out
