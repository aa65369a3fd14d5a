"""Issue 53, item 6 (coverage): training without weight stashing, the two-level refresh allocation, the depth
pathology's helpers, the residual MLP and the device-aware tasks with their ``gpu`` preset variant."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import icml26
from icml26 import basis_rotation as br
from icml26.basis_rotation.pipeline import AsyncPipeline
from icml26.scales import select_preset


class TwoTanh(nn.Module):
    """x -> tanh(B tanh(A x)): two stages of one tanh layer each."""

    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(3, 4, bias=False), nn.Tanh())
        self.b = nn.Sequential(nn.Linear(4, 2, bias=False), nn.Tanh())

    def forward(self, x):
        return self.b(self.a(x))

    def pipeline_parts(self):
        return [], [self.a, self.b], []


def test_unstashed_with_zero_delays_is_synchronous():
    gaps = br.stash_mode_gaps(P=4, steps=15)
    assert gaps["sync_gap"] == 0.0
    assert gaps["mode_gap"] > 1e-4     # stash=True and stash=False differ once the weights have moved


def test_unstashed_gradient_is_forward_stale_backward_current():
    torch.manual_seed(0)
    m = TwoTanh()
    pipe = AsyncPipeline(m, br.split_stages(m, 2), stash=False)   # delays (1, 0)
    A_old = m.a[0].weight.detach().clone()
    with torch.no_grad():                                          # one update of stage 0 after the stash
        m.a[0].weight.add_(0.3 * torch.randn_like(m.a[0].weight))
    A_cur, B = m.a[0].weight.detach().clone(), m.b[0].weight.detach().clone()
    x, y = torch.randn(5, 3), torch.randn(5, 2)
    loss = pipe.forward_backward(lambda: F.mse_loss(m(x), y))
    # by hand: forward value through A_old; stage 0's backward recomputes tanh(A_cur x)
    h_old = torch.tanh(x @ A_old.T).requires_grad_(True)
    Bv = B.clone().requires_grad_(True)
    ref = F.mse_loss(torch.tanh(h_old @ Bv.T), y)
    gh, gB = torch.autograd.grad(ref, (h_old, Bv))
    Av = A_cur.clone().requires_grad_(True)
    (gA,) = torch.autograd.grad(torch.tanh(x @ Av.T), Av, grad_outputs=gh)
    assert torch.allclose(loss, ref.detach())
    assert torch.allclose(m.b[0].weight.grad, gB, atol=1e-7)
    assert torch.allclose(m.a[0].weight.grad, gA, atol=1e-7)
    # with stashing, stage 0's backward uses A_old instead: a different gradient
    m2 = TwoTanh()
    m2.load_state_dict(m.state_dict())
    pipe2 = AsyncPipeline(m2, br.split_stages(m2, 2), stash=True)
    pipe2.stash[0][0] = [A_old.clone()]
    pipe2.forward_backward(lambda: F.mse_loss(m2(x), y))
    assert torch.allclose(m2.b[0].weight.grad, gB, atol=1e-7)      # stage 1 is fresh either way
    assert not torch.allclose(m2.a[0].weight.grad, gA, atol=1e-5)
    assert torch.equal(m.a[0].weight.detach(), A_cur)              # the current weights are restored


def test_unstashed_pipeline_validates():
    m = TwoTanh()
    with pytest.raises(ValueError, match="last stage"):
        AsyncPipeline(m, br.split_stages(m, 2), stash=False, delays=[0, 1])
    with pytest.raises(ValueError, match="delays"):
        AsyncPipeline(m, br.split_stages(m, 2), delays=[1])


def test_train_pipeline_without_stashing_differs_and_p1_matches():
    cfg = dict(d_in=8, d_out=2, width=16, n_blocks=4, n_train=512, cond=10.0, batch=16)
    task = br.mlp_task(cfg, device="cpu")
    kw = dict(steps=30, lr=3e-3, eval_every=10, warmup=1, freq=5)
    on = br.slowdown_sweep(task, ("AdamW",), (1, 4), (0,), stash=True, **kw)
    off = br.slowdown_sweep(task, ("AdamW",), (1, 4), (0,), stash=False, **kw)
    assert np.array_equal(on[("AdamW", 1, 0)].train_loss, off[("AdamW", 1, 0)].train_loss)
    assert not np.array_equal(on[("AdamW", 4, 0)].train_loss, off[("AdamW", 4, 0)].train_loss)
    deg = br.stash_degradation(off, on, "AdamW", 4)
    assert deg["seeds"] == [0] and np.isfinite(deg["log_ratio"]).all() and not deg["lower"].any()


def test_split_freqs_budget_and_reverse():
    for P in (2, 7, 8, 32):
        fwd, rev = br.split_freqs(P, 5, 10), br.split_freqs(P, 10, 5)
        assert len(fwd) == P and fwd[0] == 5 and fwd[-1] == 10 and rev[0] == 10
        assert math.isclose(sum(1 / f for f in fwd), sum(1 / f for f in rev))   # the same refresh budget
        assert sum(1 / f for f in fwd) > P / 10                                 # held up, above uniform 10
    with pytest.raises(ValueError):
        br.split_freqs(4, 0, 10)
    with pytest.raises(ValueError):
        br.split_freqs(0, 5, 10)


def _run(steps, evals, diverged=False):
    extra = {"diverged_at": 3} if diverged else {}
    return br.TrainRun("AdamW", 8, 0, np.zeros(steps), np.arange(1, len(evals) + 1), np.array(evals, float), 0.0, extra)


def test_final_loss_and_depth_growth():
    assert br.final_loss(_run(10, [4.0, 2.0, 1.0, 1.0, 1.0])) == (1.0, False)
    assert br.final_loss(_run(10, [4.0, 2.0, np.inf, np.inf], diverged=True)) == (4.0, True)
    # iterations to target 1.5 (eval steps 1..n): P = 1 -> 3, P = 4 -> 4, P = 8 -> never (censored at 5)
    runs = {("AdamW", 1, 0): _run(5, [5, 4, 1, 1, 1]), ("AdamW", 4, 0): _run(5, [5, 4, 3, 1, 1]),
            ("AdamW", 8, 0): _run(5, [5, 4, 3, 2, 2])}
    g = br.depth_growth(runs, "AdamW", (1, 4, 8), 1.5, steps=5)
    assert (g["P_deep"], g["P_prev"]) == (8, 4)
    assert np.allclose(g["sd_deep"], [5 / 3]) and np.allclose(g["sd_prev"], [4 / 3]) and g["lower_deep"].all()
    g1 = br.depth_growth(runs, "AdamW", (1, 4), 1.5, steps=5)
    assert np.allclose(g1["sd_prev"], [1.0]) and np.allclose(g1["diff"], [1 / 3])
    with pytest.raises(ValueError):
        br.depth_growth(runs, "AdamW", (4, 8), 1.5, steps=5)


def test_intersection_union_picks_the_deciding_interval():
    s = icml26.over_seeds
    pos, straddle, neg = s([1.0, 1.2, 1.1]), s([-1.0, 2.0, 0.5]), s([-2.0, -2.1, -1.9])
    assert br.intersection_union({"a": pos, "b": straddle})[0] == "b"
    assert br.intersection_union({"a": pos, "b": straddle, "c": neg})[0] == "c"
    assert br.intersection_union({"a": pos, "b": s([2.0, 2.1, 2.2])})[0] == "a"
    assert br.intersection_union({"a": pos, "n": s([1.0, float("nan"), 1.0])})[0] == "n"


def test_residual_mlp_and_devices():
    m = br.DeepMLP(4, 8, 32, 2, residual=True)
    assert isinstance(m.blocks[0], br.models.ResidualMLPBlock) and m(torch.randn(3, 4)).shape == (3, 2)
    assert len(br.split_stages(m, 32)) == 32
    assert br.mlp_task(dict(d_in=4, d_out=2, width=8, n_blocks=2, n_train=64, cond=2.0, batch=4)).device == icml26.device()
    if torch.cuda.is_available():
        t = br.mlp_task(dict(d_in=4, d_out=2, width=8, n_blocks=2, n_train=64, cond=2.0, batch=4), device="cuda")
        r = br.slowdown_sweep(t, ("BR (2nd, bi)",), (2,), (0,), steps=5, lr=1e-3, eval_every=5, warmup=1)
        assert np.isfinite(r[("BR (2nd, bi)", 2, 0)].eval_loss).all()


def test_gpu_variant_only_on_cuda_and_cpu_presets_untouched():
    cpu, gpu = select_preset(br.PRESETS, "full"), select_preset(br.PRESETS, "full", on_gpu=True)
    assert cpu["mlp"]["n_blocks"] == 8 and max(cpu["mlp"]["Ps"]) == 8 and "residual" not in cpu["mlp"]
    assert gpu["mlp"]["residual"] and max(gpu["mlp"]["Ps"]) == 32 <= gpu["mlp"]["n_blocks"]
    assert max(gpu["gpt"]["Ps"]) <= gpu["gpt"]["n_layer"] and max(gpu["gpt"]["Ps"]) > max(cpu["gpt"]["Ps"])
    for scale in ("smoke", "book"):
        assert "gpu" not in br.PRESETS[scale]
    for scale in icml26.SCALES if hasattr(icml26, "SCALES") else ("smoke", "book", "full"):
        mc = select_preset(br.PRESETS, scale)["mlp"]
        assert "BR (2nd, bi)" in mc["nostash_methods"] and any(m in br.BASELINES for m in mc["nostash_methods"])
        assert len(mc["split_freqs"]) == 2
        assert tuple(mc["aux_seeds"]) == tuple(mc["seeds"])[:len(mc["aux_seeds"])]       # a prefix: pairs line up
        mm = mc["matched"]
        assert mc["lr"] in mm["base_lrs"] and mc["lr"] in mm["br_lrs"] and 0 < mm["tol"] < 1


def test_worker_path_rebuilds_the_task_and_gives_the_same_run():
    """A pool worker rebuilds the task from its spec and trains the same run, number for number (the chapter's P0
    checks the real pool at book and full); sweep_workers keeps one process where a pool cannot help."""
    from icml26.basis_rotation.experiments import _one_run, _run_in_worker

    cfg = dict(d_in=4, d_out=2, width=8, n_blocks=2, n_train=64, cond=3.0, batch=8, parallel=True)
    task = br.mlp_task(cfg, device="cpu")
    kw = dict(steps=6, lr=1e-3, eval_every=2, warmup=1, freq=2, shampoo_beta=0.9)
    for job in (("AdamW", 2, 0), ("BR (2nd, bi)", 2, 1)):
        a, b = _one_run(task, job, kw), _run_in_worker(task.spec, job, kw)
        assert np.array_equal(a.eval_loss, b.eval_loss) and np.array_equal(a.train_loss, b.train_loss)
    out = br.run_sweeps(task, {"x": dict(methods=("AdamW",), Ps=(1, 2), seeds=(0,), **kw)})
    assert list(out["x"]) == [("AdamW", 1, 0), ("AdamW", 2, 0)]
    assert br.sweep_workers(task, parallel=False) == 1
    assert br.sweep_workers(br.Task("t", None, None, None, None), parallel=True) == 1     # no spec: in process
    assert br.sweep_workers(task, parallel=True) >= 1


def test_lr_frontier_reads_each_rate():
    mk = lambda P, s, ev: br.TrainRun("A", P, s, np.zeros(3), np.array([10, 20, 30]), np.array(ev))
    runs = {1e-3: {("A", 1, 0): mk(1, 0, [2.0, 1.0, 0.5]), ("A", 8, 0): mk(8, 0, [2.0, 2.0, 1.0])},
            3e-3: {("A", 1, 0): mk(1, 0, [1.0, 0.5, 0.5]), ("A", 8, 0): mk(8, 0, [2.0, 2.0, 2.0])},
            1e-2: {("A", 1, 0): mk(1, 0, [1.0, 0.5, 0.5])}}                              # no deep run: left out
    fr = br.lr_frontier(runs, "A", 8, 1.0, 30)
    assert list(fr) == [1e-3, 3e-3]
    assert fr[1e-3]["it1"][0].tolist() == [20] and fr[1e-3]["slowdown"].tolist() == [1.5] and not fr[1e-3]["lower"].any()
    assert fr[3e-3]["slowdown"].tolist() == [3.0] and fr[3e-3]["lower"].all()             # censored at P = 8: a bound
    # between the rates, in log count and log slowdown: counts 10 (slowdown 3) and 20 (slowdown 1.5)
    assert br.frontier_at(fr, 20) == pytest.approx(1.5) and br.frontier_at(fr, 10) == pytest.approx(3.0)
    assert br.frontier_at(fr, 10 * 2 ** 0.5) == pytest.approx((3.0 * 1.5) ** 0.5)
    assert math.isnan(br.frontier_at(fr, 5)) and math.isnan(br.frontier_at(fr, 40))


def test_verdict_readings():
    from icml26.stats import over_seeds, paired_difference

    assert br.join_reasons("", "a", "", "b") == "a; b" and br.join_reasons() == ""
    assert br.gate("C4p", "reproduced", "gap") == ""
    assert br.gate("C4p", "not reproduced", "gap") == "gap (C4p not reproduced)"
    with pytest.raises(ValueError):
        br.gate("C4p", "inconclusive", "")
    s = over_seeds([0.30, 0.32, 0.31])
    assert br.pipeline_reason("censored") == "censored"
    assert br.pipeline_reason("", s, "at_least", declared=0.2, lenient=0.1, strict=0.25) == ""     # a clear pass
    assert "strict" in br.pipeline_reason("", s, "at_least", declared=0.2, lenient=0.1, strict=0.5)
    with pytest.raises(ValueError):
        br.pipeline_reason("", s, "at_least")
    assert br.censored_ratio_reason("A", [True, False], "B", [False, True]) == ""
    assert "1 of 2 seeds" in br.censored_ratio_reason("A", [True, False], "B", [True, True])
    d = paired_difference([3.0, 3.2, 3.1], [1.0, 1.1, 1.2])
    assert br.compare_censored(d, [False] * 3, [False] * 3, "c", "m", 8).startswith("above m")
    assert br.compare_censored(d, [True] * 3, [False] * 3, "c", "m", 8).startswith("above m")   # a bound above a value
    assert br.compare_censored(d, [False] * 3, [True] * 3, "c", "m", 8).startswith("not distinguishable")
    assert br.compare_censored(d, [True] * 3, [True] * 3, "c", "m", 8).startswith("not comparable")


def test_pool_workers_ignore_ctrl_c(monkeypatch):
    """A persistent worker ignores SIGINT (the kernel's interrupt at shutdown printed a traceback per idle worker)."""
    import signal

    import icml26.chapter
    from icml26.basis_rotation import experiments as ex

    monkeypatch.setattr(icml26.chapter, "pin_threads", lambda *a, **k: None)   # keep this process's thread counts
    before = signal.getsignal(signal.SIGINT)
    try:
        ex._init_worker()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
