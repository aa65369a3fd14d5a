"""Sizes of the infer chapter at the three scales (DESIGN.md "Three scales, one notebook").

Shared CPU (2 cores, one torch thread): INFER-lite costs ~30-60 ms per iteration at batch 8 with
14 rays x 12 samples x 129 bins; the MLP baselines ~5-15 ms. Measured wall times of the whole
notebook are written next to each preset (``repro run infer --scale ...``, measured while the
machine was shared with other jobs at load 5-10, so CPU time is roughly a third of the wall time).
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    seed=0, fs=2000, n_fft=256, ir_length=256, crossover_hz=450.0,
    mlp_width=128, mlp_depth=4, field_width=64, field_depth=3, n_azi=4, n_ele=3, n_samples=12, far=2.5,
    mask_margin=3, lr=2e-3, lam_kk=1.0,
)

PRESETS: dict[str, dict[str, Any]] = {
    # sanity scale: the exact claims and the KK/causality diagnostics; too few steps for the comparisons.
    # measured: 57 s wall (16 s CPU) for the whole notebook
    "smoke": dict(_COMMON, max_order=8, grid=(10, 5, 2), n_samples=8, field_iters=100, field_batch=4, mlp_iters=200,
                  mlp_batch=16, models=("TD-MLP", "FD-MLP", "AVR-lite", "INFER-lite", "INFER w/o KK"),
                  extrapolation_models=(), bench_receivers=16),
    # measured: 149 s wall for the whole notebook
    "book": dict(_COMMON, max_order=10, grid=(12, 6, 2), field_iters=500, field_batch=8, mlp_iters=1000,
                 mlp_batch=16, models=("TD-MLP", "FD-MLP", "AVR-lite", "INFER-lite", "INFER w/o KK",
                                       "INFER w/o weighting"),
                 extrapolation_models=(), bench_receivers=32),
    # hours; a GPU when present. Denser grid, more rays and steps, the extrapolation split.
    "full": dict(_COMMON, max_order=12, grid=(16, 8, 3), n_azi=8, n_ele=4, n_samples=24, field_width=128,
                 field_iters=5000, field_batch=8, mlp_iters=10000, mlp_batch=32,
                 models=("TD-MLP", "FD-MLP", "AVR-lite", "INFER-lite", "INFER w/o KK", "INFER w/o weighting"),
                 extrapolation_models=("TD-MLP", "FD-MLP", "INFER-lite"), bench_receivers=64),
}
