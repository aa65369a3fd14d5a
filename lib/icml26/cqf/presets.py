"""Sizes of the cqf chapter at the three scales (DESIGN.md "Three scales, one notebook").

Budgets are training tokens per LM (no repetition: CQF(k) generates about budget/k web tokens).
The test facts of T1 are budget-matched (brief §5.2): their entities' popularity ranks
[``tail_rank``, ``tail_end``) are chosen per scale so that the web states each about as often at every
scale (a random selection near 0.3 T1, CQF(5 %) near 0.7-0.85, nothing saturated; measured on one seed
at 100k and 300k tokens, extrapolated to 1M by the Zipf law: rank x (10/3)^(1/1.1)).
Wall times of the whole notebook on the 2-core dev machine, shared with other jobs: see the comments.
"""
from __future__ import annotations

from typing import Any

_WORLD = dict(n_entities=1300, n_relations=6, n_values=12, zipf=1.1, n_hq_entities=60, n_test_facts=300)

_COMMON: dict[str, Any] = dict(
    ngram_order=4, ngram_discount=0.75, crisp_clusters=32, dsir_buckets=10000, is_pool_k=0.05, recursive_k1=0.2,
    bucket_edges=(0.0, 0.3, 0.7, 0.9, 0.95, 1.0), hq_top_fraction=0.1, cap_factor=3.0, stream_batch=20000,
    keep_samples=True, planted_share=0.0025, planted_shares=(0.001, 0.0025, 0.005, 0.01, 0.05), prose_plant_share=0.05,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: NGramLM, 100k-token budgets, k >= 5 %, 2 seeds, a 1-layer TinyGPT (CI; <= 60 s)
    "smoke": dict(_COMMON, world=dict(_WORLD, tail_rank=100, tail_end=300), seeds=(0, 1), gpt_seeds=2, budget=100_000,
                  ks=(1.0, 0.2, 0.05), family_ks=(1.0, 0.2, 0.05), perm_ks=(0.0, 0.5, 1.0), n_clf=1000, n_calib=5000,
                  n_eval_docs=200, n_decile_docs=1000, recursive_k2=0.05, n_rec_clf=2000, noise_clfs=(500, 1000), noise_seeds=1,
                  gpt=dict(enabled=True, steps=15, batch=8, lr=3e-3, d=32, layers=1, heads=2, ctx=32, train_tokens=20_000,
                           horizons=(1.0,), widths=(32,), eval_docs=200),
                  semireal=dict(doc_words=60, n_hq_train=600, n_lq_per_source=600, ks=(1.0, 0.2, 0.05))),
    # book: NGramLM E1-E9 at 300k-token budgets, 5 seeds (measured 21 s each, one thread); a small TinyGPT for
    # the Fig. 9 matrices on the first 3 seeds (batch 8, two checkpoints, 100 held-out documents per member, one
    # width: about 40 s a seed; batch 16 with three checkpoints of 150 documents measured 96 s), the Fig. 10
    # width proxy only at full; estimated 4.5-5 min on the 2-core machine (not run here)
    "book": dict(_COMMON, world=dict(_WORLD, tail_rank=300, tail_end=600), seeds=(0, 1, 2, 3, 4), gpt_seeds=3, budget=300_000,
                 ks=(1.0, 0.5, 0.2, 0.1, 0.05, 0.02), family_ks=(1.0, 0.5, 0.2, 0.05), perm_ks=(0.0, 0.25, 0.5, 0.75, 1.0),
                 n_clf=2000, n_calib=20000, n_eval_docs=300, n_decile_docs=2000, recursive_k2=0.05, n_rec_clf=10000,
                 noise_clfs=(1000, 2000, 5000), noise_seeds=1,
                 gpt=dict(enabled=True, steps=120, batch=8, lr=3e-3, d=96, layers=2, heads=4, ctx=64, train_tokens=300_000,
                          horizons=(0.5, 1.0), widths=(96,), eval_docs=100),
                 semireal=dict(doc_words=60, n_hq_train=600, n_lq_per_source=1200, ks=(1.0, 0.5, 0.2, 0.1, 0.05))),
    # full: 1M-token budgets, k2 = 1 % (the paper's), 5 seeds (about 70 s each); TinyGPT at 1M tokens per run on
    # the first 3 seeds with three widths (1.5x the first full's TinyGPT steps; that full took 1067 s in all):
    # estimated 30-40 min on 2 cores (not run here)
    "full": dict(_COMMON, world=dict(_WORLD, tail_rank=750, tail_end=1300), seeds=(0, 1, 2, 3, 4), gpt_seeds=3, budget=1_000_000,
                 ks=(1.0, 0.5, 0.2, 0.1, 0.05, 0.02), family_ks=(1.0, 0.5, 0.2, 0.05), perm_ks=(0.0, 0.25, 0.5, 0.75, 1.0),
                 n_clf=2000, n_calib=20000, n_eval_docs=300, n_decile_docs=2000, recursive_k2=0.01, n_rec_clf=10000,
                 noise_clfs=(1000, 2000, 5000), noise_seeds=2,
                 gpt=dict(enabled=True, steps=1000, batch=16, lr=3e-3, d=96, layers=2, heads=4, ctx=64, train_tokens=1_000_000,
                          horizons=(0.1, 0.3, 1.0), widths=(32, 64, 96), eval_docs=300),
                 semireal=dict(doc_words=60, n_hq_train=600, n_lq_per_source=1200, ks=(1.0, 0.5, 0.2, 0.1, 0.05)),
                 # on a GPU (icml26.device() is CUDA): a wider, longer TinyGPT toward the paper's regime
                 gpu=dict(gpt=dict(enabled=True, steps=4000, batch=32, lr=2e-3, d=256, layers=4, heads=8, ctx=64,
                                   train_tokens=1_000_000, horizons=(0.05, 0.25, 1.0), widths=(64, 128, 256),
                                   eval_docs=300))),
}
