"""Unit tests of icml26.ate_mixtures: exact models, Glauber kernel, entropy functionals, MC sampler, testers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from icml26 import SCALES
from icml26 import ate_mixtures as am
from icml26.ate_mixtures._reference import incremental_python_sweep, naive_glauber_sweep


def rng(seed=0):
    return np.random.default_rng(seed)


# --- models and bad input ---------------------------------------------------------------------

def test_states_enumerate_bits():
    X = am.states(3)
    assert X.shape == (8, 3)
    assert X[5].tolist() == [1, 0, 1]  # 5 = 0b101, bit i is coordinate i


def test_product_mixture_is_normalised_and_posterior_sums_to_one():
    m = am.ProductMixture.random(6, 3, rng(1))
    assert np.allclose(m.components.sum(axis=1), 1) and math.isclose(m.mu.sum(), 1.0)
    assert np.allclose(m.posterior.sum(axis=0), 1)
    x = 0b101101
    bits = am.states(6)[x].astype(bool)
    expected = np.prod(np.where(bits, m.marginals[1], 1 - m.marginals[1]))
    assert math.isclose(m.components[1, x], expected)


def test_curie_weiss_matches_brute_force():
    m = am.CurieWeissMixture(6, 0.5, (0.8, -0.8))
    M = (2 * am.states(6) - 1.0).sum(axis=1)
    w = np.exp(0.5 / 12 * M ** 2 + 0.8 * M)
    assert np.allclose(m.components[0], w / w.sum())
    assert np.allclose(m.components.sum(axis=1), 1)


@pytest.mark.parametrize("weights", [(0.5, 0.6), (0.3, 0.3)])
def test_weights_must_sum_to_one(weights):
    with pytest.raises(ValueError, match="sum to 1"):
        am.ProductMixture(weights, [[0.2, 0.3], [0.7, 0.8]])


@pytest.mark.parametrize("marg", [[[1.2, 0.3], [0.7, 0.8]], [[-0.1, 0.3], [0.7, 0.8]], [[np.nan, 0.3], [0.7, 0.8]]])
def test_probabilities_outside_unit_interval(marg):
    with pytest.raises(ValueError, match=r"\[0, 1\]|finite"):
        am.ProductMixture((0.5, 0.5), marg)


def test_negative_weight_and_wrong_count():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        am.ProductMixture((1.5, -0.5), [[0.2], [0.7]])
    with pytest.raises(ValueError, match="expected 2"):
        am.ProductMixture((1.0,), [[0.2], [0.7]])


def test_too_large_n_points_to_monte_carlo():
    big = am.ProductMixture.symmetric(40, 0.9)  # fine as a model ...
    with pytest.raises(ValueError, match="GlauberSampler"):
        big.mu  # ... but not enumerable
    with pytest.raises(ValueError, match="GlauberSampler"):
        am.glauber_matrix(big)
    with pytest.raises(ValueError, match="too large"):
        am.states(20)


# --- Glauber kernel -------------------------------------------------------------------------

def test_glauber_kernel_is_stochastic_stationary_reversible():
    m = am.ProductMixture.random(5, 2, rng(2))
    P = am.glauber_matrix(m)
    assert P.nnz == 5 * 32 + 32
    assert np.allclose(P.sum(axis=1), 1)
    assert np.allclose(P.T @ m.mu, m.mu, atol=1e-15)
    F = P.multiply(m.mu[:, None]).toarray()
    assert np.allclose(F, F.T, atol=1e-15)
    assert (P.toarray() >= 0).all()


def test_product_measure_has_gap_one_over_n():
    # a single product component: heat-bath random scan refreshes each coordinate w.p. 1/n, gap = 1/n
    m = am.ProductMixture((1.0,), [[0.3, 0.6, 0.8, 0.1, 0.5, 0.7, 0.2, 0.9, 0.4]])
    assert math.isclose(am.spectral_gap(m), 1 / 9, rel_tol=1e-8)  # 512 states: the eigsh path


def test_spectral_gap_eigsh_matches_dense_and_brief_table():
    m = am.ProductMixture.symmetric(9, 0.85)
    S_gap = am.spectral_gap(m)
    P = am.glauber_matrix(m).toarray()
    d = np.sqrt(m.mu)
    ev = np.linalg.eigvalsh((d[:, None] * P / d[None, :] + (d[:, None] * P / d[None, :]).T) / 2)
    assert math.isclose(S_gap, 1 - ev[-2], rel_tol=1e-7)
    assert round(am.relaxation_time(am.ProductMixture.symmetric(6, 0.85))) == 47  # brief §3 numerics


def test_evolve_records_tv_and_converges():
    m = am.ProductMixture.random(4, 2, rng(3))
    P = am.glauber_matrix(m)
    start = np.zeros((16, 2))
    start[0, 0] = start[15, 1] = 1
    times, d = am.evolve(P, start, 400, record=[0, 10, 400], target=m.mu)
    assert times.tolist() == [0, 10, 400] and d.shape == (3, 2)
    assert np.all(d[0] > d[1]) and np.all(d[2] < 1e-6)
    with pytest.raises(ValueError):
        am.evolve(P, start, 10, record=[11])


# --- entropy functionals --------------------------------------------------------------------

def test_entropy_is_kl_and_product_is_one_ate():
    r = rng(4)
    m = am.ProductMixture((1.0,), r.uniform(0.1, 0.9, size=(1, 6)))
    for _ in range(20):
        nu = r.dirichlet(np.ones(64))
        f = am.density(nu, m.mu)
        assert math.isclose(am.entropy(m.mu, f), am.kl(nu, m.mu), rel_tol=1e-10)
        assert am.entropy(m.mu, f) <= am.local_functional(m.mu, f) + 1e-12


def test_mixture_identities_hold():
    r = rng(5)
    m = am.ProductMixture.random(5, 3, r)
    for _ in range(20):
        nu = m.mu * r.lognormal(0, 2, m.mu.size)
        res = am.mixture_identities(m, nu / nu.sum())
        for key, val in res.items():
            if key in am.IDENTITY_KEYS:
                assert val < 1e-10, key
            else:
                assert val > -1e-12, key


def test_weak_ate_fails_as_plain_ate_for_separated_mixture():
    # the weight-shifted alternative: KL stays ~0.08 while the local term is tiny (exponential ATE constant)
    mu = am.ProductMixture.symmetric(10, 0.85)
    nu = am.weight_shift(mu, 0.2)
    assert am.ate_constant_lower_bound(mu.mu, nu.mu) > 10
    assert am.kl(nu.mu, mu.mu) > 0.05 and am.local_kl(nu.mu, mu.mu) < 0.01


def test_tstar_bound_and_separated_limit():
    b = am.tstar_bound(np.array([0.0, 1e6]), n=10, m=16, k=2, mu_min=1e-4)
    assert math.isclose(b[1], math.sqrt(1 / 32), rel_tol=1e-9) and b[0] > b[1]
    with pytest.raises(ValueError):
        am.tstar_bound(1, n=3, m=0, k=2, mu_min=0.1)
    with pytest.raises(ValueError):
        am.tstar_bound(1, n=3, m=2, k=2, mu_min=0.0)
    assert np.allclose(am.separated_limit([4, 16]), [3 / 16, 6435 / 65536])


# --- Monte-Carlo sampler --------------------------------------------------------------------

@pytest.mark.parametrize("model", [am.ProductMixture.random(6, 2, np.random.default_rng(6)),
                                   am.CurieWeissMixture(6, 0.5, (0.8, -0.8), weights=(0.3, 0.7))])
def test_mc_sampler_follows_the_exact_kernel(model):
    # law of |x| after 3 sweeps from 0^n: Monte Carlo vs exact sparse evolution of delta_0
    r = rng(7)
    s = am.GlauberSampler(model, np.zeros((20000, 6), dtype=np.uint8), r)
    s.sweep(3)
    hist = np.bincount(s.X.sum(axis=1), minlength=7) / 20000
    start = np.zeros(64)
    start[0] = 1
    _, law = am.evolve(am.glauber_matrix(model), start, 18)
    exact = np.bincount(am.states(6).sum(axis=1), weights=law[0], minlength=7)
    assert np.abs(hist - exact).sum() / 2 < 0.02


def test_mc_sampler_matches_exact_evolution_and_validates():
    model = am.ProductMixture.random(5, 2, rng(8))
    r = rng(9)
    s = am.GlauberSampler(model, np.zeros((40000, 5), dtype=np.uint8), r)
    for _ in range(7):
        s.step()
    start = np.zeros(32)
    start[0] = 1
    _, law = am.evolve(am.glauber_matrix(model), start, 7)
    emp = np.bincount(s.X.astype(np.int64) @ (1 << np.arange(5)), minlength=32) / 40000
    assert am.tv(emp, law[0]) < 0.03
    with pytest.raises(ValueError):
        am.GlauberSampler(model, np.zeros((3, 4)), r)
    with pytest.raises(ValueError):
        am.GlauberSampler(model, np.full((3, 5), 2), r)


@pytest.mark.parametrize("sweep", [naive_glauber_sweep, incremental_python_sweep])
def test_reference_sweeps_are_the_same_dynamics(sweep):
    model = am.ProductMixture.random(4, 2, rng(10))
    X = sweep(model, np.zeros((3000, 4), dtype=np.uint8), rng(11))  # one sweep = 4 steps
    start = np.zeros(16)
    start[0] = 1
    _, law = am.evolve(am.glauber_matrix(model), start, 4)
    emp = np.bincount(X.astype(np.int64) @ (1 << np.arange(4)), minlength=16) / 3000
    assert am.tv(emp, law[0]) < 0.05
    assert "naive_glauber_sweep" not in am.__all__  # benchmark/test oracles are not public API


def test_marginals_are_read_only_and_degenerate_marginals_stay_finite():
    m = am.ProductMixture([0.5, 0.5], [[1.0, 1.0, 0.9], [0.0, 0.0, 0.1]])
    with pytest.raises(ValueError):
        m.marginals[0, 0] = 0.5
    s = am.GlauberSampler(m, np.array([[1, 1, 1], [0, 0, 0]] * 50, dtype=np.uint8), rng(3))
    s.sweep(5)
    assert not np.any(np.isnan(s.stats))


def test_curie_weiss_beta_checked():
    with pytest.raises(ValueError, match="beta"):
        am.CurieWeissMixture(6, 1.2, (0.8, -0.8))


def test_validation_of_kl_tv_dirichlet_and_tstar():
    with pytest.raises(ValueError, match="probability vector"):
        am.kl(np.array([0.5, 0.6]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError):
        am.tv(np.ones(3) / 3, np.ones(4) / 4)
    with pytest.raises(ValueError):
        am.dirichlet_form(np.ones(4) / 4, np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="ATE constant"):
        am.tstar_bound(10, 4, 16, 2, 0.01, c=0.0)
    assert math.isclose(am.kl(np.array([0.25, 0.75]), np.array([0.5, 0.5])),
                        0.25 * math.log(0.5) + 0.75 * math.log(1.5))


# --- functional constants, exact laws beyond enumeration, predictions -------------------------

def test_functional_constant_of_product_is_one_and_orders():
    prod = am.ProductMixture.symmetric(5, 0.8).components[0]
    est = am.functional_constant(prod, "ate", rng(0))
    assert abs(est.value - 1) < 1e-3 and est.value <= 1 + 1e-6 and math.isclose(est.poincare_limit, 1.0)
    cw = am.CurieWeissMixture(6, 0.5, (0.8, -0.8)).components[0]
    a, m = am.functional_constant(cw, "ate", rng(1)), am.functional_constant(cw, "mlsi", rng(1))
    assert a.value >= a.poincare_limit - 1e-9 and m.value >= m.poincare_limit - 1e-9 and m.value <= a.value
    g = a.g
    assert math.isclose(am.constants.ratio(cw, g, "ate"), a.value, rel_tol=1e-9)


def test_lumped_chain_matches_exact_enumeration():
    for model in (am.ProductMixture.symmetric(6, 0.8), am.CurieWeissMixture(6, 0.5, (0.8, -0.8))):
        Q = am.lumped_chain(model)
        assert np.allclose(Q.sum(axis=1), 1) and np.all(Q >= 0)
        start = np.zeros(64)
        start[63] = 1
        _, law = am.evolve(am.glauber_matrix(model), start, 7)
        ones = am.states(6).sum(axis=1)
        exact = np.bincount(ones, weights=law[0], minlength=7)
        assert np.allclose(np.linalg.matrix_power(Q.T, 7)[:, 6], exact, atol=1e-12)
    with pytest.raises(ValueError, match="exchangeable"):
        am.lumped_chain(am.ProductMixture.random(4, 2, rng()))


def test_separated_limits_and_the_two_mode_prediction():
    ms = np.array([1, 4, 16, 64])
    assert np.allclose(am.separated_limit_k(ms, [0.5, 0.5]), am.separated_limit(ms))
    k3, k4 = am.separated_limit_k(256, np.ones(3) / 3), am.separated_limit_k(256, np.ones(4) / 4)
    assert am.separated_limit(256)[0] < k3[0] < k4[0]
    m = am.ProductMixture.symmetric(8, 0.92)
    pred = am.mode_prediction(m, [16, 64], 160, rng(0))["mean"]
    assert np.all(pred < am.separated_limit([16, 64])) and np.all(pred > 0.5 * am.separated_limit([16, 64]))
    # k = 2: the prediction is sep(m) ||(mu1 - mu2) P^t||_1 / 2 exactly (the metastable form of earlier revisions)
    _, comps = am.evolve(am.glauber_matrix(m), m.components.T, 160)
    closed = am.separated_limit([16, 64]) * 0.5 * np.abs(comps[0][:, 0] - comps[0][:, 1]).sum()
    assert np.allclose(pred, closed, rtol=1e-10)
    with pytest.raises(ValueError):
        am.ProductMixture.corners(5, 3, 0.9)


def test_weight_power_predictions_and_budget():
    v = am.ProductMixture.symmetric(8, 0.85)
    a = am.weight_shift(v, 0.1)
    exact = am.weight_power_exact(v, a, 200, 2.706)
    assert abs(exact - am.weight_power_ncx2(v, a, 200, 0.1)) < 0.05
    assert math.isclose(am.weight_power_exact(v, v, 200, -1.0), 1.0)
    m0, _ = am.local_query_moments(v, v, 8)
    assert abs(m0) < 1e-12  # the estimate is unbiased under the null
    assert am.local_budget(v, am.weight_shift(v, 0.2), 8, 0.1) > am.local_budget(v, am.local_perturbation(v, 0.2), 8, 0.1)
    assert am.local_budget(v, v, 8, 0.1) == math.inf


def test_mixing_time_fixed_target_and_fit():
    out = am.mixing_time_vs_n([6, 8], 0.92, 64, 5, 10, 0.2, rng(4))
    assert out["t_mix"].shape == (2,) and np.all(out["worst_end"] > 0.2)
    fit = am.fit_laws([4, 8, 16], [4, 8, 16], ("a n", "a n log n"))
    assert math.isclose(fit["a n"], 1.0) and fit["a n rms rel. error"] < 1e-12 and fit["a n log n rms rel. error"] > 0.05


# --- data-based starts and testers ----------------------------------------------------------

def test_data_based_tv_shapes_and_determinism():
    m = am.ProductMixture.symmetric(6, 0.9)
    a = am.data_based_tv(m, (4, 16), 5, [0, 6, 12], rng(12))
    b = am.data_based_tv(m, (4, 16), 5, [0, 6, 12], rng(12))
    assert a.mean.shape == (2, 3) and a.worst.shape == (3,)
    assert np.array_equal(a.mean, b.mean)
    starts = am.empirical_starts(m, 7, 3, rng(13))
    assert np.allclose(starts.sum(axis=0), 1) and np.all((starts * 7) % 1 == 0)


def test_testers_level_and_power():
    mu = am.ProductMixture.symmetric(8, 0.85)
    budget = am.TesterBudget(n_w=200, n_loc=400, r=8, alpha=0.1)
    th = am.calibrate(mu, budget, 1000, rng(14))
    null = am.rejection_rates(mu, mu, budget, th, 300, rng(15))
    assert all(v <= 0.18 for v in null.values())
    alt = am.rejection_rates(mu, am.weight_shift(mu, 0.3), budget, th, 100, rng(16))
    assert alt["T_w"] > 0.9
    loc = am.rejection_rates(mu, am.local_perturbation(mu, 0.3), budget, th, 100, rng(17))
    assert loc["T_loc"] > 0.9


def test_tester_input_checks():
    with pytest.raises(ValueError, match="r >= 2"):
        am.TesterBudget(r=1)
    with pytest.raises(ValueError):
        am.TesterBudget(alpha=1.5)
    with pytest.raises(ValueError, match="different cubes"):
        am.local_statistic(am.ProductMixture.symmetric(4, 0.8), am.ProductMixture.symmetric(5, 0.8), 10, 2, 2, rng())
    with pytest.raises(ValueError):
        am.weight_shift(am.ProductMixture.random(4, 3, rng()), 0.1)
    with pytest.raises(ValueError, match="sum to 1|\\[0, 1\\]"):
        am.weight_shift(am.ProductMixture.symmetric(4, 0.8), 0.6)


def test_presets_cover_every_scale():
    assert set(am.PRESETS) == set(SCALES)
    for p in am.PRESETS.values():
        assert 256 in p["tv_ms"] and p["m_ref"] in p["floor_ms"] and 0.2 in p["deltas"]
        assert p["cw_n"] in p["cw_ns"] and 2 in p["ksweep"]["ks"] and p["testers"]["n"] in range(4, 15)
        assert any(n >= 10 for n in p["floor_ns"]) and p["tv_n"] >= 10
        assert p["cw2_n"] in p["cw2_ns"] and p["calls"]["n_eps"] in p["calls_ns"] and 0.2 in p["calls_deltas"]
        assert p["floor_reps"] % p["n_batches"] == 0 and p["tv_reps"] % p["n_batches"] == 0
        assert len(p["rate_ns"]) >= p["rate"]["last"]
        # C7p's growth test needs two disjoint windows and the tester's n (C7z); C13 needs its n among the constants' n
        assert len(p["budget_ns"]) >= 2 * p["efficiency"]["window"] and p["testers"]["n"] in p["budget_ns"]
        assert p["star_n"] in p["star_ns"] and p["star_reps"] % p["n_batches"] == 0 and len(p["star_ns"]) >= 2
    assert all(set(PRESET) == set(am.PRESETS["smoke"]) for PRESET in am.PRESETS.values())  # same keys at every scale


# --- revision 2: exact rates at any n, closed-form tester moments, all-mode predictions, batches ------------

def test_lumped_mixing_time_equals_enumeration_and_rates():
    n = 8
    for model in (am.ProductMixture.symmetric(n, 0.9), am.CurieWeissMixture(n, 0.9, (0.5, -0.5)), am.UniformLevel(n)):
        full = np.zeros(2 ** n)
        full[0] = full[-1] = 0.5
        _, law = am.evolve(am.glauber_matrix(model), full, 30, record=np.arange(31), target=model.mu)
        t_exact = int(np.flatnonzero(law <= 0.1)[0]) if np.any(law <= 0.1) else math.inf
        got = am.lumped_mixing_time(model, am.corner_start(n), 0.1, 30)
        assert got["t_tv"] == t_exact and math.isclose(got["tv0"], law[0], rel_tol=1e-12)
    assert np.isclose(am.level_law(am.UniformLevel(50)), 1 / 51).all()
    # the control mixes in ~n^2 steps, one product component in ~n log n
    prod = am.rate_vs_n(lambda m: am.ProductMixture((1.0,), np.full((1, m), 0.9)), [64, 128, 256],
                        lambda m: am.corner_start(m, (0.0, 1.0)), 0.05, 20)
    ctrl = am.rate_vs_n(am.UniformLevel, [32, 64, 128], lambda m: am.corner_start(m, (1.0, 0.0)), 0.05, 20)
    assert am.tail_slope(prod["n"], prod["t_tv"]) < 1.3 and am.tail_slope(ctrl["n"], ctrl["t_tv"]) > 1.8
    fit = am.fit_laws([8, 16, 32], [64, 256, 1024])
    assert fit["a n^2 rms rel. error"] < 1e-12 and math.isclose(fit["a n^2"], 1.0)
    with pytest.raises(ValueError, match="positive and finite"):
        am.tail_slope([8, 16], [3, math.inf])
    # at n = 2048 the middle levels' stationary mass underflows to 0: the KL time must still be found
    big = am.lumped_mixing_time(am.ProductMixture.symmetric(2048, 0.92), am.corner_start(2048), 0.05, 40_000, 0.01)
    assert 0 < big["t_kl"] < 40_000 and 0 < big["t_tv"] < 40_000
    # the start's divergences in log space: KL(delta_{1^n}/2 + delta_{0^n}/2 || mu) = log(1 / (2 mu(1^n))) exactly
    assert math.isclose(big["kl0"], -math.log(2 * math.exp(am.ProductMixture.symmetric(2048, 0.92).log_weight_by_ones()[-1])),
                        rel_tol=1e-9)
    assert math.isclose(big["log_chi2_0"], big["kl0"], rel_tol=1e-6)  # two atoms of mass 1/2: 1 + chi^2 = e^{D_0}
    with pytest.raises(ValueError):
        am.lumped_mixing_time(am.UniformLevel(4), np.ones(4) / 4, 0.1, 10)


def test_closed_form_query_moments_match_monte_carlo():
    from icml26.ate_mixtures.testing import _chi2_estimate_moments
    r_, p_, q_ = 6, np.array([0.3]), np.array([0.55])
    c = np.random.default_rng(0).binomial(r_, q_[0], size=400_000)
    est = (c * (c - 1) / (r_ * (r_ - 1)) - 2 * p_[0] * c / r_ + p_[0] ** 2) / (p_[0] * (1 - p_[0]))
    mean, var = _chi2_estimate_moments(p_, q_, r_)
    assert abs(est.mean() - mean[0]) < 4 * est.std() / math.sqrt(est.size) and math.isclose(est.var(), var[0], rel_tol=0.02)
    v = am.ProductMixture.symmetric(8, 0.85)
    calls, r_best, N = am.oracle_calls(v, am.local_perturbation(v, 0.2), [2, 8, 32, 128], 0.1)
    assert math.isclose(calls, N * r_best) and r_best in (2, 8, 32, 128)


def test_families_and_k3_weight_shift():
    v = am.ProductMixture.symmetric(8, 0.85)
    c = am.split_perturbation(v, 0.2)
    assert np.allclose(c.weights, [0.6, 0.4]) and math.isclose(c.marginals[0, 0], 0.75) and c.marginals[0, 2] == 0.85
    v3 = am.ProductMixture.corners(8, 3, 0.85)
    a3 = am.weight_shift(v3, 0.2)
    assert np.allclose(a3.weights, [1 / 3 + 0.2, 1 / 3, 1 / 3 - 0.2])
    assert set(am.FAMILIES) == {"A", "B", "C"}


def test_mode_prediction_and_batches():
    m = am.ProductMixture.symmetric(8, 0.92)
    pred = am.mode_prediction(m, [16, 64], 160, rng(1))
    gap = am.spectral_gap(m)
    slowest = am.separated_limit([16, 64]) * (1 - gap) ** 160 * am.component_tv(m)  # the slowest-mode approximation
    assert np.allclose(pred["mean"], slowest, rtol=0.02) and np.all(pred["q"] > pred["mean"])
    m4 = am.ProductMixture.corners(8, 4, 0.98)
    p4 = am.mode_prediction(m4, [64], 0, rng(2), draws=20_000)
    assert math.isclose(p4["mean"][0], am.separated_limit_k(64, m4.weights)[0], rel_tol=0.03)
    b = am.batches(np.arange(20.0).reshape(2, 10), 5)
    assert len(b) == 5 and b[0].shape == (2, 2)
    with pytest.raises(ValueError):
        am.batches(np.arange(5.0), 5)


def test_slope_and_limit_validation():
    with pytest.raises(ValueError, match="positive"):
        am.loglog_slope([1, 2], [0.0, 1.0])
    with pytest.raises(ValueError):
        am.separated_limit([0])
    with pytest.raises(ValueError):
        am.power_z([0.5], [math.nan], 100)
    with pytest.raises(ValueError):
        am.fit_laws([4, 8], [3, math.inf])


def test_slope_test_separates_the_paper_law_from_the_log_factor_rival():
    """C5a/C5q/C10a/C11a: on synthetic floors of each law, with per-batch noise like the chapter's, the declared
    region [-0.65, slope_edge] holds the whole interval of m^(-1/2) and excludes that of sqrt(log m / m)."""
    import icml26

    ms = np.array([16, 64, 256, 1024], dtype=float)
    edge = am.slope_edge(ms)
    assert -0.5 < edge < am.rival_slope(ms) < -0.35  # the old band's upper edge -0.35 admitted the rival
    assert math.isclose(edge, 0.5 * (-0.5 + am.loglog_slope(ms, np.sqrt(np.log(ms) / ms))))
    region = icml26.between(-0.65, edge)
    g = rng(5)
    for law, expected in ((ms ** -0.5, "inside"), (np.sqrt(np.log(ms) / ms), "outside")):
        slopes = [am.loglog_slope(ms, law * np.exp(0.02 * g.standard_normal(ms.size))) for _ in range(10)]
        s_ = icml26.over_seeds(slopes)
        assert region.position(s_.ci_low, s_.ci_high) == expected, (law, s_)
    assert am.slope_edge([16, 64, 256, 1024, 4096]) < edge  # a wider grid moves the rival towards -1/2
    with pytest.raises(ValueError):
        am.rival_slope([1, 16])


def test_cdf_mid_counts_atoms_half():
    v = np.array([0.1, 0.2, 0.2, 0.3])
    assert math.isclose(am.cdf_mid(v, 0.2), 0.25 + 0.5 * 0.5)       # one value below, the atom of two counts half
    assert math.isclose(am.cdf_mid(v, 0.25), 0.75)                  # no atom within 1 % of 0.25
    assert math.isclose(am.cdf_mid(v, 0.2, weights=[3, 1, 0, 0]), 0.75 + 0.5 * 0.25)
    assert am.cdf_mid(v, 1.0) == 1.0 and am.cdf_mid(v, 0.01) == 0.0


def test_conditional_prediction_given_the_mode_masses():
    m = am.ProductMixture.symmetric(8, 0.92)
    P = am.glauber_matrix(m)
    rho = np.array([[0.5, 0.7, 0.2], [0.5, 0.3, 0.8]])
    pred = am.conditional_prediction(m, rho, 0, P)
    # at t = 0: TV(sum_a rho_a mu_a, mu) = |rho_1 - 1/2| TV(mu_1, mu_2) for two equal-weight components
    assert np.allclose(pred, np.abs(rho[0] - 0.5) * am.component_tv(m), atol=1e-12)
    later = am.conditional_prediction(m, rho, 160, P)
    assert later[0] < 1e-12 and np.all(later[1:] < pred[1:])
    # averaged over binomial mode counts it is the unconditional prediction (k = 2: exact binomial sum)
    c = np.arange(65)
    from scipy import stats as sps
    avg = sps.binom.pmf(c, 64, 0.5) @ am.conditional_prediction(m, np.stack([c / 64, 1 - c / 64]), 160, P)
    assert math.isclose(avg, am.mode_prediction(m, [64], 160, rng(0), P=P)["mean"][0], rel_tol=1e-9)
    with pytest.raises(ValueError):
        am.conditional_prediction(m, np.ones(3) / 3, 0, P)


def test_combined_z_dilutes_one_cell_and_adds_up_a_bias():
    assert math.isclose(am.combined_z([-0.6745]), 0.6745, rel_tol=1e-9)  # one z: its own |z|
    assert math.isclose(am.combined_z([3.0]), 3.0, rel_tol=1e-9)
    assert am.combined_z([3.6] + [0.5] * 11) < 3.0                  # one unlucky cell among twelve
    assert am.combined_z([2.0] * 12) > 3.0                          # the same 2-SE bias in every cell
    with pytest.raises(ValueError):
        am.combined_z([math.inf])


def test_fisher_combination_is_calibrated_and_beats_the_union_on_a_split():
    v = am.ProductMixture.symmetric(8, 0.85)
    b = am.TesterBudget(n_w=200, n_loc=400, r=8, alpha=0.1)
    th = am.calibrate(v, b, 2000, rng(3))
    assert np.all(np.diff(th["null T_loc"]) >= 0)
    p = am.null_pvalue(th["null T_w"], th["null T_w"])
    assert 0 < p.min() and p.max() <= 1
    null = am.rejections(v, v, b, th, 2000, rng(4))
    assert abs(null["T_comb"].mean() - 0.1) < 0.03
    split = am.rejections(v, am.split_perturbation(v, 0.2), b, th, 2000, rng(5))
    assert split["T_comb"].mean() > split["T_mix"].mean()


def test_growth_ratio_tells_a_polynomial_from_an_exponential():
    """C7p's statistic: 1 for any power of n, the ratio of the n's for any exponential rate; the edge lies between."""
    ns = np.array([6.0, 8, 10, 12, 14])
    edge = am.growth_edge(ns)
    for d in (0.5, 1.5, 3.0):
        assert math.isclose(am.growth_ratio(ns, ns ** d), 1.0, rel_tol=1e-9)
    for b in (0.1, 1.0):
        assert am.growth_ratio(ns, np.exp(b * ns)) > edge > 1.0
        assert math.isclose(am.growth_ratio(ns, np.exp(b * ns)), edge ** 2, rel_tol=1e-9)
    assert am.growth_ratio(ns, ns ** 1.5 + 50 * ns) < edge  # a sum of powers drifts, but stays below the edge here
    with pytest.raises(ValueError, match="does not grow"):
        am.growth_ratio(ns, 1 / ns)
    with pytest.raises(ValueError):
        am.growth_ratio(ns[:3], ns[:3])


def test_mix_budget_optimises_the_split_and_counts_the_skewness():
    from icml26.ate_mixtures.testing import _query_table, _skewed_power, _table_skewness
    v = am.ProductMixture.symmetric(8, 0.85)
    rs = (8, 32, 128)
    a = am.mix_budget(v, am.weight_shift(v, 0.2), 0.1, 0.8, rs)
    assert a.n_loc == 0 and math.isclose(a.total, a.n_w)  # the oracle is nearly blind to a weight shift: T_w alone
    assert math.isclose(am.weight_power_ncx2(v, am.weight_shift(v, 0.2), a.n_w, 0.05), 0.8, rel_tol=1e-6)
    b = am.mix_budget(v, am.local_perturbation(v, 0.2), 0.1, 0.8, rs)
    assert b.n_loc > 1 and b.r in rs and b.n_w in (0.0, 10.0)  # T_w useless on family B: none, or its smallest valid size
    # the skewness in closed form equals the brute-force sum over the binomial counts
    tab = _query_table(v, am.local_perturbation(v, 0.2))
    p, q, w = tab
    c = np.arange(9)
    from scipy import stats as sps
    pmf = sps.binom.pmf(c[None, :], 8, q[:, None])
    val = (c * (c - 1) / 56 - 2 * p[:, None] * c / 8 + p[:, None] ** 2) / (p * (1 - p))[:, None]
    mean = np.sum(w[:, None] * pmf * val)
    var = np.sum(w[:, None] * pmf * (val - mean) ** 2)
    assert math.isclose(_table_skewness(tab, 8), np.sum(w[:, None] * pmf * (val - mean) ** 3) / var ** 1.5, rel_tol=1e-8)
    # without skewness the corrected power is the normal one; with a right-skewed null it is lower
    norm = _skewed_power(50, (0.0, 1.0, 0.0), (0.5, 1.0, 0.0), 0.05)
    assert math.isclose(float(norm), float(sps.norm.sf(sps.norm.ppf(0.95) - 0.5 * math.sqrt(50))), rel_tol=1e-12)
    assert _skewed_power(50, (0.0, 1.0, 2.0), (0.5, 1.0, 0.0), 0.05) < norm


def test_bound_times_entropy_tracks_and_poincare_overshoots():
    """C12r: from one product component's 0^n, the entropy bound / t_mix is flat and the Poincare bound / t_mix grows."""
    r = am.rate_vs_n(lambda m: am.ProductMixture((1.0,), np.full((1, m), 0.9)), [64, 128, 256],
                     lambda m: am.corner_start(m, (0.0, 1.0)), 0.05, 20)
    b = am.bound_times(r, 0.05)
    assert np.all(b["entropy_ratio"] >= 1) and np.all(b["poincare_ratio"] >= 1)  # both are upper bounds here
    assert abs(am.tail_slope(b["n"], b["entropy_ratio"])) < 0.1 and am.tail_slope(b["n"], b["poincare_ratio"]) > 0.8
    # D_0 = n log(1/p) from 0^n under Bern(0.9)^n: the entropy bound is n log(n log(1/0.1) / (2 eps^2))
    assert np.allclose(b["entropy"], r["n"] * np.log(r["n"] * math.log(10) / (2 * 0.05 ** 2)))
    # middle level of the 1/n marginals at n = 512: finite divergences although the stationary mass there underflows
    mid = am.lumped_mixing_time(am.ProductMixture.symmetric(512, 1 - 1 / 512), am.level_start(512), 0.05, 10)
    assert np.isfinite(mid["kl0"]) and np.isfinite(mid["log_chi2_0"]) and mid["kl0"] > 512


def test_pair_penalty_components_are_mlsi_but_not_ate():
    """F2d/C13: the star-like component's ATE constant exceeds its MLSI constant by a factor that grows with n, and the
    extremal density demands the MLSI constant itself."""
    m5 = am.PairPenaltyMixture.star(5, 3.0)
    assert np.allclose(m5.components.sum(axis=1), 1) and np.allclose(m5.components[0][m5.mirror()], m5.components[1])
    assert np.allclose(am.level_law(m5), np.bincount(am.states(5).sum(axis=1), weights=m5.mu, minlength=6))
    kw = dict(random_starts=0, scales=(), spike_states=(1,), maxiter=30)
    ate = am.functional_constant(m5.components[0], "ate", rng(0), **kw)
    mlsi = am.functional_constant(m5.components[0], "mlsi", rng(0), **kw)
    assert ate.value > 2 * mlsi.value and ate.value > 0.98 * math.log2(6)
    with pytest.raises(ValueError):
        am.functional_constant(m5.components[0], "ate", spike_states=(32,))
    sp = m5.sample_states(400, rng(1)).sum(axis=1)
    assert set(np.unique(sp)) <= {0, 1, 2, 3, 4, 5} and abs(np.mean(sp <= 1) - 0.5) < 0.1


def test_mlsi_form_constant_recovers_a_planted_rate():
    t = np.linspace(0, 100, 51)
    K = np.full(t.shape, 0.01)
    D = np.exp(-t / (1.7 * 10)) * 1.0 + (1 - np.exp(-t / (1.7 * 10))) * 0.01  # exactly the bound with c = 1.7, n = 10
    assert math.isclose(am.mlsi_form_constant(t, 10, D, K), 1.7, rel_tol=1e-9)
    assert np.allclose(am.mlsi_form_bound(t, 10, 1.7, 1.0, K), D)
    faster = 0.01 + 0.99 * np.exp(-t / 5.0)
    assert am.mlsi_form_constant(t, 10, faster, K) < 0.6
    with pytest.raises(ValueError):
        am.mlsi_form_bound(t[::-1], 10, 1.0, 1.0, K)


def test_calls_sweep_uses_the_best_r_and_the_fixed_r():
    res = am.calls_sweep([6, 8], 0.85, [0.2], [2, 8, 32], 0.1, r_fixed=8)
    v = am.ProductMixture.symmetric(8, 0.85)
    alt = am.local_perturbation(v, 0.2)
    assert math.isclose(res["calls"][1, 0], am.oracle_calls(v, alt, [2, 8, 32], 0.1)[0])
    assert math.isclose(res["queries_fixed"][1, 0], am.local_budget(v, alt, 8, 0.1))
    assert res["calls"][1, 0] <= 8 * res["queries_fixed"][1, 0]


def test_delta_over_n_components_mix_in_n_log_n_from_the_middle_level():
    """The paper's regime (MLSI, no uniform LSI): product components with marginals 1/n, from the middle level."""
    r = am.rate_vs_n(lambda n: am.ProductMixture.symmetric(n, 1 - 1 / n), [32, 64, 128], am.level_start, 0.05, 20)
    assert 1.0 < am.tail_slope(r["n"], r["t_tv"]) < 1.4
    s = am.level_start(6)
    assert s[3] == 1.0 and s.sum() == 1.0
    with pytest.raises(ValueError):
        am.level_start(6, 7)


def test_sidak_z_keeps_the_false_alarm_rate_of_one_3se_test_over_many_cells():
    assert math.isclose(am.sidak_z([-3.0]), 3.0, rel_tol=1e-9)            # one cell: its own |z|
    assert am.sidak_z([3.45] + [0.0] * 11) < 3.0 < am.sidak_z([3.45])     # the same cell among twelve reads as less
    assert am.sidak_z([40.0] * 9) > 39                                    # a negative control stays finite and large
    rng = np.random.default_rng(0)
    z = rng.standard_normal((20_000, 12))
    rate = np.mean([am.sidak_z(row) > 3.0 for row in z])
    raw = np.mean(np.abs(z).max(axis=1) > 3.0)
    assert rate < 0.006 and raw > 0.025                                   # 0.27 % family-wise vs 3.2 % per cell
    with pytest.raises(ValueError):
        am.sidak_z([math.nan])


def test_sampled_conditional_mean_matches_the_all_mode_prediction():
    model = am.ProductMixture.symmetric(8, 0.92)
    pred = am.mode_prediction(model, (64,), 160, np.random.default_rng(0))["mean"][0]
    mean, se = am.sampled_conditional_mean(model, 64, 160, 20_000, np.random.default_rng(1))
    assert abs(mean - pred) < 4 * se and se < 0.01 * pred


def test_continuous_time_evolution_matches_the_dense_matrix_exponential():
    import scipy.linalg
    model = am.CurieWeissMixture(5, 0.9, (0.5, -0.5))
    P = am.glauber_matrix(model)
    nu0 = am.empirical_starts(model, 8, 3, np.random.default_rng(0))
    times = np.linspace(0, 30, 4)
    got = am.evolve_continuous(P, nu0, times, model.mu, block=2)  # two blocks: the blocking must not change anything
    G = (P.toarray() - np.eye(model.mu.size)).T
    want = np.stack([am.tv(scipy.linalg.expm(t * G) @ nu0, model.mu) for t in times])
    assert got.shape == (4, 3) and np.allclose(got, want, atol=1e-10)
    with pytest.raises(ValueError, match="evenly spaced"):
        am.evolve_continuous(P, nu0, [0, 1, 3], model.mu)


def test_mlsi_form_of_tstar_bounds_the_continuous_chain_and_can_fail():
    model = am.CurieWeissMixture(8, 0.9, (0.5, -0.5))
    c_mlsi = am.functional_constant(model.components[0], "mlsi", np.random.default_rng(0), random_starts=0).value
    times = np.linspace(0, 160, 81)
    res = am.data_based_tv_continuous(model, (16, 256), 60, times, np.random.default_rng(1), c=c_mlsi)
    assert (res["mean"] - res["bound"]).max() <= 0
    # the check can fail through the constant: the data demand c_emp (am.empirical_constant), and the bound with a
    # constant below it is crossed by the measured curve
    mu_min = float(model.mu.min())
    c_emp = max(am.empirical_constant(times, model.n, m, model.k, mu_min, res["mean"][j]) for j, m in enumerate(res["ms"]))
    assert 0 < c_emp <= c_mlsi
    c_kl = max(am.entropy_form_constant(times, model.n, m, model.k, res["kl"][j]) for j, m in enumerate(res["ms"]))
    assert 0 < c_kl <= c_mlsi and res["kl"].shape == res["mean"].shape
    too_fast = np.stack([am.tstar_bound(times, model.n, m, model.k, mu_min, 0.9 * c_emp) for m in res["ms"]])
    assert (res["mean"] - too_fast).max() > 0
    at_c_emp = np.stack([am.tstar_bound(times, model.n, m, model.k, mu_min, c_emp) for m in res["ms"]])
    assert (res["mean"] - at_c_emp).max() <= 1e-12
    with pytest.raises(ValueError, match="MLSI constant"):
        am.data_based_tv_continuous(model, (16,), 4, times, np.random.default_rng(1), c=float("nan"))


def test_empirical_constant_inverts_the_tstar_bound():
    t = np.linspace(0, 300, 61)
    for c in (0.3, 1.0, 4.0):  # a curve equal to T* with constant c demands exactly c
        # rtol: near the floor 2 tv^2 - (k-1)/m cancels to rounding error
        assert np.isclose(am.empirical_constant(t, 10, 64, 3, 1e-4, am.tstar_bound(t, 10, 64, 3, 1e-4, c)), c, rtol=1e-2)
        kl = np.exp(-t / (c * 10)) * 2.0 + 2 / 64
        assert np.isclose(am.entropy_form_constant(t, 10, 64, 3, kl), c, rtol=1e-2)
    floor = am.tstar_bound(t, 10, 64, 3, 1e-4, 1.0)[-1] * 0.99
    assert am.empirical_constant(t, 10, 64, 3, 1e-4, np.full_like(t, floor)) == 0.0  # at the floor: any c
    stuck = np.full_like(t, 3.0)  # never decays, above sqrt(log(1/mu_min)/2): no finite c
    assert am.empirical_constant(t, 10, 64, 3, 1e-4, stuck) == np.inf
    with pytest.raises(ValueError, match="one length"):
        am.empirical_constant(t, 10, 64, 3, 1e-4, t[:-1])
    with pytest.raises(ValueError, match="finite"):
        am.empirical_constant(t, 10, 64, 3, 1e-4, np.full_like(t, np.nan))


def test_functional_constant_returns_the_function_that_attains_its_value():
    """Revision 7: ``g`` is the function that produced ``value`` (also when a start beats its own L-BFGS-B end point),
    with every start's success flag and iteration count."""
    comp = am.PairPenaltyMixture.star(6, 3.0).components[0]
    for kind in ("ate", "mlsi"):
        est = am.functional_constant(comp, kind, rng(0), random_starts=1, spike_states=(1,))
        assert math.isclose(am.constants.ratio(comp, est.g, kind), est.value, rel_tol=1e-9)
        assert set(est.success) == set(est.nit) == set(est.starts) and est.best_start in est.starts
        assert est.starts[est.best_start] == est.value and all(isinstance(v, int) for v in est.nit.values())
    # a start that is already at the optimum (the extremal density itself) keeps its value and its own g
    best = am.functional_constant(comp, "mlsi", rng(0), random_starts=0, spike_states=(1,))
    again = am.functional_constant(comp, "mlsi", rng(0), random_starts=0, maxiter=1, spike_states=(1,))
    assert again.value <= best.value + 1e-9
    assert math.isclose(am.constants.ratio(comp, again.g, "mlsi"), again.value, rel_tol=1e-9)


def test_tv_at_nlogn_and_its_worst_case_control():
    res = am.tv_at_nlogn((6, 8), 0.92, 64, 20, rng(3))
    assert res["t"].tolist() == [math.ceil(6 * math.log(6)), math.ceil(8 * math.log(8))]
    assert res["values"].shape == (2, 20) and np.all((res["values"] >= 0) & (res["values"] <= 1))
    assert np.all(res["worst"] > 0.4) and np.all(res["values"].mean(axis=1) < 0.15)  # one mode vs data from both
    again = am.tv_at_nlogn((6, 8), 0.92, 64, 20, rng(3))
    assert np.array_equal(res["values"], again["values"])


def test_star_tv_from_data_sits_where_both_bounds_exceed_one_half():
    model = am.PairPenaltyMixture.star(6, 3.0)
    comp = model.components[0]
    c_mlsi = am.functional_constant(comp, "mlsi", rng(0), random_starts=0, spike_states=(1,)).value
    spike = am.constants.ratio(comp, np.where(np.arange(comp.size) == 1, 40.0, 0.0), "ate")
    res = am.star_tv_from_data(model, c_mlsi, spike, 256, 20, rng(4))
    assert res["bound_mlsi"] > 0.5 and res["bound_ate"] > 0.5 and math.isclose(res["t"], 0.9 * res["t_half"])
    # at t_half itself the MLSI form is exactly 1/2 (the time is computed from the bound, not chosen)
    mu_min = float(model.mu.min())
    assert math.isclose(float(am.tstar_bound(np.array([res["t_half"]]), 6, 256, 2, mu_min, c_mlsi)[0]), 0.5, rel_tol=1e-9)
    assert res["values"].shape == (20,) and res["values"].mean() < 0.06 < res["worst"]
    with pytest.raises(ValueError):
        am.star_tv_from_data(model, c_mlsi, spike, 256, 20, rng(4), frac=1.5)
