"""The chapter's experiments as functions of a preset (``presets.py``): what ``notebooks/lion.ipynb`` runs.

* :func:`rate_experiment` (F1, F3): A_T vs T under each theorem's schedule, both regimes, batched
  variants (the beta1 band, weight-decay controls) in one vectorised loop per method;
* :func:`speedup_experiment` (F2): A_T vs the number of nodes n at fixed T (Thms 3-4);
* :func:`mv_experiment` (F3): the majority-vote plateau vs n under eta = c n^{-1/2} (Thm 5's second
  schedule) and at fixed eta (the vote bias isolated), with the vote-bias term recorded along the run;
* :func:`d_scaling_experiment`: A_T / (d^{1/2} T^{-1/4}) vs d on separable, rotated-anisotropic and
  growing-gap objectives;
* :func:`error_experiment`: the momentum error recursion of the proofs, EMA vs STORM, over (beta, eta);
* :func:`bound_fit_experiment`: A_T over a (T, c_eta, c_beta) grid and a non-negative least-squares
  fit of the bound B1's terms;
* :func:`digits_experiment` (F5) and :func:`distributed_demo` (real processes).

Every function is deterministic given the preset's seed. The regimes (brief §3, revised): both start
at x_1 = 0 (so ||x_1||_inf = 0 <= eta, as Thms 1-4 require with weight decay) and use the theorem's
largest weight decay lambda = 1/(2 eta T); (a) the minimum is the start point (Delta = 0: the noise and
drift terms), (b) the minimum sits at distance 1 per coordinate (center = 1; Delta = d (1 - cos 1)).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch
from scipy.optimize import nnls

from .digits import DigitsData, DigitsRun, train_digits
from .distributed import run_distributed
from .objectives import PeriodicObjective
from .simulator import SimResult, Variant, fit_loglog_slope, simulate_variants

#: start point, position of the minimum and eta constant of the two regimes
REGIMES: dict[str, dict[str, float]] = {"a": dict(x0=0.0, center=0.0, c_eta=0.5),
                                        "b": dict(x0=0.0, center=1.0, c_eta=8.0)}
#: beta1 = beta2 ** power across Theorem 1's band: Lion's default boundary, Signum, the lower end
BETA1_RULES: dict[str, float] = {"sqrt": 0.5, "equal": 1.0, "square": 2.0}
SINGLE_NODE = ("lion", "lion_vr")


def make_objective(p: Mapping[str, Any], d: int, n: int, seed_offset: int = 0, **kw) -> PeriodicObjective:
    """O1 at dimension d with n nodes; the phases (and rotation) depend on (seed, n, d) only."""
    return PeriodicObjective.make(d, n, sigma=p["sigma"], heterogeneity=p["heterogeneity"],
                                  seed=p["seed"] + 1000 * n + d + seed_offset, **kw)


def regime_variant(p: Mapping[str, Any], regime: str, **override) -> Variant:
    """The Variant of ``regime`` ('a' or 'b'): beta1 = sqrt(beta2), lambda = the theorem's maximum."""
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; valid: {tuple(REGIMES)}")
    kw = dict(REGIMES[regime], c_beta=p["c_beta"], weight_decay="theorem", beta1_power=BETA1_RULES["sqrt"])
    kw.update(override)
    return Variant(**kw)


def rate_variants(p: Mapping[str, Any], method: str) -> dict[str, Variant]:
    """The variants run for ``method``: '<regime>' (the claims' setting) for every method; for Lion and
    Lion-VR also '<regime>/beta1=<rule>' across the beta1 band, and for Lion the controls of the
    theorem's hypotheses in regime (b): no weight decay, the start x_1 = 1 (||x_1||_inf > eta, the old
    regime), and a constant lambda = p['wd_broken'] that breaks lambda <= 1/(2 eta T) at every T."""
    out = {reg: regime_variant(p, reg) for reg in p["regimes"]}
    if method in SINGLE_NODE:
        for reg in p["regimes"]:
            for rule, power in BETA1_RULES.items():
                if rule != "sqrt":
                    out[f"{reg}/beta1={rule}"] = regime_variant(p, reg, beta1_power=power, strict=False)
    if method == "lion" and "b" in p["regimes"]:
        out["b/lambda=0"] = regime_variant(p, "b", weight_decay=0.0)
        out["b/x1=1"] = regime_variant(p, "b", x0=1.0, center=0.0)
        out["b/lambda broken"] = regime_variant(p, "b", weight_decay=float(p["wd_broken"]))
    return out


def rate_experiment(p: Mapping[str, Any], method: str, variants: Mapping[str, Variant] | None = None) -> dict[str, SimResult]:
    """A_T vs T (fresh run per T) for ``method`` and each variant, d = p['d'], one loop.

    Single-node methods use one node; the distributed ones ``p['n_rate']`` nodes."""
    n = 1 if method in SINGLE_NODE else p["n_rate"]
    variants = rate_variants(p, method) if variants is None else variants
    return simulate_variants(method, make_objective(p, p["d"], n), p["horizons"], p["n_seeds"], variants,
                             seed=p["seed"])


def speedup_experiment(p: Mapping[str, Any], method: str = "dist") -> dict[int, dict[str, SimResult]]:
    """A_T at fixed T = p['T_speedup'] for n in p['n_grid'] (Thm 3 or 4 schedule), every regime."""
    variants = {reg: regime_variant(p, reg) for reg in p["regimes"]}
    return {n: simulate_variants(method, make_objective(p, p["d"], n), [p["T_speedup"]], p["n_seeds"], variants,
                                 seed=p["seed"])
            for n in p["n_grid"]}


def mv_variants(p: Mapping[str, Any]) -> dict[str, Variant]:
    """eta = c n^{-1/2} (Thm 5's second schedule) and fixed eta = eta0 / k for k in p['mv_eta_divisors'],
    eta0 = c / sqrt(min n) (the first schedule's step at the smallest n); regime (a), beta2 = 1/2."""
    eta0 = p["c_eta_mv"] / min(p["n_mv"]) ** 0.5
    out = {"eta ~ n^-1/2": regime_variant(p, "a", c_eta=p["c_eta_mv"], mv_eta="n")}
    for k in p["mv_eta_divisors"]:
        out[f"eta = eta0/{k}"] = regime_variant(p, "a", eta=eta0 / k)
    return out


def mv_experiment(p: Mapping[str, Any]) -> dict[int, dict[str, SimResult]]:
    """Majority vote (S_G up, sign of the vote sum down) for odd n in p['n_mv'], T = p['T_mv'] steps,
    with the per-step l1 trace (for the plateau) and the vote bias recorded."""
    return {n: simulate_variants("mv", make_objective(p, p["d"], n), [p["T_mv"]], p["n_seeds"], mv_variants(p),
                                 seed=p["seed"], record_trace=True, record_vote_bias=True)
            for n in p["n_mv"]}


def plateau(result: SimResult) -> np.ndarray:
    """Per-seed plateau: mean l1 true-gradient norm over the second half of the (single) horizon."""
    if result.l1_trace is None or len(result.horizons) != 1:
        raise ValueError("plateau needs a one-horizon simulation with record_trace=True")
    T = result.horizons[0]
    return result.l1_trace[T // 2 :, 0, :].mean(axis=0)


def d_scaling_experiment(p: Mapping[str, Any], kind: str) -> dict[int, np.ndarray]:
    """Per-seed A_T / (d^{1/2} T^{-1/4}) of Lion at T = p['T_dscale'] for d in p['d_grid'].

    kind: 'separable' (O1, regime a), 'rotated' (rotated O1 with log-spaced curvatures
    p['curvature_range'], regime a: non-separable), 'gap' (separable, regime b: Delta grows like d)."""
    if kind not in ("separable", "rotated", "gap"):
        raise ValueError(f"kind must be 'separable', 'rotated' or 'gap', got {kind!r}")
    T = p["T_dscale"]
    out = {}
    for d in p["d_grid"]:
        kw = dict(rotated=True, curvature_range=tuple(p["curvature_range"])) if kind == "rotated" else {}
        obj = make_objective(p, d, 1, seed_offset=17 if kind == "rotated" else 0, **kw)
        reg = "b" if kind == "gap" else "a"
        r = simulate_variants("lion", obj, [T], p["n_seeds"], {reg: regime_variant(p, reg)}, seed=p["seed"])[reg]
        out[d] = r.l1[0] / (d ** 0.5 * T ** -0.25)
    return out


def error_experiment(p: Mapping[str, Any]) -> dict[str, dict[tuple[float, float], SimResult]]:
    """The estimator error ||mean m_t - grad f(x_t)||_2 of the EMA (Lion) and STORM (Lion-VR) momentum over
    a grid of fixed beta2 (p['err_betas']) and eta (p['err_etas']), T = p['T_err'] steps from x_1 = 0
    toward the minimum at 1 (a coherent descent: the drift term of the recursion is at its largest);
    beta1 = beta2. 'storm_other_sample' is the negative control: gh_t from a fresh sample.

    Common random numbers: each eta is its own simulation with the same seed and the same rows (one per
    beta and seed), so every eta sees the same noise and the error differences across eta are the drift
    term alone, not Monte-Carlo noise."""
    T = p["T_err"]
    obj = make_objective(p, p["d"], 1, seed_offset=29)
    out: dict[str, dict[tuple[float, float], SimResult]] = {}
    for label, method, same in (("ema", "lion", True), ("storm", "lion_vr", True), ("storm_other_sample", "lion_vr", False)):
        exponent = 0.5 if method == "lion" else 2 / 3
        out[label] = {}
        for eta in p["err_etas"]:
            variants = {f"{beta:g}": Variant(center=1.0, eta=eta, c_beta=beta * T ** exponent, beta1_power=1.0,
                                             strict=False) for beta in p["err_betas"]}
            res = simulate_variants(method, obj, [T], p["err_seeds"], variants, seed=p["seed"], record_error=True,
                                    same_sample=same)
            for beta in p["err_betas"]:
                out[label][(beta, eta)] = res[f"{beta:g}"]
    return out


def bound_terms(T: np.ndarray, d: int, eta: np.ndarray, beta: np.ndarray, delta: float, sigma: float = 1.0,
                L: float = 1.0) -> dict[str, np.ndarray]:
    """The five terms of bound B1 (brief §3) at the given (T, eta, beta): Delta/(eta T), sqrt(d) sigma /
    sqrt(beta T), L eta d / beta, sqrt(d) sigma sqrt(beta), L eta d."""
    return {"Delta/(eta T)": delta / (eta * T), "sqrt(d) sigma/sqrt(beta T)": d ** 0.5 * sigma / np.sqrt(beta * T),
            "L eta d/beta": L * eta * d / beta, "sqrt(d) sigma sqrt(beta)": d ** 0.5 * sigma * np.sqrt(beta),
            "L eta d": L * eta * d}


def bound_fit_experiment(p: Mapping[str, Any]) -> dict[str, Any]:
    """A_T of Lion in regime (b) over (T, c_eta, c_beta) in p['horizons'] x p['fit_c_eta'] x p['fit_c_beta'],
    and a non-negative least-squares fit A_T ~ sum_k w_k term_k of the five B1 terms (relative residuals:
    each row is divided by its A_T). Returns the grid, the terms, the weights and the residuals."""
    obj = make_objective(p, p["d"], 1)
    variants = {f"{ce:g},{cb:g}": regime_variant(p, "b", c_eta=ce, c_beta=cb)
                for ce in p["fit_c_eta"] for cb in p["fit_c_beta"]}
    res = simulate_variants("lion", obj, p["horizons"], p["n_seeds"], variants, seed=p["seed"])
    rows = []
    for key, r in res.items():
        for i, T in enumerate(r.horizons):
            s = r.schedules[i]
            rows.append((T, s.eta, s.beta2, float(r.l1[i].mean()), key))
    T = np.array([r[0] for r in rows], float)
    eta = np.array([r[1] for r in rows])
    beta = np.array([r[2] for r in rows])
    A = np.array([r[3] for r in rows])
    v = regime_variant(p, "b")
    start = torch.full((1, obj.d), v.x0 - v.center, dtype=torch.float64)  # x_1 seen from the minimum
    delta = float(obj.value(start)[0])                                     # f(x_1) - inf f (inf f = 0)
    terms = bound_terms(T, p["d"], eta, beta, delta, p["sigma"], obj.L)
    X = np.column_stack(list(terms.values()))
    weights, _ = nnls(X / A[:, None], np.ones_like(A))
    fitted = X @ weights
    return dict(T=T, eta=eta, beta=beta, A=A, keys=[r[4] for r in rows], terms=terms, weights=dict(zip(terms, weights)),
                fitted=fitted, rel_residual=fitted / A - 1.0, delta=delta)


def seed_ratio(values: Mapping[int, np.ndarray]) -> np.ndarray:
    """Per-seed max / min over the keys of per-seed values (e.g. the d-normalised A_T over d)."""
    stacked = np.stack([values[k] for k in sorted(values)])
    return stacked.max(axis=0) / stacked.min(axis=0)


def loglog_slope_per_seed(x: Mapping[int, np.ndarray] | list, values: list[np.ndarray]) -> np.ndarray:
    """One log-log slope per seed of values[i][seed] against x[i]."""
    stacked = np.stack(values)
    return np.array([fit_loglog_slope(list(x), stacked[:, s])[0] for s in range(stacked.shape[1])])


#: digits rows: name -> (method, keyword arguments of train_digits)
def digits_rows(p: Mapping[str, Any]) -> dict[str, tuple[str, dict]]:
    """Every digits row: each method of p['digits_methods'], and the compressed ones (mv, uu, uu_vr) once
    more with the paper's unbiased data-dependent radius (``<method>:unbiased``)."""
    rows = {m: (m, {}) for m in p["digits_methods"]}
    for m in ("mv", "uu", "uu_vr"):
        if m in p["digits_methods"]:
            rows[f"{m}:unbiased"] = (m, dict(uplink_radius="max"))
    return rows


def digits_experiment(p: Mapping[str, Any], rows: Mapping[str, tuple[str, dict]] | None = None) -> dict[str, list[DigitsRun]]:
    """Learning curves on digits for every row and seed in p['digits_seeds']."""
    data = DigitsData.load(seed=p["seed"])
    rows = digits_rows(p) if rows is None else rows
    return {name: [train_digits(method, data, p["digits_steps"], n_workers=p["digits_workers"], seed=s,
                                eval_every=p["digits_eval_every"], **kw) for s in p["digits_seeds"]]
            for name, (method, kw) in rows.items()}


DEMO_METHODS = ("dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv")


def distributed_demo(p: Mapping[str, Any], methods: tuple[str, ...] = DEMO_METHODS, regime: str = "b") -> dict[str, dict]:
    """Run the real multi-process implementation (one gloo process per node) at p['distributed_demo']
    sizes and compare its iterates with the simulator fed the same random stream.

    Returns per method: max |x_mp - x_sim| over all iterates, bytes up/down per worker per step, the
    float32 all-reduce bytes for comparison, whether all ranks agree, and the wall time of the spawn."""
    q = p["distributed_demo"]
    obj = make_objective(p, q["d"], q["n_workers"])
    v = regime_variant(p, regime)
    kw = dict(x0=v.x0, center=v.center, c_eta=v.c_eta, c_beta=v.c_beta, beta1_power=v.beta1_power,
              weight_decay=v.weight_decay)
    mp_runs = run_distributed(obj, methods, q["T"], seed=p["seed"], **kw)
    out = {}
    for m in methods:
        sim = simulate_variants(m, obj, [q["T"]], 1, {"x": v}, seed=p["seed"], record_iterates=True)["x"]
        r = mp_runs[m]
        out[m] = dict(max_abs_diff=float(np.abs(r.iterates - sim.iterates[:, 0, 0]).max()), bytes_up=r.bytes_up,
                      bytes_down=r.bytes_down, fp32_allreduce_bytes=r.fp32_allreduce_bytes,
                      ranks_agree=r.ranks_agree, wall_s=r.wall_s)
    return out
