"""Unit tests of icml26.bfq (flow map, losses, baselines, scaffold, data, theory, peers). Fast: well under a minute."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import sympy as sp
import torch

from icml26 import bfq
from icml26.bfq import PRESETS, theory as th
from icml26.bfq import experiments as ex

torch.set_num_threads(1)


def _policy(**kw):
    return bfq.FlowMapPolicy([0, 1], action_dim=2, state_dim=3, hidden=(16, 16), pe_dim=8, **kw)


# --------------------------------------------------------------------------- conventions and peers
def test_conventions_round_trip():
    t = torch.rand(10)
    assert torch.allclose(bfq.to_fql_time(bfq.to_fql_time(t)), t)
    v = torch.randn(10, 2)
    assert torch.equal(bfq.from_fql_velocity(bfq.to_fql_velocity(v)), v)
    a, e = torch.randn(5, 2), torch.randn(5, 2)
    assert torch.allclose(bfq.interpolate(a, e, torch.zeros(5, 1)), a)      # t = 0 is data
    assert torch.allclose(bfq.interpolate(a, e, torch.ones(5, 1)), e)       # t = 1 is noise


def test_flow_matching_peer_equivalence():
    pytest.importorskip("flow_matching")
    from icml26.bfq import peers
    diff = peers.flow_matching_max_diff(K=10, n=128)
    assert max(diff.values()) <= 1e-5, diff


def test_td3bc_equals_torchrl():
    pytest.importorskip("torchrl")
    from icml26.bfq import peers
    diff = peers.td3bc_torchrl_max_diff(batch=32)
    assert max(diff.values()) <= 1e-5, diff


# --------------------------------------------------------------------------- the flow map
@pytest.mark.parametrize("param", ["mean", "edm"])
def test_operator_identity_at_equal_times(param):
    pol = _policy(parameterisation=param)
    a_t, s = torch.randn(2, 7, 2), torch.randn(2, 7, 3)
    t = torch.rand(2, 7, 1)
    assert torch.allclose(pol.operator(a_t, t, t, s), a_t, atol=1e-6)


def test_edm_velocity_is_finite_difference():
    pol = _policy(parameterisation="edm")
    a_t, s = torch.randn(2, 4, 2), torch.randn(2, 4, 3)
    r, t = torch.full((2, 4, 1), 0.3), torch.full((2, 4, 1), 0.7)
    pi, u = pol._op_and_u(a_t, r, t, s)
    assert torch.allclose(u, (a_t - pi) / (t - r), atol=1e-5)


@pytest.mark.parametrize("param", ["mean", "edm"])
def test_one_step_sample_is_operator_0_1(param):
    pol = _policy(parameterisation=param)
    s, eps = torch.randn(2, 5, 3), torch.randn(2, 5, 2)
    assert torch.allclose(pol.sample(s, eps), pol.operator(eps, 0.0, 1.0, s))
    assert torch.allclose(pol.sample_steps(s, eps, 1), pol.sample(s, eps))


def test_identity_map_has_zero_composition_loss_but_not_boundary():
    pol = _policy()
    with torch.no_grad():
        pol.net.layers[-1].weight.zero_(); pol.net.layers[-1].bias.zero_()   # u = 0: pi is the identity
    g = torch.Generator().manual_seed(0)
    a, s = torch.randn(2, 64, 2), torch.randn(2, 64, 3)
    assert pol.composition_loss(a, s, g).abs().max().item() == 0.0
    assert (pol.boundary_loss(a, s, g) > 0.5).all()


def test_composition_target_is_stop_gradient():
    """Only the one-hop prediction carries gradient: the loss gradient equals that of ||pred - const||^2."""
    pol = _policy()
    a, s = torch.randn(2, 32, 2), torch.randn(2, 32, 3)
    loss = pol.composition_loss(a, s, torch.Generator().manual_seed(1)).sum()
    grads = torch.autograd.grad(loss, list(pol.parameters()))
    # recompute with the same draws, target built explicitly as a constant
    g = torch.Generator().manual_seed(1)
    eps = torch.randn(a.shape, generator=g)
    rmt = torch.sort(torch.rand(2, 32, 3, generator=g), dim=-1).values
    r, m, t = rmt[..., :1], rmt[..., 1:2], rmt[..., 2:]
    a_t = bfq.interpolate(a, eps, t)
    target = pol._op_and_u(pol._op_and_u(a_t, m, t, s)[0], r, m, s)[0].detach()
    ref = ((pol._op_and_u(a_t, r, t, s)[0] - target) ** 2).sum(-1).mean(-1).sum()
    for g1, g2 in zip(grads, torch.autograd.grad(ref, list(pol.parameters()))):
        assert torch.allclose(g1, g2, atol=1e-6)


def test_bernoulli_switch_extremes():
    pol = _policy()
    a, s = torch.randn(2, 16, 2), torch.randn(2, 16, 3)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    torch.rand(2, generator=g2)   # the switch draw
    assert torch.allclose(pol.bc_loss(a, s, g1, lam=1.0), pol.boundary_loss(a, s, g2))
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    torch.rand(2, generator=g2)
    assert torch.allclose(pol.bc_loss(a, s, g1, lam=0.0), pol.composition_loss(a, s, g2))
    per_member = pol.bc_loss(a, s, torch.Generator().manual_seed(0), lam=(0.0, 1.0))
    assert per_member.shape == (2,)
    assert pol.bc_loss(a, s, torch.Generator().manual_seed(0), lam=0.5, mixing="sample").shape == (2,)


def test_ensemble_members_are_independent():
    pol = _policy()
    a, s = torch.randn(2, 16, 2), torch.randn(2, 16, 3)
    loss = pol.boundary_loss(a, s, torch.Generator().manual_seed(0))[0]
    loss.backward()
    for p in pol.parameters():
        assert p.grad[1].abs().max().item() == 0.0 and p.grad[0].abs().max().item() > 0


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("r,t", [(0.6, 0.4), (-0.1, 0.5), (0.2, 1.2), (float("nan"), 0.5)])
def test_operator_rejects_bad_times(r, t):
    pol = _policy()
    with pytest.raises(ValueError):
        pol.operator(torch.randn(2, 3, 2), r, t, torch.randn(2, 3, 3))


def test_bad_arguments_raise():
    pol = _policy()
    a, s, g = torch.randn(2, 4, 2), torch.randn(2, 4, 3), torch.Generator()
    with pytest.raises(ValueError, match="lambda"):
        pol.bc_loss(a, s, g, lam=1.5)
    with pytest.raises(ValueError, match="delta_max"):
        pol.boundary_loss(a, s, g, delta_max=1.0)
    with pytest.raises(ValueError, match="action_dim"):
        pol.operator(torch.randn(2, 4, 3), 0.0, 1.0, s)
    with pytest.raises(ValueError):
        pol.sample_steps(s, a, 0)
    with pytest.raises(ValueError, match="K"):
        bfq.FlowMatchingPolicy([0], 2, 0, (8,), 8).sample(torch.zeros(1, 2, 0), torch.randn(1, 2, 2), 0)
    with pytest.raises(ValueError, match="lambda"):
        bfq.AgentConfig(lam=-0.1)
    with pytest.raises(ValueError, match="Delta_max"):
        bfq.AgentConfig(delta_max=0.0)
    with pytest.raises(ValueError, match="eta"):
        bfq.AgentConfig(eta=-1.0)
    with pytest.raises(ValueError, match="K"):
        bfq.AgentConfig(fm_steps=0)
    with pytest.raises(ValueError, match="unknown dataset"):
        bfq.rollout_dataset("hopper-medium", 1, 0)
    with pytest.raises(ValueError, match="unknown toy"):
        bfq.toy_samples("spiral", 10, np.random.default_rng(0))


def test_dataset_validation():
    z = np.zeros((0, 3))
    with pytest.raises(ValueError, match="empty"):
        bfq.OfflineDataset.from_arrays("x", z, np.zeros((0, 1)), np.zeros(0), z, np.zeros(0))
    s = np.zeros((4, 3))
    with pytest.raises(ValueError, match="NaN or inf"):
        bfq.OfflineDataset.from_arrays("x", s, np.zeros((4, 1)), [0, np.nan, 0, 0], s, np.zeros(4))
    with pytest.raises(ValueError, match="NaN or inf"):
        bfq.OfflineDataset.from_arrays("x", s, np.zeros((4, 1)), [0, np.inf, 0, 0], s, np.zeros(4))


def test_evaluate_rejects_action_dim_mismatch():
    d = bfq.rollout_dataset("pendulum-medium", 1, 0)
    wrong = bfq.OfflineDataset.from_arrays("pendulum-medium", d.states, torch.zeros(len(d), 2), d.rewards,
                                           d.next_states, d.dones)
    agent = bfq.BehaviorRegularizedAgent("bc", [0], wrong, bfq.AgentConfig(hidden=(8,)))
    with pytest.raises(ValueError, match="action dimension"):
        bfq.evaluate(agent, "pendulum", 1, 0)


# --------------------------------------------------------------------------- the scaffold
@pytest.mark.parametrize("method", bfq.METHODS)
def test_agent_updates_are_finite_and_deterministic(method):
    d = bfq.rollout_dataset("pendulum-medium", 2, 0)
    cfg = bfq.AgentConfig(hidden=(16, 16), pe_dim=8, batch=32, fm_steps=3, fql_steps=3)

    def run():
        torch.manual_seed(123)
        agent = bfq.BehaviorRegularizedAgent(method, [0, 1], d, cfg)
        outs = [agent.update() for _ in range(3)]
        act = agent.act(d.states[None, :4].expand(2, 4, 3).contiguous(), torch.Generator().manual_seed(0))
        return outs, act

    (o1, a1), (o2, a2) = run(), run()
    assert o1 == o2 and torch.equal(a1, a2)
    assert all(np.isfinite(v) for o in o1 for v in o.values())
    assert a1.abs().max() <= 1.0


def test_alpha_normalisation_makes_the_actor_gradient_invariant_to_q_scale():
    """alpha = eta / E|Q(s, a_data)|: scaling the critic by 10 leaves the actor's gradient unchanged."""
    d = bfq.rollout_dataset("pendulum-medium", 2, 0)
    s, a = d.states[None, :16], d.actions[None, :16]

    def grads(scale):
        agent = bfq.BehaviorRegularizedAgent("bfq", [0], d, bfq.AgentConfig(hidden=(16,), pe_dim=8, batch=16))
        with torch.no_grad():
            agent.critic.net.layers[-1].weight.mul_(scale); agent.critic.net.layers[-1].bias.mul_(scale)
        agent.gen.manual_seed(5)
        loss = agent.actor_loss(s, a).sum()
        return torch.autograd.grad(loss, list(agent.actor.parameters()))

    for g1, g10 in zip(grads(1.0), grads(10.0)):
        assert torch.allclose(g1, g10, atol=1e-5)


def test_unknown_method():
    d = bfq.rollout_dataset("pendulum-medium", 1, 0)
    with pytest.raises(ValueError, match="valid"):
        bfq.BehaviorRegularizedAgent("iql", [0], d)


def test_max_q_backup_switch_runs():
    d = bfq.rollout_dataset("pendulum-medium", 1, 0)
    agent = bfq.BehaviorRegularizedAgent("bfq", [0], d, bfq.AgentConfig(hidden=(8,), pe_dim=8, batch=8, max_q_backup=4))
    assert np.isfinite(agent.update()["critic"])


# --------------------------------------------------------------------------- data
def test_bandit_env_passes_check_env():
    from gymnasium.utils.env_checker import check_env
    env = gym.make("Bandit4-v0")
    check_env(env.unwrapped)
    env.reset(seed=0)
    _, r, term, _, _ = env.step(np.array([0.8, 0.8], np.float32))
    assert term and r == pytest.approx(1.0)


def test_reacher_behaviour_is_bimodal():
    d = bfq.rollout_dataset("reacher-expert", 20, seed=5)
    first = d.actions.view(20, 50, 2)[:, 0, 1].numpy()
    share = np.mean(first > 0)
    assert 0.2 <= share <= 0.8


def test_normalized_score():
    assert bfq.normalized_score([10.0, 0.0], ref=10.0, random=0.0).tolist() == [100.0, 0.0]
    with pytest.raises(ValueError):
        bfq.normalized_score([1.0], ref=0.0, random=1.0)


def test_mode_coverage_and_sliced_w2():
    x = bfq.toy_samples("bandit", 4000, np.random.default_rng(0))
    assert bfq.mode_coverage(x) > 0.97
    assert bfq.mode_coverage(np.zeros((10, 2))) == 0.0
    y = bfq.toy_samples("bandit", 4000, np.random.default_rng(1))
    assert bfq.sliced_w2(x, y) < bfq.sliced_w2(x, np.zeros((100, 2)))
    with pytest.raises(ValueError):
        bfq.sliced_w2(x, np.full((3, 2), np.nan))


@pytest.mark.parametrize("toy", bfq.TOYS)
def test_toys_shapes(toy):
    x = bfq.toy_samples(toy, 50, np.random.default_rng(0))
    assert x.shape == (50, 2) and np.isfinite(x).all()


# --------------------------------------------------------------------------- theory
def test_gaussian_closed_form_identities():
    pi, v = th.flow_map_sym(), th.velocity_sym()
    assert sp.simplify(th.flow_map_sym(th.x, th.t, th.t) - th.x) == 0
    assert sp.simplify(sp.diff(pi, th.r).subs(th.r, th.t) - v) == 0
    assert sp.simplify(th.flow_map_sym(th.flow_map_sym(th.x, th.m, th.t), th.r, th.m) - pi) == 0


def test_euler_slopes_match_the_brief():
    assert [round(th.euler_slope(K, 0.5), 3) for K in (1, 2, 5, 10, 50)] == [0.0, 0.2, 0.369, 0.431, 0.485]
    with pytest.raises(ValueError):
        th.euler_slope(0, 0.5)


def test_fixed_point_identity_at_lambda_zero_and_recovery():
    assert th.linear_gaussian_fixed_point(0.0, iters=10, n=2000)["slope"] == pytest.approx(1.0)
    assert abs(th.linear_gaussian_fixed_point(0.5, iters=40, n=4000)["slope"] - 0.5) < 0.08
    with pytest.raises(ValueError):
        th.linear_gaussian_fixed_point(1.2)


# --------------------------------------------------------------------------- presets and experiments
def test_presets_have_the_same_keys():
    keys = {scale: set(p) for scale, p in PRESETS.items()}
    assert set(PRESETS) == {"smoke", "book", "full"}
    assert keys["smoke"] == keys["book"] == keys["full"]
    for p in PRESETS.values():
        assert set(p["rl_methods"]) <= set(bfq.METHODS)
        assert all(bfq.parse_dataset(n) for n in p["rl_datasets"])
        assert set(p["toy_methods"]) <= set(ex.TOY_METHODS)
    assert all(len(PRESETS[s]["rl_seeds"]) >= 3 and len(PRESETS[s]["toy_seeds"]) >= 3 for s in ("book", "full"))


def test_fit_toys_tiny():
    models = {k: ex.fit_toys(k, ["bandit"], [0], 3, 16, 50, (8,), pe_dim=8, curve_every=3) for k in ("bfq", "fm", "fql", "dql")}
    samples = ex.toy_sample_sets(models, ["bandit"], [0], 20)
    assert {"data", "BFQ-1", "FM-1", "FM-10", "FQL-1", "DQL-5"} <= set(samples)
    metrics = ex.toy_metrics(samples, ["bandit"], projections=16)
    assert metrics["w2"]["BFQ-1"].shape == (1, 1) and "BFQ-1" in metrics["coverage"]
    assert len(models["bfq"][2]) == 1


# --------------------------------------------------------------------------- revision (issue 47)
def test_library_losses_vanish_on_the_exact_gaussian_flow_map():
    """L_comp is zero on the exact flow map and L_bnd equals the irreducible CFM variance (pi/4 at s = 0.5)."""
    out = th.exact_map_losses(0.5, mu=0.3, n=200_000, seed=1)
    assert out["composition"] < 1e-20
    assert out["irreducible"] == pytest.approx(np.pi / 4, rel=1e-9)
    assert out["boundary"] == pytest.approx(out["irreducible"], rel=0.01)


def test_lambda_zero_is_unidentified_from_random_starts_but_half_is_not():
    """From the identity lambda = 0 stays there exactly; from random starts it does not find s, lambda = 0.5 does."""
    assert th.linear_gaussian_fixed_point(0.0, iters=5, n=1000)["slope"] == 1.0
    zero = th.random_start_slopes(0.0, 4, iters=60, n=3000)
    half = th.random_start_slopes(0.5, 3, iters=60, n=3000)
    assert np.max(np.minimum(np.abs(zero - 0.5), 10)) > 0.2
    assert np.max(np.abs(half - 0.5)) < 0.06
    with pytest.raises(ValueError, match="w0"):
        th.linear_gaussian_fixed_point(0.5, w0=np.zeros(3))


def test_meanflow_jvp_target_matches_finite_differences():
    torch.manual_seed(0)
    m = bfq.MeanFlowPolicy([0, 1], 2, 3, (16, 16), 8).double()
    z, v, s = torch.randn(2, 6, 2, dtype=torch.float64), torch.randn(2, 6, 2, dtype=torch.float64), torch.randn(2, 6, 3, dtype=torch.float64)
    t = torch.rand(2, 6, 1, dtype=torch.float64) * 0.5 + 0.3
    r = t / 2
    from torch.func import jvp
    f = lambda zz, tt: m._raw(zz, r, tt, s)
    _, d = jvp(f, (z, t), (v, torch.ones_like(t)))
    h = 1e-6
    fd = (f(z + h * v, t + h) - f(z - h * v, t - h)) / (2 * h)
    assert torch.allclose(d, fd, atol=1e-5)
    loss = bfq.MeanFlowPolicy([0], 2, 3, (16,), 8).meanflow_loss(torch.randn(1, 8, 2), torch.randn(1, 8, 3), torch.Generator().manual_seed(0))
    assert loss.shape == (1,) and torch.isfinite(loss).all()


def test_per_member_grad_clipping_is_independent_across_members():
    from icml26.bfq.nets import clip_grad_norm_members
    net = bfq.TwinCritic([0, 1], 2, 3, (8,))
    for p in net.parameters():
        p.grad = torch.ones_like(p)
    with torch.no_grad():
        for p in net.parameters():
            p.grad[1::2] *= 100.0          # rows of member 1 (rows 1 and 3 of the 2E twin rows) get huge gradients
    norms = clip_grad_norm_members(net.parameters(), 2, max_norm=1.0)
    assert norms[1] > norms[0] > 1.0
    after = torch.zeros(2)
    for p in net.parameters():
        after += p.grad.reshape(p.grad.shape[0], -1).pow(2).sum(1).view(-1, 2).sum(0)
    assert torch.allclose(after.sqrt(), torch.ones(2), atol=1e-4)
    with pytest.raises(ValueError):
        clip_grad_norm_members(net.parameters(), 2, 0.0)


def test_layer_norm_is_per_member():
    """An ensemble member's LayerNorm gain is its own: changing member 1's leaves member 0's output unchanged."""
    net = bfq.EnsembleMLP([0, 1], 3, (8,), 1, layer_norm=True)
    x = torch.randn(2, 5, 3)
    y0 = net(x)[0].clone()
    with torch.no_grad():
        net.norms[0].weight[1].mul_(3.0)
    assert torch.equal(net(x)[0], y0) and not torch.equal(net(x)[1], y0)


def test_per_member_eta_equals_separate_runs():
    """A tuning grid trained as one ensemble gives member e the actor loss of a run with that eta alone."""
    d = bfq.rollout_dataset("pendulum-medium", 2, 0)
    s, a = d.states[None, :16].expand(2, 16, 3), d.actions[None, :16].expand(2, 16, 1)
    both = bfq.BehaviorRegularizedAgent("bfq", [0, 0], d, bfq.AgentConfig(hidden=(16,), pe_dim=8, eta=(0.1, 1.0), mixing="sample"))
    for k, eta in enumerate((0.1, 1.0)):
        one = bfq.BehaviorRegularizedAgent("bfq", [0], d, bfq.AgentConfig(hidden=(16,), pe_dim=8, eta=eta, mixing="sample"))
        q_both = both.critic(s, a)[0, k]
        q_one = one.critic(s[:1], a[:1])[0, 0]
        assert torch.allclose(q_both, q_one)
    with torch.no_grad():
        both.gen.manual_seed(1)
        l = both.actor_loss(s, a)
    assert l.shape == (2,) and l[0] != l[1]
    with pytest.raises(ValueError, match="eta"):
        bfq.AgentConfig(eta=(0.1, -1.0))


def test_fql_follows_the_official_recipe():
    d = bfq.rollout_dataset("pendulum-medium", 2, 0)
    agent = bfq.BehaviorRegularizedAgent("fql", [0], d, bfq.AgentConfig(hidden=(16,), pe_dim=8))
    assert agent.critic.net.norms is not None                                  # critic LayerNorm
    plain = bfq.BehaviorRegularizedAgent("bfq", [0], d, bfq.AgentConfig(hidden=(16,), pe_dim=8))
    assert plain.critic.net.norms is None
    s, a = d.states[None, :8], d.actions[None, :8]

    def losses(**kw):
        ag = bfq.BehaviorRegularizedAgent("fql", [0], d, bfq.AgentConfig(hidden=(16,), pe_dim=8, **kw))
        with torch.no_grad():
            ag.gen.manual_seed(3); l1 = ag.actor_loss(s, a)
            ag.critic.net.layers[-1].weight.mul_(10); ag.critic.net.layers[-1].bias.mul_(10)
            ag.gen.manual_seed(3); l10 = ag.actor_loss(s, a)
        return l1, l10

    assert torch.allclose(*losses(), atol=1e-6)                  # README advice: -Q / sg(E|Q|), invariant to Q's scale
    assert not torch.allclose(*losses(fql_normalize_q=False))    # the code's default (paper's D4RL runs): it is not


def test_dql_uses_ema_actor_clipping_and_q_selection():
    d = bfq.rollout_dataset("pendulum-medium", 2, 0)
    cfg = bfq.AgentConfig(hidden=(16,), pe_dim=8, batch=16, dql_ema_start=2, dql_ema_every=1, dql_eval_samples=7)
    agent = bfq.BehaviorRegularizedAgent("dql", [0, 1], d, cfg)
    init = [p.clone() for p in agent.actor_target.parameters()]
    agent.update(); agent.update()
    assert all(torch.equal(p, q) for p, q in zip(init, agent.actor_target.parameters()))   # before dql_ema_start
    agent.update()
    assert not all(torch.equal(p, q) for p, q in zip(init, agent.actor_target.parameters()))
    acts = agent.act(d.states[None, :5].expand(2, 5, 3).contiguous(), torch.Generator().manual_seed(0))
    assert acts.shape == (2, 5, 1) and acts.abs().max() <= 1


def test_bandit_dataset_and_evaluation():
    data = bfq.bandit_dataset(400, 0)
    assert data.state_dim == 1 and data.action_dim == 2 and bool((data.dones == 1).all())
    assert np.isclose(bfq.bandit_reward(np.array([[0.8, 0.8]]))[0], 1.0)
    assert bfq.bandit_reward(np.zeros((1, 2)))[0] < 1e-6
    env = gym.make("Bandit4-v0")
    env.reset(seed=0)
    assert env.step(np.array([0.8, 0.8], np.float32))[1] == pytest.approx(1.0)
    bc = bfq.BehaviorRegularizedAgent("bc", [0], data, bfq.AgentConfig(hidden=(16,), batch=64))
    for _ in range(150):
        bc.update()
    assert bfq.evaluate_bandit(bc, 200, 0)[0] < 0.05                 # BC averages the modes: no reward


def test_grid_selection_uses_separate_episodes():
    d = bfq.bandit_dataset(300, 0)
    out = ex.train_grid_and_score("bfq", d, [0, 1], (0.1, 1.0), 3, bfq.AgentConfig(hidden=(8,), pe_dim=8, batch=16), {}, 2,
                                  curve_points=3, curve_episodes=1)
    assert out["value"] in (0.1, 1.0) and out["score"].shape == (2,) and out["all_scores"].shape == (2, 2)
    assert out["curve"].shape == (2, 3) and out["curve_steps"] == [1, 2, 3]
    with pytest.raises(ValueError, match="knob"):
        ex.train_grid_and_score("bc", d, [0], (0.1,), 1, bfq.AgentConfig(hidden=(8,)), {}, 1)


# --------------------------------------------------------------------------- revision 2 (issue 47, second review)
def test_curve_marks_put_the_tail_points_in_the_judged_fifth():
    from icml26.convergence import tail_improvement
    for steps, points, tail in ((600, 14, 7), (100, 8, 4), (2000, 16, 8)):
        marks = ex.curve_marks(steps, points, tail)
        assert len(marks) == points and marks[-1] == steps and marks == sorted(set(marks))
        assert tail_improvement(marks, np.zeros(len(marks))).tail_points == tail
    with pytest.raises(ValueError):
        ex.curve_marks(10, 3, 4)


def test_gate_resolution_is_the_rules_power():
    from icml26.convergence import TrainingCurve
    steps = ex.curve_marks(600, 14, 7)
    rng = np.random.default_rng(0)
    quiet = TrainingCurve.build("q", steps, 50 + 0.1 * rng.standard_normal((3, len(steps))), minimize=False, atol=2.0)
    loud = TrainingCurve.build("l", steps, 50 + 20 * rng.standard_normal((3, len(steps))), minimize=False, atol=2.0)
    assert 2.0 < ex.gate_resolution(quiet) < 3.0 < ex.gate_resolution(loud)


def test_q_select_keeps_the_best_candidate_and_leaves_deterministic_actors_alone():
    d = bfq.bandit_dataset(200, 0)
    cfg = bfq.AgentConfig(hidden=(16,), pe_dim=8, batch=32)
    agent = bfq.BehaviorRegularizedAgent("bfq", [0, 1], d, cfg)
    s = torch.ones(2, 3, 1)
    picked = agent.q_select(s, torch.Generator().manual_seed(4), 7)
    g = torch.Generator().manual_seed(4)
    cand = torch.clamp(agent.policy_action(s.repeat_interleave(7, dim=1), g), -1, 1)
    q = agent.critic_target(s.repeat_interleave(7, dim=1), cand).min(0).values.view(2, 3, 7)
    best = cand.view(2, 3, 7, 2).gather(2, q.argmax(-1)[..., None, None].expand(2, 3, 1, 2)).squeeze(2)
    assert torch.equal(picked, best)
    td3 = bfq.BehaviorRegularizedAgent("td3bc", [0, 1], d, cfg)
    assert torch.allclose(td3.q_select(s, torch.Generator(), 5), td3.act(s, torch.Generator()), atol=1e-6)
    bc = bfq.BehaviorRegularizedAgent("bc", [0], d, cfg)
    assert np.allclose(bfq.evaluate_bandit(bc, 16, 0, select=5), bfq.evaluate_bandit(bc, 16, 0))
    with pytest.raises(ValueError):
        agent.q_select(s, torch.Generator(), 0)


def test_scaled_dql_ema_keeps_the_official_share():
    assert bfq.scaled_dql_ema(10**6) == dict(dql_ema_start=1000, dql_ema_every=1)
    assert bfq.scaled_dql_ema(600) == dict(dql_ema_start=1, dql_ema_every=1)
    with pytest.raises(ValueError):
        bfq.scaled_dql_ema(0)
