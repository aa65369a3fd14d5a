"""Sizes of the mbr chapter at the three scales (DESIGN.md "Three scales, one notebook").

Times measured on the shared 2-core machine (one thread) for :func:`icml26.mbr.experiments.run_study`;
the notebook adds sympy (~3 s), the sacrebleu check and figures.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    seed=0, tasks=("A", "B"), n_oracle=32, embed_dim=32,
    noise=dict(temperature=1.5, drop=0.05, repeat=0.03, substitute=0.03, swap=0.03),
    utilities=("bleu", "chrf", "chrf1", "softf1"),
    # brief §2.3 grid: lambda x delta x beta = 5 x 3 x 5 = 75 configurations; beta in units of u-scale/10
    lams=(0.0, 0.25, 0.5, 0.75, 1.0), deltas=(0.0, 0.5, 1.0), betas=(0.0, 0.5, 1.0, 2.0, 5.0), beta_scale=10.0,
    n_sacrebleu_pairs=300, model="oracle-noise",
)

PRESETS: dict[str, dict[str, Any]] = {
    # run_study ~ 20 s, whole notebook ~ 47 s (4 splits x 200 sources x 16 samples + 32 oracle references)
    "smoke": dict(_COMMON, n_sources=200, n_samples=16),
    # run_study ~ 2.3 min, whole notebook ~ 3.1 min (measured on the shared machine under load)
    "book": dict(_COMMON, n_sources=500, n_samples=24),
    # hours: a trained seq2seq transformer per task as p_theta, 1000 sources x 32 samples per split
    "full": dict(_COMMON, n_sources=1000, n_samples=32, model="seq2seq",
                 seq2seq=dict(d_model=128, heads=4, layers=2, steps=6000, batch=64, lr=2e-3, n_train=30000,
                              max_len=48, epsilon=0.02)),
}
