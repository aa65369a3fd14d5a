"""Benchmark cases in the official DATASET.md record schema, and the creation/editing case generators.

Creation covers all 120 combinations of the seven dimensions with k = 2..7 references; per-k counts follow
the data card (210/613/622/304/109/14 at the paper's size, scaled otherwise, at least one case per
combination). Editing covers the 22 atomic subtasks and Hybrid in the data card's percentages.
A record carries ``pool_names`` (image -> concept), ``combination``, ``sources``, ``prompts`` (short, en),
``PF_prompt``, ``CC_prompt`` (image -> question) and ``result``; editing adds ``task_type``, ``task_subtype``
and ``IF_prompt``, and its ``input_1`` is the edit target, exactly as the official schema, so a real VLM
judge could read them unchanged. The integer configuration used by the oracle rides along in ``_config``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from math import comb

import numpy as np

from .concepts import DEFAULT, DIMENSIONS, N_DIMS, check_dimensions, check_space, value_names
from .datacard import EDITING_SUBTASKS, GLOBAL_EDITS

COMBINATIONS: tuple[tuple[int, ...], ...] = tuple(c for k in range(2, N_DIMS + 1) for c in combinations(range(N_DIMS), k))
"""All 120 combinations of k = 2..7 dimensions (index tuples)."""
PAPER_PER_K = {2: 210, 3: 613, 4: 622, 5: 304, 6: 109, 7: 14}


def per_k_counts(n_total: int) -> dict[int, int]:
    """Cases per k: the paper's per-k counts scaled to ``n_total`` (largest remainder), at least C(7, k)."""
    if n_total < len(COMBINATIONS):
        raise ValueError(f"need at least {len(COMBINATIONS)} creation cases (one per combination), got {n_total}")
    base = {k: comb(N_DIMS, k) for k in PAPER_PER_K}
    extra = n_total - sum(base.values())
    want = {k: max(0.0, PAPER_PER_K[k] * n_total / 1872 - base[k]) for k in PAPER_PER_K}
    scale = extra / sum(want.values()) if sum(want.values()) else 0.0
    raw = {k: want[k] * scale for k in want}
    out = {k: base[k] + int(np.floor(raw[k])) for k in raw}
    left = n_total - sum(out.values())
    for k in sorted(raw, key=lambda k: raw[k] - np.floor(raw[k]), reverse=True)[:left]:
        out[k] += 1
    return out


@dataclass
class Case:
    """One benchmark case: the record (official schema) plus what the generators and evaluators need."""

    record: dict
    dims: tuple[int, ...]            # referenced dimensions (creation) / edited dimensions (editing)
    values: tuple[int, ...]          # their target values
    config: np.ndarray               # the target configuration (9 ints)
    source: np.ndarray | None = None  # editing: the source configuration
    ops: tuple[int, ...] = ()        # editing: 0 = set to the reference's value, 1 = remove (reset to default)
    category: str = "creation"
    text: tuple[int, int] = (0, 0)
    extra: dict = field(default_factory=dict)

    @property
    def k(self) -> int:
        return len(self.dims)


def _prompt(dims, values, V, text) -> tuple[dict, str, dict]:
    parts = [f"the {DIMENSIONS[d].lower()} of image {i + 1} ({value_names(d, V)[v]})" for i, (d, v) in enumerate(zip(dims, values))]
    tone = "bright" if text[0] == 0 else "dim"
    frame = "with a thin white frame" if text[1] == 1 else "without a frame"
    en = f"Create one {tone} image, {frame}, that combines " + ", ".join(parts) + "."
    pf = (f"Check the image against the prompt: is it {tone}? is it {frame}? " +
          " ".join(f"Does it show {value_names(d, V)[v]} as its {DIMENSIONS[d].lower()}?" for d, v in zip(dims, values)))
    cc = {f"image{i + 1}": f"Is the {DIMENSIONS[d].lower()} of the reference preserved in the output?" for i, d in enumerate(dims)}
    return {"short": f"{tone}, {len(dims)} concepts", "en": en}, pf, cc


def creation_cases(n_total: int, V: int, seed: int) -> list[Case]:
    """Creation cases over all 120 combinations, per-k counts from `per_k_counts`, random sub-classes."""
    check_space(32, V)
    rng = np.random.default_rng(seed)
    counts = per_k_counts(n_total)
    cases = []
    for k, n in counts.items():
        combos = [c for c in COMBINATIONS if len(c) == k]
        order = [combos[i % len(combos)] for i in range(n)]
        for j, dims in enumerate(order):
            values = tuple(int(v) for v in rng.integers(0, V, size=k))
            text = (int(rng.integers(0, 2)), int(rng.integers(0, 2)))
            cfg = np.full(N_DIMS + 2, DEFAULT)
            cfg[list(dims)] = values
            cfg[-2:] = text
            prompts, pf, cc = _prompt(dims, values, V, text)
            rec = {"case_id": f"create_k{k}_{j:04d}",
                   "pool_names": {f"image{i + 1}": DIMENSIONS[d] for i, d in enumerate(dims)},
                   "combination": "+".join(DIMENSIONS[d] for d in dims),
                   "sources": [f"mice-mini/{DIMENSIONS[d]}/{v}.png" for d, v in zip(dims, values)],
                   "prompts": prompts, "PF_prompt": pf, "CC_prompt": cc, "result": {}}
            cases.append(Case(rec, tuple(dims), values, cfg, category="creation", text=text))
    return cases


def editing_counts(n_total: int) -> dict[tuple[str, str], int]:
    """Editing cases per subtask: the data card's percentages, largest remainder, at least 1 each."""
    keys = list(EDITING_SUBTASKS)
    if n_total < len(keys):
        raise ValueError(f"need at least {len(keys)} editing cases (one per subtask), got {n_total}")
    pct = np.array([EDITING_SUBTASKS[k][0] for k in keys])
    raw = pct / pct.sum() * n_total
    out = np.maximum(np.floor(raw).astype(int), 1)
    while out.sum() < n_total:
        out[np.argmax(raw - out)] += 1
    while out.sum() > n_total:
        out[np.argmax(out - raw)] -= 1
    return dict(zip(keys, out.tolist()))


def editing_cases(n_total: int, V: int, seed: int) -> list[Case]:
    """Editing cases: a random source configuration, 1-4 edited dimensions, their references."""
    check_space(32, V)
    rng = np.random.default_rng(seed + 7919)
    cases = []
    for (cat, sub), n in editing_counts(n_total).items():
        main = EDITING_SUBTASKS[(cat, sub)][1][0]
        for j in range(n):
            src = np.full(N_DIMS + 2, DEFAULT)
            present = rng.random(N_DIMS) < 0.6
            src[:N_DIMS] = np.where(present, rng.integers(0, V, N_DIMS), DEFAULT)
            src[-2:] = rng.integers(0, 2, 2)
            dims = [DIMENSIONS.index(main)]
            if cat == "Hybrid":
                others = [d for d in range(N_DIMS) if d != dims[0]]
                dims += list(rng.choice(others, size=int(rng.integers(1, 4)), replace=False))
            tgt = src.copy()
            ops, values = [], []
            for d in dims:
                if cat == "Remove":
                    if src[d] == DEFAULT:
                        src[d] = int(rng.integers(0, V))
                    ops.append(1)
                    values.append(int(src[d]))       # the reference shows what to remove
                    tgt[d] = DEFAULT
                else:
                    if cat == "Add":
                        src[d] = DEFAULT
                    choices = [v for v in range(V) if v != src[d]]
                    v = int(rng.choice(choices))
                    ops.append(0)
                    values.append(v)
                    tgt[d] = v
            tgt[:] = np.where(np.arange(N_DIMS + 2) < N_DIMS, tgt, src)
            rec = {"case_id": f"edit_{cat}_{sub}_{j:03d}", "task_type": cat, "task_subtype": sub,
                   "pool_names": {"input_1": "target", **{f"image{i + 2}": DIMENSIONS[d] for i, d in enumerate(dims)}},
                   "combination": "+".join(DIMENSIONS[d] for d in dims),
                   "sources": ["mice-mini/source.png"] + [f"mice-mini/{DIMENSIONS[d]}/{v}.png" for d, v in zip(dims, values)],
                   "prompts": {"short": f"{cat} {sub}", "en": f"{cat} the {sub} of image 1 using " +
                               ", ".join(f"image {i + 2}" for i in range(len(dims))) + "."},
                   "IF_prompt": f"Was the instruction '{cat} {sub}' carried out?",
                   "CC_prompt": {f"image{i + 2}": f"Is the {DIMENSIONS[d].lower()} of the reference "
                                 f"{'removed from' if o else 'present in'} the output?" for i, (d, o) in enumerate(zip(dims, ops))},
                   "result": {}}
            cases.append(Case(rec, tuple(int(d) for d in dims), tuple(values), tgt, source=src.copy(), ops=tuple(ops),
                              category=cat, text=(int(src[-2]), int(src[-1])), extra={"subtask": sub,
                                                                                     "global": cat in GLOBAL_EDITS}))
    return cases


CREATION_KEYS = ("case_id", "pool_names", "combination", "sources", "prompts", "PF_prompt", "CC_prompt", "result")
EDITING_KEYS = ("case_id", "task_type", "task_subtype", "pool_names", "combination", "sources", "prompts", "IF_prompt",
                "CC_prompt", "result")


def validate_record(record: dict, track: str = "creation") -> dict:
    """Check a record against the DATASET.md schema (keys and types; k and reference counts); returns it."""
    if track not in ("creation", "editing"):
        raise ValueError(f"track must be 'creation' or 'editing', got {track!r}")
    if not isinstance(record, dict):
        raise ValueError(f"a record is a dict, got {type(record).__name__}")
    keys = CREATION_KEYS if track == "creation" else EDITING_KEYS
    missing = [k for k in keys if k not in record]
    if missing:
        raise ValueError(f"record {record.get('case_id', '?')} lacks the schema field(s) {missing}")
    for k in ("pool_names", "prompts", "CC_prompt", "result"):
        if not isinstance(record[k], dict):
            raise ValueError(f"record field {k!r} must be a dict")
    if not isinstance(record["sources"], list) or not all(isinstance(s, str) for s in record["sources"]):
        raise ValueError("record field 'sources' must be a list of paths")
    if not {"short", "en"} <= set(record["prompts"]):
        raise ValueError("record field 'prompts' needs 'short' and 'en'")
    concepts = [v for k, v in record["pool_names"].items() if k != "input_1"]
    check_dimensions(concepts)
    n = len(concepts)
    if track == "creation" and not 2 <= n <= N_DIMS:
        raise ValueError(f"a creation case references k = 2..7 concepts, got {n}")
    if track == "editing":
        if record["pool_names"].get("input_1") != "target":
            raise ValueError("an editing record's input_1 must be the edit target")
        if not 1 <= n <= 4:
            raise ValueError(f"an editing case has 1..4 references, got {n}")
    if len(record["sources"]) != len(record["pool_names"]):
        raise ValueError("record: one source path per pool image")
    return record
