"""Sizes of the lion chapter at the three scales (DESIGN.md "Three scales, one notebook").

Wall times of :func:`icml26.lion.experiments.run_all` measured on the 2-core dev machine, one torch
thread, machine otherwise idle (about 3x longer when other jobs share the cores); the notebook adds
its sympy block and figures.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    seed=0, sigma=1.0, heterogeneity=0.5, c_beta=0.5, c_eta_mv=0.25,
    rate_methods=("lion", "lion_vr", "dist", "dist_vr", "uu", "uu_vr"),
    digits_methods=("adamw", "sgdm", "signum", "lion", "lion_vr", "dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv"),
)

PRESETS: dict[str, dict[str, Any]] = {
    # run_all ~ 14 s of simulations + digits, + ~6 s for the 3-process distributed demo (spawn dominated)
    "smoke": dict(_COMMON, d=64, horizons=(256, 512, 1024, 2048), n_seeds=8, regimes=("a", "b"), n_rate=8,
                  n_grid=(1, 4, 16), T_speedup=1024, n_mv=(3, 15), T_mv=1000,
                  d_grid=(16, 64, 256), T_dscale=1024,
                  digits_steps=200, digits_workers=4, digits_seeds=(0,), digits_eval_every=50,
                  distributed_demo=dict(d=32, n_workers=3, T=50)),
    # run_all ~ 75 s of simulations + digits (rates 50 s, MV plateau 11 s, digits 11 s), + the demo
    "book": dict(_COMMON, d=64, horizons=(256, 512, 1024, 2048, 4096, 8192), n_seeds=8, regimes=("a", "b"), n_rate=8,
                 n_grid=(1, 2, 4, 8, 16), T_speedup=2048, n_mv=(3, 7, 15, 31, 63), T_mv=3000,
                 d_grid=(16, 64, 256), T_dscale=2048,
                 digits_steps=600, digits_workers=8, digits_seeds=(0,), digits_eval_every=50,
                 distributed_demo=dict(d=64, n_workers=3, T=200)),
    # hours allowed
    "full": dict(_COMMON, d=64, horizons=tuple(2 ** k for k in range(8, 15)), n_seeds=32, regimes=("a", "b"),
                 n_rate=8, n_grid=(1, 2, 4, 8, 16, 32), T_speedup=4096, n_mv=(3, 7, 15, 31, 63), T_mv=3000,
                 d_grid=(16, 64, 256, 1024), T_dscale=4096,
                 digits_steps=3000, digits_workers=8, digits_seeds=(0, 1, 2), digits_eval_every=100,
                 distributed_demo=dict(d=256, n_workers=4, T=1000)),
}
