"""Sizes of the ate-mixtures chapter at the three scales (DESIGN.md "Three scales, one notebook").

Measured wall time of the whole notebook on the shared 2-core machine (``repro run``) is noted next
to each preset. Models: M1 = ``ProductMixture.symmetric(n, p)``, M2 = ``ProductMixture.random(n, 3)``,
M3 = ``CurieWeissMixture(n, beta, fields)`` (brief Section 5).
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    seed=0,
    k_identity=3,
    p_relax=0.85,                       # F1: M1 with p = 0.85 (brief's relaxation-time table)
    cw=dict(beta=0.5, fields=(0.8, -0.8)),
    p_sep=0.92,                         # F2-F4: well separated modes (pitfall: p = 0.85 mixes at small n)
    t_factor=20,                        # t = 20 n
    m_ref=64,                           # F3/C6: corrected floor compared across n at this m
    mixing_target=0.05,                 # F4: t_mix = min{t : E TV <= 0.05} (fixed; 2x the m = 256 floor 0.0249)
    mixing_horizon=50,                  # F4: horizon 50 n (the worst-case control must not reach the target)
    m_mixing=256,
    ksweep=dict(n=10, p=0.98, ks=(2, 3, 4), ms=(16, 64, 256), t_factor=10),
    cw_ms=(16, 64, 256, 1024),
    budget_delta=0.2, budget_power=0.8,
    mc60=dict(n=60, chains=4000, sweeps=20),
    m2=dict(n=7, k=3, ms=(4, 16, 64, 256)),
    testers=dict(n=12, p=0.85, n_w=200, n_loc_per_site=50, r=8, alpha=0.1, trials=200, null_trials=400,
                 n_null=2000),
    interactive=dict(n=8, m=64, p=0.92, reps=20),
)

PRESETS: dict[str, dict[str, Any]] = {
    # whole notebook: 14 s chapter / 16 s wall measured by `repro run` under the shared lock (earlier version,
    # on the loaded machine: 35-48 s)
    "smoke": dict(_COMMON, n_identity=6, identity_instances=100, relax_ns=(6, 8, 10),
                  cw_ns=(6, 8, 10), cw_n=10, cw_reps=60, k_reps=100, budget_ns=(6, 8, 10),
                  tv_n=10, tv_ms=(4, 16, 64, 256, 1024), tv_reps=50, m2_reps=50,
                  floor_ns=(8, 10), floor_ms=(16, 64, 256, 1024), floor_reps=100,
                  mixing_ns=(8, 10, 12), mixing_reps=30, deltas=(0.05, 0.1, 0.2)),
    # whole notebook: 18 s chapter / 24 s wall measured the same way (F2b Curie-Weiss constants 3.6 s, F3 2.7 s)
    "book": dict(_COMMON, n_identity=7, identity_instances=100, relax_ns=(6, 8, 10, 12, 14),
                 cw_ns=(6, 8, 10, 12), cw_n=12, cw_reps=100, k_reps=200, budget_ns=(6, 8, 10, 12, 14),
                 tv_n=12, tv_ms=(4, 16, 64, 256, 1024), tv_reps=100, m2_reps=100,
                 floor_ns=(8, 10, 12), floor_ms=(16, 64, 256, 1024), floor_reps=200,
                 mixing_ns=(8, 10, 12, 14), mixing_reps=50, deltas=(0.025, 0.05, 0.1, 0.15, 0.2, 0.3)),
    # not run yet; estimated 2-5 min on 2 cores from the book timings (n = 14 exact evolution with 500 data
    # sets dominates: F2 ~45 s, F3 ~35 s; the n = 16 spectral gap and T_loc moments a few s each)
    "full": dict(_COMMON, n_identity=8, identity_instances=300, relax_ns=(6, 8, 10, 12, 14, 16),
                 cw_ns=(6, 8, 10, 12), cw_n=12, cw_reps=300, k_reps=500, budget_ns=(6, 8, 10, 12, 14, 16),
                 tv_n=14, tv_ms=(4, 16, 64, 256, 1024, 4096), tv_reps=500, m2_reps=500,
                 floor_ns=(8, 10, 12, 14), floor_ms=(16, 64, 256, 1024, 4096), floor_reps=500,
                 mixing_ns=(8, 10, 12, 14), mixing_reps=200,
                 deltas=(0.025, 0.05, 0.1, 0.15, 0.2, 0.3)),
}
