"""scikit-learn estimators for ECSEL: :class:`SignomialRegressor` (symbolic regression) and
:class:`SignomialClassifier` (one signomial per class + softmax, or one logit + sigmoid; brief Eq. 1-2).

Both take ``recipe='staged'`` (the brief's reading of the paper: :func:`icml26.ecsel.model.fit_signomial`)
or ``recipe='authors'`` (the authors' released recipe: :func:`icml26.ecsel.model.fit_signomial_authors`).
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

from .feynman import design_matrix, snap_value
from .model import fit_signomial, fit_signomial_authors, fit_signomial_authors_grid, signomial_scores

RECIPES = ("staged", "authors")
PAPER_RANGE = (1.0, 10.0)
"""The paper's feature map (brief Sec. 2.1): x -> 1 + 9 (x - min) / (max - min)."""
AUTHORS_RANGE = (0.01, 10.01)
"""The range the authors' released scripts map features to (``MinMaxScaler(feature_range=(0.01, 10.01))``)."""
AUTHORS_DEFAULTS = dict(lr=2e-3, batch_size=64, epochs=800, patience=50)
"""The authors' published COMPAS configuration, rounded (lr 1.75e-3, batch 64, 869 epochs, patience 50)."""


def check_positive(X: np.ndarray, who: str) -> None:
    """Power laws x**beta need x > 0: a clear error, not a NaN (brief, "Bad input")."""
    if X.size and not np.all(X > 0):
        bad = np.argwhere(~(X > 0))[0]
        prefix = "Negative values in data: " if np.any(X < 0) else ""
        raise ValueError(
            f"{prefix}{who} needs strictly positive inputs (power laws x**beta are undefined for x <= 0): "
            f"X[{bad[0]}, {bad[1]}] = {X[tuple(bad)]!r}; shift or rescale the feature, or use "
            "SignomialClassifier(feature_map='unit') which maps every feature to a positive range")


def _check_recipe(recipe: str, restarts: int, lam: float, n_terms: int) -> None:
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {RECIPES}, got {recipe!r}")
    if int(n_terms) < 1:
        raise ValueError(f"n_terms must be >= 1, got {n_terms}")
    if int(restarts) < 1:
        raise ValueError(f"restarts must be >= 1, got {restarts}")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}")


def _feature_symbols(est, feature_names) -> list[sp.Symbol]:
    if feature_names is None:
        feature_names = getattr(est, "feature_names_in_", None)
    if feature_names is None:
        feature_names = [f"x{j}" for j in range(est.n_features_in_)]
    if len(feature_names) != est.n_features_in_:
        raise ValueError(f"{len(feature_names)} feature names for {est.n_features_in_} features")
    return [sp.Symbol(str(n), positive=True) for n in feature_names]


def _snap_refit(beta: np.ndarray, X: np.ndarray, y: np.ndarray, max_den: int, tol: float):
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
    E = np.array(list(dict.fromkeys(rows)), float)
    Phi = design_matrix(X, E)
    coef, *_ = np.linalg.lstsq(Phi, y, rcond=None)
    scale = np.sqrt(np.mean(y ** 2)) + 1e-300
    keep = np.abs(coef) * np.sqrt(np.mean(Phi ** 2, 0)) > 1e-9 * scale
    if keep.any() and not keep.all():
        E = E[keep]
        coef, *_ = np.linalg.lstsq(Phi[:, keep], y, rcond=None)
    return coef, E, all_snapped


class SignomialRegressor(RegressorMixin, BaseEstimator):
    """ECSEL symbolic regression: ``y ~ sum_k alpha_k prod_j x_j**beta_kj`` (Eq. 1, C = 1; Eq. 3 loss).

    No feature map (the benchmark inputs are positive and a rescaling would change the law). The target is
    divided by its RMS for the fit. After the fit, exponents are snapped to ``p/q`` (``q <= max_denominator``,
    within ``snap_tol``) and the coefficients refitted by least squares; the snapped model is kept when its
    training MSE is at most ``1 + 1e-3`` times the raw model's (plus 1e-12 of the variance), else the raw fit.

    ``recipe='staged'`` with ``varpro=True`` (default; variable projection is our robustness upgrade, not the
    paper's) eliminates alpha in the two Adam stages by its least-squares value given beta, and polishes
    jointly with L-BFGS-B; ``varpro=False`` is the staged schedule as the brief reads it (free alpha, L1 on
    exponents). ``recipe='authors'`` runs the authors' classifier optimiser on the squared error (mini-batch
    Adam, L1 on constants and exponents, clip 1.0, their initialisation, early stopping; ``lr``,
    ``batch_size``, ``epochs``, ``patience`` apply).

    Parameters: ``n_terms`` K, ``lam`` the L1 weight (mean-squared loss on y / rms(y)), ``restarts``,
    ``adam_steps`` / ``lr`` of the two Adam stages (staged, K > 1), ``strong`` the stage-1 L1 multiplier,
    ``lbfgs_iter``, ``polish`` (restarts polished by L-BFGS-B), ``restarts_k1`` (staged: the starts of a K = 1
    fit, each a whole L-BFGS-B run; default ``restarts``), ``snap``, ``random_state``.
    """

    def __init__(self, n_terms: int = 1, lam: float = 1e-4, restarts: int = 4, adam_steps=(600, 300),
                 lr=None, strong: float = 10.0, lbfgs_iter: int = 300, polish: int = 2,
                 init_scale: float = 1.0, varpro: bool = True, recipe: str = "staged", batch_size: int = 64,
                 epochs: int = 800, patience: int = 50, snap: bool = True, max_denominator: int = 6,
                 snap_tol: float = 0.02, restarts_k1: int | None = None, random_state: int = 0):
        self.n_terms = n_terms
        self.lam = lam
        self.restarts = restarts
        self.restarts_k1 = restarts_k1
        self.adam_steps = adam_steps
        self.lr = lr
        self.strong = strong
        self.lbfgs_iter = lbfgs_iter
        self.polish = polish
        self.init_scale = init_scale
        self.varpro = varpro
        self.recipe = recipe
        self.batch_size = batch_size
        self.epochs = epochs
        self.patience = patience
        self.snap = snap
        self.max_denominator = max_denominator
        self.snap_tol = snap_tol
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.regressor_tags.poor_score = True  # a K-term signomial is a narrow model class on generic data
        return tags

    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        check_positive(X, type(self).__name__)
        _check_recipe(self.recipe, self.restarts, self.lam, self.n_terms)
        scale = float(np.sqrt(np.mean(y ** 2))) or 1.0
        if self.lr is not None and (np.ndim(self.lr) != 0) == (self.recipe == "authors"):
            raise ValueError(f"lr must be a float for recipe='authors' and a (stage 1, stage 2) pair for "
                             f"recipe='staged', got {self.lr!r}")
        if self.recipe == "authors":
            res = fit_signomial_authors(np.log(X), y / scale, task="sr", n_terms=self.n_terms, lam=self.lam,
                                        lr=AUTHORS_DEFAULTS["lr"] if self.lr is None else float(self.lr),
                                        batch_size=self.batch_size, epochs=self.epochs, patience=self.patience,
                                        restarts=self.restarts, seed=self.random_state)
        else:
            res = fit_signomial(np.log(X), y / scale, task="sr", n_terms=self.n_terms, lam=self.lam,
                                restarts=self.restarts, adam_steps=tuple(self.adam_steps),
                                lr=(0.05, 0.01) if self.lr is None else tuple(self.lr), strong=self.strong,
                                lbfgs_iter=self.lbfgs_iter, polish=self.polish, init_scale=self.init_scale,
                                varpro=self.varpro, restarts_k1=self.restarts_k1, seed=self.random_state)
        self.raw_alpha_ = res.alpha[0] * scale
        self.raw_beta_ = res.beta[0]
        self.objective_ = res.objective
        coef, expo, snapped = self.raw_alpha_, self.raw_beta_, False
        if self.snap:
            c2, e2, ok = _snap_refit(self.raw_beta_, X, y, self.max_denominator, self.snap_tol)
            mse_raw = np.mean((y - design_matrix(X, self.raw_beta_) @ self.raw_alpha_) ** 2)
            mse_snap = np.mean((y - design_matrix(X, e2) @ c2) ** 2)
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
        return design_matrix(X, self.exponents_) @ self.coef_

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
        syms = _feature_symbols(self, feature_names)
        out = sp.Integer(0)
        for c, row in zip(self.coef_, self.exponents_):
            powers = [s ** (sp.Rational(Fraction(float(b)).limit_denominator(self.max_denominator)) if self.snapped_
                            else sp.Float(b, digits)) for s, b in zip(syms, row) if b != 0]
            out += sp.Float(c, digits) * sp.Mul(*powers)
        return out


def auto_batch_size(batch_size, n: int) -> int:
    """``batch_size``, or for ``'auto'`` 64 below 1000 training rows and 256 from there on (both in the authors'
    search space {32, 64, 128, 256}; the larger batch keeps an 800-epoch run affordable on larger data)."""
    if batch_size == "auto":
        return 64 if n < 1000 else 256
    if isinstance(batch_size, str) or int(batch_size) < 1:
        raise ValueError(f"batch_size must be a positive integer or 'auto', got {batch_size!r}")
    return int(batch_size)


WARM_SCALE = 5.0
"""Amplitude of the first term of the log-linear warm start (see :func:`loglinear_warm_start`)."""


def loglinear_warm_start(U: np.ndarray, yi: np.ndarray, C: int, K: int, w=None):
    """Staged recipe, restart 0 (ours; K > 1): a signomial equal to first order to a logistic regression on
    the log-features ``U = log x~``, expanded at the training mean ``u0``.

    With ``LR(u) = b + c . u`` (one logit for two classes, one per class otherwise), term 1 is
    ``S exp(-beta . u0) exp(beta . u)`` with ``beta = clip(c / S, -1, 1)`` and ``S = WARM_SCALE``, and term K
    the constant ``b + c . u0 - S``: their sum is ``b + c . u`` to first order around ``u0``, so the start
    follows the logistic regression's decisions near the bulk of the data. The previous version expanded
    at ``u = 0``, i.e. at the corner x~ = 1 of the [1, 10] feature box: on breast_cancer its first term was
    ``exp(beta . u)`` with ``beta . u`` in [-8, -1.3], the start predicted a single class, and the staged
    schedule did not recover from it with one restart (training accuracy 0.627, the majority class).
    """
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1.0, max_iter=5000).fit(U, yi, sample_weight=w)
    coef, icpt = np.atleast_2d(lr.coef_), np.atleast_1d(lr.intercept_)
    Cs = 1 if C == 2 else C
    coef, icpt = coef[:Cs], icpt[:Cs]
    u0 = U.mean(0)
    alpha = np.zeros((Cs, K))
    beta = np.zeros((Cs, K, U.shape[1]))
    beta[:, 0] = np.clip(coef / WARM_SCALE, -1.0, 1.0)
    alpha[:, 0] = WARM_SCALE * np.exp(-(beta[:, 0] * u0).sum(1))
    alpha[:, -1] = icpt + coef @ u0 - WARM_SCALE
    return alpha, beta


class SignomialClassifier(ClassifierMixin, BaseEstimator):
    """ECSEL classification: ``p(y = c | x) = softmax_c z_c(x~)`` with K-term signomials (Eq. 1-2).

    ``feature_map='unit'`` applies the min-max map ``x~_j = lo + (hi - lo) (x_j - min_j) / (max_j - min_j)``
    (train-set min/max, test values clipped to the range) with ``(lo, hi) = feature_range``, by default the
    paper's [1, 10] for ``recipe='staged'`` and the authors' scripts' (0.01, 10.01) for ``recipe='authors'``;
    ``'none'`` uses the raw features, which must then be strictly positive (exponents keep their physical
    meaning only then, brief pitfall 1); the fit then runs on ``x / g`` (g the training geometric mean; unit
    invariance: beta unchanged, alpha absorbs ``g**-beta``).

    ``recipe='authors'``: the authors' released recipe (:func:`icml26.ecsel.model.fit_signomial_authors`),
    for binary problems one sigmoid logit (``use_sigmoid=True``) or one signomial per class and a softmax
    (``use_sigmoid=False``, the authors' published choice on ILPD and transfusion), ``lam`` on constants and exponents, ``lr`` (float),
    ``batch_size`` (an integer or ``'auto'``, :func:`auto_batch_size`), ``epochs``, ``patience``; ``polish_iter > 0``
    (ours; 0 is the released recipe) polishes the kept iterate with L-BFGS-B on the objective the Adam steps follow
    (:func:`icml26.ecsel.model.polish_authors`, the third stage of the paper's text), its objective per iteration
    in ``polish_history_``.
    ``recipe='staged'``: the brief's staged schedule
    (:func:`icml26.ecsel.model.fit_signomial`), L1 on the exponents only; for two classes and K > 1 one
    sigmoid logit, for K = 1 one power law per class (a single power law has a fixed sign: with threshold
    0.5 it could never change class); ``warm_start='loglinear'`` (K > 1, ours) starts restart 0 from
    :func:`loglinear_warm_start`, the other restarts are random.

    ``threshold``: binary problems predict class 1 when ``p(y = 1) >= threshold`` (the authors tune it in
    {0.4, 0.5, 0.6, 0.7}). ``lam`` multiplies the L1 sum added to the *mean* cross-entropy (as in the
    authors' code; a lam quoted for a summed loss would be N times larger).
    """

    def __init__(self, n_terms: int = 1, lam: float = 1e-3, feature_map: str = "unit", feature_range=None,
                 recipe: str = "staged", restarts: int = 3, adam_steps=(300, 150), lr=None, strong: float = 10.0,
                 lbfgs_iter: int = 300, polish: int = 2, init_scale: float = 0.5, warm_start: str | None = "loglinear",
                 batch_size: int = 64, epochs: int = 800, patience: int = 50, threshold: float = 0.5,
                 class_weight=None, use_sigmoid: bool = True, polish_iter: int = 0, random_state: int = 0):
        self.n_terms = n_terms
        self.lam = lam
        self.feature_map = feature_map
        self.feature_range = feature_range
        self.recipe = recipe
        self.restarts = restarts
        self.adam_steps = adam_steps
        self.lr = lr
        self.strong = strong
        self.lbfgs_iter = lbfgs_iter
        self.polish = polish
        self.init_scale = init_scale
        self.warm_start = warm_start
        self.batch_size = batch_size
        self.epochs = epochs
        self.patience = patience
        self.threshold = threshold
        self.class_weight = class_weight
        self.use_sigmoid = use_sigmoid
        self.polish_iter = polish_iter
        self.random_state = random_state

    def _range(self) -> tuple[float, float]:
        if self.feature_range is not None:
            lo, hi = map(float, self.feature_range)
        else:
            lo, hi = AUTHORS_RANGE if self.recipe == "authors" else PAPER_RANGE
        if not 0 < lo < hi:
            raise ValueError(f"feature_range must be (lo, hi) with 0 < lo < hi, got {self.feature_range!r}")
        return lo, hi

    def _map(self, X: np.ndarray) -> np.ndarray:
        if self.feature_map == "none":
            check_positive(X, f"{type(self).__name__}(feature_map='none')")
            return X
        lo, hi = self._range()
        span = np.where(self.span_ > 0, self.span_, 1.0)
        return np.clip(lo + (hi - lo) * (X - self.min_) / span, lo, hi)

    def fit(self, X, y):
        return self._fit(X, y, None)[0]

    def fit_grid(self, X, y, grid) -> list["SignomialClassifier"]:
        """Clones of this classifier (``recipe='authors'``) fitted at every ``(lam, lr)`` of ``grid``, run side by
        side as one batch (:func:`icml26.ecsel.model.fit_signomial_authors_grid`): each equals
        ``clone(self).set_params(lam=lam, lr=lr).fit(X, y)``, at a fraction of the cost of fitting them in turn."""
        if self.recipe != "authors":
            raise ValueError(f"fit_grid runs the authors' recipe only, got recipe={self.recipe!r}")
        return self._fit(X, y, [(float(lam), float(lr)) for lam, lr in grid])

    def _fit(self, X, y, grid):
        from sklearn.base import clone

        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        if self.feature_map not in ("unit", "none"):
            raise ValueError(f"feature_map must be 'unit' or 'none', got {self.feature_map!r}")
        _check_recipe(self.recipe, self.restarts, self.lam, self.n_terms)
        if not 0 < float(self.threshold) < 1:
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold}")
        self._range()
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
        U = np.log(Xm)
        C, K = len(self.classes_), int(self.n_terms)
        w = None if self.class_weight is None else compute_sample_weight(self.class_weight, y)
        if self.recipe == "authors":
            lr = AUTHORS_DEFAULTS["lr"] if self.lr is None else float(self.lr)
            results = fit_signomial_authors_grid(
                U, yi, task="clf", grid=grid or [(self.lam, lr)], n_classes=C, n_terms=K,
                batch_size=auto_batch_size(self.batch_size, len(U)), epochs=self.epochs, patience=self.patience,
                restarts=self.restarts, sample_weight=w, use_sigmoid=bool(self.use_sigmoid),
                polish_iter=int(self.polish_iter), seed=self.random_state)
        else:
            ws = loglinear_warm_start(U, yi, C, K, w) if self.warm_start == "loglinear" and K > 1 else None
            results = [fit_signomial(U, yi, task="clf", warm_start=ws, n_classes=C, n_terms=K, lam=self.lam,
                                     restarts=self.restarts, adam_steps=tuple(self.adam_steps),
                                     lr=(0.05, 0.01) if self.lr is None else tuple(self.lr), strong=self.strong,
                                     lbfgs_iter=self.lbfgs_iter, polish=self.polish, init_scale=self.init_scale,
                                     sample_weight=w, seed=self.random_state)]
        out = []
        for i, res in enumerate(results):
            est = self
            if grid is not None:
                est = clone(self).set_params(lam=grid[i][0], lr=grid[i][1])
                for attr in ("n_features_in_", "feature_names_in_", "_le", "classes_", "min_", "span_", "gmean_"):
                    if hasattr(self, attr):
                        setattr(est, attr, getattr(self, attr))
            alpha, beta = res.alpha, res.beta
            if self.feature_map == "none":
                alpha = alpha * np.exp(-np.einsum("ckm,m->ck", beta, np.log(self.gmean_)))
            est.alpha_, est.beta_, est.objective_ = alpha, beta, res.objective
            est.epochs_, est.history_, est.polish_history_ = res.epochs, res.history, res.polish_history
            out.append(est)
        return out

    def transform_features(self, X) -> np.ndarray:
        """The model's inputs x~ (the min-max map, or X itself for feature_map='none')."""
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
        p = self.predict_proba(X)
        if len(self.classes_) == 2:
            return self.classes_[(p[:, 1] >= float(self.threshold)).astype(int)]
        return self.classes_[np.argmax(p, 1)]

    def to_sympy(self, feature_names=None, digits: int = 4) -> list[sp.Expr]:
        """One sympy expression z_c(x~) per class (in the mapped features when feature_map='unit')."""
        check_is_fitted(self, "alpha_")
        syms = _feature_symbols(self, feature_names)
        out = []
        for a_c, b_c in zip(self.alpha_, self.beta_):
            out.append(sum((sp.Float(a, digits) * sp.Mul(*[s ** sp.Float(b, digits) for s, b in zip(syms, row) if b != 0])
                            for a, row in zip(a_c, b_c)), sp.Integer(0)))
        return out
