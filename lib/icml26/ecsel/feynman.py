"""The AI-Feynman benchmark: formulas, input ranges, the signomial test, a sampler and symbolic recovery.

The paper's symbolic-regression headline (95.86 % recovery, Sec. 5.1) is measured on "the AI-Feynman
signomial subset" plus other suites; the brief found, and :func:`census` re-derives, that 45 of the 100
AI-Feynman formulas are signomials (38 single power laws, 7 with K >= 2 terms).

Recovery criterion (stated, since the paper's exact one was not retrievable): a fit *recovers* an
equation when, after snapping its exponents to small rationals and refitting the coefficients by least
squares, (i) its set of monomials (exponent vectors) equals the true one, (ii) every coefficient is within
``coef_rtol`` of the true one, and (iii) the test R^2 is at least ``r2_min``. Low error alone is not
recovery (an "accuracy solution", R^2 >= 0.999, is reported separately).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np
import sympy as sp

from ._feynman_table import FEYNMAN_TABLE

Terms = dict  # {exponent tuple (Fraction, ...): coefficient}


@dataclass(frozen=True)
class FeynmanEquation:
    """One benchmark equation: its id, formula string and the sampling range of every variable."""

    id: str
    formula: str
    variables: tuple[tuple[str, float, float], ...]

    @property
    def names(self) -> list[str]:
        return [v[0] for v in self.variables]

    @property
    def n_vars(self) -> int:
        return len(self.variables)

    @cached_property
    def symbols(self) -> list[sp.Symbol]:
        return [sp.Symbol(n, positive=True) for n in self.names]

    @cached_property
    def expr(self) -> sp.Expr:
        """The formula as a sympy expression over positive symbols."""
        local = {n: s for n, s in zip(self.names, self.symbols)}
        local.update(ln=sp.log, arcsin=sp.asin, exp=sp.exp, sqrt=sp.sqrt)
        return sp.sympify(self.formula, locals=local)

    @cached_property
    def terms(self) -> Terms | None:
        """The signomial terms ``{exponents: coefficient}``, or None when the formula is not a signomial."""
        return signomial_terms(self.expr, self.symbols)

    @property
    def is_signomial(self) -> bool:
        return self.terms is not None

    @property
    def n_terms(self) -> int:
        return len(self.terms) if self.terms is not None else 0

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Inputs drawn uniformly on the benchmark ranges and the noise-free target (AI-Feynman protocol)."""
        lo = np.array([v[1] for v in self.variables], float)
        hi = np.array([v[2] for v in self.variables], float)
        X = rng.uniform(lo, hi, size=(int(n), self.n_vars))
        y = np.asarray(self.function(*X.T), dtype=float) * np.ones(len(X))
        return X, y

    @cached_property
    def function(self):
        """The formula as a numpy function of the variables (lambdified once)."""
        return sp.lambdify(self.symbols, self.expr, modules="numpy")


def _parse_table() -> dict[str, FeynmanEquation]:
    out = {}
    for line in FEYNMAN_TABLE.strip().splitlines():
        eid, formula, variables = line.split(";")
        vs = tuple((name, float(lo), float(hi)) for name, lo, hi in (v.split() for v in variables.split(",")))
        out[eid] = FeynmanEquation(eid, formula, vs)
    return out


FEYNMAN: dict[str, FeynmanEquation] = _parse_table()
"""The 100 AI-Feynman equations by id (I.6.2a ... III.21.20)."""


def signomial_terms(expr: sp.Expr, symbols) -> Terms | None:
    """Decompose ``expr`` as ``sum_k c_k prod_j x_j**e_kj`` (numeric c, e) or return None.

    The expression is expanded with every symbol positive (so ``sqrt(a*b) = sqrt(a)*sqrt(b)``), and
    accepted iff every additive term is a numeric constant (``pi`` included) times a product of powers
    of the symbols with numeric exponents. This is the signomial test of the census (brief Sec. 3.2).
    """
    symbols = list(symbols)
    index = {s: i for i, s in enumerate(symbols)}
    e = sp.expand(sp.powdenest(sp.expand_power_base(sp.sympify(expr), force=True), force=True))
    terms: Terms = {}
    for term in sp.Add.make_args(e):
        coef, rest = term.as_independent(*symbols, as_Add=False)
        if not (coef.is_number and coef.is_real):
            return None
        exps = [Fraction(0)] * len(symbols)
        for base, power in rest.as_powers_dict().items():
            if base == 1:
                continue
            if base not in index or not power.is_number or not power.is_real:
                return None
            p = sp.nsimplify(power)
            if not p.is_Rational:
                return None
            exps[index[base]] += Fraction(int(p.p), int(p.q))
        key = tuple(exps)
        terms[key] = terms.get(key, 0.0) + float(coef)
    terms = {k: v for k, v in terms.items() if v != 0.0}
    return terms or None


def census(equations: dict[str, FeynmanEquation] | None = None) -> dict:
    """Count signomials among the equations: total, single power laws (K = 1), multi-term (K >= 2)."""
    equations = FEYNMAN if equations is None else equations
    sig = [e for e in equations.values() if e.is_signomial]
    mono = [e.id for e in sig if e.n_terms == 1]
    multi = [e.id for e in sig if e.n_terms >= 2]
    return dict(n_equations=len(equations), n_signomial=len(sig), n_monomial=len(mono), n_multiterm=len(multi),
                monomial_ids=mono, multiterm_ids=multi, negative_coefficient_ids=[
                    e.id for e in sig if e.n_terms == 1 and next(iter(e.terms.values())) < 0])


def signomial_ids() -> list[str]:
    """Ids of the signomial AI-Feynman equations, in table order."""
    return [e.id for e in FEYNMAN.values() if e.is_signomial]


def snap_value(b: float, max_den: int = 6, tol: float = 0.02) -> Fraction | None:
    """The small rational ``p/q`` (q <= max_den, smallest q first) within ``tol`` of ``b``, else None."""
    for q in range(1, max_den + 1):
        p = round(b * q)
        if abs(b - p / q) < tol:
            return Fraction(p, q)
    return None


def design_matrix(X: np.ndarray, exps) -> np.ndarray:
    """``Phi[i, k] = prod_j X[i, j] ** exps[k][j]`` (computed in log space; ``exps`` an array (K, m) or a list
    of exponent tuples, Fractions allowed). The one implementation of a signomial's term matrix."""
    E = np.array([[float(v) for v in e] for e in exps], float).reshape(len(exps), X.shape[1])
    return np.exp(np.log(X) @ E.T)


def refit_terms(exps, X: np.ndarray, y: np.ndarray, prune: bool = False) -> Terms:
    """Least-squares coefficients for a fixed set of monomials (z is linear in alpha given beta).

    ``prune``: drop the monomials whose fitted contribution is numerically null (``|c_k| rms(Phi_k) <= 1e-9
    rms(y)``) and refit, the rule ECSEL's own snap-and-refit applies (so a baseline whose expression carries
    cancelling terms, ``a x - a x``, is judged like ECSEL).
    """
    exps = list(dict.fromkeys(exps))
    if not exps:
        return {}
    Phi = design_matrix(X, exps)
    coef, *_ = np.linalg.lstsq(Phi, y, rcond=None)
    if prune:
        keep = np.abs(coef) * np.sqrt(np.mean(Phi ** 2, 0)) > 1e-9 * (np.sqrt(np.mean(y ** 2)) + 1e-300)
        if keep.any() and not keep.all():
            exps = [e for e, k in zip(exps, keep) if k]
            coef, *_ = np.linalg.lstsq(Phi[:, keep], y, rcond=None)
    return dict(zip(exps, coef.tolist()))


def terms_predict(terms: Terms, X: np.ndarray) -> np.ndarray:
    if not terms:
        return np.zeros(len(X))
    return design_matrix(X, list(terms)) @ np.array(list(terms.values()))


def r2(y: np.ndarray, pred: np.ndarray) -> float:
    ss = float(np.sum((y - np.mean(y)) ** 2))
    return 1.0 - float(np.sum((y - pred) ** 2)) / max(ss, 1e-300)


def recovered(true_terms: Terms, fitted: Terms | None, X_test: np.ndarray, y_test: np.ndarray,
              coef_rtol: float = 1e-3, r2_min: float = 0.9999) -> bool:
    """Symbolic recovery (module docstring): same monomials, coefficients within ``coef_rtol``, R^2 >= ``r2_min``."""
    if fitted is None:
        return False
    fitted = {k: v for k, v in fitted.items() if v != 0.0}
    if set(fitted) != set(true_terms):
        return False
    if any(abs(fitted[k] - c) > coef_rtol * abs(c) for k, c in true_terms.items()):
        return False
    return r2(y_test, terms_predict(fitted, X_test)) >= r2_min


def terms_to_sympy(terms: Terms | None, symbols) -> sp.Expr | None:
    """The sympy expression ``sum_k c_k prod_j x_j**e_kj`` of snapped terms (coefficients as floats)."""
    if terms is None:
        return None
    out = sp.Integer(0)
    for exps, c in terms.items():
        out += sp.Float(c, 6) * sp.Mul(*[s ** sp.Rational(e.numerator, e.denominator) for s, e in zip(symbols, exps)])
    return out
