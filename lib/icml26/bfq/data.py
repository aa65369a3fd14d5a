"""Offline data, generated here (D4RL and Minari download their files: not used).

* 2-D toys (unconditional behaviour distributions): ``8gaussians``, ``moons``, ``checkerboard`` and
  ``bandit`` (4 modes at (+-0.8, +-0.8), sigma = 0.08), the paper's multimodal bandit; `Bandit4Env` is the
  bandit as a one-step `gymnasium.Env` (reward only near one mode).
* Offline RL datasets from *scripted* behaviour policies on real gymnasium tasks, actions normalised to
  [-1, 1]: ``reacher-*`` (MuJoCo ``Reacher-v5``: inverse kinematics + joint-space PD, elbow-up or
  elbow-down 50/50 per episode, so the first actions at one state have opposite signs),
  ``pendulum-*`` (``Pendulum-v1``: energy-shaping swing-up + PD), ``mountaincar-*``
  (``MountainCarContinuous-v0``: rock left first or push right first, 50/50). Qualities: ``expert``
  (no noise), ``medium`` (Gaussian action noise sigma = 0.3), ``random`` (uniform), ``replay`` (half
  random, half medium episodes).

Normalised score (D4RL): ``100 (R - R_random) / (R_ref - R_random)``, both references measured here
(`reference_returns`: the noise-free scripted policy and the uniform policy).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

TOYS = ("8gaussians", "moons", "checkerboard", "bandit")
BANDIT_MODES = np.array([[0.8, 0.8], [0.8, -0.8], [-0.8, 0.8], [-0.8, -0.8]])
BANDIT_SIGMA = 0.08
ENVS = {"reacher": "Reacher-v5", "pendulum": "Pendulum-v1", "mountaincar": "MountainCarContinuous-v0"}
QUALITIES = ("expert", "medium", "noisy", "random", "replay")
DATASETS = tuple(f"{e}-{q}" for e in ENVS for q in QUALITIES)
MEDIUM_NOISE = 0.3
NOISY_NOISE = 1.0


# ---------------------------------------------------------------------------------------- toys
def toy_samples(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` samples of a 2-D toy distribution (float32, shape (n, 2))."""
    if name not in TOYS:
        raise ValueError(f"unknown toy {name!r}; valid: {', '.join(TOYS)}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if name == "8gaussians":
        k = rng.integers(0, 8, n)
        centres = 1.2 * np.stack([np.cos(k * math.pi / 4), np.sin(k * math.pi / 4)], 1)
        x = centres + 0.08 * rng.standard_normal((n, 2))
    elif name == "moons":
        from sklearn.datasets import make_moons

        x, _ = make_moons(n, noise=0.06, random_state=int(rng.integers(2**31)))
        x = (x - np.array([0.5, 0.25])) * np.array([0.75, 1.0])
    elif name == "checkerboard":
        x1 = rng.random(n) * 4 - 2
        x2 = rng.random(n) - rng.integers(0, 2, n) * 2.0
        x2 = x2 + (np.floor(x1) % 2)
        x = np.stack([x1, x2], 1) * 0.6
    else:
        x = BANDIT_MODES[rng.integers(0, 4, n)] + BANDIT_SIGMA * rng.standard_normal((n, 2))
    return x.astype(np.float32)


class Bandit4Env(gym.Env):
    """The paper's multimodal bandit as a one-step gymnasium env (``Bandit4-v0``).

    Observation: a constant 1-vector; action in [-1, 1]^2; reward ``exp(-|a - (0.8, 0.8)|^2 / (2 * 0.2^2))``
    (only one of the four behaviour modes pays); every episode ends after one step.
    """

    metadata = {"render_modes": []}
    rewarded_mode = BANDIT_MODES[0]

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.ones(1, np.float32), {}

    def step(self, action):
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (2,):
            raise ValueError(f"Bandit4 actions are 2-D, got shape {a.shape}")
        return np.ones(1, np.float32), float(bandit_reward(a[None])[0]), True, False, {}


def bandit_reward(actions) -> np.ndarray:
    """`Bandit4Env`'s reward of each action row (``(n, 2)``): ``exp(-|a - (0.8, 0.8)|^2 / (2 * 0.2^2))``."""
    a = np.asarray(actions, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"bandit actions must be (n, 2), got {a.shape}")
    return np.exp(-np.sum((a - BANDIT_MODES[0]) ** 2, axis=1) / (2 * 0.2 ** 2))


def bandit_dataset(n: int, seed: int) -> "OfflineDataset":
    """``n`` one-step transitions of `Bandit4Env` under the four-mode behaviour (a DQL Fig. 1 style task).

    State: the constant 1; action: a behaviour sample (`toy_samples` ``bandit``) clipped to the box;
    reward: `bandit_reward`; every transition terminal. A Gaussian or MSE actor regularised towards
    this data is pulled to the modes' mean (0, 0), whose reward is ~1e-7; a policy that keeps the modes
    can put its mass on the paying one.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    a = np.clip(toy_samples("bandit", n, np.random.default_rng(seed)), -1.0, 1.0)
    s = np.ones((n, 1), np.float32)
    return OfflineDataset.from_arrays("bandit-offline", s, a, bandit_reward(a), s, np.ones(n), bandit_reward(a))


@torch.no_grad()
def evaluate_bandit(agent, n: int, seed: int, select: int = 0) -> np.ndarray:
    """Mean `bandit_reward` of ``n`` actions per member of ``agent`` (one step, fresh noise per action).

    ``select = 0``: the method's own evaluation action (`BehaviorRegularizedAgent.act`: one stochastic
    sample for the generative one-step policies). ``select = k > 0``: the *same* Q-selection for every
    method, the best of ``k`` candidates by ``min_j Qbar_j`` (`BehaviorRegularizedAgent.q_select`), so a
    policy that keeps several modes is not scored on the mass it leaves on the unpaid ones.
    """
    if n < 1 or select < 0:
        raise ValueError(f"n must be >= 1 and select >= 0, got {n}, {select}")
    gen = torch.Generator().manual_seed(int(seed) + 991)
    s = torch.ones(agent.E, n, 1)
    a = (agent.q_select(s, gen, select, greedy=True) if select else agent.act(s, gen)).numpy()
    return np.array([bandit_reward(row).mean() for row in a])


BANDIT_ID = "Bandit4-v0"
if BANDIT_ID not in gym.registry:
    gym.register(BANDIT_ID, entry_point=f"{__name__}:Bandit4Env", max_episode_steps=1)


def mode_coverage(x: np.ndarray, radius_sigmas: float = 3.0) -> float:
    """Fraction of 2-D points within ``radius_sigmas * BANDIT_SIGMA`` of a bandit mode (data: 98.9 % at 3)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != 2:
        raise ValueError(f"points must be (n, 2), got {x.shape}")
    d = np.linalg.norm(x[:, None, :] - BANDIT_MODES[None], axis=-1).min(1)
    return float(np.mean(d <= radius_sigmas * BANDIT_SIGMA))


# ---------------------------------------------------------------------------------------- datasets
@dataclass
class OfflineDataset:
    """Transitions ``(s, a, r, s', done)`` as float32 tensors; actions normalised to [-1, 1]."""

    name: str
    states: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_states: torch.Tensor
    dones: torch.Tensor
    episode_returns: np.ndarray

    def __post_init__(self):
        n = self.states.shape[0]
        if n == 0:
            raise ValueError(f"dataset {self.name!r} is empty")
        for k in ("actions", "rewards", "next_states", "dones"):
            if getattr(self, k).shape[0] != n:
                raise ValueError(f"dataset {self.name!r}: {k} has {getattr(self, k).shape[0]} rows, states {n}")
        if not torch.isfinite(self.rewards).all():
            raise ValueError(f"dataset {self.name!r}: rewards contain NaN or inf")
        if not (torch.isfinite(self.states).all() and torch.isfinite(self.actions).all()):
            raise ValueError(f"dataset {self.name!r}: states or actions contain NaN or inf")

    @property
    def state_dim(self) -> int:
        return self.states.shape[1]

    @property
    def action_dim(self) -> int:
        return self.actions.shape[1]

    def __len__(self) -> int:
        return self.states.shape[0]

    def sample(self, members: int, batch: int, gen: torch.Generator):
        """A batch per member: tensors ``(E, B, .)`` (rewards and dones ``(E, B)``)."""
        idx = torch.randint(0, len(self), (members, batch), generator=gen)
        return self.states[idx], self.actions[idx], self.rewards[idx], self.next_states[idx], self.dones[idx]

    @classmethod
    def from_arrays(cls, name, states, actions, rewards, next_states, dones, episode_returns=()):
        f = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float32)
        return cls(name, f(states), f(actions), f(rewards).reshape(-1), f(next_states), f(dones).reshape(-1),
                   np.asarray(episode_returns, dtype=np.float64))


def parse_dataset(name: str) -> tuple[str, str]:
    env, _, quality = name.partition("-")
    if env not in ENVS or quality not in QUALITIES:
        raise ValueError(f"unknown dataset {name!r}; valid: {', '.join(DATASETS)}")
    return env, quality


class ScriptedPolicy:
    """The scripted behaviour of one env; ``mode`` picks the strategy of an episode (0 or 1)."""

    def __init__(self, env_key: str, env: gym.Env):
        self.key, self.env = env_key, env.unwrapped
        self.mode = 0

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The normalised action in [-1, 1]."""
        if self.key == "reacher":
            return self._reacher(obs)
        if self.key == "pendulum":
            return self._pendulum(obs)
        return self._mountaincar(obs)

    def _reacher(self, obs):
        l1, l2 = 0.1, 0.11
        q = np.arctan2(obs[2:4], obs[0:2])
        qd = obs[6:8]
        goal = obs[4:6]
        dist = min(np.linalg.norm(goal), l1 + l2 - 1e-6)
        c2 = np.clip((dist ** 2 - l1 ** 2 - l2 ** 2) / (2 * l1 * l2), -1.0, 1.0)
        q2 = math.acos(c2) * (1.0 if self.mode == 0 else -1.0)          # elbow-up or elbow-down
        q1 = math.atan2(goal[1], goal[0]) - math.atan2(l2 * math.sin(q2), l1 + l2 * math.cos(q2))
        err = np.array([q1, q2]) - q
        err = (err + math.pi) % (2 * math.pi) - math.pi
        return np.clip(4.0 * err - 0.3 * qd, -1.0, 1.0)

    def _pendulum(self, obs):
        cos_th, sin_th, thd = obs
        th = math.atan2(sin_th, cos_th)                                  # 0 = upright
        if cos_th > 0.85:                                                # PD near the top
            u = -12.0 * th - 2.5 * thd
        else:                                                            # energy shaping: dE/dt = thd * u
            energy = thd ** 2 / 6.0 + 5.0 * cos_th
            u = 2.0 * (5.0 - energy) * np.sign(thd if abs(thd) > 1e-3 else 1.0)
        return np.clip(np.array([u / 2.0]), -1.0, 1.0)

    def _mountaincar(self, obs):
        pos, vel = obs
        if self.mode == 0 and pos > -0.75 and vel <= 0.0 and not getattr(self, "_swung", False):
            return np.array([-1.0])                                      # rock left first
        self._swung = True
        return np.array([1.0 if vel >= 0 else -1.0])                     # then pump with the velocity

    def start_episode(self, mode: int):
        self.mode = int(mode)
        self._swung = self.mode == 1                                     # push right first: pump at once


def _to_env_action(env: gym.Env, a: np.ndarray) -> np.ndarray:
    lo, hi = env.action_space.low, env.action_space.high
    return (lo + (a + 1.0) * 0.5 * (hi - lo)).astype(np.float32)


def rollout_dataset(name: str, episodes: int, seed: int, max_steps: int | None = None) -> OfflineDataset:
    """Roll out the dataset's behaviour policy for ``episodes`` episodes (seeded)."""
    env_key, quality = parse_dataset(name)
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    env = gym.make(ENVS[env_key], max_episode_steps=max_steps) if max_steps else gym.make(ENVS[env_key])
    policy = ScriptedPolicy(env_key, env)
    rng = np.random.default_rng(seed)
    S, A, R, S2, D, returns = [], [], [], [], [], []
    for ep in range(episodes):
        obs, _ = env.reset(seed=int(seed * 100_003 + ep))
        policy.start_episode(rng.integers(0, 2))
        q = quality if quality != "replay" else ("random" if ep % 2 == 0 else "medium")
        sigma = NOISY_NOISE if q == "noisy" else MEDIUM_NOISE
        total, done = 0.0, False
        while not done:
            if q == "random":
                a = rng.uniform(-1, 1, env.action_space.shape)
            else:
                a = policy(obs)
                if q in ("medium", "noisy"):
                    a = np.clip(a + sigma * rng.standard_normal(a.shape), -1, 1)
            obs2, r, term, trunc, _ = env.step(_to_env_action(env, a))
            S.append(obs); A.append(a); R.append(r); S2.append(obs2); D.append(float(term))
            total += r
            obs, done = obs2, term or trunc
        returns.append(total)
    env.close()
    return OfflineDataset.from_arrays(name, S, A, R, S2, D, returns)


def reference_returns(env_key: str, episodes: int, seed: int) -> dict[str, float]:
    """Mean returns of the noise-free scripted policy (``ref``) and the uniform policy (``random``)."""
    if env_key not in ENVS:
        raise ValueError(f"unknown env {env_key!r}; valid: {', '.join(ENVS)}")
    ref = rollout_dataset(f"{env_key}-expert", episodes, seed).episode_returns.mean()
    rnd = rollout_dataset(f"{env_key}-random", episodes, seed).episode_returns.mean()
    return {"ref": float(ref), "random": float(rnd)}


def normalized_score(returns, ref: float, random: float) -> np.ndarray:
    """D4RL's ``100 (R - R_random) / (R_ref - R_random)``."""
    if not ref > random:
        raise ValueError(f"reference return {ref} must exceed the random return {random}")
    return 100.0 * (np.asarray(returns, dtype=np.float64) - random) / (ref - random)


def evaluate(agent, env_key: str, episodes: int, seed: int, per_episode: bool = False) -> np.ndarray:
    """Mean return per member of ``agent`` (an ensemble) over ``episodes`` episodes each (``per_episode``:
    the returns, shape ``(E, episodes)``).

    All ``E * episodes`` episodes run in lock-step, one batched policy call per time step, with fresh
    noise per step (the stochastic one-step policy, as the paper evaluates).
    """
    if env_key not in ENVS:
        raise ValueError(f"unknown env {env_key!r}; valid: {', '.join(ENVS)}")
    E = agent.E
    envs = [gym.make(ENVS[env_key]) for _ in range(E * episodes)]
    if envs[0].action_space.shape[0] != agent.data.action_dim:
        raise ValueError(f"{env_key}: action dimension {envs[0].action_space.shape[0]} differs from the "
                         f"agent's {agent.data.action_dim}")
    obs = np.stack([e.reset(seed=int(10_000 + seed * 1000 + k))[0] for k, e in enumerate(envs)])
    gen = torch.Generator().manual_seed(int(seed) + 77)
    alive = np.ones(len(envs), bool)
    total = np.zeros(len(envs))
    while alive.any():
        s = torch.as_tensor(obs, dtype=torch.float32).view(E, episodes, -1)
        a = agent.act(s, gen).view(E * episodes, -1).numpy()
        for k, env in enumerate(envs):
            if not alive[k]:
                continue
            o2, r, term, trunc, _ = env.step(_to_env_action(env, a[k]))
            total[k] += r
            obs[k] = o2
            if term or trunc:
                alive[k] = False
    for env in envs:
        env.close()
    return total.reshape(E, episodes) if per_episode else total.reshape(E, episodes).mean(1)
