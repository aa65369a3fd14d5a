"""Sizes of the lion chapter at the three scales (DESIGN.md "Three scales, one notebook").

Wall times of the whole notebook (``repro run lion``, one torch thread, 2-core machine shared with
other jobs) are written next to each preset; ``full`` is an estimate from the book run's per-section
timings (results JSON), scaled by each section's work.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    seed=0, sigma=1.0, heterogeneity=0.5, c_beta=0.5, c_eta_mv=0.25, regimes=("a", "b"), n_rate=8,
    rate_methods=("lion", "lion_vr", "dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv"),
    wd_broken=2.0,                       # a constant lambda: > 1/(2 eta T) at every T run here (control H1)
    curvature_range=(0.1, 1.0),          # the rotated objective's curvatures (non-separable d-scaling)
    mv_eta_divisors=(1, 4, 16),          # fixed eta = eta0 / k: the vote bias isolated, and eta -> 0
    err_betas=(0.01, 0.03, 0.1), err_etas=(1e-4, 3e-4, 1e-3, 2e-3, 3e-3), T_err=300,
    digits_methods=("adamw", "sgdm", "signum", "lion", "lion_vr", "dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv"),
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: measured 28 s for the whole notebook (repro run, 2-core machine shared with other jobs; 22.5 s
    # inside the chapter: rates 4.9, multi-process demo 4.6 (spawn), digits 3.7, the rest < 1.1 each)
    "smoke": dict(_COMMON, d=64, horizons=(256, 512, 1024, 2048), n_seeds=8,
                  n_grid=(1, 4, 16), T_speedup=1024, n_mv=(3, 15), T_mv=1000,
                  d_grid=(16, 64, 256), T_dscale=1024, err_seeds=4, fit_c_eta=(4.0, 16.0), fit_c_beta=(0.5,),
                  digits_steps=100, digits_workers=4, digits_seeds=(0, 1, 2), digits_eval_every=50,
                  distributed_demo=dict(d=32, n_workers=3, T=50)),
    # book: measured 82 s for the whole notebook (80 s inside: digits 25, rates 20.6, MV plateau 14.3,
    # multi-process 7.6, speedup 2.8, d-scaling 1.7, bound fit 1.3, error recursion 0.6)
    "book": dict(_COMMON, d=64, horizons=(256, 512, 1024, 2048, 4096, 8192), n_seeds=8,
                 n_grid=(1, 2, 4, 8, 16), T_speedup=2048, n_mv=(3, 7, 15, 31, 63), T_mv=2000,
                 d_grid=(16, 64, 256), T_dscale=2048, err_seeds=8, fit_c_eta=(2.0, 8.0, 32.0), fit_c_beta=(0.25, 1.0),
                 digits_steps=600, digits_workers=8, digits_seeds=(0, 1, 2), digits_eval_every=50,
                 distributed_demo=dict(d=64, n_workers=3, T=200)),
    # full: not run for this revision; estimated from the book sections scaled by their work: rates x8
    # (horizons to 2^14, 32 seeds) ~165 s, digits x5 ~125 s, MV x6 ~86 s, speedup x16 ~45 s, d-scaling
    # (adds a rotated d = 1024) ~35 s, multi-process ~20 s, bound fit ~10 s: about 8-9 min on an idle
    # 2-core machine, ~15-20 min shared, well inside the 45 min budget
    "full": dict(_COMMON, d=64, horizons=tuple(2 ** k for k in range(8, 15)), n_seeds=32,
                 n_grid=(1, 2, 4, 8, 16, 32), T_speedup=4096, n_mv=(3, 7, 15, 31, 63), T_mv=3000,
                 d_grid=(16, 64, 256, 1024), T_dscale=4096, err_seeds=16, fit_c_eta=(2.0, 8.0, 32.0),
                 fit_c_beta=(0.25, 1.0), digits_steps=3000, digits_workers=8, digits_seeds=(0, 1, 2),
                 digits_eval_every=100, distributed_demo=dict(d=256, n_workers=4, T=1000)),
}
