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
    strategies=("static", "random", "micro", "macro", "H", "H_ucb", "H_sep", "H1"),
    # the rare-mode regime of the breadth claims: the budgets at which the static closed form recalls <= half the
    # modes and >= regime_floor of them (fixed from the closed form before any search, `experiments.regime_budgets`;
    # the floor is a power rule, added after a smoke run whose worst pair was a tie at 0 at B = 100, see its
    # docstring); H's macro share
    split=0.5, regime_level=0.5, regime_floor=0.1,
    # the fixed benchmark of the "broader than a static benchmark" comparison (issue 45, item 5): a narrower seed
    # distribution (<= 2-digit operands, free text, the first two templates), ProbeLLM seeded from it
    narrow=dict(max_digits=2, forms=("free_text",), n_templates=2, size=3000),
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
# smoke trains only to run the code path (every tiny-LM claim is judged at book and full): 150 steps since the
# issue 45 review revision, to keep smoke within its 60 s with the added ablations (300 before)
TINY_SMOKE_STEPS, TINY_BOOK_STEPS, TINY_FULL_STEPS = 150, 1200, 4000
_TINY = dict(ops=("+", "-"), max_digits=2, n_layers=2, n_heads=4, lr=6e-3, pad_operands=True, min_rate=0.2,
             min_ratio=3.0)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: oracle only (no SmolLM2), 4 seeds: with 2 the Student-t interval of contract v3 (multiplier 12.7)
    # could decide nothing. Measured (issue 45 review revision, 8 strategies + the no-carry ablation, 2 shared
    # cores): see the report
    # B = 300 is in the grid so that the smoke run has a budget in the rare-mode regime [0.1, 0.5] (the oracle's
    # closed form: 0.015 at 100, 0.079 at 200, 0.18 at 300)
    "smoke": dict(_COMMON, budgets=(100, 200, 300), seeds=(0, 1, 2, 3), betas=(0.3, 0.7), bandit_T=(100, 1000, 10000),
                  n_fresh=5000,
                  smollm2=dict(enabled=False, max_digits=1, forms=("free_text", "true_false"),
                               base_per_stratum=4, budget=40, seeds=(0,), k=8, rule_probes=20,
                               greedy_checks=4, batch_size=16, clean_budget=40),
                  tiny=dict(_TINY, d_model=48, steps=TINY_SMOKE_STEPS, batch_size=128, control=False)),
    # book: oracle x 30 seeds at B = 100/200/500 (issue 45: P3-P5 with 30-50 seeds), SmolLM2 (3 seeds, B = 100).
    # The last measured book run (5 seeds) took 257 s; 30 seeds add an estimated ~60 s of oracle searches and
    # induction (0.13 s per search at B = 500 measured at smoke sizes): ~320 s, not measured. The issue 45 review
    # revision adds H_sep, the no-carry ablation and P1x's static runs: ~25 s of oracle searches at 30 seeds (the
    # whole oracle grid, 11 strategies x 30 seeds at B = 500, measured 17.5 s on 2 shared cores): ~345 s
    "book": dict(_COMMON, budgets=(100, 200, 500), seeds=tuple(range(30)), betas=(0.3, 0.5, 0.7),
                 bandit_T=(100, 1000, 10000), n_fresh=20000,
                 smollm2=dict(enabled=True, max_digits=1, forms=("free_text", "true_false"),
                              base_per_stratum=4, budget=100, seeds=(0, 1, 2), k=8, rule_probes=100,
                              greedy_checks=12, batch_size=16, clean_budget=100),
                 tiny=dict(_TINY, d_model=64, steps=TINY_BOOK_STEPS, batch_size=128, control=True)),
    # full: 40 seeds, B up to 1000, SmolLM2 at B = 500, the tiny LM trained longer and wider (the brief's d 96).
    # The last full run (10 seeds, 1200 tiny steps) took 532 s; estimated now: oracle ~3 min (40 seeds x 12
    # strategies at B = 1000), tiny LM ~2 x 5.5 min (4000 steps at d 96, scaled from 55 s per 1200 steps at d 64),
    # SmolLM2 as before ~6 min: ~20 min on 2 shared cores, not measured (the review revision adds ~1 min: H_sep,
    # the no-carry ablation, P1x, and a second induction pass at B_test for the granularity table)
    "full": dict(_COMMON, budgets=(100, 200, 500, 1000), seeds=tuple(range(40)), betas=(0.1, 0.3, 0.5, 0.7, 0.9),
                 bandit_T=(100, 1000, 10000), n_fresh=40000,
                 smollm2=dict(enabled=True, max_digits=1, forms=("free_text", "true_false"),
                              base_per_stratum=4, budget=500, seeds=(0, 1, 2), k=8, rule_probes=100,
                              greedy_checks=24, batch_size=16, clean_budget=200),
                 tiny=dict(_TINY, d_model=96, steps=TINY_FULL_STEPS, batch_size=128, control=True)),
}
