"""Agents as `torch.nn.Module`s with one API: `act(obs, deterministic)`, `update(batch) -> diagnostics`.

Every agent trains S independent seeds at once: the S x N critics, S actors (and S behaviour actors)
are stacked `BatchedMLP`s, so an ensemble of N = 4 over 4 seeds is one batched matrix product per layer.
`AgentConfig` spans SAC, DSAC-T, DSAC-AID and its ablations (`AGENTS`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from . import losses as L
from .nets import LOG_STD_BOUNDS, BatchedMLP, polyak_


@dataclass(frozen=True)
class AgentConfig:
    """Hyper-parameters of one agent. The defaults are the released Gym-MuJoCo configuration of the official code
    (`example_train/dsacaid/gym-mujoco/dsacaid_mlp_gym_humanoid_vecoffserial.py`, commit 1ea49cae; `RELEASED`
    lists it beside the Ant and the generic / DMC ones).

    critic: ``plain`` (Q head, SAC) or ``gaussian`` (Q and sigma = softplus + 1e-5 heads).
    loss: ``mse`` (SAC, 0.5 sum_i MSE), ``dsact`` (DSAC-T surrogate) or ``aid`` (DSAC-AID: `losses.aid_release_loss`,
    or `losses.aid_loss` when ``huber``).
    target: ``min`` (twin min; DSAC-T samples z' from the smaller critic) or ``lcb`` (AID's Q^LCB).
    actor_value: ``min`` (min_i Q_i) or ``lcb`` (Qbar - lambda_L std_i Q_i).
    lam_u > 0 adds the optimistic behaviour policy pi_b (symmetric UCB) that collects the data.
    """

    name: str = "DSAC-AID"
    n_critics: int = 4
    critic: str = "gaussian"
    loss: str = "aid"
    target: str = "lcb"
    actor_value: str = "lcb"
    lam_l: float = 1.0
    lam_u: float = 1.0
    beta0: float = 0.2
    adaptive_beta: bool = True
    beta_lr: float = 5e-4
    q_bias_threshold: float = -1000.0       # the code's q_bias_lower_threshold (in reward_scale units)
    freeze_early_beta: bool = True
    uncertainty_floor: float = 0.1          # max(Ubar, 0.1) in the beta loss
    next_action: str = "target"             # DSAC samples a' from the Polyak-averaged policy; SB3's SAC from the online one
    norm: bool = False                      # True: GroupNorm(16, no affine) MLPs of the generic / DMC script
    activation: str = "gelu"                # the Gym-MuJoCo scripts' value/policy_hidden_activation
    init: str = "torch"                     # nn.Linear's default init (ActionValueDistri); "orthogonal" for Regularized*
    huber: bool = False                     # use_huber_loss
    homogeneous_sigma: bool = True          # use_homogeneous_sigma_step_ratio
    epi_step_scale: bool = True             # enable_epi_step_scale
    hidden: tuple[int, ...] = (256, 256, 256)
    gamma: float = 0.99
    tau: float = 0.005
    tau_b: float | None = None              # EMA rate of sigma_bar, Ubar_epi, Ubar; None: tau (the code's
                                            # kwargs.get("tau_b", self.tau); no released script sets it)
    lr: float = 1e-4
    delay: int = 2
    batch_size: int = 256
    huber_delta: float = 50.0
    eps: float = 0.1
    reward_scale: float = 0.1
    log_std_bounds: tuple[float, float] = LOG_STD_BOUNDS["dsac"]
    alpha0: float = math.e
    target_entropy: float | None = None     # default -|A|

    def validate(self) -> "AgentConfig":
        if self.critic not in ("plain", "gaussian"):
            raise ValueError(f"critic must be 'plain' or 'gaussian', got {self.critic!r}")
        if self.loss not in ("mse", "dsact", "aid"):
            raise ValueError(f"loss must be 'mse', 'dsact' or 'aid', got {self.loss!r}")
        if self.target not in ("min", "lcb") or self.actor_value not in ("min", "lcb"):
            raise ValueError(f"target / actor_value must be 'min' or 'lcb', got {self.target!r} / {self.actor_value!r}")
        if self.activation not in ("relu", "gelu") or self.init not in ("torch", "orthogonal"):
            raise ValueError(f"activation / init must be relu|gelu / torch|orthogonal, got {self.activation!r} / {self.init!r}")
        if self.next_action not in ("target", "online"):
            raise ValueError(f"next_action must be 'target' or 'online', got {self.next_action!r}")
        if self.n_critics < 1 or (self.n_critics < 2 and (self.target == "lcb" or self.actor_value == "lcb" or self.lam_u > 0 or self.target == "min")):
            raise ValueError(f"n_critics: an ensemble agent needs N >= 2 (ddof-1 variance undefined for N = 1), got {self.n_critics}")
        if self.critic == "plain" and (self.loss != "mse" or self.target == "lcb" or self.lam_u > 0):
            raise ValueError("a plain (non-distributional) critic goes with loss='mse', target='min' and lam_u = 0")
        if self.loss != "mse" and self.critic != "gaussian":
            raise ValueError(f"loss {self.loss!r} needs a gaussian critic")
        for name in ("lam_l", "lam_u", "beta0"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {v}")
        if not 0 <= self.gamma < 1:
            raise ValueError(f"gamma must lie in [0, 1), got {self.gamma}")
        for name, v in (("tau", self.tau), ("tau_b", self.ema_rate)):
            if not 0 < v <= 1:
                raise ValueError(f"{name} must lie in (0, 1], got {v}")
        for name in ("lr", "beta_lr", "huber_delta", "reward_scale", "alpha0", "uncertainty_floor"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be finite and > 0, got {v}")
        if self.eps < 0:
            raise ValueError(f"eps must be >= 0, got {self.eps}")
        if self.delay < 1 or self.batch_size < 1 or not self.hidden:
            raise ValueError("delay and batch_size must be >= 1 and hidden non-empty")
        return self

    @property
    def ema_rate(self) -> float:
        """The EMA rate tau_b of sigma_bar, Ubar_epi and the beta normaliser: tau unless set (official code)."""
        return self.tau if self.tau_b is None else self.tau_b

    def scaled(self, factor: float) -> "AgentConfig":
        """The reward-scale-bound constants for a task whose rewards are `factor` times smaller than the
        code's reward_scale-50 MuJoCo regime: reward_scale / factor, Huber delta / factor, q threshold / factor,
        alpha0 / factor, eps / factor^2 (eps is added to sigma^2), the uncertainty floor / factor."""
        if not factor > 0:
            raise ValueError(f"factor must be > 0, got {factor}")
        return replace(self, reward_scale=self.reward_scale / factor, huber_delta=self.huber_delta / factor,
                       q_bias_threshold=self.q_bias_threshold / factor, alpha0=self.alpha0 / factor,
                       eps=self.eps / factor**2, uncertainty_floor=self.uncertainty_floor / factor)


RELEASED: dict[str, dict] = {
    "gym-humanoid (1ea49cae)": dict(huber=False, homogeneous_sigma=True, lam_l=1.0, lam_u=1.0, beta0=0.2, beta_lr=5e-4,
                                    reward_scale=0.1, norm=False, activation="gelu", init="torch", lr=1e-4),
    "gym-ant (1ea49cae)": dict(huber=False, homogeneous_sigma=False, lam_l=0.5, lam_u=0.5, beta0=0.03, beta_lr=1.5e-4,
                               reward_scale=0.1, norm=False, activation="gelu", init="torch", lr=1e-4),
    "generic / DMC (640e85a4)": dict(huber=True, homogeneous_sigma=True, lam_l=0.71, lam_u=0.71, beta0=0.1, beta_lr=5e-3,
                                     reward_scale=50.0, norm=True, activation="relu", init="orthogonal", lr=3e-4),
}
"""The official per-task hyper-parameters that differ (`example_train/dsacaid/...`); the chapter runs the first.
Shared by all: N = 4, eps 0.1, delay 2, tau 0.005, gamma 0.99, 3 x 256 networks, batch 256, q threshold -1000,
freeze_early_beta, enable_epi_step_scale, eval every 2 500 iterations on 10 episodes."""

_SAC = dict(n_critics=2, critic="plain", loss="mse", target="min", actor_value="min", lam_l=0.0, lam_u=0.0, beta0=0.0,
            adaptive_beta=False, next_action="online", norm=False, activation="relu", delay=1,
            log_std_bounds=LOG_STD_BOUNDS["sb3"])
_DSACT = dict(n_critics=2, critic="gaussian", loss="dsact", target="min", actor_value="min", lam_l=0.0, lam_u=0.0,
              beta0=0.0, adaptive_beta=False)
AGENTS: dict[str, dict] = {
    "SAC": _SAC,
    "DSAC-T": _DSACT,
    "DSAC-AID": dict(),
    "AID w/o pi_b": dict(lam_u=0.0),
    "AID beta fixed": dict(adaptive_beta=False),
    "AID beta=0": dict(beta0=0.0, adaptive_beta=False),
}
"""Named agents: overrides of `AgentConfig` (the default is DSAC-AID with the released Gym-MuJoCo hyper-parameters).
(The epistemic-only Ens-LCB, Mean-Ens and the generic / DMC Huber agent ran at no scale and were removed, review of
5287791; the Huber loss stays checked by F1 through `RELEASED`.) ``AID beta fixed``
keeps beta at beta0; ``AID beta=0`` is DSAC-AID without the aleatoric term (beta = 0, the optimistic pi_b kept): the
comparator that isolates the aleatoric penalty."""

PAPER_BETA_EVENTS = 1_500_000 // 2_500
"""Evaluation events, hence beta steps, in one released run (max_iteration 1.5e6, eval_interval 2 500): 600."""


def events_scaled_beta_lr(beta_lr: float, n_events: int) -> float:
    """beta's Adam rate for a run with `n_events` beta events, scaled so that beta can travel as far over the run as
    in the released one: beta_lr * PAPER_BETA_EVENTS / n_events (one Adam step moves beta by about its rate when the
    bias keeps its sign). The toy's runs have 10-20 events; unscaled, beta could move by 0.01 at most."""
    if n_events < 1 or not beta_lr > 0:
        raise ValueError(f"need n_events >= 1 and beta_lr > 0, got {n_events}, {beta_lr}")
    return beta_lr * PAPER_BETA_EVENTS / n_events


def agent_config(name: str, **overrides) -> AgentConfig:
    """`AgentConfig` of a named agent (`AGENTS`) with size / scale overrides."""
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; valid: {', '.join(AGENTS)}")
    return replace(AgentConfig(name=name), **{**AGENTS[name], **overrides})


class _ElementwiseAdam:
    """Adam on a vector parameter whose coordinates (seeds) step only where a mask is set (beta's update)."""

    def __init__(self, n: int, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps
        self.m, self.v, self.t = np.zeros(n), np.zeros(n), np.zeros(n)

    def step(self, x: np.ndarray, grad: np.ndarray, mask: np.ndarray) -> np.ndarray:
        g = np.where(mask, grad, 0.0)
        self.t = self.t + mask
        self.m = np.where(mask, self.b1 * self.m + (1 - self.b1) * g, self.m)
        self.v = np.where(mask, self.b2 * self.v + (1 - self.b2) * g * g, self.v)
        t = np.maximum(self.t, 1)
        mh, vh = self.m / (1 - self.b1**t), self.v / (1 - self.b2**t)
        return np.where(mask, x - self.lr * mh / (np.sqrt(vh) + self.eps), x)


class BatchedAgent(nn.Module):
    """S seeds of one agent. Observations (S, B, obs_dim), actions in [-1, 1]^act_dim, shape (S, B, act_dim)."""

    def __init__(self, config: AgentConfig, obs_dim: int, act_dim: int, n_seeds: int, seed: int = 0,
                 device: torch.device | str | None = None, row_seeds: list[int] | None = None):
        super().__init__()
        self.cfg = c = config.validate()
        if obs_dim < 1 or act_dim < 1 or n_seeds < 1:
            raise ValueError(f"obs_dim, act_dim and n_seeds must be >= 1, got {obs_dim}, {act_dim}, {n_seeds}")
        self.obs_dim, self.act_dim, self.S, self.N = obs_dim, act_dim, n_seeds, c.n_critics
        # every random draw comes from this CPU generator and is moved to the device: the same seed gives the
        # same draws on a CPU and on a GPU
        self.gen = torch.Generator().manual_seed(int(seed))
        out = 2 if c.critic == "gaussian" else 1
        net = dict(norm=c.norm, activation=c.activation, init=c.init, generator=self.gen)
        self.critic = BatchedMLP(self.S * self.N, obs_dim + act_dim, c.hidden, out, **net)
        self.critic_target = BatchedMLP(self.S * self.N, obs_dim + act_dim, c.hidden, out, **net)
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.actor = BatchedMLP(self.S, obs_dim, c.hidden, 2 * act_dim, **net)
        self.actor_target = BatchedMLP(self.S, obs_dim, c.hidden, 2 * act_dim, **net)
        self.actor_target.load_state_dict(self.actor.state_dict())
        self.behaviour = BatchedMLP(self.S, obs_dim, c.hidden, 2 * act_dim, **net) if c.lam_u > 0 else None
        if row_seeds is not None:
            # each seed row's initial weights from its own generator keyed by its row seed, independent of S and of the
            # other rows (review of 5287791, D3): rows with the same row seed (e.g. the noisy and the noise-free
            # jackpot of one seed) start identical
            if len(row_seeds) != self.S:
                raise ValueError(f"row_seeds: need {self.S} seeds, got {len(row_seeds)}")
            self._init_rows([int(r) for r in row_seeds], obs_dim, act_dim, out, net)
            self.critic_target.load_state_dict(self.critic.state_dict())
            self.actor_target.load_state_dict(self.actor.state_dict())
        for p in (*self.critic_target.parameters(), *self.actor_target.parameters()):
            p.requires_grad_(False)
        self.log_alpha = nn.Parameter(torch.full((self.S,), math.log(c.alpha0)))
        self.target_entropy = float(-act_dim if c.target_entropy is None else c.target_entropy)
        self.register_buffer("sigma_bar", torch.zeros(self.S, self.N, 1))
        self.register_buffer("u_epi_bar", torch.zeros(self.S, 1, 1))
        self.device = torch.device("cpu") if device is None else torch.device(device)
        self.to(self.device)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=c.lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=c.lr)
        self.behaviour_opt = torch.optim.Adam(self.behaviour.parameters(), lr=c.lr) if self.behaviour is not None else None
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=c.lr)
        self.beta = np.full(self.S, c.beta0, dtype=float)
        self._beta_opt = _ElementwiseAdam(self.S, c.beta_lr)
        self.beta_frozen = np.full(self.S, bool(c.freeze_early_beta))   # the trainer's latch (freeze_early_beta)
        self.u_bar = np.zeros(self.S)   # EMA of lambda_L * mean uncertainty at (s', a') (the beta loss's normaliser)
        self._sigma_bar_init = False
        self.n_updates = 0

    @torch.no_grad()
    def _init_rows(self, row_seeds: list[int], obs_dim: int, act_dim: int, out: int, net: dict) -> None:
        c = self.cfg
        for s, r in enumerate(row_seeds):
            g = torch.Generator().manual_seed(r * 1_000_003 + 11)
            kw = {**net, "generator": g}
            parts = [(self.critic, BatchedMLP(self.N, obs_dim + act_dim, c.hidden, out, **kw), s * self.N),
                     (self.actor, BatchedMLP(1, obs_dim, c.hidden, 2 * act_dim, **kw), s)]
            if self.behaviour is not None:
                parts.append((self.behaviour, BatchedMLP(1, obs_dim, c.hidden, 2 * act_dim, **kw), s))
            for big, small, at in parts:
                for wb, ws in zip(big.weights, small.weights):
                    wb[at:at + small.n_models] = ws
                for bb, bs in zip(big.biases, small.biases):
                    bb[at:at + small.n_models] = bs

    def randn(self, *shape: int) -> torch.Tensor:
        """Standard normal draws from the agent's CPU generator, on the agent's device."""
        return torch.randn(shape, generator=self.gen).to(self.device)

    # ------------------------------------------------------------------ networks
    def critic_values(self, obs: torch.Tensor, act: torch.Tensor, target: bool = False, detach_params: bool = False):
        """(Q, sigma), each (S, N, B); sigma is None for a plain critic."""
        net = self.critic_target if target else self.critic
        x = torch.cat([obs, act], dim=-1)
        S, B, D = x.shape
        x = x.unsqueeze(1).expand(S, self.N, B, D).reshape(S * self.N, B, D)
        if detach_params:
            with _frozen(net):
                y = net(x)
        else:
            y = net(x)
        y = y.reshape(S, self.N, B, -1)
        q = y[..., 0]
        sigma = nn.functional.softplus(y[..., 1]) + 1e-5 if y.shape[-1] == 2 else None
        return q, sigma

    def _dist(self, net: BatchedMLP, obs: torch.Tensor):
        out = net(obs)
        mean, log_std = out[..., : self.act_dim], out[..., self.act_dim:]
        lo, hi = self.cfg.log_std_bounds
        return mean, torch.clamp(log_std, lo, hi)

    def sample(self, net: BatchedMLP, obs: torch.Tensor, noise: torch.Tensor | None = None):
        """Squashed-Gaussian action and log-probability (SB3's tanh correction, 1e-6), reparameterised."""
        mean, log_std = self._dist(net, obs)
        std = log_std.exp()
        if noise is None:
            noise = self.randn(*mean.shape)
        u = mean + std * noise
        a = torch.tanh(u)
        logp = (-0.5 * noise**2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        logp = logp - torch.log(1 - a**2 + 1e-6).sum(-1)
        return a, logp

    def log_prob(self, net: BatchedMLP, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """log pi(a | s) of a given squashed action (the soft-MC evaluator's entropy terms)."""
        mean, log_std = self._dist(net, obs)
        a = act.clamp(-1 + 1e-6, 1 - 1e-6)
        u = torch.atanh(a)
        z = (u - mean) / log_std.exp()
        return (-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1) - torch.log(1 - a**2 + 1e-6).sum(-1)

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha.detach().exp()

    def beta_t(self) -> torch.Tensor:
        return torch.as_tensor(self.beta, dtype=torch.float32, device=self.device).reshape(self.S, 1)

    @torch.no_grad()
    def act(self, obs, deterministic: bool = False, behaviour: bool = False) -> np.ndarray:
        """Actions (S, B, act_dim) or (S, act_dim) for observations (S, B, obs_dim) or (S, obs_dim).

        ``deterministic``: the mode tanh(mean) of the exploit policy (evaluation); ``behaviour``: sample the
        optimistic pi_b when the agent has one (data collection), else pi.
        """
        o = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=self.device)
        squeeze = o.dim() == 2
        if squeeze:
            o = o.unsqueeze(1)
        if o.shape[0] != self.S or o.shape[-1] != self.obs_dim:
            raise ValueError(f"act: observations must be (S={self.S}, [B,] {self.obs_dim}), got {tuple(o.shape)}")
        net = self.behaviour if (behaviour and self.behaviour is not None) else self.actor
        if deterministic:
            a = torch.tanh(self._dist(self.actor, o)[0])
        else:
            a = self.sample(net, o)[0]
        a = a.cpu().numpy()
        return a[:, 0] if squeeze else a

    @torch.no_grad()
    def value_estimate(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """The value the exploit actor maximises, (S, B): min_i Q_i or Qbar - lambda_L std_i Q_i."""
        q, _ = self.critic_values(obs, act)
        return q.min(dim=1).values if self.cfg.actor_value == "min" else L.epistemic_lcb(q, self.cfg.lam_l)

    # ------------------------------------------------------------------ losses
    def losses(self, batch: dict[str, torch.Tensor], noise: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        """Critic, actor(s) and alpha losses on one batch (tensors (S, B, .)), from the current parameters."""
        c, noise = self.cfg, noise or {}
        obs, act, next_obs = batch["obs"], batch["act"], batch["next_obs"]
        rew, done = batch["rew"] * c.reward_scale, batch["done"]
        alpha = self.alpha.reshape(self.S, 1)
        out: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            next_net = self.actor_target if c.next_action == "target" else self.actor
            a2, logp2 = self.sample(next_net, next_obs, noise.get("next"))
            qt, st = self.critic_values(next_obs, a2, target=True)
            cont = c.gamma * (1 - done)
            if c.target == "min":
                qmin, k = qt.min(dim=1)
                y_q = rew + cont * (qmin - alpha * logp2)
                if st is not None:   # DSAC-T: z' from the smaller critic, shared by both members
                    s_k = st.gather(1, k.unsqueeze(1)).squeeze(1)
                    xi = noise["z"] if "z" in noise else self.randn(*s_k.shape)
                    xi = xi if xi.dim() == 2 else xi[:, 0]
                    y_z = (rew + cont * (qmin + s_k * xi.clamp(-3, 3) - alpha * logp2)).unsqueeze(1)
            else:
                beta = self.beta_t()
                lcb = L.aid_lcb(qt, st, c.lam_l, beta)
                y_q = rew + cont * (lcb - alpha * logp2)
                xi = noise["z"] if "z" in noise else self.randn(*qt.shape)
                y_z = rew.unsqueeze(1) + cont.unsqueeze(1) * (qt + st * xi.clamp(-3, 3) - alpha.unsqueeze(1) * logp2.unsqueeze(1))
                ue_n, ua_n = L.ensemble_uncertainty(qt, st)
                out["u_epi_next"], out["u_ale_next"] = ue_n, ua_n
                # the code's beta normaliser: EMA of lambda_L * mean sqrt(U_epi' + (beta/lambda_L)^2 U_ale') at (s', a')
                if c.lam_l > 0:
                    unc = torch.sqrt(torch.clamp(ue_n + (beta / c.lam_l) ** 2 * ua_n, min=1e-8)).mean(dim=-1)
                    out["uncertainty"] = (c.lam_l * unc).cpu().numpy()
        out["y_q"] = y_q
        q, sigma = self.critic_values(obs, act)
        if c.loss == "mse":
            out["critic"] = (0.5 * ((q - y_q.unsqueeze(1)) ** 2).mean(dim=-1).sum(dim=-1)).sum()
        else:
            # the EMAs of the batch-mean sigma per member and of the ensemble variance advance with this batch
            # *before* the loss, as in the code's _compute_loss_q (initialised from the first batch)
            u_epi = q.detach().var(dim=1, unbiased=True)
            if not self._sigma_bar_init:
                self.sigma_bar.copy_(sigma.detach().mean(dim=-1, keepdim=True))
                self.u_epi_bar.copy_(u_epi.mean(dim=-1).reshape(self.S, 1, 1))
                if "uncertainty" in out:
                    self.u_bar = out["uncertainty"].astype(float)
                self._sigma_bar_init = True
            else:
                self.sigma_bar.lerp_(sigma.detach().mean(dim=-1, keepdim=True), c.ema_rate)
                self.u_epi_bar.lerp_(u_epi.mean(dim=-1).reshape(self.S, 1, 1), c.ema_rate)
                if "uncertainty" in out:
                    self.u_bar = (1 - c.ema_rate) * self.u_bar + c.ema_rate * out["uncertainty"]
            y_zb = L.clip_sample_target(y_z, q.detach(), self.sigma_bar)
            if c.loss == "dsact":
                per_seed = L.dsact_loss(q, sigma, y_q.unsqueeze(1), y_zb, self.sigma_bar, eps=c.eps)
            elif c.huber:
                per_seed = L.aid_loss(q, sigma, y_q.unsqueeze(1), y_zb, self.sigma_bar, u_epi, self.u_epi_bar,
                                      eps=c.eps, delta=c.huber_delta)
            else:
                per_seed = L.aid_release_loss(q, sigma, y_q.unsqueeze(1), y_zb, self.sigma_bar, u_epi, self.u_epi_bar,
                                              eps=c.eps, homogeneous=c.homogeneous_sigma, epi_step_scale=c.epi_step_scale)
            out["u_epi"] = u_epi
            out["critic"] = per_seed.sum()
            out["sigma"] = sigma.detach()
        out["q"] = q.detach()
        # actors (critic parameters frozen: their gradients come from the critic loss only)
        a_pi, logp = self.sample(self.actor, obs, noise.get("pi"))
        qp, sp_ = self.critic_values(obs, a_pi, detach_params=True)
        value = qp.min(dim=1).values if c.actor_value == "min" else L.epistemic_lcb(qp, c.lam_l)
        out["actor"] = (alpha * logp - value).mean(dim=-1).sum()
        out["alpha"] = -(self.log_alpha.reshape(self.S, 1) * (logp.detach() + self.target_entropy)).mean(dim=-1).sum()
        out["logp"] = logp.detach()
        if self.behaviour is not None:
            a_b, logp_b = self.sample(self.behaviour, obs, noise.get("pib"))
            qb, sb = self.critic_values(obs, a_b, detach_params=True)
            ucb = L.symmetric_ucb(qb, sb, c.lam_u, self.beta_t())
            out["behaviour"] = (alpha * logp_b - ucb).mean(dim=-1).sum()
        return out

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient step of the critics; every `delay` steps the actor(s), alpha and the Polyak targets."""
        c = self.cfg
        for key in ("obs", "act", "rew", "next_obs", "done"):
            if key not in batch:
                raise ValueError(f"update: batch lacks {key!r}")
        out = self.losses(batch)
        if not torch.isfinite(out["critic"]):
            raise FloatingPointError(f"{c.name}: non-finite critic loss at update {self.n_updates}")
        self.critic_opt.zero_grad(set_to_none=True)
        out["critic"].backward()
        policy_step = (self.n_updates + 1) % c.delay == 0
        opts = [self.actor_opt, self.alpha_opt] + ([self.behaviour_opt] if self.behaviour is not None else [])
        if policy_step:   # backward before any parameter changes in place; the actor graph holds the critic weights
            for o in opts:
                o.zero_grad(set_to_none=True)
            (out["actor"] + out["alpha"] + (out["behaviour"] if self.behaviour is not None else 0.0)).backward()
        self.critic_opt.step()
        self.n_updates += 1
        if policy_step:
            for o in opts:
                o.step()
            polyak_(self.critic_target, self.critic, c.tau)
            polyak_(self.actor_target, self.actor, c.tau)
        return {"critic_loss": float(out["critic"].detach()), "q_mean": float(out["q"].mean())}

    def update_beta(self, bias: np.ndarray) -> np.ndarray:
        """The code's one-sided beta feedback (`off_serial_dsacaid_trainer.step`, `DSACAID.local_update` and
        `_compute_loss_beta`), called at evaluation events with the measured bias b, per seed:

        * while the early-freeze latch is set, the event's bias is replaced by 0 (the trainer's
          ``self.overestimation = 0``), and the latch opens for good at the first b > 0.2 q_thr;
        * b > 0 (after the replacement): no step (``update_beta = False``);
        * else one Adam step on -beta * max(b, q_thr) / max(Ubar, floor) (a zero gradient while frozen: Adam
          still counts the step, as torch's does), then beta = max(beta, 0) (`_get_beta`).

        Returns the new beta (S,). `reference.official_beta_trainer` restates the code for the tests.
        """
        c = self.cfg
        b = np.asarray(bias, dtype=float).reshape(-1)
        if b.shape != (self.S,) or not np.all(np.isfinite(b)):
            raise ValueError(f"update_beta: need {self.S} finite biases, got {bias!r}")
        if not c.adaptive_beta:
            return self.beta.copy()
        b_eff = np.where(self.beta_frozen, 0.0, b)
        if c.freeze_early_beta:
            self.beta_frozen &= ~(b > 0.2 * c.q_bias_threshold)
        mask = b_eff <= 0
        grad = -np.maximum(b_eff, c.q_bias_threshold) / np.maximum(self.u_bar, c.uncertainty_floor)
        self.beta = np.maximum(self._beta_opt.step(self.beta, grad, mask), 0.0)
        return self.beta.copy()


class _frozen:
    """Context: a module's parameters do not require grad (actor losses through the critics)."""

    def __init__(self, net: nn.Module):
        self.params = list(net.parameters())

    def __enter__(self):
        self.flags = [p.requires_grad for p in self.params]
        for p in self.params:
            p.requires_grad_(False)

    def __exit__(self, *exc):
        for p, f in zip(self.params, self.flags):
            p.requires_grad_(f)
