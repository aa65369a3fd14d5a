"""Utilities for MBR: sentence BLEU, chrF (beta = 2), chrF1 (beta = 1) and a BERTScore-like SoftF1.

All pairwise scores come from **symmetric match statistics** (brief §3.1): clipped n-gram matches
``m_n(h, r) = sum_g min(c_h(g), c_r(g)) = m_n(r, h)``, so one pass gives both directions
``U_fwd[i, j] = u(hyp=h_i, ref=r_j)`` and ``U_rev[i, j] = u(hyp=r_j, ref=h_i)``; only the length
normalisers differ. The n-gram counts are sparse matrices whose n-gram ids are *group specific*
(a group = one source sentence), so one sparse product per order and count layer yields every
within-group pair at once, using ``min(a, b) = sum_{k >= 1} [a >= k][b >= k]``.

BLEU and chrF reproduce ``sacrebleu.sentence_bleu(hyp, [ref])`` (13a tokenisation, ``exp`` smoothing,
effective order) and ``sacrebleu.sentence_chrf(hyp, [ref])`` (character 6-grams, whitespace removed,
precision/recall averaged over the effective orders, beta = 2) to floating-point rounding; the unit
tests compare them with sacrebleu on random pairs. SoftF1 is our stand-in for BERTScore: greedy
cosine matching of contextual token vectors (:class:`ConceptEmbedder`: synonyms are near, not identical,
and a token's vector depends on its neighbours, so word order matters); it is symmetric, as BERTScore-F1 is.
"""
from __future__ import annotations

import math
import re
import zlib
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

UTILITIES: tuple[str, ...] = ("bleu", "chrf", "chrf1", "softf1")
"""Utility names understood by :func:`utility_tensors` and :func:`mbr_decode`."""

CHAR_ORDER = 6
WORD_ORDER = 4
_EPS = 1e-16


def check_utility(name: str) -> str:
    if name not in UTILITIES:
        raise ValueError(f"unknown utility {name!r}; valid utilities are {list(UTILITIES)}")
    return name


@lru_cache(maxsize=1)
def _tokenizer_13a():
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


_PLAIN = re.compile(r"[a-z0-9 ]*")


def bleu_tokens(sentence: str) -> list[str]:
    """sacrebleu's default BLEU tokenisation (13a), split into tokens (fast path: lowercase
    alphanumeric words separated by spaces, which 13a leaves unchanged)."""
    if _PLAIN.fullmatch(sentence):
        return sentence.split()
    return _tokenizer_13a()(sentence.rstrip()).split()


# ----------------------------------------------------------------------------- sparse n-gram counts

def _chained_ids(symbols: np.ndarray, seg: np.ndarray, seg_len: np.ndarray, pos: np.ndarray,
                 group: np.ndarray, max_order: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """For n = 1..max_order: (segment index, group-specific n-gram id) of every n-gram occurrence.

    ``symbols`` is the concatenation of all segments (integers); n-gram ids are built by chaining
    ``id_n[i] = rank(id_{n-1}[i], symbols[i + n - 1])`` so any alphabet size works."""
    out = []
    n_sym = int(symbols.max(initial=0)) + 1
    ids = np.unique(group[seg].astype(np.int64) * n_sym + symbols, return_inverse=True)[1]
    for n in range(1, max_order + 1):
        if n > 1:
            # symbols[i + n - 1] for start position i (masked below where the n-gram leaves the segment)
            shifted = np.zeros_like(symbols)
            keep = max(len(symbols) - (n - 1), 0)  # a corpus shorter than n - 1 symbols has no n-grams
            shifted[:keep] = symbols[n - 1:n - 1 + keep]
            ids = np.unique(ids.astype(np.int64) * n_sym + shifted, return_inverse=True)[1]
        valid = pos + n <= seg_len[seg]
        out.append((seg[valid], ids[valid]))
    return out


def _count_matrices(pairs: list[tuple[np.ndarray, np.ndarray]], n_rows: int) -> list[sp.csr_matrix]:
    mats = []
    for seg, ids in pairs:
        n_cols = int(ids.max(initial=-1)) + 1
        key, counts = np.unique(seg.astype(np.int64) * max(n_cols, 1) + ids, return_counts=True)
        rows, cols = np.divmod(key, max(n_cols, 1))
        mats.append(sp.csr_matrix((counts.astype(np.float64), (rows, cols)), shape=(n_rows, max(n_cols, 1))))
    return mats


class NgramStats:
    """Character (1..6, whitespace removed) and word (1..4, 13a tokens) n-gram counts of a flat list of
    sentences, with n-gram ids specific to each sentence's group."""

    def __init__(self, sentences: Sequence[str], groups: Sequence[int] | np.ndarray):
        groups = np.asarray(groups, dtype=np.int64)
        n = len(sentences)
        if len(groups) != n:
            raise ValueError("one group id per sentence is needed")
        # characters (sacrebleu chrF: ''.join(line.split()))
        chars = ["".join(s.split()) for s in sentences]
        self.char_len = np.fromiter((len(c) for c in chars), dtype=np.int64, count=n)
        joined = "".join(chars)
        codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        _, symbols = np.unique(codes, return_inverse=True) if len(codes) else (None, codes)
        seg = np.repeat(np.arange(n), self.char_len)
        starts = np.concatenate([[0], np.cumsum(self.char_len)[:-1]]) if n else np.zeros(0, np.int64)
        pos = np.arange(len(codes)) - np.repeat(starts, self.char_len)
        self.char = _count_matrices(_chained_ids(symbols.astype(np.int64), seg, self.char_len, pos, groups, CHAR_ORDER), n)
        # words (sacrebleu BLEU: 13a tokens)
        toks = [bleu_tokens(s) for s in sentences]
        self.word_len = np.fromiter((len(t) for t in toks), dtype=np.int64, count=n)
        vocab: dict[str, int] = {}
        flat = np.fromiter((vocab.setdefault(t, len(vocab)) for ts in toks for t in ts), dtype=np.int64,
                           count=int(self.word_len.sum()))
        seg = np.repeat(np.arange(n), self.word_len)
        starts = np.concatenate([[0], np.cumsum(self.word_len)[:-1]]) if n else np.zeros(0, np.int64)
        pos = np.arange(len(flat)) - np.repeat(starts, self.word_len)
        self.word = _count_matrices(_chained_ids(flat, seg, self.word_len, pos, groups, WORD_ORDER), n)
        self.tokens = [s.split() for s in sentences]


def _clipped_matches(A: sp.csr_matrix, B: sp.csr_matrix) -> sp.coo_matrix:
    """sum_g min(A[i, g], B[j, g]) for all rows i of A, j of B (sparse; zero across groups)."""
    kmax = int(max(A.data.max(initial=0), B.data.max(initial=0)))
    total = None
    for k in range(1, kmax + 1):
        Ak = A.copy(); Ak.data = (Ak.data >= k).astype(np.float64); Ak.eliminate_zeros()
        Bk = B.copy(); Bk.data = (Bk.data >= k).astype(np.float64); Bk.eliminate_zeros()
        prod = Ak @ Bk.T
        total = prod if total is None else total + prod
    return (total if total is not None else sp.csr_matrix((A.shape[0], B.shape[0]))).tocoo()


def _blocks(coo: sp.coo_matrix, S: int, N: int, K: int) -> np.ndarray:
    out = np.zeros((S, N, K))
    s, i = np.divmod(coo.row, N)
    s2, j = np.divmod(coo.col, K)
    if not np.array_equal(s, s2):  # n-gram ids are group specific, so this cannot happen
        raise RuntimeError("cross-group n-gram match: group ids were mixed up")
    out[s, i, j] = coo.data
    return out


# ----------------------------------------------------------------------------- scores from statistics

def chrf_from_stats(m: np.ndarray, nh: np.ndarray, nr: np.ndarray, beta: float = 2.0) -> np.ndarray:
    """sacrebleu ``CHRF._compute_f_score`` vectorised: ``m, nh, nr`` have shape (orders, ...)."""
    factor = beta ** 2
    avg_p = np.zeros(m.shape[1:]); avg_r = np.zeros(m.shape[1:]); eff = np.zeros(m.shape[1:])
    for n in range(m.shape[0]):
        with np.errstate(divide="ignore", invalid="ignore"):
            prec = np.where(nh[n] > 0, m[n] / np.maximum(nh[n], 1), _EPS)
            rec = np.where(nr[n] > 0, m[n] / np.maximum(nr[n], 1), _EPS)
        e = (nh[n] > 0) & (nr[n] > 0)
        avg_p = avg_p + np.where(e, prec, 0.0)
        avg_r = avg_r + np.where(e, rec, 0.0)
        eff = eff + e
    with np.errstate(divide="ignore", invalid="ignore"):
        avg_p = np.where(eff > 0, avg_p / np.maximum(eff, 1), 0.0)
        avg_r = np.where(eff > 0, avg_r / np.maximum(eff, 1), 0.0)
        score = (1 + factor) * avg_p * avg_r
        score = score / ((factor * avg_p) + avg_r)
    return np.where(avg_p + avg_r != 0, 100 * score, 0.0)


def corpus_chrf_from_stats(m: np.ndarray, nh: np.ndarray, nr: np.ndarray, beta: float = 2.0) -> np.ndarray:
    """Corpus chrF (sacrebleu ``corpus_chrf``: statistics summed over the sentences, then one F-score).

    ``m``: (orders, S, ...) clipped matches of each sentence's hypothesis with its reference(s);
    ``nh``, ``nr``: hypothesis and reference n-gram totals broadcastable to ``m``. The sentence axis 1 is
    summed; the remaining axes (e.g. one per single-reference corpus) are kept."""
    m = np.asarray(m, dtype=float)
    if m.ndim < 2 or m.shape[0] != CHAR_ORDER:
        raise ValueError(f"m must have shape ({CHAR_ORDER}, S, ...), got {m.shape}")
    nh = np.broadcast_to(np.asarray(nh, float), m.shape).sum(axis=1)
    nr = np.broadcast_to(np.asarray(nr, float), m.shape).sum(axis=1)
    return chrf_from_stats(m.sum(axis=1), nh, nr, beta)


def bleu_from_stats(m: np.ndarray, sys_len: np.ndarray, ref_len: np.ndarray) -> np.ndarray:
    """sacrebleu ``BLEU.compute_bleu`` (exp smoothing, effective order) vectorised; m: (4, ...)."""
    sys_len = np.broadcast_to(sys_len, m.shape[1:]).astype(float)
    ref_len = np.broadcast_to(ref_len, m.shape[1:]).astype(float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / np.maximum(sys_len, 1)), 0.0), 1.0)
    smooth = np.ones(m.shape[1:])
    log_sum = np.zeros(m.shape[1:])
    eff = np.zeros(m.shape[1:])
    alive = np.ones(m.shape[1:], dtype=bool)
    for n in range(1, m.shape[0] + 1):
        total = np.maximum(sys_len - n + 1, 0)
        alive = alive & (total > 0)
        zero = m[n - 1] == 0
        smooth = np.where(alive & zero, smooth * 2, smooth)
        with np.errstate(divide="ignore", invalid="ignore"):
            prec = np.where(zero, 100.0 / (smooth * np.maximum(total, 1)), 100.0 * m[n - 1] / np.maximum(total, 1))
        log_sum = np.where(alive, log_sum + np.log(np.where(alive, prec, 1.0)), log_sum)
        eff = np.where(alive, n, eff)
    eff = np.where(eff == 0, m.shape[0], eff)  # sacrebleu keeps eff_order = 4 when total[0] == 0
    score = bp * np.exp(log_sum / eff)
    return np.where(m.sum(axis=0) > 0, score, 0.0)


# ----------------------------------------------------------------------------- SoftF1 (BERTScore-like)

class ConceptEmbedder:
    """Token -> unit vector, and sentences -> contextual vectors, for the BERTScore-like SoftF1.

    *Near, not identical, synonyms*: every concept (a source word's meaning) has a unit vector ``c``; each
    target token of that concept gets ``normalise(c + spread * e)`` with ``e`` a unit vector of its own,
    orthogonal to ``c``. With ``spread = sqrt(1/cos - 1)`` a token's cosine with its concept is
    ``sqrt(cos)`` and two synonyms have a cosine of about ``cos`` (exactly, when their own directions
    are orthogonal), like BERTScore's contextual embeddings of synonyms (0.8 by default).

    *Order-aware*: :meth:`embed` returns contextual vectors, ``normalise(v_i + context * (v_{i-1} +
    v_{i+1}))``, so the same words in another order match less well (a bag of concepts would not see a
    swap). Unknown tokens get their own vector from a stable hash, so any string can be scored."""

    def __init__(self, concept: Mapping[str, int] | None = None, dim: int = 32, seed: int = 0,
                 synonym_cosine: float = 0.8, context: float = 0.3):
        if dim < 2:
            raise ValueError(f"dim must be at least 2, got {dim}")
        if not 0.0 < synonym_cosine <= 1.0:
            raise ValueError(f"synonym_cosine must lie in (0, 1], got {synonym_cosine}")
        if context < 0:
            raise ValueError(f"context must be >= 0, got {context}")
        self.dim, self.seed, self.context = dim, seed, float(context)
        self.concept = dict(concept or {})
        n = max(self.concept.values(), default=-1) + 1
        table = np.random.default_rng([seed, 31337]).standard_normal((n, dim))
        self.table = table / np.linalg.norm(table, axis=1, keepdims=True)
        self.spread = math.sqrt(1.0 / synonym_cosine - 1.0)
        self._cache: dict[str, np.ndarray] = {}

    def _own(self, token: str) -> np.ndarray:
        v = np.random.default_rng([self.seed, zlib.crc32(token.encode())]).standard_normal(self.dim)
        return v / np.linalg.norm(v)

    def vector(self, token: str) -> np.ndarray:
        """The token's (context-free) unit vector."""
        v = self._cache.get(token)
        if v is None:
            e = self._own(token)
            if token in self.concept:
                c = self.table[self.concept[token]]
                e = e - (e @ c) * c                     # the token's own direction, orthogonal to its concept
                v = c + self.spread * e / np.linalg.norm(e)
                v = v / np.linalg.norm(v)
            else:
                v = e
            self._cache[token] = v
        return v

    def embed(self, sentences: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Padded contextual embeddings (n, L, d) and a validity mask (n, L).

        Vectorised: every distinct token is looked up once (:meth:`vector`) and the rows are gathered from
        that table by index (index 0: the zero vector of a padding position)."""
        L = max((len(t) for t in sentences), default=1) or 1
        index: dict[str, int] = {}
        ids = np.zeros((len(sentences), L), dtype=np.intp)
        for i, toks in enumerate(sentences):
            if toks:
                ids[i, : len(toks)] = [index.setdefault(t, len(index) + 1) for t in toks]
        mask = ids > 0
        table = np.zeros((len(index) + 1, self.dim))
        for t, k in index.items():
            table[k] = self.vector(t)
        E = table[ids]
        if self.context:
            ctx = np.zeros_like(E)
            ctx[:, 1:] += E[:, :-1]; ctx[:, :-1] += E[:, 1:]   # padding rows are zero vectors
            E = E + self.context * ctx
            E = np.where(mask[..., None], E / np.maximum(np.linalg.norm(E, axis=-1, keepdims=True), _EPS), 0.0)
        return E, mask


def _flat_tokens(sentences: Sequence[str], index: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All sentences' tokens, concatenated: (token ids into ``index``, extended in place, id 0 standing for the
    one zero-vector token an empty sentence gets), each sentence's first position (n + 1 offsets) and its true
    token count."""
    toks = [t.split() for t in sentences]
    lens = np.array([len(t) for t in toks], dtype=np.intp)
    ids = [index.setdefault(w, len(index) + 1) for t in toks for w in (t or ("",))] if toks else []
    if "" in index:   # the empty sentence's placeholder is the zero vector, id 0, not a token
        ids = [0 if k == index[""] else k for k in ids]
    starts = np.concatenate([[0], np.cumsum(np.maximum(lens, 1))])
    return np.asarray(ids, dtype=np.intp), starts, lens


def _contextual(table: np.ndarray, ids: np.ndarray, starts: np.ndarray, context: float) -> np.ndarray:
    """Contextual unit vectors of a run of whole sentences (``starts``: their first positions, relative, with the
    end as last entry): ``normalise(v_i + context * (v_{i-1} + v_{i+1}))`` within each sentence, exactly
    :meth:`ConceptEmbedder.embed` without the padding."""
    E = table[ids]
    if not context:
        return E
    prev = np.zeros_like(E); nxt = np.zeros_like(E)
    prev[1:] = E[:-1]; nxt[:-1] = E[1:]
    prev[starts[:-1]] = 0.0; nxt[starts[1:] - 1] = 0.0          # no neighbour across sentences
    E = E + context * (prev + nxt)
    return E / np.maximum(np.linalg.norm(E, axis=-1, keepdims=True), _EPS)


def _softf1_tensors(flat_h: Sequence[str], flat_r: Sequence[str], S: int, N: int, K: int,
                    emb: "ConceptEmbedder") -> tuple[np.ndarray, np.ndarray]:
    """SoftF1 (S, N, K) in both directions without padding: per source, one matrix of cosines between all
    hypothesis tokens and all reference tokens, maxima and sums over each sentence's segment
    (``ufunc.reduceat``). An empty sentence is one zero-vector token: its cosines are 0, so it matches nothing
    and, with its true length of 0 (divided as 1), scores 0 as in :func:`_softf1_group`."""
    index: dict[str, int] = {}
    ih, sh, lh = _flat_tokens(flat_h, index)
    ir, sr, lr = _flat_tokens(flat_r, index)
    table = np.zeros((len(index) + 1, emb.dim))
    for t, k in index.items():
        if t:
            table[k] = emb.vector(t)
    nh = np.maximum(lh, 1).astype(float); nr = np.maximum(lr, 1).astype(float)
    fwd = np.empty((S, N, K)); rev = np.empty((S, N, K))
    for s in range(S):
        a0, a1 = sh[s * N], sh[(s + 1) * N]; b0, b1 = sr[s * K], sr[(s + 1) * K]
        hs, rs = sh[s * N:(s + 1) * N + 1] - a0, sr[s * K:(s + 1) * K + 1] - b0
        Eh = _contextual(table, ih[a0:a1], hs, emb.context); Er = _contextual(table, ir[b0:b1], rs, emb.context)
        sim = Eh @ Er.T                                                            # (hyp tokens, ref tokens)
        s_h = np.maximum(np.maximum.reduceat(sim, rs[:-1], axis=1), 0.0)          # best ref token, per ref
        s_r = np.maximum(np.maximum.reduceat(sim, hs[:-1], axis=0), 0.0)          # best hyp token, per hyp
        P = np.add.reduceat(s_h, hs[:-1], axis=0) / nh[s * N:(s + 1) * N, None]     # (N, K)
        R = np.add.reduceat(s_r, rs[:-1], axis=1) / nr[None, s * K:(s + 1) * K]     # (N, K)
        fwd[s], rev[s] = _f1(P, R), _f1(R, P)
    return fwd, rev


def _softf1_group(Eh, mh, Er, mr) -> np.ndarray:
    """Greedy-matching precision and recall (N, K) of N hypotheses against K references, from padded
    embeddings (:meth:`ConceptEmbedder.embed`): the reference path that :func:`_softf1_tensors` (what
    :func:`utility_tensors` uses) is tested against. A token's best cosine below 0 counts as no match (0), so
    SoftF1 lies in [0, 100] like the other utilities.

    Padding positions are zero vectors, so their cosine with anything is 0: a maximum taken over them as well
    is unchanged once clipped at 0, which lets the maxima run over the padded axes without masking (the
    arrays are first cut to this group's longest sentence on each side)."""
    lh = max(int(mh.sum(-1).max()), 1); lr = max(int(mr.sum(-1).max()), 1)
    Eh, mh, Er, mr = Eh[:, :lh], mh[:, :lh], Er[:, :lr], mr[:, :lr]
    (N, Lh, d), (K, Lr, _) = Eh.shape, Er.shape
    sim = (Eh.reshape(N * Lh, d) @ Er.reshape(K * Lr, d).T).reshape(N, Lh, K, Lr)
    s_h = np.maximum(sim.max(axis=3), 0.0).transpose(0, 2, 1)  # (N, K, Lh): best ref token per hyp token
    s_r = np.maximum(sim.max(axis=1), 0.0)                     # (N, K, Lr): best hyp token per ref token
    P = (s_h * mh[:, None, :]).sum(-1) / np.maximum(mh.sum(-1), 1)[:, None]
    R = (s_r * mr[None, :, :]).sum(-1) / np.maximum(mr.sum(-1), 1)[None, :]
    return P, R


def _f1(P, R):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(P + R > 0, 100 * (2 * (P * R)) / (P + R), 0.0)


# ----------------------------------------------------------------------------- public API

def utility_tensors(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]],
                    utilities: Sequence[str] = ("chrf",), embedder: ConceptEmbedder | None = None,
                    chrf_stats: dict | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Both directions of every utility for S groups at once.

    ``hyps[s]`` are the N candidates and ``refs[s]`` the K (pseudo-)references of source s. Returns
    ``{utility: (U_fwd, U_rev)}`` with arrays (S, N, K): ``U_fwd[s, i, j] = u(hyp=h_i, ref=r_j)`` and
    ``U_rev[s, i, j] = u(hyp=r_j, ref=h_i)``, from one pass of match statistics (brief §3.1).

    ``chrf_stats``: a dict that, when given and chrF or chrF1 is computed, receives the character
    statistics ``"m"`` (6, S, N, K) clipped matches, ``"nh"`` (6, S, N) and ``"nr"`` (6, S, K) n-gram
    totals, from which :func:`corpus_chrf_from_stats` builds corpus-level chrF."""
    utilities = [check_utility(u) for u in utilities]
    S = len(hyps)
    if S == 0 or len(refs) != S:
        raise ValueError(f"need the same positive number of hypothesis and reference groups, got {S} and {len(refs)}")
    N, K = len(hyps[0]), len(refs[0])
    if N == 0 or K == 0:
        raise ValueError("empty hypothesis or reference list")
    if any(len(h) != N for h in hyps) or any(len(r) != K for r in refs):
        raise ValueError("every group must have the same number of hypotheses (and of references)")
    flat_h = [h for g in hyps for h in g]
    flat_r = [r for g in refs for r in g]
    if not all(isinstance(x, str) for x in flat_h + flat_r):
        raise ValueError("hypotheses and references must be strings")
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    surface = [u for u in utilities if u != "softf1"]
    if surface:
        # the usual MBR layout has every group's references start with its hypotheses (H = R, then more): their
        # n-gram statistics are computed once and the reference rows point at the hypothesis rows
        shared = N if K >= N and all(list(r[:N]) == list(h) for h, r in zip(hyps, refs)) else 0
        extra = [r for g in refs for r in g[shared:]]
        groups = np.concatenate([np.repeat(np.arange(S), N), np.repeat(np.arange(S), K - shared)])
        st = NgramStats(flat_h + extra, groups)
        nH = S * N
        hrow = np.arange(nH)
        s_idx, j_idx = np.divmod(np.arange(S * K), K)
        rrow = np.where(j_idx < shared, s_idx * N + j_idx, nH + s_idx * (K - shared) + (j_idx - shared))
        if {"chrf", "chrf1"} & set(surface):
            m = np.stack([_blocks(_clipped_matches(C[hrow], C[rrow]), S, N, K) for C in st.char])
            lh = st.char_len[hrow].reshape(S, N, 1); lr = st.char_len[rrow].reshape(S, 1, K)
            nh = np.stack([np.broadcast_to(np.maximum(lh - n + 1, 0), (S, N, K)) for n in range(1, CHAR_ORDER + 1)])
            nr = np.stack([np.broadcast_to(np.maximum(lr - n + 1, 0), (S, N, K)) for n in range(1, CHAR_ORDER + 1)])
            for name, beta in (("chrf", 2.0), ("chrf1", 1.0)):
                if name in surface:
                    out[name] = (chrf_from_stats(m, nh, nr, beta), chrf_from_stats(m, nr, nh, beta))
            if chrf_stats is not None:
                chrf_stats["m"] = m
                chrf_stats["nh"] = np.stack([np.maximum(st.char_len[hrow].reshape(S, N) - n + 1, 0) for n in range(1, CHAR_ORDER + 1)])
                chrf_stats["nr"] = np.stack([np.maximum(st.char_len[rrow].reshape(S, K) - n + 1, 0) for n in range(1, CHAR_ORDER + 1)])
        if "bleu" in surface:
            m = np.stack([_blocks(_clipped_matches(C[hrow], C[rrow]), S, N, K) for C in st.word])
            lh = st.word_len[hrow].reshape(S, N, 1); lr = st.word_len[rrow].reshape(S, 1, K)
            out["bleu"] = (bleu_from_stats(m, lh, lr), bleu_from_stats(m, lr, lh))
    if "softf1" in utilities:
        out["softf1"] = _softf1_tensors(flat_h, flat_r, S, N, K, embedder or ConceptEmbedder())
    return {u: out[u] for u in utilities}


def utility_matrix(hyps: Sequence[str], refs: Sequence[str], utility: str = "chrf",
                   embedder: ConceptEmbedder | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(U_fwd, U_rev), each (N, K), for one source: ``U_fwd[i, j] = u(h_i, r_j)``, ``U_rev[i, j] = u(r_j, h_i)``."""
    if isinstance(hyps, str) or isinstance(refs, str):
        raise ValueError("hyps and refs must be lists of strings, not a single string")
    if len(hyps) == 0:
        raise ValueError("empty hypothesis list")
    if len(refs) == 0:
        raise ValueError("empty reference list")
    fwd, rev = utility_tensors([list(hyps)], [list(refs)], (utility,), embedder)[utility]
    return fwd[0], rev[0]


def sentence_score(hyp: str, ref: str, utility: str = "chrf", embedder: ConceptEmbedder | None = None) -> float:
    """u(hyp, ref) for one pair (same semantics as the matrices)."""
    return float(utility_matrix([hyp], [ref], utility, embedder)[0][0, 0])


def bleu_ratio(h_len: int, r_len: int) -> float:
    """§3.1 (our derivation): BLEU(r, h) / BLEU(h, r) without smoothing, all n-gram matches non-zero,
    both lengths >= 4: ``BP(|r|,|h|)/BP(|h|,|r|) * prod_n ((|h|-n+1)/(|r|-n+1))^(1/4)``."""
    if int(h_len) != h_len or int(r_len) != r_len or h_len < WORD_ORDER or r_len < WORD_ORDER:
        raise ValueError(f"bleu_ratio needs integer lengths >= {WORD_ORDER} (every n-gram order present), got {h_len}, {r_len}")
    def bp(sys, ref):
        return 1.0 if sys >= ref else math.exp(1 - ref / sys)
    prod = 1.0
    for n in range(1, 5):
        prod *= (h_len - n + 1) / (r_len - n + 1)
    return bp(r_len, h_len) / bp(h_len, r_len) * prod ** 0.25
