"""Sizes per scale (same keys everywhere; the tests run the full code path on smoke sizes).

Data: the released PeMS-Lane files (43 lanes, 28 days; `pems.RealTarget`): train days 0-18, validation 19-21,
test 22-27; pre-training on the released source (PeMS_road_speed_40) on the training days only. Budgets are in
**epochs** (passes over the windows; `pretrain_stride` thins the source windows on CPU); fine-tuning keeps the
epoch with the best validation MAE. `sim_days`: simulated uxsim days for the realism check of the secondary lab.

Timing (2 shared CPU cores, 1 compute thread), measured under load from a background run: a pre-training step
at batch 32 (d = 32, 8 roads x D = 3) 0.83 s, a fine-tuning step at batch 16 on the 43-lane grid ~0.2 s; the
same steps cost about a third of that on an idle machine (the old book run: 0.036 s per batch-4 step).
smoke: measured (see the chapter's timings). book: estimated ~3 min idle (9 pre-trainings of 24 steps, 36
fine-tunes of 36 steps), not run. full: estimated ~35-40 min idle (9 pre-trainings of 216 steps plus 3 Big-PT,
~80 fine-tunes of <= 192 steps), not run. gpu: the paper's width (d = 64, d_ff = 128, 3 layers), the released
pre-training budget (batch 64, 20 epochs over every window), 5 seeds and the mask sweep; not run.
"""
_MODEL = dict(T=18, H=6, P=3, S=1, heads=4, graph_heads=4, k=8, dropout=0.2, fda_lambda=0.1, fda_tau=0.05,
              fda_phase=0.1, temperature=0.5, nce_weight=0.1, mask_ratio=0.4, lr_pretrain=1e-3, lr_finetune=5e-4,
              head_only_frac=0.3, gru_hidden=32, stgcn_channels=16, lambda_grid=(0.1, 0.2, 0.4, 0.6, 0.8, 0.95),
              big_d=64, big_d_ff=256, big_layers=4)

PRESETS = {
    # smoke: 1 seed, D_L = 1, a thin pre-training; every verdict is inconclusive (1 seed, short curves)
    "smoke": dict(_MODEL, d=32, d_ff=64, layers=2, D=3, batch=16, pretrain_batch=32, pretrain_stride=48,
                  pretrain_epochs=6, finetune_epochs=6, max_epoch_steps=4, test_stride=12, seeds=(1,),
                  few_shot=(1,), methods=("mini", "scratch", "ha", "persistence"), controls=(),
                  road_methods=(), mask_sweep=(), sim_days=1, fda_windows=200, latency_reps=5, calibrate_lambda=True),
    # book: 3 seeds, D_L in {1, 2, 7}, the negative control (time-shuffled source) and the power check
    "book": dict(_MODEL, d=32, d_ff=64, layers=2, D=3, batch=16, pretrain_batch=32, pretrain_stride=48,
                 pretrain_epochs=6, finetune_epochs=6, max_epoch_steps=6, test_stride=6, seeds=(1, 2, 3),
                 few_shot=(1, 2, 7), methods=("mini", "scratch", "nofda", "gru", "stgcn", "ha", "persistence"),
                 controls=("shuffled", "scratch_all"), road_methods=("mini", "noext", "scratch"), mask_sweep=(),
                 sim_days=2, fda_windows=1000, latency_reps=20, calibrate_lambda=True),
    # full (CPU): + D_L = 19 (all training days), Big-PT at road level, longer curves
    "full": dict(_MODEL, d=32, d_ff=64, layers=2, D=3, batch=16, pretrain_batch=32, pretrain_stride=6,
                 pretrain_epochs=8, finetune_epochs=12, max_epoch_steps=16, test_stride=3, seeds=(1, 2, 3),
                 few_shot=(1, 2, 7, 19), methods=("mini", "scratch", "nofda", "gru", "stgcn", "ha", "persistence"),
                 controls=("shuffled", "scratch_all"), road_methods=("mini", "noext", "scratch", "big"),
                 mask_sweep=(), sim_days=3, fda_windows=1000, latency_reps=50, calibrate_lambda=True,
                 gpu=dict(d=64, d_ff=128, layers=3, heads=8, batch=64, pretrain_batch=64, pretrain_stride=1,
                          pretrain_epochs=20, finetune_epochs=20, max_epoch_steps=400, test_stride=1,
                          seeds=(1, 2, 3, 4, 5), mask_sweep=(0.2, 0.6, 0.8))),
}
