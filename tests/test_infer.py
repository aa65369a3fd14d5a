"""Unit tests of icml26.infer (INFER chapter): data, KK tools, renderer, losses, metrics, input checks."""
import numpy as np
import pytest
import torch

from icml26 import infer as I
from icml26.scales import SCALES

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny():
    cfg = I.CabinConfig(grid=(4, 3, 1), max_order=4, n_fft=128, ir_length=128)
    return I.simulate_cabin(cfg)


# ------------------------------------------------------------------------------------------- data ---

def test_presets_cover_every_scale_and_build_configs():
    assert set(I.PRESETS) == set(SCALES)
    for p in I.PRESETS.values():
        c = I.cabin_config(p)
        assert c.n_fft >= c.ir_length and set(p["models"]) <= set(I.MODELS)


def test_simulated_cabin_is_causal_and_consistent(tiny):
    assert tiny.H.shape == (12, 65) and tiny.h.shape == (12, 128)
    np.testing.assert_allclose(np.fft.rfft(tiny.h, 128), tiny.H, atol=1e-10)
    # the ground truth puts almost nothing before the direct sound (pra's zero-phase high-pass is off)
    assert I.pre_arrival_energy(tiny.h, tiny.arrival).max() < 1e-2
    assert I.global_delay() == 40
    assert len(np.intersect1d(tiny.train, tiny.test)) == 0 and len(tiny.train) + len(tiny.test) == 12
    assert np.all(tiny.receivers[tiny.extra_test, 0] > 0.75 * tiny.cfg.room[0])


def test_simulation_is_deterministic(tiny):
    again = I.simulate_cabin(tiny.cfg)
    np.testing.assert_array_equal(again.H, tiny.H)


@pytest.mark.parametrize("kwargs, match", [
    (dict(fs=500), "sampling rate"),
    (dict(fs=2000, crossover_hz=600.0), "cannot honour"),
    (dict(fs=2000.5), "integer sampling rate"),
    (dict(n_fft=128, ir_length=256), "smaller than the response"),
    (dict(n_fft=127, ir_length=100), "even integer"),
    (dict(speaker=(3.0, 0.5, 0.5)), "outside the room"),
])
def test_bad_configs_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        I.CabinConfig(**kwargs)


def test_receivers_outside_the_room_are_rejected(tiny):
    with pytest.raises(ValueError, match="outside the room"):
        I.simulate_cabin(tiny.cfg, receivers=np.array([[1.0, 0.5, 0.5], [1.0, 2.0, 0.5]]))
    with pytest.raises(ValueError, match="NaN"):
        I.check_inside(np.array([[np.nan, 0.5, 0.5]]), tiny.cfg.room)
    model = I.FreqMLP(tiny.cfg.room, tiny.cfg.n_fft, width=8, depth=1)
    with pytest.raises(ValueError, match="outside the room"):
        I.predict(model, np.array([[-0.1, 0.5, 0.5]]))
    with pytest.raises(ValueError, match=r"shape \[M, 3\]"):
        I.predict(model, np.zeros((2, 2)))


# ------------------------------------------------------------------------------------ KK and Hilbert ---

def test_slab_sign_convention():
    sigma, beta = I.one_pole_slab(0.7, 256)
    assert np.max(np.abs(beta - I.hilbert_onesided(sigma))) < 1e-10
    assert np.max(np.abs(beta + I.hilbert_onesided(sigma))) > 0.5      # the wrong sign fails
    assert I.slab_kk_error(0.6, 128) < 1e-10


def test_hilbert_torch_numpy_and_matrix_agree():
    x = np.random.default_rng(0).standard_normal((5, 33))
    ref = I.hilbert_onesided(x)
    np.testing.assert_allclose(I.hilbert_onesided(torch.tensor(x)).numpy(), ref, atol=1e-12)
    np.testing.assert_allclose(x @ I.hilbert_matrix(33), ref, atol=1e-12)
    n = np.arange(33)
    w = np.pi * n / 32
    np.testing.assert_allclose(I.hilbert_onesided(np.cos(3 * w)), np.sin(3 * w), atol=1e-12)


def test_kk_residual_is_differentiable_and_zero_on_kk_pairs():
    sigma, beta = I.one_pole_slab(0.5, 64)
    r = I.kk_residual(torch.tensor(sigma), torch.tensor(beta + 0.3))   # a constant offset is not penalised
    assert r.abs().max() < 1e-10
    s = torch.rand(4, 33, requires_grad=True)
    I.kk_loss(s, torch.zeros(4, 33), torch.ones(33)).backward()
    assert s.grad is not None and torch.isfinite(s.grad).all()
    assert I.kk_relative_residual(sigma[None], beta[None]) < 1e-10


def test_reim_kk_needs_padding_and_rooms_are_not_min_phase(tiny):
    h = tiny.h
    assert I.reim_kk_residual(h, 256) < 1e-10
    assert I.reim_kk_residual(h, 128) > 1e-3
    with pytest.raises(ValueError, match="smaller"):
        I.reim_kk_residual(h, 64)
    gt = I.ground_truth_kk(tiny)
    assert gt["min_phase_error"] > 0.5
    # a minimum-phase FIR passes the log-magnitude / phase relation
    Hf = np.fft.rfft([1.0, -0.5, 0.06], 128)
    assert np.max(np.abs(np.angle(Hf) - I.minimum_phase_phase(np.abs(Hf), 128))) < 1e-10


def test_spectral_weights():
    f = np.fft.rfftfreq(256, 1 / 2000)
    w = I.spectral_weights(f, 450.0)
    assert abs(w.mean() - 1) < 1e-12 and np.all(w > 0)
    assert abs(I.a_weighting_db(np.array([1000.0]))[0]) < 0.01          # A(1 kHz) = 0 dB
    assert I.perceptual_weight(np.array([20.0]))[0] == pytest.approx(0.05)  # floored
    assert I.hardware_weight(np.array([450.0]), 450.0)[0] == pytest.approx(0.3)
    np.testing.assert_allclose(I.spectral_weights(f, 450.0, perceptual=False, hardware=False), 1.0)


# ------------------------------------------------------------------------------------------ models ---

def _field(tiny, **kw):
    c = tiny.cfg
    torch.manual_seed(0)
    return I.InferField(c.room, c.n_fft, c.fs, c.drivers(), width=16, depth=2, n_samples=6,
                        arrival_offset=I.global_delay(), **kw)


def test_field_render_shapes_and_causal_filter(tiny):
    model = _field(tiny)
    X = torch.tensor(tiny.receivers[:3], dtype=torch.float32)
    H = model(X)
    assert H.shape == (3, tiny.n_freq) and H.dtype == torch.complex64
    h = torch.fft.irfft(H, n=tiny.cfg.n_fft).detach().numpy()
    start = model.mask_start(X).numpy()
    for row, s in zip(h, start):
        assert np.abs(row[:s]).max() < 1e-5
    np.testing.assert_allclose(model.arrival(X).numpy(), tiny.arrival[:3], rtol=1e-5)
    assert I.pre_arrival_energy(h, tiny.arrival[:3]).max() < 1e-6
    sigma, beta = model.sampled_sigma_beta()
    assert sigma.shape[-1] == tiny.n_freq and (sigma > 0).all()


def test_render_matches_the_transmittance_formula(tiny):
    """One ray, direct evaluation of H = sum_i S_i e^{-j2pi f d_i/c} alpha_i T_i with complex T_i."""
    model = _field(tiny, n_azi=1, n_ele=1, causal=False)
    x = torch.tensor(tiny.receivers[:1], dtype=torch.float32)
    H = model.render(x)
    dirs = I.sphere_directions(1, 1)
    d = model.sample_distances()
    expected = 0
    for r in range(len(dirs)):
        pts = x[0] + dirs[r] * d[:, None]
        sigma, beta, S = model.point_fields(pts, (-dirs[r]).expand_as(pts))
        du = torch.cat([d[1:] - d[:-1], torch.tensor([1e10])])[:, None]
        alpha = 1 - torch.exp(-sigma * du)
        T = torch.ones(model.n_freq, dtype=torch.complex64)
        acc = 0
        for i in range(len(d)):
            acc = acc + S[i] * torch.exp(-2j * np.pi * model.freqs * d[i] / I.SPEED_OF_SOUND) * alpha[i] * T
            T = T * (1 - alpha[i]) * torch.exp(1j * beta[i] * du[i])
        expected = expected + acc
    np.testing.assert_allclose(H[0].detach().numpy(), (expected / len(dirs)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_avr_variant_has_scalar_sigma_and_no_beta(tiny):
    model = _field(tiny, variant="avr")
    model(torch.tensor(tiny.receivers[:2], dtype=torch.float32))
    sigma, beta = model.sampled_sigma_beta()
    assert torch.all(beta == 0) and torch.allclose(sigma, sigma[:, :1].expand_as(sigma))
    with pytest.raises(ValueError, match="variant"):
        _field(tiny, variant="nerf")


def test_sphere_directions_are_unit_vectors():
    d = I.sphere_directions(4, 3, 0.3)
    assert d.shape == (14, 3)
    torch.testing.assert_close(d.norm(dim=-1), torch.ones(14))


# -------------------------------------------------------------------------------- training, metrics ---

def test_training_reduces_loss_and_is_deterministic(tiny):
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        m = I.FreqMLP(tiny.cfg.room, tiny.cfg.n_fft, width=32, depth=2)
        runs.append(I.train_model(m, tiny, tiny.train, iters=60, batch=4, seed=0, show_progress=False))
    assert runs[0].losses == runs[1].losses
    assert np.mean(runs[0].losses[-10:]) < np.mean(runs[0].losses[:10])
    torch.manual_seed(0)
    field = _field(tiny)
    r = I.train_model(field, tiny, tiny.train, iters=5, batch=2, lam_kk=1.0, show_progress=False)
    assert len(r.kk_losses) == 5 and np.isfinite(r.losses).all()
    td = I.TimeMLP(tiny.cfg.room, tiny.cfg.n_fft, width=16, depth=1)
    r = I.train_model(td, tiny, tiny.train, iters=3, batch=2, show_progress=False)
    assert np.isfinite(r.losses).all()
    with pytest.raises(ValueError, match="positive"):
        I.train_model(td, tiny, tiny.train, iters=0, batch=2)


def test_metrics():
    rng = np.random.default_rng(0)
    H = rng.standard_normal((50, 65)) + 1j * rng.standard_normal((50, 65))
    assert I.magnitude_error_db(H, H) == 0 and I.angle_error(H, H) == 0 and I.wrapped_phase_error(H, H) < 1e-12
    rand = np.abs(H) * np.exp(1j * rng.uniform(0, 2 * np.pi, H.shape))
    assert I.angle_error(rand, H) == pytest.approx(16 / np.pi**2, abs=0.03)
    assert I.wrapped_phase_error(rand, H) == pytest.approx(np.pi / 2, abs=0.05)
    assert I.magnitude_error_db(2 * H, H) == pytest.approx(20 * np.log10(2), abs=0.02)   # eps floor at notches
    with pytest.raises(ValueError, match="shape"):
        I.angle_error(H[:, :10], H)
    with pytest.raises(ValueError, match="NaN"):
        I.magnitude_error_db(H * np.nan, H)
    h = np.zeros((1, 20))
    h[0, 3], h[0, 10] = 1.0, 1.0
    assert I.pre_arrival_energy(h, np.array([10.0]), margin=3)[0] == pytest.approx(0.5)
    mag, ang = I.per_receiver_errors(H, H)
    assert mag.shape == (50,) and np.all(ang == 0)
