"""Sizes of the basis-rotation chapter at the three scales (DESIGN.md "Three scales, one notebook").

Wall times are for the whole notebook on the shared 2-core machine (one torch thread), measured
with ``repro run basis-rotation --scale S``; see the chapter's report for the latest numbers.
The pipeline runs use ``shampoo_beta = 0.99`` instead of the official 0.999: the EMA horizon is
kept at roughly the same fraction of the run (the paper's ~1000-step horizon over thousands of
steps; ours ~100 steps over ~1000).
"""
from __future__ import annotations

from typing import Any

_MLP = dict(d_in=16, d_out=4, width=64, n_blocks=8, n_train=8192, cond=30.0, batch=64, lr=1e-3,
            eval_every=10, shampoo_beta=0.99, target_factor=1.5)
_HESS = dict(d_in=16, d_out=4, width=16, n_blocks=4, n_train=8192, cond=30.0, batch=64, lr=3e-3, block=1,
             shampoo_beta=0.99, n_hessian=2048, cauchy_draws=201)
_GPT = dict(n_head=4, lr=3e-3, eval_every=20, eval_batches=4, shampoo_beta=0.99, target_factor=1.1)
_TOY = dict(d=32, cond=100.0, lr=1e-2, sigma=0.05, last=200, freq=10)

PRESETS: dict[str, dict[str, Any]] = {
    # ~ 55-60 s under a load of ~6 on 2 cores (~20 s of CPU time)
    "smoke": dict(
        toy=dict(_TOY, taus=(0, 15), seeds=(0,), steps=2000), invariance=dict(tau=15, steps=500),
        traj=dict(steps=150, taus=(0, 8)), interactive_steps=150,
        mlp=dict(_MLP, steps=100, Ps=(1, 4), seeds=(0,), methods=("AdamW", "PipeDream-LR", "NAdamW", "BR (2nd, bi)"),
                 ablation=()),
        gpt=dict(_GPT, d_model=32, n_layer=2, ctx=32, batch=8, steps=40, Ps=(1, 2), seeds=(0,), max_chars=200_000,
                 methods=("AdamW", "BR (2nd, bi)")),
        hessian=dict(_HESS, steps=100, n_hessian=1024),
    ),
    # ~ 4.5 min under a load of ~5 on 2 cores (2 min of CPU time)
    "book": dict(
        toy=dict(_TOY, taus=(0, 7, 15, 31), seeds=(0, 1, 2), steps=2500), invariance=dict(tau=15, steps=2000),
        traj=dict(steps=400, taus=(0, 8)), interactive_steps=300,
        mlp=dict(_MLP, steps=800, Ps=(1, 4, 8), seeds=(0,), methods=("AdamW", "PipeDream-LR", "NAdamW", "BR (2nd, bi)"),
                 ablation=("BR (2nd, uni)", "BR (1st, bi)", "BR (1st, uni)")),
        gpt=dict(_GPT, d_model=32, n_layer=4, ctx=32, batch=16, steps=300, Ps=(1, 4), seeds=(0,), max_chars=None,
                 methods=("AdamW", "PipeDream-LR", "BR (2nd, bi)")),
        hessian=dict(_HESS, steps=400),
    ),
    # hours; a GPU when present
    "full": dict(
        toy=dict(_TOY, taus=(0, 1, 3, 7, 15, 31), seeds=(0, 1, 2), steps=3000), invariance=dict(tau=31, steps=3000),
        traj=dict(steps=600, taus=(0, 8)), interactive_steps=300,
        mlp=dict(_MLP, steps=3000, Ps=(1, 2, 4, 8), seeds=(0, 1, 2),
                 methods=("AdamW", "PipeDream-LR", "NAdamW", "BR (2nd, bi)"),
                 ablation=("BR (2nd, uni)", "BR (1st, bi)", "BR (1st, uni)"), shampoo_beta=0.995),
        gpt=dict(_GPT, d_model=96, n_layer=8, ctx=64, batch=32, steps=2500, Ps=(1, 4, 8), seeds=(0,), max_chars=None,
                 methods=("AdamW", "PipeDream-LR", "NAdamW", "BR (2nd, bi)", "BR (1st, uni)"), shampoo_beta=0.995),
        hessian=dict(_HESS, steps=1000),
    ),
}
