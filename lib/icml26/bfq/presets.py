"""Sizes of the bfq chapter at the three scales (DESIGN.md "Three scales, one notebook").

Same keys at every scale (the tests run the ``full`` code path on ``smoke`` sizes). Offline RL methods
are trained as ensembles over seeds (`icml26.bfq.nets`), one ensemble per (method, dataset); the lambda
sweep is one ensemble of ``len(lambdas) x seeds`` members. Measured wall times next to each preset.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    s_gauss=0.5,                                       # the Gaussian closed form's data scale
    euler_K=(1, 2, 5, 10, 50),
    toys=("8gaussians", "moons", "checkerboard", "bandit"),
    toy_batch=256, toy_n_data=5000, toy_lr=1e-3, toy_eval_n=2000, w2_projections=256,
    rl_batch=256, eta=1.0, lam=0.5,
    ref_episodes=40,
    lambdas=(0.0, 0.25, 0.5, 0.75, 1.0), lambda_dataset="pendulum-medium",
    speed_hidden=(256, 256, 256), speed_batches=(1, 256), speed_state_dim=10, speed_action_dim=2,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: measured 24 s for the whole notebook (repro run, 2 shared cores; 15 s inside the chapter:
    # toys 5.0, speed 2.2, lambda sweep 1.4, the rest < 1 each)
    "smoke": dict(_COMMON, fp_iters=60, fp_n=5000, fp_lams=(0.0, 0.25, 0.5, 1.0),
                  toy_methods=("bfq", "fm"), toy_seeds=(0,), toy_steps=300, toy_hidden=(64, 64),
                  rl_datasets=("reacher-medium",), rl_methods=("td3bc", "bfq"), rl_seeds=(0,), rl_steps=100,
                  rl_hidden=(64, 64), episodes=dict(reacher=60, pendulum=20, mountaincar=40), eval_episodes=3,
                  lambda_seeds=(0,), lambda_steps=100, speed_rounds=3, speed_reps=20, live_iters=25),
    # book: measured 213 s for the whole notebook (206 s inside: offline RL 84 (3 datasets x 4 methods x 3 seeds,
    # 1000 steps), toys 75 (2000 steps, 4 models x 12 members), lambda sweep 34 (15 members), speed 6); BC adds ~5 s
    "book": dict(_COMMON, fp_iters=100, fp_n=6_000, fp_lams=(0.0, 0.25, 0.5, 0.75, 1.0),
                 toy_methods=("bfq", "fm", "fql", "dql"), toy_seeds=(0, 1, 2), toy_steps=2000,
                 toy_hidden=(64, 64),
                 rl_datasets=("reacher-medium", "pendulum-medium", "mountaincar-medium"),
                 rl_methods=("bc", "td3bc", "fql", "dql", "bfq"), rl_seeds=(0, 1, 2), rl_steps=1000, rl_hidden=(64, 64),
                 episodes=dict(reacher=200, pendulum=50, mountaincar=80), eval_episodes=5,
                 lambda_seeds=(0, 1, 2), lambda_steps=1000, speed_rounds=5, speed_reps=50, live_iters=25),
    # full: not run here; estimated ~40 min on 2 cores from the book per-step costs scaled to 128-wide nets (x2):
    # toys 6000 steps + EDM ablation ~11 min, offline RL 5 datasets x 5 methods x 4000 steps ~22 min, lambda
    # sweep ~4 min, data/speed/theory ~3 min
    "full": dict(_COMMON, fp_iters=400, fp_n=20_000, fp_lams=(0.0, 0.25, 0.5, 0.75, 1.0),
                 toy_methods=("bfq", "bfq_edm", "fm", "fql", "dql"), toy_seeds=(0, 1, 2), toy_steps=6_000,
                 toy_hidden=(128, 128),
                 rl_datasets=("reacher-medium", "reacher-replay", "pendulum-medium", "pendulum-replay",
                              "mountaincar-medium"),
                 rl_methods=("bc", "td3bc", "fql", "dql", "bfq"), rl_seeds=(0, 1, 2), rl_steps=4000, rl_hidden=(128, 128),
                 episodes=dict(reacher=400, pendulum=100, mountaincar=150), eval_episodes=10,
                 lambda_seeds=(0, 1, 2), lambda_steps=4000, speed_rounds=9, speed_reps=100, live_iters=25),
}
