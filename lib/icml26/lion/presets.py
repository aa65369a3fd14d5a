"""Sizes of the lion chapter at the three scales (DESIGN.md "Three scales, one notebook").

Wall times of the whole notebook (``repro run lion``, one torch thread, 2-core machine shared with
other jobs) are written next to each preset. ``full`` carries a ``gpu`` variant (used only when
``icml26.device()`` is CUDA: the simulator and the digits MLP compute there), larger in seeds, horizons,
dimensions and steps, toward the theorems' asymptotics; it has not been run, and no time is estimated
for it.
"""
from __future__ import annotations

from typing import Any


def half_octaves(low: float, high: float) -> tuple[int, ...]:
    """Horizons 2^low, 2^(low + 1/2), ..., 2^high (rounded): a fresh run each, slopes fitted over the last
    ``fit_last`` of them (a factor 8 in T), and sliding fits over 4 of them (a factor 2^1.5) for the
    local-slope curves that show whether a slope has stopped moving."""
    return tuple(int(round(2 ** (k / 2))) for k in range(int(2 * low), int(2 * high) + 1))


_COMMON: dict[str, Any] = dict(
    seed=0, fit_last=7, slope_window=4, sigma=1.0, heterogeneity=0.5, c_beta=0.5, c_eta_mv=0.25, regimes=("a", "b"),
    n_rate=7,                            # odd: a majority vote of 7 nodes never ties
    curvature_noise=0.5,                 # sample-dependent curvature 1 +- 0.5: average smoothness (A2) non-trivial
    rate_methods=("lion", "lion_vr", "dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv"),
    wd_broken=2.0,                       # a constant lambda: > 1/(2 eta T) at every T run here (control H1)
    curvature_range=(0.1, 1.0),          # the rotated objective's curvatures (non-separable d-scaling)
    gap_distance=4.0,                    # ||x_1 - x*||_2 of the fixed-gap d-scaling (Delta ~ 8 for every d)
    mv_eta_divisors=(1, 4, 16),          # fixed eta = eta0 / k: the vote bias isolated, and eta -> 0
    err_betas=(0.01, 0.03, 0.1), err_etas=(1e-4, 3e-4, 1e-3, 2e-3, 3e-3), T_err=300,
    u67_d=4,                             # Thm 7 vs 6 where T > d^3 n^4 is reachable
    digits_methods=("adamw", "sgdm", "signum", "lion", "lion_vr", "dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv"),
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: measured 54 s inside the notebook, 65 s for `repro run` (2-core machine shared with other jobs, load ~5)
    "smoke": dict(_COMMON, d=64, horizons=half_octaves(6, 10), n_seeds=4, n_seeds_central=4, mv_seeds=4,
                  n_grid=(1, 4, 16), T_speedup=512, n_mv=(3, 15, 31), T_mv=600,
                  d_grid=(16, 64, 256), T_dscale=512, err_seeds=4, T_err_a2=500,
                  u67_n=(1,), u67_horizons=half_octaves(7, 10),
                  fit_horizons=(128, 256, 512), fit_d=(16, 64), fit_n=(1, 4), fit_c_eta=(4.0, 16.0), fit_seeds=2,
                  digits_steps=60, digits_workers=4, digits_seeds=(0, 1, 2), digits_eval_every=10,
                  distributed_demo=dict(d=32, n_workers=3, T=50)),
    # book: measured 271 s for `repro run` at load ~2 and 426 s at load ~4.5 (the same shared machine; digits and
    # the rate runs take two thirds); 64 seeds for the single-node rate runs, whose VR-gain interval needs them
    "book": dict(_COMMON, d=64, horizons=half_octaves(8, 12), n_seeds=16, n_seeds_central=64, mv_seeds=8,
                 n_grid=(1, 2, 4, 8, 16), T_speedup=2048, n_mv=(3, 7, 15, 31, 63), T_mv=1200,
                 d_grid=(16, 64, 256), T_dscale=1024, err_seeds=8, T_err_a2=1000,
                 u67_n=(1,), u67_horizons=half_octaves(8, 11),
                 fit_horizons=(256, 512, 1024, 2048), fit_d=(16, 64), fit_n=(1, 4), fit_c_eta=(2.0, 8.0, 32.0),
                 fit_seeds=4, digits_steps=600, digits_workers=8, digits_seeds=(0, 1, 2, 3, 4), digits_eval_every=50,
                 distributed_demo=dict(d=64, n_workers=3, T=200)),
    # full: its wall time is in results/full/lion.json ("timings"); sized to stay well inside 45 min
    "full": dict(_COMMON, d=64, horizons=half_octaves(9, 14), n_seeds=32, n_seeds_central=64, mv_seeds=16,
                 n_grid=(1, 2, 4, 8, 16, 32), T_speedup=4096, n_mv=(3, 7, 15, 31, 63), T_mv=3000,
                 d_grid=(16, 64, 256, 1024), T_dscale=2048, err_seeds=16, T_err_a2=2000,
                 u67_n=(1, 3), u67_horizons=half_octaves(12.5, 15.5),
                 fit_horizons=(512, 1024, 2048, 4096), fit_d=(16, 64, 256), fit_n=(1, 4, 16),
                 fit_c_eta=(2.0, 8.0, 32.0), fit_seeds=8, digits_steps=3000, digits_workers=8,
                 digits_seeds=(0, 1, 2, 3, 4), digits_eval_every=100, distributed_demo=dict(d=256, n_workers=4, T=1000),
                 gpu=dict(horizons=half_octaves(8, 16), n_seeds=64, n_seeds_central=128, mv_seeds=32, n_grid=(1, 2, 4, 8, 16, 32, 64),
                          T_speedup=16384, T_mv=10000, d_grid=(16, 64, 256, 1024, 4096), T_dscale=16384,
                          u67_horizons=half_octaves(14.5, 18), fit_horizons=(1024, 2048, 4096, 8192, 16384),
                          fit_d=(16, 64, 256, 1024), fit_n=(1, 4, 16, 32), fit_seeds=16, digits_steps=10000,
                          digits_seeds=tuple(range(8)))),
}
