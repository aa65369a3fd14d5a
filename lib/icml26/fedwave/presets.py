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
    # the shared workflow (data.py): 16 pairs per client, a fixed total of shared_steps local steps per client, split
    # into rounds of E steps; (E, lr) tuned per method on the validation seed sweep_seed (experiments.drift_sweep)
    # (the full sweep_E x sweep_lr grid for every swept method; centralized and local-only over sweep_lr at
    # E = shared_E, each on its own, centralized-eq at local-only's choice; 0.1 added above the previous top rate
    # 0.03, where every federated method's optimum sat at 4a1e33e's book run); learning curves of every
    # shared method at about shared_curve_points rounds on shared_n_curve test pairs per stage.
    # 16 pairs, not 64: with 64 pairs local-only learnt sigma alone (full run at e6f987d: local-only 0.945 mean-stage
    # EM, centralized-eq 0.04-0.065 above it on the seeds that did not collapse), so pooling had nothing left to give.
    # Chosen on P1 and P1n only, in probes before any federated method ran on it (non-federated arms with one Adam,
    # centralized-eq at local-only's lr 1e-2; seeds 1/3/5 at book, 1..9 at full; FedWave and the baselines not run):
    # P1 at book 0.155 [0.125, 0.185] with 16 pairs, 0.153 [0.002, 0.304] with 32; at full (16 pairs) 0.309 [0.239,
    # 0.380], local-only 0.31 against centralized-eq 0.62; P1n (disjoint workflow, unchanged) -0.34 at book.
    shared_n_per_client=16, shared_E=4, sweep_seed=0, sweep_lr=(3e-3, 1e-2, 3e-2, 1e-1),
    sweep_methods=("FedAvg-single", "FedProx-single", "SCAFFOLD-single", "FedWave-VC"),
    shared_methods=("local-only", "FedAvg-single", "FedProx-single", "SCAFFOLD-single", "FedWave-VC", "VC-LoRA-avg",
                    "VC-stage-blind", "FedAvg-rank-matched", "centralized", "centralized-eq"),
    shared_curve_points=5,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: 1 seed, no SmolLM2. Sized to the 60 s budget (issue 41, helper revision): the disjoint workflow at 3 x 4
    # local steps, 24 test pairs and chains, the shared workflow at 8 local steps, its evaluation on 8 / 16 pairs per
    # stage, 10 DPO steps: 50 s inside the chapter, 57 s wall for `repro run` on the 2-core machine at load ~1 (federated
    # 10, drift sweep 10, shared workflow 10, pretrain 3, DPO 2); the previous sizes took 78-80 s wall there.
    "smoke": dict(_COMMON, d=48, pretrain_steps=200, n_per_client=200, rounds=3, local_steps=4, seeds=(1,), ablation_seeds=(1,),
                  n_test=24, n_chain=24, n_curve=8, router_rounds=150, dpo_steps=10,
                  dpo_unlabeled=48, smollm2=False, smollm2_train=0, smollm2_test=0,
                  shared_steps=8, sweep_E=(1, 4), sweep_lr=(3e-2, 1e-1), shared_n_val=8, shared_n_test=16, shared_n_chain=16,
                  shared_n_curve=6),
    # book: 3 seeds (1/3/5), SmolLM2 router features. Measured at 4a1e33e (lead's run, 2-core machine): 435 s inside
    # the chapter, 442 s wall (federated 105, drift sweep 94 for 32 trainings, shared workflow 115, SmolLM2 router 50,
    # DPO 31, router 8, pretrain 7). Not measured at book since; estimated from per-step costs (d 48: ~40 ms per
    # centralized-eq step, ~60 ms per 4-client stacked step, ~2.9 s per sweep training with its validation): the drift
    # sweep on the full E x lr grid, sweep_E (1, 4) x lr (0.01, 0.03, 0.1) for 4 methods plus 2 x 3 for centralized and
    # local-only (centralized-eq takes local-only's choice), 30 trainings ~87 s; the disjoint workflow on 60 test pairs
    # and 60 chains ~85 s; the shared workflow (10 methods x 3 seeds) ~115 s: ~390 s at that load, over the ~300 s
    # target; the next levers are lr 0.1 in the book sweep (never chosen at full; -10 trainings, ~-29 s), the disjoint
    # workflow's methods (10 x 3 seeds) and SmolLM2.
    "book": dict(_COMMON, d=48, pretrain_steps=400, n_per_client=1000, rounds=6, local_steps=8, seeds=(1, 3, 5), ablation_seeds=(1,),
                 n_test=60, n_chain=60, n_curve=20, router_rounds=400, dpo_steps=40,
                 dpo_unlabeled=150, smollm2=True, smollm2_train=32, smollm2_test=24,
                 shared_steps=48, sweep_E=(1, 4), sweep_lr=(1e-2, 3e-2, 1e-1), shared_n_val=40, shared_n_test=60,
                 shared_n_chain=60, shared_n_curve=12),
    # full: 5 seeds (ablations 3), d 64. Measured at e6f987d: 1970 s (federated 758, drift sweep 371 for 45 trainings,
    # shared workflow 445, SmolLM2 router 149, DPO 179, router 22, pretrain 18). This revision changes only the number
    # of shared pairs (no cost) and drops centralized-eq's 3 sweep trainings (~-25 s): ~1945 s, ~32 min on 2 cores.
    "full": dict(_COMMON, d=64, pretrain_steps=1200, n_per_client=2000, rounds=12, local_steps=18,
                 seeds=(1, 3, 5, 7, 9), ablation_seeds=(1, 3, 5), n_test=150, n_chain=150, n_curve=40, router_rounds=800,
                 dpo_steps=150, dpo_unlabeled=300, smollm2=True, smollm2_train=150, smollm2_test=60,
                 shared_steps=128, sweep_E=(1, 4, 16), sweep_lr=(1e-2, 3e-2, 1e-1), shared_n_val=60, shared_n_test=100,
                 shared_n_chain=100, shared_n_curve=20),
}
