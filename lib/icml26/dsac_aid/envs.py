"""Environments: the JackpotLine impulse testbed and a reward-noise wrapper (research brief §5.1).

`JackpotLine` is a one-dimensional continuous-control task with two absorbing reward zones: a
deterministic *bank* on the left (r = 1 per step) and a Bernoulli *jackpot* on the right
(r = J * Bernoulli(m / J), mean m, variance m (J - m)). With m = 0.7 (`trap`) the jackpot is worse in mean
but far noisier; with m = 1.4 (`treasure`) it is better in mean, the control against "pessimism is only
risk aversion". `true_q` gives the variance-free value of a policy along its expected-reward trajectory (expected rewards,
deterministic dynamics), the ground truth for the critic's bias b = Q_hat - Q^pi.

`NoisyReward` adds zero-mean heavy-tailed noise sigma_n * t_3 / sqrt(3) (unit variance) to any
environment's reward and keeps the clean reward in ``info["clean_reward"]``.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

JACKPOT_ENV_ID = "JackpotLine-v0"
VARIANTS: dict[str, dict] = {
    "trap": dict(mean=0.7),                           # worse than the bank in mean, sd 2.1
    "treasure": dict(mean=1.4),                       # better than the bank in mean: pessimism must not refuse it
    "trap-clean": dict(mean=0.7, jackpot=0.7),        # negative control: J = m pays m every step, no noise
    "planted": dict(mean=0.7, early_mean=2.8),        # positive control: the jackpot pays 2.8 in mean until
                                                      # `switch_step` env steps, then 0.7 (an injected overvaluation)
    "planted-small": dict(mean=0.7, early_mean=1.2),  # a threshold-sized planted control: 1.2 (just above the bank's 1)
                                                      # until `switch_step`, then 0.7 (review of 24ad060, defect 1)
}
"""JackpotLine keyword arguments per named variant (the bank pays 1 per step)."""


def _check_jackpot_args(jackpot: float, mean: float, bank_edge: float, jackpot_edge: float, step_size: float,
                        horizon: int, bank_reward: float) -> None:
    for name, v in dict(jackpot=jackpot, mean=mean, bank_edge=bank_edge, jackpot_edge=jackpot_edge,
                        step_size=step_size, bank_reward=bank_reward).items():
        if not math.isfinite(v):
            raise ValueError(f"JackpotLine: {name} must be finite, got {v}")
    if jackpot <= 0:
        raise ValueError(f"JackpotLine: jackpot J must be > 0, got {jackpot}")
    if not 0 < mean <= jackpot:
        raise ValueError(f"JackpotLine: mean m must lie in (0, J] = (0, {jackpot}], got {mean}")
    if not -1 < bank_edge < jackpot_edge < 1:
        raise ValueError(f"JackpotLine: zones overlap or leave [-1, 1]: need -1 < bank_edge ({bank_edge}) "
                         f"< jackpot_edge ({jackpot_edge}) < 1")
    if step_size <= 0:
        raise ValueError(f"JackpotLine: step_size must be > 0, got {step_size}")
    if int(horizon) != horizon or horizon < 1:
        raise ValueError(f"JackpotLine: horizon must be a positive integer, got {horizon}")


class JackpotLine(gym.Env):
    """x, a in [-1, 1]; x' = clip(x + step_size * a); bank (r = 1) at x' <= bank_edge, jackpot
    (r = J * Bernoulli(m / J)) at x' >= jackpot_edge, else r = 0; truncated after `horizon` steps; plus, with
    ``step_noise`` > 0, a zero-mean Gaussian of that sd on every step's reward (its own noise stream).

    The brief's gamma = 0.9 belongs to the agent, not the environment. ``info["clean_reward"]`` is the
    expected reward of the step (bank: 1, jackpot: m), used by the variance-free evaluator.
    """

    metadata = {"render_modes": []}

    def __init__(self, jackpot: float = 7.0, mean: float = 0.7, bank_edge: float = -0.8, jackpot_edge: float = 0.8,
                 step_size: float = 0.2, horizon: int = 50, bank_reward: float = 1.0, start_width: float = 0.05,
                 early_mean: float | None = None, switch_step: int = 0, step_noise: float = 0.0):
        _check_jackpot_args(jackpot, mean, bank_edge, jackpot_edge, step_size, horizon, bank_reward)
        if early_mean is not None:
            _check_jackpot_args(jackpot, early_mean, bank_edge, jackpot_edge, step_size, horizon, bank_reward)
        if switch_step < 0:
            raise ValueError(f"JackpotLine: switch_step must be >= 0, got {switch_step}")
        if not (math.isfinite(step_noise) and step_noise >= 0):
            raise ValueError(f"JackpotLine: step_noise must be finite and >= 0, got {step_noise}")
        # pervasive reward noise (review of 5287791, defect 1): a zero-mean Gaussian of sd `step_noise` on *every* step's
        # reward, from its own stream (seeded at reset(seed=...)), so the batch-mean sigma that sets the sample target's
        # clip sees noise everywhere, and the noisy and noise-free jackpots draw the same pervasive noise
        self.step_noise = float(step_noise)
        self._noise_rng = np.random.default_rng(0)
        self.early_mean, self.switch_step, self.total_steps = early_mean, int(switch_step), 0
        self.jackpot, self.mean, self.bank_edge, self.jackpot_edge = float(jackpot), float(mean), float(bank_edge), float(jackpot_edge)
        self.step_size, self.horizon, self.bank_reward, self.start_width = float(step_size), int(horizon), float(bank_reward), float(start_width)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self._x = 0.0
        self._t = 0

    @property
    def reward_std(self) -> float:
        """Standard deviation of the jackpot reward, sqrt(m (J - m)) (2.1 for the trap)."""
        return math.sqrt(self.mean * (self.jackpot - self.mean))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._noise_rng = np.random.default_rng(int(seed) + 104729)
        self._x = float(self.np_random.uniform(-self.start_width, self.start_width))
        self._t = 0
        return np.array([self._x], dtype=np.float32), {}

    @property
    def current_mean(self) -> float:
        """The jackpot's mean now: `early_mean` for the first `switch_step` steps of this instance, then `mean`."""
        return self.early_mean if self.early_mean is not None and self.total_steps < self.switch_step else self.mean

    def expected_step(self, x: np.ndarray, a: np.ndarray, mean: np.ndarray | float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Deterministic dynamics and *expected* reward, vectorised: (x', E r); ``mean`` overrides the jackpot mean
        (one per row for several environments at once)."""
        m = self.current_mean if mean is None else mean
        x2 = np.clip(np.asarray(x, float) + self.step_size * np.clip(np.asarray(a, float), -1.0, 1.0), -1.0, 1.0)
        r = np.where(x2 <= self.bank_edge, self.bank_reward, np.where(x2 >= self.jackpot_edge, m, 0.0))
        return x2, r

    def step(self, action):
        a = float(np.clip(np.asarray(action, dtype=float).reshape(-1)[0], -1.0, 1.0))
        x2, clean = self.expected_step(np.array([self._x]), np.array([a]))
        self._x = float(x2[0])
        if self._x >= self.jackpot_edge:
            reward = self.jackpot * float(self.np_random.random() < self.current_mean / self.jackpot)
        else:
            reward = float(clean[0])
        if self.step_noise > 0:
            reward += self.step_noise * float(self._noise_rng.standard_normal())
        self._t += 1
        self.total_steps += 1
        obs = np.array([self._x], dtype=np.float32)
        return obs, reward, False, self._t >= self.horizon, {"clean_reward": float(clean[0])}

    def zone(self, x: np.ndarray) -> np.ndarray:
        """+1 at the jackpot, -1 at the bank, 0 in between."""
        x = np.asarray(x, float)
        return np.where(x >= self.jackpot_edge, 1, np.where(x <= self.bank_edge, -1, 0))


def register_envs() -> None:
    """Register ``JackpotLine-v0`` with gymnasium (idempotent)."""
    if JACKPOT_ENV_ID not in gym.registry:
        gym.register(JACKPOT_ENV_ID, entry_point=JackpotLine, max_episode_steps=None)


def make_jackpot(variant: str = "trap", **kwargs) -> JackpotLine:
    """`gymnasium.make("JackpotLine-v0")` for a named variant (`trap` | `treasure`), unwrapped."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown JackpotLine variant {variant!r}; valid: {', '.join(VARIANTS)}")
    register_envs()
    return gym.make(JACKPOT_ENV_ID, disable_env_checker=True, **{**VARIANTS[variant], **kwargs}).unwrapped


def true_q(env: JackpotLine, x0: np.ndarray, a0: np.ndarray, policy: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
           gamma: float, alpha: np.ndarray | float = 0.0, tol: float = 1e-8, mean: np.ndarray | float | None = None,
           reward_scale: float = 1.0) -> np.ndarray:
    """Variance-free soft Monte-Carlo value Q^pi(x0, a0) of a policy, vectorised over x0: for a deterministic
    policy exactly; for a sampling one (``policy`` draws its actions, as `experiments.jackpot_evaluator` does) one
    rollout of it, which the caller averages over several rollouts (rows).

    Q = sum_t gamma^t E r_t - sum_{t>=1} gamma^t alpha log pi(a_t | x_t): expected rewards along the
    deterministic trajectory, untruncated (the critic bootstraps through the time limit, so it estimates
    the infinite-horizon value), stopped once gamma^t < tol. ``policy(x) -> (action, log_prob)``. Rewards are
    multiplied by ``reward_scale`` (kappa; the entropy terms are in the agent's units already); ``mean``: the jackpot
    mean per row (several environments that differ only in it), else the environment's current one.
    """
    if not 0 <= gamma < 1:
        raise ValueError(f"gamma must lie in [0, 1), got {gamma}")
    x = np.asarray(x0, float).copy()
    x, r = env.expected_step(x, a0, mean)
    total, disc = reward_scale * r, 1.0
    alpha = np.asarray(alpha, float)
    n = int(math.ceil(math.log(tol) / math.log(gamma))) if gamma > 0 else 0
    for _ in range(n):
        disc *= gamma
        a, logp = policy(x)
        x2, r = env.expected_step(x, a, mean)
        total = total + disc * (reward_scale * r - alpha * np.asarray(logp, float))
        x = x2
    return total


class NoisyReward(gym.Wrapper):
    """r_noisy = r + sigma_n * t_3 / sqrt(3): zero mean, variance sigma_n^2, heavy tails (brief §5.1 b).

    The clean reward goes to ``info["clean_reward"]``; the noise stream is seeded by ``reset(seed=...)``.
    """

    def __init__(self, env: gym.Env, sigma: float = 1.0):
        super().__init__(env)
        if not (math.isfinite(sigma) and sigma >= 0):
            raise ValueError(f"NoisyReward: noise scale sigma must be finite and >= 0, got {sigma}")
        self.sigma = float(sigma)
        self._noise = np.random.default_rng(0)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._noise = np.random.default_rng(seed + 7919)
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        info.setdefault("clean_reward", float(reward))
        noisy = float(reward) + self.sigma * float(self._noise.standard_t(3)) / math.sqrt(3.0)
        return obs, noisy, terminated, truncated, info
