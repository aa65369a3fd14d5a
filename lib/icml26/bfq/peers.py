"""Equivalence with peer implementations on PyPI (the chapter's `check` claims K1, K2).

* Meta's ``flow_matching`` (1.0.10): our FM path and Euler sampler, mapped to its convention by
  `icml26.bfq.conventions` (t -> 1 - t, velocity sign flipped), equal its ``AffineProbPath(CondOTScheduler())``
  and ``ODESolver(method="euler")``.
* torchrl's ``TD3BCLoss`` (0.14.1): our TD3+BC critic and actor losses equal it on equal weights, batch
  and target-smoothing noise, alpha = 2.5, gamma = 0.99.
"""
from __future__ import annotations

import warnings

import torch

from .baselines import FlowMatchingPolicy
from .conventions import from_fql_velocity, interpolate, to_fql_time, velocity_target


def flow_matching_max_diff(K: int = 10, n: int = 512, seed: int = 0) -> dict:
    """Max |ours - flow_matching| of the path, its velocity and the K-step Euler sample of one FM net."""
    from flow_matching.path import AffineProbPath
    from flow_matching.path.scheduler import CondOTScheduler
    from flow_matching.solver import ODESolver
    from flow_matching.utils import ModelWrapper

    g = torch.Generator().manual_seed(seed)
    a, eps = torch.randn(n, 2, generator=g), torch.randn(n, 2, generator=g)
    t = torch.rand(n, generator=g)
    ps = AffineProbPath(scheduler=CondOTScheduler()).sample(x_0=eps, x_1=a, t=to_fql_time(t))
    path = (interpolate(a, eps, t[:, None]) - ps.x_t).abs().max().item()
    vel = (velocity_target(a, eps) - from_fql_velocity(ps.dx_t)).abs().max().item()

    fm = FlowMatchingPolicy([seed], 2, 0, (64, 64), 16)
    empty = torch.zeros(1, n, 0)

    class Wrapped(ModelWrapper):
        def forward(self, x, t, **extras):
            tt = to_fql_time(t).expand(1, n, 1) if t.dim() == 0 else to_fql_time(t).view(1, n, 1)
            return -fm.velocity(x[None], tt, empty)[0]

    with torch.no_grad():
        ours = fm.sample(empty, eps[None], K)[0]
        theirs = ODESolver(velocity_model=Wrapped(fm)).sample(x_init=eps, step_size=1.0 / K, method="euler",
                                                              time_grid=torch.tensor([0.0, 1.0]))
    return {"path": path, "velocity": vel, "euler": (ours - theirs).abs().max().item()}


def torchrl_td3bc(agent, gamma: float = 0.99):
    """A torchrl ``TD3BCLoss`` whose actor, twin critics and targets carry ``agent``'s weights (member 0).

    ``agent`` is a one-member ``td3bc`` `BehaviorRegularizedAgent`; alpha 2.5, target noise 0.2 clipped at 0.5,
    squared-error critic loss summed over the twins, TD(0) target with ``gamma``.
    """
    from tensordict.nn import TensorDictModule
    from torchrl.data import Bounded
    from torchrl.modules import ValueOperator
    from torchrl.objectives import TD3BCLoss
    from torchrl.objectives.utils import ValueEstimators

    action_dim = agent.data.action_dim

    def linears(ens, member):
        return [(layer.weight[member].T.detach().clone(), layer.bias[member, 0].detach().clone()) for layer in ens.layers]

    def mlp(weights, squash):
        mods = []
        for k, (w, b) in enumerate(weights):
            lin = torch.nn.Linear(w.shape[1], w.shape[0])
            with torch.no_grad():
                lin.weight.copy_(w)
                lin.bias.copy_(b)
            mods += [lin] + ([torch.nn.SiLU()] if k < len(weights) - 1 else [])
        return torch.nn.Sequential(*mods, *([torch.nn.Tanh()] if squash else []))

    actor = TensorDictModule(mlp(linears(agent.actor.net, 0), True), in_keys=["observation"], out_keys=["action"])

    class Q(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = mlp(linears(agent.critic.net, 0), False)

        def forward(self, obs, act):
            return self.net(torch.cat([obs, act], -1))

    spec = Bounded(-torch.ones(action_dim), torch.ones(action_dim), (action_dim,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no target network updater": targets are set by hand here
        loss = TD3BCLoss(actor, ValueOperator(Q(), in_keys=["observation", "action"]), action_spec=spec, alpha=2.5,
                         policy_noise=0.2, noise_clip=0.5, loss_function="l2", num_qvalue_nets=2)
        loss.make_value_estimator(ValueEstimators.TD0, gamma=gamma)
        with torch.no_grad():  # both twins and their targets: our critic members (Q_1, Q_2) = members (0, 1)
            for params in (loss.qvalue_network_params, loss.target_qvalue_network_params):
                for name, p in params.flatten_keys(".").items():
                    layer = agent.critic.net.layers[int(name.split(".")[-2]) // 2]  # Sequential: Linear, SiLU, ...
                    for j in range(2):
                        p[j].copy_(layer.weight[j].T if name.endswith("weight") else layer.bias[j, 0])
    return loss


def torchrl_batch(s, a, r, s2, d):
    """The TensorDict layout TD3BCLoss reads."""
    from tensordict import TensorDict

    return TensorDict({"observation": s, "action": a, ("next", "observation"): s2, ("next", "reward"): r[:, None],
                       ("next", "done"): d[:, None].bool(), ("next", "terminated"): d[:, None].bool()}, [s.shape[0]])


def td3bc_torchrl_max_diff(batch: int = 64, state_dim: int = 3, action_dim: int = 2, seed: int = 0) -> dict:
    """Max |ours - torchrl TD3BCLoss| of the critic loss and the actor loss, equal weights and noise."""
    from .agent import AgentConfig, BehaviorRegularizedAgent
    from .data import OfflineDataset

    g = torch.Generator().manual_seed(seed)
    s, s2 = torch.randn(batch, state_dim, generator=g), torch.randn(batch, state_dim, generator=g)
    a = torch.rand(batch, action_dim, generator=g) * 2 - 1
    r, d = torch.randn(batch, generator=g), (torch.rand(batch, generator=g) < 0.1).float()
    data = OfflineDataset("peer", s, a, r, s2, d, torch.zeros(1).numpy())
    agent = BehaviorRegularizedAgent("td3bc", [seed], data, AgentConfig(hidden=(32, 32)))
    loss = torchrl_td3bc(agent)
    torch.manual_seed(seed + 1)
    noise = (torch.randn(batch, action_dim) * 0.2).clamp(-0.5, 0.5)     # the draw TD3BCLoss makes first
    torch.manual_seed(seed + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = loss(torchrl_batch(s, a, r, s2, d))

    # ours, on the same batch and noise
    with torch.no_grad():
        a2 = (agent.actor_target(s2[None]) + noise[None]).clamp(-1, 1)
        y = r[None] + 0.99 * (1 - d[None]) * agent.critic_target(s2[None], a2).min(0).values
    q = agent.critic(s[None], a[None])
    ours_q = ((q - y[None]) ** 2).mean(-1).sum(0)[0]
    ours_actor = agent.actor_loss(s[None], a[None])[0]
    return {"critic": abs(ours_q.item() - out["loss_qvalue"].item()),
            "actor": abs(ours_actor.item() - out["loss_actor"].item())}
