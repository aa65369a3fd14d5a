"""The chapter's experiments (brief Section 5, figures F1-F5), each a plain function of a preset.

All distributions are exact (enumeration of {0,1}^n, sparse evolution); the only randomness is in the
data sets (the m samples of the data-based start) and in the testers' samples, all from seeded
generators. Expectations over data sets are reported as mean +- standard error over ``reps`` sets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..progress import progress
from .entropy import ate_constant_lower_bound, kl, local_kl, mixture_identities, tstar_bound
from .glauber import evolve, glauber_matrix, relaxation_time, tv
from .models import CurieWeissMixture, Mixture, ProductMixture
from .testing import TESTERS, TesterBudget, calibrate, local_perturbation, rejection_rates, weight_shift


def empirical_starts(model: Mixture, m: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``(2^n, reps)``: ``reps`` empirical distributions ``pi = (1/m) sum_j delta_{x_j}``, ``x_j ~ mu`` i.i.d."""
    idx = model.sample(m, rng, size=(reps,))
    N = model.mu.size
    starts = np.zeros((N, reps))
    np.add.at(starts, (idx, np.repeat(np.arange(reps)[:, None], m, axis=1)), 1.0 / m)
    return starts


@dataclass
class TVCurves:
    """``mean[j, s]``/``se[j, s]``: E TV(pi P^t, mu) at ``times[s]`` for ``ms[j]`` samples; ``worst``: from ``delta_{1^n}``."""

    n: int
    times: np.ndarray
    ms: tuple[int, ...]
    mean: np.ndarray
    se: np.ndarray
    worst: np.ndarray
    bound: np.ndarray
    mu_min: float
    k: int


def data_based_tv(model: Mixture, ms, reps: int, times, rng: np.random.Generator, P=None) -> TVCurves:
    """Exact ``TV(pi P^t, mu)`` for ``reps`` data sets of each size in ``ms`` (the setting of Theorem 4)."""
    ms = tuple(int(m) for m in ms)
    times = np.unique(np.asarray(times, dtype=int))
    if reps < 2:
        raise ValueError("need at least 2 data sets to report a standard error")
    P = glauber_matrix(model) if P is None else P
    mu = model.mu
    N = mu.size
    starts = [empirical_starts(model, m, reps, rng) for m in ms]
    worst = np.zeros((N, 1))
    worst[N - 1] = 1.0  # delta at 1^n: the centre of component 1 (a worst-case start, one mode)
    V = np.concatenate(starts + [worst], axis=1)
    _, d = evolve(P, V, int(times[-1]), record=times, target=mu)  # (len(times), columns)
    mean = np.stack([d[:, j * reps:(j + 1) * reps].mean(axis=1) for j in range(len(ms))])
    se = np.stack([d[:, j * reps:(j + 1) * reps].std(axis=1, ddof=1) / math.sqrt(reps) for j in range(len(ms))])
    mu_min = float(mu.min())
    bound = np.stack([tstar_bound(times, model.n, m, model.k, mu_min) for m in ms])
    return TVCurves(model.n, times, ms, mean, se, d[:, -1], bound, mu_min, model.k)


def separated_limit(m) -> np.ndarray:
    """``E|rho_hat_1 - 1/2| = ceil(m/2) C(m, ceil(m/2)) / (m 2^m)`` for ``rho_hat_1 ~ Bin(m, 1/2)/m`` (claim L).

    The floor of the data-based chain when two equal-weight components never exchange mass.
    """
    from scipy.special import gammaln

    m = np.atleast_1d(np.asarray(m, dtype=float))
    h = np.ceil(m / 2)
    log = np.log(h) + gammaln(m + 1) - gammaln(h + 1) - gammaln(m - h + 1) - np.log(m) - m * np.log(2)
    return np.exp(log)


def identity_checks(n: int, k: int, instances: int, rng: np.random.Generator) -> dict[str, float]:
    """Worst error / smallest slack of I1-I6 and the T* recursion over random ``nu`` on a random M2 mixture."""
    model = ProductMixture.random(n, k, rng)
    P = glauber_matrix(model)
    worst: dict[str, float] = {}
    for r in range(instances):
        if r % 4 == 3:  # empirical distributions (sparse support, like a data-based start)
            idx = model.sample(int(rng.integers(1, 3 * n)), rng)
            nu = np.bincount(idx, minlength=model.mu.size) / idx.size
        else:  # log-normal densities of varying spread
            nu = model.mu * rng.lognormal(0.0, (0.5, 1.5, 3.0)[r % 4], model.mu.size)
            nu /= nu.sum()
        for key, val in mixture_identities(model, nu, P=P).items():
            if "(error)" in key:
                worst[key] = max(worst.get(key, 0.0), val)
            else:
                worst[key] = min(worst.get(key, math.inf), val)
    return worst


def relaxation_vs_n(ns, p: float, cw: dict | None = None) -> dict[str, np.ndarray]:
    """F1: relaxation time ``1/gap`` of M1 (and optionally M3), and the ATE-constant lower bound for M1."""
    out = {"n": np.asarray(ns), "M1": [], "ate_lb": [], "local": [], "kl": []}
    if cw is not None:
        out["M3"] = []
    for n in progress(ns, desc="spectral gaps"):
        m1 = ProductMixture.symmetric(n, p)
        out["M1"].append(relaxation_time(m1))
        alt = weight_shift(m1, 0.2)
        out["ate_lb"].append(ate_constant_lower_bound(m1.mu, alt.mu))
        out["local"].append(local_kl(alt.mu, m1.mu))
        out["kl"].append(kl(alt.mu, m1.mu))
        if cw is not None:
            out["M3"].append(relaxation_time(CurieWeissMixture(n, cw["beta"], cw["fields"])))
    return {key: np.asarray(v) for key, v in out.items()}


def floor_vs_m(ns, p: float, ms, reps: int, t_factor: int, rng: np.random.Generator) -> dict:
    """F3: ``E TV(pi P^t, mu)`` at ``t = t_factor * n`` against ``m`` for several ``n`` (M1)."""
    res = {}
    for n in progress(ns, desc="TV floor vs m"):
        model = ProductMixture.symmetric(n, p)
        res[n] = data_based_tv(model, ms, reps, [t_factor * n], rng)
    return res


def mixing_time_vs_n(ns, p: float, m: int, reps: int, t_factor: int, excess: float, rng) -> dict[str, np.ndarray]:
    """F4: smallest ``t`` with ``E TV <= floor + excess`` from an m-sample start (floor = E TV at ``t_factor n``)."""
    t_mix, floor, worst = [], [], []
    for n in progress(ns, desc="mixing time vs n"):
        model = ProductMixture.symmetric(n, p)
        T = t_factor * n
        c = data_based_tv(model, [m], reps, np.arange(T + 1), rng)
        fl = c.mean[0, -1]
        t_mix.append(int(c.times[np.argmax(c.mean[0] <= fl + excess)]))
        floor.append(fl)
        worst.append(c.worst[-1])
    return {"n": np.asarray(ns), "t_mix": np.asarray(t_mix), "floor": np.asarray(floor), "worst": np.asarray(worst)}


def power_curves(n: int, p: float, deltas, budget: TesterBudget, trials: int, null_trials: int, n_null: int,
                 rng) -> dict:
    """F5: rejection rates of T_loc, T_w, T_mix on families A (weight shift) and B (local perturbation)."""
    visible = ProductMixture.symmetric(n, p)
    th = calibrate(visible, budget, n_null, rng)
    type1 = rejection_rates(visible, visible, budget, th, null_trials, rng)
    power = {fam: {t: [] for t in TESTERS} for fam in ("A", "B")}
    dist = {fam: {"tv": [], "local": [], "kl": [], "kl_w": []} for fam in ("A", "B")}
    for d in progress(deltas, desc="power curves"):
        for fam, alt in (("A", weight_shift(visible, d)), ("B", local_perturbation(visible, d))):
            rates = rejection_rates(visible, alt, budget, th, trials, rng)
            for t in TESTERS:
                power[fam][t].append(rates[t])
            dist[fam]["tv"].append(tv(alt.mu, visible.mu))
            dist[fam]["local"].append(local_kl(alt.mu, visible.mu))
            dist[fam]["kl"].append(kl(alt.mu, visible.mu))
            dist[fam]["kl_w"].append(kl(visible.posterior @ alt.mu, visible.weights))
    return {"deltas": np.asarray(deltas), "type1": type1, "thresholds": th,
            "power": {f: {t: np.asarray(v) for t, v in d.items()} for f, d in power.items()},
            "dist": {f: {q: np.asarray(v) for q, v in d.items()} for f, d in dist.items()}}


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])
