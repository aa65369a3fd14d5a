"""Unit tests of icml26.focalpolicy (DCT, losses, samplers, policies, env, data, runner, metrics, peers)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.focalpolicy import (
    PRESETS, ChunkedRunner, ChunkReach2D, ConsistencySampler, EnsembleChunkMLP, LASSampler, ReachConfig,
    collect_demos, dct_matrix, dct_ortho, experiments, fco_loss, fixed_point_one_step_std, freq_loss,
    las_quantiles, make_chunks, make_policy, metrics, train_policy,
)
from icml26.focalpolicy.experiments import VARIANTS


def _batch(B=8, T=12, Da=2, obs_dim=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"obs": torch.randn(B, 2, obs_dim, generator=g), "action": torch.randn(B, T, Da, generator=g)}


# --------------------------------------------------------------------------- DCT and the FCO

def test_dct_matches_torch_dct_and_scipy_float64():
    torch_dct = pytest.importorskip("torch_dct")
    import scipy.fft

    x = torch.randn(16, 12, 4, dtype=torch.float64)
    ours = dct_ortho(x)
    theirs = torch_dct.dct(x.transpose(1, 2), norm="ortho").transpose(1, 2)
    assert (ours - theirs).abs().max() < 1e-12
    assert np.abs(ours.numpy() - scipy.fft.dct(x.numpy(), type=2, norm="ortho", axis=1)).max() < 1e-12


@pytest.mark.parametrize("T", [4, 12, 13])
def test_dct_matrix_is_orthogonal(T):
    C = dct_matrix(T, dtype=torch.float64)
    assert torch.allclose(C @ C.T, torch.eye(T, dtype=torch.float64), atol=1e-12)


def test_freq_loss_is_the_full_horizon_sse_and_weight_ratio():
    f, a = torch.randn(8, 12, 4, dtype=torch.float64), torch.randn(8, 12, 4, dtype=torch.float64)
    assert torch.allclose(freq_loss(f, a), ((f - a) ** 2).sum((1, 2)).mean(), rtol=1e-12)
    f = (a + 0.1).requires_grad_(True)
    loss, parts = fco_loss(f, a.clone(), a, w_f=1e-4, n_action_steps=4)
    loss.backward()
    g = f.grad[0]
    assert float(g[-1, 0] / (g[0, 0] - g[-1, 0])) == pytest.approx(1e-4 * 4 * 4, rel=1e-9)
    assert set(parts) == {"time", "freq"}


def _one_step_pair(p, b, seed, t_min):
    """FocalPolicy's loss inputs written out by hand with the generator's draws in compute_loss's order: the
    one-step estimate at t, the detached teacher at the LAS anchor r, and the normalised actions."""
    g = torch.Generator().manual_seed(seed)
    cond, a = p._prepare(b)
    eps = torch.randn(a.shape, generator=g)
    r = p.sampler.anchor(a.shape[0], g)
    t = torch.rand(a.shape[0], generator=g) * (1 - t_min) + t_min
    tt, rr = t[:, None, None], r[:, None, None]
    xt, xr = tt * a + (1 - tt) * eps, rr * a + (1 - rr) * eps
    ft = xt + (1 - tt) * p.velocity(xt, t, cond)
    fr = (xr + (1 - rr) * p.velocity(xr, r, cond)).detach()
    return ft, fr, a


def test_focal_policy_loss_matches_fco_loss_for_one_member():
    torch.manual_seed(0)
    p = make_policy(VARIANTS["FocalPolicy"], 4, 2, "mlp")
    b = _batch()
    p.fit_normalizers(b["obs"], b["action"])
    loss, _ = p.compute_loss(b, torch.Generator().manual_seed(3))
    # recompute by hand with the same draws
    ft, fr, a = _one_step_pair(p, b, seed=3, t_min=0.01)
    ref, _ = fco_loss(ft, fr, a, 1e-4, 4)
    assert torch.allclose(loss, ref, rtol=1e-6)


@pytest.mark.parametrize("opts", [dict(), dict(window_start=1), dict(full_horizon=True), dict(freq="adaptive"),
                                  dict(w_f=1.0)])
def test_focal_policy_ensemble_loss_is_the_mean_of_its_members_fco_losses(opts):
    """FocalPolicy.compute_loss of a 2-member ensemble equals, member by member, fco_loss of that member's rows
    written out by hand (the time window, the -FCO switch, the adaptive loss, w_f); and LAS's t uses the sampler's
    own t_min."""
    from icml26.focalpolicy.sampler import LASSampler as L

    torch.manual_seed(0)
    spec = dict(VARIANTS["FocalPolicy"], **opts)
    p = make_policy(spec, 4, 2, "mlp", {"members": 2, "hidden": (32,)})
    p.sampler = L(t_min=0.3)
    b = _batch(B=16)
    p.fit_normalizers(b["obs"], b["action"])
    loss, parts = p.compute_loss(b, torch.Generator().manual_seed(3))
    ft, fr, a = _one_step_pair(p, b, seed=3, t_min=0.3)             # t ~ U(t_min, 1) with the sampler's t_min
    w0, n = opts.get("window_start", 0), 4
    per = []
    for m in range(2):
        rows = slice(8 * m, 8 * (m + 1))
        if opts.get("full_horizon"):
            per.append(((ft[rows] - fr[rows]) ** 2).mean())
            continue
        lt = ((ft[rows, w0:w0 + n] - fr[rows, w0:w0 + n]) ** 2).mean()
        d2 = (dct_ortho(ft[rows]) - dct_ortho(a[rows])) ** 2
        lf = (torch.softmax(d2.detach(), 1) * d2).sum(1).mean() if opts.get("freq") == "adaptive" else d2.sum((1, 2)).mean()
        per.append(lt + spec["w_f"] * lf)
    assert torch.allclose(loss, torch.stack(per).mean(), rtol=1e-5)
    assert set(parts) == {"loss", "time", "freq"}


# --------------------------------------------------------------------------- samplers and theory

def test_las_anchor_quantiles_and_independence_of_t():
    q = las_quantiles(n=100_000)
    for k, v in {0.05: 0.317, 0.25: 0.861, 0.5: 0.968, 0.75: 0.991, 0.95: 0.998}.items():
        assert abs(q[k] - v) < 0.01
    t, r = LASSampler()(20_000, torch.Generator().manual_seed(0))
    assert float(t.min()) >= 0.01 and float(t.max()) <= 1 and float(r.min()) > 0 and float(r.max()) <= 1
    assert abs(float(torch.corrcoef(torch.stack([t, r]))[0, 1])) < 0.03
    t, r = ConsistencySampler(0.01)(1000, torch.Generator().manual_seed(0))
    assert torch.allclose(r, torch.clamp(t + 0.01, max=1.0))


def test_fixed_point_separates_las_from_small_delta():
    assert fixed_point_one_step_std("LAS", iters=300, n=20_000) < 0.3
    assert fixed_point_one_step_std(0.01, iters=300, n=20_000) > 0.8


# --------------------------------------------------------------------------- policies and peers

def test_fm10_sampler_and_path_match_flow_matching():
    from flow_matching.path import AffineProbPath
    from flow_matching.path.scheduler import CondOTScheduler
    from flow_matching.solver import ODESolver

    fm = make_policy(VARIANTS["FM-10"], 4, 2, "mlp").double()
    cond = torch.randn(6, 8, dtype=torch.float64)
    x0 = torch.randn(6, 12, 2, dtype=torch.float64)
    ours = fm.sample_normalized(cond, x0)
    solver = ODESolver(velocity_model=lambda x, t: fm.velocity(x, t.expand(x.shape[0]).to(x.dtype), cond))
    theirs = solver.sample(x_init=x0, step_size=0.1, method="euler", time_grid=torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert (ours - theirs).abs().max() < 1e-6
    a, e, t = torch.randn(6, 12, 2), torch.randn(6, 12, 2), torch.rand(6)
    s = AffineProbPath(CondOTScheduler()).sample(x_0=e, x_1=a, t=t)
    assert torch.allclose(t[:, None, None] * a + (1 - t[:, None, None]) * e, s.x_t, atol=1e-6)
    assert torch.allclose(a - e, s.dx_t, atol=1e-6)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_variant_trains_and_predicts_the_executed_window(name):
    spec = VARIANTS[name]
    T, n = spec.get("horizon", 12), spec.get("n_action_steps", 4)
    p = make_policy(spec, 4, 2, "mlp", {"hidden": (32,)})
    b = _batch(T=T)
    p.fit_normalizers(b["obs"], b["action"])
    loss, parts = p.compute_loss(b, torch.Generator().manual_seed(0))
    loss.backward()
    assert torch.isfinite(loss) and "loss" in parts
    out = p.predict_action(b["obs"], generator=torch.Generator().manual_seed(0))
    assert out["action_pred"].shape == (8, T, 2)
    assert torch.equal(out["action"], out["action_pred"][:, 1:1 + n])


def test_unet_shapes():
    for T, n in ((4, 3), (12, 4)):
        u = make_policy(dict(kind="focal", horizon=T, n_action_steps=n), 39, 4, "unet", {"down_dims": (8, 16, 32), "groups": 4})
        assert u.predict_action(torch.randn(2, 2, 39))["action_pred"].shape == (2, T, 4)


def test_ensemble_members_equal_single_networks_and_train_independently():
    torch.manual_seed(0)
    e = EnsembleChunkMLP(3, 12, 2, 8, hidden=(16, 16))
    x, t, c = torch.randn(6, 12, 2), torch.rand(6) * 99, torch.randn(6, 8)
    y = e(x, t, c)
    for s in range(3):
        assert torch.allclose(e.member(s)(x[2 * s: 2 * s + 2], t[2 * s: 2 * s + 2], c[2 * s: 2 * s + 2]), y[2 * s: 2 * s + 2], atol=1e-6)
    y[:2].sum().backward()          # member 0's output only touches member 0's parameters
    for p in e.parameters():
        if p.grad is not None and p.ndim >= 2 and p.shape[0] == 3:
            assert p.grad[1:].abs().max() == 0


def test_train_policy_is_deterministic_and_lowers_the_loss():
    demos = collect_demos(6, "unimodal", seed=0)
    data = make_chunks(demos, 12)

    def run():
        torch.manual_seed(0)
        p = make_policy(VARIANTS["FocalPolicy"], 4, 2, "mlp", {"hidden": (32, 32), "members": 2})
        return train_policy(p, data, 60, seed=0, batch_size=32, lr=3e-3, warmup=5)

    a, b = run(), run()
    assert a.losses == b.losses
    assert np.mean(a.losses[-10:]) < np.mean(a.losses[:10])
    assert a.policy.member(1).w_f.shape == (1,)


# --------------------------------------------------------------------------- env, data, runner, metrics

def test_env_passes_check_env_and_expert_solves_both_modes():
    from gymnasium.utils.env_checker import check_env

    check_env(ChunkReach2D(), skip_render_check=True)
    env = ChunkReach2D()
    for mode in ("unimodal", "multimodal"):
        demos = collect_demos(20, mode, seed=1)
        for d in demos:
            env.reset(options={"start": d["obs"][0, :2], "goal": d["obs"][0, 2:]})
            for a in d["actions"]:
                _, _, term, _, info = env.step(a)
                if term:
                    break
            assert info["success"] and not info["collision"]
        sides = [d["side"] for d in demos]
        if mode == "unimodal":
            assert all(s == (1 if d["obs"][0, 3] >= 0 else -1) for s, d in zip(sides, demos))
        else:
            assert 1 in sides and -1 in sides


def test_make_chunks_alignment_and_padding():
    obs = np.arange(11, dtype=float)[:, None].repeat(4, 1)
    act = np.arange(10, dtype=float)[:, None].repeat(2, 1)
    ds = make_chunks([{"obs": obs, "actions": act}], 12, 2, 4)
    # first window starts one step before the demo (pad_before = 1), edge-padded
    assert ds.obs[0, :, 0].tolist() == [0, 0] and ds.action[0, :3, 0].tolist() == [0, 0, 1]
    # executed window index 1 follows the current observation
    assert ds.action[1, 1, 0] == ds.obs[1, 1, 0]
    with pytest.raises(ValueError, match="shorter than the horizon"):
        make_chunks([{"obs": obs, "actions": act}], 12, 2, 4, pad=False)


def test_runner_executes_the_window_and_metrics_behave():
    p = make_policy(VARIANTS["FocalPolicy"], 4, 2, "mlp", {"hidden": (16,)})
    demos = collect_demos(3, "unimodal", seed=0)
    data = make_chunks(demos, 12)
    p.fit_normalizers(data.obs, data.action)
    ro = ChunkedRunner(lambda: ChunkReach2D(), max_steps=30).run(p.eval(), [0, 1], generator=torch.Generator().manual_seed(0))
    assert all(len(r.actions) <= 30 and r.observations.shape[1] == 4 for r in ro)
    smooth = np.stack([np.linspace(0, 1, 40) ** 2, np.zeros(40)], 1)
    assert metrics.boundary_jump_ratio([np.diff(smooth, axis=0)], 4) == pytest.approx(1.0, abs=0.05)
    jb0, ji0 = metrics.boundary_and_interior_jumps(smooth, 4)
    stepped = smooth + np.where(np.arange(40) % 4 == 0, 0.05, 0.0)[:, None]
    jb1, ji1 = metrics.boundary_and_interior_jumps(stepped, 4)
    assert jb1.mean() > jb0.mean() + 0.04
    assert metrics.hf_energy_ratio([smooth]) < metrics.hf_energy_ratio([stepped])
    assert metrics.side_switches(np.array([[-0.2, 0.2], [0.0, -0.2], [0.2, 0.2]])) == 2


def test_metaworld_expert_solves_push_wall():
    pytest.importorskip("metaworld")
    from icml26.focalpolicy import metaworld_tasks as MW

    d = MW.collect_demos("push-wall", 1, first_task=3)
    assert d[0]["obs"].shape[1] == 39 and d[0]["actions"].shape[1] == 4 and len(d[0]["actions"]) < 200
    env = MW.make_env("push-wall")
    o1, _ = env.reset(seed=3)
    assert np.allclose(o1, d[0]["obs"][0], atol=1e-6)    # the start state is a function of the task index alone
    for _ in range(20):
        env.step(env.action_space.sample())
    env.reset(seed=7)
    o2, _ = env.reset(seed=3)
    assert np.array_equal(o1, o2)
    with pytest.raises(ValueError, match="out of range"):
        env.reset(seed=50)


def test_metaworld_demos_skip_the_tasks_the_expert_fails():
    """The box-close expert fails MT1 tasks 1 and 5 (of 0-5): demos skip them, the success ceiling counts them,
    and too few solved tasks below ``stop_before`` is a clear error."""
    pytest.importorskip("metaworld")
    from icml26.focalpolicy import metaworld_tasks as MW

    solved = MW.expert_success("box-close", range(6))
    assert solved.tolist() == [True, False, True, True, True, False]
    assert [d["task"] for d in MW.collect_demos("box-close", 3)] == [0, 2, 3]
    with pytest.raises(ValueError, match="solved only 1 of tasks 0..1"):
        MW.collect_demos("box-close", 2, stop_before=2)


def test_presets_have_the_same_keys_at_every_scale():
    keys = {s: set(p) - {"gpu"} for s, p in PRESETS.items()}
    assert keys["smoke"] == keys["book"] == keys["full"]
    for sub in ("reach", "metaworld"):
        assert set(PRESETS["smoke"][sub]) == set(PRESETS["book"][sub]) == set(PRESETS["full"][sub])
    for s in PRESETS.values():
        for block in ("main", "mlp"):
            assert set(s["reach"][block]) == set(PRESETS["smoke"]["reach"]["main"])
            experiments.training_groups(s["reach"][block]["variants"])
        experiments.training_groups(s["reach"]["multimodal"])
        for block in ("main", "mlp"):        # the convergence rule needs >= 6 curve points
            assert len([x for x in s["reach"][block]["eval_steps"] if x <= s["reach"][block]["steps"]]) >= 6
    gpu = PRESETS["full"]["gpu"]
    assert set(gpu["reach"]) == set(PRESETS["full"]["reach"]) and set(gpu["metaworld"]) == set(PRESETS["full"]["metaworld"])


# --------------------------------------------------------------------------- bad input

def test_bad_inputs_raise_clear_errors():
    from icml26.focalpolicy import metaworld_tasks as MW

    with pytest.raises(ValueError, match="n_obs_steps - 1 \\+ n_action_steps"):
        make_policy(dict(kind="focal", horizon=4), 4, 2, "mlp")
    with pytest.raises(ValueError, match="n_obs_steps"):
        make_policy(dict(kind="focal"), 4, 2, "mlp", n_obs_steps=0)
    with pytest.raises(ValueError, match="w_f"):
        make_policy(dict(kind="focal", w_f=-1.0), 4, 2, "mlp")
    with pytest.raises(ValueError, match="w_f"):
        fco_loss(torch.zeros(2, 12, 2), torch.zeros(2, 12, 2), torch.zeros(2, 12, 2), -1e-4, 4)
    with pytest.raises(ValueError, match="does not split"):
        fco_loss(torch.zeros(3, 12, 2), torch.zeros(3, 12, 2), torch.zeros(3, 12, 2), 1e-4, 4, members=2)
    with pytest.raises(ValueError, match="2 values for 3 member"):
        fco_loss(torch.zeros(3, 12, 2), torch.zeros(3, 12, 2), torch.zeros(3, 12, 2), [1e-4, 1e-2], 4, members=3)
    with pytest.raises(ValueError, match=r"\(B, T, D_a\)"):
        dct_ortho(torch.zeros(12, 2))
    with pytest.raises(ValueError, match="NaN"):
        dct_ortho(torch.full((1, 12, 2), float("nan")))
    p = make_policy(VARIANTS["FocalPolicy"], 4, 2, "mlp")
    with pytest.raises(ValueError, match="horizon 4, expected T = 12"):
        p.compute_loss({"obs": torch.zeros(2, 2, 4), "action": torch.zeros(2, 4, 2)})
    with pytest.raises(ValueError, match="NaN"):
        p.compute_loss({"obs": torch.zeros(2, 2, 4), "action": torch.full((2, 12, 2), float("nan"))})
    with pytest.raises(ValueError, match="valid tasks: push-wall"):
        MW.make_env("door-open")
    with pytest.raises(ValueError, match="covers the start"):
        ReachConfig(obstacle_center=(-0.8, 0.0))
    with pytest.raises(ValueError, match="covers the goal"):
        ReachConfig(obstacle_center=(0.8, 0.1))
    with pytest.raises(ValueError, match="unknown variant"):
        experiments.training_groups(["nope"])


# --------------------------------------------------------------------------- revision 2: UNet ensembles, plug-ins, controls

def test_vmap_unet_ensemble_members_equal_single_networks_and_train_independently():
    from icml26.focalpolicy.networks import ConditionalUnet1D, VmapEnsemble, make_network

    torch.manual_seed(0)
    e = make_network("unet", 12, 2, 8, members=3, down_dims=(8, 16), groups=4)
    assert isinstance(e, VmapEnsemble) and e.members == 3
    x, t, c = torch.randn(6, 12, 2), torch.rand(6) * 99, torch.randn(6, 8)
    y = e(x, t, c)
    for s in range(3):
        m = e.member(s)
        assert isinstance(m, ConditionalUnet1D)
        assert torch.allclose(m(x[2 * s: 2 * s + 2], t[2 * s: 2 * s + 2], c[2 * s: 2 * s + 2]), y[2 * s: 2 * s + 2], atol=1e-5)
    assert not torch.allclose(e.member(0)(x[:2], t[:2], c[:2]), e.member(1)(x[:2], t[:2], c[:2]))   # seeds differ
    y[:2].sum().backward()
    for p in e.parameters():
        assert p.shape[0] == 3 and (p.grad is None or p.grad[1:].abs().max() == 0)


def test_unet_ensemble_trains_through_train_policy():
    demos = collect_demos(4, "unimodal", seed=0)
    data = make_chunks(demos, 12)
    p = make_policy(VARIANTS["FocalPolicy"], 4, 2, "unet", {"down_dims": (8, 16), "groups": 4, "members": 2})
    res = train_policy(p, data, 30, seed=0, batch_size=16, lr=2e-3, warmup=3)
    assert np.isfinite(res.losses).all()
    single = res.policy.member(1)
    assert single.predict_action(torch.randn(3, 2, 4))["action"].shape == (3, 4, 2)


def test_las_main_branch_config_equals_its_literal_recipe():
    from icml26.focalpolicy.sampler import las_anchor_main

    assert LASSampler.official("2d7dc31") == LASSampler.official("915f7bc") == LASSampler.official()
    ours = LASSampler.official("915f7bc").anchor(200_000, torch.Generator().manual_seed(0)).numpy()
    lit = las_anchor_main(200_000, torch.Generator().manual_seed(1)).numpy()
    old = LASSampler.official("3c0af28").anchor(200_000, torch.Generator().manual_seed(0)).numpy()
    qs = [0.05, 0.25, 0.5, 0.75, 0.95]
    assert np.abs(np.quantile(ours, qs) - np.quantile(lit, qs)).max() < 0.01
    assert np.quantile(old, 0.05) < np.quantile(lit, 0.05) - 0.1        # the two configs differ where the min branch sits
    with pytest.raises(ValueError, match="unknown official commit"):
        LASSampler.official("abc")


def test_flowpolicy_fco_plugin_loss_and_las_plugin_guard():
    from icml26.focalpolicy.policies import ConsistencyFMPolicy

    torch.manual_seed(0)
    p = make_policy(VARIANTS["FlowPolicy-H12+FCO"], 4, 2, "mlp", {"hidden": (32,)})
    b = _batch()
    p.fit_normalizers(b["obs"], b["action"])
    loss, _ = p.compute_loss(b, torch.Generator().manual_seed(3))
    g = torch.Generator().manual_seed(3)
    cond, a = p._prepare(b)
    eps = torch.randn(a.shape, generator=g)
    t, r = p.sampler(8, g)
    seg = torch.where(t <= 0.5, 0.5, 1.0)
    tt, rr, ee = t[:, None, None], r[:, None, None], seg[:, None, None]
    xt, xr, xe = tt * a + (1 - tt) * eps, rr * a + (1 - rr) * eps, ee * a + (1 - ee) * eps
    vt, vr = p.velocity(xt, t, cond), p.velocity(xr, r, cond)
    ft, fr = xt + (ee - tt) * vt, torch.where(rr < 1, xr + (ee - rr) * vr, xe)
    ref = ((ft[:, :4] - fr[:, :4]) ** 2).mean() + 1e-4 * freq_loss(xt + (1 - tt) * vt, a)
    far = ((seg - t) > 1.01 * 0.01)[:, None, None]
    ref = ref + 1e-5 * (far * (vt - vr) ** 2).mean()
    assert torch.allclose(loss, ref, rtol=1e-5)
    with pytest.raises(ValueError, match="segments=1"):
        ConsistencyFMPolicy(4, 2, sampler="las", segments=2)
    las = make_policy(VARIANTS["FlowPolicy-H12+LAS"], 4, 2, "mlp", {"hidden": (32,)})
    assert isinstance(las.sampler, LASSampler) and las.segments == 1


def test_planted_offset_jumps_only_at_chunk_boundaries():
    from icml26.focalpolicy.experiments import PlantedOffset

    p = make_policy(VARIANTS["FocalPolicy"], 4, 2, "mlp", {"hidden": (16,)})
    b = _batch()
    p.fit_normalizers(b["obs"], b["action"])
    w = PlantedOffset(p, 0.05, seed=0)
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    base, planted = p.predict_action(b["obs"], generator=g1)["action"], w.predict_action(b["obs"], generator=g2)["action"]
    d = planted - base
    assert torch.allclose(d.norm(dim=-1), torch.full(d.shape[:2], 0.05), atol=1e-6)       # size h on every action
    assert torch.allclose(d[:, 1:], d[:, :1].expand_as(d[:, 1:]), atol=1e-7)              # one offset per chunk
    with pytest.raises(ValueError, match="> 0"):
        PlantedOffset(p, 0.0)


def test_noise_corr_sees_pass_through_and_endpoints_read_the_executed_window():
    from icml26.focalpolicy.experiments import VariantRun, start_state_endpoints, validation_metrics

    p = make_policy(VARIANTS["FocalPolicy"], 4, 2, "mlp", {"hidden": (16,)})
    demos = collect_demos(3, "unimodal", seed=0)
    val = make_chunks(demos, 12)
    p.fit_normalizers(val.obs, val.action)
    last = p.net.net[-1]
    with torch.no_grad():
        last.weight.zero_(); last.bias.zero_()                # v = 0: one-step inference returns the noise itself
    m = validation_metrics(p, val)
    assert np.allclose(m["noise_corr"][0], 1.0, atol=1e-5)
    with torch.no_grad():                                     # v = -x at indices 1-4 only is impossible to set here;
        last.bias.view(12, 2)[5:] = 5.0                       # instead: the distal outputs move, the executed ones do not
    run = VariantRun("x", [p], np.zeros(1))
    e1 = start_state_endpoints(run, 64)[0]["end_y"]
    with torch.no_grad():
        last.bias.view(12, 2)[5:] = -5.0
    e2 = start_state_endpoints(run, 64)[0]["end_y"]
    assert np.allclose(e1, e2)
