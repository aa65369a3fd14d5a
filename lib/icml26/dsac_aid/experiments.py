"""The chapter's experiments: JackpotLine (trap / treasure), NoisyPendulum, Hopper-v5 (+ noise).

`run_jackpot` trains one agent on every (variant, seed) pair as one batched agent and records, every
`eval_every` env steps: the bias b = Q_hat(s0, pi(s0)) - Q^pi(s0, pi(s0)) against the variance-free soft
Q^pi (`envs.true_q`, stochastic pi, expected rewards), sqrt(U_epi) and sqrt(U_ale) at the jackpot and bank
zones, where the mode policy ends, beta and the soft-MC bias that drives it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import gymnasium as gym
import numpy as np
import torch

from . import losses as L
from .agents import AgentConfig, BatchedAgent, agent_config
from .envs import VARIANTS, JackpotLine, NoisyReward, make_jackpot, true_q
from .training import TrainLog, soft_mc_bias, train

JACKPOT_PROBE = {"jackpot": (0.9, 0.5), "bank": (-0.9, -0.5)}
"""(x, a) pairs where the uncertainties are read: inside each zone, moving further in."""


def toy_config(name: str, cfg: dict) -> AgentConfig:
    """A named agent at the toy's sizes; the code's reward-scale-50 constants scaled to reward scale 1."""
    base = agent_config(name, hidden=tuple(cfg["hidden"]), batch_size=cfg["batch"], gamma=cfg["gamma"], lr=cfg["lr"],
                        tau=cfg["tau"])
    return base.scaled(base.reward_scale / cfg["reward_scale"]) if base.reward_scale != cfg["reward_scale"] else base


@dataclass
class JackpotRun:
    agent: str
    variants: list[str]          # per batched seed
    seeds: list[int]
    log: TrainLog
    steps: int
    model: BatchedAgent

    def select(self, variant: str) -> np.ndarray:
        return np.array([v == variant for v in self.variants])

    def series(self, key: str, variant: str) -> np.ndarray:
        return self.log.series(key)[:, self.select(variant)]


def jackpot_evaluator(envs: list[JackpotLine], rollouts: int, mc_episodes: int):
    """The per-event diagnostics of `run_jackpot` (one env per batched seed)."""
    S = len(envs)
    means = np.array([e.mean for e in envs])

    def evaluate(agent: BatchedAgent) -> dict[str, np.ndarray]:
        gen = torch.Generator().manual_seed(12345)
        with torch.no_grad():
            o0 = torch.zeros(S, 1, 1)
            a0 = torch.tanh(agent._dist(agent.actor, o0)[0])
            q_hat = agent.value_estimate(o0, a0)[:, 0].numpy()
            q, sig = agent.critic_values(o0, a0)
            q_bar = q.mean(dim=1)[:, 0].numpy()
            alpha = agent.alpha.numpy()[:, None]

            def policy(x):
                a, logp = agent.sample(agent.actor, torch.as_tensor(x, dtype=torch.float32).unsqueeze(-1),
                                       torch.randn(S, x.shape[1], 1, generator=gen))
                return a[..., 0].numpy(), logp.numpy()

            x0 = np.zeros((S, rollouts))
            a0r = np.repeat(a0[:, :, 0].numpy(), rollouts, axis=1)
            qt = _true_q_batched(envs, x0, a0r, policy, agent.cfg.gamma, alpha, agent.cfg.reward_scale)
            q_true = qt.mean(axis=1)
            rec = {"q_hat": q_hat, "q_bar": q_bar, "q_true": q_true, "bias": q_hat - q_true, "bias_mean": q_bar - q_true}
            if sig is not None and agent.N > 1:
                for zone, (x, a) in JACKPOT_PROBE.items():
                    qz, sz = agent.critic_values(torch.full((S, 1, 1), x), torch.full((S, 1, 1), a))
                    ue, ua = L.ensemble_uncertainty(qz, sz)
                    rec[f"sqrt_u_epi_{zone}"] = ue[:, 0].sqrt().numpy()
                    rec[f"sqrt_u_ale_{zone}"] = ua[:, 0].sqrt().numpy()
            # where the mode policy ends after one episode from x = 0 (deterministic dynamics)
            x = np.zeros(S)
            clean_return = np.zeros(S)
            for _ in range(envs[0].horizon):
                a = np.tanh(agent._dist(agent.actor, torch.as_tensor(x, dtype=torch.float32).reshape(S, 1, 1))[0][:, 0, 0].numpy())
                x2 = np.clip(x + envs[0].step_size * a, -1, 1)
                clean_return += np.where(x2 <= envs[0].bank_edge, 1.0, np.where(x2 >= envs[0].jackpot_edge, means, 0.0))
                x = x2
            rec["end_x"] = x
            rec["end_zone"] = envs[0].zone(x).astype(float)
            rec["clean_return"] = clean_return
        return rec

    return evaluate


def _true_q_batched(envs: list[JackpotLine], x0: np.ndarray, a0: np.ndarray, policy, gamma: float, alpha: np.ndarray,
                    reward_scale: float = 1.0, tol: float = 1e-6) -> np.ndarray:
    """`envs.true_q` for S environments at once (they differ only in the jackpot mean): (S, R) values,
    kappa sum_t gamma^t E r_t - sum_{t>=1} gamma^t alpha log pi(a_t | x_t), stochastic pi, expected rewards."""
    means = np.array([e.mean for e in envs])[:, None]
    e0 = envs[0]

    def step(x, a):
        x2 = np.clip(x + e0.step_size * np.clip(a, -1, 1), -1, 1)
        r = np.where(x2 <= e0.bank_edge, e0.bank_reward, np.where(x2 >= e0.jackpot_edge, means, 0.0))
        return x2, r

    x, r = step(x0, a0)
    total, disc = reward_scale * r, 1.0
    for _ in range(int(math.ceil(math.log(tol) / math.log(gamma)))):
        disc *= gamma
        a, logp = policy(x)
        x2, r = step(x, a)
        total = total + disc * (reward_scale * r - alpha * logp)
        x = x2
    return total


def run_jackpot(agent_name: str, variants: tuple[str, ...], n_seeds: int, cfg: dict, seed: int = 0,
                show_progress: bool = True) -> JackpotRun:
    """Train `agent_name` on every variant x seed as one batched agent (seeds paired across agents)."""
    if n_seeds < 1:
        raise ValueError(f"n_seeds must be >= 1, got {n_seeds}")
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {v!r}; valid: {', '.join(VARIANTS)}")
    per = [v for v in variants for _ in range(n_seeds)]
    seeds = [seed * 100 + k for _ in variants for k in range(n_seeds)]
    ac = toy_config(agent_name, cfg)
    agent = BatchedAgent(ac, 1, 1, len(per), seed=seed * 7919 + 17)
    envs = [make_jackpot(v) for v in per]
    evaluate = jackpot_evaluator(envs, cfg["mc_rollouts"], cfg["mc_episodes"])
    beta_bias = None
    if ac.adaptive_beta:
        beta_bias = lambda ag: soft_mc_bias(ag, lambda s: make_jackpot(per[s]), seeds, cfg["mc_episodes"],
                                            cfg["mc_first_steps"], envs[0].horizon)["bias"]
    log = train(agent, lambda s: make_jackpot(per[s]), seeds, cfg["steps"], warmup=cfg["warmup"], eval_every=cfg["eval_every"],
                evaluate=evaluate, beta_bias=beta_bias, desc=f"{agent_name} on {'+'.join(variants)}",
                show_progress=show_progress)
    return JackpotRun(agent_name, per, seeds, log, cfg["steps"], agent)


def impulse(steps: np.ndarray, bias: np.ndarray, q_true: np.ndarray, total_steps: int, frac: float = 0.1) -> dict[str, np.ndarray]:
    """The impulse test per seed (issue C3): an interior maximum b_max > 0 of the bias curve in the first half
    of training with b_max - b_final >= frac |Q^pi(s0)| (final Q^pi). ``bias``, ``q_true``: (n_evals, S)."""
    bias, q_true, steps = np.asarray(bias, float), np.asarray(q_true, float), np.asarray(steps)
    if bias.ndim != 2 or bias.shape != q_true.shape or bias.shape[0] != steps.size:
        raise ValueError(f"impulse: bias and q_true must be (n_evals, S) with n_evals = len(steps), got {bias.shape}, {q_true.shape}")
    i = bias.argmax(axis=0)
    b_max = bias.max(axis=0)
    b_final = bias[-1]
    interior = (i > 0) & (i < bias.shape[0] - 1)
    early = steps[i] <= 0.5 * total_steps
    drop = b_max - b_final
    ok = interior & early & (b_max > 0) & (drop >= frac * np.abs(q_true[-1]))
    return {"b_max": b_max, "b_final": b_final, "t_max": steps[i], "drop": drop, "impulse": ok}


def ratio_after(run: JackpotRun, variant: str, zone: str, frac: float = 0.25) -> np.ndarray:
    """Per seed: mean over evaluation events after `frac` of training of sqrt(U_epi) / sqrt(U_ale) at a zone."""
    steps = np.array(run.log.steps)
    late = steps > frac * run.steps
    e, a = run.series(f"sqrt_u_epi_{zone}", variant), run.series(f"sqrt_u_ale_{zone}", variant)
    return (e[late] / a[late]).mean(axis=0)


# ----------------------------------------------------------------------------- continuous control

def make_noisy(env_id: str, sigma: float):
    def make(s: int) -> gym.Env:
        return NoisyReward(gym.make(env_id, disable_env_checker=True), sigma)
    return make


def run_control(agent_name: str, env_id: str, sigma: float, n_seeds: int, cfg: dict, seed: int = 0,
                show_progress: bool = True, **overrides) -> tuple[TrainLog, BatchedAgent]:
    """Train an agent on `env_id` with reward noise sigma (NoisyReward), recording the soft-MC bias against the
    clean and the noisy rewards and the clean return of the mode policy at every evaluation event."""
    probe = gym.make(env_id, disable_env_checker=True)
    od, ad = probe.observation_space.shape[0], probe.action_space.shape[0]
    ac = agent_config(agent_name, hidden=tuple(cfg["hidden"]), batch_size=cfg["batch"], gamma=cfg["gamma"], lr=cfg["lr"],
                      tau=cfg["tau"], **overrides)
    if ac.reward_scale != cfg["reward_scale"]:
        ac = ac.scaled(ac.reward_scale / cfg["reward_scale"])
    agent = BatchedAgent(ac, od, ad, n_seeds, seed=seed * 7919 + 29)
    seeds = [seed * 100 + k for k in range(n_seeds)]
    make = make_noisy(env_id, sigma)
    ev = lambda ag: soft_mc_bias(ag, make, seeds, cfg["eval_episodes"], cfg["eval_first_steps"], cfg["eval_max_steps"])
    cache: dict = {}

    def evaluate(ag):
        cache["r"] = ev(ag)
        return cache["r"]

    beta_bias = (lambda ag: cache["r"]["bias"]) if ac.adaptive_beta else None
    log = train(agent, make, seeds, cfg["steps"], warmup=cfg["warmup"], eval_every=cfg["eval_every"], evaluate=evaluate,
                beta_bias=beta_bias, desc=f"{agent_name} on {env_id} (noise {sigma:g})", show_progress=show_progress)
    return log, agent
