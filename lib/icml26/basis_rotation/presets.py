"""Sizes of the basis-rotation chapter at the three scales (DESIGN.md "Three scales, one notebook").

Wall times are for the whole notebook on the shared 2-core machine (one torch thread), measured
with ``repro run basis-rotation --scale S``; see the chapter's report for the latest numbers.
The pipeline runs use ``shampoo_beta = 0.99`` instead of the official 0.999: the EMA horizon is
kept at roughly the same fraction of the run (the paper's ~1000-step horizon over thousands of
steps; ours ~100 steps over ~1000); ``full`` uses 0.995 (a ~200-step horizon over 3000 steps).
PipeDream-LR's correction window and the warm-up follow the official fractions of the run
(:data:`~icml26.basis_rotation.pipeline.T_CORR_FRACTION`, :data:`~icml26.basis_rotation.pipeline.WARMUP_FRACTION`).

The 2-D intuition runs (claims C1d/C1e) use one horizon and one window at every scale (:data:`_TRAJ`): with a
constant step size, every method's iterates become unstable at tau = 4 once Adam's second moment has decayed
(after about 400 steps), so "the last 50 steps" of a 400- or 600-step run measured different phases at
``book`` and ``full``. ``mlp["controls"]`` are extra methods run at P = 1 and the deepest P that are not the
paper's (the AdamW beta1 = 0.6 momentum control). ``mlp["lr_grid"]``: learning rates at which every method
also runs synchronously (P = 1), to test whether basis rotation's synchronous lead is an artefact of the
shared lr 1e-3. ``mlp["lr_grid_deep"]`` (``full`` only, ~12 runs, ~2 min): the same grid at the deepest P for
``mlp["lr_deep_methods"]``, so that each method's slowdown can be read at its own best learning rate (the third
review: basis rotation on the MLP is far more delay-sensitive per unit of staleness than in the paper).

Issue 53, item 6 (coverage) adds, at the deepest P only: ``mlp["nostash_methods"]`` trained without weight
stashing (claim C13; each such run costs about 1.3 times a stashed one: one extra no-grad forward per step), and
``mlp["split_freqs"] = (short, long)``, the direction test of stage-aware refresh (claim C11r: the first half of the
stages at the short period and the rest at the long one, against the reverse; two runs per seed). The depth
pathology (C12) reuses the main sweep. Measured at ``smoke`` (one seed, 100 steps, 2 shared cores): no stashing
1.3 s (2 runs at P = 8, with the E1 checks), direction test 1.5 s (2 runs), the whole notebook 37 s wall. Carried to
``book`` (9 and 6 runs of 800 steps at P = 8; a ``book`` MLP step costs about 0.6 of a ``smoke`` one, 2.4 against 4.1
ms, as the runs are longer): about 28 s and 22 s, 50 s in all, which would take the ~260 s estimate past the 300 s
budget. To make room, ``book``'s learning-rate grid at P = 1 (a diagnostic, not a claim) drops 3e-4 (12 runs, ~15 s;
``full`` keeps it): ~295 s estimated, close to the budget, so ``book`` should be timed before it is published.

``full`` carries a ``gpu`` variant, used only when ``icml26.device()`` is CUDA (the MLP and GPT runs compute there;
the toys and the Hessian diagnostic stay on the CPU): a 32-block *residual* MLP (so that 32 blocks train) run at
``P`` in {1, 8, 32}, one block per stage at ``P = 32`` as in the paper's 95M model, and a GPT with 16 layers at
``P = 16`` and more steps, so that AdamW reaches C10's target. It has **not been run or timed** (no GPU was lent
to the session that wrote it); its size is an estimate for a ~10-minute MLP part on one H100, where these small
models are bound by kernel launches rather than arithmetic.
"""
from __future__ import annotations

from typing import Any

_MLP = dict(d_in=16, d_out=4, width=64, n_blocks=8, n_train=8192, cond=30.0, batch=64, lr=1e-3,
            eval_every=10, shampoo_beta=0.99, target_factor=1.5,
            target_grid=(1.25, 1.5, 2.0, 3.0, 4.0, 6.0), freq_slow=100, freq=10)
_HESS = dict(d_in=16, d_out=4, width=16, n_blocks=4, n_train=8192, cond=30.0, batch=64, lr=3e-3, block=1,
             shampoo_beta=0.99, n_hessian=2048, cauchy_draws=201)
_GPT = dict(n_head=4, lr=3e-3, eval_every=20, eval_batches=4, shampoo_beta=0.99, target_factor=1.1)
_TOY = dict(d=32, cond=100.0, lr=1e-2, sigma=0.05, last=200, freq=10)
# lr 3e-3: the largest of {1e-2, 3e-3} at which *Adam alone* stays non-divergent at tau = 31 (pilot, seed 0,
# 1500 steps: Adam's risk ratio 528x at 1e-2, 3.95x at 3e-3; chosen on Adam only, before any claim was declared)
_KRON = dict(taus=(0, 31), lr=3e-3, sigma=0.05, freq=10, shampoo_beta=0.95, last=200)
_ALIGN = dict(angles=(0.0, 7.5, 15.0, 22.5, 30.0, 37.5, 45.0), tau=4)
_TRAJ = dict(steps=350, window=(150, 350), taus=(0, 4))

_FULL_MLP = dict(_MLP, steps=3000, Ps=(1, 2, 4, 8), seeds=(0, 1, 2),
                 methods=("AdamW", "PipeDream-LR", "NAdamW", "BR (2nd, bi)"),
                 ablation=("BR (2nd, uni)", "BR (1st, bi)", "BR (1st, uni)"), controls=("AdamW (beta1 0.6)",),
                 lr_grid=(3e-4, 1e-3, 3e-3), lr_grid_deep=(3e-4, 3e-3), lr_deep_methods=("NAdamW", "BR (2nd, bi)"),
                 shampoo_beta=0.995, nostash_methods=("AdamW", "PipeDream-LR", "NAdamW", "BR (2nd, bi)"),
                 split_freqs=(5, 10))
_FULL_GPT = dict(_GPT, d_model=64, n_layer=4, ctx=64, batch=16, steps=1000, Ps=(1, 4), seeds=(0, 1, 2), max_chars=None,
                 methods=("AdamW", "BR (2nd, bi)"), shampoo_beta=0.995)

PRESETS: dict[str, dict[str, Any]] = {
    # measured (issue 26 revision): 15.9 s for the whole notebook (11.4 s of timed sections), one torch thread;
    # issue 53 adds the 350-step 2-D runs and BR with period 100 at P = 1 (see the chapter's report for the latest)
    "smoke": dict(
        toy=dict(_TOY, taus=(0, 15), seeds=(0,), steps=2000), invariance=dict(tau=15, steps=500),
        traj=dict(_TRAJ, seeds=(0,)), interactive_steps=150,
        align=dict(_ALIGN, angles=(0.0, 22.5, 45.0), steps=150, seeds=(0,)),
        kron=dict(_KRON, steps=1000, seeds=(0,)),
        mlp=dict(_MLP, steps=100, Ps=(1, 8), seeds=(0,), methods=("AdamW", "PipeDream-LR", "NAdamW", "BR (2nd, bi)"),
                 ablation=(), controls=("AdamW (beta1 0.6)",), lr_grid=(1e-3, 3e-3),
                 nostash_methods=("AdamW", "BR (2nd, bi)"), split_freqs=(5, 10)),
        gpt=dict(_GPT, d_model=32, n_layer=2, ctx=32, batch=8, steps=40, Ps=(1, 2), seeds=(0,), max_chars=200_000,
                 methods=("AdamW", "BR (2nd, bi)")),
        hessian=dict(_HESS, steps=100, n_hessian=1024),
    ),
    # measured (issue 26 revision): 151 s for the whole notebook (MLP 94 s: 48 runs x 800 steps, ~2.4 ms/step;
    # GPT 32 s: 12 runs x 300 steps; toys ~12 s). Issue 53 adds 33 MLP runs (period 100 at P = 1, the AdamW
    # beta1 = 0.6 control at P = 1 and 8, the lr grid at P = 1): ~81 runs, estimated ~230 s in all. The third review
    # adds P = 4 for the four main methods (12 runs, ~15 s: two depths above P = 1 for the exponent fit C4f) and
    # two extra 2-D runs at tau = 0 (~4 s): ~250 s estimated. Issue 53 item 6: +15 runs at P = 8 (no stashing, the
    # refresh direction test; ~50 s), -12 runs of the P = 1 lr grid (3e-4 dropped, ~15 s): ~295 s estimated
    "book": dict(
        toy=dict(_TOY, taus=(0, 7, 15, 31), seeds=(0, 1, 2), steps=2500), invariance=dict(tau=15, steps=2000),
        traj=dict(_TRAJ, seeds=(0, 1, 2)), interactive_steps=300,
        align=dict(_ALIGN, steps=300, seeds=(0, 1, 2)),
        kron=dict(_KRON, steps=3000, seeds=(0, 1, 2)),
        mlp=dict(_MLP, steps=800, Ps=(1, 4, 8), seeds=(0, 1, 2), methods=("AdamW", "PipeDream-LR", "NAdamW", "BR (2nd, bi)"),
                 ablation=("BR (2nd, uni)", "BR (1st, bi)", "BR (1st, uni)"), controls=("AdamW (beta1 0.6)",),
                 lr_grid=(1e-3, 3e-3), nostash_methods=("AdamW", "NAdamW", "BR (2nd, bi)"), split_freqs=(5, 10)),
        gpt=dict(_GPT, d_model=32, n_layer=4, ctx=32, batch=16, steps=300, Ps=(1, 4), seeds=(0, 1, 2), max_chars=None,
                 methods=("AdamW", "BR (2nd, bi)")),
        hessian=dict(_HESS, steps=400),
    ),
    # measured (results/full, commit add66a5): 1130 s on 2 shared cores (MLP 676 s: 72 runs x 3000 steps;
    # GPT 406 s; toys ~40 s). Issue 53 adds 33 MLP runs (~300 s) and shortens the 2-D runs: ~1450 s estimated;
    # the third review adds two 2-D runs at tau = 0 (~4 s) and the golden-fixture check (~2 s)
    "full": dict(
        # fourth review: 10 seeds for the toys (3-seed t-intervals, multiplier 4.30, left C1a/C1c/C1d undecided with
        # every seed on one side; ~70 s more) and the alignment runs at book's 300 steps (at 600 they reach the late
        # tau = 4 instability that C1d/C1e's fixed window avoids: C8b's sign flipped between 300 and 600 steps)
        toy=dict(_TOY, taus=(0, 1, 3, 7, 15, 31), seeds=tuple(range(10)), steps=3000), invariance=dict(tau=31, steps=3000),
        traj=dict(_TRAJ, seeds=tuple(range(10))), interactive_steps=300,
        align=dict(_ALIGN, steps=300, seeds=(0, 1, 2, 3, 4)),
        kron=dict(_KRON, steps=3000, seeds=(0, 1, 2, 3, 4)),
        mlp=_FULL_MLP,
        gpt=_FULL_GPT,
        hessian=dict(_HESS, steps=1000),
        # issue 53 item 6: the 12 + 6 extra runs at P = 8 (no stashing, direction test; 3000 steps, ~3 ms a step, 1.3x
        # without stashing) add ~230 s: ~1700 s estimated on 2 cores
        gpu=dict(
            mlp=dict(_FULL_MLP, n_blocks=32, residual=True, Ps=(1, 8, 32), lr_grid_deep=(), lr_deep_methods=()),
            gpt=dict(_FULL_GPT, d_model=128, n_layer=16, ctx=128, batch=32, steps=2000, Ps=(1, 16))),
    ),
}
