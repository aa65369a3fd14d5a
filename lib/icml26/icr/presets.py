"""Sizes of the icr chapter at the three scales (DESIGN.md "Three scales, one notebook").

Channels ``(c1, c2, c3)`` of the 8x8 U-Net set the feature dimensions: ``d = c2`` for ``dec4`` (the analogue
of the paper's ``dec.16x16 block1``, the primary layer) and ``d = c3`` for ``dec2``. Data-limited runs keep
``d(dec4) <= N / 4``. ``workers``: per-seed tasks run in a process pool of that many single-thread workers.
Wall times of the whole notebook (``repro run icr``, 2-core development machine) are noted next to each preset.
``ckpt_span``: the first checkpoint of a data-limited run sits at ``steps // ckpt_span`` (log-spaced to the end).
``curve_points``: evenly spaced steps at which the data-rich runs' held-out loss is recorded (their learning curve).

``full["gpu"]`` (used when :func:`icml26.device` finds CUDA) extends the runs toward the paper's regime: the whole
1,297-image pool trained as a data-limited run long enough to memorise (the N = 128/256/512 onsets at 1,096-1,480 epochs
of the CPU `full` run put it near 25-40K steps), so the (N, onset) fit of C18 and the ICR-argmin / held-out-optimum
clocks span a factor 10 in N; and a data-rich run four times longer (16K steps), which the CPU `full` run's held-out
loss (still falling at its last checkpoint in every seed) says it needs to approach convergence. Finer checkpoints and
more pool workers. Its wall time is an *estimate* (never measured: no GPU in the sessions that wrote it): ~380K training
steps at roughly 1-2 ms of GPU time each over 6 processes, plus the sweeps, about 10-15 minutes on one H100.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    seed=0, layer="dec4", level=4, layers=("dec4", "dec2"), sweep_levels=(4, 3, 0), sigma_fix=0.4, ema_beta=0.999,
    lr=2e-3, heun_steps=18, n_views=8, sigma_range=(0.005, 5.0), robust_n=(64, 128, 256, 512, 1297),
    robust_v=(2, 4, 8, 16), robust_levels=(1, 2, 3, 4), memo_threshold=0.1, n_test=500, window_steps=2,
    tau_grid=(0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2), rich_bs=64, limited_bs=64, limited_ckpts=10, ckpt_span=50,
    curve_points=20,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: measured 46.5 s and 44.6 s (`repro run icr --scale smoke`, 2-core machine shared with a `full` run, 1 worker;
    # the code before revision 3 took 42.1 s between those two runs; single runs swung by +-10 s with the load). Budget 60 s.
    "smoke": dict(_COMMON, channels=(8, 16, 32), rich_seeds=(0,), rich_steps=200, rich_ckpts=3, n_icr=512, n_sigma=6,
                  limited_n=(128,), limited_seeds=(0,), limited_steps={128: 300}, limited_ckpts=4, n_gen=32,
                  probe_max_iter=200, robust_v=(2, 4, 8), robust_levels=(1, 4), workers=1, curve_points=10),
    # book: measured 191 s before revision 3 (repro run; pool of 2 single-thread workers: data-rich tasks 34-36 s, N = 128
    # tasks 63-74 s); after it (c29be27: controls, learning curves) 658 s in a fresh-clone `make book` at 2ae4209 under
    # helper load, over the 5-min budget: to be re-sized from a lone run's section timings.
    "book": dict(_COMMON, channels=(16, 32, 64), rich_seeds=(0, 1, 2), rich_steps=1000, rich_ckpts=6, n_icr=512,
                 n_sigma=8, limited_n=(128,), limited_seeds=(0, 1, 2), limited_steps={128: 3000}, n_gen=64,
                 probe_max_iter=1000, workers=2),
    # full: the published run (results/full/icr.json, commit 30f3863) took 4,350 s on a machine shared with other runs
    # (its tasks: data-rich 376-532 s, N = 128/256/512 352-394 / 511-721 / 1,029-1,050 s, 8,500 CPU-s in all on a
    # pool of 2 single-thread workers). The earlier unshared run of the same sizes took 1,771 s with data-rich tasks of
    # 160-170 s, about a third of the shared ones: scaled by that, the tasks need ~2,800 CPU-s, ~25 min on 2 workers,
    # plus the window-sigma re-measure added since (10 checkpoints x 1,297 images x 8 views per data-rich seed, under a
    # minute in all). Not re-measured alone: the lead runs `full`.
    "full": dict(_COMMON, channels=(16, 32, 64), rich_seeds=(0, 1, 2, 3, 4), rich_steps=4000, rich_ckpts=10,
                 n_icr=1297, n_sigma=12, limited_n=(128, 256, 512), limited_seeds=(0, 1, 2),
                 limited_steps={128: 4000, 256: 8000, 512: 16000}, limited_ckpts=14, n_gen=256, probe_max_iter=2000,
                 workers=2,
                 # GPU variant (estimated ~10-15 min on one H100, not measured; module docstring)
                 gpu=dict(limited_n=(128, 256, 512, 1297),
                          limited_steps={128: 4000, 256: 8000, 512: 16000, 1297: 64000},
                          limited_ckpts=20, ckpt_span=200, workers=6, rich_steps=16000, rich_ckpts=14)),
}
