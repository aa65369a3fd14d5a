"""Sizes of the dsac-aid chapter per scale (same keys at every scale; the tests run `full` on `smoke` sizes).

Measured wall times on 2 shared CPU cores are noted beside each preset.

`full` on the CPU runs the toy grid for 10k env steps: at 20k (commit d8eabf9) the toy grid alone took 3936 s and the
whole chapter 4210 s, over the 45-min budget. Its ``"gpu"`` variant keeps the 20k toy grid and adds Hopper-v5. The
models stay on the CPU even there (this chapter's agents are not moved to CUDA yet), so that variant is a longer run on a GPU
machine's cores, not a faster one.
"""
from __future__ import annotations

_TOY = dict(hidden=[32, 32], batch=64, gamma=0.9, lr=1e-3, tau=0.02, reward_scale=1.0, warmup=500, eval_every=500,
            mc_rollouts=32, mc_episodes=2, mc_first_steps=25)
_PEND = dict(hidden=[64, 64], batch=128, gamma=0.98, lr=1e-3, tau=0.01, reward_scale=1.0, warmup=500, eval_every=500,
             eval_episodes=1, eval_first_steps=100, eval_max_steps=200, noise=1.0)
_HOP = dict(hidden=[256, 256], batch=256, gamma=0.99, lr=3e-4, tau=0.005, reward_scale=50.0, warmup=5000, eval_every=5000,
            eval_episodes=2, eval_first_steps=200, eval_max_steps=1000, noise=1.0)

PRESETS = {
    "smoke": {
        "toy": {**_TOY, "steps": 1500, "warmup": 300, "eval_every": 150, "mc_rollouts": 8, "mc_episodes": 1},
        "seeds": 2,
        "agents": ["DSAC-T", "DSAC-AID"],
        "pendulum": {**_PEND, "steps": 600, "warmup": 200, "eval_every": 300, "eval_max_steps": 50, "eval_first_steps": 25},
        "pendulum_agents": ["DSAC-T", "DSAC-AID"],
        "pendulum_seeds": 1,
        "hopper": {**_HOP, "steps": 0, "warmup": 100, "eval_every": 100, "eval_max_steps": 50, "eval_first_steps": 20,
                   "hidden": [32, 32], "batch": 64},
        "hopper_seeds": 1,
    },
    "book": {
        "toy": {**_TOY, "steps": 4000, "eval_every": 400},
        "seeds": 4,
        "agents": ["SAC", "DSAC-T", "Ens-LCB", "DSAC-AID", "AID w/o pi_b"],
        "pendulum": {**_PEND, "steps": 3000},
        "pendulum_agents": ["DSAC-T", "DSAC-AID"],
        "pendulum_seeds": 3,
        "hopper": {**_HOP, "steps": 0},
        "hopper_seeds": 3,
    },
    "full": {
        # expected ~1970 s for the toy grid (half the 20k run's 3936 s) + ~260 s NoisyPendulum
        "toy": {**_TOY, "steps": 10000, "hidden": [64, 64], "batch": 128},
        "seeds": 5,
        "agents": ["SAC", "DSAC-T", "Ens-LCB", "DSAC-AID", "AID w/o pi_b", "AID beta=0.1 fixed", "AID beta=0.3 fixed"],
        "pendulum": {**_PEND, "steps": 15000},
        "pendulum_agents": ["SAC", "DSAC-T", "DSAC-AID"],
        "pendulum_seeds": 3,
        "hopper": {**_HOP, "steps": 0},
        "hopper_seeds": 3,
        "gpu": {"toy": {**_TOY, "steps": 20000, "hidden": [64, 64], "batch": 128},
                "hopper": {**_HOP, "steps": 100_000, "hidden": [256, 256, 256]}},
    },
}
