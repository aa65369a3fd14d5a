"""Receding-horizon execution of a chunk policy on gymnasium environments (DP3's runner protocol).

`ChunkedRunner` keeps an ``n_obs_steps`` observation history per environment (the first observation
repeated at reset), asks the policy for a chunk of ``T`` actions, executes
``action_pred[n_obs - 1 : n_obs - 1 + n_action_steps]`` (predict 12, execute 4, history 2), and repeats until
the episode ends. Several environments run in lockstep so that one policy call serves all of them.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch


@dataclass
class Rollout:
    actions: np.ndarray                # (N, D_a) executed
    observations: np.ndarray           # (N + 1, obs_dim)
    success: bool
    collision: bool


class ChunkedRunner:
    """Run ``policy.predict_action`` in receding horizon on environments made by ``env_fn``."""

    def __init__(self, env_fn: Callable[[], gym.Env], max_steps: int = 200):
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.env_fn, self.max_steps = env_fn, max_steps
        self._pool: list[gym.Env] = []     # environments are kept and re-seeded at every reset (MuJoCo's are slow to build)

    def envs(self, n: int) -> list[gym.Env]:
        while len(self._pool) < n:
            self._pool.append(self.env_fn())
        return self._pool[:n]

    def close(self) -> None:
        for env in self._pool:
            env.close()
        self._pool = []

    def run(self, policy, seeds: Sequence[int], generator: torch.Generator | None = None,
            options: dict | None = None) -> list[Rollout]:
        n_obs, n_act = policy.n_obs_steps, policy.n_action_steps
        envs = self.envs(len(seeds))
        hist, obs_log, act_log, done = [], [], [], []
        success, collision = [False] * len(envs), [False] * len(envs)
        for env, s in zip(envs, seeds):
            o, _ = env.reset(seed=int(s), options=options)
            o = np.asarray(o, dtype=np.float32)
            hist.append([o] * n_obs)
            obs_log.append([o])
            act_log.append([])
            done.append(False)
        steps = 0
        while not all(done) and steps < self.max_steps:
            live = [i for i, d in enumerate(done) if not d]
            out = policy.predict_action(np.stack([np.stack(hist[i][-n_obs:]) for i in live]), generator=generator)
            act = out["action"].numpy()
            for k in range(n_act):
                for j, i in enumerate(live):
                    if done[i]:
                        continue
                    o, _, term, trunc, info = envs[i].step(act[j, k])
                    o = np.asarray(o, dtype=np.float32)
                    hist[i].append(o)
                    obs_log[i].append(o)
                    act_log[i].append(act[j, k])
                    success[i] = success[i] or bool(info.get("success", False))
                    collision[i] = collision[i] or bool(info.get("collision", False))
                    if term or trunc or success[i] or len(act_log[i]) >= self.max_steps:
                        done[i] = True
                steps += 1
                if all(done):
                    break
        return [Rollout(np.array(act_log[i]).reshape(len(act_log[i]), -1), np.array(obs_log[i]), success[i], collision[i])
                for i in range(len(envs))]
