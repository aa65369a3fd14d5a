"""The chapter's experiments as functions of a preset (``presets.py``): rate slopes (F1), linear
speedup (F2), compression (F3: UU/UU-VR in l2, the majority-vote floor vs n), d-scaling and digits (F5).

Every function is deterministic given the preset's seed and returns plain numbers / arrays plus the
underlying :class:`~icml26.lion.simulator.SimResult` objects for plotting.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .digits import DigitsData, DigitsRun, train_digits
from .distributed import run_distributed
from .objectives import PeriodicObjective
from .simulator import SimResult, fit_loglog_slope, simulate

#: start points and eta constants of the two regimes of the brief (§3): (a) stationary start, (b) descent
REGIMES: dict[str, dict[str, float]] = {"a": dict(x0=0.0, c_eta=0.5), "b": dict(x0=1.0, c_eta=8.0)}


def _objective(d: int, n: int, p: Mapping[str, Any], seed_offset: int = 0) -> PeriodicObjective:
    return PeriodicObjective.make(d, n, sigma=p["sigma"], heterogeneity=p["heterogeneity"],
                                  seed=p["seed"] + 1000 * n + d + seed_offset)


def rate_experiment(p: Mapping[str, Any], regime: str, methods: tuple[str, ...] | None = None) -> dict[str, SimResult]:
    """F1/F3: A_T vs T for each method under its theorem schedule (fresh run per T), d = p['d'].

    Single-node methods use one node; distributed ones ``p['n_rate']`` nodes."""
    methods = methods or tuple(p["rate_methods"])
    out = {}
    for method in methods:
        n = 1 if method in ("lion", "lion_vr") else p["n_rate"]
        out[method] = simulate(method, _objective(p["d"], n, p), p["horizons"], p["n_seeds"], seed=p["seed"],
                               c_beta=p["c_beta"], **REGIMES[regime])
    return out


def slopes(results: Mapping[str, SimResult], last: int | None = 4) -> dict[str, dict[str, float]]:
    """Log-log slopes (l1 and l2) of the seed-averaged metric over the last ``last`` horizons."""
    return {m: {"l1": r.slope("l1", last), "l2": r.slope("l2", last)} for m, r in results.items()}


def speedup_experiment(p: Mapping[str, Any], method: str = "dist", regime: str = "a") -> dict[int, float]:
    """F2: A_T at fixed T = p['T_speedup'] for n in p['n_grid'] (Thm 3/4 schedules)."""
    return {n: float(simulate(method, _objective(p["d"], n, p), [p["T_speedup"]], p["n_seeds"], seed=p["seed"],
                              c_beta=p["c_beta"], **REGIMES[regime]).mean()[0])
            for n in p["n_grid"]}


def mv_plateau_experiment(p: Mapping[str, Any]) -> dict[int, float]:
    """C4: plateau of majority vote (S_G up, sign of the vote sum down; beta = 1/2, eta = c n^{-1/2}):
    mean l1 true-gradient norm over the second half of T = p['T_mv'] steps, for odd n in p['n_mv']."""
    plateau = {}
    for n in p["n_mv"]:
        r = simulate("mv", _objective(p["d"], n, p), [p["T_mv"]], p["n_seeds"], seed=p["seed"], x0=0.0,
                     c_eta=p["c_eta_mv"], mv_eta="n", record_trace=True)
        plateau[n] = float(r.l1_trace[p["T_mv"] // 2 :].mean())
    return plateau


def d_scaling_experiment(p: Mapping[str, Any], method: str = "lion", regime: str = "a") -> dict[int, float]:
    """C2: A_T / (d^{1/2} T^{-1/4}) at T = p['T_dscale'] for d in p['d_grid'] (Thm 1 normalisation)."""
    T = p["T_dscale"]
    return {d: float(simulate(method, _objective(d, 1, p), [T], p["n_seeds"], seed=p["seed"], c_beta=p["c_beta"],
                              **REGIMES[regime]).mean()[0]) / (d ** 0.5 * T ** -0.25)
            for d in p["d_grid"]}


def digits_experiment(p: Mapping[str, Any], methods: tuple[str, ...] | None = None) -> dict[str, list[DigitsRun]]:
    """F5: learning curves on digits for every method and seed in p['digits_seeds']."""
    data = DigitsData.load(seed=p["seed"])
    methods = methods or tuple(p["digits_methods"])
    return {m: [train_digits(m, data, p["digits_steps"], n_workers=p["digits_workers"], seed=s,
                             eval_every=p["digits_eval_every"]) for s in p["digits_seeds"]]
            for m in methods}


DEMO_METHODS = ("dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv")


def distributed_demo(p: Mapping[str, Any], methods: tuple[str, ...] = DEMO_METHODS, regime: str = "b") -> dict[str, dict]:
    """Run the real multi-process implementation (one gloo process per node) at p['distributed_demo']
    sizes and compare its iterates with the simulator fed the same random stream.

    Returns per method: max |x_mp - x_sim| over all iterates, bytes up/down per worker per step, the
    float32 all-reduce bytes for comparison, whether all ranks agree, and the wall time of the spawn."""
    q = p["distributed_demo"]
    obj = _objective(q["d"], q["n_workers"], p)
    kw = dict(seed=p["seed"], c_beta=p["c_beta"], **REGIMES[regime])
    mp_runs = run_distributed(obj, methods, q["T"], **kw)
    out = {}
    for m in methods:
        sim = simulate(m, obj, [q["T"]], 1, record_iterates=True, **kw)
        r = mp_runs[m]
        out[m] = dict(max_abs_diff=float(np.abs(r.iterates - sim.iterates[:, 0, 0]).max()), bytes_up=r.bytes_up,
                      bytes_down=r.bytes_down, fp32_allreduce_bytes=r.fp32_allreduce_bytes,
                      ranks_agree=r.ranks_agree, wall_s=r.wall_s)
    return out


@dataclass
class ExperimentSet:
    """All experiments of one preset, with the wall time of each (seconds)."""

    rates: dict[str, dict[str, SimResult]] = field(default_factory=dict)
    speedup: dict[int, float] = field(default_factory=dict)
    mv_plateau: dict[int, float] = field(default_factory=dict)
    d_scaling: dict[int, float] = field(default_factory=dict)
    digits: dict[str, list[DigitsRun]] = field(default_factory=dict)
    distributed: dict[str, dict] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def run_all(p: Mapping[str, Any], with_distributed: bool = True) -> ExperimentSet:
    """Every experiment of the chapter at preset ``p`` (what the notebook runs), timed; the
    multi-process demo (spawns processes) can be left out with ``with_distributed=False``."""
    out = ExperimentSet()

    def timed(name: str, fn, *args):
        t0 = time.perf_counter()
        value = fn(*args)
        out.seconds[name] = time.perf_counter() - t0
        return value

    for regime in p["regimes"]:
        out.rates[regime] = timed(f"rates_{regime}", rate_experiment, p, regime)
    out.speedup = timed("speedup", speedup_experiment, p)
    out.mv_plateau = timed("mv_plateau", mv_plateau_experiment, p)
    out.d_scaling = timed("d_scaling", d_scaling_experiment, p)
    out.digits = timed("digits", digits_experiment, p)
    if with_distributed:
        out.distributed = timed("distributed_demo", distributed_demo, p)
    return out


def summarize(exp: ExperimentSet) -> dict[str, Any]:
    """The headline numbers of an :class:`ExperimentSet` (slopes, ratios, accuracies)."""
    n_mv = sorted(exp.mv_plateau)
    n_sp = sorted(exp.speedup)
    ds = list(exp.d_scaling.values())
    return {
        "slopes": {reg: slopes(res) for reg, res in exp.rates.items()},
        "speedup_slope_in_n": fit_loglog_slope(n_sp, [exp.speedup[n] for n in n_sp])[0] if len(n_sp) > 1 else None,
        "mv_plateau_slope_in_n": fit_loglog_slope(n_mv, [exp.mv_plateau[n] for n in n_mv])[0] if len(n_mv) > 1 else None,
        "mv_plateau_ratio_first_last": exp.mv_plateau[n_mv[0]] / exp.mv_plateau[n_mv[-1]] if n_mv else None,
        "d_scaling_max_over_min": max(ds) / min(ds) if ds else None,
        "digits_final_accuracy": {m: float(np.mean([r.final_accuracy for r in runs])) for m, runs in exp.digits.items()},
        "distributed_max_abs_diff": max((r["max_abs_diff"] for r in exp.distributed.values()), default=None),
        "seconds": dict(exp.seconds),
    }
