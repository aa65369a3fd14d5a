"""Unit tests of icml26.lion (optimizers, compression, objective, schedules, simulator, digits)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.lion import (
    BETA1_BANDS, Lion, LionVR, PeriodicObjective, RandomStream, Signum, Variant, aggregate, experiments,
    fit_loglog_slope, majority_vote, pack_signs, paper_betas_to_std, payload_bits, simulate, simulate_variants,
    std_betas_to_paper, theorem_schedule, theorem_weight_decay, train_digits, unbiased_sign, unpack_signs,
    DigitsData, PRESETS,
)


# --------------------------------------------------------------------------- optimizers

@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_lion_matches_lion_pytorch_100_steps_with_weight_decay(dtype):
    lion_pytorch = pytest.importorskip("lion_pytorch")
    g = torch.Generator().manual_seed(0)
    shapes = [(7, 5), (13,), (3, 4, 2)]
    ours = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
    theirs = [p.clone() for p in ours]
    ours = [torch.nn.Parameter(p) for p in ours]
    theirs = [torch.nn.Parameter(p) for p in theirs]
    kw = dict(lr=3e-3, betas=(0.9, 0.99), weight_decay=0.1)
    opt_a, opt_b = Lion(ours, **kw), lion_pytorch.Lion(theirs, **kw)
    for _ in range(100):
        grads = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
        for p, q, gr in zip(ours, theirs, grads):
            p.grad, q.grad = gr.clone(), gr.clone()
        opt_a.step()
        opt_b.step()
    for p, q in zip(ours, theirs):
        assert torch.allclose(p, q, atol=1e-6, rtol=0)
        assert torch.allclose(opt_a.state[p]["exp_avg"], opt_b.state[q]["exp_avg"], atol=1e-6, rtol=0)


def test_beta_convention_helpers():
    assert paper_betas_to_std(0.1, 0.01) == pytest.approx((0.9, 0.99))
    assert std_betas_to_paper(0.9, 0.99) == pytest.approx((0.1, 0.01))
    b1, b2 = std_betas_to_paper(*paper_betas_to_std(0.3, 0.05))
    assert (b1, b2) == pytest.approx((0.3, 0.05))
    with pytest.raises(ValueError):
        paper_betas_to_std(0.0, 0.5)  # paper beta 0 = std beta 1: the momentum never updates
    # Theorem 1 at T = 1e4 (c_beta = 1): beta2_paper = T^{-1/2} = 0.01 <=> 0.99 standard (Lion default)
    s = theorem_schedule("lion", 10_000, 64, c_beta=1.0)
    assert paper_betas_to_std(s.beta1, s.beta2)[1] == pytest.approx(0.99)


@pytest.mark.parametrize("kwargs", [dict(lr=-1e-3), dict(betas=(0.9, 1.0)), dict(betas=(-0.1, 0.9)),
                                    dict(lr=float("nan")), dict(weight_decay=-1.0)])
@pytest.mark.parametrize("cls", [Lion, LionVR])
def test_optimizer_rejects_bad_hyperparameters(cls, kwargs):
    with pytest.raises(ValueError):
        cls([torch.nn.Parameter(torch.zeros(3))], **kwargs)


def test_lion_refuses_nan_gradient():
    p = torch.nn.Parameter(torch.zeros(4))
    opt = Lion([p], lr=0.1)
    p.grad = torch.tensor([1.0, float("nan"), 0.0, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        opt.step()
    assert torch.equal(p.detach(), torch.zeros(4))  # nothing moved


def test_signum_equals_lion_with_equal_betas():
    g = torch.Generator().manual_seed(1)
    a, b = torch.nn.Parameter(torch.randn(10, generator=g)), None
    b = torch.nn.Parameter(a.detach().clone())
    opt_a, opt_b = Signum([a], lr=0.01, momentum=0.8), Lion([b], lr=0.01, betas=(0.8, 0.8))
    for _ in range(20):
        gr = torch.randn(10, generator=g)
        a.grad, b.grad = gr.clone(), gr.clone()
        opt_a.step(), opt_b.step()
    # Signum signs the UPDATED momentum, Lion the interpolation with the OLD one: same value when b1 = b2
    assert torch.allclose(a, b)


def _quadratic(x: torch.Tensor, a: torch.Tensor, c: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
    return 0.5 * (a * (x - c) ** 2).sum() + (xi * x).sum()


def test_lion_vr_without_noise_is_sign_gradient_descent():
    """Zero noise, same sample: m_t = grad f(x_t) exactly (STORM telescopes), so the distributed form of the
    step direction v_t = g_t + (1 - beta1)(m_{t-1} - gh_t) is grad f(x_t)."""
    a = torch.tensor([1.0, 2.0, 0.5, 3.0], dtype=torch.float64)
    c = torch.tensor([0.3, -0.7, 1.1, 0.05], dtype=torch.float64)
    x = torch.nn.Parameter(torch.zeros(4, dtype=torch.float64))
    opt = LionVR([x], lr=0.01, betas=(0.9, 0.7), storm_interpolation=True)
    ref = torch.zeros(4, dtype=torch.float64)
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = _quadratic(x, a, c, torch.zeros(4, dtype=torch.float64))
        loss.backward()
        return loss

    opt.step(closure)
    ref -= 0.01 * torch.sign(a * (ref - c))
    for _ in range(30):
        opt.step(closure)
        ref -= 0.01 * torch.sign(a * (ref - c))
        assert torch.allclose(x.detach(), ref, atol=1e-14)
    assert len(calls) == 1 + 2 * 30  # one B0 evaluation, then two (x_t and x_{t-1}) per step


@pytest.mark.parametrize("storm_interpolation", [False, True])
def test_lion_vr_matches_storm_recursion_with_same_sample_noise(storm_interpolation):
    """Noisy linear term xi . x with the same xi at x_t and x_{t-1}; compare with Alg. 2 by hand, with the
    centralised (plain) and the distributed (STORM-corrected) step direction."""
    g = torch.Generator().manual_seed(3)
    d, lr, (b1s, b2s) = 6, 0.02, (0.8, 0.6)
    a = torch.rand(d, generator=g, dtype=torch.float64) + 0.5
    c = torch.randn(d, generator=g, dtype=torch.float64)
    noises = torch.randn(40, d, generator=g, dtype=torch.float64)
    x = torch.nn.Parameter(torch.zeros(d, dtype=torch.float64))
    opt = LionVR([x], lr=lr, betas=(b1s, b2s), weight_decay=0.5, storm_interpolation=storm_interpolation)
    grad = lambda z, xi: a * (z - c) + xi  # noqa: E731
    # manual Alg. 2 in paper betas beta = 1 - b_std
    xm = torch.zeros(d, dtype=torch.float64)
    m = grad(xm, noises[0])
    x_prev, xm = xm, xm * (1 - lr * 0.5) - lr * torch.sign(m)
    x.grad = grad(x.detach(), noises[0])
    opt.step()
    for t in range(1, 40):
        xi = noises[t]

        def closure():
            opt.zero_grad()
            loss = _quadratic(x, a, c, xi)
            loss.backward()
            return loss

        opt.step(closure)
        gt, gh = grad(xm, xi), grad(x_prev, xi)
        v = gt + b1s * (m - gh) if storm_interpolation else b1s * m + (1 - b1s) * gt
        m = gt + b2s * (m - gh)
        x_prev, xm = xm, xm * (1 - lr * 0.5) - lr * torch.sign(v)
        assert torch.allclose(x.detach(), xm, atol=1e-13)


def test_lion_vr_needs_closure_after_first_step():
    x = torch.nn.Parameter(torch.zeros(3))
    opt = LionVR([x], lr=0.1)
    with pytest.raises(ValueError, match="gradient"):
        opt.step()  # no B0 gradient in p.grad
    x.grad = torch.ones(3)
    opt.step()
    with pytest.raises(ValueError, match="closure"):
        opt.step()


# --------------------------------------------------------------------------- compression

def test_unbiased_sign_mean_and_variance_monte_carlo():
    g = torch.Generator().manual_seed(0)
    R = 2.0
    v = torch.tensor([-2.0, -1.2, -0.3, 0.0, 0.7, 1.9, 2.0], dtype=torch.float64)
    draws = unbiased_sign(v.expand(200_000, -1), R, g)
    assert set(draws.unique().tolist()) <= {-1.0, 1.0}
    se = 4 / math.sqrt(200_000)
    assert torch.allclose(draws.mean(0), v / R, atol=se)
    assert torch.allclose(draws.var(0), 1 - v ** 2 / R ** 2, atol=se)


@pytest.mark.parametrize("v,R", [(torch.tensor([0.5, 1.5]), 1.0), (torch.tensor([0.1]), 0.0),
                                 (torch.tensor([0.1]), -1.0), (torch.tensor([float("nan")]), 1.0)])
def test_unbiased_sign_rejects_bad_input(v, R):
    with pytest.raises(ValueError):
        unbiased_sign(v, R, torch.Generator().manual_seed(0))


def test_majority_vote_ties():
    votes = torch.tensor([[1.0, 1.0, -1.0], [-1.0, 1.0, -1.0]])  # 2 nodes: tie, +, -
    assert torch.equal(majority_vote(votes, "zero"), torch.tensor([0.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="even"):
        majority_vote(votes, None)
    with pytest.raises(ValueError):
        majority_vote(votes, "coin")
    tied = torch.tensor([[1.0] * 4000, [-1.0] * 4000])
    r1 = majority_vote(tied, "random", torch.Generator().manual_seed(5))
    r2 = majority_vote(tied, "random", torch.Generator().manual_seed(5))
    assert torch.equal(r1, r2) and set(r1.unique().tolist()) == {-1.0, 1.0}
    assert abs(float(r1.mean())) < 0.1  # a fair coin
    odd = torch.tensor([[1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    assert torch.equal(majority_vote(odd, None), torch.tensor([1.0, -1.0]))


@pytest.mark.parametrize("d", [1, 7, 8, 9, 64, 100])
def test_pack_unpack_round_trip(d):
    g = torch.Generator().manual_seed(d)
    signs = torch.where(torch.rand(3, d, generator=g) < 0.5, 1.0, -1.0)
    packed = pack_signs(signs)
    assert packed.dtype == torch.uint8 and packed.shape == (3, (d + 7) // 8)
    assert torch.equal(unpack_signs(packed, d), signs)
    ref = np.packbits(signs.numpy() > 0, axis=-1)  # same bit order as numpy (MSB first)
    assert np.array_equal(packed.numpy(), ref)


def test_pack_rejects_zero_and_wrong_dtype():
    with pytest.raises(ValueError):
        pack_signs(torch.tensor([1.0, 0.0, -1.0]))
    with pytest.raises(ValueError):
        unpack_signs(torch.tensor([3], dtype=torch.int32), 8)


def test_aggregation_rules():
    g = torch.Generator().manual_seed(2)
    v = torch.rand(3, 50, generator=g, dtype=torch.float64) * 2 - 1
    assert torch.equal(aggregate(v, "avg_sign"), torch.sign(v.mean(0)))
    assert torch.equal(aggregate(v, "sign_mv", tie=None), torch.sign(torch.sign(v).sum(0)))
    # uu: E u = mean_j v_j / G (unbiased up and down): Monte Carlo over a batch axis
    vb = v.expand(40_000, -1, -1)
    u = aggregate(vb, "uu", G=1.0, generator=g, node_dim=1)
    assert torch.allclose(u.mean(0), v.mean(0), atol=4 / math.sqrt(40_000))
    assert payload_bits("mv", 100) == (100, 100) and payload_bits("avg_sign", 100) == (3200, 3200)
    with pytest.raises(ValueError):
        aggregate(v, "mv")  # S_G needs G
    with pytest.raises(ValueError):
        aggregate(v, "median")


# --------------------------------------------------------------------------- objective, schedules, simulator

def test_objective_gradients_and_stationary_point():
    obj = PeriodicObjective.make(16, 5, sigma=1.0, heterogeneity=0.6, seed=0)
    x = torch.randn(4, 16, dtype=torch.float64)
    node = obj.node_gradients(x, torch.zeros(4, 5, 16, dtype=torch.float64))
    assert torch.allclose(node.mean(1), obj.true_gradient(x), atol=1e-14)
    assert torch.allclose(obj.true_gradient(torch.zeros(1, 16, dtype=torch.float64)), torch.zeros(1, 16, dtype=torch.float64), atol=1e-15)
    noisy = obj.node_gradients(x, torch.ones(4, 5, 16, dtype=torch.float64))
    assert float(noisy.abs().max()) <= obj.G
    with pytest.raises(ValueError):
        PeriodicObjective(torch.tensor([[float("nan")]]))


def test_theorem_schedules_exponents():
    for method, p_eta, p_beta in [("lion", -0.75, -0.5), ("lion_vr", -2 / 3, -2 / 3), ("uu_vr", -0.5, -0.5)]:
        s1, s2 = theorem_schedule(method, 1000, 64), theorem_schedule(method, 8000, 64)
        assert math.log(s2.eta / s1.eta, 8) == pytest.approx(p_eta)
        assert math.log(s2.beta2 / s1.beta2, 8) == pytest.approx(p_beta)
    assert theorem_schedule("lion_vr", 1000, 64).batch0 == 10
    assert theorem_schedule("mv", 100, 64, 9, c_eta=0.25, mv_eta="n").eta == pytest.approx(0.25 / 3)
    with pytest.raises(ValueError):
        theorem_schedule("adam", 100, 4)


def test_beta1_rule_weight_decay_and_domains():
    s = theorem_schedule("lion", 10_000, 64, c_beta=1.0)          # default: beta1 = sqrt(beta2), Lion's ratio
    assert (s.beta2, s.beta1) == pytest.approx((0.01, 0.1))
    assert paper_betas_to_std(s.beta1, s.beta2) == pytest.approx((0.9, 0.99))
    assert theorem_schedule("lion", 400, 16, beta1_power=1.0).beta1 == theorem_schedule("lion", 400, 16, beta1_power=1.0).beta2
    sq = theorem_schedule("lion", 400, 16, beta1_power=2.0)
    assert sq.beta1 == pytest.approx(sq.beta2 ** 2)
    with pytest.raises(ValueError, match="band"):
        theorem_schedule("lion_vr", 400, 16, beta1_power=2.0)     # Thm 2's band is [beta2, sqrt(beta2)]
    assert theorem_schedule("lion_vr", 400, 16, beta1_power=2.0, strict=False).beta1 > 0
    assert BETA1_BANDS["lion"] == (0.5, 2.0)
    with pytest.raises(ValueError, match="T >= n"):
        theorem_schedule("dist", 8, 16, n=16)
    with pytest.raises(ValueError, match="n\\^2"):
        theorem_schedule("dist_vr", 100, 16, n=16)
    with pytest.raises(ValueError, match="> 1"):
        theorem_schedule("lion", 4, 16, c_beta=4.0)
    s = theorem_schedule("lion", 1000, 64, c_eta=0.5, weight_decay="theorem")
    assert s.weight_decay == pytest.approx(1 / (2 * s.eta * 1000))
    u = theorem_schedule("uu_vr", 1000, 64, weight_decay="theorem", G=1.2)
    assert u.weight_decay == pytest.approx(min(1 / (1000 * math.sqrt(u.eta * 1.2)), 1 / (2 * u.eta * 1000)))
    assert u.weight_decay == pytest.approx(theorem_weight_decay("uu_vr", u.eta, 1000, G=1.2))
    assert theorem_schedule("mv", 100, 64, 9, eta=0.3).eta == 0.3
    with pytest.raises(ValueError):
        theorem_schedule("lion", 100, 64, weight_decay="huge")


def test_simulator_is_deterministic_and_seed_dependent():
    obj = PeriodicObjective.make(8, 3, sigma=1.0, seed=1)
    a = simulate("uu_vr", obj, [50, 100], 2, seed=4, x0=1.0)
    b = simulate("uu_vr", obj, [50, 100], 2, seed=4, x0=1.0)
    c = simulate("uu_vr", obj, [50, 100], 2, seed=5, x0=1.0)
    assert np.array_equal(a.l1, b.l1) and not np.array_equal(a.l1, c.l1)
    assert a.l1.shape == (2, 2)


def test_simulator_rows_are_independent_runs():
    """Batched horizons: the T = 64 rows equal a separate T = 64 run's metric up to the random stream,
    and with sigma = 0 (no randomness) exactly."""
    obj = PeriodicObjective.make(8, 1, sigma=0.0)
    both = simulate("lion", obj, [64, 256], 1, x0=1.0, c_eta=4.0)
    alone = simulate("lion", obj, [64], 1, x0=1.0, c_eta=4.0)
    assert both.l1[0, 0] == pytest.approx(alone.l1[0, 0], rel=1e-12)


def test_simulator_sign_storm_beats_signum_rate():
    """beta1 = beta2 (Signum vs sign-STORM), stationary start: the VR slope is steeper (the setting of the
    chapter's first version; at beta1 = sqrt(beta2) the gain vanishes in this regime, see the chapter)."""
    obj = PeriodicObjective.make(16, 1, sigma=1.0)
    H = [128, 256, 512, 1024]
    lion = simulate("lion", obj, H, 8, x0=0.0, c_eta=0.5, beta1_power=1.0)
    vr = simulate("lion_vr", obj, H, 8, x0=0.0, c_eta=0.5, beta1_power=1.0)
    assert lion.slope() < -0.15 and vr.slope() < lion.slope()


def test_simulate_rejects_bad_input():
    obj = PeriodicObjective.make(4, 1)
    with pytest.raises(ValueError):
        simulate("adam", obj, [10])
    with pytest.raises(ValueError):
        simulate("lion", obj, [0])
    with pytest.raises(ValueError):
        simulate("lion", obj, [10], x0=float("nan"))


def test_fit_loglog_slope():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    slope, intercept = fit_loglog_slope(x, 3.0 * x ** -0.25)
    assert slope == pytest.approx(-0.25) and intercept == pytest.approx(math.log(3.0))
    with pytest.raises(ValueError):
        fit_loglog_slope([1.0, 2.0], [1.0, 0.0])


# --------------------------------------------------------------------------- digits, presets

def test_digits_training_is_deterministic_and_learns():
    data = DigitsData.load()
    for method in ("lion", "lion_vr", "mv"):
        r1 = train_digits(method, data, 40, eval_every=20, n_workers=3, seed=1)
        r2 = train_digits(method, data, 40, eval_every=20, n_workers=3, seed=1)
        assert r1.test_accuracy == r2.test_accuracy
        assert r1.train_loss[-1] < r1.train_loss[0] - 0.2 and r1.final_accuracy > r1.test_accuracy[0] + 0.1
    assert r1.bits_per_worker[-1] == 40 * 2 * 4810  # 1 bit per coordinate each way, 4810 parameters
    assert r1.samples[-1] == 3 * 32 * 41                # 3 workers x 32 samples: m_0's batch, then one per step
    with pytest.raises(ValueError):
        train_digits("rmsprop", data, 5)


def test_presets_define_every_scale():
    assert set(PRESETS) == {"smoke", "book", "full"}
    for p in PRESETS.values():
        assert all(T >= 1 for T in p["horizons"]) and all(n % 2 == 1 for n in p["n_mv"])
        gpu = dict(p, **p.get("gpu", {}))
        assert max(gpu["fit_n"]) ** 2 <= min(gpu["fit_horizons"]) and max(gpu["n_grid"]) ** 2 <= gpu["T_speedup"]


# --------------------------------------------------------------------------- review fixes: finite check, LionVR state

def test_finite_check_accepts_large_fp16_gradients_and_refuses_nan():
    """200k fp16 halves sum to inf in fp16: the finite check must not call that a NaN/inf gradient."""
    p = torch.nn.Parameter(torch.zeros(200_000, dtype=torch.float16))
    opt = Lion([p], lr=1e-3)
    p.grad = torch.full((200_000,), 0.5, dtype=torch.float16)
    opt.step()
    assert torch.all(p.detach() == torch.tensor(-1e-3, dtype=torch.float16))
    q = torch.nn.Parameter(torch.zeros(4, dtype=torch.float32))     # a sum that overflows on finite values
    opt_q = Lion([q], lr=0.1)
    q.grad = torch.full((4,), 3e38)
    opt_q.step()
    p.grad = torch.full((200_000,), 0.5, dtype=torch.float16)
    p.grad[7] = float("nan")
    with pytest.raises(ValueError, match="NaN or inf"):
        opt.step()
    s = torch.nn.Parameter(torch.zeros(3))
    s.grad = torch.tensor([1.0, float("inf"), 0.0])
    with pytest.raises(ValueError):
        Signum([s], lr=0.1).step()
    Signum([s], lr=0.1, check_finite=False).step()                 # the switch exists and skips the check


def _vr_closure(opt, model, X, y):
    def closure():
        opt.zero_grad()
        loss = ((model(X) - y) ** 2).mean()
        loss.backward()
        return loss
    return closure


def _vr_run(steps, resume_at=None, seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Linear(5, 2).double()
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(8, 5, generator=g, dtype=torch.float64), torch.randn(8, 2, generator=g, dtype=torch.float64))
            for _ in range(steps)]
    opt = LionVR(model.parameters(), lr=0.01, betas=(0.9, 0.8), weight_decay=0.1)
    for t, (X, y) in enumerate(data):
        if resume_at is not None and t == resume_at:        # checkpoint, rebuild, restore
            state = {k: v.clone() for k, v in model.state_dict().items()}
            opt_state = opt.state_dict()
            model = torch.nn.Linear(5, 2).double()
            model.load_state_dict(state)
            opt = LionVR(model.parameters(), lr=0.01, betas=(0.9, 0.8), weight_decay=0.1)
            opt.load_state_dict(opt_state)
        opt.step(_vr_closure(opt, model, X, y))
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_lion_vr_resumes_exactly_from_state_dict():
    assert torch.equal(_vr_run(12), _vr_run(12, resume_at=5))


def test_lion_vr_skips_frozen_and_unused_parameters():
    g = torch.Generator().manual_seed(2)
    used = torch.nn.Parameter(torch.randn(4, generator=g, dtype=torch.float64))
    unused = torch.nn.Parameter(torch.randn(3, generator=g, dtype=torch.float64))
    frozen = torch.nn.Parameter(torch.randn(2, generator=g, dtype=torch.float64), requires_grad=False)
    alone = torch.nn.Parameter(used.detach().clone())
    opt = LionVR([used, unused, frozen], lr=0.05, betas=(0.9, 0.7))
    ref = LionVR([alone], lr=0.05, betas=(0.9, 0.7))
    targets = [torch.randn(4, generator=g, dtype=torch.float64) for _ in range(10)]
    before = (unused.detach().clone(), frozen.detach().clone())
    for c in targets:
        for o, w in ((opt, used), (ref, alone)):
            def closure(o=o, w=w):
                o.zero_grad()
                loss = ((w - c) ** 2).sum() + 0.0 * frozen.sum()
                loss.backward()
                return loss
            o.step(closure)
    assert torch.equal(used.detach(), alone.detach())
    assert torch.equal(unused.detach(), before[0]) and torch.equal(frozen.detach(), before[1])


# --------------------------------------------------------------------------- one update rule: simulator == torch optimizers

def _torch_trajectory(method, obj, s, d, T, first_noise, draw_noise):
    """Iterates 0..T of the standard-convention torch optimizer (Lion or LionVR) from 0 towards the minimum at 1,
    on the simulator's schedule `s`: the first momentum from the gradient under `first_noise`, each later step's
    gradient under a fresh `draw_noise()` (the arguments `obj.node_gradients` takes after the position)."""
    center = torch.ones(1, d, dtype=torch.float64)
    x = torch.nn.Parameter(torch.zeros(d, dtype=torch.float64))
    m0 = obj.node_gradients(x.detach().view(1, d) - center, *first_noise)[0, 0]
    cls = Lion if method == "lion" else LionVR
    opt = cls([x], lr=s.eta, betas=paper_betas_to_std(s.beta1, s.beta2), weight_decay=s.weight_decay)
    traj = [x.detach().clone()]
    if method == "lion":
        opt.state[x]["exp_avg"] = m0.clone()
    else:
        x.grad = m0.clone()
        opt.step()
        traj.append(x.detach().clone())
    while len(traj) <= T:
        noise = draw_noise()

        def closure():
            x.grad = obj.node_gradients(x.detach().view(1, d) - center, *noise)[0, 0].clone()
            return torch.zeros(())
        if method == "lion":
            closure()
            opt.step()
        else:
            opt.step(closure)
        traj.append(x.detach().clone())
    return traj


@pytest.mark.parametrize("method", ["lion", "lion_vr"])
def test_simulator_equals_torch_optimizer(method):
    """The paper-convention simulator and the standard-convention optimizer give the same iterates on the
    same gradients (weight decay on, shifted minimum, beta1 = sqrt(beta2))."""
    seed, T, d = 5, 80, 12
    obj = PeriodicObjective.make(d, 1, sigma=1.0, seed=seed)
    sim = simulate(method, obj, [T], 1, center=1.0, c_eta=8.0, weight_decay="theorem", seed=seed, record_iterates=True)
    s = sim.schedules[0]
    assert s.beta1 == pytest.approx(s.beta2 ** 0.5) and s.weight_decay > 0
    stream = RandomStream(torch.Generator().manual_seed(seed), 1)
    traj = _torch_trajectory(method, obj, s, d, T, (stream.rademacher_batch_mean(torch.tensor([s.batch0]), d),),
                             lambda: (stream.rademacher(1, d),))
    diff = (torch.stack(traj) - torch.from_numpy(sim.iterates[:, 0, 0])).abs().max()
    assert float(diff) <= 1e-12
    assert float((torch.stack(traj)[-1] - traj[0]).abs().max()) > 0.1   # it moved


# --------------------------------------------------------------------------- variants, pruning, objectives

def test_batched_variants_equal_separate_runs_without_noise():
    """sigma = 0: no randomness, so a variant batched with others (and rows retired at their horizon)
    gives exactly the numbers of its own run."""
    obj = PeriodicObjective.make(8, 1, sigma=0.0)
    vs = {"a": Variant(c_eta=0.5, weight_decay="theorem"), "b": Variant(center=1.0, c_eta=8.0, weight_decay="theorem"),
          "b2": Variant(center=1.0, c_eta=8.0, beta1_power=2.0)}
    both = simulate_variants("lion", obj, [32, 128, 256], 2, vs)
    for name, v in vs.items():
        alone = simulate_variants("lion", obj, [128], 1, {name: v})[name]
        assert both[name].l1[1, 0] == pytest.approx(alone.l1[0, 0], rel=1e-13)
    assert both["b"].variant.center == 1.0 and both["a"].schedules[0].weight_decay > 0


def test_rotated_anisotropic_objective():
    obj = PeriodicObjective.make(12, 3, sigma=0.5, seed=4, rotated=True, curvature_range=(0.1, 1.0))
    assert not obj.separable and obj.L == pytest.approx(1.0)
    x = torch.randn(2, 12, dtype=torch.float64, requires_grad=True)
    obj.value(x).sum().backward()
    assert torch.allclose(x.grad, obj.true_gradient(x.detach()), atol=1e-12)
    noisy = obj.node_gradients(torch.randn(50, 12, dtype=torch.float64), torch.ones(50, 3, 12, dtype=torch.float64))
    assert float(noisy.abs().max()) <= obj.G
    iso = PeriodicObjective.make(12, 1, seed=4, rotated=True)      # a rotation alone: Hessian I at the minimum
    h = torch.autograd.functional.hessian(lambda z: iso.value(z.view(1, -1))[0], torch.zeros(12, dtype=torch.float64))
    assert torch.allclose(h, torch.eye(12, dtype=torch.float64), atol=1e-12)
    with pytest.raises(ValueError):
        PeriodicObjective(torch.zeros(1, 3), rotation=torch.ones(3, 3))


def test_recorded_errors_and_vote_bias():
    obj = PeriodicObjective.make(16, 5, sigma=1.0, seed=2)
    r = simulate("mv", obj, [200], 3, eta=0.05, record_error=True, record_vote_bias=True, record_trace=True)
    assert r.m_err.shape == (1, 3) and (r.m_err > 0).all() and (r.grad_change > 0).all()
    assert (r.vote_bias >= 0).all() and np.isfinite(experiments.plateau(r)).all()
    storm = simulate("lion_vr", PeriodicObjective.make(16, 1, seed=2), [200], 3, center=1.0, eta=1e-3, c_beta=3.0,
                     beta1_power=1.0, record_error=True)
    other = simulate("lion_vr", PeriodicObjective.make(16, 1, seed=2), [200], 3, center=1.0, eta=1e-3, c_beta=3.0,
                     beta1_power=1.0, record_error=True, same_sample=False)
    assert other.m_err.mean() > 3 * storm.m_err.mean()           # the same-sample requirement matters


def test_experiment_helpers():
    p = PRESETS["smoke"]
    assert set(experiments.rate_variants(p, "lion")) >= {"a", "b", "a/beta1=equal", "b/beta1=square", "b/lambda broken",
                                                         "a/no STORM", "b/no STORM"}
    assert set(experiments.rate_variants(p, "dist")) == {"a", "b", "a/no STORM", "b/no STORM"}
    assert set(experiments.rate_variants(p, "mv")) == {"a", "b"}
    rows = experiments.digits_rows(p)
    assert rows["uu:unbiased"] == ("uu", {"uplink_radius": "max"})
    ratio = experiments.seed_ratio({1: np.array([1.0, 2.0]), 2: np.array([3.0, 1.0])})
    assert np.allclose(ratio, [3.0, 2.0])
    one = np.array([1.0])
    terms = experiments.bound_terms(np.array([100.0]), 4 * one, one, np.array([0.1]), np.array([0.25]), one, 2 * one, one,
                                    one, vr=False)
    assert terms["Delta/(eta T)"][0] == pytest.approx(0.2) and terms["drift"][0] == pytest.approx(1.6)
    vr = experiments.bound_terms(np.array([100.0]), 4 * one, one, np.array([0.1]), np.array([0.25]), 8 * one, 2 * one,
                                 one, one, vr=True)
    assert vr["drift"][0] == pytest.approx(0.1 * 4 / 0.5) and vr["init"][0] == pytest.approx(2 / np.sqrt(0.25 * 100 * 8))
    with pytest.raises(ValueError):
        experiments.regime_variant(p, "c")
    with pytest.raises(ValueError):
        experiments.bound_fit_experiment(p, "adam")


# --------------------------------------------------------------------------- revision 2: curvature noise, ablation, gates

def test_curvature_noise_objective():
    """Sample-dependent curvature: the mean over zeta is the true gradient, |grad| <= G, and the STORM difference of
    the same sample keeps a random part (A2 non-trivial) unless s = 0."""
    obj = PeriodicObjective.make(8, 3, sigma=1.0, seed=2, curvature_noise=0.5)
    x = torch.randn(5, 8, dtype=torch.float64)
    zeros = torch.zeros(5, 3, 8, dtype=torch.float64)
    mean = 0.5 * (obj.node_gradients(x, zeros, torch.full_like(zeros, 1.5)) + obj.node_gradients(x, zeros, torch.full_like(zeros, 0.5)))
    assert torch.allclose(mean.mean(1), obj.true_gradient(x), atol=1e-14)
    worst = obj.node_gradients(x, torch.ones_like(zeros), torch.full_like(zeros, 1.5))
    assert float(worst.abs().max()) <= obj.G and obj.G == pytest.approx(1.5 + 1 / np.sqrt(8))
    assert obj.L_avg == pytest.approx(np.sqrt(1.25)) and obj.sigma_bound == pytest.approx(np.sqrt(1 + 0.25 * 8))
    with pytest.raises(ValueError):
        obj.node_gradients(x, zeros)                                   # the curvature factors are required
    with pytest.raises(ValueError):
        PeriodicObjective.make(8, 1).node_gradients(x, zeros[:, :1], zeros[:, :1])
    with pytest.raises(ValueError):
        PeriodicObjective.make(8, 1, curvature_noise=1.0)
    y = x + 0.01
    zeta = torch.where(torch.rand(5, 3, 8, generator=torch.Generator().manual_seed(0)) < 0.5, 0.5, 1.5).to(torch.float64)
    diff = obj.node_gradients(x, zeros, zeta) - obj.node_gradients(y, zeros, zeta)
    mean_diff = obj.node_gradients(x, zeros, torch.ones_like(zeta)) - obj.node_gradients(y, zeros, torch.ones_like(zeta))
    assert float((diff - mean_diff).abs().max()) > 1e-4              # the STORM difference is noisy now


def test_stream_draws_curvature_factors_only_when_needed():
    a = RandomStream(torch.Generator().manual_seed(4), 2)
    b = RandomStream(torch.Generator().manual_seed(4), 2)
    xi, scale = a.sample(3, 5)
    assert scale is None and torch.equal(xi, b.rademacher(3, 5))      # s = 0: the old stream, unchanged
    xi, scale = a.sample(3, 5, 0.5)
    assert set(scale.unique().tolist()) <= {0.5, 1.5} and scale.shape == xi.shape


@pytest.mark.parametrize("method", ["lion", "lion_vr"])
def test_simulator_equals_torch_optimizer_with_curvature_noise(method):
    seed, T, d = 6, 60, 10
    obj = PeriodicObjective.make(d, 1, sigma=1.0, seed=seed, curvature_noise=0.5)
    sim = simulate(method, obj, [T], 1, center=1.0, c_eta=8.0, weight_decay="theorem", seed=seed, record_iterates=True)
    s = sim.schedules[0]
    stream = RandomStream(torch.Generator().manual_seed(seed), 1)
    traj = _torch_trajectory(method, obj, s, d, T, stream.batch_sample(torch.tensor([s.batch0]), d, 0.5),
                             lambda: stream.sample(1, d, 0.5))
    assert float((torch.stack(traj) - torch.from_numpy(sim.iterates[:, 0, 0])).abs().max()) <= 1e-12


def test_storm_interpolation_per_method():
    """Centralised Lion-VR signs the plain interpolation (the LaTeX reading), the distributed VR variants the
    corrected one; the default of simulate is the method's own."""
    from icml26.lion import STORM_INTERPOLATION
    assert STORM_INTERPOLATION == {"lion_vr": False, "dist_vr": True, "uu_vr": True}
    obj = PeriodicObjective.make(8, 1, sigma=1.0, seed=1, curvature_noise=0.5)
    kw = dict(center=1.0, c_eta=8.0, seed=3)
    default = simulate("lion_vr", obj, [64], 2, **kw)
    assert np.array_equal(default.l1, simulate("lion_vr", obj, [64], 2, storm_interpolation=False, **kw).l1)
    assert not np.array_equal(default.l1, simulate("lion_vr", obj, [64], 2, storm_interpolation=True, **kw).l1)
    assert LionVR([torch.nn.Parameter(torch.zeros(2))]).storm_interpolation is False


def test_ablation_runs_the_vr_schedule_without_storm():
    obj = PeriodicObjective.make(8, 1, seed=1)
    abl = simulate("lion", obj, [512], 1, schedule_method="lion_vr", c_eta=8.0, center=1.0)
    vr = theorem_schedule("lion_vr", 512, 8, c_eta=8.0)
    assert abl.schedules[0] == vr and abl.method == "lion"
    with pytest.raises(ValueError):
        Variant(schedule_method="adam")


def test_theorem6_schedule_switches_branch_at_d3_n4():
    d, n = 4, 3
    switch = d ** 3 * n ** 4
    below, above = theorem_schedule("uu", switch // 4, d, n), theorem_schedule("uu", switch * 16, d, n)
    assert below.eta == pytest.approx((d * switch // 4) ** -0.5)
    assert below.beta2 == pytest.approx(0.5 * (n / (switch // 4)) ** (1 / 3))
    assert above.eta == pytest.approx(d ** -0.2 * n ** 0.4 * (switch * 16) ** -0.6)
    assert above.eta < (d * switch * 16) ** -0.5
    assert above.beta2 == pytest.approx(0.5 * (n * above.eta ** 2 * d) ** (1 / 3))


def test_schedules_have_the_stated_exponents():
    for method, quantities in experiments.STATED_SCHEDULES.items():
        for quantity, stated in quantities.items():
            got = experiments.schedule_exponents(method, quantity)
            assert np.allclose(got, stated, atol=1e-6), (method, quantity, got)



def test_least_favourable_is_the_intersection_union_test_and_keeps_each_settings_mean():
    signs = np.array([1.0, -1.0] * 4)
    tight, wide = 0.05 + 0.01 * signs, 0.05 - 0.2 * signs                # both settings have mean 0.05 exactly
    key, s = experiments.least_favourable({"tight": tight, "wide": wide}, upper=False)
    assert key == "wide" and s.mean == pytest.approx(0.05)               # its own mean ...
    assert np.minimum(tight, wide).mean() == pytest.approx(-0.055)       # ... where the per-seed minimum read -0.055
    key, s = experiments.least_favourable({"a": [-0.3, -0.31, -0.29], "b": [-0.2, -0.4, -0.3]}, upper=True)
    assert key == "b" and s.ci_high > -0.2
    with pytest.raises(ValueError, match="at least one setting"):
        experiments.least_favourable({}, upper=True)


def test_planted_controls_and_gates():
    x = np.array([128.0, 256.0, 512.0, 1024.0])
    g = np.random.default_rng(0)
    values = np.exp(-0.1 * np.log(x)[:, None] + 0.05 * g.standard_normal((4, 6)))
    planted = experiments.planted_seed_slopes(x, values, -0.25)
    assert planted.mean() == pytest.approx(-0.25) and planted.std() > 0
    measured = np.array([experiments.fit_loglog_slope(x, values[:, s])[0] for s in range(6)])
    assert np.allclose(planted - measured, -0.25 - measured.mean())    # the same per-seed deviations
    assert experiments.attains_bound([-0.26, -0.25, -0.24, -0.255], -0.25)
    assert not experiments.attains_bound([-0.33, -0.34, -0.32], -0.25)
    assert not experiments.attains_bound([-0.1, -0.4, -0.25], -0.25)   # too noisy to say


def test_slope_and_trace_curves():
    p = dict(PRESETS["smoke"])
    obj = PeriodicObjective.make(8, 1, seed=0)
    r = simulate("lion", obj, p["horizons"], 3, center=1.0, c_eta=8.0)
    xs, values = experiments.slope_curve(p, r)
    assert values.shape == (3, len(p["horizons"]) - p["slope_window"] + 1) and np.all(np.diff(xs) > 0)
    assert np.all(values < 0)
    mv = simulate("mv", PeriodicObjective.make(8, 3, seed=0), [200], 2, eta=0.05, record_trace=True)
    steps, trace = experiments.trace_curve(mv, 10)
    assert trace.shape == (2, 10) and steps[-1] == 200


def test_birth_death_chain_predicts_the_majority_vote_plateau():
    """The chain (our derivation) against the simulator: within 15 % at a fixed step size, and its small-eta limit
    is the OU formula to within the vote-variance correction."""
    from icml26.lion import ou_plateau, predicted_plateau, vote_plus_probability
    obj = PeriodicObjective.make(16, 5, sigma=1.0, heterogeneity=0.5, seed=3, curvature_noise=0.5)
    phases = obj.phases[:, 0].numpy()
    assert vote_plus_probability(np.array([0.0]), phases, obj.G)[0] == pytest.approx(0.5)
    eta = 0.05
    r = simulate("mv", obj, [1500], 8, eta=eta, mv_eta="n", record_trace=True, seed=1)
    measured = experiments.plateau(r).mean()
    assert measured / predicted_plateau(phases, obj.G, eta, 16) == pytest.approx(1.0, abs=0.15)
    C = float(np.cos(phases).mean())
    assert predicted_plateau(phases, obj.G, 1e-3, 16) / ou_plateau(5, obj.G, 1e-3, 16, C) == pytest.approx(1.0, abs=0.06)


def test_storm_a2_excess_formula():
    assert experiments.storm_a2_excess(0.01, 0.5, 0.2) == pytest.approx(0.99 * 0.5 * 0.2 / np.sqrt(0.01 * 1.99))
    assert experiments.storm_a2_excess(0.1, 0.0, 1.0) == 0.0


def test_simulation_on_an_explicit_cpu_device_is_the_default():
    obj = PeriodicObjective.make(8, 3, seed=0, curvature_noise=0.5)
    a = simulate("dist_vr", obj, [64, 128], 2, seed=1)
    b = simulate("dist_vr", obj, [64, 128], 2, seed=1, device="cpu")
    assert np.array_equal(a.l1, b.l1)


def test_presets_are_consistent_across_scales():
    keys = {k for k in PRESETS["smoke"]}
    for scale, p in PRESETS.items():
        assert {k for k in p if k != "gpu"} == keys, scale
        assert p["n_rate"] % 2 == 1 and len(p["horizons"]) >= p["fit_last"] >= 2
        assert len(p["horizons"]) - p["slope_window"] + 1 >= 6          # the local-slope curves have >= 6 points
        assert set(p.get("gpu", {})) <= keys
        assert max(p["n_grid"]) ** 2 <= p["T_speedup"] and max(p["fit_n"]) ** 2 <= min(p["fit_horizons"])
