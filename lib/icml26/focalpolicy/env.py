"""ChunkReach2D-v0: a 2-D reaching task around a disk obstacle, with a scripted multimodal expert (stand-in).

A point in ``[-1, 1]^2`` starts on the left (``x = -0.8``), the goal lies on the right (``x = 0.8``, ``|g_y|`` in
``[0.1, 0.3]``: a margin around 0, and the start on the same side of ``y = 0``, so that the unimodal expert's side
sign(g_y) is never ambiguous), a disk
obstacle of radius 0.3 sits at the origin. Actions are position deltas clipped to ``[-0.05, 0.05]^2``.
Observation (one step): ``(p_x, p_y, g_x, g_y)``; the policies see ``n_obs_steps = 2`` of them (so the
velocity, never the absolute time: brief pitfall "demos must not expose absolute time").

The expert (`expert_demo`) follows a quadratic Bezier path through a via point above (``y = +0.45``) or
below (``y = -0.45``) the obstacle with a minimum-jerk time law ``s = 10u^3 - 15u^4 + 6u^5`` over a random
duration, plus an Ornstein-Uhlenbeck offset and an optional sinusoidal "wiggle" across the path (both in position
space and faded out at the ends) (so the
demonstrations have non-trivial spectra). ``mode="multimodal"``: side 50/50 per demonstration;
``mode="unimodal"``: side = sign(g_y) (a function of the observation).
"""
from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from gymnasium import spaces

MAX_DELTA = 0.05
ENV_ID = "ChunkReach2D-v0"


@dataclass(frozen=True)
class ReachConfig:
    start_x: float = -0.8
    goal_x: float = 0.8
    start_y_range: float = 0.2
    goal_y_range: float = 0.3
    goal_y_margin: float = 0.1
    obstacle_radius: float = 0.3
    obstacle_center: tuple[float, float] = (0.0, 0.0)
    goal_tolerance: float = 0.05
    max_steps: int = 200

    def __post_init__(self):
        c = np.asarray(self.obstacle_center, dtype=float)
        for name, x, yr in (("start", self.start_x, self.start_y_range), ("goal", self.goal_x, self.goal_y_range)):
            # the closest point of the start/goal segment {x} x [-yr, yr] to the obstacle centre
            closest = np.array([x, np.clip(c[1], -yr, yr)])
            if np.linalg.norm(closest - c) <= self.obstacle_radius + 1e-9:
                raise ValueError(f"the obstacle (centre {tuple(c)}, radius {self.obstacle_radius}) covers the {name} region")
        if not 0 <= self.goal_y_margin < self.goal_y_range:
            raise ValueError(f"goal_y_margin must lie in [0, goal_y_range), got {self.goal_y_margin}")
        if not 0 < self.obstacle_radius < 1:
            raise ValueError(f"obstacle_radius must lie in (0, 1), got {self.obstacle_radius}")


class ChunkReach2D(gym.Env):
    """The gymnasium environment (passes ``gymnasium.utils.env_checker.check_env``).

    ``info`` carries ``success`` (within ``goal_tolerance`` of the goal), ``collision`` (the point entered
    the obstacle; the episode terminates) and the position.
    """

    metadata = {"render_modes": []}

    def __init__(self, mode: str = "unimodal", config: ReachConfig | None = None):
        if mode not in ("unimodal", "multimodal"):
            raise ValueError(f"mode must be 'unimodal' or 'multimodal', got {mode!r}")
        self.mode = mode
        self.cfg = config or ReachConfig()
        self.action_space = spaces.Box(-MAX_DELTA, MAX_DELTA, shape=(2,), dtype=np.float32)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self.pos = np.zeros(2)
        self.goal = np.zeros(2)
        self.steps = 0

    def _obs(self) -> np.ndarray:
        return np.concatenate([self.pos, self.goal]).astype(np.float32)

    def _info(self) -> dict:
        return {"success": bool(np.linalg.norm(self.pos - self.goal) < self.cfg.goal_tolerance),
                "collision": bool(np.linalg.norm(self.pos - np.asarray(self.cfg.obstacle_center)) < self.cfg.obstacle_radius),
                "pos": self.pos.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Options: ``start`` and ``goal`` (2-vectors) override the random draws."""
        super().reset(seed=seed)
        c = self.cfg
        options = options or {}
        start = options.get("start")
        goal = options.get("goal")
        side = self.np_random.choice([-1.0, 1.0])
        gy = side * self.np_random.uniform(c.goal_y_margin, c.goal_y_range)
        sy = side * self.np_random.uniform(0.0, c.start_y_range)      # start and goal on the same side of y = 0
        self.pos = np.array([c.start_x, sy]) if start is None else np.asarray(start, dtype=float).copy()
        self.goal = np.array([c.goal_x, gy]) if goal is None else np.asarray(goal, dtype=float).copy()
        self.steps = 0
        return self._obs(), self._info()

    def step(self, action):
        a = np.clip(np.asarray(action, dtype=float).reshape(2), -MAX_DELTA, MAX_DELTA)
        self.pos = np.clip(self.pos + a, -1.0, 1.0)
        self.steps += 1
        info = self._info()
        terminated = info["success"] or info["collision"]
        truncated = self.steps >= self.cfg.max_steps and not terminated
        reward = 1.0 if info["success"] else (-1.0 if info["collision"] else 0.0)
        return self._obs(), reward, terminated, truncated, info


def register() -> None:
    """Register ``ChunkReach2D-v0`` with gymnasium (idempotent)."""
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point="icml26.focalpolicy.env:ChunkReach2D")


def min_jerk(u: np.ndarray) -> np.ndarray:
    """The minimum-jerk time law ``s(u) = 10u^3 - 15u^4 + 6u^5`` on ``u in [0, 1]``."""
    u = np.clip(u, 0.0, 1.0)
    return u ** 3 * (10 - 15 * u + 6 * u ** 2)


@dataclass(frozen=True)
class ExpertConfig:
    via_y: float = 0.45
    duration: tuple[int, int] = (90, 120)
    ou_sigma: float = 0.002
    ou_theta: float = 0.15
    wiggle: float = 0.01
    wiggle_period: tuple[float, float] = (6.0, 10.0)
    hold_steps: int = 4


def expert_demo(start: np.ndarray, goal: np.ndarray, mode: str, rng: np.random.Generator,
                expert: ExpertConfig | None = None, side: int | None = None):
    """One demonstration: ``(obs (N+1, 4), actions (N, 2), side)``; the actions are clipped position deltas.

    ``side``: +1 above, -1 below (default: 50/50 for ``multimodal``, sign(g_y) for ``unimodal``).
    """
    e = expert or ExpertConfig()
    start, goal = np.asarray(start, float), np.asarray(goal, float)
    if side is None:
        side = int(rng.choice([-1, 1])) if mode == "multimodal" else (1 if goal[1] >= 0 else -1)
    via = np.array([0.0, side * e.via_y])
    ctrl = 2 * via - 0.5 * (start + goal)
    n = int(rng.integers(e.duration[0], e.duration[1] + 1))
    s = min_jerk(np.arange(n + 1) / n)[:, None]
    path = (1 - s) ** 2 * start + 2 * s * (1 - s) * ctrl + s ** 2 * goal
    # the perturbations live in position space (an OU offset and a wiggle across the path, both zero at
    # the ends), so the expert still ends on the goal: noise on the deltas would integrate to a drift
    tangent = np.gradient(path, axis=0)
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True) + 1e-9
    normal = np.stack([-tangent[:, 1], tangent[:, 0]], 1)
    envelope = np.sin(np.pi * np.arange(n + 1) / n)[:, None]
    offset = np.zeros_like(path)
    if e.wiggle > 0:
        period = rng.uniform(*e.wiggle_period)
        phase = rng.uniform(0, 2 * np.pi)
        offset += e.wiggle * np.sin(2 * np.pi * np.arange(n + 1) / period + phase)[:, None] * normal
    ou = np.zeros(2)
    for k in range(n + 1):
        ou = ou - e.ou_theta * ou + e.ou_sigma * rng.normal(size=2)
        offset[k] += ou
    actions = np.diff(path + envelope * offset, axis=0)
    hold = [np.zeros(2)] * e.hold_steps
    actions = np.clip(np.concatenate([actions, np.array(hold).reshape(-1, 2)]), -MAX_DELTA, MAX_DELTA)
    pos = start + np.concatenate([np.zeros((1, 2)), np.cumsum(actions, 0)])
    obs = np.concatenate([pos, np.repeat(goal[None], len(pos), 0)], 1)
    return obs.astype(np.float32), actions.astype(np.float32), side


def collect_demos(n_demos: int, mode: str, seed: int, expert: ExpertConfig | None = None,
                  config: ReachConfig | None = None) -> list[dict]:
    """``n_demos`` expert demonstrations from random starts/goals of `ChunkReach2D` (dicts obs/actions/side)."""
    if n_demos < 1:
        raise ValueError(f"n_demos must be >= 1, got {n_demos}")
    env = ChunkReach2D(mode, config)
    rng = np.random.default_rng(seed)
    demos = []
    for i in range(n_demos):
        obs0, _ = env.reset(seed=int(rng.integers(2 ** 31)))
        o, a, side = expert_demo(obs0[:2], obs0[2:], mode, rng, expert)
        demos.append({"obs": o, "actions": a, "side": side})
    return demos
