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
    # (coarse to fine: lr at E = shared_E for every swept method, then E at its best lr); learning curves of every
    # shared method at about shared_curve_points rounds on shared_n_curve test pairs per stage
    shared_n_per_client=64, shared_E=4, sweep_seed=0, sweep_lr=(1e-3, 3e-3, 1e-2, 3e-2),
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
                  shared_steps=16, sweep_E=(1, 4), sweep_lr=(3e-2,), shared_n_val=16, shared_n_test=24, shared_n_chain=24,
                  shared_n_curve=8),
    # book: 3 seeds (1/3/5), SmolLM2 router features. Measured 232 s before the shared workflow (federated 127 for 20
    # trainings, SmolLM2 router 65, DPO 21, pretrain 6). Revision 3 (controls: VC-stage-blind, FedAvg-rank-matched,
    # centralized-eq on both workflows; FedProx/SCAFFOLD tuned on their own over 4 learning rates, coarse to fine;
    # learning curves of the shared methods) is not measured at book here (the lead runs it); estimated from single
    # book-size trainings timed at load ~1 (shared workflow 2.0-3.5 s per 48 steps, disjoint FedWave-VC 4.2 s at 8 x 8
    # steps, centralized-eq 3.1 s): drift sweep 32 trainings ~85 s, shared workflow 30 trainings with curves ~95 s,
    # disjoint workflow 26 trainings at 6 x 8 steps (was 8 x 8: it is now an untuned control) with 100 test pairs
    # (was 150) ~85 s, SmolLM2 on 32/24 strings per client ~30 s, DPO 21, pretrain 8, the rest ~15: ~340 s at that
    # load, about 10-15 % over the ~300 s target; the next levers are sweep_E (1, 4) and shared_steps 32.
    "book": dict(_COMMON, d=48, pretrain_steps=400, n_per_client=1000, rounds=6, local_steps=8, seeds=(1, 3, 5), ablation_seeds=(1,),
                 n_test=100, n_chain=100, n_curve=20, router_rounds=400, dpo_steps=40,
                 dpo_unlabeled=150, smollm2=True, smollm2_train=32, smollm2_test=24,
                 shared_steps=48, sweep_E=(1, 4, 16), shared_n_val=40, shared_n_test=60, shared_n_chain=60,
                 shared_n_curve=12),
    # full: 5 seeds (ablations 3), d 64. Not run at this revision; estimated from the book sections scaled by their
    # work (~18 ms per stacked step at d 64): the disjoint workflow, now an untuned control, at 12 rounds x 18 local
    # steps (was 16 x 18; 44 trainings with centralized-eq) ~13 min, the drift sweep (32 trainings of 128 steps, coarse
    # to fine over 4 learning rates) ~8 min, the shared workflow (50 trainings of 128 steps with curves) ~12 min,
    # SmolLM2 ~3 min, DPO ~4 min, evaluation ~4 min: ~44 min on 2 cores, at the edge of the 45 min budget.
    "full": dict(_COMMON, d=64, pretrain_steps=1200, n_per_client=2000, rounds=12, local_steps=18,
                 seeds=(1, 3, 5, 7, 9), ablation_seeds=(1, 3, 5), n_test=300, n_chain=300, n_curve=40, router_rounds=800,
                 dpo_steps=150, dpo_unlabeled=300, smollm2=True, smollm2_train=150, smollm2_test=60,
                 shared_steps=128, sweep_E=(1, 4, 16), shared_n_val=60, shared_n_test=100, shared_n_chain=100,
                 shared_n_curve=20),
}
