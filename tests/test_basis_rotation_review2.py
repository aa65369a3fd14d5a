"""Tests of the pieces added after the second independent review of the basis-rotation chapter: the zero-delay
positive control (``delays=``), runs stopped at the target (``stop_at=``), the asynchronously tuned reading
(:func:`~icml26.basis_rotation.async_tuned`, claims C4t/C4ts) and the Kronecker toy's one-sided exact arm (C3ce)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26 import basis_rotation as br


def _run(method, P, steps=40, **kw):
    data = br.TeacherRegression(d_in=4, d_out=2, n_train=128, cond=3.0, seed=0)
    torch.manual_seed(0)
    model = br.DeepMLP(4, 8, 4, 2)
    run = br.train_pipeline(model, method, P, data.batches(16, 0), lambda m, b: F.mse_loss(m(b[0]), b[1]), data.eval_loss,
                            steps=steps, lr=3e-3, eval_every=5, **kw)
    return run, model


@pytest.mark.parametrize("method", ["AdamW", "BR (2nd, bi)"])
def test_zero_delays_without_clipping_is_the_synchronous_run(method):
    """Every delay 0 on a 4-stage split, without clipping, is the P = 1 run weight for weight: the positive control C4z
    differs from P = 1 only by the per-stage clipping."""
    r1, m1 = _run(method, 1, clip=None)
    r0, m0 = _run(method, 4, clip=None, delays=(0, 0, 0, 0))
    gap = max(float((a - b).detach().abs().max()) for a, b in zip(m1.parameters(), m0.parameters()))
    assert gap < 1e-6
    np.testing.assert_allclose(r0.eval_loss, r1.eval_loss, rtol=1e-5)


def test_zero_delays_differ_from_the_delayed_pipeline_and_are_validated():
    r0, _ = _run("AdamW", 4, clip=None, delays=(0, 0, 0, 0))
    rd, _ = _run("AdamW", 4, clip=None)
    assert not np.allclose(r0.eval_loss, rd.eval_loss)          # the control is not the delayed run
    with pytest.raises(ValueError, match="delays"):
        _run("AdamW", 4, delays=(0, 0))


def test_stop_at_keeps_the_count_and_the_grid():
    full, _ = _run("AdamW", 2, steps=60)
    target = float(full.eval_loss[len(full.eval_loss) // 2])
    stopped, _ = _run("AdamW", 2, steps=60, stop_at=target)
    assert br.iterations_to_target(stopped, target) == br.iterations_to_target(full, target)
    assert list(stopped.eval_steps) == list(full.eval_steps) and len(stopped.train_loss) == 60
    hit = stopped.extra["stopped_at"]
    k = list(stopped.eval_steps).index(hit)
    np.testing.assert_allclose(stopped.eval_loss[:k + 1], full.eval_loss[:k + 1])
    assert np.isnan(stopped.eval_loss[k + 1:]).all() and np.isnan(stopped.train_loss[hit:]).all()
    # a target never reached: the run goes to the end, unchanged
    never, _ = _run("AdamW", 2, steps=60, stop_at=-1.0)
    np.testing.assert_allclose(never.eval_loss, full.eval_loss)
    assert "stopped_at" not in never.extra


def test_async_tuned_picks_the_fewest_deep_iterations():
    mk = lambda P, s, ev: br.TrainRun("A", P, s, np.zeros(3), np.array([10, 20, 30]), np.array(ev))
    runs = {1e-3: {("A", 1, 0): mk(1, 0, [2.0, 1.0, 0.5]), ("A", 8, 0): mk(8, 0, [2.0, 2.0, 1.0])},     # P = 8: 30
            3e-3: {("A", 1, 0): mk(1, 0, [1.0, 0.5, 0.5]), ("A", 8, 0): mk(8, 0, [2.0, 1.0, 1.0])},     # P = 8: 20
            1e-2: {("A", 1, 0): mk(1, 0, [1.0, 0.5, 0.5])}}                                          # no deep run
    t = br.async_tuned(runs, "A", 8, 1.0, 30)
    assert t["lr"] == 3e-3                  # not the fastest synchronous rate's rule: the fewest iterations at P = 8
    assert t["itP"][0].tolist() == [20] and t["it1"][0].tolist() == [10]
    assert t["slowdown"].tolist() == [2.0] and not t["lower"].any()
    # every rate censored at depth: the larger rate, its counts flagged
    cens = {lr: {k: (mk(8, 0, [2.0, 2.0, 2.0]) if k[1] == 8 else r) for k, r in rs.items()} for lr, rs in runs.items()}
    t = br.async_tuned(cens, "A", 8, 1.0, 30)
    assert t["lr"] == 3e-3 and t["itP"][1].all() and t["lower"].all()
    with pytest.raises(ValueError, match="no run"):
        br.async_tuned({1e-2: runs[1e-2]}, "A", 8, 1.0, 30)


def test_kronecker_one_sided_exact_arm():
    kw = dict(tau=2, steps=60, seed=0, m=4, n=8, last=20, lr=3e-3)
    eu, ex, ad = (br.kronecker_regression(method=m, **kw) for m in ("exact_uni", "exact", "adam"))
    assert math.isfinite(eu) and eu not in (ex, ad)
    assert br.kronecker_regression(method="exact_uni", **kw) == eu           # deterministic


def test_pipeline_block_misalignment_sketch_matches_the_exact_hessian():
    """C7p's estimate from Hessian-vector products (Cauchy sketch for ||H||_11 in each basis, Hutchinson for the trace)
    against the exact Hessian of the same small block."""
    cfg = dict(d_in=4, d_out=2, width=6, n_blocks=3, n_train=256, cond=5.0, batch=16, lr=3e-3, shampoo_beta=0.95, freq=5)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)            # ~1600 tiny HVPs: a pool of busy-waiting threads on shared cores costs ~100x
    try:
        r = br.pipeline_block_misalignment(cfg, 0, steps=60, block=1, n_hessian=128, draws=801, exact=True)
    finally:
        torch.set_num_threads(threads)
    ex = r["exact"]
    assert r["shape"] == (6, 6)
    for k in ("l11", "l11_rot", "l11_rand"):
        assert r[k] == pytest.approx(ex[k], rel=0.1), k
    assert r["trace"] == pytest.approx(ex["trace"], rel=0.25)
    assert r["ratio"] == pytest.approx(ex["l11_rot"] / ex["l11"], rel=0.15)
    with pytest.raises(ValueError, match="block"):
        br.pipeline_block_misalignment(cfg, 0, steps=2, block=3, n_hessian=16, draws=3)


def test_matched_speed_runs_follows_the_rule():
    """The C4m/C4t orchestration on a fake runner whose iterations to the target are a power law in the rate."""
    grid = np.arange(10, 101, 10)
    base_count = {"B": 40.0, "R": 12.0, "C": 60.0}          # P = 1 count at lr 1e-3; count ~ lr^-0.9, x2 at P = 8

    def count(m, lr, P):
        c = base_count[m] * (1e-3 / lr) ** 0.9 * (2.0 if P > 1 else 1.0)
        return None if c > 100 else int(10 * math.ceil(c / 10))

    def run(m, lr, P, s):
        c = count(m, lr, P)
        ev = np.where(grid >= (c if c is not None else 1e9), 0.5, 2.0)
        return br.TrainRun(m, P, s, np.zeros(100), grid, ev)

    calls = []

    def sweep(m, lr, seeds, Ps):
        return dict(methods=(m,), Ps=tuple(Ps), seeds=tuple(seeds), lr=lr)

    def sweeps(entries, desc):
        calls.append((desc, dict(entries)))
        return {k: {(e["methods"][0], P, s): run(e["methods"][0], e["lr"], P, s) for P in e["Ps"] for s in e["seeds"]}
                for k, e in entries.items()}

    arms = {"base": ("B", (1e-3, 3e-3, 1e-2)), "br": ("R", (1e-4, 3e-4, 1e-3)), "ctrl": ("C", (3e-3, 1e-2))}
    out = br.matched_speed_runs(sweeps, arms, sweep, aux=(0, 1), rest=(2,), P=8, lr_official=1e-3, target=1.0, steps=100,
                                frontier=False, tuned_extra=(3e-3,))
    # the baseline at its fewest P = 1 iterations: 1e-2 (count 5.0 -> 10)
    assert out["lr_sel"]["base"] == 1e-2 and out["ref_count"] == 10.0
    # basis rotation's grid: counts 90, 40, 20 at 1e-4, 3e-4, 1e-3; none brackets 10 -> no secant step; nearest 1e-3
    assert out["secant"]["br"] is None and out["lr_sel"]["br"] == 1e-3 == out["lr_grid"]
    assert [d for d, _ in calls] == ["matched-speed grids", "chosen rates"]
    # frontier=False: only the official rate at P = 8 in step 1
    first = calls[0][1]
    assert first[("base", 1e-3)]["Ps"] == (1, 8) and first[("base", 3e-3)]["Ps"] == (1,) and first[("ctrl", 3e-3)]["Ps"] == (1,)
    assert out["secant"]["ctrl"] is None              # its bracket's secant rate (1e-2) is already in the grid
    runs = out["runs"]
    for a_, (m_, lrs_) in (("base", arms["base"]), ("br", arms["br"])):      # C4t: every rate of both grids at P = 8
        for lr_ in lrs_:
            assert all((m_, 8, s_) in runs[a_][lr_] for s_ in (0, 1))
    assert out["lr_sel"]["ctrl"] == 1e-2 and ("C", 8, 0) not in runs["ctrl"][3e-3]        # the control: chosen rate only
    assert {(("R", P_, s_)) for P_ in (1, 8) for s_ in (0, 1)} <= set(runs["br"][3e-3])     # the extra rate
    for a_, lr_ in out["lr_sel"].items():                                                     # chosen rates on the rest
        assert (arms[a_][0], 1, 2) in runs[a_][lr_] and (arms[a_][0], 8, 2) in runs[a_][lr_]
    # with a bracket, the secant step runs and joins the grid
    arms2 = {"base": ("B", (1e-3,)), "br": ("R", (1e-4, 1e-3)), "ctrl": ("C", (1e-2,))}
    calls.clear()
    out2 = br.matched_speed_runs(sweeps, arms2, sweep, aux=(0,), rest=(), P=8, lr_official=1e-3, target=1.0, steps=100)
    assert out2["secant"]["br"] is not None and out2["secant"]["br"] in out2["runs"]["br"]
    assert "secant steps" in [d for d, _ in calls]
    with pytest.raises(ValueError, match="arms"):
        br.matched_speed_runs(sweeps, {"br": arms["br"]}, sweep, aux=(0,), rest=(), P=8, lr_official=1e-3, target=1.0,
                              steps=100)
