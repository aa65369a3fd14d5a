"""Symbolic-regression baselines run on the same CPU: log-OLS, STLSQ over a monomial library, and gplearn.

Each returns ``(terms, seconds)`` (gplearn also its program and generations) with
``terms = {exponent tuple (Fraction): coefficient}`` or None, so that every method is judged by the same
recovery criterion (:func:`icml26.ecsel.feynman.recovered`). :func:`library_ceiling` says which equations a
baseline can express at all (its ceiling).
"""
from __future__ import annotations

import itertools
import time
from fractions import Fraction

import numpy as np
import sympy as sp

from .feynman import Terms, design_matrix, refit_terms, signomial_terms, snap_value

EXACT_NMSE = 1e-12
"""Stopping rule shared by ECSEL's model selection and gplearn's time-to-solution runs: a snapped model whose
validation mean squared error is below this fraction of the validation mean square is an exact fit."""


def nmse(y: np.ndarray, pred: np.ndarray) -> float:
    """Mean squared error normalised by the mean square of ``y``."""
    return float(np.mean((y - pred) ** 2) / max(float(np.mean(y ** 2)), 1e-300))


def log_ols(X: np.ndarray, y: np.ndarray, max_den: int = 6, tol: float = 0.02):
    """Least squares of ``log|y|`` on ``[1, log x]``: exact for a single power law of constant sign.

    Its model class is one monomial: any sum of terms is outside it (its ceiling is the single power laws).
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


NARROW_GRID = (-2, -1, Fraction(-1, 2), Fraction(1, 2), 1, 2)
WIDE_GRID = (-3, -2, -1, Fraction(-1, 2), Fraction(1, 2), 1, 2, 3, 4)
"""Every exponent that occurs in the 45 Feynman signomials (plus -3 .. 4 integers)."""


def power_library(m: int, grid=NARROW_GRID, max_vars: int = 3) -> list[tuple[Fraction, ...]]:
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


def library_size(m: int, grid_size: int, max_vars: int) -> int:
    """Number of columns of :func:`power_library` (with the constant)."""
    from math import comb

    return 1 + sum(comb(m, k) * grid_size ** k for k in range(1, max_vars + 1))


def fitted_max_vars(m: int, grid, max_vars: int, max_columns: int) -> int:
    """The largest number of active variables <= max_vars whose library has at most ``max_columns`` columns."""
    while max_vars > 1 and library_size(m, len(grid), max_vars) > max_columns:
        max_vars -= 1
    return max_vars


def library_ceiling(true_terms: Terms, m: int, grid, max_vars: int, max_columns: int) -> bool:
    """Whether every monomial of ``true_terms`` is in the library STLSQ would use (the baseline's ceiling)."""
    mv = fitted_max_vars(m, grid, max_vars, max_columns)
    allowed = {Fraction(g) for g in grid}
    for exps in true_terms:
        active = [e for e in exps if e != 0]
        if len(active) > mv or any(e not in allowed for e in active):
            return False
    return True


def _stlsq_engine():
    """pysindy's STLSQ when installed (the field's implementation), else None."""
    try:
        from pysindy.optimizers import STLSQ
    except ImportError:
        return None
    return STLSQ


def stlsq_engine_name() -> str:
    return "pysindy.optimizers.STLSQ" if _stlsq_engine() is not None else "hand-written STLSQ (pysindy not installed)"


def stlsq(X: np.ndarray, y: np.ndarray, grid=NARROW_GRID, max_vars: int = 3, threshold: float = 0.05,
          iters: int = 10, max_columns: int = 6000):
    """Sequentially thresholded least squares (SINDy) over a fixed monomial library.

    Columns are normalised to unit RMS; coefficients whose normalised magnitude is below ``threshold`` times
    the largest are zeroed and the rest refitted, up to ``iters`` times. The library grows combinatorially:
    ``max_columns`` caps it by lowering the number of active variables (:func:`fitted_max_vars`). Uses
    ``pysindy.optimizers.STLSQ`` (relative threshold applied to the normalised columns, no ridge) when pysindy
    is installed, and the same iteration written out otherwise (:func:`stlsq_engine_name` says which).
    """
    t0 = time.perf_counter()
    m = X.shape[1]
    lib = power_library(m, grid, fitted_max_vars(m, grid, max_vars, max_columns))
    Phi = design_matrix(X, lib)
    norms = np.sqrt(np.mean(Phi ** 2, 0))
    P = Phi / norms
    coef, *_ = np.linalg.lstsq(P, y, rcond=None)
    thr = threshold * np.abs(coef).max()
    engine = _stlsq_engine()
    if engine is not None:
        import warnings

        opt = engine(threshold=thr, alpha=0.0, max_iter=int(iters), normalize_columns=False)
        with warnings.catch_warnings():  # an underdetermined library makes sklearn's ridge say "singular matrix"
            warnings.simplefilter("ignore")
            opt.fit(P, y)
        active = np.abs(np.ravel(opt.coef_)) > 0
    else:
        active = np.ones(len(lib), bool)
        for _ in range(int(iters)):
            new = active & (np.abs(coef) >= thr)
            if not new.any():
                break
            coef = np.zeros(len(lib))
            coef[new], *_ = np.linalg.lstsq(P[:, new], y, rcond=None)
            if (new == active).all():
                break
            active = new
    terms = refit_terms([lib[i] for i in np.flatnonzero(active)], X, y, prune=True)
    return terms, time.perf_counter() - t0


def program_terms(program: str, X: np.ndarray, y: np.ndarray) -> Terms | None:
    """A gplearn program expanded with sympy (positive inputs); when it is a signomial, its exponents snapped
    and coefficients refitted by least squares, numerically null terms dropped (generous to gplearn: its
    random constants need not be exact, and ``c x - c x`` with float constants need not cancel exactly)."""
    syms = [sp.Symbol(f"X{j}", positive=True) for j in range(X.shape[1])]
    expr = _gplearn_to_sympy(program, syms)
    if expr is None:
        return None
    raw = signomial_terms(expr, syms)
    if raw is None:
        return None
    exps = []
    for e in raw:
        s = tuple(snap_value(float(v)) for v in e)
        if any(v is None for v in s):
            return None
        exps.append(s)
    return refit_terms(exps, X, y, prune=True) if exps else None


def gplearn_fit(X: np.ndarray, y: np.ndarray, population: int = 500, generations: int = 10, seed: int = 0,
                parsimony: float = 1e-3, function_set=("add", "sub", "mul", "div", "sqrt"),
                X_val: np.ndarray | None = None, y_val: np.ndarray | None = None):
    """gplearn's genetic-programming SymbolicRegressor, judged like the others.

    With a validation set, the run is a **time-to-solution** run: evolution proceeds one generation at a
    time (``warm_start``, the same random stream as one long run) and stops as soon as the best program,
    snapped and refitted (:func:`program_terms`), fits the validation data exactly (``EXACT_NMSE``, the
    stopping rule of ECSEL's model selection), or after ``generations``. Without one, it runs all
    ``generations``. Returns ``(terms or None, seconds, program string, generations run)``.
    """
    from gplearn.genetic import SymbolicRegressor

    t0 = time.perf_counter()
    stepwise = X_val is not None and y_val is not None
    est = SymbolicRegressor(population_size=int(population), generations=1 if stepwise else int(generations),
                            function_set=function_set, parsimony_coefficient=parsimony, random_state=int(seed),
                            n_jobs=1, verbose=0, init_depth=(2, 5), const_range=(-2.0, 2.0), warm_start=stepwise)
    est.fit(X, y)
    gens = 1 if stepwise else int(generations)
    while stepwise:
        terms = program_terms(str(est._program), X, y)
        if terms is not None and nmse(y_val, design_matrix(X_val, list(terms)) @ np.array(list(terms.values()))) < EXACT_NMSE:
            break
        if gens >= int(generations):
            break
        gens += 1
        est.set_params(generations=gens)
        est.fit(X, y)
    seconds = time.perf_counter() - t0
    program = str(est._program)
    terms = program_terms(program, X, y)
    return terms, seconds, program, gens


def _gplearn_to_sympy(program: str, syms) -> sp.Expr | None:
    local = {f"X{j}": s for j, s in enumerate(syms)}
    local.update(add=lambda a, b: a + b, sub=lambda a, b: a - b, mul=lambda a, b: a * b,
                 div=lambda a, b: a / b, sqrt=lambda a: sp.sqrt(sp.Abs(a)), neg=lambda a: -a,
                 inv=lambda a: 1 / a)
    try:
        return sp.sympify(eval(program, {"__builtins__": {}}, local))
    except Exception:  # a degenerate program (division by zero constant): not a recovery
        return None
