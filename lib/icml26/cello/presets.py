"""Sizes of the cello chapter at the three scales (DESIGN.md "Three scales, one notebook").

Every key exists at every scale (the tests run the `full` code path at smoke sizes). Times are for the
whole notebook on the 2-core dev machine, one torch thread (measured: see the comments).
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    spacing=12.0, tile=64, crop=12, m_range=(4, 12), kappa=0.5, dim=32, protein_threshold=0.15, protein_batch=256,
    patch_batch=48, lr=5e-3, lr_mil=1e-2, batch=16, n_lab=5, n_new=5, mc_P=25, mc_delta=1.0, fm_width=2,
    del_ks=(1, 2, 4, 8, 12, 16, 24),   # deletion sizes up to twice the largest lesion of m_range (review 3)
)
# Stage-2 learning rates (Adam; Cello / torchmil's ABMIL, gated ABMIL, DSMIL), on standardised embeddings: the
# rates at which each family learns a planted one-standard-deviation shift of one embedding dimension on the
# lesion cells of a book cohort within 40 epochs (test AUC: Cello 0.97 at 5e-3, 0.90 at 1e-2; gated ABMIL 0.99
# at 1e-2, 0.64 at 5e-3; DSMIL 0.96 at 1e-2). The first version's 1e-3 on raw embeddings learned none of it
# (gated ABMIL's training loss 0.695 -> 0.692): every aggregator sat at chance at book in 8a5b3bd.

PRESETS: dict[str, dict[str, Any]] = {
    # smoke (budget 60 s): repro run 45 s at a quiet load; 66-71 s at load 3 where the previous revision took 60-66 s.
    # n_val comes out of the test slides here
    "smoke": dict(_COMMON, size=192, n_slides=48, n_train=24, n_val=8, seeds=(1,), protein_steps=150, cssl_steps=150,
                  patch_steps=40, fm_slides=48, fm_steps=30, epochs=25, m_sweep=(4, 12), sweep_slides=16, kappa0_slides=16,
                  n_train_curve=(12,), curve_seeds=1, probe_cells=1500, mc_slides=500, mc_m=(3, 6, 12), ihc_steps=120),
    # book: budget 5 min, NOT met. Measured in the fresh book run of 8a5b3bd (one thread, two chapters on two cores):
    # 1021 s, FM 107 s + ~300 s per seed (encoders 130, encode 38, kappa0 + sweep 28, render 18, curve 21 (seed 1
    # only: 63), ~60 for the 13 aggregator fits). Protein and cell SimCLR at 1000 steps (700 before; at 700 the
    # protein head's lesion-vs-mimic AUROC was 0.60, at 1000 0.73, and only then did any cell pipeline leave chance:
    # one-seed probe, Cello 0.53 -> 0.76, C-Gated 0.56 -> 0.91). Per-step costs of a probe here (protein 0.056 s,
    # cell SimCLR 0.067 s, a mining pass 0.3 s; the loaded run's encoders took 1.27x the probe's sum for the old
    # steps): +62 s per seed, +37 s for the curve's protein encoder: ~1250 s as that run was loaded
    "book": dict(_COMMON, size=256, n_slides=168, n_train=96, n_val=24, seeds=(1, 2, 3), protein_steps=1000, cssl_steps=1000,
                 patch_steps=120, fm_slides=240, fm_steps=200, epochs=40, m_sweep=(4, 12, 48), sweep_slides=32,
                 kappa0_slides=32, n_train_curve=(16,), curve_seeds=1, probe_cells=3000, mc_slides=2000,
                 mc_m=(3, 6, 12, 24), ihc_steps=250),
    # full: 10 seeds for power (review 3). From the per-step costs of the book probe: ~260 s per seed, FM ~200 s,
    # the curve ~95 s: ~49 min loaded, ~39 min at the load of the 4c84ecc full run (1159 s for 5 seeds then,
    # when a per-step estimate of that preset gave 1.3x the measured time). Since 8a5b3bd: 40 hard-negative
    # refreshes instead of 20 and the held-out protein curve, ~+10 s per seed and for the curve's encoder: ~+2 min
    "full": dict(_COMMON, size=256, n_slides=460, n_train=240, n_val=60, seeds=tuple(range(1, 11)), protein_steps=2000,
                 cssl_steps=2000, patch_steps=400, fm_slides=1200, fm_steps=1200, epochs=60, m_sweep=(4, 12, 48),
                 sweep_slides=80, kappa0_slides=48, n_train_curve=(16, 64), curve_seeds=1, probe_cells=6000,
                 mc_slides=4000, mc_m=(3, 6, 12, 24), ihc_steps=400),
}
