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

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: oracle only (no SmolLM2), 2 seeds. Measured: 15 s for the whole notebook (repro run, 2 shared cores;
    # 7 s inside the chapter)
    "smoke": dict(_COMMON, budgets=(100, 200), seeds=(0, 1), betas=(0.3, 0.7), bandit_T=(100, 1000, 10000),
                  n_fresh=5000,
                  smollm2=dict(enabled=False, max_digits=1, forms=("free_text", "true_false"),
                               base_per_stratum=4, budget=40, seeds=(0,), k=8, rule_probes=20,
                               greedy_checks=4, batch_size=16)),
    # book: oracle x 5 seeds at B = 100/200/500, and SmolLM2 (3 seeds, B = 100). Measured: 134 s for the whole
    # notebook (126 s inside: SmolLM2 searches 63, SmolLM2 rules/fresh probes 46, modes 4.5, strategies 2.1)
    "book": dict(_COMMON, budgets=(100, 200, 500), seeds=(0, 1, 2, 3, 4), betas=(0.1, 0.3, 0.5, 0.7, 0.9),
                 bandit_T=(100, 1000, 10000), n_fresh=20000,
                 smollm2=dict(enabled=True, max_digits=1, forms=("free_text", "true_false"),
                              base_per_stratum=4, budget=100, seeds=(0, 1, 2), k=8, rule_probes=100,
                              greedy_checks=12, batch_size=16)),
    # full: 10 seeds, B up to 1000, SmolLM2 at B = 500. Not run; estimated from the book sections scaled by their
    # work: oracle x4 ~30 s, SmolLM2 searches x5 ~5 min, rules and fresh probes on a ~5x larger landscape ~3-4 min:
    # about 9-10 min on 2 shared cores, well inside 45 min. No GPU variant (icml26.llm runs on the CPU).
    "full": dict(_COMMON, budgets=(100, 200, 500, 1000), seeds=tuple(range(10)), betas=(0.1, 0.3, 0.5, 0.7, 0.9),
                 bandit_T=(100, 1000, 10000), n_fresh=40000,
                 smollm2=dict(enabled=True, max_digits=1, forms=("free_text", "true_false"),
                              base_per_stratum=4, budget=500, seeds=(0, 1, 2), k=8, rule_probes=100,
                              greedy_checks=24, batch_size=16)),
}
