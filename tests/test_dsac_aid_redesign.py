"""dsac-aid, review of 5287791: the DSAC-T oracle (F2), paired seed rows, pervasive noise, the design calculation."""
import numpy as np
import pytest
import torch

from icml26.dsac_aid import (BatchedAgent, agent_config, analytic_sigma, clipped_sigma_fixed_point, dsact_fidelity_gap,
                             make_jackpot, run_jackpot, warmup_design)


def test_dsact_matches_independent_transcription_of_dsact_py():
    assert dsact_fidelity_gap(seed=3) <= 1e-6
    assert dsact_fidelity_gap(seed=8, batches=3) <= 1e-6


def test_rows_with_the_same_seed_start_identical_whatever_the_batch():
    a = BatchedAgent(agent_config("DSAC-AID", hidden=(8, 8)), 1, 1, 4, seed=1, row_seeds=[0, 1, 0, 1])
    b = BatchedAgent(agent_config("DSAC-AID", hidden=(8, 8)), 1, 1, 2, seed=99, row_seeds=[1, 0])
    N = a.N
    for net_a, net_b, k in ((a.critic, b.critic, N), (a.actor, b.actor, 1), (a.behaviour, b.behaviour, 1)):
        for wa, wb in zip([*net_a.weights, *net_a.biases], [*net_b.weights, *net_b.biases]):
            assert torch.equal(wa[0:k], wa[2 * k:3 * k])          # row 0 == row 2 (same seed)
            assert not torch.equal(wa[0:k], wa[k:2 * k])          # different seeds differ
            assert torch.equal(wa[0:k], wb[k:2 * k])              # independent of S and of the row order
    assert torch.equal(a.critic_target.weights[0], a.critic.weights[0])
    with pytest.raises(ValueError):
        BatchedAgent(agent_config("DSAC-T", hidden=(8,)), 1, 1, 2, row_seeds=[0])


def test_trap_and_trap_clean_rows_paired_in_run_jackpot():
    cfg = dict(hidden=[8, 8], batch=16, gamma=0.9, lr=3e-3, tau=0.05, reward_scale=0.1, alpha0=0.01, warmup=40,
               eval_every=20, mc_rollouts=2, mc_episodes=1, mc_first_steps=5, planted_switch=0.3, planted_small_switch=0.3,
               steps=40, step_noise=2.0)
    run = run_jackpot("DSAC-T", ("trap", "trap-clean"), 2, cfg, show_progress=False)
    # warm-up only (no update): both variants' rows of a seed keep identical weights and took identical actions
    w = run.model.critic.weights[0]
    N = run.model.N
    assert torch.equal(w[0:N], w[2 * N:3 * N]) and torch.equal(w[N:2 * N], w[3 * N:4 * N])


def test_pervasive_noise_is_zero_mean_and_shared_by_noisy_and_clean_jackpot():
    e1, e2 = make_jackpot("trap", step_noise=2.0), make_jackpot("trap-clean", step_noise=2.0)
    e1.reset(seed=5); e2.reset(seed=5)
    r1, r2 = [], []
    for _ in range(2000):
        r1.append(e1.step(np.array([-1.0]))[1]); r2.append(e2.step(np.array([-1.0]))[1])   # at the bank: no jackpot draw
        if e1._t >= e1.horizon:
            e1.reset(); e2.reset()
    assert np.allclose(r1, r2)
    assert abs(np.mean(r1[10:]) - 1.0) < 0.2 and 1.8 < np.std(r1[10:]) < 2.2
    with pytest.raises(ValueError):
        make_jackpot("trap", step_noise=-1.0)


def test_design_calculation_and_sigma_with_noise():
    rows = warmup_design([500], [7.0], reps=400, draws=100)
    assert 0.1 < rows[0]["p_beats_bank"] < 0.35 and rows[0]["gap"] == pytest.approx(3.0)
    assert analytic_sigma(7, 0.7, 0.9) == pytest.approx(4.82, abs=0.005)
    s = analytic_sigma(7, 0.7, 0.9, 2.0)
    assert clipped_sigma_fixed_point(7, 0.7, 0.9, 1e6, step_noise=2.0) == pytest.approx(s, rel=1e-6)
    assert clipped_sigma_fixed_point(7, 0.7, 0.9, 2.0 / np.sqrt(0.19), step_noise=2.0) / s > 0.85
    with pytest.raises(ValueError):
        warmup_design([100], [7.0], mean=1.5)


def test_dsact_fidelity_check_can_fail(monkeypatch):
    import icml26.dsac_aid.losses as L
    orig = L.dsact_loss
    monkeypatch.setattr(L, "dsact_loss", lambda *a, **k: orig(*a, **{**k, "eps": 0.2}))   # a wrong epsilon must show
    assert dsact_fidelity_gap(seed=3) > 1e-4


# second fix pass (book run at 95ab0cf): the surge-window statistic, its power, seed heads and labelled variants

def test_surge_overestimate_reads_the_window_positive_part():
    from icml26.dsac_aid import surge_overestimate
    steps = np.arange(100, 3001, 100)
    b = np.full((steps.size, 2), -5.0)
    inside = (steps >= 1000) & (steps <= 2000)
    b[inside, 0] = 3.0                     # an overestimate inside the window
    b[steps > 2000, 1] = 50.0              # a late drift outside it: ignored
    b[inside, 1] = -8.0                    # an underestimate counts 0, not -8
    out = surge_overestimate(steps, b, 3000)
    assert out[0] == pytest.approx(3.0) and out[1] == 0.0
    with pytest.raises(ValueError):
        surge_overestimate(steps, b[:, 0], 3000)
    with pytest.raises(ValueError):
        surge_overestimate(steps, b, 3000, window=(0.7, 0.6))
    with pytest.raises(ValueError):
        surge_overestimate(steps[:5], b[:5], 3000)      # fewer than 3 events in the window


def test_t_power_matches_a_simulation():
    from icml26.dsac_aid import t_power
    from scipy import stats
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 1.0, size=(20000, 12))
    m, s = x.mean(1), x.std(1, ddof=1)
    sim = np.mean(m - stats.t.ppf(0.975, 11) * s / np.sqrt(12) > 0)
    assert t_power(1.0, 1.0, 12) == pytest.approx(sim, abs=0.01)
    assert t_power(0.0, 1.0, 12) == pytest.approx(0.025, abs=1e-9)
    with pytest.raises(ValueError):
        t_power(1.0, 0.0, 12)


def test_head_keeps_the_first_seeds_of_every_variant_and_labelled_variants():
    cfg = dict(hidden=[8, 8], batch=16, gamma=0.9, lr=3e-3, tau=0.05, reward_scale=0.1, alpha0=0.01, warmup=40,
               eval_every=20, mc_rollouts=2, mc_episodes=1, mc_first_steps=5, planted_switch=0.3, planted_small_switch=0.3,
               steps=60, step_noise=2.0)
    run = run_jackpot("DSAC-T", ("trap", "trap@J=14"), 3, cfg, show_progress=False, env_kwargs={"trap@J=14": {"jackpot": 14.0}})
    assert run.variants == ["trap"] * 3 + ["trap@J=14"] * 3 and run.seeds == [0, 1, 2] * 2
    h = run.head(2)
    assert h.variants == ["trap"] * 2 + ["trap@J=14"] * 2 and h.seeds == [0, 1] * 2
    full = run.series("bias_jackpot", "trap@J=14")
    assert np.array_equal(h.series("bias_jackpot", "trap@J=14"), full[:, :2])
    assert np.array_equal(h.series("q_true_jackpot", "trap"), run.series("q_true_jackpot", "trap")[:, :2])
    with pytest.raises(ValueError):
        run.head(4)
    with pytest.raises(ValueError):
        run_jackpot("DSAC-T", ("trap", "trap"), 1, cfg, show_progress=False)
    with pytest.raises(ValueError):
        run_jackpot("DSAC-T", ("nope@J=3",), 1, cfg, show_progress=False)
