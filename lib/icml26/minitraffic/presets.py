"""Sizes per scale (same keys everywhere; the tests run the full code path on smoke sizes).

Data: the released PeMS-Lane files (43 lanes, 28 days; `pems.RealTarget`): train days 0-18, validation 19-21,
test 22-27; pre-training on the released source (PeMS_road_speed_40) on the training days only.

Budgets. Pre-training: ``pretrain_epochs`` passes over the source windows taken every ``pretrain_stride`` bins,
at batch ``pretrain_batch`` (8: on CPU, steps leave the reconstruction plateau sooner than samples do; measured:
at lr 6e-3 the masked-reconstruction loss leaves the zero predictor's level after ~200 steps and reaches ~0.62
of it after 800, where 90 steps stay on it). Fine-tuning: ``finetune_epochs`` epochs of
``min(one pass, max_epoch_steps)`` steps: the cap binds at every D_L >= 1 here, so an epoch is a fixed
number of steps at every D_L (the chapter glues the passes each D_L gets). ``lr_grid``: multipliers of
``lr_finetune`` among which every trained arm (MiniTraffic, Mini-scratch, GRU-lane, STGCN-lite, and each
road-level arm) picks its learning rate per seed on the validation block; the ablations of MiniTraffic take
MiniTraffic's.

Timing (2 shared CPU cores, 1 compute thread), measured under load from a background run: a pre-training
step at batch 8 (d = 32, 8 roads x D = 3) 0.10-0.14 s (Big-PT 0.17 s); a fine-tuning step at batch 8 on the
43-lane grid ~0.13 s, a validation pass ~0.25-0.5 s; an idle machine runs about 2-2.5x faster.
smoke: measured (see the chapter's timings). book: 10 epochs of 6 steps (60; 3 head-only, 42 end-to-end). The
fresh-clone book run at 6 epochs (36 steps; 24 end-to-end) left mini@7 unconverged (1 of 3 seeds): switching to
end-to-end training raises the validation MAE for a few epochs (the pre-trained backbone is disturbed) and 24
steps do not recover it; measured at D_L = 7, lr 5e-4, seeds 2 / 3: 36 steps kept the head-only epoch (test MAE
@30 min 7.30 / 7.24 mph), 60 steps recover and flatten (the last three epochs within 0.02 mph; 6.19 / 6.19).
Book measured at 6 epochs: 1035 s under 2 jobs (pre-training 250 s, lane 410 s, road 256 s); at 10 epochs
(estimate, not run) ~1.6x the fine-tuning time: ~1400 s under 2 jobs.
full (estimate, not run): 15 pre-trainings of ~770 steps (~29 min under load) and ~54 fine-tunes of 160 steps
(~25 min): ~55 min under load, ~25 min idle. gpu: the paper's width (d = 64, d_ff = 128, 3 layers), the
released pre-training budget (batch 64, 20 epochs over every window), Big-PT scaled with it (d = 128), 5 seeds
and the mask sweep; not run.
"""
_MODEL = dict(T=18, H=6, P=3, S=1, heads=4, graph_heads=4, k=8, dropout=0.2, fda_lambda=0.1, fda_tau=0.05,
              fda_phase=0.1, temperature=0.5, nce_weight=0.1, mask_ratio=0.4, lr_pretrain=6e-3, lr_finetune=5e-4,
              head_only_frac=0.3, gru_hidden=32, stgcn_channels=16, lambda_grid=(0.1, 0.2, 0.4, 0.6, 0.8, 0.95),
              big_d=64, big_d_ff=256, big_layers=4, lr_grid=(1.0, 3.0), projection_steps=40)

PRESETS = {
    # smoke: 1 seed, D_L = 1, a thin pre-training (on the plateau); every verdict is inconclusive
    "smoke": dict(_MODEL, d=32, d_ff=64, layers=2, D=3, batch=8, pretrain_batch=8, pretrain_stride=96,
                  pretrain_epochs=6, finetune_epochs=6, max_epoch_steps=4, test_stride=12, seeds=(1,),
                  few_shot=(1,), methods=("mini", "scratch", "ha", "persistence"), controls=(), ablations=("nonce",),
                  road_methods=(), mask_sweep=(), sim_days=1, fda_windows=200, latency_reps=5, calibrate_lambda=True,
                  lr_grid=(1.0,), projection_steps=10),
    # book: 3 seeds, D_L in {1, 7}, the negative control (time-shuffled source), the power check, Big-PT at
    # road level; pre-training too short to leave the plateau (PT decides what that allows)
    "book": dict(_MODEL, d=32, d_ff=64, layers=2, D=3, batch=8, pretrain_batch=8, pretrain_stride=48,
                 pretrain_epochs=6, finetune_epochs=10, max_epoch_steps=6, test_stride=12, seeds=(1, 2, 3),
                 few_shot=(1, 7), methods=("mini", "scratch", "nofda", "gru", "stgcn", "ha", "persistence"),
                 controls=("shuffled", "scratch_all"), ablations=("nonce",),
                 road_methods=("mini", "noext", "scratch", "big"), mask_sweep=(), sim_days=2, fda_windows=1000,
                 latency_reps=20, calibrate_lambda=True),
    # full (CPU): D_L in {1, 2, 7, 19}, pre-training past the plateau (~770 steps), the -CC ablation
    "full": dict(_MODEL, d=32, d_ff=64, layers=2, D=3, batch=8, pretrain_batch=8, pretrain_stride=6,
                 pretrain_epochs=7, finetune_epochs=10, max_epoch_steps=16, test_stride=3, seeds=(1, 2, 3),
                 few_shot=(1, 2, 7, 19), methods=("mini", "scratch", "nofda", "gru", "stgcn", "ha", "persistence"),
                 controls=("shuffled", "scratch_all"), ablations=("nonce", "nocc"),
                 road_methods=("mini", "noext", "scratch", "big"), mask_sweep=(), sim_days=3, fda_windows=1000,
                 latency_reps=50, calibrate_lambda=True,
                 gpu=dict(d=64, d_ff=128, layers=3, heads=8, batch=64, pretrain_batch=64, pretrain_stride=1,
                          pretrain_epochs=20, finetune_epochs=20, max_epoch_steps=400, test_stride=1,
                          seeds=(1, 2, 3, 4, 5), mask_sweep=(0.2, 0.6, 0.8), big_d=128, big_d_ff=512,
                          projection_steps=100)),
}
