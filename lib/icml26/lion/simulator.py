"""Vectorised float64 simulator of (distributed, compressed, variance-reduced) Lion on objective O1.

One call runs every horizon T of a rate experiment and every seed at once: rows are (T, seed) pairs,
each with its own eta(T), beta(T), B0(T) (a fresh run per T, brief Pitfalls), all advanced together for
max(T) steps; row (T, s) only averages its first T iterates. Nodes are an axis of the arrays, so a step
costs a handful of tensor ops whatever the number of nodes, seeds and horizons.

The per-node step (:func:`lion_loop`) is shared with the multi-process implementation in
``distributed.py``; only the exchange of node directions differs (array reduction here,
``torch.distributed`` collectives there). Metric (brief §3): A_T = (1/T) sum_{t=1}^T ||grad f(x_t)||_1 of
the TRUE gradient, averaged over iterates; the l2 analogues are recorded for Thms 6-7.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from ._checks import check_positive_int
from .compression import aggregate, needs_downlink_uniforms, needs_uplink_uniforms
from .objectives import PeriodicObjective
from .schedules import METHODS, Schedule, theorem_schedule

Exchange = Callable[[torch.Tensor, torch.Tensor | None, torch.Tensor | None], torch.Tensor]


class RandomStream:
    """All random draws of an n-node run, from one ``torch.Generator``, in a fixed order.

    With ``node=None`` it returns the draws of every node (shape (B, n, d)); with ``node=j`` it draws the
    same full arrays and keeps node j's slice (shape (B, 1, d)): a worker holding a replica of the
    simulator's generator then sees exactly the simulator's numbers. Server draws have shape (B, d).
    """

    def __init__(self, generator: torch.Generator, n_nodes: int, node: int | None = None) -> None:
        check_positive_int(n_nodes, "n_nodes")
        if node is not None and not (0 <= node < n_nodes):
            raise ValueError(f"node must lie in [0, {n_nodes}), got {node}")
        self.generator, self.n_nodes, self.node = generator, n_nodes, node

    def _mine(self, full: torch.Tensor) -> torch.Tensor:
        return full if self.node is None else full[:, self.node : self.node + 1]

    def rademacher(self, rows: int, d: int) -> torch.Tensor:
        bits = torch.randint(0, 2, (rows, self.n_nodes, d), generator=self.generator, dtype=torch.float64)
        return self._mine(2.0 * bits - 1.0)

    def rademacher_batch_mean(self, batch0: torch.Tensor, d: int) -> torch.Tensor:
        """Mean of B0 Rademacher draws per (row, node, coordinate); ``batch0`` has shape (rows,)."""
        count = batch0.to(torch.float64).view(-1, 1, 1).expand(-1, self.n_nodes, d).contiguous()
        k = torch.binomial(count, torch.full_like(count, 0.5), generator=self.generator)
        return self._mine((2.0 * k - count) / count)

    def node_uniforms(self, rows: int, d: int) -> torch.Tensor:
        return self._mine(torch.rand((rows, self.n_nodes, d), generator=self.generator, dtype=torch.float64))

    def server_uniforms(self, rows: int, d: int) -> torch.Tensor:
        return torch.rand((rows, d), generator=self.generator, dtype=torch.float64)


@dataclass
class LoopOutput:
    """Per-row sums of gradient norms over each row's horizon, optional per-step traces and iterates."""

    l1_sum: torch.Tensor
    l2_sum: torch.Tensor
    l2sq_sum: torch.Tensor
    x_final: torch.Tensor
    l1_trace: torch.Tensor | None = None  # (T_max, rows)
    iterates: torch.Tensor | None = None  # (T_max + 1, rows, d), x_1 .. x_{T_max + 1}


def _row_tensor(values: Sequence[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def lion_loop(objective: PeriodicObjective, schedules: Sequence[Schedule], horizons: Sequence[int], x0: torch.Tensor,
              stream: RandomStream, exchange: Exchange, *, vr: bool, needs_up: bool, needs_down: bool,
              metric_objective: PeriodicObjective | None = None, storm_interpolation: bool = True,
              record_trace: bool = False, record_iterates: bool = False) -> LoopOutput:
    """Run Algorithms 1-4 (paper betas) for rows with their own schedule and horizon.

    objective: the nodes this process simulates (all of them, or one worker's node); x0: (rows, d).
    exchange(v, uplink_uniforms, downlink_uniforms) -> u maps node directions (rows, n_local, d) to the
    shared direction (rows, d). Per step (0-based t, iterate x = x_{t+1}):
      plain: v = (1-b1) m + b1 g,  m <- (1-b2) m + b2 g                          (Alg. 1/3/4)
      VR:    t = 0: v = m_1 (B0 batch);  t > 0: v = g + (1-b1)(m - gh), m <- g + (1-b2)(m - gh)  (Alg. 2)
      x <- x - eta (u + lambda x).
    """
    rows, d = x0.shape
    eta = _row_tensor([s.eta for s in schedules]).view(rows, 1)
    wd = _row_tensor([s.weight_decay for s in schedules]).view(rows, 1)
    b1 = _row_tensor([s.beta1 for s in schedules]).view(rows, 1, 1)
    b2 = _row_tensor([s.beta2 for s in schedules]).view(rows, 1, 1)
    horizon = torch.tensor(list(horizons), dtype=torch.int64)
    t_max = int(horizon.max())
    metric = metric_objective
    x = x0.clone()
    # m_1 (or m_0 for plain Lion): mean of B0 stochastic gradients at x_1 (B0 = 1: a single sample)
    m = objective.node_gradients(x, stream.rademacher_batch_mean(
        torch.tensor([s.batch0 for s in schedules]), d))
    x_prev = x
    l1_sum = torch.zeros(rows, dtype=torch.float64)
    l2_sum, l2sq_sum = torch.zeros_like(l1_sum), torch.zeros_like(l1_sum)
    l1_trace = torch.empty(t_max, rows, dtype=torch.float64) if record_trace else None
    iterates = torch.empty(t_max + 1, rows, d, dtype=torch.float64) if record_iterates else None
    for t in range(t_max):
        if metric is not None:
            grad = metric.true_gradient(x)
            l1 = grad.abs().sum(-1)
            l2sq = (grad * grad).sum(-1)
            active = (t < horizon).to(torch.float64)
            l1_sum += active * l1
            l2sq_sum += active * l2sq
            l2_sum += active * l2sq.sqrt()
            if l1_trace is not None:
                l1_trace[t] = l1
        if iterates is not None:
            iterates[t] = x
        if vr and t == 0:
            v, m_next = m, m
        else:
            xi = stream.rademacher(rows, d)
            g = objective.node_gradients(x, xi)
            if vr:
                correction = m - objective.node_gradients(x_prev, xi)  # same sample xi at x_{t-1}
                v = g + (1.0 - b1) * correction if storm_interpolation else torch.lerp(m, g, b1)
                m_next = g + (1.0 - b2) * correction
            else:
                v = torch.lerp(m, g, b1)  # (1 - b1) m + b1 g
                m_next = torch.lerp(m, g, b2)
        up_u = stream.node_uniforms(rows, d) if needs_up else None
        down_u = stream.server_uniforms(rows, d) if needs_down else None
        u = exchange(v, up_u, down_u)
        x_prev = x
        x = x - eta * (u + wd * x)
        m = m_next
    if iterates is not None:
        iterates[t_max] = x
    return LoopOutput(l1_sum, l2_sum, l2sq_sum, x, l1_trace, iterates)


@dataclass
class SimResult:
    """Result of :func:`simulate`: arrays of shape (len(horizons), n_seeds) of the averaged norms.

    l1[i, s] = (1/T_i) sum_{t<=T_i} ||grad f(x_t)||_1 (Thms 1-5 metric); l2 the same with ||.||_2;
    l2sq with ||.||_2^2 (the quantity bounded in B6/B7). ``l1_trace`` (T_max, len(horizons), n_seeds)
    holds the per-step l1 norm when requested (for plateau measurements).
    """

    method: str
    horizons: list[int]
    n_nodes: int
    d: int
    schedules: list[Schedule]
    l1: np.ndarray
    l2: np.ndarray
    l2sq: np.ndarray
    l1_trace: np.ndarray | None = None
    iterates: np.ndarray | None = field(default=None, repr=False)

    def mean(self, metric: str = "l1") -> np.ndarray:
        """Seed-average per horizon of ``metric`` in {'l1', 'l2', 'l2sq'}."""
        return getattr(self, metric).mean(axis=1)

    def slope(self, metric: str = "l1", last: int | None = None) -> float:
        """Log-log slope of the seed-averaged ``metric`` vs T (over the ``last`` horizons if given)."""
        h, y = np.asarray(self.horizons, float), self.mean(metric)
        if last is not None:
            h, y = h[-last:], y[-last:]
        return fit_loglog_slope(h, y)[0]


def simulate(method: str, objective: PeriodicObjective, horizons: Sequence[int], n_seeds: int = 8, *,
             x0: float = 0.0, c_eta: float = 1.0, c_beta: float = 0.5, c_batch: float = 1.0,
             mv_eta: str = "dT", tie: str | None = "random", weight_decay: float = 0.0, seed: int = 0,
             storm_interpolation: bool = True, record_trace: bool = False,
             record_iterates: bool = False) -> SimResult:
    """Simulate ``method`` (a key of :data:`icml26.lion.schedules.METHODS`) on ``objective`` for every
    horizon in ``horizons`` and ``n_seeds`` seeds, with the theorem schedules of ``schedules.py``.

    The number of nodes is ``objective.n_nodes`` (use a 1-node objective for 'lion'/'lion_vr').
    x0 is the start value of every coordinate (0.0: regime (a), stationary; 1.0: regime (b), descent).
    Deterministic given ``seed``.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {tuple(METHODS)}")
    check_positive_int(n_seeds, "n_seeds")
    horizons = [int(T) for T in horizons]
    if not horizons:
        raise ValueError("horizons must be non-empty")
    for T in horizons:
        check_positive_int(T, "each horizon T")
    if not math.isfinite(x0):
        raise ValueError(f"x0 must be finite, got {x0!r}")
    rule, vr, _ = METHODS[method]
    n, d = objective.n_nodes, objective.d
    per_T = [theorem_schedule(method, T, d, n, c_eta=c_eta, c_beta=c_beta, c_batch=c_batch, mv_eta=mv_eta)
             for T in horizons]
    if weight_decay:
        per_T = [Schedule(s.eta, s.beta1, s.beta2, s.batch0, weight_decay) for s in per_T]
    rows_sched = [s for s in per_T for _ in range(n_seeds)]
    rows_T = [T for T in horizons for _ in range(n_seeds)]
    G = objective.G

    def exchange(v: torch.Tensor, up_u: torch.Tensor | None, down_u: torch.Tensor | None) -> torch.Tensor:
        return aggregate(v, rule, G, tie, node_dim=1, uplink_uniforms=up_u, downlink_uniforms=down_u)

    stream = RandomStream(torch.Generator().manual_seed(seed), n)
    x_start = torch.full((len(rows_T), d), float(x0), dtype=torch.float64)
    out = lion_loop(objective, rows_sched, rows_T, x_start, stream, exchange, vr=vr,
                    needs_up=needs_uplink_uniforms(rule), needs_down=needs_downlink_uniforms(rule, tie),
                    metric_objective=objective, storm_interpolation=storm_interpolation,
                    record_trace=record_trace, record_iterates=record_iterates)
    T_col = torch.tensor(rows_T, dtype=torch.float64)
    shape = (len(horizons), n_seeds)

    def per_row(s: torch.Tensor) -> np.ndarray:
        return (s / T_col).reshape(shape).numpy()

    trace = out.l1_trace.reshape(-1, *shape).numpy() if out.l1_trace is not None else None
    its = out.iterates.reshape(out.iterates.shape[0], *shape, d).numpy() if out.iterates is not None else None
    result = SimResult(method, horizons, n, d, per_T, per_row(out.l1_sum), per_row(out.l2_sum),
                       per_row(out.l2sq_sum), trace, its)
    if not (np.isfinite(result.l1).all() and np.isfinite(result.l2).all()):
        raise FloatingPointError(f"simulate({method!r}) produced non-finite gradient norms")
    return result


def fit_loglog_slope(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Least-squares fit log y = slope * log x + intercept; returns (slope, intercept). Needs x, y > 0."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError("fit_loglog_slope needs two 1-D arrays of equal length >= 2")
    if not (np.isfinite(x).all() and np.isfinite(y).all()) or (x <= 0).any() or (y <= 0).any():
        raise ValueError("fit_loglog_slope needs finite, strictly positive x and y")
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope), float(intercept)
