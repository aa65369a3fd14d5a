"""Client drift on quadratic client objectives: FedAvg's biased fixed point and SCAFFOLD's correction.

Client i minimises f_i(x) = 1/2 (x - x_i*)^T A_i (x - x_i*) (A_i symmetric positive definite); the global objective
f = (1/N) sum_i f_i has its optimum at x* = (sum_i A_i)^-1 sum_i A_i x_i*.

* **FedAvg with E local gradient steps** of size eta (McMahan et al. 2017): with M_i = I - eta A_i, a client that
  starts at x ends at y_i = M_i^E x + (I - M_i^E) x_i*, and the server averages, x <- (1/N) sum_i y_i. Its fixed
  point (when the map contracts) is
      x_FA = [sum_i (I - M_i^E)]^-1 sum_i (I - M_i^E) x_i*                                             (D1)
  At E = 1, I - M_i = eta A_i and x_FA = x*. For E > 1 the weights (I - M_i^E) are not proportional to A_i, and to
  first order in eta (scalars, a_i the curvatures):
      x_FA - x* = -(E - 1) eta / 2 * sum_i a_i^2 (x_i* - x*) / sum_i a_i + O(eta^2)                       (D2)
  the objective inconsistency of FedNova (Wang et al. 2020) and SCAFFOLD (Karimireddy et al. 2020, section 3):
  the bias grows with (E - 1) eta and vanishes when every client has the same curvature or E = 1. The chapter's
  Theory section checks (D1)-(D2) with SymPy and against the iteration below.
* **SCAFFOLD** (Karimireddy et al. 2020, Algorithm 1, option II): local steps y <- y - eta (grad f_i(y) - c_i + c),
  c_i+ = c_i - c + (x - y_i) / (E eta), x <- mean_i y_i, c <- c + mean_i (c_i+ - c_i). At its fixed point c_i =
  grad f_i(x) and c = grad f(x), so each local step moves along grad f(y) - grad f_i(x) + grad f_i(y), which is
  zero at x = x*: the fixed point is the global optimum, for any E.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _check(As: Sequence[np.ndarray], xs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if len(As) != len(xs) or not As:
        raise ValueError(f"need one curvature matrix per client optimum, got {len(As)} and {len(xs)}")
    A = [np.atleast_2d(np.asarray(a, dtype=float)) for a in As]
    x = [np.atleast_1d(np.asarray(v, dtype=float)) for v in xs]
    d = x[0].shape[0]
    for i, (a, v) in enumerate(zip(A, x)):
        if a.shape != (d, d) or v.shape != (d,):
            raise ValueError(f"client {i}: A has shape {a.shape}, x* {v.shape}; expected ({d}, {d}) and ({d},)")
        if not np.allclose(a, a.T) or np.linalg.eigvalsh(a).min() <= 0:
            raise ValueError(f"client {i}: A must be symmetric positive definite")
    return A, x


def global_optimum(As, xs) -> np.ndarray:
    """x* = (sum_i A_i)^-1 sum_i A_i x_i*."""
    A, x = _check(As, xs)
    return np.linalg.solve(sum(A), sum(a @ v for a, v in zip(A, x)))


def fedavg_fixed_point(As, xs, steps: int, lr: float) -> np.ndarray:
    """(D1): x_FA = [sum_i (I - M_i^E)]^-1 sum_i (I - M_i^E) x_i*, M_i = I - lr A_i."""
    A, x = _check(As, xs)
    if steps < 1 or not lr > 0:
        raise ValueError(f"need E >= 1 and lr > 0, got E = {steps}, lr = {lr}")
    eye = np.eye(A[0].shape[0])
    W = [eye - np.linalg.matrix_power(eye - lr * a, steps) for a in A]
    return np.linalg.solve(sum(W), sum(w @ v for w, v in zip(W, x)))


def first_order_bias(a: Sequence[float], xs: Sequence[float], steps: int, lr: float) -> float:
    """(D2) for scalar clients: -(E - 1) lr / 2 * sum_i a_i^2 (x_i* - x*) / sum_i a_i."""
    a, xs = np.asarray(a, dtype=float), np.asarray(xs, dtype=float)
    xstar = float((a * xs).sum() / a.sum())
    return float(-(steps - 1) * lr / 2 * (a ** 2 * (xs - xstar)).sum() / a.sum())


def run_quadratic(As, xs, method: str, steps: int, lr: float, rounds: int, x0=None) -> np.ndarray:
    """``rounds`` rounds of FedAvg or SCAFFOLD (module docstring) with E = ``steps`` local gradient steps of size
    ``lr``, full participation, exact gradients; returns the server model after the last round."""
    A, xo = _check(As, xs)
    if method not in ("fedavg", "scaffold"):
        raise ValueError(f"method must be 'fedavg' or 'scaffold', got {method!r}")
    if steps < 1 or not lr > 0 or rounds < 1:
        raise ValueError(f"need E >= 1, lr > 0 and rounds >= 1, got {steps}, {lr}, {rounds}")
    n, d = len(A), xo[0].shape[0]
    x = np.zeros(d) if x0 is None else np.asarray(x0, dtype=float).copy()
    c, ci = np.zeros(d), [np.zeros(d) for _ in range(n)]
    for _ in range(rounds):
        ys, new_ci = [], []
        for i in range(n):
            y = x.copy()
            for _ in range(steps):
                g = A[i] @ (y - xo[i])
                if method == "scaffold":
                    g = g - ci[i] + c                       # Alg. 1 line 10
                y = y - lr * g
            ys.append(y)
            if method == "scaffold":
                new_ci.append(ci[i] - c + (x - y) / (steps * lr))   # line 12, option II
        if method == "scaffold":
            c = c + sum(nc - oc for nc, oc in zip(new_ci, ci)) / n   # line 17, |S| = N
            ci = new_ci
        x = sum(ys) / n
    return x
