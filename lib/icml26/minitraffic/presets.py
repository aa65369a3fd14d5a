"""Sizes per scale (same keys everywhere; the tests run the full code path on smoke sizes).

Measured on 2 shared CPU cores (1 compute thread), via `repro run`: smoke 28 s wall (chapter 22 s), book 199 s wall
(chapter 191 s: simulate 16 s, pre-train 32 s, lane runs 117 s, road runs 14 s); full estimated ~20-25 min (6x book's
lane-run cost with Big-PT, -CC, -InfoNCE, D_L = 4 and the mask sweep, 2x pre-training steps). Runs on CPU only.
"""
_MODEL = dict(T=18, H=6, P=3, S=1, heads=4, graph_heads=4, k=8, dropout=0.2, fda_lambda=0.1, fda_tau=0.05,
              fda_phase=0.1, temperature=0.5, nce_weight=0.1, mask_ratio=0.4, lr_pretrain=1e-3, lr_finetune=5e-4,
              head_only_frac=0.3, gru_hidden=32, stgcn_channels=16)

PRESETS = {
    # smoke: 26 lanes, 3 target + 4 source days, 1 seed, D_L = 2; measured 28 s
    "smoke": dict(_MODEL, target_lanes=(4, 5, 4, 5, 4, 4), n_train_max=2, n_val=0, n_test=1, n_src=2, src_days=2,
                  d=32, d_ff=64, layers=2, D=3, batch=4, pretrain_steps=60, finetune_steps=60,
                  big_d=64, big_d_ff=256, big_layers=3, big_pretrain_steps=60, test_stride=6,
                  seeds=(1,), few_shot=(2,), methods=("mini", "scratch", "gru", "ha", "persistence"),
                  full_methods=(), road_methods=(), mask_sweep=(), fda_windows=200, latency_reps=5),
    # book: the PeMS-Lane layout (43 lanes), 9 target + 12 source days, 3 seeds, D_L in {1, 2, 7}; measured 199 s
    "book": dict(_MODEL, target_lanes=(5, 6, 5, 6, 5, 6, 5, 5), n_train_max=7, n_val=0, n_test=2, n_src=4,
                 src_days=3, d=32, d_ff=64, layers=2, D=3, batch=4, pretrain_steps=150, finetune_steps=100,
                 big_d=64, big_d_ff=256, big_layers=4, big_pretrain_steps=150, test_stride=6,
                 seeds=(1, 2, 3), few_shot=(1, 2, 7),
                 methods=("mini", "scratch", "nofda", "gru", "stgcn", "ha", "persistence"),
                 full_methods=(), road_methods=("mini", "scratch"), mask_sweep=(), fda_windows=1000, latency_reps=20),
    # full: + D_L = 4, Big-PT (GPT-ST stand-in), -CC, -InfoNCE, mask sweep, 3 test days; estimated ~20-25 min
    "full": dict(_MODEL, target_lanes=(5, 6, 5, 6, 5, 6, 5, 5), n_train_max=7, n_val=0, n_test=3, n_src=6,
                 src_days=4, d=32, d_ff=64, layers=2, D=3, batch=4, pretrain_steps=300, finetune_steps=150,
                 big_d=64, big_d_ff=256, big_layers=4, big_pretrain_steps=200, test_stride=3,
                 seeds=(1, 2, 3), few_shot=(1, 2, 4, 7),
                 methods=("mini", "scratch", "nofda", "gru", "stgcn", "ha", "persistence"),
                 full_methods=("big", "nocc", "nonce"), road_methods=("mini", "scratch"), mask_sweep=(0.2, 0.6, 0.8),
                 fda_windows=1000, latency_reps=50),
}
