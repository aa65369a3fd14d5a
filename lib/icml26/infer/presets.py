"""Sizes of the infer chapter at the three scales (DESIGN.md "Three scales, one notebook").

Every model of a scale gets the same training budget: ``iters`` Adam steps on batches of ``batch``
receivers (the same receiver draws), and the MLP baselines are sized (width 96, depth 4: 57 k
parameters) close to INFER-lite (52 k); AVR-lite has 35 k. The receivers are one dense plane at
z = 0.6 m, 24 x 12 points 0.10 x 0.11 m apart: the grid samples the field without aliasing up to
~1.6 kHz, above the modelled band (40-900 Hz), and the models' Fourier features (6 octaves on
room-box-normalised positions) resolve 0.08 / 0.05 / 0.04 m, below a quarter wavelength at 900 Hz.

Each family's learning rate and INFER-lite's lambda_KK are chosen on a validation split of the
training receivers (``lr_grid``, ``lam_grid``; 16 extra trainings per scale) before the seeds run.

Costs on one torch thread (unloaded core): INFER-lite ~5 ms per step at batch 4 x 14 rays x 8 samples
x 129 bins, AVR-lite ~3.5 ms, TD-MLP ~2 ms, FD-MLP ~1 ms. Measured wall times of the whole notebook
(``repro run infer``) are written next to each preset.
"""
from __future__ import annotations

from typing import Any

MAIN_MODELS = ("TD-MLP", "AVR-lite", "FD-MLP", "FD-MLP + ToF mask", "INFER-lite", "INFER w/o KK", "INFER w/o weighting",
               "INFER scalar-sigma", "FD-MLP w/o weighting", "INFER perceptual-only", "INFER hardware-only", "INFER lam=1")
DESIGN_MODELS = ("INFER KK-const", "INFER lam=0.1", "INFER lam=0.01")

_COMMON: dict[str, Any] = dict(
    seed=0, fs=2000, n_fft=256, ir_length=256, crossover_hz=450.0, grid=(24, 12, 1), plane_z=0.6, n_octaves=6,
    mlp_width=96, mlp_depth=4, field_width=64, field_depth=3, n_azi=4, n_ele=3, n_samples=8, far=2.5,
    mask_margin=6, lr=2e-3, lam_kk=1.0,
    # chosen on a validation split of the training receivers before the seeds run (experiments.tune):
    # one learning rate per family (time, hybrid, frequency MLP, INFER), then lambda_KK > 0 for INFER-lite
    lr_grid=(5e-4, 2e-3, 8e-3), lam_grid=(0.01, 0.1, 1.0),
)

PRESETS: dict[str, dict[str, Any]] = {
    # sanity scale: the exact claims, the data checks and the KK diagnostics; three seeds, every main
    # model and the tuning (the `full` code path runs on these sizes), far too few steps for the comparisons.
    # measured: 81 s wall for the whole notebook (`repro run`, revision 2: 12 models x 3 seeds + 16 tuning runs)
    "smoke": dict(_COMMON, max_order=8, seeds=(0, 1, 2), field_iters=200, field_batch=4, mlp_iters=200, mlp_batch=4,
                  models=MAIN_MODELS, design_models=(), design_seeds=(), extrapolation_models=(),
                  bench_receivers=16),
    # where the claims are judged: 3 seeds for every comparison; the KK design study (free constant,
    # lambda_KK = 0.1, 0.01) on seed 0 only. Revision 1 measured 192-206 s wall (24 trainings at ~7.5 s);
    # revision 2 adds 4 models x 3 seeds and 16 tuning runs: estimated ~6-7 min, not yet measured
    "book": dict(_COMMON, max_order=10, seeds=(0, 1, 2), field_iters=2000, field_batch=4, mlp_iters=2000,
                 mlp_batch=4, models=MAIN_MODELS, design_models=DESIGN_MODELS, design_seeds=(0,),
                 extrapolation_models=(), bench_receivers=32),
    # 5 seeds, 2.5x the steps, the design study on every seed, the extrapolation split (rear slab).
    # Revision 1's CPU full run took 1527 s (70 trainings); revision 2 adds 4 models x 5 seeds and 16
    # tuning runs: estimated ~35-40 min on 2 CPU cores (budget 45 min), not yet measured.
    # gpu variant (used only on CUDA): the brief's 8 x 4 + 2 = 34 rays x 24 samples (spacing 0.107 m, below
    # lambda/2 = 0.19 m at 900 Hz, where the CPU scales' 8 samples, 0.35 m apart, are not), batch 8 for all.
    "full": dict(_COMMON, max_order=12, seeds=(0, 1, 2, 3, 4), field_iters=5000, field_batch=4, mlp_iters=5000,
                 mlp_batch=4, models=MAIN_MODELS + DESIGN_MODELS,
                 design_models=(), design_seeds=(), extrapolation_models=("TD-MLP", "FD-MLP", "INFER-lite"),
                 bench_receivers=64,
                 gpu=dict(n_azi=8, n_ele=4, n_samples=24, field_batch=8, mlp_batch=8)),
}
