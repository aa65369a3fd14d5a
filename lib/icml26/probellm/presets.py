"""Sizes of the probellm chapter at the three scales (DESIGN.md "Three scales, one notebook").

Every preset has the same keys. Wall times of the whole notebook (``repro run probellm``, one thread,
2-core machine shared with other jobs) are written next to each preset.
"""
from __future__ import annotations

import math
from typing import Any

_COMMON: dict[str, Any] = dict(
    max_digits=3, C=math.sqrt(2), n_seeds_tree=10, width=3, lam=2.0, n_pca=16, min_cluster_size=5,
    n_neighbours=10, reserve_frac=0.1, eta=0.1, min_failures=3, static_repeats=20,
    strategies=("static", "random", "micro", "macro", "H"),
    bandit_rates=(0.05, 0.15, 0.3, 0.5), bandit_runs=20,
    widget_budget=300,
)
# target (b), the trained tiny LM (`tinylm.TinyArithLM`): its space is the chapter's Space restricted to free-text
# + and - with operands < 100 (60,200 items, enumerated exactly); measured modes: regions failing at >= min_rate and
# >= min_ratio x the background (fixed before any run). The search seeds and budgets are the chapter's.
# Recipe: operands written as two digits (`TinyArithLM.prompt`) and lr 6e-3, chosen on dev runs that read only the
# enumerated failure map (d 64, 1200 steps, seed 0; background = failure rate outside every region): raw operands
# at lr 3e-3 0.46 (the first book run), raw at 6e-3 0.40, padded at 3e-3 0.65, padded at 6e-3 0.107 (seed 1: 0.118),
# padded at 1e-2 0.18. No search was run on these models. Measured: ~55 s training + ~12 s enumeration per model.
TINY_SMOKE_STEPS, TINY_BOOK_STEPS = 300, 1200
_TINY = dict(ops=("+", "-"), max_digits=2, n_layers=2, n_heads=4, lr=6e-3, pad_operands=True, min_rate=0.2,
             min_ratio=3.0)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: oracle only (no SmolLM2), 4 seeds: with 2 the Student-t interval of contract v3 (multiplier 12.7)
    # could decide nothing (P2a 0.76 +- 0.24 -> [-2.3, 3.8] at 2 seeds). Measured with 2 seeds: 15 s for the
    # whole notebook (repro run, 2 shared cores; 7 s inside the chapter)
    "smoke": dict(_COMMON, budgets=(100, 200), seeds=(0, 1, 2, 3), betas=(0.3, 0.7), bandit_T=(100, 1000, 10000),
                  n_fresh=5000,
                  smollm2=dict(enabled=False, max_digits=1, forms=("free_text", "true_false"),
                               base_per_stratum=4, budget=40, seeds=(0,), k=8, rule_probes=20,
                               greedy_checks=4, batch_size=16),
                  tiny=dict(_TINY, d_model=48, steps=TINY_SMOKE_STEPS, batch_size=128, control=False)),
    # book: oracle x 5 seeds at B = 100/200/500, and SmolLM2 (3 seeds, B = 100). Measured: 134 s for the whole
    # notebook (126 s inside: SmolLM2 searches 63, SmolLM2 rules/fresh probes 46, modes 4.5, strategies 2.1)
    "book": dict(_COMMON, budgets=(100, 200, 500), seeds=(0, 1, 2, 3, 4), betas=(0.1, 0.3, 0.5, 0.7, 0.9),
                 bandit_T=(100, 1000, 10000), n_fresh=20000,
                 smollm2=dict(enabled=True, max_digits=1, forms=("free_text", "true_false"),
                              base_per_stratum=4, budget=100, seeds=(0, 1, 2), k=8, rule_probes=100,
                              greedy_checks=12, batch_size=16),
                 tiny=dict(_TINY, d_model=64, steps=TINY_BOOK_STEPS, batch_size=128, control=True)),
    # full: 10 seeds, B up to 1000, SmolLM2 at B = 500. Not run; estimated from the book sections scaled by their
    # work: oracle x4 ~30 s, SmolLM2 searches x5 ~5 min, rules and fresh probes on a ~5x larger landscape ~3-4 min:
    # about 9-10 min on 2 shared cores, well inside 45 min. No GPU variant (icml26.llm runs on the CPU).
    "full": dict(_COMMON, budgets=(100, 200, 500, 1000), seeds=tuple(range(10)), betas=(0.1, 0.3, 0.5, 0.7, 0.9),
                 bandit_T=(100, 1000, 10000), n_fresh=40000,
                 smollm2=dict(enabled=True, max_digits=1, forms=("free_text", "true_false"),
                              base_per_stratum=4, budget=500, seeds=(0, 1, 2), k=8, rule_probes=100,
                              greedy_checks=24, batch_size=16),
                 tiny=dict(_TINY, d_model=64, steps=TINY_BOOK_STEPS, batch_size=128, control=True)),
}
