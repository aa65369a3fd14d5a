"""Document features from token ids (brief §5.5): hashed unigram+bigram counts, raw n-gram counts for
DSIR, and an "sBert-like" mean of fixed random token embeddings.

`hashed_features` is *identical* to scikit-learn's ``HashingVectorizer(tokenizer=str.split,
token_pattern=None, lowercase=False, ngram_range=(1, 2), n_features=2**12, alternate_sign=True,
norm="l2")`` on the space-joined token names (tested): each unigram and bigram string is hashed with
MurmurHash3 once per vocabulary, then documents are featurised from token ids without building strings.
"""
from __future__ import annotations

import functools
import hashlib

import numpy as np
import scipy.sparse as sp

from .world import Docs, Vocab

N_FEATURES = 2**12


def check_tokens(docs: Docs, vocab_size: int) -> None:
    """Token ids must lie in [0, vocab_size): a clear error, never a silent wrong feature."""
    if docs.n_tokens and (docs.tokens.min() < 0 or docs.tokens.max() >= vocab_size):
        raise ValueError(f"token ids outside the vocabulary [0, {vocab_size}): "
                         f"min {docs.tokens.min()}, max {docs.tokens.max()}")


LAZY_VOCAB = 2048


class _LazyPairs:
    """Bigram bucket (or sign) table of a large vocabulary, hashed on demand for the pairs that occur."""

    def __init__(self, names, n_features, what):
        self.names, self.n_features, self.what = names, n_features, what
        self.shape = (len(names), len(names))
        self.cache: dict[int, int] = {}

    def lookup(self, pair: np.ndarray) -> np.ndarray:
        from sklearn.utils import murmurhash3_32

        V = self.shape[0]
        uniq, inv = np.unique(pair, return_inverse=True)
        h = np.array([murmurhash3_32(f"{self.names[p // V]} {self.names[p % V]}", seed=0, positive=False)
                      for p in uniq.tolist()], dtype=np.int64)
        if self.what == "bucket":
            return (np.abs(h) % self.n_features).astype(np.int32)[inv]
        return np.where(h >= 0, 1.0, -1.0)[inv]


def _pairs(table, pair):
    return table.lookup(pair) if isinstance(table, _LazyPairs) else table.ravel()[pair]


@functools.lru_cache(maxsize=8)
def _murmur_tables(names: tuple[str, ...], n_features: int):
    """(bucket, sign) of every unigram and of every bigram 'a b', as sklearn's HashingVectorizer hashes them."""
    from sklearn.utils import murmurhash3_32

    V = len(names)
    uni = np.array([murmurhash3_32(w, seed=0, positive=False) for w in names], dtype=np.int64)
    if V > LAZY_VOCAB:  # hash only the bigrams that occur (`_LazyPairs`)
        ub = (np.abs(uni) % n_features).astype(np.int32)
        return ub, np.where(uni >= 0, 1.0, -1.0), _LazyPairs(names, n_features, "bucket"), _LazyPairs(names, n_features, "sign")
    bi = np.array([murmurhash3_32(f"{a} {b}", seed=0, positive=False) for a in names for b in names], dtype=np.int64)

    def split(h):
        return (np.abs(h) % n_features).astype(np.int32), np.where(h >= 0, 1.0, -1.0).astype(np.float64)

    (ub, us), (bb, bs) = split(uni), split(bi)
    return ub, us, bb.reshape(V, V), bs.reshape(V, V)


@functools.lru_cache(maxsize=8)
def _sha256_tables(names: tuple[str, ...], n_buckets: int):
    """Buckets of unigrams and bigrams as `data_selection` hashes them (sha256 of the lower-cased string)."""
    def h(s):
        return int(hashlib.sha256(s.encode("utf-8")).hexdigest(), 16) % n_buckets

    V = len(names)
    uni = np.array([h(w) for w in names], dtype=np.int32)
    bi = np.array([h(f"{a} {b}") for a in names for b in names], dtype=np.int32).reshape(V, V)
    return uni, bi


def _ngram_matrix(docs: Docs, uni_bucket, uni_sign, bi_bucket, bi_sign, n_cols: int) -> sp.csr_matrix:
    """Sum of every unigram's and every within-document bigram's (bucket, value) per document, as CSR."""
    t = docs.tokens.astype(np.int64)
    V = bi_bucket.shape[0]
    n = len(docs)
    U = sp.csr_matrix((uni_sign[t] if uni_sign is not None else np.ones(len(t)), uni_bucket[t], docs.offsets),
                      shape=(n, n_cols))
    same = np.ones(len(t), dtype=bool)
    same[docs.offsets[:-1][docs.lengths > 0]] = False
    j = np.flatnonzero(same)
    pair = t[j - 1] * V + t[j]
    bo = np.concatenate([[0], np.cumsum(np.maximum(docs.lengths - 1, 0))])
    B = sp.csr_matrix((_pairs(bi_sign, pair) if bi_sign is not None else np.ones(len(j)), _pairs(bi_bucket, pair), bo),
                      shape=(n, n_cols))
    X = (U + B).tocsr()
    X.sum_duplicates()
    return X


def hashed_features(docs: Docs, vocab: Vocab, n_features: int = N_FEATURES, norm: str | None = "l2",
                    alternate_sign: bool = True) -> sp.csr_matrix:
    """Hashed unigram+bigram term counts (FastText/DCLM-style bag of n-grams), rows L2-normalised.

    ``norm=None`` gives raw (signed) counts: document length is then visible to a linear model (App. C).
    """
    check_tokens(docs, vocab.size)
    ub, us, bb, bs = _murmur_tables(vocab.names, n_features)
    if not alternate_sign:
        us, bs = np.abs(us), None
    X = _ngram_matrix(docs, ub, us, bb, bs, n_features)
    if norm == "l2":
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()  # safe with empty documents anywhere
        scale = np.where(sq > 0, 1.0 / np.sqrt(np.maximum(sq, 1e-300)), 0.0)
        X = sp.diags(scale) @ X
        X = X.tocsr()
    elif norm is not None:
        raise ValueError(f"norm must be 'l2' or None, got {norm!r}")
    return X


def ngram_counts(docs: Docs, vocab: Vocab, n_buckets: int = 10000, mode: str = "sha256") -> sp.csr_matrix:
    """Unsigned hashed unigram+bigram counts (DSIR's featuriser). ``mode="sha256"`` reproduces
    `data_selection.HashedNgramDSIR`'s buckets on the joined names; ``"murmur"`` is the same model with
    MurmurHash3 buckets."""
    check_tokens(docs, vocab.size)
    if mode == "sha256":
        ub, bb = _sha256_tables(vocab.names, n_buckets)
    elif mode == "murmur":
        ub, _, bb, _ = _murmur_tables(vocab.names, n_buckets)
    else:
        raise ValueError(f"mode must be 'sha256' or 'murmur', got {mode!r}")
    return _ngram_matrix(docs, ub.astype(np.int64), None, bb, None, n_buckets)


def embedding_features(docs: Docs, vocab: Vocab, dim: int = 64, seed: int = 0) -> np.ndarray:
    """"sBert-like" features: the mean of fixed random token embeddings (a stand-in for sBert's 384-d
    sentence embedding, which needs a weight download), rows L2-normalised."""
    check_tokens(docs, vocab.size)
    E = np.random.default_rng([seed, 7]).standard_normal((vocab.size, dim))
    sums = np.zeros((len(docs), dim))
    np.add.at(sums, docs.doc_of_token, E[docs.tokens])
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return sums / np.where(norms > 0, norms, 1.0)
