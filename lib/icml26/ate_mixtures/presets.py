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
    # Curie-Weiss components with stronger coupling (F2c): c_ATE ~ 3 against ~1.5 at beta = 0.5, and a mixture
    # whose modes separate from n ~ 12 (TV(mu1, mu2) ~ 0.99, relaxation time ~ 800 steps at n = 12)
    cw_strong=dict(beta=0.9, fields=(0.5, -0.5)),
    # F4b: exact mixing times at any n from the lumped chain of |x| (exchangeable models and starts)
    rate=dict(p=0.92, target=0.05, kl_level=0.01, horizon_factor=20, last=3),
    # F5b: T_loc oracle calls for power 0.8 over n and eps, with the draws per query r chosen from this grid
    calls=dict(rs=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096), n_eps=12, power=0.8),
    # F5: a k = 3 visible mixture (components on three corners of the cube)
    # T_loc budget x (3/2)^2: the perturbed component has mass 1/3, not 1/2, and at a fixed r the queries scale as
    # 1/(mean signal)^2 (F5b derivation), so 50 n queries become 113 n
    k3=dict(n=12, k=3, p=0.85, n_loc_per_site=113),
    planted_delta=0.4,                  # P7: a planted large local discrepancy (positive control of the testers)
    tloc_check_trials=4000,             # C7g, C7z: T_loc / T_mix simulated at the predicted budget, half-width ~0.013
    # C7p, C7pk: the fewest samples + oracle calls for power 0.8 at n in budget_ns (draws per query r on a fine geometric grid,
    # so that the optimum moves smoothly with n); the growth test compares the log-log slope of the two smallest and two largest n
    efficiency=dict(r_max=4096, r_points=48, window=2),
    # F2d, C13: MLSI-only star-like components exp(-J C(|x|, 2)), J = J0 + 2 log n (PairPenaltyMixture.star); the chain is run
    # to t = t_over_cn * c_MLSI * n on an even grid of `points` times, from the extremal density and from data
    star=dict(J0=3.0, ms=(16, 64), t_over_cn=10, points=101),
    # C13s: E TV from m = 256 data on the star mixture at 0.9 x the time where the MLSI form of T* falls to 1/2;
    # C13c: c_MLSI at star_ns[0] from star_control_starts random starts with 3000 iterations (convergence control)
    star_tv=dict(m=256, frac=0.9), star_control_maxiter=3000,
)

# Every preset holds one CPU variant only: the chapter is numpy/scipy (exact sparse chains, closed-form
# moments), nothing runs on torch, so a GPU would not change a number and there is no "gpu" variant.
PRESETS: dict[str, dict[str, Any]] = {
    # whole notebook, measured by `repro run` on the shared, loaded 2-core machine (the chapter's own timings in
    # the results file): smoke about 45 s; book and full: see their results files (revision 6 dropped F5's budget sweep
    # and F4b's n^2 control, and added F2d's MLSI-only components and the testers' budgets against n). Revision 7 (smoke
    # 52-54 s under load) adds C3n at every mixing n, C13s, P7pk and C13c's random starts: measured alone at full sizes
    # C3n 3 s, C13s 1 s, P7pk 0.5 s, and C13c 40 s for 60 starts, hence 30 (about 20 s) at full and 20 at book
    "smoke": dict(_COMMON, n_identity=6, identity_instances=100, relax_ns=(6, 8, 10),
                  cw_ns=(6, 8, 10), cw_n=10, cw_reps=200, k_reps=100, budget_ns=(6, 8, 10, 12),
                  tv_n=10, tv_ms=(4, 16, 64, 256, 1024), tv_reps=50, m2_reps=50,
                  floor_ns=(8, 10), floor_ms=(16, 64, 256, 1024), floor_reps=1000,
                  mixing_ns=(8, 10, 12), mixing_reps=30, deltas=(0.05, 0.1, 0.2),
                  n_batches=10, cw2_ns=(6, 8, 10), cw2_n=10, cw2_reps=100,
                  rate_ns=(16, 32, 64, 128, 256),
                  calls_ns=(6, 8, 10, 12), calls_deltas=(0.1, 0.2, 0.3), k3_trials=100, cw2_seeds=2,
                  star_ns=(6, 8), star_n=8, star_reps=40, star_control_starts=10),
    "book": dict(_COMMON, n_identity=7, identity_instances=100, relax_ns=(6, 8, 10, 12, 14),
                 cw_ns=(6, 8, 10, 12), cw_n=12, cw_reps=300, k_reps=200, budget_ns=(6, 8, 10, 12, 14),
                 tv_n=12, tv_ms=(4, 16, 64, 256, 1024), tv_reps=100, m2_reps=100,
                 floor_ns=(8, 10, 12), floor_ms=(16, 64, 256, 1024), floor_reps=1500,
                 mixing_ns=(8, 10, 12, 14), mixing_reps=50, deltas=(0.025, 0.05, 0.1, 0.15, 0.2, 0.3),
                 n_batches=10, cw2_ns=(8, 10, 12), cw2_n=12, cw2_reps=300,
                 rate_ns=(16, 32, 64, 128, 256, 512),
                 calls_ns=(6, 8, 10, 12, 14), calls_deltas=(0.05, 0.1, 0.2, 0.3), k3_trials=400, cw2_seeds=4,
                 star_ns=(6, 8, 10, 12), star_n=10, star_reps=60, star_control_starts=20),
    # full: the published results file's timings (F3's 1000 data sets at n = 14 and F2c's three seeds at n = 14 dominate)
    "full": dict(_COMMON, n_identity=8, identity_instances=300, relax_ns=(6, 8, 10, 12, 14, 16),
                 cw_ns=(6, 8, 10, 12), cw_n=12, cw_reps=300, k_reps=500, budget_ns=(6, 8, 10, 12, 14, 16),
                 tv_n=14, tv_ms=(4, 16, 64, 256, 1024, 4096), tv_reps=500, m2_reps=500,
                 floor_ns=(8, 10, 12, 14), floor_ms=(16, 64, 256, 1024, 4096), floor_reps=1000,
                 mixing_ns=(8, 10, 12, 14), mixing_reps=200,
                 deltas=(0.025, 0.05, 0.1, 0.15, 0.2, 0.3),
                 n_batches=10, cw2_ns=(8, 10, 12, 14), cw2_n=14, cw2_reps=500,
                 rate_ns=(16, 32, 64, 128, 256, 512, 1024, 2048),
                 calls_ns=(6, 8, 10, 12, 14, 16), calls_deltas=(0.025, 0.05, 0.1, 0.2, 0.3), k3_trials=800, cw2_seeds=3,
                 star_ns=(6, 8, 10, 12), star_n=12, star_reps=100, star_control_starts=30),
}
