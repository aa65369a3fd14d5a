"""Unit tests of icml26.icr: ICR estimators and identities, bad input, EDM pieces, metrics."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import torch

from icml26 import SCALES
from icml26.icr import (PRESETS, AUG_LEVELS, EDMDenoiser, augment, class_agreement_at_k, decompose_two_view,
                        decompose_views, edm_sigmas, empirical_optimal_denoiser, extract_views, heldout_loss, heun_sample,
                        icr, icr_from_covariances, icr_multiview, icr_variants, lda_fisher_eigenvalues, linear_probe,
                        load_digits_split, memorisation_onset, memorization_ratio, normalised_traces, perturb, pixel_views,
                        predicted_plugin_icr, predicted_plugin_shift, run_tasks, train_edm, training_subset, trace_ratio,
                        views_needed)


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """One torch thread, as the chapter computes (`icml26.chapter.pin_threads`), restored afterwards: on a busy 2-core
    machine a second OpenMP thread made these tiny networks about 20x slower (20 training steps: 29 s against 1.2 s)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def gaussian_views(n, v, d, seed=0, scale_s=2.0):
    """h_iv = s_i + xi_iv with known population covariances."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d)) / np.sqrt(d)
    sig_s = scale_s * a @ a.T + 0.1 * np.eye(d)
    b = rng.normal(size=(d, d)) / np.sqrt(d)
    sig_xi = b @ b.T + 0.2 * np.eye(d)
    s = rng.multivariate_normal(np.zeros(d), sig_s, size=n)
    xi = rng.multivariate_normal(np.zeros(d), sig_xi, size=(n, v))
    return s[:, None, :] + xi, sig_s, sig_xi


def test_icr_closed_form_matches_scipy_generalised_eigh():
    _, ss, sx = gaussian_views(2, 2, 12)
    value, lam, tau = icr_from_covariances(ss, sx, tau=0.0)
    ref = sla.eigh(ss, sx, eigvals_only=True)
    assert tau == 0.0
    np.testing.assert_allclose(np.sort(lam), np.sort(ref), rtol=1e-10)
    d = ss.shape[0]
    assert value == pytest.approx(d / (d + np.trace(np.linalg.solve(sx, ss))), rel=1e-12)
    assert value == pytest.approx(1 / (1 + ref.mean()), rel=1e-12)


def test_icr_is_invariant_to_invertible_linear_maps_and_scaling():
    views, _, _ = gaussian_views(600, 4, 10, seed=1)
    rng = np.random.default_rng(3)
    a = rng.normal(size=(10, 10)) + 3 * np.eye(10)
    base = icr_multiview(views, tau=0.0).icr
    mapped = icr_multiview(views @ a.T, tau=0.0).icr
    scaled = icr_multiview(37.0 * views, tau=0.0).icr
    assert abs(base - mapped) < 1e-10 and abs(base - scaled) < 1e-10
    two = icr(views[:, 0], views[:, 1], tau=0.0).icr
    assert abs(two - icr(views[:, 0] @ a.T, views[:, 1] @ a.T, tau=0.0).icr) < 1e-10
    # the trace-ratio baseline is not invariant
    s, x = decompose_views(views)
    s2, x2 = decompose_views(views @ a.T)
    assert abs(trace_ratio(s, x) - trace_ratio(s2, x2)) > 1e-3


def test_estimators_are_consistent_with_the_population_icr():
    d = 8
    views, ss, sx = gaussian_views(20000, 8, d, seed=2)
    pop, _, _ = icr_from_covariances(ss, sx, tau=0.0)
    assert abs(icr_multiview(views).icr - pop) < 0.01
    assert abs(icr(views[:, 0], views[:, 1]).icr - pop) < 0.015


def test_two_view_equals_v_view_with_two_views_up_to_centring():
    views, _, _ = gaussian_views(400, 2, 6, seed=4)
    n = len(views)
    s2, x2 = decompose_two_view(views[:, 0], views[:, 1])
    sv, xv = decompose_views(views)
    m = (views[:, 0] - views[:, 1]).mean(0)
    np.testing.assert_allclose(x2, n / (n - 1) * (xv - np.outer(m, m) / 2), rtol=0, atol=1e-12)
    np.testing.assert_allclose(s2, sv + (xv - x2) / 2, rtol=0, atol=1e-12)


def test_fisher_eigenvalues_match_sklearn_lda():
    views, _, _ = gaussian_views(250, 4, 9, seed=6)
    ours = icr_multiview(views, tau=0.0).eigenvalues
    np.testing.assert_allclose(lda_fisher_eigenvalues(views), ours, rtol=0, atol=1e-9 * np.abs(ours).max())


def test_covariance_relative_regulariser_is_exactly_invariant_and_maps_eigenvalues():
    views, ss, sx = gaussian_views(300, 3, 8, seed=7)
    a = np.random.default_rng(8).normal(size=(8, 8)) + 2 * np.eye(8)
    for tau_rel in (1e-4, 1e-2):
        assert abs(icr_multiview(views @ a.T, tau_rel=tau_rel).icr - icr_multiview(views, tau_rel=tau_rel).icr) < 1e-10
    # the isotropic tau I of the paper's footnote is not invariant
    assert abs(icr_multiview(views @ a.T, tau_rel=1e-2, reg="isotropic").icr
               - icr_multiview(views, tau_rel=1e-2, reg="isotropic").icr) > 1e-6
    lam0 = np.sort(sla.eigh(ss, sx, eigvals_only=True))
    lam_tau = np.sort(icr_from_covariances(ss, sx, tau_rel=0.05)[1])
    np.testing.assert_allclose(lam_tau, lam0 / (1 + 0.05 * (1 + lam0)), rtol=1e-10)
    with pytest.raises(ValueError, match="regulariser"):
        icr_multiview(views, reg="nope")


def test_plugin_icr_range_is_v_over_v_minus_one():
    rng = np.random.default_rng(9)
    values = [icr(*rng.normal(size=(2, 200, 8))) for _ in range(200)]
    assert max(r.icr for r in values) <= values[0].upper_bound == 2.0
    assert np.mean([r.icr > 1 for r in values]) > 0.1        # pure noise: above 1 in a minority of draws
    assert all(icr(*rng.normal(size=(2, 200, 8)), clip=True).icr <= 1.0 for _ in range(20))
    # N < d: the null directions of Cov(view means) have lambda = -1/V exactly
    lam = icr_multiview(rng.normal(size=(16, 17, 32)), tau=0.0).eigenvalues
    assert np.sum(np.abs(lam + 1 / 17) < 1e-8) == 32 - 16 + 1


def test_finite_sample_law_predicts_the_plugin_mean():
    rng = np.random.default_rng(11)
    n, d = 256, 32
    vals = [icr(*rng.normal(size=(2, n, d)), tau=0.0).icr for _ in range(60)]
    pred = predicted_plugin_icr(0.0, d, 2, n - 1)
    assert abs(np.mean(vals) - pred) < 3 * np.std(vals) / np.sqrt(len(vals)) + 1e-3
    assert abs(pred - 1) > 0.03                                 # the bias is far from negligible here
    assert predicted_plugin_shift(1.0, 0.0, d, 2, n - 1) == pytest.approx(pred - 1, rel=0.15)  # first order


def test_icr_variants_predicted_gap_is_nan_free_and_consistent():
    views, _, _ = gaussian_views(300, 8, 6, seed=12)
    v = icr_variants(views)
    assert v["d"] == 6 and v["n"] == 300 and v["v"] == 8
    assert v["two"] == pytest.approx(icr(views[:, 0], views[:, 1]).icr, abs=1e-12)
    assert v["multi"] == pytest.approx(icr_multiview(views).icr, abs=1e-12)
    assert np.isfinite(v["pred_gap"]) and v["pred_gap"] < 0


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="same shape"):
        icr(np.zeros((50, 4)), np.zeros((50, 5)))
    with pytest.raises(ValueError, match=r"at least d \+ 1 = 33 samples"):
        icr(np.random.randn(20, 32), np.random.randn(20, 32))
    with pytest.raises(ValueError, match=r"V >= 5 views"):
        icr_multiview(np.random.randn(16, 3, 64))
    with pytest.raises(ValueError, match="NaN"):
        icr(np.full((50, 4), np.nan), np.zeros((50, 4)))
    with pytest.raises(ValueError, match="at least 2 views"):
        icr_multiview(np.random.randn(16, 1, 4))
    with pytest.raises(ValueError, match="augmentation level"):
        augment(torch.zeros(2, 1, 8, 8), level=9)
    with pytest.raises(ValueError, match="sigma"):
        perturb(torch.zeros(2, 1, 8, 8), -1.0)
    with pytest.raises(ValueError, match="shape"):
        train_edm(torch.zeros(4, 8, 8), steps=1)
    assert views_needed(16, 64) == 17 and views_needed(1000, 64) == 8


def test_raw_pixel_icr_is_non_decreasing_in_sigma():
    split = load_digits_split()
    views = pixel_views(split.pool_x[:400], 0.0, 8, level=3, seed=0)
    s, x_aug = decompose_views(views)
    vals = [icr_from_covariances(s, x_aug + sig ** 2 * np.eye(64), tau=0.0)[0] for sig in np.geomspace(0.01, 5, 15)]
    assert np.all(np.diff(vals) >= -1e-12)


def test_data_split_and_augmentation():
    split = load_digits_split()
    assert split.pool_x.shape == (1297, 1, 8, 8) and split.test_x.shape == (500, 1, 8, 8)
    assert float(split.pool_x.min()) == -1.0 and float(split.pool_x.max()) == 1.0
    x, y = training_subset(split, 16, seed=0)
    assert x.shape == (16, 1, 8, 8) and len(y) == 16
    g = torch.Generator().manual_seed(0)
    assert torch.equal(augment(x, 0, g), x)
    xa = augment(x, 3, g)
    assert xa.shape == x.shape and not torch.equal(xa, x)
    assert (xa - x).abs().mean() < 0.3  # mild: the digit stays recognisable
    assert set(AUG_LEVELS) == {0, 1, 2, 3, 4}


def test_edm_preconditioning_and_features():
    net = EDMDenoiser(0.75, (8, 16, 32))
    x = torch.randn(5, 1, 8, 8)
    # the output convolution starts at zero: D(x; sigma) = c_skip x
    sigma = 0.5
    np.testing.assert_allclose(net(x, sigma).detach(), x * 0.75 ** 2 / (sigma ** 2 + 0.75 ** 2), rtol=1e-5)
    assert net.features(x, sigma, "dec2").shape == (5, 32)
    assert net.features(x, sigma).shape == (5, 16) and net.feature_dim("dec4") == 16   # dec4 (d = c2) is the default
    both = net.features(x, sigma, ("dec4", "dec2"))
    assert torch.equal(both["dec4"], net.features(x, sigma, "dec4")) and torch.equal(both["dec2"], net.features(x, sigma, "dec2"))
    with pytest.raises(ValueError, match="unknown layer"):
        net.features(x, sigma, "nope")
    with pytest.raises(ValueError, match="shape"):
        net.features(torch.zeros(2, 8, 8), sigma)


def test_training_runs_and_ema_lags():
    split = load_digits_split()
    run = train_edm(split.pool_x[:64], steps=20, channels=(8, 16, 32), batch_size=16, seed=0)
    assert len(run.losses) == 20 and np.isfinite(run.losses).all()
    diff = sum(float((a - b).detach().abs().sum()) for a, b in zip(run.net.parameters(), run.ema.parameters()))
    assert diff > 0
    again = train_edm(split.pool_x[:64], steps=20, channels=(8, 16, 32), batch_size=16, seed=0)
    assert again.losses == run.losses  # deterministic


def test_sampler_and_optimal_denoiser_memorise():
    s = edm_sigmas(18)
    assert len(s) == 19 and s[0] == pytest.approx(80.0) and s[-2] == pytest.approx(0.002) and s[-1] == 0
    split = load_digits_split()
    train = split.pool_x[:16]
    samples = heun_sample(empirical_optimal_denoiser(train), 64, seed=0)
    assert samples.shape == (64, 1, 8, 8)
    assert memorization_ratio(samples, train) == 1.0
    assert memorization_ratio(torch.rand(64, 1, 8, 8) * 2 - 1, train) < 0.1


def test_metrics():
    split = load_digits_split()
    acc = linear_probe(split.pool_x.reshape(1297, -1), split.pool_y, split.test_x.reshape(500, -1), split.test_y)
    assert acc > 0.9
    feats = split.pool_x.reshape(1297, -1)[:300].numpy()
    agree = class_agreement_at_k(feats, split.pool_y[:300], k=5)   # queries are their own keys, self left out
    assert 0.7 < agree <= 1.0
    assert class_agreement_at_k(feats[:50], split.pool_y[:50], feats, split.pool_y[:300], k=1) == 1.0  # self included
    with pytest.raises(ValueError, match="do not match"):
        class_agreement_at_k(feats, split.pool_y[:300], feats[:, :10], split.pool_y[:300])
    views = np.random.default_rng(0).normal(size=(50, 4, 6))
    ts, tx = normalised_traces(views)
    assert abs(ts) < 0.1 * tx  # pure noise: no invariant energy (the unbiased estimate may dip below 0)
    with pytest.raises(ValueError, match="threshold"):
        memorization_ratio(split.pool_x[:4], split.pool_x[:4], threshold=2)


def test_presets_cover_every_scale():
    assert set(PRESETS) == set(SCALES)
    keys = set(PRESETS["smoke"])
    for scale in SCALES:
        assert set(PRESETS[scale]) - {"gpu"} == keys                        # "gpu": full's GPU variant (its own test)
        p = PRESETS[scale]
        assert set(p["limited_steps"]) == set(p["limited_n"])
        assert all(p["channels"][1] <= n / 4 for n in p["limited_n"])     # d(dec4) <= N / 4
        assert p["layer"] == "dec4" and p["layer"] in p["layers"] and p["level"] in p["sweep_levels"]
        assert 256 in p["robust_n"] and p["n_icr"] >= 512                 # C4b and the C3 law's operating point
        if scale != "smoke":
            assert len(p["rich_seeds"]) >= 3 and len(p["limited_seeds"]) >= 3


def test_heldout_loss_and_onset():
    split = load_digits_split()
    net = EDMDenoiser(split.sigma_data, (8, 16, 32))
    a, b = heldout_loss(net, split.test_x[:64], seed=3), heldout_loss(net, split.test_x[:64], seed=3)
    assert a == b and np.isfinite(a) and a > 0
    with pytest.raises(ValueError, match="shape"):
        heldout_loss(net, split.test_x[:4, 0])
    assert memorisation_onset(np.array([0.0, 0.05, 0.2, 0.5])) == 2 and memorisation_onset(np.zeros(3)) is None


def test_run_tasks_pool_matches_inline():
    tasks = [(views_needed, dict(n_images=n, d=64)) for n in (16, 32, 1000)]
    assert run_tasks(tasks, workers=1) == run_tasks(tasks, workers=2) == [17, 9, 8]
    with pytest.raises(ValueError, match="workers"):
        run_tasks(tasks, workers=0)


def _pid(**_):
    import os

    return os.getpid()


def test_run_tasks_pool_is_capped_by_the_chapters_share_of_cores(monkeypatch):
    """`repro book` runs chapters side by side and gives each ICML26_CPUS cores: a pool asked for 2 workers
    then runs inline (every task in this process), not as a third busy process on a 2-core machine."""
    import os

    monkeypatch.setenv("ICML26_CPUS", "1")
    assert run_tasks([(_pid, {}), (_pid, {})], workers=2) == [os.getpid()] * 2


def test_two_view_plugin_bias_and_its_correction():
    d, n = 24, 150
    gaps_plug, gaps_deb = [], []
    for seed in range(6):
        views, ss, sx = gaussian_views(n, 8, d, seed=10 + seed, scale_s=0.05)
        pop, _, _ = icr_from_covariances(ss, sx, tau=0.0)
        gaps_plug.append(icr(views[:, 0], views[:, 1]).icr - pop)
        gaps_deb.append(icr(views[:, 0], views[:, 1], debias=True).icr - pop)
    assert np.mean(gaps_plug) < -0.03          # the plug-in two-view ICR is biased low
    assert abs(np.mean(gaps_deb)) < 0.3 * abs(np.mean(gaps_plug))
    with pytest.raises(ValueError, match="exclusive"):
        icr(views[:, 0], views[:, 1], clip=True, debias=True)


# --------------------------------------------------------------------------------------------------
# claim metrics (the statistics the chapter's claims are read from)

from icml26.icr import (Trajectory, alignment, dip, early_stop_gain, energy_growth, icr_sigma_curve,  # noqa: E402
                        limited_stats, memorisation_rise, prop_d1_fixed_data, random_stop_gain, rich_stats, sigma_sweep,
                        spearman, stop_room, two_view_icr, window_contrast, window_distance)


def _traj(icr_curve, memo, heldout, steps=None, align=None, ts=None, tx=None, nn=None, align_raw=None):
    n = len(icr_curve)
    steps = np.arange(1, n + 1) * 10 if steps is None else np.asarray(steps)
    arr = lambda x, default: {"dec4": np.asarray(default if x is None else x, float)}  # noqa: E731
    return Trajectory(n_train=16, layers=("dec4",), steps=steps, images_seen=steps * 64, icr=arr(icr_curve, None),
                      trace_s=arr(ts, np.linspace(1, 2, n)), trace_xi=arr(tx, np.linspace(1, 3, n)),
                      alignment=arr(align, np.linspace(0.1, 0.3, n)), memo=np.asarray(memo, float),
                      median_nn_ratio=np.ones(n) if nn is None else np.asarray(nn, float),
                      heldout=np.asarray(heldout, float), train_loss=np.ones(n), n_views=8,
                      alignment_raw=arr(align_raw, np.linspace(1.0, 3.0, n)))


def test_window_distance_scores_boundaries_as_the_largest_distance():
    u = [0.5, 0.4, 0.3, 0.4, 0.6, 0.8]
    acc = [0.8, 0.85, 0.9, 0.88, 0.7, 0.5]
    assert window_distance(u, acc) == 0
    assert window_distance(u, [0.8, 0.9, 0.85, 0.8, 0.7, 0.5]) == 1
    assert window_distance(np.linspace(0.3, 0.9, 6), acc) == 5            # boundary argmin of ICR
    assert window_distance(u, np.linspace(0.9, 0.5, 6)) == 5              # boundary argmax of accuracy
    with pytest.raises(ValueError):
        window_distance([0.1, 0.2], [0.3, 0.4])


def test_dip_is_positive_only_for_a_u_shape():
    assert dip([0.41, 0.36, 0.34, 0.5, 0.85]) == pytest.approx(0.07)
    assert dip(np.linspace(0.3, 0.9, 8)) <= 0                           # monotone: no dip
    assert dip([0.5, 0.6, 0.7, 0.4]) == pytest.approx(-0.2)               # end lower than the interior
    with pytest.raises(ValueError):
        dip([0.1, 0.2])


def test_spearman_and_energy_growth():
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 2], [2, 1]))
    assert energy_growth([1, 2, 2.2], [1, 1, 2], start=1) == pytest.approx(1.0 - 0.1)
    with pytest.raises(ValueError):
        spearman([1, 2, 3], [1, 2])
    for bad in (-1, 3):                                                  # no silent wrap-around from the end
        with pytest.raises(ValueError, match="start"):
            energy_growth([1, 2, 2.2], [1, 1, 2], start=bad)


def test_window_contrast_clips_both_dips():
    u, mono, steep = [0.41, 0.36, 0.34, 0.5, 0.85], np.linspace(0.3, 0.9, 8), [0.1, 0.159, 0.3, 0.6]
    assert window_contrast(u, mono) == pytest.approx(0.07)              # window lost: the full dip counts
    assert window_contrast(u, u) == 0.0                                  # both have it: no contrast
    # a shallow window against a steep monotone curve: the negative dip of the latter must not add to the contrast
    shallow = [0.4, 0.397, 0.398, 0.5]
    assert window_contrast(shallow, steep) == pytest.approx(0.003) and dip(shallow) - dip(steep) > 0.05
    assert window_contrast(mono, u) == pytest.approx(-0.07)


def test_memorisation_rise_marks_the_start_of_the_increase():
    memo = np.array([0.0, 0.0, 1 / 64, 2 / 64, 0.1, 0.5])
    assert memorisation_rise(memo, 64) == 3                             # two samples above the first checkpoint
    assert memorisation_rise(memo, 64, min_samples=1) == 2
    assert memorisation_rise(memo + 0.05, 64) == 3                      # relative to the early level, not to 0
    assert memorisation_rise(np.zeros(5), 64) is None
    with pytest.raises(ValueError):
        memorisation_rise(memo, 0)


def test_random_stop_gain_and_room():
    held = [3.0, 2.0, 1.0, 1.5, 2.0]
    assert random_stop_gain(held) == pytest.approx(np.mean([-1.0, 0.0, 1.0, 0.5, 0.0]))
    assert np.isnan(random_stop_gain([3.0, 2.0, 1.0]))                  # lowest at the end: nothing to gain
    flat = [0.21, 0.2, 0.2, 0.2, 0.2, 0.2, 0.22]                          # a long flat optimum: the null passes 0.5
    assert random_stop_gain(flat) == pytest.approx((0.5 + 5 + 0) / 7) and random_stop_gain(flat) > 0.5
    assert random_stop_gain([1.0, 0.5, 0.2, 0.2, 0.2, 0.2, 0.21]) < 0     # a high start: it fails
    assert stop_room(held) == pytest.approx(1.0) and stop_room([2.0, 1.0, 1.001]) == pytest.approx(0.001)
    with pytest.raises(ValueError):
        random_stop_gain([1.0])


def test_alignment_is_twice_the_residual_trace_of_normalised_features():
    views, _, _ = gaussian_views(4000, 2, 6, seed=21)
    h = views / np.linalg.norm(views, axis=-1, keepdims=True)
    two_view_xi = np.trace(decompose_two_view(h[:, 0], h[:, 1])[1])
    assert alignment(views) == pytest.approx(2 * two_view_xi, rel=2e-3)
    assert alignment(views) == pytest.approx(2 * normalised_traces(views)[1], rel=1e-6)  # V = 2: the same pieces
    # Eq. 6 on raw features grows with feature expansion (the paper's reading of Fig. 10); normalised, it does not
    raw = alignment(views, normalise=False)
    assert raw == pytest.approx(float(((views[:, 0] - views[:, 1]) ** 2).sum(-1).mean()))
    assert alignment(3 * views, normalise=False) == pytest.approx(9 * raw) and alignment(3 * views) == pytest.approx(alignment(views))


def test_icr_sigma_curve_matches_the_sweep_on_the_same_images():
    split = load_digits_split()
    net = EDMDenoiser(split.sigma_data, (8, 16, 32)).eval()
    x, y = split.pool_x[:64], split.pool_y[:64]
    sig = [0.05, 0.4, 2.0]
    sw = sigma_sweep(net, split, sig, icr_images=x, icr_labels=y, layers=("dec4",), levels=(4,), n_views=8, seed=3,
                     probe_max_iter=50)
    np.testing.assert_allclose(icr_sigma_curve(net, x, sig, layer="dec4", level=4, n_views=8, seed=3), sw.curve(),
                               rtol=1e-12)


def test_early_stop_gain():
    held = [3.0, 2.0, 1.0, 1.5, 2.0]
    assert early_stop_gain([0.5, 0.4, 0.3, 0.35, 0.4], held) == pytest.approx(1.0)   # ICR min at the loss min
    assert early_stop_gain([0.5, 0.4, 0.35, 0.3, 0.4], held) == pytest.approx(0.5)   # one checkpoint late
    assert early_stop_gain([0.5, 0.4, 0.35, 0.32, 0.3], held) == pytest.approx(0.0)  # ICR min at the end
    assert np.isnan(early_stop_gain([0.5, 0.4, 0.3], [3.0, 2.0, 1.0]))                 # loss still falling


def test_limited_stats_onset_before_after_and_missing():
    icr_c = [0.6, 0.5, 0.4, 0.45, 0.5, 0.55]
    st = limited_stats(_traj(icr_c, [0, 0, 0, 0.05, 0.3, 0.6], [3, 2, 1.5, 1.6, 2, 2.5]), "dec4", 0.1, n_gen=64)
    assert (st["argmin"], st["onset"], st["gap"]) == (2, 4, 2)
    assert (st["rise_onset"], st["align_gap"]) == (3, 1)                 # the rise begins one checkpoint after
    assert st["onset_ratio"] == pytest.approx(40 / 30)
    assert st["random_gain"] == pytest.approx(random_stop_gain([3, 2, 1.5, 1.6, 2, 2.5])) and st["room"] == pytest.approx(2 / 3)
    assert limited_stats(_traj(icr_c, [0] * 6, [3] * 6), "dec4", 0.1)["rise_onset"] is None   # no n_gen: no rise
    assert st["rise"] == pytest.approx(0.15) and st["held_argmin_step"] == 30 and st["stop_gain"] == pytest.approx(1.0)
    early = limited_stats(_traj(icr_c, [0, 0.3, 0.5, 0.6, 0.6, 0.7], [3] * 6), "dec4", 0.1, n_gen=64)
    assert early["gap"] == -1 and early["align_gap"] == -1              # memorisation before the ICR minimum
    none = limited_stats(_traj(icr_c, [0] * 6, [3] * 6), "dec4", 0.1)
    assert none["onset"] is None and none["gap"] is None and np.isnan(none["onset_ratio"])
    edge = limited_stats(_traj(np.linspace(0.6, 0.3, 6), [0, 0, 0, 0, 0.3, 0.6], [3] * 6), "dec4", 0.1)
    assert edge["gap"] == 0                                              # boundary argmin scores 0


def test_rich_stats_windows_and_alignment_control():
    icr_c = [0.8, 0.7, 0.65, 0.6, 0.62, 0.66]
    held = [2.0, 1.5, 1.2, 1.1, 1.15, 1.3]                                # held-out optimum at index 3
    st = rich_stats(_traj(icr_c, [0] * 6, held, align=[0.1, 0.2, 0.25, 0.3, 0.32, 0.35]), "dec4", late_from=30)
    assert st["while_falling"] == pytest.approx(-1.0)                    # ICR falls while the loss falls
    assert st["late"] > 0 and st["held_late"] > 0                        # both turn late
    assert st["icr_argmin_step"] == 40 and st["held_argmin_step"] == 40
    assert st["with_loss"] > 0.8 and st["align_with_loss"] < 0 and st["align_trend"] == pytest.approx(1.0)
    assert st["ts_trend"] == pytest.approx(1.0)                          # default Tr S_s rises at every checkpoint
    sat = rich_stats(_traj(icr_c, [0] * 6, held, ts=[1, 2, 2.2, 2.1, 2.15, 2.12]), "dec4", late_from=30)
    assert sat["ts_trend"] < 0.8 and sat["ts_end_mid"] > 0               # saturation fails C13 while end - mid passes
    short = rich_stats(_traj(icr_c, [0] * 6, [1.0, 1.5, 2, 2, 2, 2]), "dec4", late_from=30)
    assert np.isnan(short["while_falling"])                              # fewer than 3 checkpoints: no test


def test_prop_d1_fixed_data_counterexample_and_agreement_with_scalar_form():
    sxx = np.diag([10.0, 0.1])
    root_inv = np.diag(1 / np.sqrt([10.0, 0.1]))
    u1 = prop_d1_fixed_data(sxx, np.diag([1.0, 0.01]) @ root_inv, np.eye(2))
    u2 = prop_d1_fixed_data(sxx, np.array([[0.0, 2.0], [0.02, 0.0]]) @ root_inv, np.eye(2))
    assert np.linalg.eigvalsh(u2["sigma_s"] - u1["sigma_s"]).min() >= -1e-12       # Sigma_s(U1) <= Sigma_s(U2)
    assert u1["lstar"] == pytest.approx(5.09999, abs=1e-4) and u2["lstar"] == pytest.approx(10.0160, abs=1e-3)
    assert u1["icr"] > u2["icr"]                                                    # the ICR half holds
    # scalar fixed data, C = 0: L* = q Var(x0) / (p + q) decreases in p = b^2 Var(x0)
    for bb in (0.5, 1.0, 2.0):
        r = prop_d1_fixed_data([[4.0]], [[bb]], [[1.0]])
        assert r["lstar"] == pytest.approx(1.0 * 4.0 / (bb ** 2 * 4.0 + 1.0))
    with pytest.raises(ValueError):
        prop_d1_fixed_data(np.eye(2), np.eye(3), np.eye(3))


def test_two_view_icr_is_the_plugin_two_view_estimate():
    views, _, _ = gaussian_views(300, 2, 6)
    assert two_view_icr(views) == pytest.approx(icr(views[:, 0], views[:, 1]).icr, rel=1e-12)


def test_saturation_crossing_step_and_scaling_exponent():
    from icml26.icr import crossing_step, saturation, scaling_exponent

    assert saturation([1.0, 2.0, 2.1, 2.1], 1) == pytest.approx(0.05)          # flat after the start: saturated
    assert saturation([1.0, 1.0, 1.5, 2.0], 1) == pytest.approx(1.0)           # still growing: fails a 10 % test
    assert saturation([2.0, 2.0, 1.0, 1.0], 1) == pytest.approx(0.5)           # a fall is a change too
    assert np.isnan(saturation([1, 2, 3], None)) and np.isnan(saturation([1, 2, 3, 4], 2))   # too few checkpoints after
    with pytest.raises(ValueError):
        saturation([1, 2, 3], 5)
    # log-linear interpolation of the threshold crossing between the bracketing checkpoints
    assert crossing_step([10, 20, 40], [0.0, 0.05, 0.3], 0.1) == pytest.approx(20 * 2 ** (0.05 / 0.25))
    assert crossing_step([10, 20, 40], [0.0, 0.1, 0.3], 0.1) == pytest.approx(40 * 2 ** (-1.0))   # 0.1 is not above 0.1
    assert np.isnan(crossing_step([10, 20, 40], [0.0, 0.0, 0.05], 0.1))         # never crosses
    assert np.isnan(crossing_step([10, 20, 40], [0.5, 0.6, 0.7], 0.1))          # crossed before the first checkpoint
    with pytest.raises(ValueError):
        crossing_step([20, 10, 40], [0, 0, 1], 0.1)
    assert scaling_exponent([128, 256, 512], [100, 200, 400]) == pytest.approx(1.0)      # proportional
    assert scaling_exponent([128, 256, 512], [100, 141.42, 200]) == pytest.approx(0.5, abs=1e-3)
    assert np.isnan(scaling_exponent([128], [100])) and np.isnan(scaling_exponent([128, 256], [100, np.nan]))


def test_limited_stats_saturation_and_interpolated_onset():
    icr_c = [0.6, 0.5, 0.4, 0.45, 0.5, 0.55]
    memo = [0, 0, 0, 0.05, 0.3, 0.6]
    st = limited_stats(_traj(icr_c, memo, [3] * 6, ts=[1, 1.5, 2, 2.0, 2.05, 2.1], tx=[1, 1, 1, 1, 1.5, 2]),
                       "dec4", 0.1, n_gen=64)
    assert st["rise_onset"] == 3
    assert st["ts_sat"] == pytest.approx(0.05) and st["tx_sat"] == pytest.approx(1.0)   # Tr S_s flat, Tr S_xi grows
    assert st["onset_interp"] == pytest.approx(40 * (50 / 40) ** (0.05 / 0.25))
    assert np.isnan(limited_stats(_traj(icr_c, [0] * 6, [3] * 6), "dec4", 0.1, n_gen=64)["ts_sat"])   # no rise


def test_device_plumbing_keeps_cpu_draws_and_returns_features_on_the_input_device():
    split = load_digits_split()
    x = split.pool_x[:32]
    a = train_edm(x, steps=5, channels=(8, 16, 32), batch_size=8, seed=3)
    b = train_edm(x, steps=5, channels=(8, 16, 32), batch_size=8, seed=3, device=torch.device("cpu"))
    assert a.losses == b.losses and all(isinstance(v, float) for v in a.losses)
    # the CPU path draws exactly what a plain CPU generator draws
    gen = torch.Generator().manual_seed(3)
    torch.manual_seed(3)
    idx = torch.randint(0, 32, (8,), generator=gen)
    gen2 = torch.Generator(device="cpu").manual_seed(3)
    assert torch.equal(idx, torch.randint(0, 32, (8,), generator=gen2, device="cpu"))
    f = a.ema.features(x, 0.4, "dec4")
    assert f.device == x.device and f.shape == (32, 16)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_training_and_features_on_cuda():
    split = load_digits_split()
    x = split.pool_x[:32]
    run = train_edm(x, steps=5, channels=(8, 16, 32), batch_size=8, seed=0, device="cuda")
    assert next(run.ema.parameters()).device.type == "cuda" and np.isfinite(run.losses).all()
    f = run.ema.features(x, 0.4, ("dec4", "dec2"))
    assert f["dec4"].device.type == "cpu"
    assert np.isfinite(heldout_loss(run.ema, split.test_x[:16]))


def test_gpu_variant_of_full_is_well_formed():
    from icml26.scales import select_preset

    cpu, gpu = select_preset(PRESETS, "full"), select_preset(PRESETS, "full", on_gpu=True)
    assert dict(select_preset(PRESETS, "full", on_gpu=False)) == dict(cpu)
    assert set(gpu["limited_steps"]) == set(gpu["limited_n"]) and set(cpu["limited_n"]) <= set(gpu["limited_n"])
    assert max(gpu["limited_n"]) > max(cpu["limited_n"]) and max(gpu["limited_n"]) <= 1297
    assert all(gpu["channels"][1] <= n / 4 for n in gpu["limited_n"])
    assert all(gpu["limited_steps"][n] >= cpu["limited_steps"].get(n, 0) for n in gpu["limited_n"])


def test_rise_until_stop_excess_and_random_index_distance():
    from icml26.icr import random_index_distance, rise_until, stop_excess

    steps = [10, 20, 40, 80, 160]
    u = [0.6, 0.5, 0.45, 0.5, 0.6]
    assert rise_until(steps, u, 160) == pytest.approx(0.15)                 # the U's right arm
    assert rise_until(steps, u, 100) == pytest.approx(0.05)                 # read at equal training: up to step 80
    assert rise_until(steps, [0.6, 0.5, 0.45, 0.4, 0.3], 160) == 0.0        # still falling: no rise
    assert np.isnan(rise_until(steps, u, 15))                               # one checkpoint: nothing to compare
    held = [3.0, 2.0, 1.0, 1.5, 2.0]
    assert stop_excess(held, 2) == 0.0 and stop_excess(held, 4) == pytest.approx(1.0) and stop_excess(held, 0) == 2.0
    assert random_index_distance(5, 2) == pytest.approx(6 / 5) and random_index_distance(5, 0) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        stop_excess(held, 5)
    with pytest.raises(ValueError):
        random_index_distance(3, 3)


def test_limited_stats_held_out_alignment_and_stopping_against_nulls():
    icr_c = [0.6, 0.5, 0.4, 0.45, 0.5, 0.55]                                 # ICR minimum at index 2
    held = [3, 2, 1.4, 1.5, 2, 2.5]                                         # held-out optimum at index 2
    st = limited_stats(_traj(icr_c, [0, 0, 0, 0.05, 0.3, 0.6], held, nn=[0.8, 0.9, 0.95, 0.7, 0.4, 0.2]), "dec4", 0.1,
                       n_gen=64)
    assert (st["held_argmin"], st["held_gap"], st["held_gap_abs"]) == (2, 0, 0)
    assert st["held_gap_null"] == pytest.approx(random_index_distance_ref(6, 2))
    assert st["held_align_gap"] == 1 and st["nn_onset"] == 2 and st["nn_gap"] == 0
    assert st["stop_diff"] == pytest.approx(1.0 - random_stop_gain(held)) and st["end_diff"] == pytest.approx(-random_stop_gain(held))
    assert st["excess_icr"] == 0.0 and st["excess_end"] == pytest.approx(1.1 / 1.4) and st["excess_first"] == pytest.approx(1.6 / 1.4)
    late = limited_stats(_traj([0.6, 0.5, 0.45, 0.4, 0.5, 0.55], [0] * 6, held), "dec4", 0.1)
    assert late["held_gap"] == 1 and late["held_align_gap"] is None           # no rise measured without n_gen
    edge = limited_stats(_traj(icr_c, [0, 0, 0, 0.05, 0.3, 0.6], [3, 2, 1.5, 1.4, 1.3, 1.2]), "dec4", 0.1, n_gen=64)
    assert edge["held_align_gap"] == 0                                      # held-out optimum at the end: no alignment


def random_index_distance_ref(n, t):
    return sum(abs(k - t) for k in range(n)) / n


def test_rich_stats_rise_window_and_raw_alignment():
    icr_c = [0.8, 0.7, 0.65, 0.6, 0.62, 0.66]
    held = [2.0, 1.5, 1.2, 1.1, 1.0, 0.95]                                   # still falling at the end
    st = rich_stats(_traj(icr_c, [0] * 6, held, align_raw=[1, 2, 3, 4, 5, 6]), "dec4", late_from=30,
                    icr_window=[0.9, 0.8, 0.7, 0.6, 0.55, 0.5])
    assert st["rise"] == pytest.approx(0.06) and st["held_at_end"]
    assert st["while_falling"] == pytest.approx(-st["with_loss"])             # one statistic while the loss falls throughout
    assert st["align_raw_trend"] == pytest.approx(1.0) and st["late_window"] == pytest.approx(-1.0) and st["late"] > 0
    assert np.isnan(rich_stats(_traj(icr_c, [0] * 6, held), "dec4", late_from=30)["late_window"])


def test_binned_curve_and_features_reject_sigma_zero():
    from icml26.icr import binned_curve

    steps, vals = binned_curve(np.arange(100.0), n_bins=4)
    assert steps.tolist() == [25, 50, 75, 100] and vals.tolist() == [12.0, 37.0, 62.0, 87.0]
    with pytest.raises(ValueError):
        binned_curve(np.arange(3.0), n_bins=4)
    net = EDMDenoiser(0.75, (8, 16, 32))
    with pytest.raises(ValueError, match="sigma > 0"):
        net.features(torch.zeros(2, 1, 8, 8), 0.0)


def test_training_trajectory_curve_states_and_window_remeasure():
    from icml26.icr import training_trajectory, window_trajectory

    split = load_digits_split()
    x = split.pool_x[:24]
    traj, run = training_trajectory(x, steps=12, checkpoints=[6, 12], channels=(8, 16, 32), batch_size=8, lr=2e-3,
                                    ema_beta=0.9, sigma_fix=0.4, heldout_images=split.test_x[:16], layers=("dec4",),
                                    n_views=2, n_gen=4, heun_steps=2, level=4, seed=1, keep_states=True, curve_points=6)
    assert traj.steps.tolist() == [6, 12] and traj.curve_steps.tolist() == [2, 4, 6, 8, 10, 12]
    assert traj.curve_heldout[[2, 5]] == pytest.approx(traj.heldout)         # the same loss at the shared steps
    assert len(traj.states) == 2 and not torch.equal(traj.states[0]["net.inp.weight"], traj.states[1]["net.inp.weight"])
    win = window_trajectory(traj.states, run.ema.sigma_data, (8, 16, 32), x, 0.4, layer="dec4", level=4, n_views=traj.n_views,
                            seed=1)
    np.testing.assert_allclose(win, traj.icr["dec4"], rtol=1e-10)          # same sigma, same draws: the same ICR
    assert traj.alignment_raw["dec4"].shape == (2,) and len(traj.train_loss) == 2
