"""The chapter's experiments as functions of a preset (``presets.py``): what ``notebooks/lion.ipynb`` runs.

* :func:`rate_experiment` (F1, F3): A_T vs T under each theorem's schedule, both regimes, batched
  variants (the beta1 band, weight-decay controls, the no-STORM ablation) in one vectorised loop per method;
* :func:`speedup_experiment` (F2): A_T vs the number of nodes n at fixed T (Thms 3-4);
* :func:`mv_experiment` (F3): the majority-vote plateau vs n under eta = c n^{-1/2} (Thm 5's second
  schedule) and at fixed eta, with the vote-bias term recorded, against :mod:`.plateau`'s prediction;
* :func:`d_scaling_experiment`: A_T normalised by the theorems' d-dependence vs d;
* :func:`u67_experiment`: Theorem 7 against Theorem 6 at small d and n, where T > d^3 n^4 is reachable;
* :func:`error_experiment`, :func:`storm_a2_experiment`: the momentum-error recursion of the proofs;
* :func:`bound_fit_experiment`: A_T over a (T, d, n, c_eta) grid and a non-negative least-squares fit
  of the terms of bounds B1/B3 (Lion) or B2/B4 (Lion-VR);
* :func:`digits_experiment` (F5) and :func:`distributed_demo` (real processes);
* the power and the gates of the claims: :func:`planted_seed_slopes` (a positive control: the paper's
  rate planted under the measured seed-to-seed noise) and :func:`attains_bound` (a comparison of two
  bounds is only testable where the weaker method attains its own).

Every function is deterministic given the preset's seed (and the device). The objective is O1 with
sample-dependent curvature ``p['curvature_noise']`` (average smoothness non-trivial, not STORM's best
case) unless a function says otherwise. The regimes: both start at x_1 = 0 (so ||x_1||_inf = 0 <= eta, as
Thms 1-4 require with weight decay) and use the theorem's largest weight decay lambda = 1/(2 eta T);
(a) the minimum is the start point (Delta = 0: the noise and drift terms), (b) the minimum sits at
distance 1 per coordinate (center = 1; Delta = d (1 - cos 1)), where the travel term Delta/(eta T) makes
the bounds attained.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from scipy.optimize import nnls

from .digits import DigitsData, DigitsRun, train_digits
from .distributed import run_distributed
from .objectives import PeriodicObjective
from .plateau import predicted_plateau
from .schedules import theorem_schedule
from .simulator import SimResult, Variant, fit_loglog_slope, simulate_variants

#: start point, position of the minimum and eta constant of the two regimes
REGIMES: dict[str, dict[str, float]] = {"a": dict(x0=0.0, center=0.0, c_eta=0.5),
                                        "b": dict(x0=0.0, center=1.0, c_eta=8.0)}
#: beta1 = beta2 ** power across Theorem 1's band: Lion's default boundary, Signum, the lower end
BETA1_RULES: dict[str, float] = {"sqrt": 0.5, "equal": 1.0, "square": 2.0}
SINGLE_NODE = ("lion", "lion_vr")
#: the tolerance on every slope the chapter tests (a claim "slope <= -1/4 + 0.05"), and the gate of a
#: comparison of bounds: the weaker method's slope must lie within it of its own bound
SLOPE_TOLERANCE = 0.05
#: the method without the paper's component: Lion (distributed Lion) run on the schedule of its VR
#: counterpart, B0 batch included: Lion-VR (distributed Lion-VR) without the STORM momentum
ABLATION: dict[str, str] = {"lion": "lion_vr", "dist": "dist_vr"}
#: each theorem's d-dependence: method -> (metric, exponent of d)
D_EXPONENT: dict[str, tuple[str, float]] = {"lion": ("l1", 0.5), "lion_vr": ("l1", 0.5), "dist": ("l1", 0.5),
                                            "dist_vr": ("l1", 0.5), "uu": ("l2", 0.25), "uu_vr": ("l2", 0.25)}


def compute_device() -> torch.device:
    """Where the simulator and the digits MLP compute: CUDA when present (`icml26.device`), else CPU."""
    from ..seeding import device

    return device()


def make_objective(p: Mapping[str, Any], d: int, n: int, seed_offset: int = 0, curvature_noise: float | None = None,
                   **kw) -> PeriodicObjective:
    """O1 at dimension d with n nodes and the preset's curvature noise (unless given); the phases (and
    rotation) depend on (seed, n, d) only."""
    s = p["curvature_noise"] if curvature_noise is None else curvature_noise
    return PeriodicObjective.make(d, n, sigma=p["sigma"], heterogeneity=p["heterogeneity"],
                                  seed=p["seed"] + 1000 * n + d + seed_offset, curvature_noise=s, **kw)


def regime_variant(p: Mapping[str, Any], regime: str, **override) -> Variant:
    """The Variant of ``regime`` ('a' or 'b'): beta1 = sqrt(beta2), lambda = the theorem's maximum."""
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; valid: {tuple(REGIMES)}")
    kw = dict(REGIMES[regime], c_beta=p["c_beta"], weight_decay="theorem", beta1_power=BETA1_RULES["sqrt"])
    kw.update(override)
    return Variant(**kw)


def rate_variants(p: Mapping[str, Any], method: str) -> dict[str, Variant]:
    """The variants run for ``method``: '<regime>' (the claims' setting) for every method; for Lion and
    Lion-VR also '<regime>/beta1=<rule>' across the beta1 band; for Lion and distributed Lion the ablation
    '<regime>/no STORM' (the schedule of the VR theorem without its momentum); for Lion the controls of the
    theorem's hypotheses in regime (b): no weight decay, the start x_1 = 1 (||x_1||_inf > eta), and a
    constant lambda = p['wd_broken'] that breaks lambda <= 1/(2 eta T) at every T."""
    out = {reg: regime_variant(p, reg) for reg in p["regimes"]}
    if method in SINGLE_NODE:
        for reg in p["regimes"]:
            for rule, power in BETA1_RULES.items():
                if rule != "sqrt":
                    out[f"{reg}/beta1={rule}"] = regime_variant(p, reg, beta1_power=power, strict=False)
    if method in ABLATION:
        for reg in p["regimes"]:
            out[f"{reg}/no STORM"] = regime_variant(p, reg, schedule_method=ABLATION[method])
    if method == "lion" and "b" in p["regimes"]:
        out["b/lambda=0"] = regime_variant(p, "b", weight_decay=0.0)
        out["b/x1=1"] = regime_variant(p, "b", x0=1.0, center=0.0)
        out["b/lambda broken"] = regime_variant(p, "b", weight_decay=float(p["wd_broken"]))
    return out


def rate_experiment(p: Mapping[str, Any], method: str, variants: Mapping[str, Variant] | None = None,
                    curvature_noise: float | None = None, device: torch.device | str | None = None
                    ) -> dict[str, SimResult]:
    """A_T vs T (fresh run per T) for ``method`` and each variant, d = p['d'], one loop.

    Single-node methods use one node; the distributed ones ``p['n_rate']`` nodes (odd: no vote ties)."""
    n = 1 if method in SINGLE_NODE else p["n_rate"]
    variants = rate_variants(p, method) if variants is None else variants
    return simulate_variants(method, make_objective(p, p["d"], n, curvature_noise=curvature_noise), p["horizons"],
                             rate_seeds(p, method), variants, seed=p["seed"], device=device or compute_device())


def rate_seeds(p: Mapping[str, Any], method: str) -> int:
    """Seeds of a rate run: p['n_seeds_central'] for the (cheap, single-node) centralised methods, whose slope
    comparison needs the narrowest interval, else p['n_seeds']."""
    return p["n_seeds_central"] if method in SINGLE_NODE else p["n_seeds"]


def fitted_slopes(p: Mapping[str, Any], result: SimResult, metric: str = "l1") -> np.ndarray:
    """The per-seed slopes a rate claim tests: log-log fits over the last p['fit_last'] horizons."""
    return result.seed_slopes(metric, last=p["fit_last"])


def slope_curve(p: Mapping[str, Any], result: SimResult, metric: str = "l1") -> tuple[np.ndarray, np.ndarray]:
    """Local slopes: per-seed log-log fits over every window of p['slope_window'] consecutive horizons,
    against log2 of the window's last horizon: (x, values of shape (seeds, windows)). A slope that still
    moves as T grows is pre-asymptotic; `icml26.convergence`'s rule on this curve says whether it settled."""
    w = p["slope_window"]
    H = np.asarray(result.horizons, float)
    values = getattr(result, metric)
    if len(H) < w:
        raise ValueError(f"a slope curve needs at least {w} horizons, got {len(H)}")
    rows = []
    for end in range(w, len(H) + 1):
        lx = np.log(H[end - w : end])
        rows.append([np.polyfit(lx, np.log(values[end - w : end, s]), 1)[0] for s in range(values.shape[1])])
    return np.log2(H[w - 1 :]), np.asarray(rows).T


def attains_bound(seed_slopes: Sequence[float], exponent: float, tol: float = SLOPE_TOLERANCE) -> bool:
    """Whether a method attains its bound's T-exponent on this instance: the whole interval of its mean slope
    (`icml26.over_seeds`) lies within ``tol`` of ``exponent``.

    Bounds are upper bounds: a comparison of two bounds (VR improves the rate) says something about two
    measured slopes only where the weaker method is not already faster than its own bound."""
    from ..stats import over_seeds

    s = over_seeds(list(seed_slopes))
    return exponent - tol <= s.ci_low and s.ci_high <= exponent + tol


def least_favourable(per_setting: Mapping[Any, Sequence[float]], upper: bool):
    """The intersection-union test of one claim over several settings: ``(key, SeedSummary)`` of the setting
    whose interval of the mean lies nearest the wrong side, the largest upper end for an "at most" region
    (``upper``), the smallest lower end for an "at least" one (`icml26.stats.intersection_union` without a bound;
    an undefined setting first). The claim's region holds for every setting's interval exactly when it holds
    for this one, and each setting keeps its own mean: the per-seed worst over settings, which this replaces,
    biased the mean by the max (or min) of the settings' noise (a planted gain of 0.05 read as -0.006)."""
    from ..stats import intersection_union, over_seeds

    if not per_setting:
        raise ValueError("least_favourable needs at least one setting")
    return intersection_union({k: over_seeds(list(v)) for k, v in per_setting.items()}, upper=upper)


def planted_seed_slopes(x: Sequence[float], values: np.ndarray, exponent: float) -> np.ndarray:
    """A positive control: per-seed log-log slopes after the seed-mean trend of ``values`` (shape (len(x),
    seeds)) is replaced by x^exponent, the paper's rate, while each seed keeps its measured deviation from
    the seed mean. Their mean is ``exponent`` exactly; their spread is the measured one, so the claim's
    test on them shows whether this run's noise could resolve the paper's rate at the claim's tolerance."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[0] != len(x):
        raise ValueError(f"values must have shape (len(x), seeds), got {values.shape}")
    logv = np.log(values)
    resid = logv - logv.mean(axis=1, keepdims=True)
    lx = np.log(np.asarray(x, dtype=float))
    return np.array([exponent + np.polyfit(lx, resid[:, s], 1)[0] for s in range(values.shape[1])])


def speedup_experiment(p: Mapping[str, Any], method: str = "dist") -> dict[int, dict[str, SimResult]]:
    """A_T at fixed T = p['T_speedup'] for n in p['n_grid'] (Thm 3 or 4 schedule), every regime."""
    variants = {reg: regime_variant(p, reg) for reg in p["regimes"]}
    return {n: simulate_variants(method, make_objective(p, p["d"], n), [p["T_speedup"]], p["n_seeds"], variants,
                                 seed=p["seed"], device=compute_device())
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
    return {n: simulate_variants("mv", make_objective(p, p["d"], n), [p["T_mv"]], p["mv_seeds"], mv_variants(p),
                                 seed=p["seed"], record_trace=True, record_vote_bias=True, device=compute_device())
            for n in p["n_mv"]}


def plateau(result: SimResult) -> np.ndarray:
    """Per-seed plateau: mean l1 true-gradient norm over the second half of the (single) horizon."""
    if result.l1_trace is None or len(result.horizons) != 1:
        raise ValueError("plateau needs a one-horizon simulation with record_trace=True")
    T = result.horizons[0]
    return result.l1_trace[T // 2 :, 0, :].mean(axis=0)


def mv_prediction(p: Mapping[str, Any], n: int, eta: float) -> float:
    """The plateau the birth-death chain of :mod:`.plateau` predicts for n nodes at step size eta."""
    obj = make_objective(p, p["d"], n)
    return predicted_plateau(obj.phases[:, 0].numpy(), obj.G, eta, obj.d)


def trace_curve(result: SimResult, windows: int) -> tuple[np.ndarray, np.ndarray]:
    """The per-step l1 trace of a one-horizon run, averaged over ``windows`` equal windows, per seed:
    (window-end steps, values of shape (seeds, windows)), a training curve for the convergence rule."""
    if result.l1_trace is None or len(result.horizons) != 1:
        raise ValueError("trace_curve needs a one-horizon simulation with record_trace=True")
    T = result.horizons[0]
    size = T // windows
    trace = result.l1_trace[: size * windows, 0, :]                  # (steps, seeds)
    values = trace.reshape(windows, size, -1).mean(axis=1).T
    return np.arange(1, windows + 1) * size, values


def d_scaling_experiment(p: Mapping[str, Any], kind: str, method: str = "lion") -> dict[int, np.ndarray]:
    """Per-seed A_T normalised by the theorem's d-dependence (:data:`D_EXPONENT`) and T^{-1/4}, at
    T = p['T_dscale'] for d in p['d_grid'].

    kind: 'separable' (O1, regime a), 'rotated' (rotated O1 with log-spaced curvatures
    p['curvature_range'], regime a), 'gap' (separable, regime b: Delta grows like d), 'fixed gap' (regime b
    with ||x_1 - x*||_2 = p['gap_distance'] for every d: Delta = d (1 - cos(gap / sqrt d)), nearly constant)."""
    if kind not in ("separable", "rotated", "gap", "fixed gap"):
        raise ValueError(f"kind must be 'separable', 'rotated', 'gap' or 'fixed gap', got {kind!r}")
    if method not in D_EXPONENT:
        raise ValueError(f"no d-dependence declared for {method!r}; valid: {tuple(D_EXPONENT)}")
    metric, exponent = D_EXPONENT[method]
    T = p["T_dscale"]
    n = 1 if method in SINGLE_NODE else p["n_rate"]
    out = {}
    for d in p["d_grid"]:
        kw = dict(rotated=True, curvature_range=tuple(p["curvature_range"])) if kind == "rotated" else {}
        obj = make_objective(p, d, n, seed_offset=17 if kind == "rotated" else 0, **kw)
        if kind == "fixed gap":
            variant = regime_variant(p, "b", center=p["gap_distance"] / math.sqrt(d))
        else:
            variant = regime_variant(p, "b" if kind == "gap" else "a")
        r = simulate_variants(method, obj, [T], p["n_seeds"], {"x": variant}, seed=p["seed"], device=compute_device())["x"]
        out[d] = getattr(r, metric)[0] / (d ** exponent * T ** -0.25)
    return out


def u67_experiment(p: Mapping[str, Any]) -> dict[int, dict[str, dict[str, SimResult]]]:
    """Theorem 6 (unbiased sign both ways, its schedule with the second step size d^{-1/5} n^{2/5} T^{-3/5}
    beyond T = d^3 n^4) against Theorem 7 (its VR counterpart) at d = p['u67_d'] for n in p['u67_n'] and
    horizons p['u67_horizons'], both regimes: {n: {method: {regime: SimResult}}}."""
    variants = {reg: regime_variant(p, reg) for reg in p["regimes"]}
    out: dict[int, dict[str, dict[str, SimResult]]] = {}
    for n in p["u67_n"]:
        obj = make_objective(p, p["u67_d"], n)
        out[n] = {m: simulate_variants(m, obj, p["u67_horizons"], p["n_seeds"], variants, seed=p["seed"],
                                       device=compute_device()) for m in ("uu", "uu_vr")}
    return out


def error_experiment(p: Mapping[str, Any]) -> dict[str, dict[tuple[float, float], SimResult]]:
    """The estimator error ||mean m_t - grad f(x_t)||_2 of the EMA (Lion) and STORM (Lion-VR) momentum over
    a grid of fixed beta2 (p['err_betas']) and eta (p['err_etas']), T = p['T_err'] steps from x_1 = 0
    toward the minimum at 1 (a coherent descent: the drift term of the recursion is at its largest);
    beta1 = beta2; on the ADDITIVE-noise O1 (curvature noise 0), where STORM's drift term cancels exactly.
    'storm_other_sample' is the negative control: gh_t from a fresh sample.

    Common random numbers: each eta is its own simulation with the same seed and the same rows (one per
    beta and seed), so every eta sees the same noise and the error differences across eta are the drift
    term alone, not Monte-Carlo noise."""
    T = p["T_err"]
    obj = make_objective(p, p["d"], 1, seed_offset=29, curvature_noise=0.0)
    out: dict[str, dict[tuple[float, float], SimResult]] = {}
    for label, method, same in (("ema", "lion", True), ("storm", "lion_vr", True), ("storm_other_sample", "lion_vr", False)):
        exponent = 0.5 if method == "lion" else 2 / 3
        out[label] = {}
        for eta in p["err_etas"]:
            variants = {f"{beta:g}": Variant(center=1.0, eta=eta, c_beta=beta * T ** exponent, beta1_power=1.0,
                                             strict=False) for beta in p["err_betas"]}
            res = simulate_variants(method, obj, [T], p["err_seeds"], variants, seed=p["seed"], record_error=True,
                                    same_sample=same, device=compute_device())
            for beta in p["err_betas"]:
                out[label][(beta, eta)] = res[f"{beta:g}"]
    return out


def storm_a2_experiment(p: Mapping[str, Any]) -> dict[tuple[float, float], SimResult]:
    """STORM's momentum error with sample-dependent curvature (A2 non-trivial), from a stationary start
    (regime a: the multiplicative noise vanishes at the minimum, so the eta -> 0 level is the additive
    noise's alone), fixed beta2 in p['err_betas'] and eta in p['err_etas'], T = p['T_err_a2'], beta1 = beta2,
    common random numbers across eta. The recursion predicts an excess over the eta -> 0 level of
    (1 - beta) s rms||grad F(x_t) - grad F(x_{t-1})|| / sqrt(beta (2 - beta)) (:func:`storm_a2_excess`)."""
    T = p["T_err_a2"]
    obj = make_objective(p, p["d"], 1, seed_offset=31)
    out: dict[tuple[float, float], SimResult] = {}
    for eta in p["err_etas"]:
        variants = {f"{beta:g}": Variant(eta=eta, c_beta=beta * T ** (2 / 3), beta1_power=1.0, strict=False)
                    for beta in p["err_betas"]}
        res = simulate_variants("lion_vr", obj, [T], p["err_seeds"], variants, seed=p["seed"], record_error=True,
                                device=compute_device())
        for beta in p["err_betas"]:
            out[(beta, eta)] = res[f"{beta:g}"]
    return out


def storm_a2_excess(beta: float, curvature_noise: float, grad_change: float) -> float:
    """The A2 part of STORM's stationary error: (1 - beta) s ||dgrad|| / sqrt(beta (2 - beta)) (Theory)."""
    return (1.0 - beta) * curvature_noise * grad_change / math.sqrt(beta * (2.0 - beta))


def bound_terms(T: np.ndarray, d: np.ndarray, n: np.ndarray, eta: np.ndarray, beta: np.ndarray, batch0: np.ndarray,
                delta: np.ndarray, sigma: np.ndarray, L: np.ndarray, vr: bool) -> dict[str, np.ndarray]:
    """The five terms of bound B3 (B1 at n = 1) or, with ``vr``, B4 (B2 at n = 1), brief §3:
    Delta/(eta T), sqrt(d) sigma / sqrt(beta n [B0] T), L eta d / beta (VR: / sqrt(n beta)),
    sqrt(d) sigma sqrt(beta / n), L eta d."""
    T, d, n, eta, beta, batch0, delta, sigma, L = (np.asarray(a, dtype=float) for a in
                                                    (T, d, n, eta, beta, batch0, delta, sigma, L))
    init = np.sqrt(d) * sigma / np.sqrt(beta * n * T * (batch0 if vr else 1.0))
    drift = L * eta * d / (np.sqrt(n * beta) if vr else beta)
    return {"Delta/(eta T)": delta / (eta * T), "init": init, "drift": drift,
            "noise": np.sqrt(d) * sigma * np.sqrt(beta / n), "L eta d": L * eta * d}


BOUND_FAMILIES: dict[str, tuple[str, str]] = {"Lion (B1, B3)": ("lion", "dist"), "Lion-VR (B2, B4)": ("lion_vr", "dist_vr")}


def bound_fit_experiment(p: Mapping[str, Any], family: str) -> dict[str, Any]:
    """A_T in regime (b) over the grid T in p['fit_horizons'], d in p['fit_d'], n in p['fit_n'] (n = 1: the
    centralised method, else the distributed one) and c_eta in p['fit_c_eta'], p['fit_seeds'] seeds, and a
    non-negative least-squares fit A_T ~ sum_k w_k term_k of the bound's five terms on relative errors
    (each row divided by its A_T). sigma is the objective's A3 level and L its (average) smoothness."""
    if family not in BOUND_FAMILIES:
        raise ValueError(f"unknown family {family!r}; valid: {tuple(BOUND_FAMILIES)}")
    central, distributed = BOUND_FAMILIES[family]
    vr = central == "lion_vr"
    rows: dict[str, list] = {k: [] for k in ("T", "d", "n", "c_eta", "eta", "beta", "batch0", "delta", "sigma", "L", "A")}
    for d in p["fit_d"]:
        for n in p["fit_n"]:
            method = central if n == 1 else distributed
            obj = make_objective(p, d, n)
            variants = {f"{ce:g}": regime_variant(p, "b", c_eta=ce) for ce in p["fit_c_eta"]}
            res = simulate_variants(method, obj, p["fit_horizons"], p["fit_seeds"], variants, seed=p["seed"],
                                    device=compute_device())
            start = torch.full((1, d), -1.0, dtype=torch.float64)         # x_1 = 0 seen from the minimum at 1
            delta = float(obj.value(start)[0])
            for key, r in res.items():
                for i, T in enumerate(r.horizons):
                    s = r.schedules[i]
                    for name, value in (("T", T), ("d", d), ("n", n), ("c_eta", float(key)), ("eta", s.eta),
                                        ("beta", s.beta2), ("batch0", s.batch0), ("delta", delta),
                                        ("sigma", obj.sigma_bound), ("L", obj.L_avg if vr else obj.L),
                                        ("A", float(r.l1[i].mean()))):
                        rows[name].append(value)
    grid = {k: np.asarray(v, dtype=float) for k, v in rows.items()}
    terms = bound_terms(grid["T"], grid["d"], grid["n"], grid["eta"], grid["beta"], grid["batch0"], grid["delta"],
                        grid["sigma"], grid["L"], vr)
    X = np.column_stack(list(terms.values()))
    A = grid["A"]
    weights, _ = nnls(X / A[:, None], np.ones_like(A))
    fitted = X @ weights
    return dict(grid=grid, terms=terms, weights=dict(zip(terms, weights)), fitted=fitted, rel_residual=fitted / A - 1.0)


#: the schedules' exponents as the theorems state them (brief §2): method -> {quantity: (d, n, T) exponents}
STATED_SCHEDULES: dict[str, dict[str, tuple[float, float, float]]] = {
    "lion": {"eta": (-1 / 2, 0, -3 / 4), "beta2": (0, 0, -1 / 2)},
    "lion_vr": {"eta": (-1 / 2, 0, -2 / 3), "beta2": (0, 0, -2 / 3), "batch0": (0, 0, 1 / 3)},
    "dist": {"eta": (-1 / 2, 1 / 4, -3 / 4), "beta2": (0, 1 / 2, -1 / 2)},
    "dist_vr": {"eta": (-1 / 2, 1 / 3, -2 / 3), "beta2": (0, 1 / 3, -2 / 3), "batch0": (0, -2 / 3, 1 / 3)},
    "mv": {"eta": (-1 / 2, 0, -1 / 2), "beta2": (0, 0, 0)},
    "uu_vr": {"eta": (-1 / 2, 0, -1 / 2), "beta2": (0, 0, -1 / 2)},
}


def schedule_exponents(method: str, quantity: str, base: tuple[int, int, int] = (64, 8, 2 ** 20)) -> tuple[float, ...]:
    """The exponents in (d, n, T) of a schedule quantity as the code computes it (log-ratios at 16x the
    base value of each variable; B0 without its ceiling)."""
    def value(d: int, n: int, T: int) -> float:
        s = theorem_schedule(method, T, d, n, c_batch=1e6 if quantity == "batch0" else 1.0)
        return float(getattr(s, quantity))
    d0, n0, T0 = base
    ref = value(d0, n0, T0)
    return tuple(math.log(value(*(v * 16 if i == j else v for j, v in enumerate(base))) / ref, 16) for i in range(3))


def seed_ratio(values: Mapping[int, np.ndarray]) -> np.ndarray:
    """Per-seed max / min over the keys of per-seed values (e.g. the d-normalised A_T over d)."""
    stacked = np.stack([values[k] for k in sorted(values)])
    return stacked.max(axis=0) / stacked.min(axis=0)


def loglog_slope_per_seed(x: Sequence[float], values: list[np.ndarray]) -> np.ndarray:
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
    dev = compute_device()
    return {name: [train_digits(method, data, p["digits_steps"], n_workers=p["digits_workers"], seed=s,
                                eval_every=p["digits_eval_every"], device=dev, **kw) for s in p["digits_seeds"]]
            for name, (method, kw) in rows.items()}


DEMO_METHODS = ("dist", "dist_vr", "mv", "uu", "uu_vr", "sign_mv")


def distributed_demo(p: Mapping[str, Any], methods: tuple[str, ...] = DEMO_METHODS, regime: str = "b") -> dict[str, dict]:
    """Run the real multi-process implementation (one gloo process per node) at p['distributed_demo']
    sizes and compare its iterates with the simulator fed the same random stream (both on CPU; an even
    worker count breaks majority-vote ties with the shared stream's coin).

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
        sim = simulate_variants(m, obj, [q["T"]], 1, {"x": v}, seed=p["seed"], record_iterates=True, device="cpu")["x"]
        r = mp_runs[m]
        out[m] = dict(max_abs_diff=float(np.abs(r.iterates - sim.iterates[:, 0, 0]).max()), bytes_up=r.bytes_up,
                      bytes_down=r.bytes_down, fp32_allreduce_bytes=r.fp32_allreduce_bytes,
                      ranks_agree=r.ranks_agree, wall_s=r.wall_s)
    return out
