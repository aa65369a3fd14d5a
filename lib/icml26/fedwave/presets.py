"""Sizes of the fedwave chapter at the three scales (DESIGN.md "Three scales, one notebook").

Same keys at every scale. Wall times (whole notebook, `repro run`, one torch thread, 2-core machine shared with
other agents) are written next to each preset.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    n_layers=2, n_heads=4, pretrain_samples=20000, pretrain_lr=3e-3, pretrain_batch=64,
    lora_r=4, lora_alpha=8.0, batch=32, lr=1e-2, lr_min=1e-3, prox_mu=0.01, ema_beta=0.9, vcl_reg=True,
    methods=("local-only", "FedAvg-single", "FedProx-single", "SCAFFOLD-single", "FedWave-VC", "VC+EMA", "centralized",
             "centralized-eq", "VC-affine", "VC-IID"),
    curve_methods=("FedAvg-single", "FedProx-single", "FedWave-VC", "VC+EMA", "centralized"),
    router_hidden=64, router_lr=3e-3, router_steps=1, dpo_beta=0.1, dpo_lr=1e-3, dpo_batch=32, dpo_qs=(0.3, 0.5, 0.7, 0.9),
    ablation_methods=("VC-affine", "VC-IID"),
    # the shared workflow (data.py): 64 pairs per client, a fixed total of shared_steps local steps per client, split
    # into rounds of E steps; (E, lr) tuned per method on the validation seed sweep_seed (experiments.drift_sweep)
    # (the full sweep_E x sweep_lr grid for every swept method; centralized, centralized-eq and local-only over
    # sweep_lr at E = shared_E, each on its own; 0.1 added above the previous top rate 0.03, where every federated
    # method's optimum sat at 4a1e33e's book run); learning curves of every
    # shared method at about shared_curve_points rounds on shared_n_curve test pairs per stage
    shared_n_per_client=64, shared_E=4, sweep_seed=0, sweep_lr=(3e-3, 1e-2, 3e-2, 1e-1),
    sweep_methods=("FedAvg-single", "FedProx-single", "SCAFFOLD-single", "FedWave-VC"),
    shared_methods=("local-only", "FedAvg-single", "FedProx-single", "SCAFFOLD-single", "FedWave-VC", "VC-LoRA-avg",
                    "VC-stage-blind", "FedAvg-rank-matched", "centralized", "centralized-eq"),
    shared_curve_points=5,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: 1 seed, no SmolLM2. Before the shared workflow: 31 s inside the chapter (federated 15, pretrain 3, DPO 4).
    # With the shared workflow (issue 41 item 4), SCAFFOLD and the drift sweep, and the disjoint workflow at 4 x 4
    # local steps (was 4 x 8, as book halves its local steps too): 48-56 s inside the chapter, 54-62 s wall for
    # `repro run` (three runs), on the 2-core machine at load ~3.3 (other agents): federated 12-15, shared workflow 7,
    # drift sweep 5-7, DPO 4, pretrain 3-6.
    "smoke": dict(_COMMON, d=48, pretrain_steps=200, n_per_client=200, rounds=4, local_steps=4, seeds=(1,), ablation_seeds=(1,),
                  n_test=40, n_chain=40, n_curve=16, router_rounds=150, dpo_steps=20,
                  dpo_unlabeled=48, smollm2=False, smollm2_train=0, smollm2_test=0,
                  shared_steps=16, sweep_E=(1, 4), sweep_lr=(3e-2, 1e-1), shared_n_val=16, shared_n_test=24, shared_n_chain=24,
                  shared_n_curve=8),
    # book: 3 seeds (1/3/5), SmolLM2 router features. Measured at 4a1e33e (lead's run, 2-core machine): 435 s inside
    # the chapter, 442 s wall (federated 105, drift sweep 94 for 32 trainings, shared workflow 115, SmolLM2 router 50,
    # DPO 31, router 8, pretrain 7). This revision is not measured at book here; estimated from those timings (~2.9 s
    # per sweep training): the drift sweep on the full E x lr grid, sweep_E (1, 4) x lr (0.01, 0.03, 0.1) for 4
    # methods plus 3 x 3 for centralized, centralized-eq and local-only, 33 trainings ~95 s (E = 16, 3 rounds of the
    # 48 steps, and lr 3e-3, never chosen at 4a1e33e's book run, are left to full); the disjoint workflow, a control
    # whose models sat at the base, on 60 test pairs and 60 chains (was 100 / 100) ~85 s (-20 s): ~415 s at that
    # load, still over the ~300 s target; the next levers are the disjoint workflow's methods (10 x 3 seeds) and SmolLM2.
    "book": dict(_COMMON, d=48, pretrain_steps=400, n_per_client=1000, rounds=6, local_steps=8, seeds=(1, 3, 5), ablation_seeds=(1,),
                 n_test=60, n_chain=60, n_curve=20, router_rounds=400, dpo_steps=40,
                 dpo_unlabeled=150, smollm2=True, smollm2_train=32, smollm2_test=24,
                 shared_steps=48, sweep_E=(1, 4), sweep_lr=(1e-2, 3e-2, 1e-1), shared_n_val=40, shared_n_test=60,
                 shared_n_chain=60, shared_n_curve=12),
    # full: 5 seeds (ablations 3), d 64. Not run at this revision; estimated from the book sections scaled by their
    # work (~18 ms per stacked step at d 64): the disjoint workflow at 12 rounds x 18 local steps (its best chance to
    # leave the base, L1) on 150 test pairs and chains (was 300) ~12 min, the drift sweep on the full grid (45
    # trainings of 128 steps: 4 methods x E (1, 4, 16) x lr (0.01, 0.03, 0.1), 3 x 3 for the centralized arms and
    # local-only) ~11 min, the shared workflow (50 trainings of 128 steps with curves) ~12 min, SmolLM2 ~3 min, DPO
    # ~4 min, evaluation ~3 min: ~45 min on 2 cores, at the edge of the budget.
    "full": dict(_COMMON, d=64, pretrain_steps=1200, n_per_client=2000, rounds=12, local_steps=18,
                 seeds=(1, 3, 5, 7, 9), ablation_seeds=(1, 3, 5), n_test=150, n_chain=150, n_curve=40, router_rounds=800,
                 dpo_steps=150, dpo_unlabeled=300, smollm2=True, smollm2_train=150, smollm2_test=60,
                 shared_steps=128, sweep_E=(1, 4, 16), sweep_lr=(1e-2, 3e-2, 1e-1), shared_n_val=60, shared_n_test=100,
                 shared_n_chain=100, shared_n_curve=20),
}
