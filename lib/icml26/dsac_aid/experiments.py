"""The chapter's experiments: JackpotLine (trap / treasure and the controls), NoisyPendulum, Hopper-v5 (+ noise).

`run_jackpot` trains one agent on every (variant, seed) pair as one batched agent and records, every
`eval_every` env steps, in raw reward units (the agent's values divided by the reward scale kappa):

* the bias where the impulse lives, for every agent: ``bias_jackpot`` at the jackpot probe (x, a) = (0.9, 0.5);
* ``bias`` = Q_hat(s0, pi(s0)) - Q^pi(s0, pi(s0)) along the actor's own choice (mostly the bank path);
* the paper's trajectory bias for every agent (`training.soft_mc_bias`, clean and noisy rewards), which also
  drives DSAC-AID's beta;
* sqrt(U_epi), sqrt(U_ale) at the jackpot and bank zones, where the mode policy ends, beta.

Q^pi is the variance-free soft value of the stochastic exploit policy (`envs.true_q`, expected rewards).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import gymnasium as gym
import numpy as np
import torch

from . import losses as L
from .agents import AgentConfig, BatchedAgent, agent_config, events_scaled_beta_lr
from .envs import VARIANTS, JackpotLine, NoisyReward, make_jackpot, true_q
from .training import TrainLog, soft_mc_bias, train

JACKPOT_PROBE = {"jackpot": (0.9, 0.5), "bank": (-0.9, -0.5)}
"""(x, a) pairs where the uncertainties are read: inside each zone, moving further in."""


def beta_events(steps: int, warmup: int, eval_every: int) -> int:
    """How many evaluation events of `training.train` can move beta: those at or after the warm-up."""
    return sum(1 for t in range(eval_every - 1, steps, eval_every) if t >= warmup)


def with_run_beta_lr(ac: AgentConfig, cfg: dict) -> AgentConfig:
    """An adaptive-beta agent's beta rate scaled to this run's number of beta events (`events_scaled_beta_lr`):
    the released rate 5e-4 over 600 events becomes e.g. 0.025 over 12 events. Other agents are returned as they are."""
    if not ac.adaptive_beta:
        return ac
    n = beta_events(cfg["steps"], cfg["warmup"], cfg["eval_every"])
    return replace(ac, beta_lr=events_scaled_beta_lr(ac.beta_lr, max(n, 1)))


def toy_config(name: str, cfg: dict) -> AgentConfig:
    """A named agent at the toy's sizes, its beta rate scaled to the run's beta events (`with_run_beta_lr`). The
    released Gym-MuJoCo configuration already runs at the toy's reward scale (0.1); a configuration at another
    scale (the generic / DMC one, 50) has its scale-bound constants rescaled (`AgentConfig.scaled`)."""
    base = agent_config(name, hidden=tuple(cfg["hidden"]), batch_size=cfg["batch"], gamma=cfg["gamma"], lr=cfg["lr"],
                        tau=cfg["tau"], alpha0=cfg["alpha0"])
    base = base.scaled(base.reward_scale / cfg["reward_scale"]) if base.reward_scale != cfg["reward_scale"] else base
    return with_run_beta_lr(base, cfg)


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

    def head(self, n: int) -> "JackpotRun":
        """The same run restricted to its first `n` seeds of every variant (the recorded series only; ``model`` is the
        whole batched agent). Rows are keyed by their seed alone (`BatchedAgent(row_seeds=...)`), so a run of more
        seeds read through ``head(n)`` stays paired with an n-seed run of the same ``seed`` (same initial weights and
        warm-up actions per seed; the minibatch draws differ)."""
        per_variant = self.variants.count(self.variants[0])
        if not 1 <= n <= per_variant:
            raise ValueError(f"head: need 1 <= n <= {per_variant} seeds per variant, got {n}")
        keep = np.array([k % per_variant < n for k in range(len(self.variants))])
        log = TrainLog(list(self.log.steps), [{k: np.asarray(v)[keep] for k, v in r.items()} for r in self.log.records],
                       self.log.seconds)
        return JackpotRun(self.agent, [v for v, m in zip(self.variants, keep) if m], [s for s, m in zip(self.seeds, keep) if m],
                          log, self.steps, self.model)


def jackpot_evaluator(envs: list[JackpotLine], rollouts: int, mc_episodes: int, mc_first_steps: int,
                      mc_env: callable, seeds: list[int]):
    """The per-event diagnostics of `run_jackpot` (``envs``: the training environments, one per batched seed, read
    for their current jackpot mean; ``mc_env(s)``: a fresh environment for the soft-MC evaluator)."""
    S = len(envs)
    e0 = envs[0]

    def evaluate(agent: BatchedAgent) -> dict[str, np.ndarray]:
        gen = torch.Generator().manual_seed(12345)
        dev, kappa = agent.device, agent.cfg.reward_scale
        means = np.array([e.current_mean for e in envs])[:, None]
        alpha = agent.alpha.cpu().numpy()[:, None]

        def policy(x):
            o = torch.as_tensor(x, dtype=torch.float32, device=dev).unsqueeze(-1)
            a, logp = agent.sample(agent.actor, o, torch.randn(S, x.shape[1], 1, generator=gen).to(dev))
            return a[..., 0].cpu().numpy(), logp.cpu().numpy()

        def q_true(x, a):   # (S,) raw reward units, mean over `rollouts` stochastic continuations
            xs = np.broadcast_to(np.asarray(x, float).reshape(-1, 1), (S, rollouts)).copy()
            as_ = np.broadcast_to(np.asarray(a, float).reshape(-1, 1), (S, rollouts)).copy()
            return true_q(e0, xs, as_, policy, agent.cfg.gamma, alpha, tol=1e-6, mean=means, reward_scale=kappa).mean(1) / kappa

        def q_hat(x, a):    # the value the exploit actor maximises, and the ensemble mean
            o, at = torch.full((S, 1, 1), float(x), device=dev), torch.as_tensor(np.reshape(a, (S, 1, 1)), dtype=torch.float32, device=dev)
            q, _ = agent.critic_values(o, at)
            return agent.value_estimate(o, at)[:, 0].cpu().numpy() / kappa, q.mean(dim=1)[:, 0].cpu().numpy() / kappa

        with torch.no_grad():
            a0 = np.tanh(agent._dist(agent.actor, torch.zeros(S, 1, 1, device=dev))[0][:, 0, 0].cpu().numpy())
            rec: dict[str, np.ndarray] = {}
            # (the earlier probe Q_hat(s0, +1) and the ensemble-mean biases fed no claim or figure: dropped, review of 5287791)
            for key, x, a in (("", 0.0, a0), ("_jackpot", JACKPOT_PROBE["jackpot"][0], np.full(S, JACKPOT_PROBE["jackpot"][1]))):
                qh, _ = q_hat(x, a)
                qt = q_true(x, a)
                rec[f"q_hat{key}"], rec[f"q_true{key}"] = qh, qt
                rec[f"bias{key}"] = qh - qt
            if agent.cfg.critic == "gaussian" and agent.N > 1:
                for zone, (x, a) in JACKPOT_PROBE.items():
                    qz, sz = agent.critic_values(torch.full((S, 1, 1), x, device=dev), torch.full((S, 1, 1), a, device=dev))
                    ue, ua = L.ensemble_uncertainty(qz, sz)
                    rec[f"sqrt_u_epi_{zone}"] = ue[:, 0].sqrt().cpu().numpy() / kappa
                    rec[f"sqrt_u_ale_{zone}"] = ua[:, 0].sqrt().cpu().numpy() / kappa
                # the clip scale of the sample target: each member's EMA of its batch-mean sigma, in reward units
                rec["sigma_bar"] = agent.sigma_bar.mean(dim=(1, 2)).cpu().numpy() / kappa
            # where the mode policy ends after one episode from x = 0 (deterministic dynamics)
            x = np.zeros(S)
            clean_return = np.zeros(S)
            for _ in range(e0.horizon):
                a = np.tanh(agent._dist(agent.actor, torch.as_tensor(x, dtype=torch.float32, device=dev).reshape(S, 1, 1))[0][:, 0, 0].cpu().numpy())
                x, r = e0.expected_step(x, a, means[:, 0])
                clean_return += r
            rec["end_x"] = x
            rec["end_zone"] = e0.zone(x).astype(float)
            rec["clean_return"] = clean_return
        mc = soft_mc_bias(agent, mc_env, seeds, mc_episodes, mc_first_steps, e0.horizon)
        rec["mc_bias_scaled"] = mc["bias"]                      # the agent's units: what drives beta
        rec["mc_bias_traj"] = mc["bias"] / kappa
        rec["mc_bias_traj_clean"] = mc["bias_clean"] / kappa
        return rec

    return evaluate


def run_jackpot(agent_name: str, variants: tuple[str, ...], n_seeds: int, cfg: dict, seed: int = 0,
                show_progress: bool = True, env_kwargs: dict[str, dict] | None = None,
                device: torch.device | str | None = None) -> JackpotRun:
    """Train `agent_name` on every variant x seed as one batched agent (seeds paired across agents and variants).

    ``env_kwargs[variant]`` overrides that variant's JackpotLine arguments (e.g. ``jackpot=J`` for a noise
    level); a variant may carry a label, ``'trap@J=14'``: the named variant ``trap`` with ``env_kwargs['trap@J=14']``,
    so that several settings of one variant train as one batched run (the noise sweep); the ``planted`` variant switches its jackpot mean after ``cfg["planted_switch"]`` x steps env steps, the
    ``planted-small`` one after ``cfg["planted_small_switch"]`` x steps. ``cfg["dense_every"]`` / ``cfg["dense_until"]``
    (optional) add measurement-only evaluation events early in training (`training.train`)."""
    if n_seeds < 1:
        raise ValueError(f"n_seeds must be >= 1, got {n_seeds}")
    env_kwargs = dict(env_kwargs or {})
    if len(set(variants)) != len(variants):
        raise ValueError(f"run_jackpot: variants must be distinct, got {variants}")
    for v in variants:
        if v.split("@")[0] not in VARIANTS:
            raise ValueError(f"unknown variant {v!r}; valid: {', '.join(VARIANTS)} (optionally labelled 'name@tag')")
    for v in variants:   # a planted variant (labelled or not) switches after its preset fraction of training
        frac = {"planted": "planted_switch", "planted-small": "planted_small_switch"}.get(v.split("@")[0])
        if frac is not None:
            env_kwargs[v] = {"switch_step": int(cfg[frac] * cfg["steps"]), **env_kwargs.get(v, {})}
    per = [v for v in variants for _ in range(n_seeds)]
    seeds = [seed * 100 + k for _ in variants for k in range(n_seeds)]
    ac = toy_config(agent_name, cfg)
    # each row's initial weights and warm-up actions keyed by its seed alone: the rows of one seed start identical in
    # every variant (trap and trap-clean, review of 5287791, D3); the preset's pervasive reward noise on every variant
    agent = BatchedAgent(ac, 1, 1, len(per), seed=seed * 7919 + 17, device=device, row_seeds=seeds)
    noise = {"step_noise": float(cfg.get("step_noise", 0.0))}
    base = lambda v: v.split("@")[0]   # a labelled variant 'trap@J=14' is the named variant 'trap' with its env_kwargs
    train_envs = [make_jackpot(base(v), **{**noise, **env_kwargs.get(v, {})}) for v in per]

    def mc_env(s: int) -> JackpotLine:   # a fresh copy at the training environment's current jackpot mean
        kw = {**noise, **env_kwargs.get(per[s], {}), "mean": train_envs[s].current_mean, "early_mean": None, "switch_step": 0}
        return make_jackpot(base(per[s]), **kw)

    evaluate = jackpot_evaluator(train_envs, cfg["mc_rollouts"], cfg["mc_episodes"], cfg["mc_first_steps"], mc_env, seeds)
    cache: dict = {}

    def evaluate_and_keep(ag):
        cache["r"] = evaluate(ag)
        return cache["r"]

    beta_bias = (lambda ag: cache["r"]["mc_bias_scaled"]) if ac.adaptive_beta else None
    log = train(agent, lambda s: train_envs[s], seeds, cfg["steps"], warmup=cfg["warmup"], eval_every=cfg["eval_every"],
                evaluate=evaluate_and_keep, beta_bias=beta_bias, desc=f"{agent_name} on {'+'.join(variants)}",
                show_progress=show_progress, dense_every=cfg.get("dense_every", 0), dense_until=cfg.get("dense_until", 0))
    return JackpotRun(agent_name, per, seeds, log, cfg["steps"], agent)


def impulse(steps: np.ndarray, bias: np.ndarray, q_true: np.ndarray, total_steps: int, frac: float = 0.1,
            late_frac: float = 0.75) -> dict[str, np.ndarray]:
    """The impulse test per seed: an interior maximum b_max > 0 of the bias curve in the first half of training
    with b_max - b_final >= frac |Q^pi| (final Q^pi of the same state-action). ``bias``, ``q_true``: (n_evals, S).

    Also the impulse *amplitude*: the peak of the first half minus the late level (the mean over the events after
    `late_frac` of training). A constant offset (a pessimism that is the same all along) cancels in it; only a
    surge that comes and goes makes it large."""
    bias, q_true, steps = np.asarray(bias, float), np.asarray(q_true, float), np.asarray(steps)
    if bias.ndim != 2 or bias.shape != q_true.shape or bias.shape[0] != steps.size:
        raise ValueError(f"impulse: bias and q_true must be (n_evals, S) with n_evals = len(steps), got {bias.shape}, {q_true.shape}")
    late = steps > late_frac * total_steps
    first = steps <= 0.5 * total_steps
    if not late.any() or not first.any():
        raise ValueError("impulse: need evaluation events in the first half and after late_frac of training")
    i = bias.argmax(axis=0)
    b_max = bias.max(axis=0)
    b_final = bias[-1]
    interior = (i > 0) & (i < bias.shape[0] - 1)
    early = steps[i] <= 0.5 * total_steps
    drop = b_max - b_final
    ok = interior & early & (b_max > 0) & (drop >= frac * np.abs(q_true[-1]))
    peak_first = bias[first].max(axis=0)
    late_level = bias[late].mean(axis=0)
    return {"b_max": b_max, "b_final": b_final, "t_max": steps[i], "drop": drop, "impulse": ok,
            "peak_first_half": peak_first, "late_level": late_level, "amplitude": peak_first - late_level}


SURGE_WINDOW = (1 / 3, 2 / 3)
"""The surge window of `surge_overestimate`, as fractions of training (second fix pass of the review of 5287791)."""

SURGE_DESIGN = {"planted_effect": 5.07, "planted_sd": 3.12, "aleatoric_sd": 3.44, "probe_seeds": 24,
                "planted_effect_low": 3.61, "planted_sd_low": 2.65}
"""The design numbers of C3w / P3w, measured *before* the chapter's book run by this revision's probes (DSAC-T at book
sizes, 2 x 12 seeds, seed batches 0 and 1, `surge_overestimate` at the jackpot probe, paired against the noise-free
jackpot): the planted control (`surge_planted_mean` 1.6 until `planted_switch`) gave +5.07 (per-seed sd 3.12; the
weaker batch +3.61, sd 2.65); the noisy-minus-noise-free pair had a per-seed sd of 3.44. The threshold-sized planted
jackpot of P3a (1.2) gave +1.37 (sd 3.62; +2.89 in one batch, -0.15 in the other: where the warm-up's few jackpot
samples put it below the bank, the policy never collects the planted data) and the impulse amplitude of C3a a per-seed
sd of 5.6 (planted) and 6.2 (noisy pair). `t_power` turns these into the chapter's expected power (T12)."""


def surge_overestimate(steps: np.ndarray, bias: np.ndarray, total_steps: int,
                       window: tuple[float, float] = SURGE_WINDOW) -> np.ndarray:
    """Per seed: the mean overestimation (b)^+ = max(b, 0) of a bias curve over the evaluation events in the surge
    window, ``window[0] * total_steps <= step <= window[1] * total_steps``. ``bias``: (n_evals, S), reward units.

    Why this statistic (the book run at 95ab0cf and this revision's probes): the impulse amplitude of `impulse` (the
    first half's peak minus the late level) at the jackpot probe had a per-seed sd of 4-8 reward units, in the
    noise-free jackpot as much as in the noisy one. Its late level is read at a state-action the settled policy no
    longer visits, where the critic drifts by up to ~15 units in some seeds (extrapolation with no fresh data), and its
    first-half peak mostly falls before the values have propagated (the critics start ~8 units below Q^pi and reach it
    at about a third of training). The window starts when values have propagated, ends before the late drift, and
    averages ~10 events instead of taking one maximum; the positive part reads the surge as an *overestimation*
    (a critic still below Q^pi contributes 0, not a large negative number)."""
    steps, bias = np.asarray(steps, float), np.asarray(bias, float)
    if bias.ndim != 2 or bias.shape[0] != steps.size:
        raise ValueError(f"surge_overestimate: bias must be (n_evals, S) with n_evals = len(steps), got {bias.shape}")
    lo, hi = window
    if not 0 <= lo < hi <= 1:
        raise ValueError(f"surge_overestimate: need 0 <= window[0] < window[1] <= 1, got {window}")
    inside = (steps >= lo * total_steps) & (steps <= hi * total_steps)
    if inside.sum() < 3:
        raise ValueError(f"surge_overestimate: need >= 3 evaluation events in the window {window}, got {int(inside.sum())}")
    return np.maximum(bias[inside], 0.0).mean(axis=0)


def t_power(effect: float, sd: float, n: int, alpha: float = 0.025) -> float:
    """Power of the book's verdict for a claim 'mean > 0' read from a two-sided 95 % Student-t interval over n seeds (its
    lower end above 0 is a one-sided test at `alpha`), at a true mean `effect` and per-seed sd `sd`: the noncentral-t
    probability P(T'(n - 1, effect sqrt(n) / sd) > t_{1 - alpha, n - 1})."""
    if not (n >= 2 and sd > 0 and 0 < alpha < 0.5 and np.isfinite(effect)):
        raise ValueError(f"t_power: need n >= 2, sd > 0, 0 < alpha < 0.5, a finite effect; got {n}, {sd}, {alpha}, {effect}")
    from scipy import stats
    df = n - 1
    return float(stats.nct.sf(stats.t.ppf(1 - alpha, df), df, effect * np.sqrt(n) / sd))


def clipped_sigma_fixed_point(jackpot: float, mean: float, gamma: float, sigma_bar: float, bound: float = 3.0,
                              iters: int = 2000, tol: float = 1e-12, step_noise: float = 0.0) -> float:
    """The return-sigma fixed point at an absorbing Bernoulli zone *with* the sample target's clip (DSAC-T refinement 3,
    `losses.clip_sample_target`): sigma^2 = E[clip(r - m + gamma sigma xi, -bound sigma_bar, bound sigma_bar)^2], r =
    J Bernoulli(m / J), xi ~ N(0, 1) (the next state's sampled return), all in reward units. Without the clip
    (sigma_bar -> inf) it is T4's sqrt(Var r / (1 - gamma^2)); a clip scale sigma_bar set by the batch (mostly
    noise-free states) cuts it down. Closed form of the clipped Gaussian second moment, iterated to the fixed point.
    ``step_noise``: the sd of the pervasive Gaussian reward noise (`envs.JackpotLine`), added to the Gaussian part;
    without the clip the fixed point is then sqrt((Var r + step_noise^2) / (1 - gamma^2)) (`analytic_sigma`)."""
    if not (jackpot > 0 and 0 <= mean <= jackpot and 0 <= gamma < 1 and sigma_bar > 0 and bound > 0 and step_noise >= 0):
        raise ValueError("clipped_sigma_fixed_point: need J > 0, 0 <= m <= J, 0 <= gamma < 1, sigma_bar > 0, bound > 0")
    from math import erf, exp, pi, sqrt

    Phi = lambda z: 0.5 * (1 + erf(z / sqrt(2)))
    phi = lambda z: exp(-0.5 * z * z) / sqrt(2 * pi)
    c, p = bound * sigma_bar, mean / jackpot

    def clipped_m2(a: float, s: float) -> float:   # E[clip(a + s Z, -c, c)^2]
        if s <= 0:
            return min(abs(a), c) ** 2
        lo, hi = (-c - a) / s, (c - a) / s
        inside = Phi(hi) - Phi(lo)
        m2 = a * a * inside + 2 * a * s * (phi(lo) - phi(hi)) + s * s * (inside + lo * phi(lo) - hi * phi(hi))
        return m2 + c * c * (1 - inside)

    sigma = analytic_sigma(jackpot, mean, gamma, step_noise)
    for _ in range(iters):
        g = sqrt(step_noise**2 + (gamma * sigma) ** 2)
        new = sqrt(p * clipped_m2(jackpot - mean, g) + (1 - p) * clipped_m2(-mean, g))
        if abs(new - sigma) < tol:
            return new
        sigma = new
    return sigma


def analytic_sigma(jackpot: float, mean: float, gamma: float, step_noise: float = 0.0) -> float:
    """Return sd at an absorbing zone paying J Bernoulli(m / J) + step_noise N(0, 1) per step: sqrt((m (J - m) +
    step_noise^2) / (1 - gamma^2)) (T4 with the pervasive noise)."""
    return float(np.sqrt((mean * (jackpot - mean) + step_noise**2) / (1 - gamma**2)))


def warmup_design(warmups: list[int], jackpots: list[float], mean: float = 0.7, step_noise: float = 0.0, bank: float = 1.0,
                  gamma: float = 0.9, reps: int = 2000, draws: int = 400, seed: int = 0) -> list[dict]:
    """The testbed's design calculation (review of 5287791, section 1): how often a uniform warm-up's empirical jackpot
    mean beats the bank, the overvaluation a lock-in needs, and the expected overestimate of the jackpot's value.

    A JackpotLine warm-up of W uniform random actions from x ~ U(+-0.05) (50-step episodes) is simulated `reps` times
    for the number n of transitions that land in the jackpot zone; for each n the empirical mean of n rewards
    J Bernoulli(m / J) + step_noise N(0, 1) is drawn `draws` times. Returned per (W, J): the median and 10/90 % of n,
    ``p_beats_bank`` = P(empirical mean > bank) averaged over n (zero visits: no overvaluation), ``over_plus`` =
    E[(V_hat - V)^+] = E[(mean_hat - m)^+] / (1 - gamma) in reward units, and ``gap`` = (bank - m) / (1 - gamma)."""
    if not (0 < mean < bank and 0 <= gamma < 1 and reps >= 10 and draws >= 10 and step_noise >= 0):
        raise ValueError("warmup_design: need 0 < mean < bank, 0 <= gamma < 1, reps, draws >= 10, step_noise >= 0")
    rng = np.random.default_rng(seed)
    rows = []
    for W in warmups:
        x, n = rng.uniform(-0.05, 0.05, reps), np.zeros(reps, int)
        for t in range(int(W)):
            if t % 50 == 0 and t > 0:
                x = rng.uniform(-0.05, 0.05, reps)
            x = np.clip(x + 0.2 * rng.uniform(-1, 1, reps), -1, 1)
            n += x >= 0.8
        counts, freq = np.unique(n, return_counts=True)
        for J in jackpots:
            if not mean <= J:
                raise ValueError(f"warmup_design: need J >= m, got {J}")
            beats, over = 0.0, 0.0
            for k, f in zip(counts, freq):
                if k == 0:
                    continue
                r = J * (rng.random((draws, k)) < mean / J) + step_noise * rng.standard_normal((draws, k))
                m_hat = r.mean(axis=1)
                beats += f * (m_hat > bank).mean()
                over += f * np.maximum(m_hat - mean, 0).mean() / (1 - gamma)
            rows.append({"warm-up W": int(W), "J": float(J), "median n": float(np.median(n)), "n p10": float(np.percentile(n, 10)),
                         "n p90": float(np.percentile(n, 90)), "p_beats_bank": beats / reps, "over_plus": over / reps,
                         "gap": (bank - mean) / (1 - gamma)})
    return rows


def late_mean(run: JackpotRun, key: str, variant: str, frac: float = 0.5) -> np.ndarray:
    """Per seed: the mean of a recorded series over the evaluation events after `frac` of training."""
    steps = np.array(run.log.steps)
    return run.series(key, variant)[steps > frac * run.steps].mean(axis=0)


# ----------------------------------------------------------------------------- continuous control

def make_noisy(env_id: str, sigma: float):
    def make(s: int) -> gym.Env:
        return NoisyReward(gym.make(env_id, disable_env_checker=True), sigma)
    return make


def run_control(agent_name: str, env_id: str, sigma: float, n_seeds: int, cfg: dict, seed: int = 0,
                show_progress: bool = True, device: torch.device | str | None = None, **overrides) -> tuple[TrainLog, BatchedAgent]:
    """Train an agent on `env_id` with reward noise sigma (NoisyReward), recording the soft-MC bias against the
    clean and the noisy rewards and the clean return of the mode policy at every evaluation event."""
    probe = gym.make(env_id, disable_env_checker=True)
    od, ad = probe.observation_space.shape[0], probe.action_space.shape[0]
    ac = agent_config(agent_name, hidden=tuple(cfg["hidden"]), batch_size=cfg["batch"], gamma=cfg["gamma"], lr=cfg["lr"],
                      tau=cfg["tau"], alpha0=cfg["alpha0"], **overrides)
    if ac.reward_scale != cfg["reward_scale"]:
        ac = ac.scaled(ac.reward_scale / cfg["reward_scale"])
    ac = with_run_beta_lr(ac, cfg)
    agent = BatchedAgent(ac, od, ad, n_seeds, seed=seed * 7919 + 29, device=device)
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


def dsact_fidelity_gap(seed: int = 3, batches: int = 2, batch_size: int = 32) -> float:
    """F2: max |ours - official| / (1 + |official|) of DSAC-T's critic loss and its gradients, the library's batched
    `BatchedAgent.losses` (DSAC-T, released reward scale) against `reference.official_dsact_loss` (an independent
    transcription of `dsact.py`'s non-Huber loss) on the same weights, batch and noise, the EMAs live over `batches`
    batches with an Adam step between them (one seed, two critics)."""
    from .reference import official_dsact_loss

    ac = agent_config("DSAC-T", hidden=(16, 16), batch_size=batch_size)
    ag = BatchedAgent(ac, 3, 2, 1, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    mean_stds: list = [None, None]
    gap = 0.0
    rel = lambda a, b: float((a - b).abs().max()) / (1.0 + float(b.abs().max()))
    for _ in range(batches):
        B = batch_size
        batch = {"obs": torch.randn(1, B, 3, generator=g), "act": torch.rand(1, B, 2, generator=g) * 2 - 1,
                 "rew": torch.randn(1, B, generator=g) * 5, "next_obs": torch.randn(1, B, 3, generator=g),
                 "done": (torch.rand(1, B, generator=g) < 0.1).float()}
        noise = {"next": torch.randn(1, B, 2, generator=g), "z": torch.randn(1, B, generator=g), "pi": torch.randn(1, B, 2, generator=g)}
        out = ag.losses(batch, noise)
        params = list(ag.critic.parameters())
        ours = torch.autograd.grad(out["critic"], params, retain_graph=True)
        with torch.no_grad():
            net = ag.actor_target if ac.next_action == "target" else ag.actor
            a2, lp2 = ag.sample(net, batch["next_obs"], noise["next"])
            qn, sn = ag.critic_values(batch["next_obs"], a2, target=True)
        q, s = ag.critic_values(batch["obs"], batch["act"])
        z = noise["z"][0]
        ref = official_dsact_loss(q[0, 0], s[0, 0], q[0, 1], s[0, 1], qn[0, 0], sn[0, 0], qn[0, 1], sn[0, 1], z, z,
                                  batch["rew"][0] * ac.reward_scale, batch["done"][0], lp2[0], alpha=float(ag.alpha[0]),
                                  gamma=ac.gamma, tau_b=ac.ema_rate, mean_stds=mean_stds)
        refg = torch.autograd.grad(ref, params)
        gap = max(gap, rel(out["critic"].detach(), ref.detach()), *[rel(x, y) for x, y in zip(ours, refg)])
        ag.critic_opt.zero_grad(); out["critic"].backward(); ag.critic_opt.step()
    return gap
