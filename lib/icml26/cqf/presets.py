"""Sizes of the cqf chapter at the three scales (DESIGN.md "Three scales, one notebook").

Budgets are training tokens per LM (no repetition: CQF(k) generates about budget/k web tokens).
Wall times of the whole notebook on the 2-core dev machine, shared with other jobs: see the comments.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    world=dict(n_entities=300, n_relations=6, n_values=12, zipf=1.1, n_hq_entities=60, n_test_facts=300, tail_rank=100),
    ngram_order=4, ngram_discount=0.75, crisp_clusters=32, dsir_buckets=10000, is_pool_k=0.05, recursive_k1=0.2,
    bucket_edges=(0.0, 0.3, 0.7, 0.9, 0.95, 1.0), hq_top_fraction=0.1, cap_factor=3.0, stream_batch=20000,
    keep_samples=True,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: NGramLM, 100k-token budgets, k >= 5 %, 2 seeds; measured 24 s for the whole notebook (papermill)
    "smoke": dict(_COMMON, seeds=(0, 1), budget=100_000, ks=(1.0, 0.2, 0.05), family_ks=(1.0, 0.2, 0.05),
                  perm_ks=(0.0, 0.5, 1.0), n_clf=1000, n_calib=5000, n_eval_docs=200, n_decile_docs=1000,
                  recursive_k2=0.05,
                  gpt=dict(enabled=True, steps=15, batch=8, lr=3e-3, d=32, layers=1, heads=2, ctx=32, train_tokens=20_000),
                  semireal=dict(doc_words=60, n_hq_train=600, n_lq_per_source=600, ks=(1.0, 0.2, 0.05))),
    # book: NGramLM E1-E9 at 300k-token budgets, 3 seeds; a small TinyGPT for the Fig. 9 matrices;
    # measured 189 s for the whole notebook (174 s experiments), 2 shared cores
    "book": dict(_COMMON, seeds=(0, 1, 2), budget=300_000, ks=(1.0, 0.5, 0.2, 0.1, 0.05, 0.02),
                 family_ks=(1.0, 0.5, 0.2, 0.05), perm_ks=(0.0, 0.25, 0.5, 0.75, 1.0), n_clf=2000, n_calib=20000,
                 n_eval_docs=300, n_decile_docs=2000, recursive_k2=0.05,
                 gpt=dict(enabled=True, steps=120, batch=16, lr=3e-3, d=96, layers=2, heads=4, ctx=64, train_tokens=300_000),
                 semireal=dict(doc_words=60, n_hq_train=600, n_lq_per_source=1200, ks=(1.0, 0.5, 0.2, 0.1, 0.05))),
    # full: 1M-token budgets, k2 = 1 %, TinyGPT at 1M tokens per run (a GPU when device() finds one);
    # estimated ~25-35 min on 2 CPU cores (n-gram part ~3.5x book, TinyGPT 1000 steps x 27 runs), not run here
    "full": dict(_COMMON, seeds=(0, 1, 2), budget=1_000_000, ks=(1.0, 0.5, 0.2, 0.1, 0.05, 0.02),
                 family_ks=(1.0, 0.5, 0.2, 0.05), perm_ks=(0.0, 0.25, 0.5, 0.75, 1.0), n_clf=2000, n_calib=20000,
                 n_eval_docs=300, n_decile_docs=2000, recursive_k2=0.01,
                 gpt=dict(enabled=True, steps=1000, batch=16, lr=3e-3, d=96, layers=2, heads=4, ctx=64, train_tokens=1_000_000),
                 semireal=dict(doc_words=60, n_hq_train=600, n_lq_per_source=1200, ks=(1.0, 0.5, 0.2, 0.1, 0.05))),
}
