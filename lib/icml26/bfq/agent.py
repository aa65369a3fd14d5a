"""The behaviour-regularised actor-critic scaffold shared by every method (DQL/OFQL, brief Sec. 2.5-2.6).

Networks: MLPs with SiLU (DQL/OFQL use Mish, 9x slower on CPU torch: `icml26.bfq.nets`).

Critic: twin ``Q_1, Q_2`` with EMA (Polyak, tau = 0.005) targets; TD target
``y = r + gamma (1 - d) min_j Qbar_j(s', a')`` with ``a'`` from the method's own one-step (or N-step)
policy, clipped to the action box (a max-Q backup over ``n`` sampled actions is a switch).
Actor: ``L = L_BC - alpha Q_1(s, clip(a^pi))`` with ``alpha = eta / E_D |Q_1(s, a)|`` over *dataset*
actions, detached (pitfall 3; TD3+BC keeps its own normalisation over policy actions, alpha = 2.5).

Methods: ``bc`` (deterministic MSE, no critic), ``td3bc``, ``dql`` (DDPM-5, BPTT), ``fql`` (flow BC with
10 Euler steps + one-step distilled actor), ``fm`` (CFM with K Euler steps, BPTT, "FM-K"), ``ofql``
(OFQL-lite: MeanFlow with a JVP, `icml26.bfq.meanflow`), ``bfq``.
Every method is an ensemble over members: member e is one run, with its own weights and batches, and
its own Q weight (``eta``, ``td3_alpha``, ``fql_alpha`` may be one value per member: a tuning grid
trained as one ensemble).

The baselines follow their official code where the brief's scaffold differs:

* FQL (``seohongpark/fql`` ``agents/fql.py``, defaults): critic LayerNorm, target and actor Q the *mean*
  of the twins (``q_agg='mean'``), flow BC and distillation averaged over action dimensions,
  distillation target clipped to the box; ``alpha`` is the tuned knob ("need to be tuned for each
  environment"), ``eta`` is unused. The Q loss is normalised, ``-Q / sg(E|Q|)`` over the policy's
  actions (``normalize_q_loss=True``, ``fql_normalize_q``): the code's default is ``False``, but its
  README's tuning tips say, for new environments, "we highly recommend turning on this flag" and
  tuning ``alpha`` from ``[0.03, 0.1, 0.3, 1, 3, 10]``; these tasks are new to FQL, so the chapter
  follows that advice (``fql_normalize_q=False`` is the paper's D4RL setting).
* Diffusion-QL (``agents/ql_diffusion.py``): an EMA actor (decay 0.995, every 5 steps from step
  ``dql_ema_start``) draws the TD target's next actions; gradient-norm clipping of actor and critic
  (``gn`` = 9 for halfcheetah/hopper-medium in its ``main.py``); Q loss ``-Q_i(s, a_pi) / |Q_j(s, a_pi)|``
  with a random critic ``i`` and the other ``j`` at the *policy's* actions; evaluation draws 50
  actions and picks one by softmax over ``min_j Qbar_j`` (``sample_action``). Its EMA schedule
  (``step_start_ema = 1000``, decay 0.995 every 5 steps: a 1000-step horizon) is written for 10^6
  steps; `scaled_dql_ema` keeps the start at the same share of a shorter run and updates every step
  (a 200-step horizon, the target critic's 1/tau), else at a few thousand steps the EMA actor that draws
  the TD target's next actions would still be mostly the untrained one.
* BFQ and OFQL-lite keep the brief's form (``alpha = eta / E_D |Q_1(s, a)|`` over dataset actions,
  min-of-twin targets, one stochastic action at evaluation).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import torch

from .baselines import DeterministicActor, DiffusionPolicy, FlowMatchingPolicy, NoiseActor, TwinCritic
from .data import OfflineDataset
from .flowmap import FlowMapPolicy
from .meanflow import MeanFlowPolicy
from .nets import clip_grad_norm_members, member_generators

METHODS = ("bc", "td3bc", "dql", "fql", "fm", "ofql", "bfq")
GRID_KNOB = {"td3bc": "td3_alpha", "fql": "fql_alpha", "dql": "eta", "fm": "eta", "ofql": "eta", "bfq": "eta"}
"""The hyper-parameter each method tunes per task (its Q weight or BC weight); BC has none."""


def scaled_dql_ema(steps: int, official_steps: int = 1_000_000, official_start: int = 1000) -> dict:
    """Diffusion-QL's EMA schedule for a run of ``steps`` gradient steps (module docstring): the start at
    the official share (``step_start_ema = 1000`` of 10^6 steps) and an update every step (decay 0.995:
    a 200-step horizon, the target critic's 1 / tau, instead of the official 1000 steps)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    return dict(dql_ema_start=int(round(steps * official_start / official_steps)), dql_ema_every=1)


def per_member(value, members: int, name: str) -> torch.Tensor:
    """A hyper-parameter as one value per member (a float is broadcast), each finite and >= 0."""
    values = [value] * members if isinstance(value, (int, float)) else list(value)
    if len(values) != members:
        raise ValueError(f"{name}: need one value per member ({members}), got {len(values)}")
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in values):
        raise ValueError(f"{name} must be finite numbers >= 0, got {value}")
    return torch.tensor([float(v) for v in values], dtype=torch.float32)


@dataclass
class AgentConfig:
    """Hyper-parameters (paper via the brief; DQL defaults where the paper is silent)."""

    hidden: tuple[int, ...] = (256, 256, 256)
    pe_dim: int = 64
    lr: float = 3e-4
    gamma: float = 0.99
    tau: float = 0.005
    batch: int = 256
    eta: float | tuple = 1.0        # Q weight (BFQ, OFQL, DQL, FM), normalised by |Q| (one value, or one per member)
    lam: float | tuple = 0.5        # BFQ's Bernoulli(lambda) switch (one value, or one per member)
    delta_max: float = 1e-3
    mixing: str = "update"
    parameterisation: str = "mean"
    td3_alpha: float | tuple = 2.5
    td3_policy_noise: float = 0.2
    td3_noise_clip: float = 0.5
    td3_policy_freq: int = 2
    fql_alpha: float | tuple = 10.0  # FQL's distillation weight (official default 10, tuned per task)
    fql_steps: int = 10
    fql_normalize_q: bool = True    # FQL README for new environments: normalize_q_loss=True (code default False)
    critic_layer_norm: bool | None = None  # None: the method's own recipe (FQL: LayerNorm; the others: none)
    dql_grad_norm: float = 9.0      # Diffusion-QL's gradient-norm clip (its main.py: gn = 9 on *-medium)
    dql_ema_decay: float = 0.995
    dql_ema_every: int = 5
    dql_ema_start: int = 1000       # Diffusion-QL's step_start_ema (before it, the EMA actor is the initial one)
    dql_eval_samples: int = 50      # Diffusion-QL's sample_action: 50 candidates, softmax over Q
    ofql_ratio: float = 0.25        # MeanFlow's share of r != t
    fm_steps: int = 10
    dql_steps: int = 5
    max_q_backup: int = 0           # 0: min-of-twin at one sampled action; n > 0: max over n samples
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        lams = [self.lam] if isinstance(self.lam, (int, float)) else list(self.lam)
        if not all(0 <= v <= 1 for v in lams):
            raise ValueError(f"lambda must be in [0, 1], got {self.lam}")
        if not 0 < self.delta_max < 1:
            raise ValueError(f"Delta_max must be in (0, 1), got {self.delta_max}")
        for name in ("eta", "td3_alpha", "fql_alpha"):
            value = getattr(self, name)
            values = [value] if isinstance(value, (int, float)) else list(value)
            if not values or not all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in values):
                raise ValueError(f"{name} must be finite numbers >= 0, got {value}")
        if not 0 <= self.ofql_ratio <= 1:
            raise ValueError(f"ofql_ratio must be in [0, 1], got {self.ofql_ratio}")
        if self.dql_grad_norm <= 0 or self.dql_eval_samples < 1 or self.dql_ema_every < 1:
            raise ValueError("dql_grad_norm must be > 0, dql_eval_samples and dql_ema_every >= 1")
        if min(self.fm_steps, self.fql_steps, self.dql_steps) < 1:
            raise ValueError("the number of generation steps K must be >= 1")


class BehaviorRegularizedAgent:
    """One method, ``E = len(seeds)`` independent runs, trained on one offline dataset."""

    def __init__(self, method: str, seeds, dataset: OfflineDataset, config: AgentConfig | None = None):
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
        self.method, self.seeds, self.data = method, list(seeds), dataset
        self.cfg = cfg = config or AgentConfig()
        self.E = len(self.seeds)
        ds, da = dataset.state_dim, dataset.action_dim
        self.gen = member_generators(self.seeds, salt=METHODS.index(method) + 1)
        h, pe = cfg.hidden, cfg.pe_dim
        if method in ("bc", "td3bc"):
            self.actor = DeterministicActor(self.seeds, da, ds, h)
        elif method == "dql":
            self.actor = DiffusionPolicy(self.seeds, da, ds, h, pe, n_steps=cfg.dql_steps)
        elif method == "fql":
            self.flow = FlowMatchingPolicy(self.seeds, da, ds, h, pe)
            self.actor = NoiseActor([s + 500 for s in self.seeds], da, ds, h)
        elif method == "fm":
            self.actor = FlowMatchingPolicy(self.seeds, da, ds, h, pe)
        elif method == "ofql":
            self.actor = MeanFlowPolicy(self.seeds, da, ds, h, pe)
        else:
            self.actor = FlowMapPolicy(self.seeds, da, ds, h, pe, parameterisation=cfg.parameterisation)
        actor_params = list(self.actor.parameters()) + (list(self.flow.parameters()) if method == "fql" else [])
        self.actor_opt = torch.optim.Adam(actor_params, lr=cfg.lr)
        self.eta = per_member(cfg.eta, self.E, "eta")
        self.td3_alpha = per_member(cfg.td3_alpha, self.E, "td3_alpha")
        self.fql_alpha = per_member(cfg.fql_alpha, self.E, "fql_alpha")
        self.critic = None
        if method != "bc":
            ln = (method == "fql") if cfg.critic_layer_norm is None else bool(cfg.critic_layer_norm)
            self.critic = TwinCritic(self.seeds, da, ds, h, layer_norm=ln)
            self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
            self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.lr)
        if method in ("td3bc", "dql"):  # TD3's target actor; Diffusion-QL's EMA actor
            self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.steps = 0

    # ------------------------------------------------------------------ acting
    def policy_action(self, s: torch.Tensor, gen: torch.Generator, grad: bool = False) -> torch.Tensor:
        """The method's action at states ``s`` (E, B, ds), unclipped (one pass for bfq/fql/td3bc)."""
        E, B = s.shape[:2]
        da = self.data.action_dim
        ctx = torch.enable_grad() if grad else torch.no_grad()
        with ctx:
            if self.method in ("bc", "td3bc"):
                return self.actor(s)
            if self.method == "dql":
                return self.actor.sample(s, gen)
            eps = torch.randn(E, B, da, generator=gen)
            if self.method == "fql":
                return self.actor(s, eps)
            if self.method == "fm":
                return self.actor.sample(s, eps, self.cfg.fm_steps)
            return self.actor.sample(s, eps)

    def _check_states(self, s: torch.Tensor) -> None:
        if s.dim() != 3 or s.shape[0] != self.E or s.shape[-1] != self.data.state_dim:
            raise ValueError(f"states must be (E={self.E}, B, {self.data.state_dim}), got {tuple(s.shape)}")

    def act(self, s: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """Evaluation actions, clipped to the box [-1, 1] (fresh noise per call: a stochastic policy;
        Diffusion-QL: its official softmax selection among ``dql_eval_samples`` candidates)."""
        self._check_states(s)
        if self.method == "dql":
            return self.q_select(s, gen, self.cfg.dql_eval_samples, greedy=False)
        return torch.clamp(self.policy_action(s, gen), -1.0, 1.0)

    @torch.no_grad()
    def q_select(self, s: torch.Tensor, gen: torch.Generator, n: int, greedy: bool = True) -> torch.Tensor:
        """``n`` clipped candidate actions per state from the method's policy, one kept by ``min_j Qbar_j``:
        the largest (``greedy``) or one drawn by softmax over it (Diffusion-QL's ``sample_action``).
        A deterministic actor gives ``n`` equal candidates (its own action); BC has no critic and acts."""
        self._check_states(s)
        if n < 1:
            raise ValueError(f"the number of candidates must be >= 1, got {n}")
        if self.critic is None:
            return torch.clamp(self.policy_action(s, gen), -1.0, 1.0)
        E, B, _ = s.shape
        s_rep = s.repeat_interleave(n, dim=1)
        cand = torch.clamp(self.policy_action(s_rep, gen), -1.0, 1.0)
        q = self.critic_target(s_rep, cand).min(0).values.view(E * B, n)
        if greedy:
            idx = q.argmax(-1).view(E, B)
        else:
            idx = torch.multinomial(torch.softmax(q, dim=-1), 1, generator=gen).view(E, B)
        return cand.view(E, B, n, -1)[torch.arange(E)[:, None], torch.arange(B)[None], idx]

    # ------------------------------------------------------------------ one gradient step
    def _polyak(self, net, target):
        self._polyak_rate(net, target, self.cfg.tau)

    @staticmethod
    def _polyak_rate(net, target, rate: float):
        with torch.no_grad():
            for p, q in zip(net.parameters(), target.parameters()):
                q.lerp_(p, rate)

    def _next_action(self, s2):
        if self.method == "td3bc":
            c = self.cfg
            with torch.no_grad():
                noise = (torch.randn(*s2.shape[:2], self.data.action_dim, generator=self.gen) * c.td3_policy_noise
                         ).clamp(-c.td3_noise_clip, c.td3_noise_clip)
                return (self.actor_target(s2) + noise).clamp(-1.0, 1.0)
        if self.method == "dql":  # the EMA actor draws the next actions (official next_action = ema_model(s'))
            with torch.no_grad():
                return torch.clamp(self.actor_target.sample(s2, self.gen), -1.0, 1.0)
        return torch.clamp(self.policy_action(s2, self.gen), -1.0, 1.0)

    def critic_loss(self, s, a, r, s2, d) -> torch.Tensor:
        c = self.cfg
        with torch.no_grad():
            if c.max_q_backup > 0:
                n = c.max_q_backup
                s2r = s2.repeat_interleave(n, dim=1)
                q2 = self.critic_target(s2r, self._next_action(s2r)).min(0).values
                q_next = q2.view(self.E, -1, n).max(-1).values
            else:
                q2 = self.critic_target(s2, self._next_action(s2))
                q_next = q2.mean(0) if self.method == "fql" else q2.min(0).values  # FQL: q_agg = 'mean'
            y = r + c.gamma * (1.0 - d) * q_next
        q = self.critic(s, a)
        return ((q - y.unsqueeze(0)) ** 2).mean(-1).sum(0)  # per member: sum over the twins

    def actor_loss(self, s, a) -> torch.Tensor:
        """The method's actor loss per member, shape ``(E,)`` (module docstring)."""
        c, m = self.cfg, self.method
        if m == "bc":
            return ((self.actor(s) - a) ** 2).mean((-1, -2))
        if m == "td3bc":
            pi = self.actor(s)
            q = self.critic(s, pi)[0]
            lam = self.td3_alpha / q.abs().mean(-1).detach()
            return -lam * q.mean(-1) + ((pi - a) ** 2).mean((-1, -2))
        if m == "fql":  # official agents/fql.py: means over batch and action dims, un-normalised Q loss
            da = a.shape[-1]
            bc = self.flow.loss(a, s, self.gen) / da
            z = torch.randn(a.shape, generator=self.gen)
            with torch.no_grad():
                target = torch.clamp(self.flow.sample(s, z, c.fql_steps), -1.0, 1.0)
            a_pi = self.actor(s, z)
            distill = ((a_pi - target) ** 2).mean((-1, -2))
            q = self.critic(s, torch.clamp(a_pi, -1.0, 1.0)).mean(0)
            q_loss = -q.mean(-1)
            if c.fql_normalize_q:  # official: lam = sg(1 / |q|.mean()) over the policy's actions
                q_loss = q_loss / q.abs().mean(-1).detach()
            return bc + self.fql_alpha * distill + q_loss
        if m == "dql":
            bc = self.actor.loss(a, s, self.gen)
            a_pi = self.actor.sample(s, self.gen)
            q1, q2 = self.critic(s, a_pi)  # official: the chain's x0 is clipped inside p_sample
            pick = torch.rand(self.E, generator=self.gen) < 0.5
            num = torch.where(pick[:, None], q1, q2).mean(-1)
            den = torch.where(pick[:, None], q2, q1).abs().mean(-1).detach()
            return bc - self.eta * num / den
        if m == "fm":
            bc = self.actor.loss(a, s, self.gen)
            a_pi = self.actor.sample(s, torch.randn(a.shape, generator=self.gen), c.fm_steps)
        elif m == "ofql":
            bc = self.actor.meanflow_loss(a, s, self.gen, ratio=c.ofql_ratio)
            a_pi = self.actor.sample(s, torch.randn(a.shape, generator=self.gen))
        else:
            bc = self.actor.bc_loss(a, s, self.gen, lam=c.lam, delta_max=c.delta_max, mixing=c.mixing)
            a_pi = self.actor.sample(s, torch.randn(a.shape, generator=self.gen))
        if bool((self.eta == 0).all()):
            return bc
        with torch.no_grad():
            alpha = self.eta / self.critic(s, a)[0].abs().mean(-1)  # over dataset actions, detached
        q = self.critic(s, torch.clamp(a_pi, -1.0, 1.0))[0]
        return bc - alpha * q.mean(-1)

    def update(self) -> dict[str, float]:
        """One gradient step of critic and actor on a fresh batch per member."""
        s, a, r, s2, d = self.data.sample(self.E, self.cfg.batch, self.gen)
        out = {}
        if self.critic is not None:
            lq = self.critic_loss(s, a, r, s2, d)
            self.critic_opt.zero_grad(set_to_none=True)
            lq.sum().backward()
            if self.method == "dql":
                clip_grad_norm_members(self.critic.parameters(), self.E, self.cfg.dql_grad_norm)
            self.critic_opt.step()
            out["critic"] = float(lq.detach().mean())
        if self.method != "td3bc" or self.steps % self.cfg.td3_policy_freq == 0:
            if self.critic is not None:
                self.critic.requires_grad_(False)
            la = self.actor_loss(s, a)
            self.actor_opt.zero_grad(set_to_none=True)
            la.sum().backward()
            if self.method == "dql":
                clip_grad_norm_members(self.actor.parameters(), self.E, self.cfg.dql_grad_norm)
            self.actor_opt.step()
            if self.critic is not None:
                self.critic.requires_grad_(True)
            out["actor"] = float(la.detach().mean())
            if self.method == "td3bc":
                self._polyak(self.actor, self.actor_target)
                self._polyak(self.critic, self.critic_target)
        if self.method == "dql" and self.steps % self.cfg.dql_ema_every == 0 and self.steps >= self.cfg.dql_ema_start:
            self._polyak_rate(self.actor, self.actor_target, 1.0 - self.cfg.dql_ema_decay)
        if self.critic is not None and self.method != "td3bc":
            self._polyak(self.critic, self.critic_target)
        self.steps += 1
        return out
