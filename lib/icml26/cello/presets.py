"""Sizes of the cello chapter at the three scales (DESIGN.md "Three scales, one notebook").

Every key exists at every scale (the tests run the `full` code path at smoke sizes). Times are for the
whole notebook on the 2-core dev machine, one torch thread (measured: see the comments).
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    spacing=12.0, tile=64, crop=12, m_range=(4, 12), kappa=0.5, dim=32, protein_threshold=0.15, protein_batch=256,
    patch_batch=48, lr=1e-3, batch=16, n_lab=5, n_new=5, del_ks=(1, 2, 4, 8, 16), mc_P=25, mc_delta=1.0,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: measured ~55 s for the whole notebook (1 seed) before the validation split; n_val comes out of the test slides here
    "smoke": dict(_COMMON, size=192, n_slides=48, n_train=24, n_val=8, seeds=(1,), protein_steps=250, cssl_steps=60,
                  patch_steps=40, fm_slides=48, fm_steps=40, epochs=25, m_sweep=(6, 48), sweep_slides=16,
                  n_train_curve=(12,), probe_cells=1500, mc_slides=500, mc_m=(3, 6, 12), ihc_steps=120),
    # book: measured (see the chapter's report), budget 5 min
    "book": dict(_COMMON, size=256, n_slides=168, n_train=96, n_val=24, seeds=(1, 2, 3), protein_steps=800, cssl_steps=200,
                 patch_steps=120, fm_slides=240, fm_steps=240, epochs=40, m_sweep=(4, 12, 48), sweep_slides=32,
                 n_train_curve=(16, 48), probe_cells=3000, mc_slides=2000, mc_m=(3, 6, 12, 24), ihc_steps=250),
    # full: measured 1159 s on 2 cores at 4c84ecc (5 seeds), before the validation split and PC-Gated were added
    "full": dict(_COMMON, size=256, n_slides=460, n_train=240, n_val=60, seeds=(1, 2, 3, 4, 5), protein_steps=2000,
                 cssl_steps=600, patch_steps=400, fm_slides=1200, fm_steps=1200, epochs=60, m_sweep=(3, 6, 12, 24, 48),
                 sweep_slides=80, n_train_curve=(16, 32, 64, 128), probe_cells=6000, mc_slides=4000,
                 mc_m=(3, 6, 12, 24), ihc_steps=400),
}
