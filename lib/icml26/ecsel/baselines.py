"""Symbolic-regression baselines run on the same CPU: log-OLS, a power-library STLSQ, and gplearn.

Each returns ``(terms, seconds)`` with ``terms = {exponent tuple (Fraction): coefficient}`` or None, so
that every method is judged by the same recovery criterion (:func:`icml26.ecsel.feynman.recovered`).
"""
from __future__ import annotations

import itertools
import time
from fractions import Fraction

import numpy as np
import sympy as sp

from .feynman import refit_terms, signomial_terms, snap_value


def log_ols(X: np.ndarray, y: np.ndarray, max_den: int = 6, tol: float = 0.02):
    """Least squares of ``log|y|`` on ``[1, log x]``: exact for a single power law of constant sign.

    A target that changes sign (several terms of mixed sign) or any sum of terms is outside its model
    class; it then returns the snapped single term that least squares finds (which is not recovery).
    """
    t0 = time.perf_counter()
    if np.any(y == 0):
        return None, time.perf_counter() - t0
    sign = np.sign(np.median(y))
    A = np.column_stack([np.ones(len(X)), np.log(X)])
    coef, *_ = np.linalg.lstsq(A, np.log(np.abs(y)), rcond=None)
    snapped = tuple(snap_value(b, max_den, tol) for b in coef[1:])
    if any(s is None for s in snapped):
        return None, time.perf_counter() - t0
    terms = refit_terms([snapped], X, y)
    if np.sign(next(iter(terms.values()))) != sign:
        terms = None
    return terms, time.perf_counter() - t0


DEFAULT_GRID = (-2, -1, Fraction(-1, 2), Fraction(1, 2), 1, 2)


def power_library(m: int, grid=DEFAULT_GRID, max_vars: int = 3) -> list[tuple[Fraction, ...]]:
    """All monomials with at most ``max_vars`` active variables, exponents from ``grid`` (plus the constant)."""
    grid = [Fraction(g) for g in grid]
    out = [tuple([Fraction(0)] * m)]
    for k in range(1, max_vars + 1):
        for idx in itertools.combinations(range(m), k):
            for vals in itertools.product(grid, repeat=k):
                e = [Fraction(0)] * m
                for i, v in zip(idx, vals):
                    e[i] = v
                out.append(tuple(e))
    return out


def stlsq(X: np.ndarray, y: np.ndarray, grid=DEFAULT_GRID, max_vars: int = 3, threshold: float = 0.05,
          iters: int = 10, max_columns: int = 6000):
    """Sequentially thresholded least squares (SINDy) over a fixed monomial library.

    Columns are normalised to unit RMS; coefficients whose normalised magnitude is below ``threshold``
    times the largest are zeroed and the rest refitted, ``iters`` times. The library grows combinatorially
    (``max_columns`` caps it; a larger library is reduced to ``max_vars - 1`` active variables).
    """
    t0 = time.perf_counter()
    m = X.shape[1]
    lib = power_library(m, grid, max_vars)
    while len(lib) > max_columns and max_vars > 1:
        max_vars -= 1
        lib = power_library(m, grid, max_vars)
    E = np.array([[float(v) for v in e] for e in lib])
    Phi = np.exp(np.log(X) @ E.T)
    norms = np.sqrt(np.mean(Phi ** 2, 0))
    P = Phi / norms
    coef, *_ = np.linalg.lstsq(P, y, rcond=None)
    active = np.ones(len(lib), bool)
    for _ in range(int(iters)):
        mag = np.abs(coef)
        new = active & (mag >= threshold * mag.max())
        if not new.any():
            break
        coef = np.zeros(len(lib))
        coef[new], *_ = np.linalg.lstsq(P[:, new], y, rcond=None)
        if (new == active).all():
            break
        active = new
    terms = refit_terms([lib[i] for i in np.flatnonzero(active)], X, y)
    return terms, time.perf_counter() - t0


def gplearn_fit(X: np.ndarray, y: np.ndarray, population: int = 500, generations: int = 10, seed: int = 0,
                parsimony: float = 1e-3, function_set=("add", "sub", "mul", "div", "sqrt")):
    """gplearn's genetic-programming SymbolicRegressor, its program expanded with sympy (positive inputs).

    Judged like the others: when the expanded program is a signomial, its exponents are snapped and the
    coefficients refitted by least squares (generous to gplearn: its random constants need not be exact).
    Returns ``(terms or None, seconds, program string)``.
    """
    from gplearn.genetic import SymbolicRegressor

    t0 = time.perf_counter()
    est = SymbolicRegressor(population_size=int(population), generations=int(generations), function_set=function_set,
                            parsimony_coefficient=parsimony, random_state=int(seed), n_jobs=1, verbose=0,
                            init_depth=(2, 5), const_range=(-2.0, 2.0))
    est.fit(X, y)
    seconds = time.perf_counter() - t0
    program = str(est._program)
    syms = [sp.Symbol(f"X{j}", positive=True) for j in range(X.shape[1])]
    expr = _gplearn_to_sympy(program, syms)
    terms = None
    if expr is not None:
        raw = signomial_terms(expr, syms)
        if raw is not None:
            exps = []
            for e in raw:
                s = tuple(snap_value(float(v)) for v in e)
                if any(v is None for v in s):
                    exps = None
                    break
                exps.append(s)
            if exps:
                terms = refit_terms(exps, X, y)
    return terms, seconds, program


def _gplearn_to_sympy(program: str, syms) -> sp.Expr | None:
    local = {f"X{j}": s for j, s in enumerate(syms)}
    local.update(add=lambda a, b: a + b, sub=lambda a, b: a - b, mul=lambda a, b: a * b,
                 div=lambda a, b: a / b, sqrt=lambda a: sp.sqrt(sp.Abs(a)), neg=lambda a: -a,
                 inv=lambda a: 1 / a)
    try:
        return sp.sympify(eval(program, {"__builtins__": {}}, local))
    except Exception:  # a degenerate program (division by zero constant): not a recovery
        return None
