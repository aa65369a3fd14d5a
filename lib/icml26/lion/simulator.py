"""Vectorised float64 simulator of (distributed, compressed, variance-reduced) Lion on objective O1.

One call runs every horizon T of a rate experiment, every seed and every *variant* (a start point, a
shifted minimum, a beta1 rule, a weight decay, a step-size constant) at once: rows are (variant, T,
seed) triples, each with its own eta, beta1, beta2, B0, lambda (a fresh run per T, brief Pitfalls). Rows
are sorted by horizon and a row leaves the arrays once its T steps are done, so a call costs
sum_T T row-steps, not len(T) * max(T). Nodes are an axis of the arrays, so a step costs a handful of
tensor ops whatever the number of nodes, seeds, horizons and variants.

The per-node step (:func:`lion_loop`) is shared with the multi-process implementation in
``distributed.py``; only the exchange of node directions differs (array reduction here,
``torch.distributed`` collectives there). The update rules are the functions of ``optim.py``
(:func:`~icml26.lion.optim.lion_direction`, ...), the same arithmetic as the torch optimizers.

Metric (brief §3): A_T = (1/T) sum_{t=1}^T ||grad f(x_t)||_1 of the TRUE gradient, averaged over iterates;
the l2 analogues are recorded for Thms 6-7. On request the loop also records the estimator errors the
proofs bound (||mean_j m_t^j - grad f(x_t)||_2 and ||mean_j v_t^j - grad f(x_t)||_1) and the
majority-vote bias sum_k |vbar_k| 1[u_k != sign(vbar_k)] (the term bounded by d G / sqrt(n) in B5).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from ._checks import check_positive_int
from .compression import aggregate, needs_downlink_uniforms, needs_uplink_uniforms
from .objectives import PeriodicObjective
from .optim import ema_momentum, lion_direction, lion_update, storm_direction, storm_momentum
from .schedules import METHODS, STORM_INTERPOLATION, Schedule, theorem_schedule

Exchange = Callable[[torch.Tensor, torch.Tensor | None, torch.Tensor | None], torch.Tensor]


class RandomStream:
    """All random draws of an n-node run, from one ``torch.Generator``, in a fixed order.

    With ``node=None`` it returns the draws of every node (shape (B, n, d)); with ``node=j`` it draws the
    same full arrays and keeps node j's slice (shape (B, 1, d)): a worker holding a replica of the
    simulator's generator then sees exactly the simulator's numbers. Server draws have shape (B, d).
    Draws are made on the generator's device.
    """

    def __init__(self, generator: torch.Generator, n_nodes: int, node: int | None = None) -> None:
        check_positive_int(n_nodes, "n_nodes")
        if node is not None and not (0 <= node < n_nodes):
            raise ValueError(f"node must lie in [0, {n_nodes}), got {node}")
        self.generator, self.n_nodes, self.node = generator, n_nodes, node
        self.device = generator.device

    def _mine(self, full: torch.Tensor) -> torch.Tensor:
        return full if self.node is None else full[:, self.node : self.node + 1]

    def rademacher(self, rows: int, d: int) -> torch.Tensor:
        bits = torch.randint(0, 2, (rows, self.n_nodes, d), generator=self.generator, dtype=torch.float64,
                             device=self.device)
        return self._mine(2.0 * bits - 1.0)

    def rademacher_batch_mean(self, batch0: torch.Tensor, d: int) -> torch.Tensor:
        """Mean of B0 Rademacher draws per (row, node, coordinate); ``batch0`` has shape (rows,)."""
        count = batch0.to(device=self.device, dtype=torch.float64).view(-1, 1, 1).expand(-1, self.n_nodes, d).contiguous()
        k = torch.binomial(count, torch.full_like(count, 0.5), generator=self.generator)
        return self._mine((2.0 * k - count) / count)

    def sample(self, rows: int, d: int, curvature_noise: float = 0.0) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One sample per (row, node): the additive noise xi and, when the objective has curvature noise s,
        the curvature factors 1 + s zeta (drawn after xi; nothing more is drawn when s = 0)."""
        xi = self.rademacher(rows, d)
        if curvature_noise == 0.0:
            return xi, None
        return xi, 1.0 + curvature_noise * self.rademacher(rows, d)

    def batch_sample(self, batch0: torch.Tensor, d: int, curvature_noise: float = 0.0
                     ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The B0 initial batch: the mean of B0 samples' xi and of their curvature factors."""
        xi = self.rademacher_batch_mean(batch0, d)
        if curvature_noise == 0.0:
            return xi, None
        return xi, 1.0 + curvature_noise * self.rademacher_batch_mean(batch0, d)

    def node_uniforms(self, rows: int, d: int) -> torch.Tensor:
        return self._mine(torch.rand((rows, self.n_nodes, d), generator=self.generator, dtype=torch.float64,
                                     device=self.device))

    def server_uniforms(self, rows: int, d: int) -> torch.Tensor:
        return torch.rand((rows, d), generator=self.generator, dtype=torch.float64, device=self.device)


@dataclass
class LoopOutput:
    """Per-row sums over each row's horizon (rows in the caller's order), optional traces and iterates.

    ``l1_trace`` (T_max, rows) and ``iterates`` (T_max + 1, rows, d) hold NaN past a row's horizon
    (iterates[T] is the row's final point x_{T+1})."""

    l1_sum: torch.Tensor
    l2_sum: torch.Tensor
    l2sq_sum: torch.Tensor
    x_final: torch.Tensor
    m_err_sum: torch.Tensor | None = None
    v_err_sum: torch.Tensor | None = None
    grad_change_sum: torch.Tensor | None = None
    vote_bias_sum: torch.Tensor | None = None
    l1_trace: torch.Tensor | None = None
    iterates: torch.Tensor | None = None


def _row_tensor(values: Sequence[float], device: torch.device | str | None = None) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64, device=device)


def lion_loop(objective: PeriodicObjective, schedules: Sequence[Schedule], horizons: Sequence[int], x0: torch.Tensor,
              stream: RandomStream, exchange: Exchange, *, vr: bool, needs_up: bool, needs_down: bool,
              metric_objective: PeriodicObjective | None = None, center: torch.Tensor | None = None,
              storm_interpolation: bool = False, same_sample: bool = True, record_trace: bool = False,
              record_iterates: bool = False, record_error: bool = False,
              record_vote_bias: bool = False) -> LoopOutput:
    """Run Algorithms 1-4 (paper betas) for rows with their own schedule and horizon.

    objective: the nodes this process simulates (all of them, or one worker's node); x0: (rows, d);
    center: (rows, d) or None, gradients are taken at x - center (the minimum moves to ``center``).
    exchange(v, uplink_uniforms, downlink_uniforms) -> u maps node directions (rows, n_local, d) to the
    shared direction (rows, d). Per step (0-based t, iterate x = x_{t+1}):
      plain: v = (1-b1) m + b1 g,  m <- (1-b2) m + b2 g                          (Alg. 1/3/4)
      VR:    t = 0: v = m_1 (B0 batch);  t > 0: m <- g + (1-b2)(m - gh)          (Alg. 2, STORM) and
             v = (1-b1) m + b1 g (centralised, the LaTeX form), or with ``storm_interpolation``
             v = g + (1-b1)(m - gh) = (1-b1) m + b1 g + (1-b1)(g - gh) (the distributed VR form, Thms 4, 7)
      x <- x - eta (u + lambda x).
    A sample is (xi, zeta): additive noise and, on an objective with curvature noise, the curvature
    factors; gh is the SAME sample at x_{t-1}. ``same_sample=False`` takes gh from a FRESH sample (the
    mistake the brief's Pitfalls warn about; a negative control). Rows are processed in order of decreasing horizon and dropped once done;
    the random stream is drawn for the rows still running, so a one-row call (a worker) sees the same
    numbers as a one-row simulation.
    """
    rows, d = x0.shape
    if len(schedules) != rows or len(horizons) != rows:
        raise ValueError(f"need one schedule and one horizon per row ({rows}), got {len(schedules)} and {len(horizons)}")
    dev = x0.device
    s_noise = objective.curvature_noise
    horizon_all = torch.tensor(list(horizons), dtype=torch.int64)
    order = torch.argsort(-horizon_all, stable=True)          # longest runs first: active rows are a prefix
    H = horizon_all[order]
    t_max = int(H[0])
    order_list = order.tolist()
    eta = _row_tensor([schedules[i].eta for i in order_list], dev).view(rows, 1)
    wd = _row_tensor([schedules[i].weight_decay for i in order_list], dev).view(rows, 1)
    b1 = _row_tensor([schedules[i].beta1 for i in order_list], dev).view(rows, 1, 1)
    b2 = _row_tensor([schedules[i].beta2 for i in order_list], dev).view(rows, 1, 1)
    batch0 = torch.tensor([schedules[i].batch0 for i in order_list])
    order_dev = order.to(dev)
    x = x0[order_dev].clone()
    shift = None if center is None else center[order_dev].clone()
    metric = metric_objective

    def at(z: torch.Tensor) -> torch.Tensor:
        return z if shift is None else z - shift

    # m_1 (or m_0 for plain Lion): mean of B0 stochastic gradients at x_1 (B0 = 1: a single sample)
    m = objective.node_gradients(at(x), *stream.batch_sample(batch0, d, s_noise))
    x_prev = x
    zeros = lambda: torch.zeros(rows, dtype=torch.float64, device=dev)  # noqa: E731
    l1_sum, l2_sum, l2sq_sum = zeros(), zeros(), zeros()
    m_err = zeros() if record_error else None
    v_err = zeros() if record_error else None
    grad_change = zeros() if record_error else None
    grad_prev = None
    vote_bias = zeros() if record_vote_bias else None
    x_final = torch.full((rows, d), float("nan"), dtype=torch.float64, device=dev)
    l1_trace = torch.full((t_max, rows), float("nan"), dtype=torch.float64, device=dev) if record_trace else None
    iterates = torch.full((t_max + 1, rows, d), float("nan"), dtype=torch.float64, device=dev) if record_iterates else None
    k = rows
    for t in range(t_max + 1):
        done = int((H[:k] <= t).sum())
        if done:                                   # rows whose horizon is t: x is their x_{T+1}
            k_new = k - done
            x_final[k_new:k] = x[k_new:k]
            if iterates is not None:
                iterates[t, k_new:k] = x[k_new:k]
            k = k_new
            if k == 0:
                break
            x, m, x_prev = x[:k], m[:k], x_prev[:k]
            eta, wd, b1, b2 = eta[:k], wd[:k], b1[:k], b2[:k]
            if grad_prev is not None:
                grad_prev = grad_prev[:k]
            if shift is not None:
                shift = shift[:k]
        grad = None
        if metric is not None:
            grad = metric.true_gradient(at(x))
            l1 = grad.abs().sum(-1)
            l2sq = (grad * grad).sum(-1)
            l1_sum[:k] += l1
            l2sq_sum[:k] += l2sq
            l2_sum[:k] += l2sq.sqrt()
            if l1_trace is not None:
                l1_trace[t, :k] = l1
        if iterates is not None:
            iterates[t, :k] = x
        if vr and t == 0:
            v, m_next = m, m
        else:
            sample = stream.sample(k, d, s_noise)
            g = objective.node_gradients(at(x), *sample)
            if vr:
                sample_hat = sample if same_sample else stream.sample(k, d, s_noise)
                g_hat = objective.node_gradients(at(x_prev), *sample_hat)   # the same sample at x_{t-1}
                v = storm_direction(g, m, g_hat, b1) if storm_interpolation else lion_direction(m, g, b1)
                m_next = storm_momentum(g, m, g_hat, b2)
            else:
                v = lion_direction(m, g, b1)
                m_next = ema_momentum(m, g, b2)
        if grad is not None and m_err is not None:
            m_err[:k] += (m_next.mean(1) - grad).square().sum(-1).sqrt()
            v_err[:k] += (v.mean(1) - grad).abs().sum(-1)
            if grad_prev is not None:   # the drift input of the recursion, ||grad f(x_{t-1}) - grad f(x_t)||_2
                grad_change[:k] += (grad_prev - grad).square().sum(-1).sqrt()
            grad_prev = grad
        up_u = stream.node_uniforms(k, d) if needs_up else None
        down_u = stream.server_uniforms(k, d) if needs_down else None
        u = exchange(v, up_u, down_u)
        if vote_bias is not None:
            vbar = v.mean(1)
            vote_bias[:k] += (vbar.abs() * (u != torch.sign(vbar))).sum(-1)
        x_prev = x
        x = lion_update(x, u, eta, wd)
        m = m_next
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(rows)

    def back(s: torch.Tensor | None) -> torch.Tensor | None:
        return None if s is None else s.cpu()[inverse]

    return LoopOutput(back(l1_sum), back(l2_sum), back(l2sq_sum), back(x_final), back(m_err), back(v_err), back(grad_change), back(vote_bias),
                      None if l1_trace is None else l1_trace.cpu()[:, inverse],
                      None if iterates is None else iterates.cpu()[:, inverse])


@dataclass(frozen=True)
class Variant:
    """One configuration of a run, batched with others in one simulation (rows of the same arrays).

    x0: start value of every coordinate; center: the minimum of the (shifted) objective sits at
    center * 1 (gradients at x - center); c_eta, c_beta, c_batch, mv_eta, beta1_power, eta: see
    :func:`icml26.lion.schedules.theorem_schedule`; weight_decay: "theorem" (the theorem's largest
    lambda) or a constant; strict=False allows a schedule outside the theorem's hypotheses (controls);
    schedule_method: run the method under ANOTHER method's theorem schedule (an ablation: Lion on Lion-VR's
    Thm 2 schedule is Lion-VR without its STORM momentum).
    """

    x0: float = 0.0
    center: float = 0.0
    c_eta: float = 1.0
    c_beta: float = 0.5
    c_batch: float = 1.0
    mv_eta: str = "dT"
    beta1_power: float = 0.5
    weight_decay: float | str = 0.0
    eta: float | None = None
    strict: bool = True
    schedule_method: str | None = None

    def __post_init__(self) -> None:
        for name in ("x0", "center"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)!r}")
        if self.schedule_method is not None and self.schedule_method not in METHODS:
            raise ValueError(f"unknown schedule_method {self.schedule_method!r}; valid: {tuple(METHODS)}")

    def schedule(self, method: str, T: int, d: int, n: int, G: float) -> Schedule:
        return theorem_schedule(self.schedule_method or method, T, d, n, c_eta=self.c_eta, c_beta=self.c_beta, c_batch=self.c_batch,
                                mv_eta=self.mv_eta, beta1_power=self.beta1_power, weight_decay=self.weight_decay,
                                G=G, eta=self.eta, strict=self.strict)


@dataclass
class SimResult:
    """Result of one variant of :func:`simulate`: arrays of shape (len(horizons), n_seeds).

    l1[i, s] = (1/T_i) sum_{t<=T_i} ||grad f(x_t)||_1 (Thms 1-5 metric); l2 the same with ||.||_2;
    l2sq with ||.||_2^2 (the quantity bounded in B6/B7); m_err / v_err / grad_change / vote_bias the
    per-step averages of the recorded errors and of ||grad f(x_{t-1}) - grad f(x_t)||_2 (when requested). ``l1_trace`` (T_max, len(horizons), n_seeds) holds the
    per-step l1 norm when requested (NaN past a row's horizon).
    """

    method: str
    horizons: list[int]
    n_nodes: int
    d: int
    schedules: list[Schedule]
    l1: np.ndarray
    l2: np.ndarray
    l2sq: np.ndarray
    variant: Variant = field(default_factory=Variant)
    m_err: np.ndarray | None = None
    v_err: np.ndarray | None = None
    grad_change: np.ndarray | None = None
    vote_bias: np.ndarray | None = None
    l1_trace: np.ndarray | None = None
    iterates: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_seeds(self) -> int:
        return self.l1.shape[1]

    def mean(self, metric: str = "l1") -> np.ndarray:
        """Seed-average per horizon of ``metric`` in {'l1', 'l2', 'l2sq', 'm_err', 'v_err', 'grad_change', 'vote_bias'}."""
        values = getattr(self, metric)
        if values is None:
            raise ValueError(f"{metric!r} was not recorded in this simulation")
        return values.mean(axis=1)

    def _fit_range(self, last: int | None) -> slice:
        if last is not None and last < 2:
            raise ValueError(f"a slope needs at least 2 horizons, got last={last}")
        return slice(None) if last is None else slice(-last, None)

    def slope(self, metric: str = "l1", last: int | None = None) -> float:
        """Log-log slope of the seed-averaged ``metric`` vs T (over the ``last`` horizons if given)."""
        sl = self._fit_range(last)
        return fit_loglog_slope(np.asarray(self.horizons, float)[sl], self.mean(metric)[sl])[0]

    def seed_slopes(self, metric: str = "l1", last: int | None = None) -> np.ndarray:
        """One log-log slope in T per seed (each seed's own A_T curve); their mean is the slope of the
        seed-wise geometric mean, and their spread gives the slope's standard error and bootstrap interval."""
        sl = self._fit_range(last)
        h = np.asarray(self.horizons, float)[sl]
        values = getattr(self, metric)[sl]
        return np.array([fit_loglog_slope(h, values[:, s])[0] for s in range(values.shape[1])])


def simulate_variants(method: str, objective: PeriodicObjective, horizons: Sequence[int], n_seeds: int,
                      variants: Mapping[str, Variant], *, tie: str | None = "random", seed: int = 0,
                      storm_interpolation: bool | None = None, same_sample: bool = True, record_trace: bool = False,
                      record_iterates: bool = False, record_error: bool = False, record_vote_bias: bool = False,
                      device: torch.device | str | None = None) -> dict[str, SimResult]:
    """Simulate ``method`` (a key of :data:`icml26.lion.schedules.METHODS`) on ``objective`` for every
    variant, every horizon in ``horizons`` and ``n_seeds`` seeds, in ONE vectorised loop.

    The number of nodes is ``objective.n_nodes`` (a 1-node objective for 'lion'/'lion_vr'). Returns
    {variant name: SimResult}. Deterministic given ``seed`` and the device (``None``: CPU; a CUDA
    device draws other random numbers). ``storm_interpolation`` None: the method's own form
    (:data:`STORM_INTERPOLATION`: plain interpolation for centralised Lion-VR, the corrected one for the
    distributed VR variants).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {tuple(METHODS)}")
    check_positive_int(n_seeds, "n_seeds")
    horizons = [int(T) for T in horizons]
    if not horizons:
        raise ValueError("horizons must be non-empty")
    for T in horizons:
        check_positive_int(T, "each horizon T")
    if not variants:
        raise ValueError("variants must be a non-empty mapping name -> Variant")
    rule, vr, _ = METHODS[method]
    if storm_interpolation is None:
        storm_interpolation = STORM_INTERPOLATION.get(method, False)
    dev = torch.device(device) if device is not None else torch.device("cpu")
    objective = objective.to(dev)
    n, d, G = objective.n_nodes, objective.d, objective.G
    per_variant = {name: [v.schedule(method, T, d, n, G) for T in horizons] for name, v in variants.items()}
    rows_sched, rows_T, rows_x0, rows_c = [], [], [], []
    for name, v in variants.items():
        for s, T in zip(per_variant[name], horizons):
            rows_sched += [s] * n_seeds
            rows_T += [T] * n_seeds
            rows_x0 += [v.x0] * n_seeds
            rows_c += [v.center] * n_seeds

    def exchange(v: torch.Tensor, up_u: torch.Tensor | None, down_u: torch.Tensor | None) -> torch.Tensor:
        return aggregate(v, rule, G, tie, node_dim=1, uplink_uniforms=up_u, downlink_uniforms=down_u)

    stream = RandomStream(torch.Generator(device=dev).manual_seed(seed), n)
    x_start = _row_tensor(rows_x0, dev).view(-1, 1).expand(-1, d).contiguous()
    center = _row_tensor(rows_c, dev).view(-1, 1).expand(-1, d).contiguous() if any(rows_c) else None
    out = lion_loop(objective, rows_sched, rows_T, x_start, stream, exchange, vr=vr,
                    needs_up=needs_uplink_uniforms(rule), needs_down=needs_downlink_uniforms(rule, tie),
                    metric_objective=objective, center=center, storm_interpolation=storm_interpolation,
                    same_sample=same_sample, record_trace=record_trace, record_iterates=record_iterates,
                    record_error=record_error, record_vote_bias=record_vote_bias)
    T_col = torch.tensor(rows_T, dtype=torch.float64)
    block = len(horizons) * n_seeds
    shape = (len(horizons), n_seeds)
    results = {}
    for i, (name, v) in enumerate(variants.items()):
        rs = slice(i * block, (i + 1) * block)

        def per_row(s: torch.Tensor | None) -> np.ndarray | None:
            return None if s is None else (s[rs] / T_col[rs]).reshape(shape).numpy()

        trace = out.l1_trace[:, rs].reshape(-1, *shape).numpy() if out.l1_trace is not None else None
        its = out.iterates[:, rs].reshape(out.iterates.shape[0], *shape, d).numpy() if out.iterates is not None else None
        result = SimResult(method, horizons, n, d, per_variant[name], per_row(out.l1_sum), per_row(out.l2_sum),
                           per_row(out.l2sq_sum), v, per_row(out.m_err_sum), per_row(out.v_err_sum), per_row(out.grad_change_sum),
                           per_row(out.vote_bias_sum), trace, its)
        if not (np.isfinite(result.l1).all() and np.isfinite(result.l2).all()):
            raise FloatingPointError(f"simulate({method!r}) produced non-finite gradient norms (variant {name!r})")
        results[name] = result
    return results


def simulate(method: str, objective: PeriodicObjective, horizons: Sequence[int], n_seeds: int = 8, *,
             x0: float = 0.0, center: float = 0.0, c_eta: float = 1.0, c_beta: float = 0.5, c_batch: float = 1.0,
             mv_eta: str = "dT", beta1_power: float = 0.5, weight_decay: float | str = 0.0,
             eta: float | None = None, strict: bool = True, schedule_method: str | None = None,
             tie: str | None = "random", seed: int = 0, storm_interpolation: bool | None = None,
             same_sample: bool = True, record_trace: bool = False, record_iterates: bool = False,
             record_error: bool = False, record_vote_bias: bool = False,
             device: torch.device | str | None = None) -> SimResult:
    """One variant of :func:`simulate_variants` (its keyword arguments are the :class:`Variant` fields).

    x0 is the start value of every coordinate; ``center`` moves the minimum to center * 1 (the descent
    regime starts at x0 = 0, ||x_1||_inf = 0 <= eta, with the minimum at distance 1).
    """
    variant = Variant(x0=x0, center=center, c_eta=c_eta, c_beta=c_beta, c_batch=c_batch, mv_eta=mv_eta,
                      beta1_power=beta1_power, weight_decay=weight_decay, eta=eta, strict=strict,
                      schedule_method=schedule_method)
    return simulate_variants(method, objective, horizons, n_seeds, {"run": variant}, tie=tie, seed=seed,
                             storm_interpolation=storm_interpolation, same_sample=same_sample,
                             record_trace=record_trace, record_iterates=record_iterates, record_error=record_error,
                             record_vote_bias=record_vote_bias, device=device)["run"]


def fit_loglog_slope(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Least-squares fit log y = slope * log x + intercept; returns (slope, intercept). Needs x, y > 0."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError("fit_loglog_slope needs two 1-D arrays of equal length >= 2")
    if not (np.isfinite(x).all() and np.isfinite(y).all()) or (x <= 0).any() or (y <= 0).any():
        raise ValueError("fit_loglog_slope needs finite, strictly positive x and y")
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope), float(intercept)
