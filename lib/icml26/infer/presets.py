"""Sizes of the infer chapter at the three scales (DESIGN.md "Three scales, one notebook").

Every model of a scale gets the same training budget: ``iters`` Adam steps on batches of ``batch``
receivers (the same receiver draws), and the MLP baselines are sized (width 96, depth 4: 57 k
parameters) close to INFER-lite (52 k); AVR-lite has 35 k. The receivers are one dense plane at
z = 0.6 m, 24 x 12 points 0.10 x 0.11 m apart: the grid samples the field without aliasing up to
~1.6 kHz, above the modelled band (40-900 Hz), and the models' Fourier features (6 octaves on
room-box-normalised positions) resolve 0.08 / 0.05 / 0.04 m, below a quarter wavelength at 900 Hz.

Each family's learning rate and INFER-lite's lambda_KK are chosen on a validation split of the
training receivers (``lr_grid``, ``lr_extend``, ``lam_grid``, ``lam_tolerance``) before the seeds run.

Costs on one torch thread (unloaded core): INFER-lite ~5 ms per step at batch 4 x 14 rays x 8 samples
x 129 bins, NAF-lite ~3.7 ms (256 STFT pixels per receiver), AVR-lite ~3.5 ms, TD-MLP ~2.9 ms, FD-MLP
~1 ms. Measured wall times of the whole notebook (``repro run infer``) are in the notebook's timings.
"""
from __future__ import annotations

from typing import Any

BOOK_MODELS = ("TD-MLP", "NAF-lite", "AVR-lite", "FD-MLP", "FD-MLP + ToF mask", "FD-MLP w/o weighting", "INFER-lite",
               "INFER w/o KK", "INFER w/o weighting", "INFER scalar-sigma", "INFER lam=1", "INFER oracle")
"""Trained for every seed at smoke and book: the paper's baselines (TD-MLP, NAF-lite, AVR-lite), the frequency MLPs,
INFER-lite, its ablations behind the paper claims (K3, K7, K4, K8), K3-residual's fixed-lambda model and K1's
positive control (the oracle)."""
MAIN_MODELS = BOOK_MODELS + ("INFER perceptual-only", "INFER hardware-only")
"""`full` adds the split weighting arms (K4-perceptual, K4-hardware)."""
DESIGN_MODELS = ("INFER KK-const", "INFER lam=0.1", "INFER lam=0.01")

_COMMON: dict[str, Any] = dict(
    seed=0, fs=2000, n_fft=256, ir_length=256, crossover_hz=450.0, grid=(24, 12, 1), plane_z=0.6, n_octaves=6,
    mlp_width=96, mlp_depth=4, field_width=64, field_depth=3, n_azi=4, n_ele=3, n_samples=8, far=2.5,
    mask_margin=6, lr=2e-3, lam_kk=1.0,
    # chosen on a validation split of the training receivers before the seeds run (experiments.tune):
    # one learning rate per family (time, NAF, hybrid, frequency MLP, INFER) from lr_grid, the grid widened
    # by a factor 4 past an edge while the best value sits on it (at most lr_extend times); then lambda_KK > 0
    # for INFER-lite: the largest lambda whose validation score is within lam_tolerance of the best.
    # tune_fraction: the tuning runs' share of the scale's steps (same cosine schedule shape).
    lr_grid=(2e-3, 8e-3, 3.2e-2), lr_extend=2, lam_grid=(0.01, 0.1, 1.0), lam_tolerance=0.02, tune_fraction=1.0,
)

PRESETS: dict[str, dict[str, Any]] = {
    # sanity scale: the exact claims, the data checks and the KK diagnostics; two seeds (no seeded claim is
    # judged at smoke), the book's models and the tuning on a two-value grid without widening, on half-length
    # runs (the `full` code path runs on these sizes), far too few steps for the comparisons. Measured
    # (revision 3): ~50-55 s for the whole notebook on a quiet machine at 200 steps; 160 steps leave headroom.
    "smoke": dict(_COMMON, max_order=8, seeds=(0, 1), field_iters=160, field_batch=4, mlp_iters=160, mlp_batch=4,
                  models=BOOK_MODELS, design_models=(), design_seeds=(), extrapolation_models=(),
                  lr_grid=(2e-3, 8e-3), lr_extend=0, lam_grid=(1.0,), tune_fraction=0.5, bench_receivers=16),
    # where the claims are judged: 3 seeds for every comparison; the tuning runs are a quarter of the steps
    # (budget). Estimate on one unloaded core: 12 models x 3 seeds at 2000 steps (~240 s: INFER variants ~10 s
    # each, AVR-lite and NAF-lite ~7.5 s, TD-MLP ~6 s, FD-MLPs ~2 s) + ~21 tuning runs at 500 steps (~40 s)
    # + simulation, evaluation and figures (~20 s): ~5 min. The KK design study and the split weighting arms
    # run at full only.
    "book": dict(_COMMON, max_order=10, seeds=(0, 1, 2), field_iters=2000, field_batch=4, mlp_iters=2000,
                 mlp_batch=4, models=BOOK_MODELS, design_models=(), design_seeds=(),
                 extrapolation_models=(), tune_fraction=0.25, bench_receivers=32),
    # 5 seeds, 2.5x the steps, the design study on every seed, the extrapolation split (rear slab), full-length
    # tuning. Estimate on one core: 14 models x 5 seeds (~1330 s) + design 3 x 5 (~375 s) + extrapolation
    # 3 x 5 (~220 s) + tuning (~380 s): ~40 min (budget 45 min).
    # gpu variant (used only on CUDA): the brief's 8 x 4 + 2 = 34 rays x 24 samples (spacing 0.107 m, below
    # lambda/2 = 0.19 m at 900 Hz, where the CPU scales' 8 samples, 0.35 m apart, are not), batch 8 for all.
    "full": dict(_COMMON, max_order=12, seeds=(0, 1, 2, 3, 4), field_iters=5000, field_batch=4, mlp_iters=5000,
                 mlp_batch=4, models=MAIN_MODELS + DESIGN_MODELS,
                 design_models=(), design_seeds=(), extrapolation_models=("TD-MLP", "FD-MLP", "INFER-lite"),
                 bench_receivers=64,
                 gpu=dict(n_azi=8, n_ele=4, n_samples=24, field_batch=8, mlp_batch=8)),
}
