"""Unit tests of icml26.dsac_aid: environments, batched nets, losses, agents against SB3 / torch peers, bad input."""
from __future__ import annotations

import math
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
import torch

from icml26.dsac_aid import (
    AGENTS, PAPER_BETA_EVENTS, PRESETS, RELEASED, BatchedAgent, BatchedMLP, BatchedReplay, JACKPOT_ENV_ID, JackpotLine,
    NoisyReward, OfficialState, agent_config, aid_lcb, aid_loss, aid_release_loss, beta_events, dsact_loss,
    ensemble_uncertainty, epistemic_lcb, events_scaled_beta_lr, impulse, make_jackpot, official_behaviour_loss,
    official_beta_trainer, official_critic_loss, official_policy_loss, run_jackpot, soft_mc_bias, toy_config, train,
    true_q,
)
from icml26.dsac_aid.training import to_env_action


@pytest.fixture(autouse=True, scope="module")
def _one_compute_thread():
    """The chapter computes on one torch thread (`icml26.chapter.COMPUTE_THREADS`); the tests do too: on a loaded
    2-core machine two threads made the small batched updates ~15x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# --------------------------------------------------------------------------- environments

def test_jackpot_passes_gymnasium_and_sb3_env_checkers():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    assert JACKPOT_ENV_ID in gym.registry
    check_env(gym.make(JACKPOT_ENV_ID).unwrapped)
    sb3_check_env(make_jackpot("treasure"), warn=False)


def test_jackpot_dynamics_rewards_and_true_q():
    env = make_jackpot("trap")
    env.reset(seed=0)
    env._x = 0.0
    rewards = [env.step(np.array([-1.0], np.float32))[1] for _ in range(5)]
    assert rewards == [0.0, 0.0, 0.0, 1.0, 1.0]               # bank reached at the 4th step
    assert env.reward_std == pytest.approx(math.sqrt(0.7 * 6.3))
    # jackpot draws: mean m, values in {0, J}
    env._x = 0.9
    draws = np.array([env.step(np.array([1.0], np.float32))[1] for _ in range(20000)])
    assert set(np.unique(draws)) <= {0.0, 7.0} and draws.mean() == pytest.approx(0.7, abs=0.05)
    left = lambda x: (-np.ones_like(x), np.zeros_like(x))
    q = true_q(env, np.zeros(1), -np.ones(1), left, gamma=0.9)
    assert q[0] == pytest.approx(0.9**3 / 0.1, rel=1e-6)      # sum_{t>=3} gamma^t = 7.29
    right = lambda x: (np.ones_like(x), np.zeros_like(x))
    assert true_q(make_jackpot("treasure"), np.zeros(1), np.ones(1), right, 0.9)[0] == pytest.approx(1.4 * 7.29, rel=1e-3)


@pytest.mark.parametrize("kwargs", [dict(jackpot=0.0), dict(jackpot=-1.0), dict(mean=0.0), dict(mean=8.0),
                                    dict(bank_edge=0.5, jackpot_edge=0.4), dict(step_size=0.0), dict(horizon=0)])
def test_jackpot_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        JackpotLine(**kwargs)


def test_noisy_reward_keeps_clean_reward_and_unit_variance():
    env = NoisyReward(gym.make("Pendulum-v1"), sigma=1.0)
    env.reset(seed=3)
    noise = []
    for _ in range(3000):
        _, r, term, trunc, info = env.step(env.action_space.sample())
        noise.append(r - info["clean_reward"])
        if term or trunc:
            env.reset()
    assert np.var(noise) == pytest.approx(1.0, abs=0.25) and abs(np.mean(noise)) < 0.1
    with pytest.raises(ValueError):
        NoisyReward(gym.make("Pendulum-v1"), sigma=-0.5)


# --------------------------------------------------------------------------- nets

@pytest.mark.parametrize("norm", [True, False])
def test_batched_mlp_equals_vmap_over_stacked_modules(norm):
    from torch.func import functional_call, stack_module_state

    net = BatchedMLP(5, 3, (32, 32), 2, norm=norm, activation="relu" if norm else "gelu", init="orthogonal" if norm else "torch",
                     generator=torch.Generator().manual_seed(0))
    mods = [net.member_as_sequential(e) for e in range(5)]
    params, buffers = stack_module_state(mods)
    base = mods[0]
    x = torch.randn(5, 7, 3)
    ref = torch.vmap(lambda p, b, xi: functional_call(base, (p, b), (xi,)))(params, buffers, x)
    assert torch.allclose(net(x), ref, atol=1e-5)
    with pytest.raises(ValueError):
        net(torch.randn(4, 7, 3))


# --------------------------------------------------------------------------- losses

def test_uncertainty_uses_ddof1_and_lcb_special_cases():
    g = torch.Generator().manual_seed(1)
    q, s = torch.randn(2, 4, 6, generator=g), torch.rand(2, 4, 6, generator=g) + 0.1
    ue, ua = ensemble_uncertainty(q, s)
    assert torch.allclose(ue, q.var(dim=1, unbiased=True)) and torch.allclose(ua, (s**2).mean(1))
    mix_var = ua + ((q - q.mean(1, keepdim=True)) ** 2).mean(1)          # law of total variance
    assert torch.allclose(mix_var, ua + 3 / 4 * ue, atol=1e-6)
    assert torch.allclose(aid_lcb(q, s, 0.71, 0.0), epistemic_lcb(q, 0.71), atol=1e-5)
    assert torch.allclose(aid_lcb(q, s, 0.0, 0.0), q.mean(1), atol=1e-5)
    with pytest.raises(ValueError):
        ensemble_uncertainty(q[:, :1], s[:, :1])


def test_dsact_loss_without_clipping_has_gaussian_nll_gradients():
    g = torch.Generator().manual_seed(2)
    q = torch.randn(1, 2, 16, generator=g, dtype=torch.float64).requires_grad_(True)
    sig = (torch.rand(1, 2, 16, generator=g, dtype=torch.float64) + 0.5).requires_grad_(True)
    y = torch.randn(1, 1, 16, generator=g, dtype=torch.float64) * 2
    ours = dsact_loss(q, sig, y, y.expand_as(q), torch.ones(1, 2, 1, dtype=torch.float64), eps=0.0,
                      scale=torch.ones((), dtype=torch.float64)).sum()
    gq, gs = torch.autograd.grad(ours, (q, sig))
    q2, s2 = q.detach().clone().requires_grad_(True), sig.detach().clone().requires_grad_(True)
    nll = torch.nn.GaussianNLLLoss(reduction="sum", eps=1e-12)(q2, y.expand_as(q2), s2**2) / 16
    rq, rs = torch.autograd.grad(nll, (q2, s2))
    assert torch.allclose(gq, rq, atol=1e-10) and torch.allclose(gs, rs, atol=1e-10)


# --------------------------------------------------------------------------- SAC against stable-baselines3

def test_sac_path_matches_stable_baselines3_sac():
    from stable_baselines3 import SAC
    from stable_baselines3.common.type_aliases import ReplayBufferSamples

    env = make_jackpot("trap")
    torch.manual_seed(0)
    model = SAC("MlpPolicy", env, policy_kwargs=dict(net_arch=[32, 32]), learning_rate=3e-4, batch_size=16, gamma=0.9,
                tau=0.005, seed=0, device="cpu")
    ours = BatchedAgent(agent_config("SAC", hidden=(32, 32), batch_size=16, gamma=0.9, lr=3e-4, alpha0=1.0,
                                     reward_scale=1.0), 1, 1, 1, seed=0)
    assert ours.cfg.activation == "relu" and not ours.cfg.norm
    pol = model.policy

    def load_critic(dst: BatchedMLP, src):
        for i, qf in enumerate(src.q_networks):
            dst.load_from_linears(i, [m for m in qf if isinstance(m, torch.nn.Linear)])

    load_critic(ours.critic, pol.critic)
    load_critic(ours.critic_target, pol.critic_target)
    head = torch.nn.Linear(32, 2)
    with torch.no_grad():
        head.weight.copy_(torch.cat([pol.actor.mu.weight, pol.actor.log_std.weight]))
        head.bias.copy_(torch.cat([pol.actor.mu.bias, pol.actor.log_std.bias]))
    ours.actor.load_from_linears(0, [m for m in pol.actor.latent_pi if isinstance(m, torch.nn.Linear)] + [head])
    with torch.no_grad():
        ours.log_alpha.copy_(model.log_ent_coef.detach())

    g = torch.Generator().manual_seed(5)
    B = 16
    obs = torch.rand(B, 1, generator=g) * 2 - 1
    nxt = (obs + 0.2 * (torch.rand(B, 1, generator=g) * 2 - 1)).clamp(-1, 1)
    act = torch.rand(B, 1, generator=g) * 2 - 1
    rew = torch.randint(0, 2, (B, 1), generator=g).float() * 7
    done = torch.zeros(B, 1)
    batch = {"obs": obs[None], "act": act[None], "rew": rew.T, "next_obs": nxt[None], "done": done.T}
    torch.manual_seed(11)
    noise = {"pi": torch.randn(1, B, 1), "next": torch.randn(1, B, 1)}     # SB3's draw order: pi(s), then pi(s')
    out = ours.losses(batch, noise)
    # SB3's critic target with its own networks and the same noise
    with torch.no_grad():
        torch.manual_seed(11)
        pol.actor.action_log_prob(obs)
        a2, lp2 = pol.actor.action_log_prob(nxt)
        qn = torch.cat(pol.critic_target(nxt, a2), dim=1).min(dim=1, keepdim=True).values
        y_sb3 = rew + 0.9 * (1 - done) * (qn - model.log_ent_coef.exp() * lp2.reshape(-1, 1))
    assert torch.allclose(out["y_q"][0], y_sb3[:, 0], atol=1e-6)
    # SB3's own train step on the same batch and noise: its logged losses and its updated critic
    model.replay_buffer.sample = lambda *a, **k: ReplayBufferSamples(obs, act, nxt, done, rew)
    from stable_baselines3.common.logger import configure

    model.set_logger(configure(folder=None, format_strings=[]))
    model._n_updates = 0
    torch.manual_seed(11)
    model.train(gradient_steps=1, batch_size=B)
    logged = dict(model.logger.name_to_value)
    assert out["critic"].item() == pytest.approx(logged["train/critic_loss"], abs=1e-6)
    assert out["alpha"].item() == pytest.approx(logged["train/ent_coef_loss"], abs=1e-6)
    ours.critic_opt.zero_grad()
    out["critic"].backward()
    ours.critic_opt.step()
    sb3_w = pol.critic.q_networks[1][2].weight
    assert torch.allclose(ours.critic.weights[1][1].T, sb3_w, atol=1e-6)
    # SB3's actor loss uses the critic after its step: ours with the same critic and noise
    out2 = ours.losses(batch, noise)
    assert out2["actor"].item() == pytest.approx(logged["train/actor_loss"], abs=1e-6)


def test_sb3_sac_trains_on_jackpot_line():
    from stable_baselines3 import SAC

    model = SAC("MlpPolicy", make_jackpot("trap"), policy_kwargs=dict(net_arch=[16, 16]), learning_starts=50,
                batch_size=32, seed=0, device="cpu")
    model.learn(200)
    assert model.num_timesteps == 200 and model.replay_buffer.size() == 200


# --------------------------------------------------------------------------- agents, training, bad input

@pytest.mark.parametrize("overrides", [dict(n_critics=1), dict(lam_l=-0.1), dict(lam_u=-1.0), dict(beta0=-0.1),
                                       dict(gamma=1.0), dict(gamma=-0.1), dict(loss="nll")])
def test_agent_config_rejects_bad_hyperparameters(overrides):
    with pytest.raises(ValueError):
        BatchedAgent(agent_config("DSAC-AID", hidden=(16, 16), **overrides), 1, 1, 2)


def test_training_rejects_bad_intervals_spaces_and_rewards():
    ag = BatchedAgent(agent_config("DSAC-T", hidden=(16, 16), batch_size=8), 1, 1, 1)
    with pytest.raises(ValueError):
        train(ag, lambda s: make_jackpot("trap"), [0], 20, warmup=5, eval_every=0)
    with pytest.raises(ValueError):
        train(ag, lambda s: make_jackpot("trap"), [0], 20, warmup=5, eval_every=5, dense_every=0, dense_until=10)
    with pytest.raises(TypeError):
        train(ag, lambda s: gym.make("CartPole-v1"), [0], 20, warmup=5, eval_every=5)
    buf = BatchedReplay(1, 4, 1, 1)
    with pytest.raises(ValueError):
        buf.add(np.zeros((1, 1)), np.zeros((1, 1)), [float("nan")], np.zeros((1, 1)), [0.0])
    with pytest.raises(ValueError):
        buf.add(np.zeros((1, 1)), np.zeros((1, 1)), [float("inf")], np.zeros((1, 1)), [0.0])
    with pytest.raises(ValueError):
        make_jackpot("casino")


def test_beta_is_one_sided_frozen_early_and_clamped():
    c = agent_config("DSAC-AID", hidden=(16, 16), q_bias_threshold=-20.0, beta0=0.1, beta_lr=5e-3)
    ag = BatchedAgent(c, 1, 1, 4)
    beta = ag.update_beta(np.array([+1.0, -1.0, -5.0, 0.0]))     # frozen: every event counts as 0, beta stays
    assert np.allclose(beta, 0.1)
    assert ag.beta_frozen.tolist() == [False, False, True, False]  # -5 <= 0.2 * (-20): seed 2 stays frozen
    beta = ag.update_beta(np.array([+1.0, -1.0, -3.0, 0.0]))     # b > 0: none; b = -1: a step down; seed 2 opens
    assert beta[0] == pytest.approx(0.1) and beta[1] < 0.1 and beta[2] == pytest.approx(0.1) and beta[3] == pytest.approx(0.1)
    for _ in range(60):
        beta = ag.update_beta(np.array([1.0, -1.0, -5.0, 0.0]))
    assert beta[1] == 0.0 and beta[2] == 0.0 and beta[0] == pytest.approx(0.1)      # clamped at 0, never raised
    fixed = BatchedAgent(agent_config("AID beta fixed", hidden=(16, 16)), 1, 1, 1)
    assert fixed.update_beta(np.array([-3.0]))[0] == pytest.approx(0.2)


def test_beta_loop_equals_the_official_trainer_with_torch_adam():
    """Per seed, over 40 events with both signs, frozen starts and a moving normaliser Ubar: our vectorised beta
    feedback equals the official trainer's loop with torch.optim.Adam (`official_beta_trainer`)."""
    rng = np.random.default_rng(0)
    S, K = 3, 40
    b = rng.normal(-0.5, 1.0, size=(K, S))
    b[0] = [-30.0, 0.5, -2.0]                          # seed 0 starts below 0.2 q_thr: frozen for a while
    b[1, 0] = -25.0
    u = np.abs(rng.normal(0.3, 0.2, size=(K, S)))     # Ubar below and above the 0.1 floor
    c = agent_config("DSAC-AID", hidden=(16, 16), q_bias_threshold=-100.0, beta0=0.2, beta_lr=0.02)
    ag = BatchedAgent(c, 1, 1, S)
    ours = []
    for k in range(K):
        ag.u_bar = u[k].copy()
        ours.append(ag.update_beta(b[k]))
    ours = np.array(ours)
    for s in range(S):
        ref = official_beta_trainer(list(b[:, s]), list(u[:, s]), beta0=0.2, lr=0.02, q_bias_lower_threshold=-100.0,
                                    freeze_early_beta=True)
        np.testing.assert_allclose(ours[:, s], ref, atol=1e-9)
    assert ours.min() >= 0 and ours[-1].max() < 0.2


def test_beta_rate_scales_with_the_runs_events():
    toy = PRESETS["book"]["toy"]
    n = beta_events(toy["steps"], toy["warmup"], toy["eval_every"])
    assert n == sum(1 for t in range(toy["eval_every"] - 1, toy["steps"], toy["eval_every"]) if t >= toy["warmup"])
    assert PAPER_BETA_EVENTS == 600
    aid, fixed = toy_config("DSAC-AID", toy), toy_config("AID beta fixed", toy)
    assert aid.beta_lr == pytest.approx(RELEASED["gym-humanoid (1ea49cae)"]["beta_lr"] * 600 / n)
    assert fixed.beta_lr == RELEASED["gym-humanoid (1ea49cae)"]["beta_lr"]     # beta never moves there
    assert aid.ema_rate == aid.tau == toy["tau"]                                 # tau_b = tau, as in the code
    with pytest.raises(ValueError):
        events_scaled_beta_lr(5e-4, 0)


@pytest.mark.parametrize("name", ["gym-humanoid (1ea49cae)", "gym-ant (1ea49cae)"])
def test_actor_losses_equal_the_official_policy_and_behaviour_losses(name):
    ac = agent_config("DSAC-AID", hidden=(16, 16), batch_size=32, **RELEASED[name])
    ag = BatchedAgent(ac, 3, 2, 1, seed=5)
    g = torch.Generator().manual_seed(6)
    B = 32
    batch = {"obs": torch.randn(1, B, 3, generator=g), "act": torch.rand(1, B, 2, generator=g) * 2 - 1,
             "rew": torch.randn(1, B, generator=g), "next_obs": torch.randn(1, B, 3, generator=g),
             "done": torch.zeros(1, B)}
    noise = {"next": torch.randn(1, B, 2, generator=g), "z": torch.randn(1, 4, B, generator=g),
             "pi": torch.randn(1, B, 2, generator=g), "pib": torch.randn(1, B, 2, generator=g)}
    ag.beta[:] = 0.13
    out = ag.losses(batch, noise)
    a_pi, lp = ag.sample(ag.actor, batch["obs"], noise["pi"])
    q, _ = ag.critic_values(batch["obs"], a_pi, detach_params=True)
    ref = official_policy_loss([q[0, i] for i in range(4)], lp[0], alpha=float(ag.alpha[0]), lambda_lower=ac.lam_l)
    assert float(out["actor"].detach()) == pytest.approx(float(ref.detach()), rel=1e-6, abs=1e-6)
    for x, y in zip(torch.autograd.grad(out["actor"], list(ag.actor.parameters()), retain_graph=True),
                    torch.autograd.grad(ref, list(ag.actor.parameters()))):
        assert torch.allclose(x, y, rtol=1e-5, atol=1e-6)
    a_b, lpb = ag.sample(ag.behaviour, batch["obs"], noise["pib"])
    qb, sb = ag.critic_values(batch["obs"], a_b, detach_params=True)
    refb = official_behaviour_loss([qb[0, i] for i in range(4)], [sb[0, i] for i in range(4)], lpb[0],
                                   alpha=float(ag.alpha[0]), beta=0.13, lambda_upper=ac.lam_u)
    assert float(out["behaviour"].detach()) == pytest.approx(float(refb.detach()), rel=1e-6, abs=1e-6)
    for x, y in zip(torch.autograd.grad(out["behaviour"], list(ag.behaviour.parameters()), retain_graph=True),
                    torch.autograd.grad(refb, list(ag.behaviour.parameters()))):
        assert torch.allclose(x, y, rtol=1e-5, atol=1e-6)


def test_agents_have_the_papers_structure():
    aid = BatchedAgent(agent_config("DSAC-AID", hidden=(16, 16)), 1, 1, 2)
    assert aid.behaviour is not None and aid.N == 4 and aid.cfg.next_action == "target"
    rel = RELEASED["gym-humanoid (1ea49cae)"]
    assert all(getattr(aid.cfg, k) == v for k, v in rel.items() if k not in ("hidden",))   # the released default
    assert BatchedAgent(agent_config("AID w/o pi_b", hidden=(16, 16)), 1, 1, 2).behaviour is None
    assert agent_config("DSAC-T").n_critics == 2
    assert set(AGENTS) >= {"SAC", "DSAC-T", "DSAC-AID", "AID w/o pi_b", "AID beta fixed", "AID beta=0"}
    zero = agent_config("AID beta=0")
    assert zero.beta0 == 0 and not zero.adaptive_beta and zero.lam_u == aid.cfg.lam_u > 0   # only the aleatoric term differs
    # the exploit actor's mode is what `act(deterministic=True)` returns
    a = aid.act(np.zeros((2, 1)), deterministic=True)
    assert a.shape == (2, 1) and np.all(np.abs(a) <= 1)


def test_impulse_criterion():
    steps = np.arange(1, 11) * 100
    q = np.full((10, 3), 6.0)
    surge = np.array([-1, 0.5, 2.0, 1.5, 0.4, 0.2, 0.1, 0.0, 0.0, 0.0])
    late = np.array([-1, -0.5, 0, 0, 0, 0, 0, 0.5, 1.0, 2.0])
    flat = np.full(10, 0.1)
    r = impulse(steps, np.stack([surge, late, flat], 1), q, 1000)
    assert r["impulse"].tolist() == [True, False, False] and r["b_max"][0] == 2.0
    # amplitude = peak of the first half - mean after 75 %: a constant offset cancels, a late rise is negative
    assert r["amplitude"][0] == pytest.approx(2.0 - 0.0) and r["amplitude"][2] == pytest.approx(0.0)
    assert r["amplitude"][1] == pytest.approx(0.0 - np.mean([0.5, 1.0, 2.0]))


def test_short_runs_are_deterministic_and_record_diagnostics():
    cfg = {**PRESETS["smoke"]["toy"], "steps": 120, "warmup": 40, "eval_every": 60, "mc_rollouts": 4}
    r1 = run_jackpot("DSAC-AID", ("trap", "treasure"), 1, cfg, show_progress=False)
    # the same run with measurement-only events on a dense early grid: at the regular events it is the same run
    # (deterministic, and the extra evaluations move neither beta nor any random stream of the training)
    r2 = run_jackpot("DSAC-AID", ("trap", "treasure"), 1, {**cfg, "dense_every": 20, "dense_until": 100}, show_progress=False)
    assert r2.log.steps == [60, 80, 100, 120]
    regular = r2.log.series("beta_event")[:, 0] == 1
    assert regular.tolist() == [True, False, False, True] and np.all(r1.log.series("beta_event") == 1)
    for key in ("bias", "bias_jackpot", "q_true", "sqrt_u_epi_jackpot", "sqrt_u_ale_jackpot", "end_zone",
                "beta", "mc_bias", "mc_bias_traj_clean"):
        np.testing.assert_array_equal(r1.log.series(key), r2.log.series(key)[regular])
        assert np.all(np.isfinite(r2.log.series(key)))
    assert r1.log.series("bias").shape == (2, 2)
    np.testing.assert_array_equal(r2.log.series("beta")[1], r2.log.series("beta")[0])   # no beta step at a dense event


def test_soft_mc_bias_truncation_term():
    """A constant critic Q_hat = c on a stretch with zero reward (Q^pi = 0): the evaluator's target bootstraps
    G_{T-1} = c, so G_t = gamma^(T-1-t) c and the bias is c (1 - gamma^(T-1-t)) (Theory: the truncation term)."""
    cfg = agent_config("DSAC-T", hidden=(16, 16), reward_scale=1.0, activation="relu")
    ag = BatchedAgent(cfg, 1, 1, 1)
    c = 2.5
    with torch.no_grad():
        for p in ag.critic.parameters():
            p.zero_()
        ag.critic.biases[-1][..., 0] = c
        ag.log_alpha.fill_(-40.0)
    env_fn = lambda s: make_jackpot("trap", bank_edge=-0.99, jackpot_edge=0.99)   # 3 steps move |x| <= 0.65
    T, k = 3, 2
    r = soft_mc_bias(ag, env_fn, [0], 1, k, T)
    expected = np.mean([c * (1 - cfg.gamma ** (T - 1 - t)) for t in range(k)])
    assert r["bias"][0] == pytest.approx(expected, abs=1e-5) and r["bias_clean"][0] == pytest.approx(expected, abs=1e-5)


def test_action_rescaling():
    assert to_env_action(np.array([-1.0, 0.0, 1.0]), np.array([-2.0]), np.array([2.0])).tolist() == [-2.0, 0.0, 2.0]


def test_presets_have_the_same_keys_at_every_scale():
    keys = {s: set(PRESETS[s]) - {"gpu"} for s in PRESETS}
    assert PRESETS["full"]["seeds"] >= 10     # yes/no outcomes at full
    assert keys["smoke"] == keys["book"] == keys["full"]
    for k in ("toy", "pendulum", "hopper"):
        assert set(PRESETS["smoke"][k]) == set(PRESETS["book"][k]) == set(PRESETS["full"][k])
    full = PRESETS["full"]
    # review of 5287791: Hopper (C8) left CPU full for the gpu variant (>= 3 paired seeds, 1e5 steps); C7 with 10 seeds
    assert full["hopper"]["steps"] == 0 and full["hopper_seeds"] >= 3 and full["pendulum_seeds"] >= 10
    assert full["gpu"]["hopper"]["steps"] >= 100_000
    # the redesigned toy: pervasive noise everywhere, AID beta fixed on the trap at book and full (C4d)
    assert all(s["toy"]["step_noise"] > 0 for s in PRESETS.values())
    assert "AID beta fixed" not in PRESETS["book"]["treasure_only"] + full["treasure_only"]
    assert PRESETS["smoke"]["hopper"]["steps"] > 0 and PRESETS["smoke"]["hopper_seeds"] >= 2   # the C8 code path runs in CI
    for s in PRESETS.values():
        # treasure-only agents serve only treasure claims: never the trap claims' agents (C3-C5, C4b's AID beta=0)
        assert set(s["treasure_only"]) <= set(s["agents"]) - {s["control_agent"], "DSAC-AID", "AID beta=0"}
        assert set(s["sweep_agents"]) <= {s["control_agent"]} | set(s["agents"])


# --------------------------------------------------------------------------- review v2: loss, fidelity, evaluator, controls

def _fit_constant(loss_fn, y: torch.Tensor, steps: int = 3000, lr: float = 0.02):
    """Fit a constant (Q, sigma) to targets y with a critic loss (sigma_bar = the current sigma, no clip)."""
    q = torch.zeros(1, 1, 1, requires_grad=True)
    rho = torch.full((1, 1, 1), 0.5, requires_grad=True)
    opt = torch.optim.Adam([q, rho], lr=lr)
    for _ in range(steps):
        sigma = torch.nn.functional.softplus(rho) + 1e-5
        qq, ss = q.expand(1, 1, y.shape[-1]), sigma.expand(1, 1, y.shape[-1])
        loss = loss_fn(qq, ss, y.view(1, 1, -1), y.view(1, 1, -1), sigma.detach(), torch.zeros(1, y.shape[-1]),
                       torch.zeros(1, 1, 1)).sum()
        opt.zero_grad(); loss.backward(); opt.step()
    return float(q.detach()), float(torch.nn.functional.softplus(rho.detach()))


def test_released_loss_fits_the_mean_and_sd_of_a_7_bernoulli_reward_huber_does_not():
    g = torch.Generator().manual_seed(0)
    y = 7.0 * (torch.rand(4000, generator=g) < 0.2).float()        # mean 1.4, sd 2.8
    m, sd = float(y.mean()), float(y.std())
    q, s = _fit_constant(lambda *a: aid_release_loss(*a, eps=0.1), y)
    assert q == pytest.approx(m, abs=0.1) and s == pytest.approx(sd, rel=0.1)
    qh, sh = _fit_constant(lambda *a: aid_loss(*a, eps=0.1, delta=1.0), y)
    assert qh == pytest.approx(0.2 / 0.8, abs=0.1)                  # the Huber location p/(1-p), not the mean
    assert sh < 0.6 * sd


@pytest.mark.parametrize("name", list(RELEASED))
def test_batched_critic_loss_equals_the_official_per_member_statement(name):
    ac = agent_config("DSAC-AID", hidden=(16, 16), batch_size=32, **RELEASED[name])
    ag = BatchedAgent(ac, 3, 2, 1, seed=3)
    g = torch.Generator().manual_seed(4)
    state = OfficialState([None] * ag.N)
    for _ in range(3):
        B = 32
        batch = {"obs": torch.randn(1, B, 3, generator=g), "act": torch.rand(1, B, 2, generator=g) * 2 - 1,
                 "rew": torch.randn(1, B, generator=g), "next_obs": torch.randn(1, B, 3, generator=g),
                 "done": (torch.rand(1, B, generator=g) < 0.1).float()}
        noise = {"next": torch.randn(1, B, 2, generator=g), "z": torch.randn(1, 4, B, generator=g),
                 "pi": torch.randn(1, B, 2, generator=g), "pib": torch.randn(1, B, 2, generator=g)}
        ag.beta[:] = 0.15
        out = ag.losses(batch, noise)
        with torch.no_grad():
            a2, lp2 = ag.sample(ag.actor_target, batch["next_obs"], noise["next"])
            qn, sn = ag.critic_values(batch["next_obs"], a2, target=True)
        q, s = ag.critic_values(batch["obs"], batch["act"])
        ref = official_critic_loss([q[0, i] for i in range(4)], [s[0, i] for i in range(4)], [qn[0, i] for i in range(4)],
                                   [sn[0, i] for i in range(4)], [noise["z"][0, i] for i in range(4)],
                                   batch["rew"][0] * ac.reward_scale, batch["done"][0], lp2[0], alpha=float(ag.alpha[0]),
                                   beta=0.15, gamma=ac.gamma, lambda_lower=ac.lam_l, tau_b=ac.ema_rate, state=state,
                                   use_huber_loss=ac.huber, homogeneous=ac.homogeneous_sigma,
                                   epi_step_scale=ac.epi_step_scale, delta=ac.huber_delta)
        assert float(out["critic"].detach()) == pytest.approx(float(ref.detach()), rel=1e-6, abs=1e-6)
        gs = torch.autograd.grad(out["critic"], list(ag.critic.parameters()), retain_graph=True)
        gr = torch.autograd.grad(ref, list(ag.critic.parameters()))
        for a, b in zip(gs, gr):
            assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)
        for i in range(4):
            assert float(ag.sigma_bar[0, i, 0]) == pytest.approx(float(state.mean_sigmas[i]), rel=1e-6)
        assert ag.u_bar[0] == pytest.approx(float(state.mean_uncertainty), rel=1e-5)
        ag.critic_opt.zero_grad(); out["critic"].backward(); ag.critic_opt.step()


def test_soft_mc_bias_evaluates_each_seed_over_its_own_episode():
    """Two seeds, one terminating after 2 steps: its bias must equal a single-seed run (no phantom steps)."""

    class Ends(JackpotLine):
        def __init__(self, end_at, **kw):
            super().__init__(**kw)
            self.end_at = end_at

        def step(self, action):
            o, r, term, trunc, info = super().step(action)
            return o, r, self._t >= self.end_at, trunc, info

    cfg = agent_config("DSAC-T", hidden=(16, 16), reward_scale=1.0)
    ag2, ag1 = BatchedAgent(cfg, 1, 1, 2, seed=1), BatchedAgent(cfg, 1, 1, 1, seed=1)
    ends = [10, 2]
    both = soft_mc_bias(ag2, lambda s: Ends(ends[s]), [0, 1], 1, 5, 10)
    # a single seed with the second seed's networks and termination
    ag1.critic.load_state_dict({k: v.reshape(2, -1, *v.shape[1:])[1] for k, v in ag2.critic.state_dict().items()})
    ag1.actor.load_state_dict({k: v[1:2] for k, v in ag2.actor.state_dict().items()})
    with torch.no_grad():
        ag1.log_alpha.copy_(ag2.log_alpha[1:2])
    one = soft_mc_bias(ag1, lambda s: Ends(2), [1], 1, 5, 10)
    assert both["bias"][1] == pytest.approx(one["bias"][0], abs=1e-5)


def test_planted_and_noise_free_variants():
    env = make_jackpot("planted", switch_step=3)
    env.reset(seed=0)
    assert env.current_mean == 2.8
    for _ in range(3):
        env.step(np.array([1.0], np.float32))
    assert env.current_mean == 0.7
    clean = make_jackpot("trap-clean")
    clean.reset(seed=0)
    clean._x = 0.9
    assert {clean.step(np.array([1.0], np.float32))[1] for _ in range(50)} == {0.7}


def test_agent_runs_on_the_chapter_device():
    from icml26 import device

    dev = device()
    ag = BatchedAgent(agent_config("DSAC-AID", hidden=(16, 16), batch_size=8), 1, 1, 2, device=dev)
    assert next(ag.critic.parameters()).device.type == dev.type
    buf = BatchedReplay(2, 16, 1, 1, device=dev)
    for _ in range(10):
        buf.add(np.zeros((2, 1)), np.zeros((2, 1)), [1.0, 0.0], np.zeros((2, 1)), [0.0, 0.0])
    ag.update(buf.sample(8, ag.gen))
    assert ag.act(np.zeros((2, 1))).shape == (2, 1)


def test_clipped_sigma_fixed_point_limits_and_clip_moment():
    """Without the clip (sigma_bar -> inf) the fixed point is T4's sqrt(Var r / (1 - gamma^2)); with it, the closed-form
    clipped second moment matches a Monte-Carlo estimate at the fixed point, and a smaller clip scale gives a smaller sigma."""
    from icml26.dsac_aid import clipped_sigma_fixed_point

    J, m, g = 7.0, 0.7, 0.9
    analytic = np.sqrt(m * (J - m) / (1 - g**2))
    assert clipped_sigma_fixed_point(J, m, g, 1e6) == pytest.approx(analytic, rel=1e-9)
    s = clipped_sigma_fixed_point(J, m, g, 0.2)
    rng = np.random.default_rng(0)
    n = 400_000
    r = J * (rng.random(n) < m / J)
    d = np.clip(r - m + g * s * rng.standard_normal(n), -0.6, 0.6)
    assert np.sqrt(np.mean(d**2)) == pytest.approx(s, rel=1e-2)
    assert clipped_sigma_fixed_point(J, m, g, 0.1) < s < clipped_sigma_fixed_point(J, m, g, 1.0) < analytic
    with pytest.raises(ValueError):
        clipped_sigma_fixed_point(J, m, g, 0.0)
