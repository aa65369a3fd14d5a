"""scikit-learn estimators for ECSEL: :class:`SignomialRegressor` (symbolic regression) and
:class:`SignomialClassifier` (one signomial per class + softmax, paper Eq. 1-2).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .feynman import snap_value
from .model import fit_signomial, signomial_scores

LOW, HIGH = 1.0, 10.0  # the paper's feature map x -> 1 + 9 (x - min) / (max - min)


def check_positive(X: np.ndarray, who: str) -> None:
    """Power laws x**beta need x > 0: a clear error, not a NaN (brief, "Bad input")."""
    if X.size and not np.all(X > 0):
        bad = np.argwhere(~(X > 0))[0]
        prefix = "Negative values in data: " if np.any(X < 0) else ""
        raise ValueError(
            f"{prefix}{who} needs strictly positive inputs (power laws x**beta are undefined for x <= 0): "
            f"X[{bad[0]}, {bad[1]}] = {X[tuple(bad)]!r}; shift or rescale the feature, or use "
            "SignomialClassifier(feature_map='unit') which maps every feature to [1, 10]")


def _snap_refit(alpha: np.ndarray, beta: np.ndarray, X: np.ndarray, y: np.ndarray, max_den: int, tol: float):
    """Snap exponents to small rationals, merge equal terms, refit alpha by least squares, drop null terms.

    Returns (coef (K',), exponents (K', m) float, snapped (bool: every exponent is a rational p/q)).
    """
    rows, all_snapped = [], True
    for row in np.atleast_2d(beta):
        new = []
        for b in row:
            s = snap_value(float(b), max_den, tol)
            all_snapped &= s is not None
            new.append(float(s) if s is not None else float(b))
        rows.append(tuple(new))
    rows = list(dict.fromkeys(rows))
    E = np.array(rows, float)
    Phi = np.exp(np.log(X) @ E.T)
    coef, *_ = np.linalg.lstsq(Phi, y, rcond=None)
    scale = np.sqrt(np.mean(y ** 2)) + 1e-300
    keep = np.abs(coef) * np.sqrt(np.mean(Phi ** 2, 0)) > 1e-9 * scale
    if keep.any() and not keep.all():
        E = E[keep]
        coef, *_ = np.linalg.lstsq(Phi[:, keep], y, rcond=None)
    return coef, E, all_snapped


class SignomialRegressor(RegressorMixin, BaseEstimator):
    """ECSEL symbolic regression: ``y ~ sum_k alpha_k prod_j x_j**beta_kj`` (Eq. 1, C = 1; Eq. 3 loss).

    No feature map (the benchmark inputs are positive and a rescaling would change the law). After the
    staged fit, exponents are snapped to ``p/q`` (``q <= max_denominator``, within ``snap_tol``) and the
    coefficients refitted by least squares; the snapped model is kept when its training MSE is at most
    ``1 + 1e-3`` times the raw model's (plus 1e-12 of the variance), else the raw fit is kept.

    ``varpro=True`` (default, our robustness upgrade, not the paper's published recipe) replaces the free
    alpha of the two Adam stages by its least-squares value given beta (variable projection); the L-BFGS-B
    polish is joint as in the paper. ``varpro=False`` is the staged optimisation as published.

    Parameters: ``n_terms`` K, ``lam`` the L1 weight on exponents (mean-squared loss on y / rms(y)),
    ``restarts``, ``adam_steps`` / ``lr`` of the two Adam stages (K > 1), ``strong`` the stage-1 L1
    multiplier, ``lbfgs_iter``, ``polish`` (restarts polished by L-BFGS-B), ``snap``, ``random_state``.
    """

    def __init__(self, n_terms: int = 1, lam: float = 1e-4, restarts: int = 4, adam_steps=(600, 300),
                 lr=(0.05, 0.01), strong: float = 10.0, lbfgs_iter: int = 300, polish: int = 2,
                 init_scale: float = 1.0, varpro: bool = True, snap: bool = True, max_denominator: int = 6,
                 snap_tol: float = 0.02, random_state: int = 0):
        self.n_terms = n_terms
        self.lam = lam
        self.restarts = restarts
        self.adam_steps = adam_steps
        self.lr = lr
        self.strong = strong
        self.lbfgs_iter = lbfgs_iter
        self.polish = polish
        self.init_scale = init_scale
        self.varpro = varpro
        self.snap = snap
        self.max_denominator = max_denominator
        self.snap_tol = snap_tol
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags

    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        check_positive(X, type(self).__name__)
        if int(self.n_terms) < 1:
            raise ValueError(f"n_terms must be >= 1, got {self.n_terms}")
        if not self.lam >= 0:
            raise ValueError(f"lam must be >= 0, got {self.lam}")
        scale = float(np.sqrt(np.mean(y ** 2))) or 1.0
        res = fit_signomial(np.log(X), y / scale, task="sr", n_terms=self.n_terms, lam=self.lam,
                            restarts=self.restarts, adam_steps=tuple(self.adam_steps), lr=tuple(self.lr),
                            strong=self.strong, lbfgs_iter=self.lbfgs_iter, polish=self.polish,
                            init_scale=self.init_scale, varpro=self.varpro, seed=self.random_state)
        self.raw_alpha_ = res.alpha[0] * scale
        self.raw_beta_ = res.beta[0]
        self.objective_ = res.objective
        coef, expo, snapped = self.raw_alpha_, self.raw_beta_, False
        if self.snap:
            c2, e2, ok = _snap_refit(self.raw_alpha_, self.raw_beta_, X, y, self.max_denominator, self.snap_tol)
            mse_raw = np.mean((y - signomial_scores(X, self.raw_alpha_[None], self.raw_beta_[None])[:, 0]) ** 2)
            mse_snap = np.mean((y - np.exp(np.log(X) @ e2.T) @ c2) ** 2)
            if mse_snap <= (1 + 1e-3) * mse_raw + 1e-12 * np.var(y):
                coef, expo, snapped = c2, e2, ok
        self.coef_ = np.asarray(coef, float)
        self.exponents_ = np.asarray(expo, float)
        self.snapped_ = bool(snapped)
        return self

    def predict(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        check_positive(X, type(self).__name__)
        return np.exp(np.log(X) @ self.exponents_.T) @ self.coef_

    @property
    def terms_(self) -> dict | None:
        """``{exponent tuple (Fraction): coefficient}`` when every exponent snapped, else None."""
        check_is_fitted(self, "coef_")
        if not self.snapped_:
            return None
        out = {}
        for c, row in zip(self.coef_, self.exponents_):
            key = tuple(Fraction(float(b)).limit_denominator(self.max_denominator) for b in row)
            out[key] = out.get(key, 0.0) + float(c)
        return out

    def to_sympy(self, feature_names=None, digits: int = 6) -> sp.Expr:
        """The fitted equation as a sympy expression (rational exponents when snapped)."""
        check_is_fitted(self, "coef_")
        names = feature_names or getattr(self, "feature_names_in_", None) or [f"x{j}" for j in range(self.n_features_in_)]
        syms = [sp.Symbol(str(n), positive=True) for n in names]
        out = sp.Integer(0)
        for c, row in zip(self.coef_, self.exponents_):
            powers = [s ** (sp.Rational(Fraction(float(b)).limit_denominator(self.max_denominator)) if self.snapped_
                            else sp.Float(b, digits)) for s, b in zip(syms, row) if b != 0]
            out += sp.Float(c, digits) * sp.Mul(*powers)
        return out


WARM_SCALE = 5.0


def _loglinear_warm_start(U: np.ndarray, yi: np.ndarray, C: int, K: int, w=None):
    """Restart-0 parameters from a logistic regression on log-features (see SignomialClassifier)."""
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1.0, max_iter=2000).fit(U, yi, sample_weight=w)
    coef, icpt = np.atleast_2d(lr.coef_), np.atleast_1d(lr.intercept_)
    Cs = 1 if C == 2 else C
    alpha = np.zeros((Cs, K))
    beta = np.zeros((Cs, K, U.shape[1]))
    alpha[:, 0] = WARM_SCALE
    alpha[:, -1] = icpt[:Cs] - WARM_SCALE
    beta[:, 0] = np.clip(coef[:Cs] / WARM_SCALE, -1.0, 1.0)
    return alpha, beta


class SignomialClassifier(ClassifierMixin, BaseEstimator):
    """ECSEL classification: ``p(y = c | x) = softmax_c z_c(x~)`` with K-term signomials (Eq. 1-2).

    ``feature_map='unit'`` applies the paper's map ``x~_j = 1 + 9 (x_j - min_j) / (max_j - min_j)``
    (train-set min/max, test values clipped to [1, 10]); ``'none'`` uses the raw features, which must then
    be strictly positive (exponents keep their physical meaning only then, brief pitfall 1). One signomial
    per class and softmax; for two classes and K > 1 one signomial z and ``p(y=1) = sigmoid(z)`` (the
    paper's binary form, which also fixes the reference class, brief pitfall 6); for two classes and K = 1
    one power law per class (a single power-law logit has a fixed sign: it could never change class).
    ``lam`` multiplies ``sum |beta|`` added to the *mean* cross-entropy (the paper's PaySim
    ``lam = 2e4`` is on a summed loss; divide by N to compare, brief pitfall 5).

    ``warm_start='loglinear'`` (K > 1; our choice, the paper's initialisation is not known) starts restart 0
    at the linearisation of a logistic regression on ``log x~``: ``z ~ (alpha_1 + alpha_K) + alpha_1 beta_1 . log x~``
    with ``alpha_1 = WARM_SCALE``, the other restarts are random. Without it every restart on the case
    studies fell into the same local minimum (a single negative term).
    """

    def __init__(self, n_terms: int = 1, lam: float = 1e-3, feature_map: str = "unit", restarts: int = 3,
                 adam_steps=(300, 150), lr=(0.05, 0.01), strong: float = 10.0, lbfgs_iter: int = 300,
                 polish: int = 2, init_scale: float = 0.5, warm_start: str | None = "loglinear", class_weight=None,
                 random_state: int = 0):
        self.n_terms = n_terms
        self.lam = lam
        self.feature_map = feature_map
        self.restarts = restarts
        self.adam_steps = adam_steps
        self.lr = lr
        self.strong = strong
        self.lbfgs_iter = lbfgs_iter
        self.polish = polish
        self.init_scale = init_scale
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.random_state = random_state

    def _map(self, X: np.ndarray) -> np.ndarray:
        if self.feature_map == "none":
            check_positive(X, f"{type(self).__name__}(feature_map='none')")
            return X
        span = np.where(self.span_ > 0, self.span_, 1.0)
        return np.clip(LOW + (HIGH - LOW) * (X - self.min_) / span, LOW, HIGH)

    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        if self.feature_map not in ("unit", "none"):
            raise ValueError(f"feature_map must be 'unit' or 'none', got {self.feature_map!r}")
        self._le = LabelEncoder().fit(y)
        self.classes_ = self._le.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {len(self.classes_)} class")
        yi = self._le.transform(y)
        self.min_, self.span_ = X.min(0), X.max(0) - X.min(0)
        Xm = self._map(X)
        if self.feature_map == "none":
            self.gmean_ = np.exp(np.log(Xm).mean(0))
            Xm = Xm / self.gmean_
        w = None if self.class_weight is None else compute_sample_weight(self.class_weight, y)
        ws = _loglinear_warm_start(np.log(Xm), yi, len(self.classes_), int(self.n_terms), w) \
            if self.warm_start == "loglinear" and int(self.n_terms) > 1 else None
        res = fit_signomial(np.log(Xm), yi, task="clf", warm_start=ws, n_classes=len(self.classes_), n_terms=self.n_terms,
                            lam=self.lam, restarts=self.restarts, adam_steps=tuple(self.adam_steps),
                            lr=tuple(self.lr), strong=self.strong, lbfgs_iter=self.lbfgs_iter, polish=self.polish,
                            init_scale=self.init_scale, sample_weight=w, seed=self.random_state)
        alpha, beta = res.alpha, res.beta
        if self.feature_map == "none":  # fitted on x / g (unit invariance: beta unchanged, alpha absorbs g**-beta)
            alpha = alpha * np.exp(-np.einsum("ckm,m->ck", beta, np.log(self.gmean_)))
        self.alpha_, self.beta_, self.objective_ = alpha, beta, res.objective
        return self

    def transform_features(self, X) -> np.ndarray:
        """The model's inputs x~ (the [1, 10] map, or X itself for feature_map='none')."""
        check_is_fitted(self, "alpha_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._map(X)

    def decision_function(self, X) -> np.ndarray:
        """The class scores z_c(x~) (n, C) of Eq. 1 (for two classes the logit of class 1, shape (n,))."""
        z = signomial_scores(self.transform_features(X), self.alpha_, self.beta_)
        if len(self.classes_) == 2:
            return z[:, 0] if z.shape[1] == 1 else z[:, 1] - z[:, 0]
        return z

    def predict_proba(self, X) -> np.ndarray:
        z = signomial_scores(self.transform_features(X), self.alpha_, self.beta_)
        if z.shape[1] == 1:  # binary: sigmoid of one signomial
            z = np.column_stack([np.zeros(len(z)), z[:, 0]])
        z = z - z.max(1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(1, keepdims=True)

    def predict(self, X):
        check_is_fitted(self, "alpha_")
        return self.classes_[np.argmax(self.predict_proba(X), 1)]

    def to_sympy(self, feature_names=None, digits: int = 4) -> list[sp.Expr]:
        """One sympy expression z_c(x~) per class (in the mapped features when feature_map='unit')."""
        check_is_fitted(self, "alpha_")
        names = feature_names or getattr(self, "feature_names_in_", None) or [f"x{j}" for j in range(self.n_features_in_)]
        syms = [sp.Symbol(str(n), positive=True) for n in names]
        out = []
        for a_c, b_c in zip(self.alpha_, self.beta_):
            out.append(sum((sp.Float(a, digits) * sp.Mul(*[s ** sp.Float(b, digits) for s, b in zip(syms, row) if b != 0])
                            for a, row in zip(a_c, b_c)), sp.Integer(0)))
        return out
