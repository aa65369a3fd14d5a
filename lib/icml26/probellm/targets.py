"""The models under test, all behind one call: ``target.query(items, labels) -> failures``.

* `PlantedOracle`: a rule-based stand-in for a model with known failure modes. Each planted mode is an
  exact predicate on the item and a failure rate f_m; whether the oracle fails on an item is a fixed
  function of the item (a keyed hash below f_m), like a greedy decoder, so its whole failure map is known
  and enumerable. On a failure it answers with the mode's *mechanism* (a dropped carry, a borrow error,
  an off-by-one, echoing an operand, picking the smaller number), which is what the failure signature
  psi of `modes` reads.
* `SmolLM2Target`: the real SmolLM2-135M-Instruct (`icml26.llm`). Chat template, then a forced
  assistant prefix (``"a op b ="`` for free text); the verdict on a free-text item is teacher-forced:
  correct iff the argmax at every gold token is that token and the next argmax is not a digit, which is
  exactly what greedy decoding would output (claim P11 checks it). Multiple-choice and true/false
  items are judged by option mass (the larger logit among `` A``..`` D`` / `` true``, `` false``).
"""
from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .space import SYMBOL, Item, Space, options, render, tens, truth_value, verify


@dataclass(frozen=True)
class Mode:
    """A planted failure mode: a predicate on (op, a, b, form, template), a failure rate and a mechanism."""

    name: str
    text: str
    predicate: Callable  # (op, a, b, form, template) -> bool; numpy-vectorised over a, b
    rate: float
    wrong: Callable      # (item) -> the wrong numeric answer the oracle gives


PLANTED_MODES: tuple[Mode, ...] = (
    Mode("M1", "op=+ AND free_text AND tens_a + tens_b >= 15 (carry blindness)",
         lambda op, a, b, f, t: (op == "+") & (f == "free_text") & (tens(a) + tens(b) >= 15), 0.9,
         lambda it: it.a + it.b - 100),
    Mode("M2", "op=- AND a >= 100 AND units_b = 7 AND units_a < 7 (borrow hole)",
         lambda op, a, b, f, t: (op == "-") & (a >= 100) & (b % 10 == 7) & (a % 10 < 7), 0.7,
         lambda it: it.a - it.b + 10),
    Mode("M3", "op=* AND true_false AND (a = 9 OR b = 9) (noisy x9)",
         lambda op, a, b, f, t: (op == "*") & (f == "true_false") & ((a == 9) | (b == 9)), 0.6,
         lambda it: it.a * it.b + 1),
    Mode("M4", "op=+ AND free_text AND template 'What is a plus b?' AND a >= 500 (format shift)",
         lambda op, a, b, f, t: (op == "+") & (f == "free_text") & (t == 1) & (a >= 500), 0.8, lambda it: it.a),
    Mode("M5", "op=cmp AND multiple_choice AND a // 10 = b // 10 (close comparison)",
         lambda op, a, b, f, t: (op == "cmp") & (f == "multiple_choice") & (a // 10 == b // 10), 0.7,
         lambda it: min(it.a, it.b)),
)
BACKGROUND_RATE = 0.005


def _ndigits(x):
    x = np.asarray(x)
    return np.where(x < 10, 1, np.where(x < 100, 2, np.where(x < 1000, 3, 4)))


def _shorter_leads_with_9(a, b):
    """The operands' lengths differ and the shorter one's leading digit is 9 (numpy-vectorised)."""
    la, lb = _ndigits(a), _ndigits(b)
    a, b = np.asarray(a), np.asarray(b)
    lead = np.where(la < lb, a // 10 ** (la - 1), b // 10 ** (lb - 1))
    return (la != lb) & (lead == 9)


SECOND_ORACLE_SALT = "oracle-2"
PLANTED_MODES_2: tuple[Mode, ...] = (
    Mode("N1", "op=- AND free_text AND a >= 10 AND units_a = units_b != 0 (a result ending in 0: the trailing zero dropped)",
         lambda op, a, b, f, t: (op == "-") & (f == "free_text") & (np.asarray(a) >= 10)
         & (np.asarray(a) % 10 == np.asarray(b) % 10) & (np.asarray(a) % 10 != 0), 0.8, lambda it: (it.a - it.b) // 10),
    Mode("N2", "op=* AND multiple_choice AND units_a = 5 AND b even (a product ending in 0: the +10 distractor)",
         lambda op, a, b, f, t: (op == "*") & (f == "multiple_choice") & (np.asarray(a) % 10 == 5)
         & (np.asarray(b) % 2 == 0), 0.8, lambda it: it.a * it.b + 10),
    Mode("N3", "op=cmp AND free_text AND the lengths differ AND the shorter begins with 9 (leading-digit comparison)",
         lambda op, a, b, f, t: (op == "cmp") & (f == "free_text") & _shorter_leads_with_9(a, b), 0.7,
         lambda it: min(it.a, it.b)),
    Mode("N4", "op=- AND multiple_choice AND a >= 100 AND tens_a = tens_b (equal tens digits: the +100 distractor)",
         lambda op, a, b, f, t: (op == "-") & (f == "multiple_choice") & (np.asarray(a) >= 100) & (tens(a) == tens(b)),
         0.8, lambda it: it.a - it.b + 100),
    Mode("N5", "op=+ AND true_false AND units_a = 0 AND b >= 10 (a round first operand: the claim accepted wrongly)",
         lambda op, a, b, f, t: (op == "+") & (f == "true_false") & (np.asarray(a) % 10 == 0) & (np.asarray(b) >= 10),
         0.7, lambda it: it.a + it.b - 10),
)
"""The second oracle's modes (claim P1r2, the replication), declared in the issue 45 review revision after the
first oracle's runs had been seen and before any search on these: new predicates, new failure mechanisms and a new
hash salt, none tied to carries or borrows (the micro move ``carry`` encodes those), none filling more than about a
tenth of any macro stratum (`PlantedOracle.stratum_prevalence`), at prevalences like the first oracle's. Each
wrong answer is the mode's mechanism, as for `PLANTED_MODES`."""


def _unit_hash(item: Item, salt: str) -> float:
    h = hashlib.blake2b(f"{salt}|{item.op}|{item.a}|{item.b}|{item.form}|{item.template}|{item.variant}".encode(),
                        digest_size=8).digest()
    return int.from_bytes(h, "little") / 2.0**64


def _answer_as(item: Item, value: int, gold):
    """Express a (wrong) numeric answer in the item's form."""
    if item.form == "free_text":
        return int(value)
    if item.form == "multiple_choice":
        opts = options(item)
        wrong = [i for i in range(len(opts)) if i != gold]
        return min(wrong, key=lambda i: (abs(opts[i] - value), i))
    return not gold


class PlantedOracle:
    """A deterministic target with planted failure modes `PLANTED_MODES` (exact predicates and rates)."""

    def __init__(self, space: Space, modes: Sequence[Mode] = PLANTED_MODES, background: float = BACKGROUND_RATE,
                 salt: str = "oracle"):
        if not 0 <= background < 1:
            raise ValueError(f"background rate must be in [0, 1), got {background}")
        for m in modes:
            if not 0 < m.rate <= 1:
                raise ValueError(f"mode {m.name}: rate must be in (0, 1], got {m.rate}")
        self.space, self.modes, self.background, self.salt = space, tuple(modes), background, salt
        self.n_queries = 0

    def membership(self, items: Sequence[Item]) -> np.ndarray:
        """(n, M) booleans: which planted modes each item lies in."""
        return np.array([[bool(m.predicate(it.op, it.a, it.b, it.form, it.template)) for m in self.modes]
                         for it in items], dtype=bool).reshape(len(items), len(self.modes))

    def fails_truly(self, item: Item) -> bool:
        inside = [m.rate for m in self.modes if m.predicate(item.op, item.a, item.b, item.form, item.template)]
        return _unit_hash(item, self.salt) < (max(inside) if inside else self.background)

    def answer(self, item: Item):
        """The oracle's answer in the item's form (int / option index / bool)."""
        gold = verify(self.space, item)
        if not self.fails_truly(item):
            return gold
        inside = [m for m in self.modes if m.predicate(item.op, item.a, item.b, item.form, item.template)]
        wrong = inside[0].wrong(item) if inside else truth_value(item) + 1 + int(_unit_hash(item, "bg") * 3)
        if item.form == "free_text" and wrong == gold:
            wrong = gold + 1
        return _answer_as(item, wrong, gold)

    def query(self, items: Sequence[Item], labels: Sequence | None = None) -> np.ndarray:
        """Failures (answer != label) of ``items``; ``labels`` default to the verified gold answers."""
        labels = [verify(self.space, it) for it in items] if labels is None else list(labels)
        if len(labels) != len(items):
            raise RuntimeError(f"{len(items)} items but {len(labels)} labels")
        self.n_queries += len(items)
        return np.array([self.answer(it) != lab for it, lab in zip(items, labels)], dtype=bool)

    def prevalence(self) -> tuple[np.ndarray, np.ndarray]:
        """``(p, q)``: p_m, the exact probability that a benchmark draw (`Space.sample`) lies in mode m, and
        q_m, the expected probability that it lies in m *and* fails (the rate of the most failure-prone
        mode containing it), by enumeration of the benchmark distribution (`prevalence_tables`)."""
        t = self._tables()
        return t[0].copy(), t[1].copy()

    def stratum_prevalence(self) -> tuple[np.ndarray, np.ndarray]:
        """(strata x modes) shares of each mode in each macro stratum, and of its failures
        (`prevalence_tables`)."""
        t = self._tables()
        return t[2].copy(), t[3].copy()

    def _tables(self):
        if getattr(self, "_prev", None) is None:
            self._prev = prevalence_tables(self.space, self.modes)
        return self._prev


def _n_of_length(k: np.ndarray) -> np.ndarray:
    """How many operands have ``k`` digits (0 counts as one digit)."""
    return np.where(k == 1, 10, 9 * 10 ** (k - 1))


def prevalence_tables(space: Space, modes: Sequence[Mode]):
    """``(p, q, p_strata, q_strata)`` by one exact enumeration of every operand pair.

    p[m] / q[m]: the probability that a benchmark draw (`Space.sample`: op, each operand's length, form and
    template uniform) lies in mode m / lies in m and fails (the rate of the most failure-prone mode containing it).
    p_strata[s, m] / q_strata[s, m]: the same for a macro draw inside stratum s (`Space.sample(rng, stratum)`:
    the longest operand has the stratum's length d, the other 1..d uniformly, the two orders equally likely), the
    macro tree's generator. A pair with lengths (la, lb) has probability 1 / (D^2 n(la) n(lb)) in a benchmark
    draw and (1 / 2d)(2 if la = lb = d else 1) / (n(la) n(lb)) in its stratum d = max(la, lb); ``-`` orders the
    pair, ``cmp`` redraws equal operands (the weights renormalised), and a true/false item's template is
    canonicalised away (`Item.canonical`). A mode that fills a large share of one stratum is found by the macro
    tree's stratum bandit almost for free: that share is the leak."""
    D, T, M = space.max_digits, space.n_templates, len(modes)
    a, b = np.meshgrid(np.arange(10 ** D, dtype=np.int32), np.arange(10 ** D, dtype=np.int32), indexing="ij")
    a, b = a.ravel(), b.ravel()
    la, lb = _ndigits(a), _ndigits(b)
    d = np.maximum(la, lb)
    base = 1.0 / (_n_of_length(la) * _n_of_length(lb))
    w_bench0 = base / D**2
    w_str0 = base / (2 * d) * np.where((la == lb) & (la == d), 2.0, 1.0)
    p, q = np.zeros(M), np.zeros(M)
    ps, qs = np.zeros((len(space.strata), M)), np.zeros((len(space.strata), M))
    index = {s: i for i, s in enumerate(space.strata)}
    c = 1.0 / (len(space.ops) * len(space.forms))
    for op in space.ops:
        x, y = (np.maximum(a, b), np.minimum(a, b)) if op == "-" else (a, b)
        w_bench, w_str = w_bench0, w_str0
        if op == "cmp":  # equal pairs are redrawn: renormalise (the benchmark overall, each stratum on its own)
            keep = a != b
            w_bench = np.where(keep, w_bench0, 0.0)
            w_bench = w_bench / w_bench.sum()
            w_k = np.where(keep, w_str0, 0.0)
            w_str = w_k / np.bincount(d - 1, weights=w_k, minlength=D)[d - 1]
        for f in space.forms:
            ts = np.array([0]) if f == "true_false" else np.arange(T)
            masks = [np.broadcast_to(np.asarray(m.predicate(op, x, y, f, ts[:, None]), dtype=bool), (len(ts), x.size))
                     for m in modes]
            hit = np.flatnonzero(np.any([mk.any(0) for mk in masks], axis=0))  # the modes are sparse: work on their pairs
            if not hit.size:
                continue
            sub = [mk[:, hit] for mk in masks]
            top = np.max([mk * m.rate for mk, m in zip(sub, modes)], axis=0)  # (templates, hit pairs)
            for j, mk in enumerate(sub):
                share, fail = mk.mean(0), (mk * top).mean(0)  # templates uniform
                p[j] += c * float(share @ w_bench[hit])
                q[j] += c * float(fail @ w_bench[hit])
                sp_ = np.bincount(d[hit] - 1, weights=share * w_str[hit], minlength=D)
                sq_ = np.bincount(d[hit] - 1, weights=fail * w_str[hit], minlength=D)
                for k in range(D):
                    ps[index[(op, k + 1, f)], j], qs[index[(op, k + 1, f)], j] = sp_[k], sq_[k]
    return p, q, ps, qs


class SmolLM2Target:
    """SmolLM2-135M-Instruct as the model under test (teacher-forced / option-mass verdicts, batched)."""

    LETTERS = (" A", " B", " C", " D")
    TF = (" true", " false")

    def __init__(self, space: Space, model=None, batch_size: int = 16):
        if model is None:
            from icml26.llm import load_smollm2

            model = load_smollm2()
        self.space, self.lm, self.tok, self.batch_size = space, model, model.tokenizer, batch_size
        a, b = self.tok.chat([{"role": "user", "content": "1"}]), self.tok.chat([{"role": "user", "content": "2"}])
        n = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        self.header = a[:n]
        self.letter_ids = [self.tok.token_id(s) for s in self.LETTERS]
        self.tf_ids = [self.tok.token_id(s) for s in self.TF]
        self.digit_ids = {self.tok.token_id(str(d)) for d in range(10)}
        self.n_queries = 0

    def with_space(self, space: Space) -> "SmolLM2Target":
        """The same model (shared weights, tokenizer and counters' start) judging items of another ``space``: a new
        target object, so the caller's target keeps its own space whatever happens (no state to restore)."""
        other = copy.copy(self)
        other.space = space
        return other

    def forced_prefix(self, item: Item) -> str:
        if item.form == "free_text":
            return f"{item.a} {SYMBOL[item.op]} {item.b} =" if item.op != "cmp" else "The larger number is"
        return "The answer is" if item.form == "multiple_choice" else "The statement is"

    def _encode(self, item: Item, label):
        text = self.tok.render([{"role": "user", "content": render(item)}]) + self.forced_prefix(item)
        ids = self.tok.encode(text)
        if ids[:len(self.header)] != self.header:
            raise RuntimeError("the chat header does not tokenise as a prefix")
        if item.form != "free_text":
            return ids[len(self.header):], [len(ids) - len(self.header) - 1], []
        full = self.tok.encode(text + f" {int(label)}")
        if full[:len(ids)] != ids:
            raise RuntimeError(f"{item}: the forced prefix does not tokenise as a prefix of the answer")
        gold = full[len(ids):]
        suffix = full[len(self.header):]
        start = len(ids) - len(self.header) - 1
        return suffix, list(range(start, start + len(gold) + 1)), gold

    def query(self, items: Sequence[Item], labels: Sequence | None = None, return_details: bool = False):
        """Failures of ``items`` against ``labels`` (default: verified gold). With ``return_details`` also
        the final hidden states and a per-item failure signature (first wrong answer position / length,
        whether the wrong token is a digit)."""
        items = list(items)
        labels = [verify(self.space, it) for it in items] if labels is None else list(labels)
        if len(labels) != len(items):
            raise RuntimeError(f"{len(items)} items but {len(labels)} labels")
        enc = [self._encode(it, lab) for it, lab in zip(items, labels)]
        suffixes = [e[0] for e in enc]
        at = [e[1] for e in enc]  # free text: every gold answer token and the one after; else the last position
        logits, hidden = self.lm.score(self.header, suffixes, at, batch_size=self.batch_size, return_hidden=True)
        self.n_queries += len(items)
        fails, sig = [], []
        for it, lab, e, lg in zip(items, labels, enc, logits):
            if len(lg) != len(at[len(fails)]):
                raise RuntimeError("verdict/item count mismatch")
            if it.form == "free_text":
                gold = e[2]
                arg = lg.argmax(-1).tolist()
                wrong = [i for i, g in enumerate(gold) if arg[i] != g]
                ends = arg[len(gold)] not in self.digit_ids
                fail = bool(wrong) or not ends
                first = wrong[0] if wrong else len(gold)
                tok = arg[first] if first < len(arg) else -1
                sig.append([first / max(1, len(gold)), float(tok in self.digit_ids)])
            elif it.form == "multiple_choice":
                n = len(options(it))
                pick = int(lg[0, self.letter_ids[:n]].argmax())
                fail = pick != lab
                sig.append([float(pick) / 3, 0.0])
            else:
                pick = bool(lg[0, self.tf_ids[0]] >= lg[0, self.tf_ids[1]])
                fail = pick != bool(lab)
                sig.append([float(pick), 0.0])
            fails.append(fail)
        fails = np.array(fails, dtype=bool)
        if return_details:
            return fails, hidden.numpy(), np.asarray(sig, dtype=float)
        return fails

    def answers(self, items: Sequence[Item]) -> list:
        """SmolLM2's own answers to closed-form items, in the form `verify` returns (the option index for
        multiple choice, a bool for true/false): the labels an unverified pipeline would get from it as its
        test writer (the real-noise "cleaner" comparison, claim P2). One forward per item, option mass."""
        items = list(items)
        if any(it.form == "free_text" for it in items):
            raise ValueError("answers() reads closed-form items only (multiple_choice, true_false)")
        enc = [self._encode(it, None) for it in items]
        logits = self.lm.score(self.header, [e[0] for e in enc], [e[1] for e in enc], batch_size=self.batch_size)
        self.n_queries += len(items)
        out = []
        for it, lg in zip(items, logits):
            if it.form == "multiple_choice":
                out.append(int(lg[0, self.letter_ids[:len(options(it))]].argmax()))
            else:
                out.append(bool(lg[0, self.tf_ids[0]] >= lg[0, self.tf_ids[1]]))
        return out

    def greedy_answer(self, item: Item, max_new_tokens: int = 8) -> str:
        """Free generation after the same forced prefix (for the teacher-forcing = greedy check)."""
        if item.form != "free_text":
            raise ValueError("greedy_answer is for free-text items")
        text = self.tok.render([{"role": "user", "content": render(item)}]) + self.forced_prefix(item)
        return self.tok.decode(self.lm.greedy(self.tok.encode(text), max_new_tokens=max_new_tokens))
