"""Sizes of the infer chapter at the three scales (DESIGN.md "Three scales, one notebook").

Every model of a scale gets the same training budget: ``iters`` Adam steps on batches of ``batch``
receivers (the same receiver draws), and the MLP baselines are sized (width 96, depth 4: 57 k
parameters) close to INFER-lite (52 k); AVR-lite has 35 k. The receivers are one dense plane at
z = 0.6 m, 24 x 12 points 0.10 x 0.11 m apart: the grid samples the field without aliasing up to
~1.6 kHz, above the modelled band (40-900 Hz), and the models' Fourier features (6 octaves on
room-box-normalised positions) resolve 0.08 / 0.05 / 0.04 m, below a quarter wavelength at 900 Hz.

Costs on one torch thread (unloaded core): INFER-lite ~5 ms per step at batch 4 x 14 rays x 8 samples
x 129 bins, AVR-lite ~3.5 ms, TD-MLP ~2 ms, FD-MLP ~1 ms. Measured wall times of the whole notebook
(``repro run infer``) are written next to each preset.
"""
from __future__ import annotations

from typing import Any

MAIN_MODELS = ("TD-MLP", "AVR-lite", "FD-MLP", "FD-MLP + ToF mask", "INFER-lite", "INFER w/o KK", "INFER w/o weighting")
DESIGN_MODELS = ("INFER KK-const", "INFER lam=0.1", "INFER lam=0.01")

_COMMON: dict[str, Any] = dict(
    seed=0, fs=2000, n_fft=256, ir_length=256, crossover_hz=450.0, grid=(24, 12, 1), plane_z=0.6, n_octaves=6,
    mlp_width=96, mlp_depth=4, field_width=64, field_depth=3, n_azi=4, n_ele=3, n_samples=8, far=2.5,
    mask_margin=6, lr=2e-3, lam_kk=1.0,
)

PRESETS: dict[str, dict[str, Any]] = {
    # sanity scale: the exact claims, the data checks and the KK diagnostics; three seeds (the `full` code
    # path runs on these sizes in the tests), far too few steps for the comparisons.
    # measured: ~26 s wall for the whole notebook (`repro run`; 20.7 s inside it)
    "smoke": dict(_COMMON, max_order=8, seeds=(0, 1, 2), field_iters=200, field_batch=4, mlp_iters=200, mlp_batch=4,
                  models=MAIN_MODELS[:6], design_models=(), design_seeds=(), extrapolation_models=(),
                  bench_receivers=16),
    # where the claims are judged: 3 seeds for every comparison; the KK design study (free constant,
    # lambda_KK = 0.1, 0.01) on seed 0 only. measured: 192-206 s wall for the whole notebook (186-201 s
    # inside it, ~180 s of them training 24 models at ~7.5 s each)
    "book": dict(_COMMON, max_order=10, seeds=(0, 1, 2), field_iters=2000, field_batch=4, mlp_iters=2000,
                 mlp_batch=4, models=MAIN_MODELS, design_models=DESIGN_MODELS, design_seeds=(0,),
                 extrapolation_models=(), bench_receivers=32),
    # 5 seeds, 2.5x the steps, the design study and the scalar-sigma ablation on every seed, the
    # extrapolation split (rear slab). A GPU when present (icml26.device()). Estimated
    # from the book timings: 70 trainings x 2.5 x ~7.5 s = ~22-25 min on 2 CPU cores (budget 45 min); not run here.
    "full": dict(_COMMON, max_order=12, seeds=(0, 1, 2, 3, 4), field_iters=5000, field_batch=4, mlp_iters=5000,
                 mlp_batch=4, models=MAIN_MODELS + ("INFER scalar-sigma",) + DESIGN_MODELS,
                 design_models=(), design_seeds=(), extrapolation_models=("TD-MLP", "FD-MLP", "INFER-lite"),
                 bench_receivers=64),
}
