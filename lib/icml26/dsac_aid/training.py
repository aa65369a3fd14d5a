"""Replay, the training loop (UTD 1, S seeds in lock-step) and the evaluators (brief §2.2, §5).

Each seed has its own environment instance and its own replay; one batched `update` trains all seeds.
The soft Monte-Carlo evaluator is the code's (`evaluator_dsacaid.py`): episodes with the mode action,
G_t = kappa r_t + gamma (G_{t+1} - alpha log pi(a_{t+1} | s_{t+1})), bootstrapped from Q_hat at the last step,
bias b = mean_t (Q_hat_t - G_t) over the first steps; it drives beta.
"""
from __future__ import annotations

from collections.abc import Callable
import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from ..progress import progress
from .agents import BatchedAgent


class BatchedReplay:
    """S replay buffers of equal size in one set of tensors; `sample` draws B indices per seed."""

    def __init__(self, n_seeds: int, capacity: int, obs_dim: int, act_dim: int, device: torch.device | str = "cpu"):
        if n_seeds < 1 or capacity < 1:
            raise ValueError(f"n_seeds and capacity must be >= 1, got {n_seeds}, {capacity}")
        self.S, self.capacity, self.device = n_seeds, capacity, torch.device(device)
        z = dict(device=self.device)
        self.obs = torch.zeros(n_seeds, capacity, obs_dim, **z)
        self.next_obs = torch.zeros(n_seeds, capacity, obs_dim, **z)
        self.act = torch.zeros(n_seeds, capacity, act_dim, **z)
        self.rew = torch.zeros(n_seeds, capacity, **z)
        self.done = torch.zeros(n_seeds, capacity, **z)
        self.pos, self.size = 0, 0

    def add(self, obs, act, rew, next_obs, done) -> None:
        rew = np.asarray(rew, dtype=np.float64).reshape(self.S)
        if not np.all(np.isfinite(rew)):
            raise ValueError(f"rewards reaching the buffer must be finite, got {rew}")
        for name, x in (("obs", obs), ("next_obs", next_obs), ("act", act)):
            if not np.all(np.isfinite(np.asarray(x, dtype=np.float64))):
                raise ValueError(f"{name} reaching the buffer must be finite")
        i, d = self.pos, self.device
        self.obs[:, i] = torch.as_tensor(np.asarray(obs, np.float32), device=d)
        self.next_obs[:, i] = torch.as_tensor(np.asarray(next_obs, np.float32), device=d)
        self.act[:, i] = torch.as_tensor(np.asarray(act, np.float32), device=d)
        self.rew[:, i] = torch.as_tensor(rew, dtype=torch.float32, device=d)
        self.done[:, i] = torch.as_tensor(np.asarray(done, np.float32).reshape(self.S), device=d)
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
        idx = torch.randint(0, self.size, (self.S, batch_size), generator=generator).to(self.device)
        take = lambda x: torch.gather(x, 1, idx.unsqueeze(-1).expand(-1, -1, x.shape[-1])) if x.dim() == 3 else torch.gather(x, 1, idx)
        return {"obs": take(self.obs), "act": take(self.act), "rew": take(self.rew), "next_obs": take(self.next_obs),
                "done": take(self.done)}


def _check_box(env: gym.Env) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(env.action_space, spaces.Box):
        raise TypeError(f"the agents need a Box action space, got {type(env.action_space).__name__}")
    if not isinstance(env.observation_space, spaces.Box):
        raise TypeError(f"the agents need a Box observation space, got {type(env.observation_space).__name__}")
    return env.action_space.low.astype(np.float64), env.action_space.high.astype(np.float64)


def to_env_action(a: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """[-1, 1] -> [low, high] (the policy acts in the normalised box)."""
    return low + (np.asarray(a, np.float64) + 1.0) * 0.5 * (high - low)


def soft_mc_bias(agent: BatchedAgent, make_env: Callable[[int], gym.Env], seeds: list[int], n_episodes: int,
                 first_steps: int, max_steps: int) -> dict[str, np.ndarray]:
    """The code's soft Monte-Carlo bias evaluator, per seed: mode actions, G_t bootstrapped from Q_hat at the last step.

    Each seed's episode is evaluated over its own length: a seed whose episode terminates early records nothing
    after its last step (no phantom rewards or entropy terms), and its G is not bootstrapped at a termination.
    Returns, per seed (S,): ``bias`` = mean over episodes and the first `first_steps` steps of Q_hat_t - G_t with
    the rewards the agent sees (what drives beta in the code), ``bias_clean`` the same with the clean rewards
    of ``info["clean_reward"]``, and ``ret`` / ``ret_clean`` the mean undiscounted episode returns. The truncation
    bootstrap biases G_t by gamma^(T-t) (Q_hat_T - Q_T) (Theory).
    """
    if n_episodes < 1 or first_steps < 1 or max_steps < first_steps:
        raise ValueError("soft_mc_bias: need n_episodes >= 1 and 1 <= first_steps <= max_steps")
    c = agent.cfg
    S = agent.S
    envs = [make_env(s) for s in range(S)]
    low, high = _check_box(envs[0])
    alpha = agent.alpha.cpu().numpy()
    out = {k: np.zeros((S, n_episodes)) for k in ("bias", "bias_clean", "ret", "ret_clean")}
    for ep in range(n_episodes):
        obs = np.stack([e.reset(seed=int(seeds[s]) * 1000 + ep)[0] for s, e in enumerate(envs)]).astype(np.float32)
        # per seed: Q_hat_t, log pi_t, r_t, clean r_t, only while its episode runs (an ended seed records nothing)
        Qs, LPs, Rs, Cs = ([[] for _ in range(S)] for _ in range(4))
        alive, boot = np.ones(S, bool), np.ones(S, bool)
        for t in range(max_steps):
            a = agent.act(obs, deterministic=True)
            with torch.no_grad():
                o = torch.as_tensor(obs, dtype=torch.float32, device=agent.device).unsqueeze(1)
                at = torch.as_tensor(a, device=agent.device).unsqueeze(1)
                q_t = agent.value_estimate(o, at)[:, 0].cpu().numpy()
                lp_t = agent.log_prob(agent.actor, o, at)[:, 0].cpu().numpy()
            nxt = obs.copy()
            for s, e in enumerate(envs):
                if not alive[s]:
                    continue
                o2, rew, term, trunc, info = e.step(to_env_action(a[s], low, high).astype(np.float32))
                Qs[s].append(q_t[s]); LPs[s].append(lp_t[s])
                Rs[s].append(rew); Cs[s].append(info.get("clean_reward", rew))
                nxt[s] = o2
                if term or trunc or t == max_steps - 1:
                    alive[s] = False
                    boot[s] = not term   # terminated: no bootstrap; truncated (or cut at max_steps): bootstrap
            obs = nxt
            if not alive.any():
                break
        for s in range(S):
            Q, LP = np.array(Qs[s]), np.array(LPs[s])
            k = min(first_steps, len(Q))
            for key, R in (("bias", np.array(Rs[s])), ("bias_clean", np.array(Cs[s]))):
                G = np.zeros_like(Q)
                # truncated: G_{T-1} = Q_hat at the last step (the code's bootstrap); terminated: kappa r_{T-1}
                G[-1] = Q[-1] if boot[s] else c.reward_scale * R[-1]
                for t in range(len(Q) - 2, -1, -1):
                    G[t] = c.reward_scale * R[t] + c.gamma * (G[t + 1] - alpha[s] * LP[t + 1])
                out[key][s, ep] = (Q[:k] - G[:k]).mean()
            out["ret"][s, ep] = float(np.sum(Rs[s]))
            out["ret_clean"][s, ep] = float(np.sum(Cs[s]))
    return {k: v.mean(axis=1) for k, v in out.items()}


@dataclass
class TrainLog:
    """What a training run records at its evaluation events (arrays (n_evals, S) unless noted)."""

    steps: list[int] = field(default_factory=list)
    records: list[dict[str, np.ndarray]] = field(default_factory=list)
    seconds: float = 0.0

    def series(self, key: str) -> np.ndarray:
        return np.array([r[key] for r in self.records])


def train(agent: BatchedAgent, make_env: Callable[[int], gym.Env], seeds: list[int], steps: int, *, warmup: int,
          eval_every: int, evaluate: Callable[[BatchedAgent], dict[str, np.ndarray]] | None = None,
          beta_bias: Callable[[BatchedAgent], np.ndarray] | None = None, buffer_size: int | None = None,
          desc: str = "", show_progress: bool = True, dense_every: int = 0, dense_until: int = 0) -> TrainLog:
    """Train S = len(seeds) seeds in lock-step for `steps` env steps each, one update per env step (UTD 1).

    ``evaluate(agent)`` is called every `eval_every` env steps (its dict goes into the log) and
    ``beta_bias(agent)`` gives the measured bias b that drives the agent's beta at the same events
    (the code evaluates every 2 500 iterations; the toy every `eval_every` env steps).

    ``dense_every`` / ``dense_until``: extra *measurement-only* events every `dense_every` env steps after the warm-up
    up to step `dense_until`, to resolve an early transient (the impulse) without changing the agent: beta moves
    only at the regular `eval_every` events, so the run's beta schedule (`events_scaled_beta_lr`) is the same with
    or without them. Each record carries ``beta_event`` (1 at a regular event, 0 at a measurement-only one).
    """
    if eval_every < 1:
        raise ValueError(f"the evaluation interval must be >= 1, got {eval_every}")
    if dense_every < 0 or dense_until < 0 or (dense_until > 0 and dense_every < 1):
        raise ValueError(f"dense_every must be >= 1 where dense_until > 0 (both >= 0), got {dense_every}, {dense_until}")
    if len(seeds) != agent.S:
        raise ValueError(f"{len(seeds)} seeds for an agent of {agent.S}")
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be >= 1 and warmup >= 0, got {steps}, {warmup}")
    t0 = time.perf_counter()
    envs = [make_env(s) for s in range(agent.S)]
    low, high = _check_box(envs[0])
    # one warm-up action stream per seed row, keyed by its seed alone (independent of S and of the other rows): rows
    # with the same seed (a noisy and a noise-free jackpot) take the same warm-up actions (review of 5287791, D3)
    rngs = [np.random.default_rng([int(s), 7]) for s in seeds]
    buf = BatchedReplay(agent.S, buffer_size or steps, agent.obs_dim, agent.act_dim, device=agent.device)
    obs = np.stack([e.reset(seed=int(seeds[s]))[0] for s, e in enumerate(envs)]).astype(np.float32)
    log = TrainLog()
    ticks = range(steps)
    if show_progress:
        ticks = progress(ticks, desc=desc or agent.cfg.name, total=steps)
    for t in ticks:
        if t < warmup:
            a = np.stack([r.uniform(-1.0, 1.0, size=agent.act_dim) for r in rngs]).astype(np.float32)
        else:
            a = agent.act(obs, behaviour=True)
        nxt, rew, done = np.empty_like(obs), np.zeros(agent.S), np.zeros(agent.S)
        reset_obs = obs.copy()
        for s, e in enumerate(envs):
            o2, r, term, trunc, _ = e.step(to_env_action(a[s], low, high).astype(np.float32))
            nxt[s], rew[s], done[s] = o2, r, float(term)
            reset_obs[s] = e.reset()[0] if (term or trunc) else o2
        buf.add(obs, a, rew, nxt, done)
        obs = reset_obs
        if t >= warmup and buf.size >= agent.cfg.batch_size:
            agent.update(buf.sample(agent.cfg.batch_size, agent.gen))
        regular = (t + 1) % eval_every == 0
        dense = dense_until > 0 and warmup < t + 1 <= dense_until and (t + 1 - warmup) % dense_every == 0
        if regular or dense:
            rec = evaluate(agent) if evaluate is not None else {}
            rec = dict(rec)
            if beta_bias is not None:
                b = beta_bias(agent)
                rec["mc_bias"] = b
                if regular and t >= warmup:
                    agent.update_beta(b)
            rec["beta_event"] = np.full(agent.S, float(regular))
            rec["beta"] = agent.beta.copy()
            rec["alpha"] = agent.alpha.cpu().numpy().copy()
            log.steps.append(t + 1)
            log.records.append(rec)
    log.seconds = time.perf_counter() - t0
    return log
