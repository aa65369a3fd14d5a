"""Sizes of the bfq chapter at the three scales (DESIGN.md "Three scales, one notebook").

Same keys at every scale (the tests run the ``full`` code path on ``smoke`` sizes). Offline RL methods
are trained as ensembles over seeds (`icml26.bfq.nets`), one ensemble per (method, dataset); the lambda
sweep is one ensemble of ``len(lambdas) x seeds`` members; each tuned method is one ensemble of
``len(grid) x seeds`` members (`icml26.bfq.experiments.train_grid_and_score`).

``gpu`` variant: none. No GPU was available to this revision; the models are CPU tensors throughout.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    s_gauss=0.5,                                       # the Gaussian closed form's data scale
    euler_K=(1, 2, 5, 10, 50),
    toys=("8gaussians", "moons", "checkerboard", "bandit"),
    toy_batch=256, toy_n_data=5000, toy_lr=1e-3, toy_eval_n=2000, w2_projections=256,
    rl_batch=256, lam=0.5,
    # the tuning grids, one knob per method and the same number of values for each (icml26.bfq.agent.GRID_KNOB):
    # the paper tunes eta per task over {0.001, ..., 1}; FQL's alpha "needs to be tuned for each environment"
    # the paper tunes eta per task over {0.001, ..., 1}; FQL's README, for new environments: normalize_q_loss=True
    # and alpha from [0.03, 0.1, 0.3, 1, 3, 10] (icml26.bfq.agent's docstring)
    grids=dict(eta=(0.01, 0.1, 1.0), td3_alpha=(1.0, 2.5, 10.0), fql_alpha=(0.1, 1.0, 10.0)),
    # learning curves: curve_points scores per run, curve_tail of them in the last fifth (the part the book's
    # convergence rule judges), each the mean of curve_episodes episodes per member (icml26.bfq.experiments.curve_marks)
    ref_episodes=40, rt_starts=5, rt_iters=100,
    bandit_select=50,               # every method's bandit action: the best of 50 candidates by min_j Qbar_j
    lambdas=(0.0, 0.25, 0.5, 0.75, 1.0), lambda_dataset="pendulum-noisy",
    bandit_n=5000,
    speed_hidden=(256, 256, 256), speed_batches=(1, 256), speed_state_dim=10, speed_action_dim=2,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: the full code path at toy sizes (two-value grids, one seed, 100 steps)
    "smoke": dict(_COMMON, fp_iters=60, fp_n=5000, fp_lams=(0.0, 0.25, 0.5, 1.0),
                  grids=dict(eta=(0.1, 1.0), td3_alpha=(2.5, 10.0), fql_alpha=(0.3, 3.0)),
                  toy_methods=("bfq", "fm"), toy_seeds=(0,), toy_steps=300, toy_hidden=(64, 64),
                  rl_datasets=("pendulum-noisy",), rl_methods=("bc", "td3bc", "fql", "dql", "ofql", "bfq"), rl_seeds=(0,),
                  rl_steps=100, rl_hidden=(64, 64), curve_points=8, curve_tail=4, curve_episodes=3,
                  episodes=dict(reacher=60, pendulum=20, mountaincar=40), eval_episodes=2,
                  bandit_methods=("bc", "td3bc", "bfq"), bandit_steps=100,
                  lambda_seeds=(0,), lambda_steps=100, speed_rounds=3, speed_reps=20, live_iters=25),
    # book: not run after this revision; estimated ~300 s from per-step costs measured at book sizes on this
    # machine (64-wide, 2-value grids x 3 seeds: ~90 ms per step summed over the six methods and the eta = 0 run,
    # x 600 steps x 2 datasets ~110 s; curves (12 points x 10 episodes, DQL's 50-candidate selection the dearest)
    # and final scores ~55 s; bandit (BC, TD3+BC, BFQ: what C5m and its controls need) ~20 s; toys 1500 steps ~55 s;
    # lambda sweep ~30 s; data/speed/theory ~25 s)
    "book": dict(_COMMON, fp_iters=100, fp_n=6_000, fp_lams=(0.0, 0.25, 0.5, 0.75, 1.0),
                 grids=dict(eta=(0.1, 1.0), td3_alpha=(2.5, 10.0), fql_alpha=(0.3, 3.0)),
                 toy_methods=("bfq", "fm", "fql", "dql"), toy_seeds=(0, 1, 2), toy_steps=1500,
                 toy_hidden=(64, 64),
                 rl_datasets=("reacher-medium", "pendulum-noisy"),
                 rl_methods=("bc", "td3bc", "fql", "dql", "ofql", "bfq"), rl_seeds=(0, 1, 2), rl_steps=600,
                 rl_hidden=(64, 64), curve_points=12, curve_tail=6, curve_episodes=10,
                 episodes=dict(reacher=200, pendulum=50, mountaincar=80), eval_episodes=4,
                 bandit_methods=("bc", "td3bc", "bfq"), bandit_steps=600,
                 lambda_seeds=(0, 1, 2), lambda_steps=600, speed_rounds=5, speed_reps=50, live_iters=25),
    # full: not run after this revision; estimated ~43 min on 2 cores from per-step costs measured at full sizes
    # (128-wide, 3-value grids x 3 seeds: ~0.3 s per step over the six methods and the eta = 0 run x 2000 steps
    # x 2 datasets ~21 min; curves (16 points x 12 episodes) and final scores ~4 min; bandit, six methods x
    # 1200 steps ~7 min; toys 4000 steps ~7 min; lambda sweep ~3 min; speed/theory ~1 min)
    "full": dict(_COMMON, fp_iters=400, fp_n=20_000, fp_lams=(0.0, 0.25, 0.5, 0.75, 1.0),
                 toy_methods=("bfq", "bfq_edm", "fm", "fql", "dql"), toy_seeds=(0, 1, 2), toy_steps=4_000,
                 toy_hidden=(128, 128),
                 rl_datasets=("reacher-medium", "pendulum-noisy"),
                 rl_methods=("bc", "td3bc", "fql", "dql", "ofql", "bfq"), rl_seeds=(0, 1, 2), rl_steps=2000,
                 rl_hidden=(128, 128), curve_points=16, curve_tail=8, curve_episodes=12,
                 episodes=dict(reacher=400, pendulum=100, mountaincar=150), eval_episodes=8,
                 bandit_methods=("bc", "td3bc", "fql", "dql", "ofql", "bfq"), bandit_steps=1200,
                 lambda_seeds=(0, 1, 2), lambda_steps=2000, speed_rounds=9, speed_reps=100, live_iters=25),
}
