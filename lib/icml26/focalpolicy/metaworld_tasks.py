"""Real MuJoCo manipulation: MetaWorld v3 tasks (``metaworld`` 3.1.1 on ``mujoco`` 3.3.0), state-based.

The paper's demonstrations come from MetaWorld's scripted ``Sawyer*V3Policy`` experts (DP3's
``gen_demonstration_expert.py``); here the same experts provide state-based demonstrations (39-D
observation, 4-D action: end-effector delta and gripper). Lost: point clouds and the DP3 encoder,
MetaWorld v2 (the paper's version through DP3), Adroit.
"""
from __future__ import annotations

import importlib
import warnings

import gymnasium as gym
import numpy as np

TASKS: dict[str, str] = {
    "push-wall": "SawyerPushWallV3Policy",
    "coffee-push": "SawyerCoffeePushV3Policy",
    "box-close": "SawyerBoxCloseV3Policy",
    "push": "SawyerPushV3Policy",
    "pick-place": "SawyerPickPlaceV3Policy",
    "assembly": "SawyerAssemblyV3Policy",
}
"""The six tasks of this chapter (medium/hard groups of the paper's configs) and their scripted experts."""


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown MetaWorld task {task!r}; valid tasks: {', '.join(TASKS)}")



N_TASKS = 50
"""MT1's fixed task list per environment (50 goal/object configurations, frozen random vectors)."""


class FixedTaskEnv(gym.Wrapper):
    """A MetaWorld v3 env whose ``reset(seed=k)`` selects MT1 task ``k`` (of 50) before resetting.

    ``gymnasium.make("Meta-World/MT1", ...)`` picks its task at random at every reset from a generator seeded
    once at construction (``reset(seed=...)`` is ignored by MetaWorld), so reused environments would not give
    the same start states to every policy. Selecting the task explicitly makes every start state a function
    of the seed alone (checked: the same observation after any history).
    """

    def __init__(self, env, tasks, max_steps: int):
        super().__init__(env)
        self.tasks, self.max_steps, self.steps = tasks, max_steps, 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        k = 0 if seed is None else int(seed)
        if not 0 <= k < len(self.tasks):
            raise ValueError(f"MetaWorld task index {k} out of range: MT1 has {len(self.tasks)} tasks per environment")
        self.env.unwrapped.set_task(self.tasks[k])
        self.steps = 0
        return self.env.reset()

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        self.steps += 1
        info = dict(info, success=bool(info.get("success", 0.0)))
        return obs, reward, term, trunc or self.steps >= self.max_steps, info


def make_env(task: str, max_steps: int = 200, seed: int = 0) -> FixedTaskEnv:
    """MetaWorld v3 ``task`` (MT1 benchmark, task list seeded by ``seed``), truncated at ``max_steps``;
    ``reset(seed=k)`` starts from MT1 task ``k``."""
    _check_task(task)
    import metaworld

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bench = metaworld.MT1(f"{task}-v3", seed=seed)
        env = bench.train_classes[f"{task}-v3"]()
    return FixedTaskEnv(env, bench.train_tasks, max_steps)


def expert(task: str):
    _check_task(task)
    return getattr(importlib.import_module("metaworld.policies"), TASKS[task])()


def _expert_episode(env: FixedTaskEnv, pol, k: int, max_steps: int, extra_steps: int = 4):
    """One scripted-expert episode from MT1 task ``k``, stopped ``extra_steps`` after the first success:
    ``(obs (L+1, 39), actions (L, 4), solved)``."""
    o, _ = env.reset(seed=k)
    obs, acts, left = [o], [], None
    for _ in range(max_steps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = np.clip(pol.get_action(o), -1, 1)
        o, _, term, trunc, info = env.step(a)
        obs.append(o)
        acts.append(a)
        if info["success"] and left is None:
            left = extra_steps
        if left is not None:
            left -= 1
            if left < 0:
                break
        if term or trunc:
            break
    return np.array(obs, dtype=np.float32), np.array(acts, dtype=np.float32), left is not None


def collect_demos(task: str, n_demos: int, first_task: int = 0, max_steps: int = 200, extra_steps: int = 4,
                  stop_before: int = N_TASKS) -> list[dict]:
    """``n_demos`` successful expert demonstrations from MT1 tasks ``first_task, first_task + 1, ...`` (failures
    skipped, never reaching task ``stop_before``). Each demo stops ``extra_steps`` after the first success.

    Returns dicts ``obs (L+1, 39)``, ``actions (L, 4)``, ``task`` (the task index).
    """
    if n_demos < 1:
        raise ValueError(f"n_demos must be >= 1, got {n_demos}")
    env, pol = make_env(task, max_steps), expert(task)
    demos, k = [], first_task
    while len(demos) < n_demos:
        if k >= stop_before:
            env.close()
            raise ValueError(f"the {task} expert solved only {len(demos)} of tasks {first_task}..{stop_before - 1}; "
                             f"{n_demos} demos requested")
        obs, acts, solved = _expert_episode(env, pol, k, max_steps, extra_steps)
        if solved:
            demos.append({"obs": obs, "actions": acts, "task": k})
        k += 1
    env.close()
    return demos


def expert_success(task: str, task_ids, max_steps: int = 200) -> np.ndarray:
    """Whether the scripted expert solves each MT1 task in ``task_ids`` within ``max_steps``: the ceiling of
    imitation on those start states (the box-close expert, for one, fails on some)."""
    env, pol = make_env(task, max_steps), expert(task)
    solved = np.array([_expert_episode(env, pol, int(k), max_steps, extra_steps=0)[2] for k in task_ids])
    env.close()
    return solved
