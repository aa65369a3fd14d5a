"""SynthWeb: the stand-in for RedPajama and for the HQ sets (research brief §5.2-5.4).

An honest little world for the CQF experiments:

* a knowledge base of ``n_entities x n_relations`` facts ``(e, r) -> v*`` (1,800 by default), entity
  popularity Zipf(1.1);
* independent genre generators (FAQ, PROSE, CHAT, SPAM, MISINFO) whose mixture ``WEB_MIX`` = (.05, .20,
  .40, .25, .10) is the web (the LQ pool, streamed without repetition);
* HQ sets that are genre *mixtures* overlapping the web bulk (Orca-like = QA .5 + prose .2 + chat .3,
  exactly the toy of §3.2), on the facts of the most popular entities only;
* test facts (the downstream task T1) on tail entities that no HQ set contains: the knowledge lives in
  the web only.

Ground-truth genres ride along with every document for plots and diagnostics; nothing in the selection
pipeline reads them. Documents are produced as vectorised token-id batches (:class:`Docs`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# ----------------------------------------------------------------------------------------------- vocabulary

GENRES = ("FAQ", "PROSE", "CHAT", "SPAM", "MISINFO")
HQ_GENRES = ("HQ-QA", "HQ-PROSE", "HQ-CHAT")
"""Genre labels of HQ documents (codes 5, 6, 7; CHAT in an HQ set uses the web's chat generator)."""
ALL_GENRES = GENRES + HQ_GENRES
WEB_MIX = (0.05, 0.20, 0.40, 0.25, 0.10)
"""Document shares of FAQ, PROSE, CHAT, SPAM, MISINFO in the web (the toy's b, §3.2)."""

HQ_SETS: dict[str, dict[str, float]] = {
    # the §3.2 toy: a = (QA .5, prose .2, chat .3, spam 0)
    "orca": {"HQ-QA": 0.5, "HQ-PROSE": 0.2, "HQ-CHAT": 0.3},
    "knowledge": {"HQ-PROSE": 0.7, "HQ-CHAT": 0.3},
    "task": {"HQ-TASK": 1.0},
    "clean_orca": {"HQ-QA": 0.5 / 0.7, "HQ-PROSE": 0.2 / 0.7},
    "covering": {"HQ-QA": 0.5, "HQ-PROSE": 0.2, "HQ-CHAT": 0.3},  # control: its QA also covers the test facts
}
"""The HQ sets (brief §5.3): Orca-like, Knowledge-like, Task-like (ARC-Easy analogue), the Clean-Orca
control, and the covering control (Orca-like whose QA lines also state the test facts)."""

FUNCTION_WORDS = ("q", ":", "?", ".", "is", "|")
SPAM_NAMED = ("buy", "click", "free", "www", "login", "cart", "home", "deal", "win", "$$$")
N_CHATTER, N_SPAM = 400, 60


@dataclass(frozen=True)
class Vocab:
    """Token names and the id ranges of each token class (closed vocabulary, ~840 tokens)."""

    n_entities: int = 300
    n_relations: int = 6
    n_values: int = 12

    @property
    def names(self) -> tuple[str, ...]:
        spam = SPAM_NAMED + tuple(f"s{i}" for i in range(N_SPAM - len(SPAM_NAMED)))
        return (FUNCTION_WORDS + tuple(f"c{i}" for i in range(N_CHATTER)) + tuple(f"e{i}" for i in range(self.n_entities))
                + tuple(f"r{i}" for i in range(self.n_relations))
                + tuple(f"v{r}_{j}" for r in range(self.n_relations) for j in range(self.n_values)) + spam)

    @property
    def size(self) -> int:
        return len(FUNCTION_WORDS) + N_CHATTER + self.n_entities + self.n_relations + self.n_relations * self.n_values + N_SPAM

    def tok(self, word: str) -> int:
        return FUNCTION_WORDS.index(word)

    @property
    def chatter0(self) -> int:
        return len(FUNCTION_WORDS)

    @property
    def entity0(self) -> int:
        return self.chatter0 + N_CHATTER

    @property
    def relation0(self) -> int:
        return self.entity0 + self.n_entities

    @property
    def value0(self) -> int:
        return self.relation0 + self.n_relations

    @property
    def spam0(self) -> int:
        return self.value0 + self.n_relations * self.n_values

    def value_id(self, r, j):
        return self.value0 + np.asarray(r) * self.n_values + np.asarray(j)


# ------------------------------------------------------------------------------------------------ documents

@dataclass
class Docs:
    """A batch of documents: flat token ids, offsets (n+1), ground-truth genre codes and stream ids."""

    tokens: np.ndarray
    offsets: np.ndarray
    genre: np.ndarray
    ids: np.ndarray = field(default=None)

    def __post_init__(self):
        self.tokens = np.asarray(self.tokens, dtype=np.int32)
        self.offsets = np.asarray(self.offsets, dtype=np.int64)
        self.genre = np.asarray(self.genre, dtype=np.int8)
        if self.ids is None:
            self.ids = np.full(len(self.genre), -1, dtype=np.int64)
        self.ids = np.asarray(self.ids, dtype=np.int64)
        if self.offsets.ndim != 1 or self.offsets[0] != 0 or self.offsets[-1] != len(self.tokens):
            raise ValueError("Docs: offsets must start at 0 and end at len(tokens)")
        if len(self.genre) != len(self.offsets) - 1 or len(self.ids) != len(self.genre):
            raise ValueError("Docs: one genre and one id per document")

    def __len__(self) -> int:
        return len(self.genre)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def doc_of_token(self) -> np.ndarray:
        return np.repeat(np.arange(len(self), dtype=np.int64), self.lengths)

    def take(self, idx) -> "Docs":
        """The documents at ``idx`` (indices or a boolean mask), in that order."""
        idx = np.asarray(idx)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        lengths = self.lengths[idx]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        if len(idx) == 0:
            return Docs(np.zeros(0, np.int32), offsets, np.zeros(0, np.int8), np.zeros(0, np.int64))
        starts = self.offsets[idx]
        pos = np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths) + np.repeat(starts, lengths)
        return Docs(self.tokens[pos], offsets, self.genre[idx], self.ids[idx])

    def head_tokens(self, budget: int) -> "Docs":
        """The first documents whose tokens fill ``budget`` (the last one may overshoot it)."""
        n = int(np.searchsorted(self.offsets[1:], budget) + 1)
        return self.take(np.arange(min(n, len(self))))

    @staticmethod
    def concat(parts: list["Docs"]) -> "Docs":
        parts = [p for p in parts if len(p)]
        if not parts:
            return Docs(np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(0, np.int8), np.zeros(0, np.int64))
        tokens = np.concatenate([p.tokens for p in parts])
        lengths = np.concatenate([p.lengths for p in parts])
        return Docs(tokens, np.concatenate([[0], np.cumsum(lengths)]), np.concatenate([p.genre for p in parts]),
                    np.concatenate([p.ids for p in parts]))

    def shares(self, by_tokens: bool = False) -> dict[str, float]:
        """Ground-truth genre shares (documents, or tokens), for diagnostics only."""
        w = self.lengths if by_tokens else np.ones(len(self))
        tot = w.sum()
        return {g: float(w[self.genre == i].sum() / tot) if tot else 0.0 for i, g in enumerate(ALL_GENRES)
                if (self.genre == i).any() or i < len(GENRES)}

    def texts(self, vocab: Vocab) -> list[str]:
        names = np.array(vocab.names)
        return [" ".join(names[self.tokens[a:b]]) for a, b in zip(self.offsets[:-1], self.offsets[1:])]


# ------------------------------------------------------------------------------------------------ the world

SEG_QA, SEG_FACT, SEG_CHAT, SEG_SPAMRUN, SEG_MENU, SEG_QA_WRONG, SEG_MISFACT = range(7)
SEG_WIDTH = {SEG_QA: 7, SEG_FACT: 5, SEG_CHAT: 9, SEG_SPAMRUN: 8, SEG_MENU: 5, SEG_QA_WRONG: 7, SEG_MISFACT: 6}

# genre -> (segment types, their probabilities, min segments, max segments)
GENRE_SEGMENTS = {
    "FAQ": ((SEG_QA, SEG_CHAT), (0.8, 0.2), 5, 9),
    "PROSE": ((SEG_FACT, SEG_CHAT), (0.5, 0.5), 6, 12),
    "CHAT": ((SEG_CHAT,), (1.0,), 4, 10),
    "SPAM": ((SEG_SPAMRUN, SEG_MENU, SEG_QA_WRONG), (0.4, 0.3, 0.3), 4, 10),
    "MISINFO": ((SEG_MISFACT, SEG_CHAT, SEG_SPAMRUN), (0.5, 0.4, 0.1), 6, 12),
    "HQ-QA": ((SEG_QA, SEG_CHAT), (0.8, 0.2), 5, 9),
    "HQ-PROSE": ((SEG_FACT, SEG_CHAT), (0.5, 0.5), 6, 12),
    "HQ-CHAT": ((SEG_CHAT,), (1.0,), 4, 10),
    "HQ-TASK": ((SEG_QA,), (1.0,), 4, 8),
}
GENRE_CODE = {**{g: i for i, g in enumerate(ALL_GENRES)}, "HQ-TASK": ALL_GENRES.index("HQ-QA")}


class SynthWeb:
    """The world of one seed: knowledge base, genre generators, the web stream and the HQ sets.

    Parameters: ``seed`` (everything derives from it), ``n_entities`` (300), ``n_relations`` (6),
    ``n_values`` (12 per relation), ``zipf`` (1.1, entity popularity), ``n_hq_entities`` (60 most popular:
    the HQ facts), ``n_test_facts`` (300 facts of entities of popularity rank in [``tail_rank``, ``tail_end``),
    ``tail_end`` = ``n_entities`` by default). The tail range sets how often the web states a test fact: the
    presets match it to the token budget so that T1 is neither at chance nor saturated (brief §5.2).
    """

    def __init__(self, seed: int = 0, n_entities: int = 300, n_relations: int = 6, n_values: int = 12,
                 zipf: float = 1.1, n_hq_entities: int = 60, n_test_facts: int = 300, tail_rank: int = 100,
                 web_mix=WEB_MIX, tail_end: int | None = None):
        tail_end = n_entities if tail_end is None else int(tail_end)
        if n_hq_entities >= tail_rank or tail_rank >= tail_end or tail_end > n_entities:
            raise ValueError("need n_hq_entities < tail_rank < tail_end <= n_entities")
        if n_test_facts > (tail_end - tail_rank) * n_relations:
            raise ValueError("n_test_facts exceeds the number of tail facts")
        mix = np.asarray(web_mix, dtype=float)
        if mix.shape != (len(GENRES),) or np.any(mix < 0) or not np.isclose(mix.sum(), 1.0):
            raise ValueError(f"web_mix must be {len(GENRES)} non-negative shares summing to 1, got {web_mix}")
        self.seed = int(seed)
        self.vocab = Vocab(n_entities, n_relations, n_values)
        self.web_mix = mix
        rng = np.random.default_rng([self.seed, 1])
        self.kb = rng.integers(0, n_values, size=(n_entities, n_relations))
        pop = 1.0 / np.arange(1, n_entities + 1) ** zipf
        self.entity_p = pop / pop.sum()  # entity i has popularity rank i
        self.hq_entity_p = np.where(np.arange(n_entities) < n_hq_entities, self.entity_p, 0.0)
        self.hq_entity_p /= self.hq_entity_p.sum()
        tail = np.array([(e, r) for e in range(tail_rank, tail_end) for r in range(n_relations)])
        self.test_facts = tail[np.sort(rng.choice(len(tail), n_test_facts, replace=False))]
        # three distractor values per test fact, fixed for the world
        d = np.array([rng.choice(np.setdiff1d(np.arange(n_values), [self.kb[e, r]]), 3, replace=False)
                      for e, r in self.test_facts])
        cands = np.concatenate([self.kb[self.test_facts[:, 0], self.test_facts[:, 1]][:, None], d], axis=1)
        order = np.argsort(rng.random(cands.shape), axis=1)  # the truth sits at a random position
        self.test_candidates = np.take_along_axis(cands, order, axis=1)
        self.test_truth = np.argmax(order == 0, axis=1)
        # chatter: first-order Markov chain, 20 successors per word with Dirichlet(0.3) weights
        self.chat_succ = rng.integers(0, N_CHATTER, size=(N_CHATTER, 20))
        w = rng.dirichlet(np.full(20, 0.3), size=N_CHATTER)
        self.chat_cum = np.cumsum(w, axis=1)
        self.chat_cum[:, -1] = 1.0
        c0 = 1.0 / np.arange(1, N_CHATTER + 1)
        self.chat_start = np.cumsum(c0 / c0.sum())
        s0 = 1.0 / np.arange(1, N_SPAM + 1) ** 0.8
        self.spam_cum = np.cumsum(s0 / s0.sum())
        self._next_id = 0
        self._rng = np.random.default_rng([self.seed, 2])

    # -------------------------------------------------------------------------------------------- segments
    def _entities(self, rng, n, which):
        if which == "hq":
            return rng.choice(len(self.entity_p), n, p=self.hq_entity_p)
        return rng.choice(len(self.entity_p), n, p=self.entity_p)

    def _facts(self, rng, n, which):
        """(entity, relation) pairs of n fact mentions."""
        if which == "covering":
            half = rng.random(n) < 0.5
            e = self._entities(rng, n, "hq")
            r = rng.integers(0, self.vocab.n_relations, n)
            pick = rng.integers(0, len(self.test_facts), n)
            e = np.where(half, self.test_facts[pick, 0], e)
            r = np.where(half, self.test_facts[pick, 1], r)
            return e, r
        return self._entities(rng, n, which), rng.integers(0, self.vocab.n_relations, n)

    def _chat(self, rng, n):
        words = np.empty((n, 8), dtype=np.int64)
        words[:, 0] = np.searchsorted(self.chat_start, rng.random(n))
        u = rng.random((n, 7))
        for j in range(1, 8):
            cur = words[:, j - 1]
            k = (self.chat_cum[cur] < u[:, j - 1, None]).sum(axis=1)
            words[:, j] = self.chat_succ[cur, k]
        return np.concatenate([words + self.vocab.chatter0, np.full((n, 1), self.vocab.tok("."))], axis=1)

    def _segments(self, rng, seg_type, n, which):
        V = self.vocab
        if seg_type == SEG_CHAT:
            return self._chat(rng, n)
        if seg_type in (SEG_QA, SEG_QA_WRONG, SEG_FACT, SEG_MISFACT):
            e, r = self._facts(rng, n, which)
            v = self.kb[e, r]
            if seg_type in (SEG_QA_WRONG, SEG_MISFACT):
                v = (v + rng.integers(1, V.n_values, n)) % V.n_values  # a wrong value
            ent, rel, val = V.entity0 + e, V.relation0 + r, V.value_id(r, v)
            if seg_type in (SEG_QA, SEG_QA_WRONG):
                cols = [np.full(n, V.tok("q")), np.full(n, V.tok(":")), ent, rel, np.full(n, V.tok("?")), val,
                        np.full(n, V.tok("."))]
            elif seg_type == SEG_FACT:
                cols = [ent, rel, np.full(n, V.tok("is")), val, np.full(n, V.tok("."))]
            else:
                spam = V.spam0 + np.searchsorted(self.spam_cum, rng.random(n))
                cols = [ent, rel, np.full(n, V.tok("is")), val, spam, np.full(n, V.tok("."))]
            return np.stack(cols, axis=1)
        if seg_type == SEG_SPAMRUN:  # spam tokens with random (uniform) entity names
            spam = V.spam0 + np.searchsorted(self.spam_cum, rng.random((n, 8)))
            ent = V.entity0 + rng.integers(0, V.n_entities, (n, 8))
            return np.where(rng.random((n, 8)) < 0.25, ent, spam)
        if seg_type == SEG_MENU:  # home | cart | login
            menu = V.spam0 + rng.integers(0, len(SPAM_NAMED), (n, 3))
            bar = np.full(n, V.tok("|"))
            return np.stack([menu[:, 0], bar, menu[:, 1], bar, menu[:, 2]], axis=1)
        raise ValueError(f"unknown segment type {seg_type}")

    def generate_genre(self, genre: str, n: int, rng: np.random.Generator | None = None) -> Docs:
        """``n`` documents of one genre (a web genre, or an HQ genre: HQ-QA, HQ-PROSE, HQ-CHAT, HQ-TASK,
        and HQ-QA-COVER for the covering control)."""
        cover = genre.endswith("-COVER")
        base = genre[:-6] if cover else genre
        if base not in GENRE_SEGMENTS:
            raise ValueError(f"unknown genre {genre!r}; known: {', '.join(GENRE_SEGMENTS)}")
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        rng = self._rng if rng is None else rng
        types, probs, lo, hi = GENRE_SEGMENTS[base]
        which = "covering" if cover else ("hq" if base.startswith("HQ") and base != "HQ-CHAT" else "web")
        n_seg = rng.integers(lo, hi + 1, n)
        total = int(n_seg.sum())
        seg_t = np.asarray(types)[rng.choice(len(types), total, p=probs)]
        width = max(SEG_WIDTH.values())
        mat = np.full((total, width), -1, dtype=np.int64)
        for t in types:
            rows = np.flatnonzero(seg_t == t)
            if len(rows):
                mat[rows, : SEG_WIDTH[t]] = self._segments(rng, t, len(rows), which)
        flat = mat.ravel()
        keep = flat >= 0
        seg_len = (mat >= 0).sum(axis=1)
        doc_len = np.add.reduceat(seg_len, np.concatenate([[0], np.cumsum(n_seg)[:-1]])) if n else np.zeros(0, int)
        offsets = np.concatenate([[0], np.cumsum(doc_len)])
        ids = np.arange(self._next_id, self._next_id + n)
        self._next_id += n
        return Docs(flat[keep], offsets, np.full(n, GENRE_CODE[base]), ids)

    def _mixture(self, shares: dict[str, float], n: int, rng) -> Docs:
        rng = self._rng if rng is None else rng
        names = list(shares)
        counts = rng.multinomial(n, [shares[g] for g in names])
        parts = [self.generate_genre(g, c, rng) for g, c in zip(names, counts)]
        docs = Docs.concat(parts)
        order = rng.permutation(len(docs))
        out = docs.take(order)
        out.ids = np.sort(out.ids)  # stream order = id order
        return out

    def web(self, n: int, rng: np.random.Generator | None = None) -> Docs:
        """``n`` fresh web (LQ) documents, genres drawn from ``web_mix``, in stream order."""
        return self._mixture(dict(zip(GENRES, self.web_mix)), n, rng)

    def hq(self, name: str, n: int, rng: np.random.Generator | None = None) -> Docs:
        """``n`` fresh documents of the HQ set ``name`` (one of `HQ_SETS`)."""
        if name not in HQ_SETS:
            raise ValueError(f"unknown HQ set {name!r}; known: {', '.join(HQ_SETS)}")
        shares = dict(HQ_SETS[name])
        if name == "covering":
            shares = {"HQ-QA-COVER": shares.pop("HQ-QA"), **shares}
        return self._mixture(shares, n, rng)

    def web_stream(self, batch_docs: int = 20000):
        """An endless stream of fresh web batches (no document is ever repeated)."""
        while True:
            yield self.web(batch_docs)
