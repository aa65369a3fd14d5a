"""Unit tests of icml26.minitraffic (fast: the simulator runs two short corridor-days)."""
import numpy as np
import pytest
import torch
from pytorch_metric_learning.losses import NTXentLoss
from torch_geometric.nn import GATConv

from icml26 import minitraffic as mt
from icml26.minitraffic.simulator import BIN_S, DELTAN


@pytest.fixture(scope="module")
def day():
    corridor = mt.Corridor(lanes=(3, 4, 3, 3), demand_max=1300, incident_rate=0.0, onramp_at=1, offramp_at=2)
    return corridor, mt.simulate_day(corridor, seed=5)


def test_knn_attention_equals_pyg_gatconv_values_and_gradients():
    torch.manual_seed(0)
    ours = mt.KNNGraphAttention(16, 8, heads=2)
    peer = GATConv(16, 8, heads=2, add_self_loops=False)
    with torch.no_grad():
        peer.lin.weight.copy_(ours.lin.weight)
        peer.att_src.copy_(ours.att_src[0])
        peer.att_dst.copy_(ours.att_dst[0])
        peer.bias.copy_(torch.randn(16))
        ours.bias.copy_(peer.bias)
    h = torch.randn(1, 50, 16, requires_grad=True)
    idx = mt.knn_graph(h, 6)
    edge = torch.stack([idx[0].reshape(-1), torch.arange(50).repeat_interleave(6)])
    h2 = h.detach().clone().requires_grad_(True)
    a, b = ours(h, idx)[0], peer(h2[0], edge)
    assert (a - b).abs().max() < 1e-5
    w = torch.randn_like(a)
    (a * w).sum().backward()
    (b * w).sum().backward()
    assert (h.grad - h2.grad).abs().max() < 1e-5
    assert (ours.lin.weight.grad - peer.lin.weight.grad).abs().max() < 1e-4


def test_info_nce_equals_pytorch_metric_learning_ntxent():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(60, 12, generator=g, dtype=torch.float64)
    labels = torch.arange(60) // 3
    ours = mt.info_nce(z, labels, temperature=0.5)
    peer = NTXentLoss(temperature=0.5)(z, labels)
    assert abs(float(ours) - float(peer)) < 1e-6


def test_zero_noise_fda_is_identity_and_bound_holds():
    x = torch.randn(200, 18, dtype=torch.float64)
    ident = mt.FDA(0.1, 0.05, phase_sigma=0.0, replicas=3, amp_sigma=0.0)(x)
    assert (ident - x.unsqueeze(1)).abs().max() < 1e-12
    xa = mt.ac_part(x)
    fda = mt.FDA(0.1, 0.05, 0.1, 5)
    dist = mt.relative_distortion(xa, fda(xa, generator=torch.Generator().manual_seed(1)))
    assert float(dist.max()) < 0.1**2 / 0.05
    assert dist.shape == (200, 5)


def test_released_fda_variance():
    noise = mt.released_fda(torch.zeros(200_000, 3, dtype=torch.float64), 0.01, torch.Generator().manual_seed(0))
    var = noise.var(0).numpy()
    assert np.all(np.abs(var / (0.01**2 / 6) - 1) < 0.02)


def test_bad_inputs_raise_value_errors():
    with pytest.raises(ValueError):
        mt.n_patches(2, 3, 1)
    with pytest.raises(ValueError):
        mt.n_patches(18, 3, 2)          # (18 - 3) % 2 != 0
    with pytest.raises(ValueError):
        mt.knn_graph(torch.randn(1, 10, 4), 0)
    with pytest.raises(ValueError):
        mt.knn_graph(torch.randn(1, 10, 4), 10)
    for kwargs in (dict(lam=0.0), dict(lam=1.0), dict(tau=0.0), dict(tau=1.5), dict(replicas=0)):
        with pytest.raises(ValueError):
            mt.FDA(**kwargs)
    with pytest.raises(ValueError):
        mt.random_mask(2, torch.zeros(3, dtype=torch.long), 16, 1.0, torch.Generator())
    with pytest.raises(ValueError):
        mt.MiniTraffic(H=0)
    m = mt.MiniTraffic(d=16, d_ff=32, layers=1, heads=2, graph_heads=2)
    x = torch.randn(1, 4, 18)
    x[0, 0, 3] = float("nan")
    with pytest.raises(ValueError):
        m.forecast(x)
    with pytest.raises(ValueError):
        m.forecast(torch.randn(1, 4, 17))
    with pytest.raises(ValueError):
        mt.Corridor(lanes=(5, 1, 5))
    with pytest.raises(ValueError):
        mt.Corridor(lanes=(5, 5, 5), demand_max=-1)
    with pytest.raises(ValueError):
        mt.simulate_day(mt.Corridor(lanes=(3, 3, 3)), 0, incidents=[mt.Incident(1, 3, 3600, 7200, 0.2)])
    with pytest.raises(ValueError):
        mt.windows(np.array([[1.0, np.nan] * 20]), 18, 6)


def test_simulator_conserves_vehicles_and_respects_capacity(day):
    corridor, r = day
    assert r.vehicles_in == r.vehicles_out + r.vehicles_left and r.vehicles_in > 10_000
    qc = mt.capacity_veh_per_h(max(corridor.free_speed(0, j) for j in range(8)))
    assert r.lane_flow.max() <= qc + DELTAN * 3600 / BIN_S + 1e-9
    lane = 0
    free = r.lane_speed_clean[lane, :48]            # 0:00-4:00, free flow
    assert abs(np.median(free) / corridor.free_speed(0, 0) - 1) < 0.05
    road_v = r.road_speed_clean[0]
    lanes0 = r.lane_speed_clean[:3]
    assert np.all(road_v <= lanes0.max(0) + 1e-6) and np.all(road_v >= lanes0.min(0) - 1e-6)


def test_simulator_is_seed_deterministic(day):
    corridor, r = day
    again = mt.simulate_day(corridor, seed=5)
    assert np.array_equal(np.nan_to_num(r.lane_speed, nan=-1), np.nan_to_num(again.lane_speed, nan=-1))


def test_incident_slows_its_lane():
    corridor = mt.Corridor(lanes=(3, 3, 3), demand_max=1400, incident_rate=0.0, onramp_at=1, offramp_at=2)
    inc = mt.Incident(1, 1, 8 * 3600, 9 * 3600, 0.1)
    r = mt.simulate_day(corridor, seed=2, incidents=[inc])
    lane = 3 + 1
    during = r.lane_speed_clean[lane, 8 * 12 + 2: 9 * 12].mean()
    assert during < 0.6 * corridor.free_speed(1, 1)


def test_model_parameter_polynomial_and_determinism():
    d, dff, L = 32, 64, 2
    m = mt.MiniTraffic(d=d, d_ff=dff, layers=L, heads=4, graph_heads=4).eval()
    enc = sum(p.numel() for p in m.encoder.parameters())
    assert enc == L * mt.layer_params(d, dff)
    x = 80 + torch.randn(3, 10, 18)
    with torch.no_grad():
        a, b = m.forecast(x), m.forecast(x)
        c = m.forecast(torch.cat([x[:1], 80 + torch.randn(2, 10, 18)]))
    assert torch.equal(a, b) and torch.equal(a[0], c[0])      # a window's forecast is batch-independent
    assert a.shape == (3, 10, 6)


def test_released_mode_depends_on_the_batch():
    torch.manual_seed(0)
    m = mt.MiniTraffic(d=16, d_ff=32, layers=1, heads=2, graph_heads=2, released_code=True, released_channels=6).eval()
    x = 80 + 5 * torch.randn(4, 6, 18)
    with torch.no_grad():
        a = m.forecast(x)[0]
        b = m.forecast(torch.cat([x[:1], 80 + 5 * torch.randn(3, 6, 18)]))[0]
    assert (a - b).abs().max() > 1e-4


def test_fill_missing_and_windows():
    s = np.array([[np.nan, 1.0, np.nan, 3.0] + [4.0] * 26])
    f = mt.fill_missing(s)
    assert f[0, 0] == 1.0 and f[0, 2] == 1.0
    x, y, m = mt.windows(f, 18, 6)
    assert x.shape == (7, 1, 18) and y.shape == (7, 1, 6)
    np.testing.assert_array_equal(y[0, 0], f[0, 18:24])


def test_metrics_mask_low_targets():
    y = np.full((2, 3, 6), 50.0)
    y[0, 0, 5] = 0.5
    pred = y + 2.0
    m = np.ones_like(y, bool)
    out = mt.metrics(pred, y, m)
    assert out["MAE@30 min"] == pytest.approx(2.0) and out["MAPE@30 min"] == pytest.approx(4.0)


def test_masked_tokens_take_neighbours_from_visible_tokens_only():
    torch.manual_seed(0)
    model = mt.MiniTraffic(T=18, H=6, d=16, d_ff=32, layers=1, heads=2, graph_heads=2, k=6).eval()
    B, R, D = 2, 4, 3
    x = 60 + torch.randn(B, R * D, 18)
    groups = torch.arange(R).repeat_interleave(D)
    mask = mt.random_mask(B, groups, model.np, 0.4, torch.Generator().manual_seed(1))
    # the mask is shared by every replica of a road
    assert torch.equal(mask.view(B, R, D, -1), mask.view(B, R, D, -1)[:, :, :1].expand(B, R, D, -1))
    captured = {}
    orig = mt.model.knn_graph

    def spy(z, k, valid=None, query=None):
        idx = orig(z, k, valid=valid, query=query)
        captured.update(idx=idx, valid=valid)
        return idx

    mt.model.knn_graph = spy
    try:
        model.encode(x, mask=mask)
    finally:
        mt.model.knn_graph = orig
    idx, valid = captured["idx"], captured["valid"]
    flat_mask = mask.reshape(B, -1)
    assert torch.equal(valid, ~flat_mask)
    src_masked = torch.gather(flat_mask, 1, idx.reshape(B, -1))
    assert not src_masked.any()                       # no masked token is anyone's neighbour
    # masked tokens of different channels at one patch choose different neighbours (channel-aware query)
    b, p = 0, int(flat_mask[0].view(R * D, -1).any(0).nonzero()[0])
    chans = flat_mask[b].view(R * D, -1)[:, p].nonzero().flatten()
    rows = idx[b].view(R * D, -1, idx.shape[-1])[chans, p]
    if len(chans) > D:                                # masked tokens of two roads
        assert not all(torch.equal(rows[0], r) for r in rows[D:])


def test_info_nce_ignores_invalid_tokens():
    z = torch.randn(1, 12, 8, generator=torch.Generator().manual_seed(0))
    labels = torch.arange(12) // 3
    valid = torch.ones(1, 12, dtype=torch.bool)
    valid[0, 9:] = False
    z2 = z.clone()
    z2[0, 9:] = torch.randn(3, 8)                     # changing invalid tokens changes nothing
    a = mt.info_nce(z, labels, valid=valid)
    b = mt.info_nce(z2, labels, valid=valid)
    assert torch.allclose(a, b)
    assert torch.allclose(mt.info_nce(z[:, :9], labels[:9]), a)


def test_knn_graph_validates_valid_mask():
    z = torch.randn(1, 6, 4)
    with pytest.raises(ValueError):
        mt.knn_graph(z, 3, valid=torch.tensor([[True, True, True, False, False, False]]))
    with pytest.raises(ValueError):
        mt.knn_graph(z, 2, valid=torch.ones(1, 5, dtype=torch.bool))


def test_pems_files_road_is_lane_mean_and_split():
    data = mt.load_pems()
    assert data.lane.shape == (43, 28, 288) and data.road.shape == (8, 28, 288)
    assert mt.road_lane_mean_error(data) < 1e-9
    assert np.isfinite(data.lane).all() and np.isfinite(data.road40).all()
    target = mt.RealTarget(data)
    assert all(data.weekday[d] for d in target.train_days(2))             # few-shot days are weekdays
    assert max(target.train_days(19)) < min(target.val_days) < min(target.test_days)
    assert len(set(data.pemsf_index)) == 40                               # PeMSF lanes: 40 distinct PeMS lanes
    shuffled = target.sources(shuffle_seed=0)[0]
    assert np.allclose(np.sort(shuffled, 1), np.sort(target.sources()[0], 1))   # same values, new order
    with pytest.raises(ValueError):
        target.train_days(15)


def test_pretraining_lowers_reconstruction_loss_and_finetune_keeps_best_epoch():
    cfg = dict(mt.PRESETS["smoke"], d=16, d_ff=32, layers=1, pretrain_epochs=4, pretrain_stride=96, pretrain_batch=16,
               finetune_epochs=3, max_epoch_steps=2, test_stride=48)
    target = mt.RealTarget()
    model, curve = mt.pretrain(cfg, target.sources()[:6], seed=0)
    assert curve["rec"][-1] < curve["rec"][0]
    assert np.allclose(curve["rec_ratio"], curve["rec"] / curve["zero"]) and np.all(np.diff(curve["step"]) > 0)
    _, fc = mt.finetune(model, target, target.train_days(1), cfg, seed=0, lr=1e-3)
    assert np.all(np.diff(fc["best_val_mae"]) <= 0) and fc["best_val_mae"][-1] == fc["val_mae"].min()


def test_same_road_share_chance_level():
    lane_road = np.repeat(np.arange(3), [2, 3, 1])
    # a lane's candidates: the tokens of the other 5 lanes; same road: its road's other lanes
    expected = np.mean([1 / 5] * 2 + [2 / 5] * 3 + [0 / 5])
    assert abs(mt.same_road_chance(lane_road, 2) - expected) < 1e-12


def test_same_road_share_leaves_out_the_lane_itself_and_the_planted_projection_trains_g_only():
    torch.manual_seed(0)
    model = mt.MiniTraffic(d=16, d_ff=32, layers=1, heads=2, graph_heads=2, k=4).eval()
    g = torch.Generator().manual_seed(0)
    x = 60 + 3 * torch.randn(8, 12, 18, generator=g).cumsum(-1)
    # every lane its own road: only a lane's own tokens would be "same road", and they are left out
    assert mt.same_road_share(model, x, np.arange(12)) == 0.0
    lane_road = np.repeat(np.arange(3), 4)
    labels = torch.as_tensor(lane_road).repeat_interleave(model.np) * model.np + torch.arange(model.np).repeat(12)

    def nce(m):
        with torch.no_grad():
            return float(mt.info_nce(m.proj(mt.lane_tokens(m, x)), labels, 0.5))

    cfg = dict(mt.PRESETS["smoke"], temperature=0.5, lr_pretrain=1e-2)
    planted = mt.train_projection(model, x.numpy(), lane_road, cfg, seed=0, steps=10)
    assert nce(planted) < nce(model)                                    # g learns the same-road positives
    assert all(torch.equal(a, b) for a, b in zip(planted.embed.parameters(), model.embed.parameters()))   # g only
    assert not all(torch.equal(a, b) for a, b in zip(planted.proj.parameters(), model.proj.parameters()))


def test_reconstruction_target_does_not_move_with_the_revin_affine_map():
    torch.manual_seed(0)
    model = mt.MiniTraffic(d=16, d_ff=32, layers=1, heads=2, graph_heads=2).eval()
    groups = torch.arange(4).repeat_interleave(3)
    mask = mt.random_mask(2, groups, model.np, 0.4, torch.Generator().manual_seed(0))
    x = 60 + torch.randn(2, 12, 18)
    zero = model.pretrain_loss(x, mask, groups, return_zero=True)[3]
    with torch.no_grad():
        model.revin.weight.fill_(0.1)                                     # shrink the affine map
    assert torch.allclose(model.pretrain_loss(x, mask, groups, return_zero=True)[3], zero)
    assert 0.5 < float(zero) < 2.0                                        # the window-mean predictor's level, ~1


def test_fine_tuning_budget_in_passes():
    cfg = mt.PRESETS["book"]
    target = mt.RealTarget()
    per_day = 288 - cfg["T"] - cfg["H"] + 1
    steps = min(-(-per_day // cfg["batch"]), cfg["max_epoch_steps"])
    assert mt.passes(target, 1, cfg) == pytest.approx(cfg["finetune_epochs"] * steps * cfg["batch"] / per_day)
    assert mt.passes(target, 7, cfg) < mt.passes(target, 1, cfg)          # the cap binds: fewer passes with more days
