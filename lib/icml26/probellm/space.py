"""The probe space: verifiable arithmetic items, the benchmark ("static") distribution, strata and micro moves.

An `Item` is one test case in one of the toolkit docs' three forms (free_text, multiple_choice,
true_false), for one operation (``+``, ``-`` with a >= b, ``*``, ``cmp`` = "which is larger"), with a
paraphrase template and, for the closed forms, a variant (the option order / the claimed value).
`verify` is the ``python_exec`` tool of the docs: the ground truth is exact Python arithmetic on the
canonical item, never a model; an item outside the space, or with no computable truth (a comparison of
equal numbers), is a `ValueError`, never a failure. The stand-in for the docs' LLM tool planner is a
programmatic generator: `Space.sample` (macro: a fresh seed, optionally inside one stratum) and
`Space.perturb` (micro: operand +-1/+-10, swap, paraphrase, form change, carry toggle, extra digit,
option shuffle; the set is the space's ``moves``). Strata (op x longest operand length x form) are the
``HierarchicalSampler``'s cells. They are coarser than most planted modes, **not all**: the oracle's M5 fills the
whole stratum (cmp, 1 digit, multiple choice) and M3 a fifth of (*, 1 digit, true/false), so the macro tree's
stratum bandit finds those two almost for free (`targets.PlantedOracle.stratum_prevalence` gives every mode's share of every
stratum; the second oracle's modes fill at most about a tenth of any).

``holdout`` (a fraction) splits the distinct prompts by a keyed hash of their rendered text into a held-out part
and a search part, before any search: with ``holdout_side="search"`` the held-out prompts lie outside the space
(`check` rejects them, so `sample` and `perturb` never produce them), with ``"heldout"`` only they lie inside. A
rule can then be tested on prompts no search could have asked (claim P10).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

OPS = ("+", "-", "*", "cmp")
FORMS = ("free_text", "multiple_choice", "true_false")
TEMPLATES = {
    "+": ("{a}+{b}=", "What is {a} plus {b}?", "Compute {a} + {b}.", "Add {a} and {b}."),
    "-": ("{a}-{b}=", "What is {a} minus {b}?", "Compute {a} - {b}.", "Subtract {b} from {a}."),
    "*": ("{a}*{b}=", "What is {a} times {b}?", "Compute {a} * {b}.", "Multiply {a} by {b}."),
    "cmp": ("max({a},{b})=", "Which is larger, {a} or {b}?", "Compare {a} and {b}: which is bigger?",
            "Give the larger of {a} and {b}."),
}
SYMBOL = {"+": "+", "-": "-", "*": "*"}
MICRO_MOVES = ("a+-1", "a+-10", "b+-1", "b+-10", "swap", "paraphrase", "form", "carry", "digit", "shuffle")


@dataclass(frozen=True, order=True)
class Item:
    """One canonical test case; equal items are duplicates (canonical dedup)."""

    op: str
    a: int
    b: int
    form: str = "free_text"
    template: int = 0
    variant: int = 0

    def canonical(self) -> "Item":
        """The representative of the item's rendered prompt (dedup on what the model is asked): free text
        ignores the variant; true/false ignores the template (`render` states the claim only) and keeps the
        smallest variant making the same claim; multiple choice keeps the smallest variant with the same
        option order (a comparison has only two)."""
        if self.form == "free_text":
            return replace(self, variant=0) if self.variant else self
        if self.form == "true_false":
            c = claimed(self)
            v = next(v for v in range(self.variant + 1) if claimed(replace(self, variant=v)) == c)
            return replace(self, template=0, variant=v)
        o = options(self)
        v = next(v for v in range(self.variant + 1) if options(replace(self, variant=v)) == o)
        return replace(self, variant=v) if v != self.variant else self


def ndigits(x: int) -> int:
    return len(str(abs(int(x))))


def truth_value(item: Item) -> int:
    """The exact numeric answer (python_exec); a `ValueError` when there is none."""
    if item.op == "+":
        return item.a + item.b
    if item.op == "-":
        return item.a - item.b
    if item.op == "*":
        return item.a * item.b
    if item.op == "cmp":
        if item.a == item.b:
            raise ValueError(f"{item}: a comparison of equal numbers has no larger one")
        return max(item.a, item.b)
    raise ValueError(f"unknown op {item.op!r}")


def options(item: Item) -> tuple[int, ...]:
    """The answer options of a multiple-choice item (the truth and three distractors, ordered by variant)."""
    return _options(item.op, item.a, item.b, item.variant)


@lru_cache(maxsize=1 << 18)
def _options(op: str, a: int, b: int, variant: int) -> tuple[int, ...]:
    item = Item(op, a, b, "multiple_choice", 0, variant)
    t = truth_value(item)
    if item.op == "cmp":
        opts = [item.a, item.b]
    else:
        distract = [d for d in (t + 1, t - 1, t + 10, t - 10, t + 100, t - 100) if d >= 0 and d != t]
        rng = np.random.default_rng(item.variant * 7919 + 17)
        opts = [t] + [int(d) for d in rng.choice(distract, size=3, replace=False)]
    perm = np.random.default_rng(item.variant).permutation(len(opts))
    return tuple(int(opts[i]) for i in perm)


def claimed(item: Item) -> int:
    """The value a true/false item claims: the truth for even variants, a near miss for odd ones."""
    t = truth_value(item)
    if item.variant % 2 == 0:
        return t
    if item.op == "cmp":
        return min(item.a, item.b)
    offsets = (1, -1, 10, -10, 2, 100)
    d = offsets[(item.variant // 2) % len(offsets)]
    return t + d if t + d >= 0 else t - d


@dataclass(frozen=True)
class Space:
    """Which items exist: operations, the longest operand length, forms, templates and variants."""

    ops: tuple[str, ...] = OPS
    max_digits: int = 3
    forms: tuple[str, ...] = FORMS
    n_templates: int = 4
    n_variants: int = 8
    moves: tuple[str, ...] = MICRO_MOVES
    holdout: float = 0.0
    holdout_side: str = "search"
    strata: tuple = field(init=False, repr=False)

    def __post_init__(self):
        bad = [o for o in self.ops if o not in OPS]
        if bad or not self.ops:
            raise ValueError(f"ops must be a non-empty subset of {OPS}, got {self.ops}")
        if [f for f in self.forms if f not in FORMS] or not self.forms:
            raise ValueError(f"forms must be a non-empty subset of {FORMS}, got {self.forms}")
        if not 1 <= self.max_digits <= 4:
            raise ValueError(f"max_digits must be in 1..4, got {self.max_digits}")
        if not 1 <= self.n_templates <= 4 or self.n_variants < 1:
            raise ValueError("n_templates must be in 1..4 and n_variants >= 1")
        if not self.moves or [m for m in self.moves if m not in MICRO_MOVES]:
            raise ValueError(f"moves must be a non-empty subset of {MICRO_MOVES}, got {self.moves}")
        if not 0 <= self.holdout < 1:
            raise ValueError(f"holdout must be a fraction in [0, 1), got {self.holdout}")
        if self.holdout_side not in ("search", "heldout"):
            raise ValueError(f"holdout_side must be 'search' or 'heldout', got {self.holdout_side!r}")
        object.__setattr__(self, "strata", tuple((o, d, f) for o in self.ops for d in range(1, self.max_digits + 1)
                                                 for f in self.forms))

    def is_heldout(self, item: Item) -> bool:
        """Whether the canonical ``item``'s rendered prompt falls in the held-out part (a keyed hash below
        ``holdout``); always False without a holdout."""
        if self.holdout <= 0:
            return False
        h = hashlib.blake2b(f"heldout|{render(item.canonical())}".encode(), digest_size=8).digest()
        return int.from_bytes(h, "little") / 2.0**64 < self.holdout

    # -- membership and truth --------------------------------------------------------------------------
    def check(self, item: Item) -> Item:
        """The canonical item if it lies in the space and has a computable truth, else a `ValueError`."""
        if not isinstance(item, Item):
            raise ValueError(f"not an Item: {item!r}")
        if item.op not in self.ops or item.form not in self.forms:
            raise ValueError(f"{item}: op/form outside the space {self.ops} x {self.forms}")
        hi = 10 ** self.max_digits
        if not (0 <= item.a < hi and 0 <= item.b < hi):
            raise ValueError(f"{item}: operands must lie in [0, {hi})")
        if item.op == "-" and item.a < item.b:
            raise ValueError(f"{item}: subtraction items need a >= b (non-negative results)")
        if not 0 <= item.template < self.n_templates or not 0 <= item.variant < self.n_variants:
            raise ValueError(f"{item}: template/variant index out of range")
        truth_value(item)
        canon = item.canonical()
        if self.holdout > 0 and self.is_heldout(canon) != (self.holdout_side == "heldout"):
            raise ValueError(f"{canon}: on the other side of the space's holdout split ({self.holdout_side} side)")
        return canon

    def stratum(self, item: Item) -> tuple[str, int, str]:
        return (item.op, max(ndigits(item.a), ndigits(item.b)), item.form)

    # -- the generators ---------------------------------------------------------------------------------
    def _operand(self, rng: np.random.Generator, digits: int) -> int:
        lo = 0 if digits == 1 else 10 ** (digits - 1)
        return int(rng.integers(lo, 10 ** digits))

    def sample(self, rng: np.random.Generator, stratum: tuple | None = None) -> Item:
        """A fresh item: from the benchmark distribution (op, each operand's length, form, template and
        variant uniform), or inside one stratum (its longest operand has exactly the stratum's length)."""
        for _ in range(1000):
            if stratum is None:
                op = self.ops[rng.integers(len(self.ops))]
                la, lb = (int(rng.integers(1, self.max_digits + 1)) for _ in range(2))
                form = self.forms[rng.integers(len(self.forms))]
            else:
                op, d, form = stratum
                la, lb = d, int(rng.integers(1, d + 1))
                if rng.random() < 0.5:
                    la, lb = lb, la
            a, b = self._operand(rng, la), self._operand(rng, lb)
            if op == "-" and a < b:
                a, b = b, a
            item = Item(op, a, b, form, int(rng.integers(self.n_templates)),
                        0 if form == "free_text" else int(rng.integers(self.n_variants)))
            try:
                return self.check(item)
            except ValueError:
                continue
        raise RuntimeError(f"could not draw a valid item in stratum {stratum}")

    def perturb(self, item: Item, rng: np.random.Generator, move: str | None = None) -> tuple[Item, str]:
        """A micro move of ``item`` (random among the space's ``moves`` unless ``move`` is given):
        ``(new item, move)``; moves that leave the space are re-drawn (a `RuntimeError` after 50 tries).
        ``moves`` without ``"carry"`` is the chapter's ablation of the one move that encodes a prior about
        the planted modes (a carry/borrow toggle)."""
        for _ in range(50):
            m = move or self.moves[rng.integers(len(self.moves))]
            a, b, form, tpl, var = item.a, item.b, item.form, item.template, item.variant
            sign = 1 if rng.random() < 0.5 else -1
            if m == "a+-1":
                a += sign
            elif m == "a+-10":
                a += 10 * sign
            elif m == "b+-1":
                b += sign
            elif m == "b+-10":
                b += 10 * sign
            elif m == "swap":
                a, b = b, a
            elif m == "paraphrase":
                tpl = (tpl + 1 + int(rng.integers(self.n_templates - 1))) % self.n_templates if self.n_templates > 1 else tpl
            elif m == "form":
                others = [f for f in self.forms if f != form]
                if not others:
                    continue
                form = others[rng.integers(len(others))]
                var = 0 if form == "free_text" else int(rng.integers(self.n_variants))
            elif m == "carry":  # toggle the units carry/borrow: move a's units digit across 10 - b's
                ua, ub = a % 10, b % 10
                if ub == 0:
                    continue
                target = int(rng.integers(10 - ub, 10)) if ua + ub < 10 else int(rng.integers(0, max(1, 10 - ub)))
                a = a - ua + target
            elif m == "digit":
                lead = int(rng.integers(1, 10))
                if rng.random() < 0.5:
                    a = lead * 10 ** ndigits(a) + a
                else:
                    b = lead * 10 ** ndigits(b) + b
            elif m == "shuffle":
                if form == "free_text" or self.n_variants < 2:
                    continue
                var = (var + 1 + int(rng.integers(self.n_variants - 1))) % self.n_variants
            else:
                raise ValueError(f"unknown micro move {m!r}; known: {MICRO_MOVES}")
            try:
                new = self.check(Item(item.op, a, b, form, tpl, var))
            except ValueError:
                if move is not None:
                    raise
                continue
            if new != item.canonical():
                return new, m
        raise RuntimeError(f"no valid micro move from {item}")


def verify(space: Space, item: Item):
    """The gold answer of ``item`` by exact evaluation (the docs' python_exec tool): an int for
    free_text, the index of the true option for multiple_choice, a bool for true_false."""
    item = space.check(item)
    t = truth_value(item)
    if item.form == "free_text":
        return t
    if item.form == "multiple_choice":
        return options(item).index(t)
    return claimed(item) == t


def noisy_label(space: Space, item: Item, eta: float, rng: np.random.Generator):
    """The generator's own label, wrong with probability ``eta`` (the noisy-generator ablation): the
    label an unverified pipeline would judge against."""
    if not 0 <= eta < 1:
        raise ValueError(f"eta must be in [0, 1), got {eta}")
    gold = verify(space, item)
    if rng.random() >= eta:
        return gold
    if item.form == "free_text":
        return gold + int(rng.choice([-1, 1])) * int(rng.integers(1, 10))
    if item.form == "multiple_choice":
        n = len(options(item))
        return (gold + 1 + int(rng.integers(n - 1))) % n
    return not gold


def render(item: Item) -> str:
    """The question text of an item (what a language model is asked)."""
    q = TEMPLATES[item.op][item.template].format(a=item.a, b=item.b)
    if item.form == "multiple_choice":
        opts = options(item)
        letters = "ABCD"[:len(opts)]
        q += " Options: " + " ".join(f"{l}) {o}" for l, o in zip(letters, opts)) + ". Answer with the letter."
    elif item.form == "true_false":
        v = claimed(item)
        stmt = (f"{item.a} {SYMBOL[item.op]} {item.b} = {v}" if item.op != "cmp"
                else f"the larger of {item.a} and {item.b} is {v}")
        q = f"True or false: {stmt}."
    return q


def carries_of(op: str, a, b):
    """Carries (``+``) or borrows (``-``) of a op b, numpy-vectorised over a, b (operands < 10^4)."""
    a, b = np.asarray(a), np.asarray(b)
    n, c = np.zeros(np.broadcast(a, b).shape, int), np.zeros(np.broadcast(a, b).shape, int)
    x, y = a.copy(), b.copy()
    for _ in range(4):
        c = ((x % 10 + y % 10 + c) >= 10).astype(int) if op == "+" else ((x % 10 - y % 10 - c) < 0).astype(int)
        n += c
        x, y = x // 10, y // 10
    return n


def fine_cell(item: Item) -> tuple[str, str, int, bool]:
    """The finer coverage cell of a canonical item (claim P9c): operation x form x template x whether a carry
    (``+``) or borrow (``-``) occurs (always False for ``*`` and ``cmp``). A true/false item's template is
    canonicalised to 0 (`Item.canonical`), so it has one template."""
    item = item.canonical()
    carry = bool(carries_of(item.op, item.a, item.b)) if item.op in ("+", "-") else False
    return (item.op, item.form, item.template, carry)


def tens(x):
    """The tens digit, numpy-vectorised."""
    return (x // 10) % 10


FEATURES = ("op_add", "op_sub", "op_mul", "op_cmp", "len_a", "len_b", "units_a", "units_b", "tens_a", "tens_b",
            "tens_sum", "units_sum", "carries", "template", "form_free", "form_mc", "form_tf", "log_answer", "absdiff_lt10")


def features(items) -> np.ndarray:
    """Interpretable features z(x) of items (`FEATURES`), the vocabulary of the induced rules."""
    rows = []
    for it in items:
        t = truth_value(it)
        carries = int(carries_of(it.op, it.a, it.b)) if it.op in ("+", "-") else 0
        rows.append([it.op == "+", it.op == "-", it.op == "*", it.op == "cmp", ndigits(it.a), ndigits(it.b),
                     it.a % 10, it.b % 10, it.a // 10 % 10, it.b // 10 % 10, it.a // 10 % 10 + it.b // 10 % 10,
                     it.a % 10 + it.b % 10, carries, it.template, it.form == "free_text",
                     it.form == "multiple_choice", it.form == "true_false", np.log10(1 + abs(t)),
                     abs(it.a - it.b) < 10])
    return np.asarray(rows, dtype=float).reshape(len(rows), len(FEATURES))
