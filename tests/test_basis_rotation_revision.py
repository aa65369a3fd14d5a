"""Tests of the basis-rotation revision (issue 26): official deviations fixed, divergence as censoring,
stage-aware refresh, the delayed-vs-fresh alignment measurement, per-seed slowdown helpers."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26 import basis_rotation as br

torch.set_num_threads(1)


def test_gpt_matches_the_official_block_layout():
    m = br.TinyGPT(128, 16, 2, 2, 8)
    attn = m.blocks[0].attn
    for name in ("c_q", "c_k", "c_v"):
        lin = getattr(attn, name)
        assert lin.weight.shape == (16, 16) and lin.bias is None
    assert m.head.lm_head.bias is not None
    stds = [float(p.detach().std()) for n, p in m.named_parameters() if n.endswith("c_proj.weight")]
    assert all(0.012 < s < 0.03 for s in stds)  # plain N(0, 0.02), no 1/sqrt(2L) scaling


def test_official_fractions_of_the_run():
    assert br.T_CORR_FRACTION == pytest.approx(0.028)
    assert br.WARMUP_FRACTION == pytest.approx(0.012)


def test_stage_aware_freqs_keep_the_refresh_budget_and_favour_stale_stages():
    f = br.stage_aware_freqs(8, 10)
    assert len(f) == 8 and f == sorted(f)               # first (stalest) stage refreshes most often
    assert sum(1 / x for x in f) == pytest.approx(8 / 10, rel=0.02)
    assert br.stage_aware_freqs(1, 10) == [10]
    with pytest.raises(ValueError):
        br.stage_aware_freqs(4, 0)


def test_per_stage_freq_is_validated():
    data = br.TeacherRegression(d_in=4, d_out=2, n_train=64, cond=3.0, seed=0)
    model = br.DeepMLP(4, 8, 2, 2)
    with pytest.raises(ValueError, match="freq"):
        br.train_pipeline(model, "BR (2nd, bi)", 2, data.batches(8, 0), lambda m, b: F.mse_loss(m(b[0]), b[1]),
                          data.eval_loss, steps=2, lr=1e-3, eval_every=1, freq=[10])


def test_divergence_is_recorded_as_censored_not_raised():
    data = br.TeacherRegression(d_in=4, d_out=2, n_train=64, cond=3.0, seed=0)
    torch.manual_seed(0)
    model = br.DeepMLP(4, 8, 2, 2)
    calls = {"n": 0}

    def loss_fn(m, b):
        calls["n"] += 1
        loss = F.mse_loss(m(b[0]), b[1])
        return loss * float("nan") if calls["n"] > 5 else loss

    run = br.train_pipeline(model, "AdamW", 2, data.batches(8, 0), loss_fn, data.eval_loss, steps=20, lr=1e-3,
                            eval_every=2)
    assert run.extra["diverged_at"] == 5
    assert len(run.train_loss) == 20 and np.isinf(run.train_loss[-1])
    assert list(run.eval_steps) == [1] + list(range(2, 21, 2))
    assert br.iterations_to_target(run, 1e-12) is None


def test_slowdown_table_requires_P1_first():
    with pytest.raises(ValueError, match="P = 1"):
        br.slowdown_table({}, ["AdamW"], (4, 8), 1.0, 10)


def test_seed_iterations_and_slowdown_vs_target():
    mk = lambda m, P, s, ev: br.TrainRun(m, P, s, np.zeros(3), np.array([10, 20, 30]), np.array(ev))
    runs = {("A", 1, 0): mk("A", 1, 0, [2.0, 1.0, 0.5]), ("A", 8, 0): mk("A", 8, 0, [2.0, 1.5, 1.0]),
            ("A", 1, 1): mk("A", 1, 1, [1.0, 0.5, 0.4]), ("A", 8, 1): mk("A", 8, 1, [2.0, 2.0, 2.0])}
    its, cens = br.seed_iterations(runs, "A", 8, 1.0, 30)
    assert list(its) == [30, 30] and list(cens) == [False, True]
    svt = br.slowdown_vs_target(runs, ["A"], 8, [1.0], 30)
    assert np.allclose(svt["slowdown"][("A", 1.0)], [30 / 20, 30 / 10]) and svt["censored"][("A", 1.0)]


def test_update_alignment_is_one_without_delay_and_equivariant_for_br():
    lam = (1.0, 0.05)
    Q = br.rotation2d(0.3)
    # no delay: the delayed update *is* the fresh one
    assert br.update_alignment(lam, Q, Q @ np.ones(2), method="adam", tau=0, steps=30) == pytest.approx(1.0)
    # basis rotation estimates its basis from the gradients: the measurement does not depend on the angle
    a = br.update_alignment(lam, br.rotation2d(0.0), np.ones(2), method="br", tau=3, steps=60, betas=(0.0, 0.999),
                            shampoo_beta=0.95)
    b = br.update_alignment(lam, br.rotation2d(0.7), br.rotation2d(0.7) @ np.ones(2), method="br", tau=3, steps=60,
                            betas=(0.0, 0.999), shampoo_beta=0.95)
    assert a == pytest.approx(b, abs=1e-8)
    with pytest.raises(ValueError):
        br.update_alignment(lam, Q, np.ones(2), method="bogus", tau=1, steps=10)
    # the exact-eigenbasis arm (C8b's positive control) on the rotated problem is aligned Adam, cosine for cosine (C2)
    kw = dict(tau=2, steps=12, betas=(0.0, 0.999), sigma=0.02, lr=0.05)
    assert br.update_alignment(lam, Q, Q @ np.ones(2), method="exact", **kw) == pytest.approx(
        br.update_alignment(lam, np.eye(2), np.ones(2), method="adam", **kw), abs=1e-10)


def test_r_2d_matches_l11_ratio():
    for th in (0.0, 0.2, math.pi / 4):
        Q = br.rotation2d(th)
        H = Q @ np.diag([1.0, 0.05]) @ Q.T
        assert br.r_2d(th) == pytest.approx(br.l11_ratio(torch.tensor(H)))


def test_uni_refreshes_every_step_on_square_weights():
    """The official quirk kept on purpose: `uni` with rows >= cols has no left basis, so it refreshes each step."""
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(4, 4))
    opt = br.BasisRotationAdam([w], lr=1e-3, geometry="uni", freq=1000)
    g = torch.Generator().manual_seed(1)
    bases = []
    for _ in range(3):
        w.grad = torch.randn(4, 4, generator=g)
        opt.step()
        bases.append([None if b is None else b.clone() for b in opt.bases(w)])
    side = 1 if bases[0][0] is None else 0
    assert not torch.allclose(bases[1][side], bases[2][side])


def test_kronecker_regression_validates_and_is_deterministic():
    a = br.kronecker_regression(method="bi", tau=2, steps=30, seed=1, m=4, n=6, last=10)
    b = br.kronecker_regression(method="bi", tau=2, steps=30, seed=1, m=4, n=6, last=10)
    assert a == b and a > 0
    with pytest.raises(ValueError):
        br.kronecker_regression(method="none", tau=0, steps=10)
    with pytest.raises(ValueError):
        br.kronecker_regression(method="adam", tau=0, steps=10, m=8, n=4, last=5)


# ---------------------------------------------------------------------- issue 53
def test_equivalent_staleness_and_the_carried_paper_numbers():
    assert br.equivalent_staleness(1) == 0.0
    for P in (2, 4, 8, 32):  # tau' from the per-stage delays equals the closed form
        assert br.equivalent_staleness(P) == pytest.approx(math.sqrt(np.mean(np.square(br.stage_delays(P)))))
    # at the paper's own depth the carried numbers are the paper's
    assert br.scaled_slowdown(32, 1.27) == pytest.approx(1.27)
    assert br.scaled_ratio(32) == pytest.approx(1.27 / 4.24)
    assert br.scaled_reduction(32) == pytest.approx(0.716)
    # less staleness pulls both slowdowns toward 1, so the ratio rises toward 1 and the reduction shrinks
    r = [br.scaled_ratio(P) for P in (1, 4, 8, 32)]
    assert r[0] == pytest.approx(1.0) and r == sorted(r, reverse=True)
    assert br.scaled_ratio(8) == pytest.approx(0.6068, abs=1e-4)
    assert br.scaled_ratio(4, against="AdamW") == pytest.approx(0.6859, abs=1e-4)
    assert br.scaled_reduction(1) == pytest.approx(1 - br.PAPER_SYNC_RATIO)
    with pytest.raises(ValueError):
        br.equivalent_staleness(0)
    with pytest.raises(ValueError):
        br.scaled_slowdown(8, 0.5)
    with pytest.raises(KeyError):
        br.scaled_ratio(8, against="SGD")


def test_levels_2d_window_does_not_depend_on_the_horizon():
    a = br.levels_2d(4, 120, (0,), window=(40, 100))
    b = br.levels_2d(4, 200, (0,), window=(40, 100))
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=0, abs=0)
    last = br.levels_2d(4, 120, (0,), last=20)
    assert not np.allclose(last["Adam, rotated"], br.levels_2d(4, 200, (0,), last=20)["Adam, rotated"])
    with pytest.raises(ValueError, match="window"):
        br.levels_2d(4, 100, (0,), window=(50, 150))


def test_momentum_control_is_adamw_with_beta1_06():
    p = torch.nn.Parameter(torch.zeros(3, 3))
    opt = br.make_stage_optimizer("AdamW (beta1 0.6)", [p], set(), lr=1e-3)
    (inner,) = opt.optimizers
    assert isinstance(inner, torch.optim.AdamW) and inner.param_groups[0]["betas"] == (0.6, 0.999)
    assert "AdamW (beta1 0.6)" not in br.BASELINES


# ---------------------------------------------------------------- third review: carry band, alpha fit, censoring
def test_carry_band_matches_the_reviewers_numbers_and_brackets_the_declared_rule():
    band = br.carry_band(8, 4)
    assert set(band) == set(br.CARRY_LAWS)
    a1 = band["alpha 1 (declared)"]
    assert a1["C4a"] == pytest.approx(1 - br.scaled_ratio(8)) and a1["C4b"] == pytest.approx(1.0626, abs=1e-4)
    # the third review's sensitivity table (alpha 0.5 / 2 / log-linear: C4a share, C4d, C10)
    for law, want in (("alpha 0.5", (0.559, 0.341, 0.426)), ("alpha 2", (0.136, 0.806, 0.954)),
                      ("log-linear", (0.244, 0.703, 0.854))):
        got = (band[law]["C4a"], band[law]["C4d"], band[law]["C10"])
        assert got == pytest.approx(want, abs=1e-3), law
    assert a1["C10 (4.24)"] == pytest.approx(0.769, abs=1e-3)       # the 5.81 attribution flagged in the chapter
    assert br.lenient_end(band, "C4a", "at_least") == pytest.approx(0.136, abs=1e-3)
    assert br.lenient_end(band, "C10", "at_most", extra=[0.99]) == 0.99
    with pytest.raises(ValueError):
        br.lenient_end(band, "C4a", "below")
    with pytest.raises(ValueError):
        br.scaled_slowdown(8, 1.27, law="cubic")
    with pytest.raises(ValueError):
        br.scaled_slowdown(8, 1.27, alpha=0.0)
    for law in br.CARRY_LAWS.values():                               # every law gives back the paper at P = 32
        assert br.scaled_slowdown(32, 4.24, **law) == pytest.approx(4.24)
        assert br.scaled_slowdown(1, 4.24, **law) == pytest.approx(1.0)


def test_band_reading_separates_decidable_misses_from_band_misses():
    # at_least 0.39 with lenient end 0.14: inside, wholly beyond the lenient end, and in between
    assert br.band_reading(0.4, 0.6, 0.39, 0.14, "at_least") == ""
    assert br.band_reading(0.0, 0.1, 0.39, 0.14, "at_least") == ""
    assert "lenient end" in br.band_reading(0.2, 0.3, 0.39, 0.14, "at_least")
    assert "lenient end" in br.band_reading(0.3, 0.5, 0.39, 0.14, "at_least")     # straddles the declared threshold
    assert br.band_reading(0.96, 1.2, 0.69, 0.95, "at_most") == ""
    assert "lenient end" in br.band_reading(0.7, 0.9, 0.69, 0.95, "at_most")


def test_band_reading_is_two_sided_passes_that_only_some_carry_laws_accept_are_no_verdict():
    """The review of a124dea: the band turned misses into 'untestable' but never passes. With the strict end,
    a pass inside alpha = 1's region but outside the strict end's is no verdict; a pass inside both is one."""
    assert br.band_reading(0.11, 0.35, 0.502, 0.9, "at_most", strict=0.341) != ""
    assert "strict end" in br.band_reading(0.11, 0.35, 0.502, 0.9, "at_most", strict=0.341)
    assert br.band_reading(0.11, 0.30, 0.502, 0.9, "at_most", strict=0.341) == ""
    assert br.band_reading(0.40, 0.60, 0.393, 0.136, "at_least", strict=0.45) != ""
    assert br.band_reading(0.50, 0.60, 0.393, 0.136, "at_least", strict=0.45) == ""
    band = br.carry_band(8, 4)
    assert br.strict_end(band, "C4d", "at_most") == min(b["C4d"] for b in band.values())
    assert br.strict_end(band, "C4a", "at_least") == max(b["C4a"] for b in band.values())
    assert br.band_reading(float("nan"), 1.0, 0.69, 0.95, "at_most") == ""
    with pytest.raises(ValueError):
        br.band_reading(0.1, 0.2, 0.3, 0.1, "between")


def test_fit_alpha_recovers_a_planted_exponent_and_needs_two_depths():
    Ps = [1, 2, 4, 8]
    for alpha in (0.5, 1.0, 2.0):
        sd = [1 + 0.3 * br.equivalent_staleness(P) ** alpha for P in Ps]
        assert br.fit_alpha(Ps, sd) == pytest.approx(alpha, abs=0.01)
    assert br.fit_alpha([4, 8], [1 + 0.1 * br.equivalent_staleness(4), 1 + 0.1 * br.equivalent_staleness(8)]) == \
        pytest.approx(1.0, abs=0.01)
    assert math.isnan(br.fit_alpha([1, 8], [1.0, 2.0]))              # one depth above P = 1
    assert math.isnan(br.fit_alpha([4, 8], [float("nan"), 2.0]))
    assert np.isfinite(br.fit_alpha([2, 4, 8], [0.9, 1.0, 1.2]))     # slowdowns at or below 1 are kept


def test_seed_slowdown_drops_censored_synchronous_runs_and_flags_bounds():
    # the third review's smoke case: censored at both P (100 / 100) must not read as slowdown 1
    sd, lower = br.seed_slowdown((np.array([100.0, 100.0, 80.0]), np.array([True, True, False])),
                                 (np.array([100.0, 50.0, 40.0]), np.array([True, False, False])))
    assert math.isnan(sd[0]) and sd[1] == 2.0 and sd[2] == 2.0
    assert list(lower) == [False, True, False]


def test_censoring_reason_points_the_right_way():
    cens, none_ = np.array([True, False]), np.array([False, False])
    one = np.array([1.0, 1.0])
    # share = 1 - sd(BR) / sd(base), claimed at least: BR censored at P makes it an upper bound -> untestable
    assert "upper bound" in br.censoring_reason("at_least", {"BR": (one, -1, cens), "base": (one, +1, none_)})
    # the baseline censored makes the share a lower bound: conservative for at_least -> testable
    assert br.censoring_reason("at_least", {"BR": (one, -1, none_), "base": (one, +1, cens)}) == ""
    # a slowdown claimed at most, censored: a lower bound -> untestable, unless already wholly outside
    assert "lower bound" in br.censoring_reason("at_most", {"BR": (one, +1, cens)}, interval=(1.0, 1.2), threshold=1.27)
    assert br.censoring_reason("at_most", {"BR": (one, +1, cens)}, interval=(1.5, 2.0), threshold=1.27) == ""
    # no slowdown at all
    assert "P = 1" in br.censoring_reason("at_least", {"BR": (np.array([np.nan, 1.0]), -1, none_)})
    assert "at P = 1 in some" in br.censoring_reason("at_most", {"base": (one, +1, cens)}, where="P = 1")
    with pytest.raises(ValueError):
        br.censoring_reason("between", {})


def test_matched_speed_rule_and_seed_subsets():
    """C4m's rule: the baseline at its fastest lr of the grid, basis rotation at the lr whose P = 1 count is nearest."""
    c = lambda *v: (np.array(v, dtype=float), np.zeros(len(v), bool))
    base = {1e-3: c(1100, 1150), 3e-3: c(850, 870)}
    assert br.fastest_lr(base) == 3e-3
    rot = {1e-4: c(2400, 2600), 3e-4: c(800, 840), 1e-3: c(300, 320)}
    assert br.matched_lr(rot, 860.0) == 3e-4 and br.matched_lr(rot, 400.0) == 1e-3
    assert br.fastest_lr({1e-3: c(500), 3e-3: c(500)}) == 3e-3          # a tie goes to the larger lr
    with pytest.raises(ValueError):
        br.matched_lr(rot, 0.0)
    runs = {("A", 1, s): s for s in range(5)}
    assert sorted(br.subset_seeds(runs, (0, 1, 2))) == [("A", 1, 0), ("A", 1, 1), ("A", 1, 2)]


def test_slowdown_table_is_the_seed_mean_of_the_per_seed_values():
    mk = lambda m, P, s, ev: br.TrainRun(m, P, s, np.zeros(3), np.array([10, 20, 30]), np.array(ev))
    runs = {("A", 1, 0): mk("A", 1, 0, [2.0, 1.0, 0.5]), ("A", 8, 0): mk("A", 8, 0, [2.0, 1.5, 1.0]),
            ("A", 1, 1): mk("A", 1, 1, [1.0, 0.5, 0.4]), ("A", 8, 1): mk("A", 8, 1, [2.0, 2.0, 2.0])}
    tab = br.slowdown_table(runs, ["A"], (1, 8), 1.0, 30)
    assert tab["iters"][("A", 8)] == 30 and tab["censored"][("A", 8)] and not tab["censored"][("A", 1)]
    assert tab["slowdown"][("A", 8)] == pytest.approx(np.mean([30 / 20, 30 / 10]))


def test_kronecker_exact_arm_is_its_own_method():
    """The exact two-sided basis (C3d's diagnosis) is a frozen basis, neither Adam's nor the estimated one."""
    kw = dict(tau=2, steps=60, seed=0, m=4, n=8, last=20, lr=3e-3)
    ex, bi, ad = (br.kronecker_regression(method=m, **kw) for m in ("exact", "bi", "adam"))
    assert np.isfinite(ex) and ex != bi and ex != ad
    with pytest.raises(ValueError):
        br.kronecker_regression(method="bogus", **kw)
