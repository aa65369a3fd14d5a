"""Tests of the book-budget revision of the basis-rotation chapter: the toys' cells in the worker pool
(:func:`~icml26.basis_rotation.pool_map`), runs that stop at the target keep every count at or above it, claim C7p's
Hessian probe reusing the main sweep's run (``keep_state`` / ``run=``), the matched-speed rule without the frontier, and
the presets (the ``book`` knobs; ``full`` unchanged)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26 import basis_rotation as br
from icml26.basis_rotation import experiments as ex


def test_pool_map_gives_the_in_process_values():
    """The toys' cells computed in the chapter's pool equal the in-process ones (each cell seeds itself)."""
    a = br.delay_sweep(6, (0, 3), (0, 1), 120, 30)
    b = br.delay_sweep(6, (0, 3), (0, 1), 120, 30, workers=2)
    for k in a["loss"]:
        np.testing.assert_array_equal(a["loss"][k], b["loss"][k])
    c = br.alignment_sweep((0.0, 45.0), 2, 40, (0, 1), exact=True)
    d = br.alignment_sweep((0.0, 45.0), 2, 40, (0, 1), exact=True, workers=2)
    for k in c["cos"]:
        np.testing.assert_array_equal(c["cos"][k], d["cos"][k])
    jobs = [dict(method=m, tau=t, steps=60, seed=s, lr=3e-3, sigma=0.05, freq=10, shampoo_beta=0.95, last=20)
            for m in ("adam", "bi") for t in (0, 7) for s in (0, 1)]
    assert br.pool_map(br.kronecker_regression, jobs, workers=2) == [br.kronecker_regression(**j) for j in jobs]
    assert br.pool_map(br.kronecker_regression, [], workers=2) == []
    assert br.pool_workers(False) == 1 and br.pool_workers(True) >= 1
    # one function per job (the Hessian cell: C7's exact diagnostic and C7p's probes in one call)
    hc = dict(d_in=4, d_out=2, width=4, n_blocks=2, n_train=128, cond=5.0, batch=16, lr=3e-3, block=1, shampoo_beta=0.95,
              n_hessian=64, cauchy_draws=5, steps=10)
    mixed = [br.hessian_diagnostic, br.kronecker_regression]
    kw = [dict(cfg=hc, seed=0), jobs[0]]
    p_, q_ = br.pool_map(mixed, kw, workers=2), br.pool_map(mixed, kw)
    assert p_[1] == q_[1] and all(p_[0][k] == q_[0][k] for k in ("r_orig", "r_rot", "r_rand", "l11_cauchy"))
    with pytest.raises(ValueError, match="one function per job"):
        br.pool_map(mixed, kw[:1])


def _run(method, P, steps=40, **kw):
    data = br.TeacherRegression(d_in=4, d_out=2, n_train=128, cond=3.0, seed=0)
    torch.manual_seed(0)
    model = br.DeepMLP(4, 8, 4, 2)
    return br.train_pipeline(model, method, P, data.batches(16, 0), lambda m, b: F.mse_loss(m(b[0]), b[1]),
                             data.eval_loss, steps=steps, lr=3e-3, eval_every=5, **kw)


def test_a_stopped_run_keeps_every_count_at_or_above_its_stop():
    """``stop_at_target`` (book) stops the runs read only at the target, and the middle depths at the tightest target of
    the grid: every looser target's count must be the full run's."""
    full = _run("AdamW", 2, steps=60)
    stop = float(full.eval_loss[len(full.eval_loss) // 2])
    stopped = _run("AdamW", 2, steps=60, stop_at=stop)
    for f in (1.0, 1.1, 1.5, 2.0, 4.0):
        assert br.iterations_to_target(stopped, f * stop) == br.iterations_to_target(full, f * stop)
    assert br.iterations_to_target(stopped, 0.5 * stop) is None         # below the stop: no count (not used)


def test_keep_state_returns_the_final_weights_and_bases():
    run = _run("BR (2nd, bi)", 2, keep_state=True)
    assert set(run.extra["state"]) == set(dict(br.DeepMLP(4, 8, 4, 2).state_dict()))
    assert run.extra["bases"] and all(isinstance(k, str) for k in run.extra["bases"])
    U, V = next(iter(run.extra["bases"].values()))
    assert U is None or (U.device.type == "cpu" and torch.allclose(U.T @ U, torch.eye(U.shape[0]), atol=1e-4))
    assert "bases" in _run("BR (2nd, bi)", 1, keep_state=True).extra and "state" not in _run("AdamW", 1).extra
    assert _run("AdamW", 1, keep_state=True).extra["bases"] == {}


def test_c7p_probe_reuses_the_main_sweeps_run():
    """The main sweep's P = 1 basis-rotation run (evaluated every 10 steps, kept with keep_state) gives the same probe as
    the diagnostic training its own run (evaluations change no weight)."""
    cfg = dict(d_in=4, d_out=2, width=6, n_blocks=3, n_train=256, cond=5.0, batch=16, lr=3e-3, shampoo_beta=0.95, freq=5,
               eval_every=10)
    task = br.mlp_task(cfg, device="cpu")
    kw = dict(steps=40, lr=cfg["lr"], eval_every=10, warmup=1, shampoo_beta=cfg["shampoo_beta"], freq=cfg["freq"])
    main = br.run_sweeps(task, {"m": dict(methods=("BR (2nd, bi)",), Ps=(1,), seeds=(0,), keep_state=True, **kw)})["m"]
    a = br.pipeline_block_misalignment(cfg, 0, steps=40, block=1, n_hessian=64, draws=9)
    b = br.pipeline_block_misalignment(cfg, 0, steps=40, block=1, n_hessian=64, draws=9, run=main[("BR (2nd, bi)", 1, 0)])
    for k in ("l11", "l11_rot", "l11_rand", "trace", "ratio"):
        assert a[k] == b[k], k
    other = br.run_sweeps(task, {"m": dict(methods=("AdamW",), Ps=(1,), seeds=(0,), keep_state=True, **kw)})["m"]
    with pytest.raises(ValueError, match="run must be"):
        br.pipeline_block_misalignment(cfg, 0, steps=40, block=1, n_hessian=64, draws=9, run=other[("AdamW", 1, 0)])
    with pytest.raises(ValueError, match="run must be"):
        br.pipeline_block_misalignment(cfg, 1, steps=40, block=1, n_hessian=64, draws=9, run=main[("BR (2nd, bi)", 1, 0)])
    with pytest.raises(ValueError, match="full"):
        br.pipeline_block_misalignment(cfg, 0, steps=80, block=1, n_hessian=64, draws=9, run=main[("BR (2nd, bi)", 1, 0)])


def test_matched_speed_without_frontier_runs_the_official_rate_deep_only_where_read():
    """frontier=False: the official rate at P only in the baseline's and basis rotation's grids (the readings at the
    official rate use those); the control's official rate runs at P = 1 only unless it is chosen."""
    grid = np.arange(10, 101, 10)

    def run(m, P, s):
        c = {"B": 40, "R": 20, "C": 10}[m] * (2 if P > 1 else 1)
        return br.TrainRun(m, P, s, np.zeros(100), grid, np.where(grid >= c, 0.5, 2.0))

    calls = []

    def sweeps(entries, desc):
        calls.append((desc, dict(entries)))
        return {k: {(e["methods"][0], P, s): run(e["methods"][0], P, s) for P in e["Ps"] for s in e["seeds"]}
                for k, e in entries.items()}

    sweep = lambda m, lr, seeds, Ps: dict(methods=(m,), Ps=tuple(Ps), seeds=tuple(seeds), lr=lr)
    arms = {"base": ("B", (1e-3,)), "br": ("R", (1e-3,)), "ctrl": ("C", (1e-3, 3e-3))}
    out = br.matched_speed_runs(sweeps, arms, sweep, aux=(0,), rest=(), P=8, lr_official=1e-3, target=1.0, steps=100,
                                frontier=False)
    first = calls[0][1]
    assert first[("base", 1e-3)]["Ps"] == (1, 8) and first[("br", 1e-3)]["Ps"] == (1, 8)
    assert first[("ctrl", 1e-3)]["Ps"] == (1,)
    chosen = out["lr_sel"]["ctrl"]
    assert ("C", 8, 0) in out["runs"]["ctrl"][chosen]                      # the chosen control rate still runs deep
    calls.clear()
    br.matched_speed_runs(sweeps, arms, sweep, aux=(0,), rest=(), P=8, lr_official=1e-3, target=1.0, steps=100)
    assert calls[0][1][("ctrl", 1e-3)]["Ps"] == (1, 8)                      # the frontier: every rate deep


def test_book_knobs_and_full_unchanged():
    book, full = br.PRESETS["book"], br.PRESETS["full"]
    assert book["mlp"]["stop_at_target"] and book["gpt"]["stop_at_target"]
    assert not full["mlp"].get("stop_at_target") and not full["gpt"].get("stop_at_target")
    assert not full["gpu"]["mlp"].get("stop_at_target") and not full["gpu"]["gpt"].get("stop_at_target")
    assert full["mlp"]["matched"]["steps_factor"] == 2 and full["hessian"]["pipe"]["draws"] == 101
    assert len(book["mlp"]["seeds"]) >= 3 and len(book["gpt"]["seeds"]) >= 3     # t-intervals: the contract's minimum
