"""Chunked flow policies on one interface: ``compute_loss(batch)`` and ``predict_action(obs)`` (brief §2, §5.2).

Flow convention ``x_t = t A + (1 - t) eps`` (t = 1 is data), the network sees ``99 t``.

* `FMPolicy`: plain conditional flow matching (velocity target ``A - eps``), sampled with ``steps`` Euler
  steps from t = 0 (FM-10, the DP-like multimodal reference). ``fco_weight > 0`` plugs the FCO into it
  (the velocity loss restricted to the proximal window plus ``w_f`` times the released frequency loss on
  the one-step estimate ``x_t + (1 - t) v``): the "generalizability" test.
* `ConsistencyFMPolicy`: FlowPolicy, consistency flow matching (``r = t + 0.01``, two segments with
  segment-end targets, boundary 1, velocity-consistency weight ``alpha = 1e-5``, gradients through both
  branches), one Euler step at inference. At horizon 4 it executes 3 steps (DP3/FlowPolicy's MetaWorld
  setting: ``action_pred[:, 1:5]`` of a 4-step chunk). Plug-ins (the paper's "generalizability of our
  modules to other baselines"): ``sampler="las"`` draws ``r`` from the LAS anchor (one segment, so the
  anchor's segment end is the data end as in FocalPolicy), ``fco=True`` restricts the consistency term to
  the released proximal window and adds ``w_f`` times the released frequency loss on ``x_t + (1 - t) v_t``.
* `FocalPolicy`: LAS + FCO (brief §2.3-2.4): ``t ~ U(0.01, 1)``, ``r`` from the LAS anchor, shared noise,
  ``v_r`` under ``no_grad``, loss `fco_loss`; one Euler step from ``t = 0.01`` with ``dt = 1``.
  Ablations: ``sampler=ConsistencySampler()`` (-LAS), ``w_f`` sweep, ``freq="adaptive"``,
  ``window_start = n_obs_steps - 1`` (time loss on the executed indices 1-4), ``full_horizon=True``
  (-FCO: the time loss on the whole horizon, no frequency term).

Every policy min-max normalises observations and actions to [-1, 1] (DP3's ``LinearNormalizer``) and
returns ``{"action_pred": (B, T, D_a), "action": (B, n, D_a)}`` with ``action = action_pred[:, n_obs-1 : n_obs-1+n]``.
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import check_chunk, check_horizon
from .losses import fco_loss, freq_loss
from .networks import make_network
from .sampler import MAIN_COMMIT, ConsistencySampler, LASSampler, uniform_t

INFERENCE_T = 0.01


def _on(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Random draws come from CPU generators (the same numbers on every device); move them to the model's device."""
    return x.to(like.device, non_blocking=True)


class MinMaxNormalizer(nn.Module):
    """Per-dimension affine map of ``[min, max]`` to ``[-1, 1]`` (constant dims: shift only)."""

    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))
        self.register_buffer("offset", torch.zeros(dim))

    def fit(self, x: torch.Tensor) -> "MinMaxNormalizer":
        x = x.reshape(-1, x.shape[-1])
        lo, hi = x.min(0).values, x.max(0).values
        rng = hi - lo
        ok = rng > 1e-6
        self.scale.copy_(torch.where(ok, 2.0 / rng.clamp_min(1e-6), torch.ones_like(rng)))
        self.offset.copy_(torch.where(ok, -1.0 - lo * self.scale, -(hi + lo) / 2))
        return self

    def normalize(self, x):
        return x * self.scale + self.offset

    def unnormalize(self, x):
        return (x - self.offset) / self.scale


class ChunkPolicy(nn.Module):
    """Shared plumbing: shapes, normalisers, the network, the executed window."""

    def __init__(self, obs_dim: int, action_dim: int, horizon: int = 12, n_obs_steps: int = 2,
                 n_action_steps: int = 4, network: str = "mlp", net_kwargs: dict | None = None):
        super().__init__()
        check_horizon(horizon, n_obs_steps, n_action_steps)
        self.obs_dim, self.action_dim = obs_dim, action_dim
        self.horizon, self.n_obs_steps, self.n_action_steps = horizon, n_obs_steps, n_action_steps
        self.net = make_network(network, horizon, action_dim, n_obs_steps * obs_dim, **(net_kwargs or {}))
        self.obs_norm, self.act_norm = MinMaxNormalizer(obs_dim), MinMaxNormalizer(action_dim)
        self.members = int(getattr(self.net, "members", 1))

    @property
    def device(self) -> torch.device:
        return self.obs_norm.scale.device

    def member(self, s: int) -> "ChunkPolicy":
        """Member ``s`` of a seed ensemble as a stand-alone policy (itself when there is one member)."""
        if self.members == 1:
            return self
        if not 0 <= s < self.members:
            raise ValueError(f"member {s} out of range for {self.members} members")
        import copy

        net = self.net
        self.net = None
        try:
            single = copy.deepcopy(self)
        finally:
            self.net = net
        single.net = net.member(s)
        single.members = 1
        return single.eval()

    def fit_normalizers(self, obs: torch.Tensor, actions: torch.Tensor) -> None:
        self.obs_norm.fit(obs)
        self.act_norm.fit(actions)

    def velocity(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """``v_theta(x, t | o)`` with the network fed ``99 t`` (t of shape (B,))."""
        return self.net(x, t * 99.0, cond)

    def _prepare(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        obs, act = batch["obs"], batch["action"]
        if obs.ndim != 3 or obs.shape[1:] != (self.n_obs_steps, self.obs_dim):
            raise ValueError(f"batch['obs'] must be shaped (B, {self.n_obs_steps}, {self.obs_dim}), got {tuple(obs.shape)}")
        check_chunk(act, "batch['action']", self.horizon, self.action_dim)
        if not torch.isfinite(obs).all():
            raise ValueError("batch['obs'] contains NaN or infinite values")
        obs, act = obs.to(self.device), act.to(self.device)
        return self.obs_norm.normalize(obs).reshape(obs.shape[0], -1), self.act_norm.normalize(act)

    def _cond(self, obs: torch.Tensor) -> torch.Tensor:
        obs = torch.as_tensor(obs, dtype=torch.float32)
        if obs.ndim != 3 or obs.shape[1:] != (self.n_obs_steps, self.obs_dim):
            raise ValueError(f"obs must be shaped (B, {self.n_obs_steps}, {self.obs_dim}), got {tuple(obs.shape)}")
        if not torch.isfinite(obs).all():
            raise ValueError("obs contains NaN or infinite values")
        return self.obs_norm.normalize(obs.to(self.device)).reshape(obs.shape[0], -1)

    def _finish(self, a_norm: torch.Tensor) -> dict:
        pred = self.act_norm.unnormalize(a_norm).cpu()
        s = self.n_obs_steps - 1
        return {"action_pred": pred, "action": pred[:, s: s + self.n_action_steps]}

    def sample_normalized(self, cond: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    @torch.no_grad()
    def predict_action(self, obs, generator: torch.Generator | None = None, noise: torch.Tensor | None = None) -> dict:
        """Sample a chunk for each observation history ``obs`` (B, n_obs_steps, obs_dim)."""
        cond = self._cond(obs)
        if noise is None:
            noise = torch.randn(cond.shape[0], self.horizon, self.action_dim, generator=generator)
        return self._finish(self.sample_normalized(cond, _on(noise, cond)))


class FMPolicy(ChunkPolicy):
    """Conditional flow matching, ``steps`` Euler steps (FM-10); optional FCO plug-in (``fco_weight``)."""

    def __init__(self, *args, steps: int = 10, fco: bool = False, w_f: float = 1e-4, **kw):
        super().__init__(*args, **kw)
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        if w_f < 0:
            raise ValueError(f"w_f must be >= 0, got {w_f}")
        self.steps, self.fco, self.w_f = steps, fco, w_f

    def compute_loss(self, batch: dict, generator: torch.Generator | None = None) -> tuple[torch.Tensor, dict]:
        cond, a = self._prepare(batch)
        B = a.shape[0]
        eps = _on(torch.randn(a.shape, generator=generator), a)
        t = _on(torch.rand(B, generator=generator), a)
        tt = t[:, None, None]
        x_t = tt * a + (1 - tt) * eps
        v = self.velocity(x_t, t, cond)
        err = (v - (a - eps)) ** 2
        if not self.fco:
            loss = err.mean()
            return loss, {"loss": float(loss.detach())}
        lt = err[:, : self.n_action_steps].mean()
        lf = freq_loss(x_t + (1 - tt) * v, a)
        loss = lt + self.w_f * lf
        return loss, {"loss": float(loss.detach()), "time": float(lt.detach()), "freq": float(lf.detach())}

    def sample_normalized(self, cond, noise):
        x = noise
        dt = 1.0 / self.steps
        for i in range(self.steps):
            t = torch.full((x.shape[0],), i * dt, dtype=x.dtype, device=x.device)
            x = x + dt * self.velocity(x, t, cond)
        return x


class OneStepPolicy(ChunkPolicy):
    """One Euler step from ``t = 0.01`` with ``dt = 1`` (``A = x + v(x, 0.01)``), as the released code."""

    def sample_normalized(self, cond, noise):
        t = torch.full((noise.shape[0],), INFERENCE_T, dtype=noise.dtype, device=noise.device)
        return noise + 1.0 * self.velocity(noise, t, cond)


class ConsistencyFMPolicy(OneStepPolicy):
    """FlowPolicy: consistency flow matching with ``segments`` segments, ``r = t + delta``, weight ``alpha``."""

    def __init__(self, *args, delta: float = 0.01, segments: int = 2, alpha: float = 1e-5, boundary: float = 1.0,
                 sampler: str = "consistency", las_commit: str = MAIN_COMMIT, fco: bool = False, w_f: float = 1e-4, **kw):
        super().__init__(*args, **kw)
        if segments < 1:
            raise ValueError(f"segments must be >= 1, got {segments}")
        if sampler not in ("consistency", "las"):
            raise ValueError(f"sampler must be 'consistency' or 'las', got {sampler!r}")
        if sampler == "las" and segments != 1:
            raise ValueError("the LAS plug-in needs segments=1 (its anchor r is not local to t's segment)")
        if w_f < 0:
            raise ValueError(f"w_f must be >= 0, got {w_f}")
        self.sampler = ConsistencySampler(delta) if sampler == "consistency" else LASSampler.official(las_commit)
        self.segments, self.alpha, self.boundary, self.delta = segments, alpha, boundary, delta
        self.fco, self.w_f = fco, w_f

    def compute_loss(self, batch: dict, generator: torch.Generator | None = None) -> tuple[torch.Tensor, dict]:
        cond, a = self._prepare(batch)
        B = a.shape[0]
        eps = _on(torch.randn(a.shape, generator=generator), a)
        t, r = self.sampler(B, generator)
        t, r = _on(t, a), _on(r, a)
        edges = torch.linspace(0, 1, self.segments + 1, device=a.device)
        seg_end = edges[torch.searchsorted(edges, t, right=False).clamp(min=1)]
        tt, rr, ee = t[:, None, None], r[:, None, None], seg_end[:, None, None]
        x_t, x_r = tt * a + (1 - tt) * eps, rr * a + (1 - rr) * eps
        x_end = ee * a + (1 - ee) * eps
        v_t, v_r = self.velocity(x_t, t, cond), self.velocity(x_r, r, cond)
        f_t = x_t + (ee - tt) * v_t
        f_r = torch.where(rr < self.boundary, x_r + (ee - rr) * v_r, x_end)
        if self.fco:      # FCO plug-in: the consistency term on the released proximal window + w_f L_freq (eq. of §2.4)
            n = self.n_action_steps
            loss_f = ((f_t[:, :n] - f_r[:, :n]) ** 2).mean()
            loss_f = loss_f + self.w_f * freq_loss(x_t + (1 - tt) * v_t, a)
        else:
            loss_f = ((f_t - f_r) ** 2).mean()
        far = ((seg_end - t) > 1.01 * self.delta)[:, None, None]
        loss_v = (far * (v_t - v_r) ** 2).mean()
        loss = loss_f + self.alpha * loss_v
        return loss, {"loss": float(loss.detach()), "f": float(loss_f.detach()), "v": float(loss_v.detach())}


class FocalPolicy(OneStepPolicy):
    """LAS + FCO (brief §2.3-2.4). Ablation switches: see the module docstring."""

    def __init__(self, *args, sampler=None, w_f=1e-4, freq: str = "ortho", window_start: int = 0,
                 full_horizon: bool = False, **kw):
        super().__init__(*args, **kw)
        w = torch.as_tensor(w_f, dtype=torch.float32).reshape(-1)
        if not torch.isfinite(w).all() or (w < 0).any():
            raise ValueError(f"w_f must be >= 0 (a number, or one per ensemble member), got {w_f!r}")
        if w.numel() not in (1, self.members):
            raise ValueError(f"w_f has {w.numel()} values for an ensemble of {self.members} members")
        if not 0 <= window_start <= self.horizon - self.n_action_steps:
            raise ValueError(f"window_start {window_start} leaves no room for {self.n_action_steps} steps in T = {self.horizon}")
        if freq not in ("ortho", "adaptive"):
            raise ValueError(f"freq must be 'ortho' or 'adaptive', got {freq!r}")
        self.sampler = sampler if sampler is not None else LASSampler.official()
        self.register_buffer("w_f", w.expand(self.members).clone())
        self.freq, self.window_start, self.full_horizon = freq, window_start, full_horizon

    def member(self, s: int) -> "ChunkPolicy":
        single = super().member(s)
        if single is not self:
            single.w_f = self.w_f[s: s + 1].clone()
        return single

    def compute_loss(self, batch: dict, generator: torch.Generator | None = None) -> tuple[torch.Tensor, dict]:
        """``L = L_time + w_f L_freq`` (`losses.fco_loss`), per ensemble member, averaged over members."""
        cond, a = self._prepare(batch)
        B = a.shape[0]
        eps = _on(torch.randn(a.shape, generator=generator), a)
        if isinstance(self.sampler, LASSampler):
            r = self.sampler.anchor(B, generator)
            t = uniform_t(B, generator, self.sampler.t_min)      # LAS's own t is discarded (released code)
        else:
            t, r = self.sampler(B, generator)
        t, r = _on(t, a), _on(r, a)
        tt, rr = t[:, None, None], r[:, None, None]
        x_t, x_r = tt * a + (1 - tt) * eps, rr * a + (1 - rr) * eps   # shared noise
        f_t = x_t + (1 - tt) * self.velocity(x_t, t, cond)
        with torch.no_grad():                       # stop-gradient, no EMA teacher
            f_r = x_r + (1 - rr) * self.velocity(x_r, r, cond)
        loss, parts = fco_loss(f_t, f_r, a, self.w_f, self.n_action_steps, window_start=self.window_start,
                               freq=self.freq, full_horizon=self.full_horizon, members=self.members)
        return loss, {"loss": float(loss.detach()), **parts}


def make_policy(spec: dict, obs_dim: int, action_dim: int, network: str, net_kwargs: dict | None = None,
                n_obs_steps: int = 2, n_action_steps: int = 4) -> ChunkPolicy:
    """Build a policy from a variant spec ``{"kind": "fm"|"flowpolicy"|"focal", "horizon": T, ...options}``."""
    spec = dict(spec)
    kind = spec.pop("kind")
    horizon = spec.pop("horizon", 12)
    n_action_steps = spec.pop("n_action_steps", n_action_steps)
    common = dict(horizon=horizon, n_obs_steps=n_obs_steps, n_action_steps=n_action_steps, network=network,
                  net_kwargs=net_kwargs)
    if kind == "fm":
        return FMPolicy(obs_dim, action_dim, **common, **spec)
    if kind == "flowpolicy":
        return ConsistencyFMPolicy(obs_dim, action_dim, **common, **spec)
    if kind == "focal":
        sampler = spec.pop("sampler", "las")
        if sampler == "las":
            s = LASSampler.official(spec.pop("las_commit", MAIN_COMMIT))
        elif sampler == "consistency":
            s = ConsistencySampler(spec.pop("delta", 0.01))
        else:
            raise ValueError(f"unknown sampler {sampler!r}; valid: 'las', 'consistency'")
        return FocalPolicy(obs_dim, action_dim, sampler=s, **common, **spec)
    raise ValueError(f"unknown policy kind {kind!r}; valid: 'fm', 'flowpolicy', 'focal'")
