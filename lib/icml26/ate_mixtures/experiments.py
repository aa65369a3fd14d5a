"""The chapter's experiments (brief Section 5, figures F1-F5), each a plain function of a preset.

All distributions are exact (enumeration of {0,1}^n, sparse evolution); the only randomness is in the
data sets (the m samples of the data-based start) and in the testers' samples, all from seeded
generators. Expectations over data sets are reported as mean +- standard error over ``reps`` sets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scipy import stats as sps
from scipy.special import gammaln, ndtri_exp, rel_entr

from ..progress import progress
from .constants import functional_constant
from .constants import ratio as functional_ratio
from .entropy import (IDENTITY_KEYS, ate_constant_lower_bound, kl, local_kl, mixture_identities, mlsi_form_bound,
                      mlsi_form_constant, tstar_bound)
from .glauber import evolve, evolve_continuous, glauber_matrix, relaxation_time, spectral_gap, tv
from .models import CurieWeissMixture, Mixture, PairPenaltyMixture, ProductMixture
from .testing import (T_W_CHI2, TESTERS, TesterBudget, calibrate, label_law, local_budget, local_perturbation, mix_budget,
                      oracle_calls, rejections, split_perturbation, weight_power_exact, weight_power_ncx2, weight_shift)


def empirical_starts(model: Mixture, m: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``(2^n, reps)``: ``reps`` empirical distributions ``pi = (1/m) sum_j delta_{x_j}``, ``x_j ~ mu`` i.i.d."""
    idx = model.sample(m, rng, size=(reps,))
    N = model.mu.size
    starts = np.zeros((N, reps))
    np.add.at(starts, (idx, np.repeat(np.arange(reps)[:, None], m, axis=1)), 1.0 / m)
    return starts


@dataclass
class TVCurves:
    """``mean[j, s]``/``se[j, s]``/``q90[j, s]``: mean, standard error and 90th percentile over data sets of
    TV(pi P^t, mu) at ``times[s]`` for ``ms[j]`` samples; ``worst``: from ``delta_{1^n}`` (a mode centre for
    M1/M3; for other models just one fixed start)."""

    n: int
    times: np.ndarray
    ms: tuple[int, ...]
    mean: np.ndarray
    se: np.ndarray
    q90: np.ndarray
    worst: np.ndarray
    bound: np.ndarray
    mu_min: float
    k: int
    values: np.ndarray | None = None
    """``values[j, s, r]``: TV of data set ``r`` of size ``ms[j]`` at ``times[s]`` (for batch intervals)."""
    rho: np.ndarray | None = None
    """``rho[j, a, r]``: the component law ``rho_pi(a)`` (I2: posterior-weighted masses) of data set ``r`` of size ``ms[j]``."""


def data_based_tv(model: Mixture, ms, reps: int, times, rng: np.random.Generator, P=None, c: float = 1.0) -> TVCurves:
    """Exact ``TV(pi P^t, mu)`` for ``reps`` data sets of each size in ``ms`` (the setting of Theorem 4);
    ``bound`` is T* with component ATE constant ``c``."""
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
    q90 = np.stack([np.quantile(d[:, j * reps:(j + 1) * reps], 0.9, axis=1) for j in range(len(ms))])
    mu_min = float(mu.min())
    bound = np.stack([tstar_bound(times, model.n, m, model.k, mu_min, c) for m in ms])
    values = np.stack([d[:, j * reps:(j + 1) * reps] for j in range(len(ms))])
    rho = np.stack([model.posterior @ s_ for s_ in starts])
    return TVCurves(model.n, times, ms, mean, se, q90, d[:, -1], bound, mu_min, model.k, values, rho)


def _tv_and_kl(nu: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Columnwise ``[TV(nu, mu), KL(nu || mu)]``, shape ``(2, R)``."""
    return np.stack([tv(nu, mu), rel_entr(nu, mu[:, None]).sum(axis=0)])


def data_based_tv_continuous(model: Mixture, ms, reps: int, times, rng: np.random.Generator, c: float, P=None) -> dict:
    """The MLSI form of T*: ``E TV(pi H_t, mu)`` of the continuous-time chain ``H_t = exp(t (P - I))`` from
    ``reps`` data sets of each size in ``ms``, with the bound ``sqrt((exp(-t/(c n)) log(1/mu_min) + (k-1)/m)/2)``
    for ``c`` the components' MLSI constant (``Ent <= c n E(f, log f)``).

    Our reading of the paper's MLSI theorem in T*'s form: for binary spins the mixture's Dirichlet form is
    superadditive over the components (q = 2, the C1b check), so by the chain rule I1
    ``d/dt Ent_mu(f_t) <= -(Ent_mu f_t - K_t) / (c n)`` with ``K_t = KL(rho_{nu_t} || rho)`` (I2). The between term
    stays bounded in expectation at every ``t``: ``rho_{nu_t}(a) = pi(H_t p_a)`` for the posterior ``p_a = w_a mu_a / mu``,
    ``0 <= H_t p_a <= 1`` and ``mu(H_t p_a) = w_a`` (``H_t`` is positive and ``mu``-stationary), so over data sets
    ``E K_t <= E chi^2 = sum_a Var_mu(H_t p_a) / (m w_a) <= sum_a (w_a - w_a^2) / (m w_a) = (k-1)/m``, the step
    the discrete proof uses, with ``H_t`` for ``P^t``. Gronwall on the expectation gives the entropy form
    ``E KL(pi H_t || mu) <= exp(-t/(c n)) E KL(pi || mu) + (k-1)/m``; Pinsker and Jensen, with
    ``KL(pi || mu) <= log(1/mu_min)``, give the TV bound. Returns ``{"times", "ms", "mean", "se", "bound", "kl"}``
    with ``mean[j, s]`` (E TV) and ``kl[j, s]`` (E KL, for the entropy form) at ``ms[j]``, ``times[s]``.
    """
    ms = tuple(int(m) for m in ms)
    if reps < 2:
        raise ValueError("need at least 2 data sets to report a standard error")
    if not (np.isfinite(c) and c > 0):
        raise ValueError(f"the MLSI constant c must be positive and finite, got {c}")
    P = glauber_matrix(model) if P is None else P
    times = np.asarray(times, dtype=float)
    both = [evolve_continuous(P, empirical_starts(model, m, reps, rng), times, model.mu, distance=_tv_and_kl)
            for m in ms]  # (times, 2, reps) each
    d = [x[:, 0] for x in both]
    mu_min = float(model.mu.min())
    return dict(times=times, ms=ms, mean=np.stack([x.mean(axis=1) for x in d]),
                se=np.stack([x.std(axis=1, ddof=1) / math.sqrt(reps) for x in d]),
                kl=np.stack([x[:, 1].mean(axis=1) for x in both]),
                bound=np.stack([tstar_bound(times, model.n, m, model.k, mu_min, c) for m in ms]))


def batches(values: np.ndarray, n_batches: int) -> list[np.ndarray]:
    """Split the last axis (independent data sets) into ``n_batches`` equal contiguous batches: each batch
    is an independent replicate of the experiment, so a statistic computed per batch gives per-"seed"
    values for :func:`icml26.over_seeds` (a Student-t interval of the mean over batches)."""
    values = np.asarray(values)
    if n_batches < 2 or values.shape[-1] < 2 * n_batches:
        raise ValueError(f"need at least 2 batches of at least 2 data sets, got {values.shape[-1]} data sets "
                         f"for {n_batches} batches")
    size = values.shape[-1] // n_batches
    return [values[..., b * size:(b + 1) * size] for b in range(n_batches)]


def separated_limit(m) -> np.ndarray:
    """``E|rho_hat_1 - 1/2| = ceil(m/2) C(m, ceil(m/2)) / (m 2^m)`` for ``rho_hat_1 ~ Bin(m, 1/2)/m`` (claim L).

    The floor of the data-based chain when two equal-weight components never exchange mass.
    """
    m = np.atleast_1d(np.asarray(m, dtype=float))
    if np.any(~np.isfinite(m)) or np.any(m < 1):
        raise ValueError(f"m must be finite and >= 1, got {m}")
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
            if key in IDENTITY_KEYS:
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


def separated_limit_k(m, weights) -> np.ndarray:
    """Exact ``E TV(rho_hat, rho)`` for the empirical component frequencies ``rho_hat`` of ``m`` samples.

    ``rho_hat ~ Multinomial(m, rho)/m``, so ``E TV = (1/2) sum_a E|Bin(m, rho_a)/m - rho_a|`` (each marginal
    is binomial), summed exactly over the binomial pmf. For ``k`` equal weights it grows like ``sqrt(k/m)``:
    the floor of the data-based chain when ``k`` components never exchange mass (claim L, any ``k``).
    """
    w = np.asarray(weights, dtype=float)
    out = []
    for mm in np.atleast_1d(np.asarray(m, dtype=int)):
        if mm < 1:
            raise ValueError("m must be >= 1")
        c = np.arange(mm + 1)
        out.append(0.5 * sum(float(np.sum(sps.binom.pmf(c, mm, r) * np.abs(c / mm - r))) for r in w))
    return np.asarray(out)


def component_tv(model: Mixture) -> float:
    """``TV(mu_1, mu_2)`` of a two-component mixture."""
    if model.k != 2:
        raise ValueError("component_tv is defined for two components")
    return float(tv(model.components[0], model.components[1]))


def floor_vs_m(ns, p: float, ms, reps: int, t_factor: int, rng: np.random.Generator) -> dict:
    """F3: ``E TV(pi P^t, mu)`` at ``t = t_factor * n`` against ``m`` for several ``n`` (M1)."""
    res = {}
    for n in progress(ns, desc="TV floor vs m"):
        model = ProductMixture.symmetric(n, p)
        res[n] = data_based_tv(model, ms, reps, [t_factor * n], rng)
    return res


def mode_prediction(model: Mixture, ms, t: int, rng: np.random.Generator, draws: int = 20_000, q: float = 0.9,
                    P=None) -> dict[str, np.ndarray]:
    """Predicted floor from every slow mode: ``E TV(sum_a rho_hat_a mu_a P^t, mu)`` and its ``q``-quantile (claims C5m,
    C5k, C10b, C11b).

    The data set of ``m`` points of ``mu`` is ``m`` labels ``a ~ rho`` (so ``rho_hat ~ Multinomial(m, rho)/m``)
    and points of ``mu_a``; once the chain has relaxed *within* the modes, the data of mode ``a`` look like
    ``mu_a``, and what is left at time ``t`` is ``sum_a (rho_hat_a - rho_a) mu_a P^t``. Each ``mu_a P^t`` is
    evolved exactly, so every eigenmode of the chain contributes with its own decay (the earlier
    prediction applied the slowest one to all). The expectation over ``rho_hat`` is a Monte-Carlo
    average over ``draws`` multinomial draws (exact sums for ``k = 2``: for two equal modes the prediction is
    ``sep(m) ||(mu_1 - mu_2) P^t||_1 / 2`` with ``sep(m) = E|rho_hat_1 - 1/2|`` (:func:`separated_limit`); its slowest-mode
    approximation ``sep(m) (1 - gap)^t TV(mu_1, mu_2)`` is what earlier revisions called the metastable prediction). Also returns, at the predicted
    ``q``-quantile, the predicted mid-CDF (:func:`cdf_mid`), what a measured quantile is compared with.
    """
    P = glauber_matrix(model) if P is None else P
    _, comps = evolve(P, model.components.T, int(t))  # (1, N, k): each mu_a P^t
    evolved = comps[0]
    mean, quant, mid = [], [], []
    for m in np.atleast_1d(np.asarray(ms, dtype=int)):
        if model.k == 2:
            c = np.arange(m + 1)
            pmf = sps.binom.pmf(c, m, model.weights[0])
            w = np.stack([c / m, 1 - c / m])  # (2, m+1)
            d = np.asarray(tv(evolved @ w, model.mu))
            mean.append(float(pmf @ d))
            order = np.argsort(d)
            cdf = np.cumsum(pmf[order])
            quant.append(float(d[order][np.searchsorted(cdf, q)]))
            mid.append(cdf_mid(d, quant[-1], pmf))
        else:
            rho_hat = rng.multinomial(int(m), model.weights, size=draws).T / m  # (k, draws)
            d = np.concatenate([np.asarray(tv(evolved @ rho_hat[:, j:j + 2000], model.mu))
                                for j in range(0, draws, 2000)])
            mean.append(float(d.mean()))
            quant.append(float(np.quantile(d, q)))
            mid.append(cdf_mid(d, quant[-1]))
    return {"mean": np.asarray(mean), "q": np.asarray(quant), "cdf_mid": np.asarray(mid)}


def conditional_prediction(model: Mixture, rho: np.ndarray, t: int, P=None) -> np.ndarray:
    """``TV(sum_a rho[a, r] mu_a P^t, mu)`` for each data set ``r``: the all-mode prediction of
    :func:`mode_prediction` *given* each data set's realised component law ``rho`` (``TVCurves.rho``), so that
    the sampling fluctuation of the mode counts in one run is separated from the prediction's assumptions."""
    P = glauber_matrix(model) if P is None else P
    rho = np.asarray(rho, dtype=float)
    if rho.ndim != 2 or rho.shape[0] != model.k:
        raise ValueError(f"rho must be a (k = {model.k}, data sets) array, got shape {rho.shape}")
    _, comps = evolve(P, model.components.T, int(t))
    return np.asarray(tv(comps[0] @ rho, model.mu))


def sampled_conditional_mean(model: Mixture, m: int, t: int, data_sets: int, rng: np.random.Generator, P=None,
                             chunk: int = 5000) -> tuple[float, float]:
    """Mean and standard error, over ``data_sets`` fresh data sets of ``m`` points of ``mu``, of the conditional
    prediction (:func:`conditional_prediction`) given each data set's realised component law ``rho_pi``.

    No chain is run per data set (only ``mu_a P^t`` once), so many more data sets than :func:`data_based_tv` can
    afford tell whether a cell's excess over :func:`mode_prediction` is in the prediction or in one run's draws."""
    if data_sets < 2:
        raise ValueError("need at least 2 data sets for a standard error")
    P = glauber_matrix(model) if P is None else P
    _, comps = evolve(P, model.components.T, int(t))
    post, d = model.posterior, []
    for start in range(0, int(data_sets), chunk):
        idx = model.sample(m, rng, size=(min(chunk, int(data_sets) - start),))  # (chunk, m)
        rho = post[:, idx].mean(axis=2)                                      # (k, chunk)
        d.append(np.asarray(tv(comps[0] @ rho, model.mu)))
    d = np.concatenate(d)
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))


def cdf_mid(values, q: float, weights=None, eta: float = 0.01) -> float:
    """Mid-CDF at ``q``: ``P(V < q (1 - eta)) + P(|V - q| <= eta q) / 2`` for values ``V`` (optionally weighted).

    A floor of ``m`` data points is almost lattice-valued (``|c/m - rho|`` times a decay), so a quantile can sit on
    an atom and a bootstrap standard error of the quantile collapses to 0; the mid-CDF at the predicted quantile,
    with its binomial standard error, is the robust comparison (atoms within ``eta`` of ``q`` count half)."""
    v = np.asarray(values, dtype=float)
    w = np.full(v.size, 1.0 / v.size) if weights is None else np.asarray(weights, dtype=float) / np.sum(weights)
    return float(w[v < q * (1 - eta)].sum() + 0.5 * w[np.abs(v - q) <= eta * q].sum())


def floor_vs_k(n: int, p: float, ks, ms, reps: int, t_factor: int, rng: np.random.Generator) -> dict:
    """F3b: the floor at ``t = t_factor n`` for ``k`` equal-weight product components on distinct corners,
    with the all-mode prediction (:func:`mode_prediction`) and the bare multinomial ``E TV(rho_hat, rho)``."""
    res = {}
    for k in progress(ks, desc="TV floor vs k"):
        model = ProductMixture.corners(n, k, p)
        P = glauber_matrix(model)
        curves = data_based_tv(model, ms, reps, [t_factor * n], rng, P=P)
        gap = spectral_gap(model, P)
        pred = mode_prediction(model, ms, t_factor * n, rng, P=P)
        res[k] = dict(curves=curves, gap=gap, decay=(1 - gap) ** (t_factor * n), pred=pred["mean"], pred_q90=pred["q"],
                      pred_cdf_mid=pred["cdf_mid"],
                      exact=separated_limit_k(ms, model.weights))
    return res


def mixing_time_vs_n(ns, p: float, m: int, reps: int, horizon_factor: int, target: float, rng) -> dict[str, np.ndarray]:
    """F4: first ``t`` with ``E TV(pi P^t, mu) <= target`` (a fixed target) from an m-sample start, within a
    horizon of ``horizon_factor * n`` steps; the worst-case start ``delta_{1^n}`` is run to the horizon.

    The data sets are evolved only until their mean crosses the target (``t_mix = inf`` if it never does).
    """
    if not 0 < target < 1:
        raise ValueError("target must lie in (0, 1)")
    t_mix, worst_end, worst_hit, curves = [], [], [], []
    for n in progress(ns, desc="mixing time vs n"):
        model = ProductMixture.symmetric(n, p)
        P = glauber_matrix(model)
        PT = P.T.tocsr()
        H = horizon_factor * n
        V = empirical_starts(model, m, reps, rng)
        mean_tv = [float(tv(V, model.mu).mean())]
        t = 0
        while mean_tv[-1] > target and t < H:
            V = PT @ V
            t += 1
            mean_tv.append(float(tv(V, model.mu).mean()))
        t_mix.append(t if mean_tv[-1] <= target else math.inf)
        w = np.zeros(model.mu.size)
        w[-1] = 1.0
        _, wt = evolve(P, w, H, record=np.arange(H + 1), target=model.mu)
        below = np.flatnonzero(wt <= target)
        worst_hit.append(int(below[0]) if below.size else math.inf)
        worst_end.append(float(wt[-1]))
        curves.append(np.asarray(mean_tv))
    return {"n": np.asarray(ns), "t_mix": np.asarray(t_mix, dtype=float), "worst_end": np.asarray(worst_end),
            "worst_hit": np.asarray(worst_hit, dtype=float), "curves": curves, "horizon": horizon_factor}


def _positive(name: str, *arrays) -> list[np.ndarray]:
    out = [np.asarray(a, dtype=float) for a in arrays]
    for a in out:
        if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"{name}: values must be positive and finite (an unreached time is inf), got {a}")
    return out


def cw_constants(ns, beta: float, fields, rng, random_starts: int = 1) -> dict[str, np.ndarray]:
    """ATE and MLSI constants (numerical lower bounds on the suprema) of the first Curie-Weiss component,
    of a product measure (exact value 1 for ATE) as a check of the optimiser, and the Poincare limits."""
    out = {key: [] for key in ("ate", "mlsi", "ate_poincare", "mlsi_poincare")}
    for n in progress(ns, desc="functional constants"):
        comp = CurieWeissMixture(n, beta, fields).components[0]
        for kind in ("ate", "mlsi"):
            est = functional_constant(comp, kind, rng, random_starts=random_starts)
            out[kind].append(est.value)
            out[f"{kind}_poincare"].append(est.poincare_limit)
    res = {key: np.asarray(v) for key, v in out.items()}
    res["n"] = np.asarray(ns)
    prod = ProductMixture.symmetric(int(ns[0]), 0.85).components[0]
    res["product_ate"] = functional_constant(prod, "ate", rng, random_starts=random_starts).value
    return res


FAMILIES = {"A": weight_shift, "B": local_perturbation, "C": split_perturbation}
"""Alternatives of F5: A weight shift, B local perturbation (2 coordinates of component 1), C half of each."""


def power_curves(n: int, p: float, deltas, budget: TesterBudget, trials: int, null_trials: int, n_null: int,
                 rng, families=("A", "B", "C"), visible: Mixture | None = None) -> dict:
    """F5: rejection rates of the testers (:data:`TESTERS`) on the alternative ``families`` (:data:`FAMILIES`) of the
    visible mixture (M1 unless ``visible`` is given), with T_w's exact (binomial, k = 2) and asymptotic
    (noncentral chi-square) power predictions, the per-test decisions (``reject[fam][tester]``: a list over
    deltas of boolean arrays) and each alternative's TV, KL, local term, weight term and I4 slack."""
    visible = ProductMixture.symmetric(n, p) if visible is None else visible
    th = calibrate(visible, budget, n_null, rng)
    null = rejections(visible, visible, budget, th, null_trials, rng)
    type1 = {t: float(null[t].mean()) for t in TESTERS}
    names = TESTERS + (T_W_CHI2,)
    power = {fam: {t: [] for t in names} for fam in families}
    reject = {fam: {t: [] for t in names} for fam in families}
    pred = {fam: {"exact": [], "ncx2": []} for fam in families}
    dist = {fam: {"tv": [], "local": [], "kl": [], "kl_w": [], "i4_slack": []} for fam in families}
    for d in progress(deltas, desc="power curves"):
        for fam in families:
            alt = FAMILIES[fam](visible, d)
            r = rejections(visible, alt, budget, th, trials, rng)
            for t in names:
                power[fam][t].append(float(r[t].mean()))
                reject[fam][t].append(r[t])
            pred[fam]["exact"].append(weight_power_exact(visible, alt, budget.n_w, th["T_w"]) if visible.k == 2 else math.nan)
            pred[fam]["ncx2"].append(weight_power_ncx2(visible, alt, budget.n_w, budget.alpha))
            loc, kl_all = local_kl(alt.mu, visible.mu), kl(alt.mu, visible.mu)
            kl_w = kl(label_law(visible, alt), visible.weights)
            dist[fam]["tv"].append(tv(alt.mu, visible.mu))
            dist[fam]["local"].append(loc)
            dist[fam]["kl"].append(kl_all)
            dist[fam]["kl_w"].append(kl_w)
            dist[fam]["i4_slack"].append(loc + kl_w - kl_all)  # I4 with c = 1: KL <= L + KL(rho_pi || rho)
    return {"deltas": np.asarray(deltas), "type1": type1, "null": null, "thresholds": th, "trials": trials,
            "power": {f: {t: np.asarray(v) for t, v in d.items()} for f, d in power.items()},
            "reject": reject,
            "pred": {f: {q: np.asarray(v) for q, v in d.items()} for f, d in pred.items()},
            "dist": {f: {q: np.asarray(v) for q, v in d.items()} for f, d in dist.items()}}


def calls_sweep(ns, p: float, deltas, rs, alpha: float, power: float = 0.8, family: str = "B",
                r_fixed: int = 8) -> dict[str, np.ndarray]:
    """T_loc's oracle calls for ``power`` on ``family`` over a grid of ``(n, delta)`` (F5b): the fewest calls
    ``N r`` over the draws per query ``r`` in ``rs`` (:func:`~icml26.ate_mixtures.oracle_calls`), and the queries at
    ``r = r_fixed``. Returns ``calls[i, j]``, ``r_best[i, j]``, ``queries_best[i, j]`` (``N`` at ``r_best``),
    ``queries_fixed[i, j]`` and ``tv[i, j]`` for ``ns[i]``, ``deltas[j]``."""
    ns, deltas = list(ns), list(deltas)
    out = {key: np.empty((len(ns), len(deltas))) for key in ("calls", "r_best", "queries_best", "queries_fixed", "tv")}
    for i, n in enumerate(progress(ns, desc="T_loc oracle calls")):
        visible = ProductMixture.symmetric(int(n), p)
        for j, d in enumerate(deltas):
            alt = FAMILIES[family](visible, d)
            out["calls"][i, j], out["r_best"][i, j], out["queries_best"][i, j] = oracle_calls(visible, alt, rs, alpha, power)
            out["queries_fixed"][i, j] = local_budget(visible, alt, r_fixed, alpha, power)
            out["tv"][i, j] = tv(alt.mu, visible.mu)
    return {"n": np.asarray(ns, float), "deltas": np.asarray(deltas, float), "r_fixed": r_fixed, **out}


def combined_z(z) -> float:
    """One statistic for many z-scores that are standard normal under the prediction: ``sum z^2 ~ chi^2_df``
    (``df`` = their number), returned as the two-sided normal quantile of its p-value, so it reads on the
    same 3-SE scale as a single z (a fluctuation of one cell is diluted, a bias in every cell adds up)."""
    z = np.asarray(z, dtype=float).ravel()
    if z.size == 0 or not np.all(np.isfinite(z)):
        raise ValueError("combined_z needs finite z-scores")
    return float(sps.norm.isf(sps.chi2.sf(float(np.sum(z ** 2)), z.size) / 2))


def sidak_z(z) -> float:
    """The largest ``|z|`` of many cells, read as one two-sided z on the same 3-SE scale (Sidak adjustment).

    ``max |z|`` over ``K`` independent standard-normal cells exceeds 3 with probability ``1 - (1 - 0.0027)^K``
    (3.2 % for ``K = 12``), so a per-cell bound of 3 SE is a stricter test than one 3-SE test. The family-wise
    p-value ``1 - (1 - p)^K`` of the largest cell (``p = 2 Phi(-max |z|)``) is returned as the ``|z|`` with that
    two-sided p-value: a bound of 3 on it keeps the 0.27 % false-alarm rate of one 3-SE test whatever ``K``.
    Computed in log space, so a negative control's ``|z|`` of 40 stays finite."""
    z = np.abs(np.asarray(z, dtype=float).ravel())
    if z.size == 0 or not np.all(np.isfinite(z)):
        raise ValueError("sidak_z needs finite z-scores")
    log_p = math.log(2.0) + float(sps.norm.logsf(z.max()))           # two-sided p of the largest cell
    log_fw = float(np.log(-np.expm1(z.size * np.log1p(-math.exp(log_p))))) if log_p > -30 else math.log(z.size) + log_p
    return float(-ndtri_exp(log_fw - math.log(2.0)))


def power_z(measured, predicted, trials: int) -> np.ndarray:
    """``(measured - predicted) / SE`` with the binomial SE of ``trials`` tests at the predicted rate
    (the rate clipped to ``[1/trials, 1 - 1/trials]`` so that a prediction of 0 or 1 keeps a finite SE)."""
    if trials < 1:
        raise ValueError("trials must be >= 1")
    if np.any(~np.isfinite(np.asarray(predicted, float))) or np.any(~np.isfinite(np.asarray(measured, float))):
        raise ValueError("power_z: measured and predicted rates must be finite")
    p = np.clip(np.asarray(predicted, float), 1.0 / trials, 1 - 1.0 / trials)
    return (np.asarray(measured, float) - np.asarray(predicted, float)) / np.sqrt(p * (1 - p) / trials)


def budget_vs_n(ns, p: float, delta: float, r: int, alpha: float, power: float = 0.8) -> dict[str, np.ndarray]:
    """T_loc's query budget for ``power`` (normal approximation with exact moments) against ``n``, families A and B,
    with each alternative's TV and local term."""
    out = {"n": np.asarray(ns), "A": [], "B": [], "tv_A": [], "tv_B": [], "local_A": [], "local_B": []}
    for n in progress(ns, desc="T_loc budget vs n"):
        visible = ProductMixture.symmetric(n, p)
        for fam, alt in (("A", weight_shift(visible, delta)), ("B", local_perturbation(visible, delta))):
            out[fam].append(local_budget(visible, alt, r, alpha, power))
            out[f"tv_{fam}"].append(tv(alt.mu, visible.mu))
            out[f"local_{fam}"].append(local_kl(alt.mu, visible.mu))
    return {key: np.asarray(v) for key, v in out.items()}


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x`` (both positive and finite)."""
    x, y = _positive("loglog_slope", x, y)
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"loglog_slope needs two matching arrays of at least 2 points, got {x.shape} and {y.shape}")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def rival_slope(ms) -> float:
    """Log-log slope over the grid ``ms`` of the rival law ``sqrt(log m / m)``: an ``O~(k/eps^2)`` sample
    complexity with its log factor (``m ~ log(1/eps)/eps^2``, the KLV24 form), whose *local* slope on a finite
    grid is flatter than -1/2 (``-1/2 + 1/(2 log m)`` pointwise)."""
    ms = np.asarray(ms, dtype=float)
    if ms.size < 2 or np.any(ms <= 1):
        raise ValueError("need at least two sample sizes m > 1")
    return loglog_slope(ms, np.sqrt(np.log(ms) / ms))


def slope_edge(ms) -> float:
    """Upper edge of the sample-complexity slope test on the grid ``ms``: halfway between the paper's -1/2
    (``m^{-1/2}``) and :func:`rival_slope`, so that the test accepts the one law and rejects the other."""
    return 0.5 * (-0.5 + rival_slope(ms))


def efficiency_vs_n(make_visible, ns, delta: float, alpha: float, power: float = 0.8, rs=(2, 4, 8, 16, 32, 64, 128, 256, 512),
                    families=("A", "B", "C")) -> dict:
    """T_mix's budget for ``power`` at a fixed perturbation ``delta``, against ``n`` (C7p, C7pk): ``mix[fam]``, the fewest
    samples plus oracle calls (:func:`~icml26.ate_mixtures.mix_budget`, with its ``split[fam]``) for each family; ``worst``,
    their largest at each ``n`` (a tester must detect every alternative); ``tv[fam]``, each alternative's TV distance (about
    constant in ``n``: a fixed ``eps``). The controls (T_loc alone) come from :func:`budget_vs_n`."""
    ns = [int(n) for n in ns]
    mix, split, dist = ({f: [] for f in families} for _ in range(3))
    for n in progress(ns, desc="tester budgets vs n"):
        visible = make_visible(n)
        for fam in families:
            alt = FAMILIES[fam](visible, delta)
            b = mix_budget(visible, alt, alpha, power, rs)
            mix[fam].append(b.total)
            split[fam].append(b)
            dist[fam].append(tv(alt.mu, visible.mu))
    res = {"n": np.asarray(ns, dtype=float), "split": split, "mix": {f: np.asarray(v) for f, v in mix.items()},
           "tv": {f: np.asarray(v) for f, v in dist.items()}}
    res["worst"] = np.max(np.stack(list(res["mix"].values())), axis=0)
    return res


def growth_ratio(ns, budget, window: int = 2) -> float:
    """How the local growth exponent of ``budget`` changes across the grid: the log-log slope over the largest ``window``
    values of ``n`` divided by the slope over the smallest ``window``.

    A polynomial ``n^d`` keeps its slope (ratio 1; a sum of powers drifts towards its highest degree, but stays
    bounded); an exponential ``e^{b n}`` has local slope ``b n``, so its ratio is that of ``n`` across the grid whatever
    ``b`` is (:func:`growth_edge`). "Efficient" (polynomial in ``n``) is read as a ratio nearer 1 than the exponential's.
    """
    ns, budget = _positive("growth_ratio", ns, budget)
    if ns.shape != budget.shape or ns.size < 2 * window or window < 2:
        raise ValueError(f"growth_ratio needs two disjoint windows of at least 2 points, got {ns.size} points")
    low, high = loglog_slope(ns[:window], budget[:window]), loglog_slope(ns[-window:], budget[-window:])
    if low <= 0:
        raise ValueError(f"growth_ratio: the budget does not grow over the smallest n (slope {low:.3g})")
    return high / low


def growth_edge(ns, window: int = 2) -> float:
    """The region's edge for :func:`growth_ratio`: the geometric midpoint between a polynomial's ratio (1) and an
    exponential's on the same grid (the ratio of ``e^n``, which does not depend on the rate)."""
    ns = np.asarray(ns, dtype=float)
    return math.sqrt(growth_ratio(ns, np.exp(ns - ns.max()), window))


def tv_at_nlogn(ns, p: float, m: int, reps: int, rng: np.random.Generator) -> dict:
    """C3n: ``TV(pi P^t, mu)`` of each of ``reps`` data sets of size ``m`` on M1 (``ProductMixture.symmetric(n, p)``) at
    ``t = ceil(n ln n)`` for every ``n`` in ``ns`` (``values``: one row per n), the worst-case start ``delta_{1^n}`` at
    the same ``t`` (``worst``, the negative control) and T* (c = 1) there (``bound``)."""
    ns = [int(n) for n in ns]
    t_, values, worst, bound = [], [], [], []
    for n in ns:
        model = ProductMixture.symmetric(n, p)
        t = math.ceil(n * math.log(n))
        cur = data_based_tv(model, (int(m),), reps, (0, t), rng)
        t_.append(t)
        values.append(cur.values[0, -1])
        worst.append(float(cur.worst[-1]))
        bound.append(float(cur.bound[0, -1]))
    return {"n": np.asarray(ns), "t": np.asarray(t_), "values": np.stack(values), "worst": np.asarray(worst),
            "bound": np.asarray(bound), "m": int(m)}


def star_tv_from_data(model: Mixture, c_mlsi: float, c_ate_lower: float, m: int, reps: int, rng: np.random.Generator,
                      frac: float = 0.9, P=None) -> dict:
    """C13s: ``TV(pi H_t, mu)`` of the continuous-time chain from ``reps`` data sets of size ``m`` (``values``) at the time
    ``t = frac * t_half``, where ``t_half`` is the time at which the MLSI form of T* with ``c = c_mlsi``,
    ``sqrt((e^{-t/(c n)} log(1/mu_min) + (k-1)/m)/2)``, falls to 1/2. Both bounds of the chapter exceed 1/2 there: the MLSI form
    (``bound_mlsi``; a larger true ``c_MLSI`` than the optimiser's lower bound only raises it) and T*'s ATE form with ``c`` =
    ``c_ate_lower`` (``bound_ate``, the exact spike lower bound on ``c_ATE``, so the true ATE form is larger still), so
    neither implies a small TV. ``worst``: from ``delta_{0^n}`` (the hub of component 1) at the same ``t``."""
    if not (0 < frac < 1):
        raise ValueError(f"frac must lie in (0, 1), got {frac}")
    n, k = model.n, model.k
    mu_min = float(model.mu.min())
    head = 0.5 - (k - 1) / m
    if head <= 0 or math.log(1 / mu_min) <= head:
        raise ValueError("the MLSI form of T* is below 1/2 at t = 0: no time where it exceeds 1/2")
    t_half = c_mlsi * n * math.log(math.log(1 / mu_min) / head)
    t = frac * t_half
    P = glauber_matrix(model) if P is None else P
    times = np.array([0.0, t])
    values = evolve_continuous(P, empirical_starts(model, int(m), reps, rng), times, model.mu)[-1]
    w = np.zeros(model.mu.size)
    w[0] = 1.0
    worst = float(evolve_continuous(P, w, times, model.mu)[-1])
    return {"t": float(t), "t_half": float(t_half), "values": np.asarray(values), "worst": worst, "m": int(m),
            "bound_mlsi": float(tstar_bound(np.array([t]), n, int(m), k, mu_min, c_mlsi)[0]),
            "bound_ate": float(tstar_bound(np.array([t]), n, int(m), k, mu_min, c_ate_lower)[0])}


def mlsi_only(ns, n: int, J0: float, ms, reps: int, t_over_cn: float, points: int, rng: np.random.Generator,
              random_starts: int = 1, control_starts: int = 0, control_maxiter: int = 3000) -> dict:
    """F2d: MLSI beyond ATE on the star-like mixture ``PairPenaltyMixture.star(n, J0)`` (claim C13).

    * the component's ATE and MLSI constants at every ``ns`` (``functional_constant`` with spike starts at ``e_1``, the
      functions that attain the ATE constant), the exact ratio ``Ent/L`` of a spike of height ``e^40`` at ``e_1`` (a lower
      bound on ``c_ATE`` computed without optimisation, ``spike``), and ``log2(n + 1)``, the star's limit of it;
    * at ``n``: the continuous-time chain ``H_t`` from the components' MLSI-extremal densities with the right weights,
      ``nu_0 = (f* mu_1 + mirror) / 2``, where the MLSI constant is attained: its ``D_t = KL(nu_0 H_t || mu)``,
      ``K_t = KL(rho_{nu_t} || rho)``, the MLSI form of T* with ``c = c_MLSI`` (:func:`~icml26.ate_mixtures.mlsi_form_bound`)
      and the constant the start demands (:func:`~icml26.ate_mixtures.mlsi_form_constant`);
    * from ``reps`` data sets of each size in ``ms`` (the theorem's setting): the constant each data set's path demands in
      the MLSI form (``c_data``: ``(m, reps)``), and the mean ``KL(pi H_t || mu)`` over data sets (``kl_mean``: ``(m, times)``)
      for T*'s entropy form ``E KL <= e^{-t/(c n)} E KL_0 + (k-1)/m``;
    * ``estimates``: the :class:`~icml26.ate_mixtures.ConstantEstimate` of c_MLSI at ``n`` (every start's value, L-BFGS-B
      success flag and iteration count); with ``control_starts > 0``, a convergence control at ``ns[0]``: c_MLSI again from
      ``control_starts`` random starts with ``control_maxiter`` iterations (``control``), to compare with the default
      starts' value (``mlsi[0]``). It runs last, so it does not change the other draws of ``rng``.
    """
    consts = {key: [] for key in ("ate", "mlsi")}
    spike = []
    for n_ in progress(ns, desc="MLSI-only components"):
        comp = PairPenaltyMixture.star(int(n_), J0).components[0]
        for kind in consts:
            consts[kind].append(functional_constant(comp, kind, rng, random_starts=random_starts, spike_states=(1,)))
        spike.append(functional_ratio(comp, np.where(np.arange(comp.size) == 1, 40.0, 0.0), "ate"))
    model = PairPenaltyMixture.star(int(n), J0)
    est = consts["mlsi"][list(ns).index(n)] if n in list(ns) else functional_constant(
        model.components[0], "mlsi", rng, random_starts=random_starts, spike_states=(1,))
    times = np.linspace(0.0, t_over_cn * est.value * n, int(points))
    f = np.exp(est.g - est.g.max())
    nu1 = f * model.components[0]
    nu1 /= nu1.sum()
    nu0 = 0.5 * nu1 + 0.5 * nu1[model.mirror()]
    P = glauber_matrix(model)
    post = model.posterior

    def d_and_k(v, target):
        return np.stack([rel_entr(v, target[:, None]).sum(axis=0), rel_entr(post @ v, model.weights[:, None]).sum(axis=0)])

    DK = evolve_continuous(P, nu0[:, None], times, model.mu, distance=d_and_k)[:, :, 0]
    D, K = DK[:, 0], DK[:, 1]
    c_data, kl_mean = [], []
    for m in progress(ms, desc="MLSI-only: data-based starts"):
        dk = evolve_continuous(P, empirical_starts(model, int(m), reps, rng), times, model.mu, distance=d_and_k)
        c_data.append([mlsi_form_constant(times, n, dk[:, 0, r], dk[:, 1, r]) for r in range(dk.shape[2])])
        kl_mean.append(dk[:, 0].mean(axis=1))
    c = est.value
    control = None
    if control_starts > 0:
        comp0 = PairPenaltyMixture.star(int(ns[0]), J0).components[0]
        control = functional_constant(comp0, "mlsi", rng, random_starts=int(control_starts), maxiter=int(control_maxiter),
                                      spike_states=(1,))
    return {"estimate": est, "control": control, "ns": np.asarray(ns), "ate": np.array([e.value for e in consts["ate"]]),
            "mlsi": np.array([e.value for e in consts["mlsi"]]), "log2": np.log2(np.asarray(ns, dtype=float) + 1),
            "spike": np.asarray(spike), "J": model.J,
            "n": int(n), "c_mlsi": c, "times": times, "D": D, "K": K, "bound": mlsi_form_bound(times, n, c, float(D[0]), K),
            "c_extremal": mlsi_form_constant(times, n, D, K), "ms": tuple(int(m) for m in ms), "c_data": np.asarray(c_data),
            "kl_mean": np.stack(kl_mean), "model": model}
