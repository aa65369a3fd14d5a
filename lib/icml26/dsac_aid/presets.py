"""Sizes of the dsac-aid chapter per scale (same keys at every scale; the tests run `full` on `smoke` sizes).

The agents follow the released Gym-MuJoCo configuration (reward scale 0.1, no Huber loss, plain GELU networks,
lambda = 1, beta0 = 0.2; `agents.RELEASED`). Toy deviations: learning rate 1e-3 and Polyak rate 0.02 (1e-4 and
0.005 in the code) and alpha0 = 0.01 (the code's e, with alpha's learning rate 3e-4, takes ~10^4 iterations to
leave an entropy-dominated start; the toy runs are 10^3-10^4 steps).

Wall times (2 shared CPU cores) are estimates from smoke-scale measurements of this revision: a batched toy agent
costs about 1.7 ms (DSAC-T) to 3 ms (DSAC-AID) per env step per 6 batched seeds at 2 x 32 units; see the notebook's
`timed` sections for the measured ones. ``gpu`` overrides apply only when `icml26.device()` is CUDA: the agents,
replay and losses then run on the GPU (`BatchedAgent(..., device=...)`).
"""
from __future__ import annotations

_TOY = dict(hidden=[32, 32], batch=64, gamma=0.9, lr=1e-3, tau=0.02, reward_scale=0.1, alpha0=0.01, warmup=500,
            eval_every=500, mc_rollouts=32, mc_episodes=2, mc_first_steps=25, planted_switch=0.35)
_PEND = dict(hidden=[64, 64], batch=128, gamma=0.98, lr=1e-3, tau=0.01, reward_scale=0.1, alpha0=0.01, warmup=500,
             eval_every=500, eval_episodes=1, eval_first_steps=100, eval_max_steps=200, noise=1.0)
_HOP = dict(hidden=[256, 256], batch=256, gamma=0.99, lr=3e-4, tau=0.005, reward_scale=0.1, alpha0=2.718281828, warmup=5000,
            eval_every=5000, eval_episodes=2, eval_first_steps=200, eval_max_steps=1000, noise=1.0)

PRESETS = {
    "smoke": {   # measured ~45-60 s on a loaded machine
        "toy": {**_TOY, "steps": 1200, "warmup": 300, "eval_every": 100, "mc_rollouts": 8, "mc_episodes": 1},
        "seeds": 2,
        "agents": ["DSAC-T", "DSAC-AID"],
        "control_agent": "DSAC-T",
        "sweep_J": [],
        "sweep_agents": [],
        "sweep_seeds": 2,
        "pendulum": {**_PEND, "steps": 600, "warmup": 200, "eval_every": 100, "eval_max_steps": 50, "eval_first_steps": 25},
        "pendulum_agents": ["DSAC-T", "DSAC-AID"],
        "pendulum_seeds": 1,
        "hopper": {**_HOP, "steps": 0, "warmup": 100, "eval_every": 100, "eval_max_steps": 50, "eval_first_steps": 20,
                   "hidden": [32, 32], "batch": 64},
        "hopper_seeds": 1,
    },
    "book": {    # estimate ~230 s: 3 agents x 12 batched seeds x 3000 steps ~130 s, controls ~35 s, pendulum ~50 s
        "toy": {**_TOY, "steps": 3000, "eval_every": 200},
        "seeds": 6,
        "agents": ["DSAC-T", "Ens-LCB", "DSAC-AID"],
        "control_agent": "DSAC-T",
        "sweep_J": [],
        "sweep_agents": [],
        "sweep_seeds": 3,
        "pendulum": {**_PEND, "steps": 3000, "eval_every": 250},
        "pendulum_agents": ["DSAC-T", "DSAC-AID"],
        "pendulum_seeds": 3,
        "hopper": {**_HOP, "steps": 0},
        "hopper_seeds": 3,
    },
    "full": {
        # estimate ~2400 s (not measured): 5 agents x 20 batched seeds x 8000 steps (~35 s per 1000 steps each at
        # 2 x 64, from the previous full run's 22 s at 10 batched seeds) ~1400 s, controls ~280 s, the noise sweep
        # (2 agents x 2 J x 5 seeds) ~350 s, NoisyPendulum ~250 s. No CPU room for Hopper (C8: gpu variant).
        "toy": {**_TOY, "steps": 8000, "hidden": [64, 64], "batch": 128},
        "seeds": 10,
        "agents": ["SAC", "DSAC-T", "Ens-LCB", "DSAC-AID", "AID w/o pi_b"],
        "control_agent": "DSAC-T",
        "sweep_J": [3.5, 14.0],
        "sweep_agents": ["DSAC-T", "DSAC-AID"],
        "sweep_seeds": 5,
        "pendulum": {**_PEND, "steps": 15000},
        "pendulum_agents": ["SAC", "DSAC-T", "DSAC-AID"],
        "pendulum_seeds": 3,
        "hopper": {**_HOP, "steps": 0},
        "hopper_seeds": 3,
        "gpu": {"toy": {**_TOY, "steps": 20000, "hidden": [64, 64], "batch": 128},
                "hopper": {**_HOP, "steps": 100_000, "hidden": [256, 256, 256]}},
    },
}
