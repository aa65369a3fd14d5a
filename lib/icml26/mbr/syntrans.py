"""SynTrans: a synthetic translation world with a known reference distribution (brief §5.1, stand-in).

The paper evaluates on WMT / summarisation / captioning data with LLM samplers, none of which can be
used offline. SynTrans keeps what MBR decoding needs: a source sentence ``x``, a *true* translation
distribution ``p*(y|x)`` with genuine lexical and structural ambiguity (so references disagree), an
exact ``log p*(y|x)`` for *any* output string, and a miscalibrated sampler ``p_theta`` whose samples
contain errors. It loses real language, real model pathologies and neural metrics.

Source language: a small PCFG (S -> NP VP | NP VP conj S_sub; NP -> det adj* noun [PP];
VP -> verb NP | verb adv; PP -> prep NP) over identifier tokens ``n3``, ``v12``, ... .

Translation (a *transduction*): the target is a sequence of **slots** (one per source word, plus
optional particles); each slot independently emits one of a few token tuples with known
probabilities: synonyms (i), determiners with the noun's gender suffix (iii), an optional particle
after verbs (iv), two-token compounds for nouns (v). Word order (ii) is a deterministic function of the
source tree (task A: adjectives after nouns, verb-final subordinate clauses; task B: verb-final
everywhere, prepositional phrases before the noun) plus, in task B, a stochastic adverb placement
(a mixture over two slot orders). Because every target word belongs to exactly one lexeme,
``p*(y|x) = sum_orders p(order) * P(slots emit y)`` is computed exactly by a left-to-right dynamic
programme over token positions (:meth:`SynTrans.log_prob`).

The noisy sampler (``oracle-noise`` model of §5.2) runs the same process with synonym probabilities
flattened by a temperature and adds token errors (drop, repeat, wrong-lexeme substitution, adjacent
swap); its ``log p_theta`` is the log-probability of the sample's generation trace. That trace score
*knows* the injected errors (a wrong word costs ``log(substitute / |V|)``), so the most probable sample
is nearly error-free: an oracle no real model is. The chapter therefore observes it through a
calibration knob (:func:`icml26.mbr.experiments.calibrated_lbar`), which is not part of the sampler.
"""
from __future__ import annotations

import bisect
import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

Slot = tuple[tuple[tuple[str, ...], float], ...]
"""One slot: its options as ``((tokens...), probability)`` pairs, probabilities summing to 1."""


@dataclass(frozen=True)
class TaskSpec:
    """The knobs that make SynTrans-A and SynTrans-B different tasks (brief §5.1)."""

    name: str
    synonym_probs: tuple[float, ...]  # probabilities of the 1st, 2nd, ... synonym (truncated per lexeme)
    min_synonyms: int
    particle_p: float  # (iv) optional particle after a verb
    compound_p: float  # (v) a noun becomes a two-token compound
    verb_final_main: bool  # (ii) strong reordering: SOV in main clauses too
    pp_first: bool  # (ii) prepositional phrase before the noun
    adverb_front_p: float  # stochastic adverb fronting (mixture over slot orders); 0 = deterministic


TASKS: dict[str, TaskSpec] = {
    "A": TaskSpec("A", synonym_probs=(0.6, 0.3, 0.1), min_synonyms=1, particle_p=0.3, compound_p=0.2,
                  verb_final_main=False, pp_first=False, adverb_front_p=0.0),
    "B": TaskSpec("B", synonym_probs=(0.45, 0.3, 0.15, 0.1), min_synonyms=2, particle_p=0.4, compound_p=0.25,
                  verb_final_main=True, pp_first=True, adverb_front_p=0.5),
}

_CATEGORY_SIZES = {"noun": 40, "verb": 30, "adj": 25, "adv": 10, "prep": 6, "det": 3, "conj": 3}
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _pseudo_word(rng: np.random.Generator, used: set[str]) -> str:
    while True:
        n_syl = int(rng.choice([1, 2, 2, 3, 3, 4]))
        w = "".join(rng.choice(list(_CONSONANTS)) + rng.choice(list(_VOWELS)) for _ in range(n_syl))
        if rng.random() < 0.4:
            w += rng.choice(list(_CONSONANTS))
        if w not in used:
            used.add(w)
            return w


@dataclass
class Lexicon:
    """Source lexemes, their target synonyms and concept ids (synonyms share a concept).

    ``concept[token]`` maps every target token to an integer concept (used by the SoftF1 embedder,
    which gives synonyms nearby vectors).
    """

    spec: TaskSpec
    source: dict[str, list[str]]  # category -> source identifiers
    synonyms: dict[str, list[str]]  # source id -> target synonyms (most probable first)
    syn_probs: dict[str, np.ndarray]
    gender: dict[str, int]  # noun id -> gender 0..2
    compound_mod: dict[str, str]  # noun id -> modifier token of its compound form
    det_forms: dict[str, list[str]]  # det id -> 3 gendered target forms
    particle: str
    concept: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, spec: TaskSpec, seed: int) -> "Lexicon":
        rng = np.random.default_rng([seed, 7919, ord(spec.name)])
        used: set[str] = set()
        source = {c: [f"{c[0]}{i}" if c != "conj" else f"k{i}" for i in range(n)] for c, n in _CATEGORY_SIZES.items()}
        source["adv"] = [f"r{i}" for i in range(_CATEGORY_SIZES["adv"])]
        source["prep"] = [f"p{i}" for i in range(_CATEGORY_SIZES["prep"])]
        source["det"] = [f"d{i}" for i in range(_CATEGORY_SIZES["det"])]
        synonyms, syn_probs, gender, compound_mod, det_forms, concept = {}, {}, {}, {}, {}, {}
        n_concepts = 0
        max_syn = len(spec.synonym_probs)
        for cat in ("noun", "verb", "adj", "adv", "prep", "conj"):
            for sid in source[cat]:
                k = int(rng.integers(spec.min_synonyms, max_syn + 1)) if cat in ("noun", "verb", "adj", "adv") else 1
                words = [_pseudo_word(rng, used) for _ in range(k)]
                p = np.array(spec.synonym_probs[:k], dtype=float)
                synonyms[sid], syn_probs[sid] = words, p / p.sum()
                for w in words:
                    concept[w] = n_concepts
                n_concepts += 1
                if cat == "noun":
                    gender[sid] = int(rng.integers(0, 3))
                    compound_mod[sid] = _pseudo_word(rng, used)
                    concept[compound_mod[sid]] = n_concepts
                    n_concepts += 1
        for sid in source["det"]:
            base = _pseudo_word(rng, used)
            forms = [base + suf for suf in ("r", "e", "s")]
            assert not used.intersection(forms)
            used.update(forms)
            det_forms[sid] = forms
            for f in forms:
                concept[f] = n_concepts
            n_concepts += 1
        particle = _pseudo_word(rng, used)
        concept[particle] = n_concepts
        return cls(spec, source, synonyms, syn_probs, gender, compound_mod, det_forms, particle, concept)

    @property
    def target_vocabulary(self) -> list[str]:
        return sorted(self.concept)


# ----------------------------------------------------------------------------- source grammar (PCFG)

def _sample_np(lex: Lexicon, rng: np.random.Generator, allow_pp: bool) -> dict:
    n_adj = int(rng.choice([0, 0, 0, 1, 1, 2]))
    np_ = {"det": rng.choice(lex.source["det"]), "noun": rng.choice(lex.source["noun"]),
           "adjs": [rng.choice(lex.source["adj"]) for _ in range(n_adj)], "pp": None}
    if allow_pp and rng.random() < 0.25:
        np_["pp"] = {"prep": rng.choice(lex.source["prep"]), "np": _sample_np(lex, rng, allow_pp=False)}
    return np_


def _sample_clause(lex: Lexicon, rng: np.random.Generator) -> dict:
    subj = _sample_np(lex, rng, allow_pp=True)
    verb = rng.choice(lex.source["verb"])
    if rng.random() < 0.65:
        return {"subj": subj, "verb": verb, "obj": _sample_np(lex, rng, allow_pp=True), "adv": None}
    return {"subj": subj, "verb": verb, "obj": None, "adv": rng.choice(lex.source["adv"])}


def sample_source(lex: Lexicon, rng: np.random.Generator) -> dict:
    """One source sentence as a tree: a main clause and, with prob. 0.3, a conjoined subordinate clause."""
    tree = {"main": _sample_clause(lex, rng), "conj": None, "sub": None}
    if rng.random() < 0.3:
        tree["conj"] = rng.choice(lex.source["conj"])
        tree["sub"] = _sample_clause(lex, rng)
    return tree


def _np_words(np_: dict) -> list[str]:
    out = [np_["det"], *np_["adjs"], np_["noun"]]
    if np_["pp"] is not None:
        out += [np_["pp"]["prep"], *_np_words(np_["pp"]["np"])]
    return out


def source_text(tree: dict) -> str:
    """The source sentence as a string (English-like order: det adj* noun [PP] verb obj|adv)."""
    def clause(c):
        return _np_words(c["subj"]) + [c["verb"]] + (_np_words(c["obj"]) if c["obj"] else [c["adv"]])
    words = clause(tree["main"])
    if tree["sub"] is not None:
        words += [tree["conj"]] + clause(tree["sub"])
    return " ".join(words)


# ----------------------------------------------------------------------------- the transduction

def _word_slot(lex: Lexicon, sid: str, temperature: float = 1.0) -> Slot:
    p = lex.syn_probs[sid] ** (1.0 / temperature)
    p = p / p.sum()
    return tuple(((w,), float(q)) for w, q in zip(lex.synonyms[sid], p))


def _noun_slot(lex: Lexicon, sid: str, temperature: float = 1.0) -> Slot:
    c = lex.spec.compound_p
    single = _word_slot(lex, sid, temperature)
    return tuple(((w[0],), q * (1 - c)) for w, q in single) + tuple(((lex.compound_mod[sid], w[0]), q * c) for w, q in single)


def _verb_slots(lex: Lexicon, sid: str, temperature: float = 1.0) -> list[Slot]:
    p = lex.spec.particle_p
    return [_word_slot(lex, sid, temperature), (((), 1 - p), ((lex.particle,), p))]


def _np_slots(lex: Lexicon, np_: dict, temperature: float) -> list[Slot]:
    det = ((lex.det_forms[np_["det"]][lex.gender[np_["noun"]]],), 1.0),
    core = [det, _noun_slot(lex, np_["noun"], temperature)] + [_word_slot(lex, a, temperature) for a in np_["adjs"]]
    if np_["pp"] is None:
        return core
    pp = [_word_slot(lex, np_["pp"]["prep"], temperature)] + _np_slots(lex, np_["pp"]["np"], temperature)
    return pp + core if lex.spec.pp_first else core + pp


def _clause_orders(lex: Lexicon, c: dict, verb_final: bool, temperature: float) -> list[tuple[float, list[Slot]]]:
    subj = _np_slots(lex, c["subj"], temperature)
    verb = _verb_slots(lex, c["verb"], temperature)
    comp = _np_slots(lex, c["obj"], temperature) if c["obj"] is not None else [_word_slot(lex, c["adv"], temperature)]
    base = subj + (comp + verb if verb_final else verb + comp)
    f = lex.spec.adverb_front_p
    if c["adv"] is None or f == 0.0:
        return [(1.0, base)]
    fronted = comp + subj + verb  # adverb first; the verb stays last in both clause types
    return [(1.0 - f, base), (f, fronted)]


def slot_orders(lex: Lexicon, tree: dict, temperature: float = 1.0) -> list[tuple[float, list[Slot]]]:
    """The target as a mixture over slot sequences: ``[(p(order), [slot, ...]), ...]`` (§5.1 (i)-(v))."""
    main = _clause_orders(lex, tree["main"], lex.spec.verb_final_main, temperature)
    if tree["sub"] is None:
        return main
    conj = [_word_slot(lex, tree["conj"], temperature)]
    sub = _clause_orders(lex, tree["sub"], True, temperature)
    return [(p * q, m + conj + s) for p, m in main for q, s in sub]


def _compile(orders) -> list:
    """Cumulative probabilities of a slot mixture, for fast repeated draws."""
    comp = []
    for p, slots in orders:
        comp.append((p, [(list(itertools.accumulate(q for _, q in slot)), [o for o, _ in slot],
                          [math.log(q) if q > 0 else -math.inf for _, q in slot]) for slot in slots]))
    return comp


def _draw_from_orders(orders, rng: np.random.Generator, compiled=None) -> tuple[list[str], float]:
    """Sample tokens from a slot mixture; returns (tokens, log-probability of the trace)."""
    compiled = compiled if compiled is not None else _compile(orders)
    cum_orders = list(itertools.accumulate(p for p, _ in compiled))
    k = min(bisect.bisect_right(cum_orders, rng.random() * cum_orders[-1]), len(compiled) - 1)
    logp = math.log(compiled[k][0])
    tokens: list[str] = []
    slots = compiled[k][1]
    us = rng.random(len(slots))
    for (cum, outs, logs), u in zip(slots, us):
        j = min(bisect.bisect_right(cum, u * cum[-1]), len(cum) - 1)
        tokens.extend(outs[j])
        logp += logs[j]
    return tokens, logp


@dataclass
class SynTrans:
    """One SynTrans task: a lexicon plus samplers and exact scorers (brief §5.1)."""

    lexicon: Lexicon

    @classmethod
    def make(cls, task: str = "A", seed: int = 0) -> "SynTrans":
        if task not in TASKS:
            raise ValueError(f"unknown SynTrans task {task!r}; valid tasks are {sorted(TASKS)}")
        return cls(Lexicon.build(TASKS[task], seed))

    @property
    def name(self) -> str:
        return self.lexicon.spec.name

    def sample_source(self, rng: np.random.Generator) -> dict:
        return sample_source(self.lexicon, rng)

    def sample_reference(self, tree: dict, rng: np.random.Generator) -> str:
        """One draw from the true translation distribution p*(y|x)."""
        return self.sample_references(tree, rng, 1)[0]

    def sample_references(self, tree: dict, rng: np.random.Generator, n: int) -> list[str]:
        """n independent draws from p*(y|x)."""
        compiled = _compile(slot_orders(self.lexicon, tree))
        return [" ".join(_draw_from_orders(None, rng, compiled)[0]) for _ in range(n)]

    def log_prob(self, tree: dict, y: str) -> float:
        """Exact ``log p*(y|x)`` of any output string (``-inf`` when y cannot be produced).

        Dynamic programme over token positions, summed over the slot orders of the mixture."""
        toks = tuple(y.split())
        total = 0.0
        for p_order, slots in slot_orders(self.lexicon, tree):
            reach = {0: p_order}
            for slot in slots:
                nxt: dict[int, float] = defaultdict(float)
                for pos, p in reach.items():
                    for out, q in slot:
                        end = pos + len(out)
                        if toks[pos:end] == out:
                            nxt[end] += p * q
                reach = nxt
                if not reach:
                    break
            total += reach.get(len(toks), 0.0)
        return math.log(total) if total > 0 else -math.inf


@dataclass(frozen=True)
class NoiseModel:
    """The ``oracle-noise`` sampler p_theta of brief §5.2: flattened synonyms plus token errors."""

    temperature: float = 1.5
    drop: float = 0.05
    repeat: float = 0.03
    substitute: float = 0.03
    swap: float = 0.03

    def __post_init__(self):
        if self.temperature <= 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        rates = (self.drop, self.repeat, self.substitute, self.swap)
        if any(not 0 <= r < 1 for r in rates) or self.drop + self.repeat + self.substitute >= 1:
            raise ValueError(f"error rates must lie in [0, 1) with drop + repeat + substitute < 1, got {rates}")


def noisy_samples(world: SynTrans, tree: dict, rng: np.random.Generator, noise: NoiseModel, n: int,
                  vocab: list[str] | None = None) -> list[tuple[str, float]]:
    """n samples of p_theta with their length-normalised trace log-probabilities."""
    if n < 1:
        raise ValueError(f"n must be a positive number of samples, got {n}")
    vocab = vocab if vocab is not None else world.lexicon.target_vocabulary
    compiled = _compile(slot_orders(world.lexicon, tree, noise.temperature))
    return [noisy_sample(world, tree, rng, noise, vocab, compiled) for _ in range(n)]


def noisy_sample(world: SynTrans, tree: dict, rng: np.random.Generator, noise: NoiseModel,
                 vocab: list[str] | None = None, compiled=None) -> tuple[str, float]:
    """One sample of p_theta and the length-normalised log-probability of its generation trace.

    Returns ``(text, logp / n_tokens)`` (brief pitfall 5: priors use length-normalised log-probs)."""
    vocab = vocab if vocab is not None else world.lexicon.target_vocabulary
    if compiled is None:
        compiled = _compile(slot_orders(world.lexicon, tree, noise.temperature))
    while True:
        base, logp = _draw_from_orders(None, rng, compiled)
        out: list[str] = []
        p_ok = 1.0 - noise.drop - noise.repeat - noise.substitute
        for t in base:
            u = rng.random()
            if u < noise.drop:
                logp += math.log(noise.drop)
            elif u < noise.drop + noise.repeat:
                out += [t, t]
                logp += math.log(noise.repeat)
            elif u < noise.drop + noise.repeat + noise.substitute:
                out.append(vocab[int(rng.integers(len(vocab)))])
                logp += math.log(noise.substitute / len(vocab))
            else:
                out.append(t)
                logp += math.log(p_ok)
        i = 0
        while i < len(out) - 1:
            if rng.random() < noise.swap:
                out[i], out[i + 1] = out[i + 1], out[i]
                logp += math.log(noise.swap)
                i += 2
            else:
                logp += math.log(1 - noise.swap)
                i += 1
        if out:  # an all-dropped sample is redrawn (p_theta conditioned on a non-empty output)
            return " ".join(out), logp / len(out)
