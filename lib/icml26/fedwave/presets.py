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
    # 8 readings (5 before the review of 5287791): the book's convergence rule needs >= 6 points per curve, and the
    # curves of the claim arms are linked to C1s and C2s; at the largest E of a grid (full: E = 16, 8 rounds) every
    # round is read. ~+3 curve-set decodes per shared training, ~+40 s at full (estimated, not timed)
    # Since the full run at 1a269a0 (FedWave-VC's held-out curve fell in its last fifth, 8 of 14 seeds passing the
    # convergence rule) every shared-workflow method is read at these rounds on shared_n_curve *validation* pairs per
    # stage of its seed (experiments.shared_val_sets, never a test pair) and the round with the most validation items
    # right is the one tested (experiments.RoundSelector: early stopping, the same rule for every method). The reads
    # replace the former curve reads on test pairs, so they cost the same (0.22 s per 80 items decoded at full width,
    # timed on this machine at this revision, beside a background run).
    shared_curve_points=8,
    # the disjoint workflow, tuned like the shared one before any test seed (issue 41, review of the book run at
    # 3c0bea4, finding 1): FedWave-VC and FedAvg-single over disjoint_sweep_E x disjoint_sweep_lr at the preset's total
    # of rounds x local_steps local steps per client, on sweep_seed; the largest E is one round (each client trains
    # alone, then one average); FedProx/SCAFFOLD take FedAvg-single's choice, the FedWave variants FedWave-VC's
    # (experiments.DISJOINT_TIED); curves read at about curve_points rounds
    disjoint_sweep_methods=("FedAvg-single", "FedWave-VC"),
    # centralized (the arm of C2s) tuned on two validation seeds by FedWave-VC's rule, the most items right
    # (experiments.best_over_seeds; the one-SE rule before the review of 5287791)
    central_val_seeds=(0, 2),
    # the arms of the paper claims C1s and C2s (and C1s's planted controls), run on claim_seeds; the rest on seeds.
    # VC-stage-blind and local-only, the arms of the negative controls N1b and N2s, run there too (review of 5287791,
    # defect 1): a control read on fewer seeds than its claim straddles, and so "fails" as required, more often than
    # the claim's own interval clears 0, so a capacity-only lead could pass C1s with its control passing too
    claim_methods=("FedWave-VC", "FedAvg-single", "FedProx-single", "SCAFFOLD-single", "centralized", "VC-stage-blind",
                   "local-only"),
    # the arms only C2s and its negative control N2s read (centralized, local-only) run on c2_seeds, a subset of
    # claim_seeds (experiments.shared_seeds): C2s has its power on far fewer seeds than C1w (full at 1a269a0: per-seed
    # SD 0.046 of C2s's least favourable difference, power 1.00 at 5 seeds for a true gap of 0), so the C1 arms'
    # extra seeds need not train them; c2_seeds contains seeds, where P1 reads local-only
    c2_methods=("centralized", "local-only"),
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: 1 seed, no SmolLM2. Sized to the 60 s budget (issue 41): the disjoint workflow at 3 x 4 local steps (its
    # sweep one setting per method), 16 test pairs and chains, the shared workflow at 6 local steps (8 before the review
    # of 5287791; now E = 1 only, so its 6 rounds give the >= 6 curve points the convergence rule needs, read on 4
    # pairs per stage, 6 before), its evaluation on
    # 8 / 12 pairs per stage, 10 DPO steps. At 5646eca: 45.6 s inside the chapter at load ~2.3 (50 s inside, 57 s wall
    # at load ~1 before); this revision, measured at the same load before the smaller test sets: 52 s inside (disjoint
    # sweep +1.8, the wrong-stage reads of the baselines +0.9, centralized tuned on 2 validation seeds). Review of
    # 5287791, on this machine beside a long background run (load ~2): HEAD 5287791 68.2 s wall, 61.5 s inside; this
    # revision 66.2-70.3 s wall, 60.3-63.7 s inside over three runs (the smaller shared workflow pays for the curve
    # readings and the E = 1 step measurement); over 60 s at that load either way.
    "smoke": dict(_COMMON, d=48, pretrain_steps=200, n_per_client=200, rounds=3, local_steps=4, seeds=(1,), ablation_seeds=(1,),
                  n_test=16, n_chain=16, n_curve=8, router_rounds=150, dpo_steps=10,
                  dpo_unlabeled=48, smollm2=False, smollm2_train=0, smollm2_test=0,
                  shared_steps=6, shared_E=1, sweep_E=(1,), sweep_lr=(3e-2,), shared_n_val=8, shared_n_test=12, shared_n_chain=12,
                  shared_n_curve=4, curve_points=3, route_test=100, disjoint_sweep_E=(4,), disjoint_sweep_lr=(1e-2,), claim_seeds=(1,),
                  c2_seeds=(1,), disjoint_seeds=(1,)),
    # book: 3 seeds (1/3/5), SmolLM2 router features. Measured at 3c0bea4 (lead's run, clean tree): 388 s (federated
    # 96, drift sweep 85 for 30 trainings, shared workflow 114, SmolLM2 router 32, DPO 28, pretrain 7, router 6).
    # This revision (review of that run), estimated from its per-training costs (~2.8 s per 48-step training with its
    # validation, ~7.7 s per centralized one): the disjoint sweep, 2 methods x E (1, 48) x lr (0.01, 0.03), +8
    # trainings ~+22 s (the old recipe, E = 8 at lr 0.01, was that run's disjoint workflow: L1 -0.011); lr 0.1 dropped
    # from the shared sweep (chosen by no method at 3c0bea4 nor at e6f987d's full) and centralized tuned on 2
    # validation seeds: 22 trainings for 30, ~-18 s; C4a's positive control (a second router per seed) and the
    # baselines read at the wrong stage (C1sp) ~+12 s: ~400 s. Probe of the disjoint sweep on the validation seed
    # (book sizes, before any test seed): FedWave-VC 0.044-0.062 mean-stage EM at every (E, lr), base 0.050; the same
    # 48 steps without the average (local-only) 0.34-0.46: the average of four clashing adapters returns to the base.
    "book": dict(_COMMON, d=48, pretrain_steps=400, n_per_client=1000, rounds=6, local_steps=8, seeds=(1, 3, 5), ablation_seeds=(1,),
                 n_test=60, n_chain=60, n_curve=20, router_rounds=400, dpo_steps=40,
                 dpo_unlabeled=150, smollm2=True, smollm2_train=32, smollm2_test=24,
                 shared_steps=48, sweep_E=(1, 4), sweep_lr=(1e-2, 3e-2), shared_n_val=40, shared_n_test=60,
                 shared_n_chain=60, shared_n_curve=12, curve_points=6, route_test=500, disjoint_sweep_E=(1, 48),
                 disjoint_sweep_lr=(1e-2, 3e-2), claim_seeds=(1, 3, 5), c2_seeds=(1, 3, 5), disjoint_seeds=(1, 3, 5)),
    # full: 5 seeds (ablations 3), d 64; the paper claims' arms (claim_methods) on 14 seeds (claim_seeds). Measured at
    # e6f987d: 1970 s (federated 758, drift sweep 371 for 45 trainings, shared workflow 445 for 50 trainings, SmolLM2
    # router 149, DPO 179, router 22, pretrain 18). claim_seeds sized by the power of the t-interval (experiments.t_power)
    # at the book run of 3c0bea4: C1s's least favourable setting 0.161, SD 0.186: power 0.32 at 5 seeds, 0.85 at 14,
    # 0.96 at 20; C2s at a true gap of 0, SD 0.159: 0.19 at 5, 0.59 at 14, 0.76 at 20. Budget (per-training costs of
    # e6f987d): the disjoint sweep, 2 methods x E (1, 18, 216) x lr (0.01, 0.03), 12 trainings ~+170 s; the shared
    # sweep without lr 0.1 and with centralized on 2 validation seeds, 30 trainings for 42 ~-90 s; 9 more seeds for
    # the 5 claim arms (~7.6 s per federated training, ~20 s per centralized one, ~50 s a seed) ~+470 s; the second
    # router and the wrong-stage reads ~+30 s: ~2550 s, ~43 min on 2 cores; 20 seeds would not fit.
    # Review of 5287791 (defect 1): VC-stage-blind and local-only, the arms of N1b and N2s, join the claim arms on the
    # 9 claim seeds beyond seeds: 18 trainings at e6f987d's ~7.6 s per federated training (local-only trains the same
    # stacked clients for the same steps) ~+140 s, ~2690 s. To stay inside 45 min, dpo_steps 150 -> 100 (DPO took 179 s
    # at e6f987d, ~2/3 of it the steps: ~-60 s): the DPO claims read the disjoint experts, which sit at the frozen base
    # (L1), so no claim is decided there. The planted control C1sd, centralized's best-of-grid rule and the E = 1 step
    # measurement cost nothing measurable; 8 curve readings per shared training for 5 (_COMMON) ~+40 s: ~2670 s,
    # ~44.5 min, inside the 45 min but with little to spare; untimed at this revision (no full run on this machine).
    # Measured at 1a269a0 (the published full run, fedwave code unchanged since): 3090 s, over the 45 min (pretrain 27,
    # disjoint sweep 190 for 12 trainings, federated 858 for 46 disjoint trainings (18.6 s each), drift sweep 257 for
    # 30 (8.6 s each), shared workflow 1312 for 113 (11.6 s each), router 41, SmolLM2 router 223 (43.5 s a seed), DPO
    # 145 (29 s a seed), audits and the rest 10). This revision (task of issue 41 after that run):
    # * claim_seeds 14 -> 19 for C1w's arms (FedWave-VC, the 3 baselines, VC-stage-blind, N1w's arm). Power of C1w's
    #   planted control C1wd (+0.10 in each baseline's mean-stage difference) from the published per-seed numbers:
    #   the claim curves' last readings (mean-stage EM on 80 items per seed, paired by seed) give per-seed SDs of
    #   FedWave-VC - FedAvg / FedProx / SCAFFOLD of 0.133 / 0.139 / 0.146, so t_power(0.10, 0.146, n) = 0.66 at 14,
    #   0.78 at 18, 0.805 at 19 (0.88 with the SD corrected to the 400-item test set, 0.132); the intersection-union
    #   over the three (Monte Carlo with the measured correlations 0.47-0.72) 0.68 at 19, 0.80 at 23. The per-stage
    #   reading (C1s, 15 settings, noisiest SD 0.251) would need 52 seeds for 0.8 in its noisiest setting alone.
    #   +5 seeds x 5 arms = +25 shared trainings, ~+290 s.
    # * c2_seeds: centralized and local-only on the first 7 claim seeds (14 before; they contain seeds, where P1 reads
    #   local-only): C2s's per-seed SD 0.046 at 1a269a0 gives t_power(0.10, 0.046, 7) = 1.00 for a true gap of 0 (0.95
    #   at 5): -14 trainings, ~-160 s.
    # * disjoint_seeds (1, 3, 5) (5 before) and ablation_seeds (1,) (3 before; F6 only, as at book): every claim read
    #   on the disjoint workflow's trained models is declared nowhere; the checks declared there (L1 0.561 [0.515,
    #   0.607], N2 -0.416 [-0.484, -0.349], P1n -0.197 [-0.210, -0.183] at 1a269a0) lie far from their bounds; the
    #   router (C4a) and DPO follow: -20 disjoint trainings (18.6 s each) ~-372 s, router ~-16 s, DPO ~-58 s. The
    #   SmolLM2 router (C10, [-0.096, -0.045] at 5 seeds against -0.10: at 3 seeds it would straddle) keeps seeds.
    # * disjoint_sweep_E without 216 (one round): at 1a269a0 it scored 0.00-0.03 validation EM for both methods at both
    #   rates, the worst of each method's grid (EM falls with E at every rate): -4 trainings ~-46 s. The shared sweep
    #   keeps its grid (every arm tuned by the same rule on it; its optima sit at both ends of E).
    # * the disjoint workflow's test sets 150 -> 100 pairs per stage and chains (1200 -> 800 decodes a training) and
    #   its curves read at 8 points on 20 pairs per stage (12 on 40 before; the rule needs >= 6 points; no claim is
    #   linked to them; 1920 -> 640 decodes a curve-method training), at 0.22 s per 80 items decoded: ~-75 s.
    # * dpo_steps 100 -> 60 (no DPO claim is declared anywhere: they read the disjoint experts): ~-30 s.
    # Estimate from 1a269a0's per-stage costs: pretrain 27 + disjoint sweep 144 + federated 26 trainings ~440 + drift
    # sweep 257 + shared (15 + 19 x 5 + 7 x 2 = 124 trainings x 11.6 s) 1440 + router 25 + SmolLM2 router 223 + DPO
    # 52 + rest 10 = ~2580 s (43 min), inside the 45 min with ~2 min to spare; untimed as a whole at this revision.
    "full": dict(_COMMON, d=64, pretrain_steps=1200, n_per_client=2000, rounds=12, local_steps=18,
                 seeds=(1, 3, 5, 7, 9), disjoint_seeds=(1, 3, 5), ablation_seeds=(1,), n_test=100, n_chain=100,
                 n_curve=20, router_rounds=800, dpo_steps=60, dpo_unlabeled=300, smollm2=True, smollm2_train=150,
                 smollm2_test=60, shared_steps=128, sweep_E=(1, 4, 16), sweep_lr=(1e-2, 3e-2), shared_n_val=60,
                 shared_n_test=100, shared_n_chain=100, shared_n_curve=20, curve_points=8, route_test=1000,
                 disjoint_sweep_E=(1, 18), disjoint_sweep_lr=(1e-2, 3e-2), claim_seeds=tuple(range(1, 38, 2)),
                 c2_seeds=tuple(range(1, 14, 2))),
}
