"""Sizes of the focalpolicy chapter at the three scales (DESIGN.md "Three scales, one notebook").

Every scale has the same keys (the tests run the ``full`` code path on ``smoke`` sizes). ChunkReach2D trains
two blocks of variants on the same demonstrations and seeds:

* ``main``: the paper's architecture, the conditional 1-D temporal UNet (`networks.ConditionalUnet1D`, DP3's
  ``conditional_unet1d`` scaled down), on which the coherence claims (C4, C6) are judged;
* ``mlp``: the 3x128 MLP over the flattened chunk (the chapter's first stand-in), now an ablation, with the
  w_f sweep, the LAS test (C3) and the plug-ins (C7), which are cheap enough to train for 1500-4000 steps only
  with it on 2 CPU cores.

Seeds train together as one ensemble per variant (the MLP as `networks.EnsembleChunkMLP`, the UNet as
`networks.VmapEnsemble`). Times: one torch thread on a 2-core machine shared with other jobs.

Unit costs measured here (one torch thread, a loaded 2-core machine): a UNet step of batch 128, T = 12, one
seed: 0.037 s at down dims (16, 32), 0.064 s at (16, 32, 64), 0.18 s at (32, 64, 128) (three seeds in one
``vmap`` pass against a loop over seeds: ``benchmarks/bench_focalpolicy.py``). An MLP ensemble step of 3 seeds:
0.007 s.

Reach keys beyond the blocks: ``plant`` (the planted per-chunk offset of the coherence positive controls),
``plant_success`` (the larger one of the success control P4c, 80 % of the largest action), ``neg_seeds`` (a
second seed group of -LAS and FlowPolicy-H12, the negative controls of C3/C7b), ``multimodal_block`` (the block
whose network and budget the multimodal runs use: the MLP on CPU, the UNet in the ``gpu`` variant).
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    n_obs_steps=2, n_action_steps=4, horizon=12, batch_size=128, weight_decay=1e-6,
    fixed_point=dict(iters=300, n=20_000, deltas=(0.01, 0.05)), las_draws=200_000,
    interactive=dict(iters=60, n=4000),
)


def _evals(steps: int, n: int = 10) -> tuple[int, ...]:
    """``n`` evenly spaced validation points (the training curves judged by the convergence rule)."""
    return tuple(sorted({round(steps * (i + 1) / n) for i in range(n)}))


_MAIN = ("FlowPolicy-H4", "FocalPolicy", "-FCO", "window 1-4")
_MLP_BOOK = ("FlowPolicy-H4", "FocalPolicy", "-LAS", "-FCO", "w_f=0", "w_f=1e-2", "w_f=1", "window 1-4",
             "FlowPolicy-H12", "FlowPolicy-H12+FCO", "FlowPolicy-H12+LAS", "LAS 3c0af28", "FM-10")
_MLP_FULL = _MLP_BOOK + ("FM-10+FCO", "adaptive")
_MULTI = ("FM-10", "FlowPolicy-H4", "FocalPolicy")

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: the whole notebook in ~60 s (the old smoke measured 30-37 s; the UNet block adds ~2 x 120 steps)
    "smoke": dict(_COMMON, seeds=(0,),
                  reach=dict(n_demos=30, val_demos=10, rollouts=10, fixed_rollouts=10, c3_step=240, plant=0.01,
                             plant_success=0.04, neg_seeds=(1,), multimodal_block="mlp",
                             main=dict(network="unet", net=dict(down_dims=(16, 32)), steps=120, lr=2e-3, warmup=12,
                                       batch_size=64, eval_steps=_evals(120, 6), variants=("FlowPolicy-H4", "FocalPolicy")),
                             mlp=dict(network="mlp", net=dict(hidden=(128, 128, 128)), steps=300, lr=3e-3, warmup=30,
                                      batch_size=128, eval_steps=_evals(300, 6), variants=("FlowPolicy-H4", "FocalPolicy")),
                             multimodal=("FocalPolicy",)),
                  metaworld=dict(tasks=("push-wall",), n_demos=2, steps=60, lr=3e-3, warmup=10, rollouts=1,
                                 max_steps=150, methods=("FocalPolicy",), network="mlp",
                                 net=dict(hidden=(128, 128, 128)))),
    # book: an estimate (not run in this revision; helpers may run smoke only): the old book measured 185 s
    # (MLP training 99 s for 10 variants x 3 seeds x 1500 steps, MetaWorld 43 s, multimodal 22 s). Added: the
    # UNet block, 4 variants x 3 seeds x 400 steps of batch 64 at down dims (16, 32) (~0.06 s per 3-seed step at
    # T = 12 -> ~80 s), three more MLP variants (~30 s), FlowPolicy-H4 on the multimodal task (~10 s): ~300 s;
    # the negative controls' second seed group (-LAS, FlowPolicy-H12 x 3 seeds, ~20 s) and the P4c rollouts: ~325 s
    "book": dict(_COMMON, seeds=(0, 1, 2),
                 reach=dict(n_demos=100, val_demos=20, rollouts=50, fixed_rollouts=50, c3_step=750, plant=0.01,
                            plant_success=0.04, neg_seeds=(3, 4, 5), multimodal_block="mlp",
                            main=dict(network="unet", net=dict(down_dims=(16, 32)), steps=400, lr=2e-3, warmup=40,
                                      batch_size=64, eval_steps=_evals(400), variants=_MAIN),
                            mlp=dict(network="mlp", net=dict(hidden=(128, 128, 128)), steps=1500, lr=3e-3, warmup=100,
                                     batch_size=128, eval_steps=_evals(1500), variants=_MLP_BOOK),
                            multimodal=_MULTI),
                 metaworld=dict(tasks=("push-wall",), n_demos=20, steps=1000, lr=3e-3, warmup=100, rollouts=10,
                                max_steps=200, methods=("FlowPolicy-H4", "FocalPolicy", "FM-10", "window 1-4"),
                                network="mlp", net=dict(hidden=(128, 128, 128)))),
    # full (CPU): an estimate from the unit costs above and the last measured full (1457 s: MLP 12 variants x
    # 6k steps ~600 s, MetaWorld 6 tasks x 6 methods x 3k steps ~820 s). Now: the UNet block at (16, 32, 64),
    # 4 variants x 3 seeds x 2000 steps of batch 128 (~0.6 s per step of all four -> ~1200 s), the MLP block at
    # 4000 steps (~450 s), MetaWorld as before with the MLP (~820 s): ~2500 s, near the 45-min budget.
    # gpu: the UNet at (64, 128, 256) everywhere, the plug-ins and -LAS in the UNet block, 20k steps (the
    # paper's ~4e4 at lr 1e-4 scaled by the larger rate), MetaWorld with the UNet at 10k steps. Not run: no GPU
    # was lent to this revision, so its time is unmeasured.
    "full": dict(_COMMON, seeds=(0, 1, 2),
                 reach=dict(n_demos=100, val_demos=20, rollouts=50, fixed_rollouts=100, c3_step=1000, plant=0.01,
                            plant_success=0.04, neg_seeds=(3, 4, 5), multimodal_block="mlp",
                            main=dict(network="unet", net=dict(down_dims=(16, 32, 64)), steps=2000, lr=1e-3, warmup=200,
                                      batch_size=128, eval_steps=_evals(2000, 12), variants=_MAIN),
                            mlp=dict(network="mlp", net=dict(hidden=(128, 128, 128)), steps=4000, lr=3e-3, warmup=300,
                                     batch_size=128, eval_steps=_evals(4000, 12), variants=_MLP_FULL),
                            multimodal=_MULTI),
                 metaworld=dict(tasks=("push-wall", "coffee-push", "box-close", "push", "pick-place", "assembly"),
                                n_demos=20, steps=3000, lr=3e-3, warmup=200, rollouts=20, max_steps=200,
                                methods=("FlowPolicy-H4", "FocalPolicy", "FM-10", "-FCO", "window 1-4",
                                         "FlowPolicy-H12+FCO"),
                                network="mlp", net=dict(hidden=(128, 128, 128))),
                 gpu=dict(
                     reach=dict(n_demos=100, val_demos=20, rollouts=50, fixed_rollouts=100, c3_step=5000, plant=0.01, plant_success=0.04,
                                neg_seeds=(3, 4, 5), multimodal_block="main",
                                main=dict(network="unet", net=dict(down_dims=(64, 128, 256), time_dim=128), steps=20_000, lr=3e-4,
                                          warmup=500, batch_size=128, eval_steps=_evals(20_000, 20),
                                          variants=_MAIN + ("-LAS", "FlowPolicy-H12", "FlowPolicy-H12+FCO",
                                                            "FlowPolicy-H12+LAS")),
                                mlp=dict(network="mlp", net=dict(hidden=(128, 128, 128)), steps=6000, lr=3e-3,
                                         warmup=300, batch_size=128, eval_steps=_evals(6000, 12), variants=_MLP_FULL),
                                multimodal=_MULTI),
                     metaworld=dict(tasks=("push-wall", "coffee-push", "box-close", "push", "pick-place", "assembly"),
                                    n_demos=20, steps=10_000, lr=3e-4, warmup=500, rollouts=20, max_steps=200,
                                    methods=("FlowPolicy-H4", "FocalPolicy", "FM-10", "-FCO", "window 1-4",
                                             "FlowPolicy-H12+FCO"),
                                    network="unet", net=dict(down_dims=(64, 128, 256), time_dim=128)))),
}
