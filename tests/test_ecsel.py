"""Unit tests of icml26.ecsel: census, estimators, snapping/recovery, baselines, explanations, bad input."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
import torch

from icml26.ecsel import (FEYNMAN, PRESETS, SignomialClassifier, SignomialRegressor, attribution,
                          boundary_sensitivity, census, counterfactual, elasticity, exact_shapley, log_ols, log_score,
                          recovered, signomial_terms, snap_value, stlsq, term_values)

torch.set_num_threads(1)


def test_census_45_38_7():
    c = census()
    assert (c["n_signomial"], c["n_monomial"], c["n_multiterm"]) == (45, 38, 7)
    assert c["multiterm_ids"] == ["I.11.19", "I.13.4", "I.13.12", "I.24.6", "II.2.42", "II.36.38", "II.37.1"]
    assert set(c["negative_coefficient_ids"]) == {"III.19.51", "III.21.20"}


def test_signomial_terms_rejects_non_signomials_and_expands():
    x, y = sp.symbols("x y", positive=True)
    assert signomial_terms(sp.sin(x) * y, [x, y]) is None
    assert signomial_terms(1 / (x + y), [x, y]) is None
    t = signomial_terms(sp.sqrt(x * y) * (x + 2 / y), [x, y])
    assert t == {(Fraction(3, 2), Fraction(1, 2)): 1.0, (Fraction(1, 2), Fraction(-1, 2)): 2.0}


def test_snap_value_prefers_small_denominators():
    assert snap_value(0.499) == Fraction(1, 2)
    assert snap_value(-1.003) == Fraction(-1)
    assert snap_value(0.3334) == Fraction(1, 3)
    assert snap_value(0.4512) is None


def test_regressor_recovers_power_law_and_to_sympy():
    eq = FEYNMAN["I.47.23"]  # sqrt(gamma * pr / rho)
    rng = np.random.default_rng(0)
    X, y = eq.sample(200, rng)
    Xt, yt = eq.sample(300, rng)
    est = SignomialRegressor(random_state=0).fit(X, y)
    assert recovered(eq.terms, est.terms_, Xt, yt)
    g, pr, rho = eq.symbols
    assert sp.simplify(est.to_sympy(eq.names) - sp.sqrt(g) * sp.sqrt(pr) / sp.sqrt(rho)) == 0
    assert est.score(Xt, yt) > 0.9999


def test_regressor_recovers_a_mixed_sign_two_term_equation():
    eq = FEYNMAN["I.13.12"]  # G m1 m2 / r2 - G m1 m2 / r1
    rng = np.random.default_rng(42)
    X, y = eq.sample(200, rng)
    Xt, yt = eq.sample(300, rng)
    est = SignomialRegressor(n_terms=2, random_state=42).fit(X, y)
    assert recovered(eq.terms, est.terms_, Xt, yt)


def test_log_ols_recovers_monomial_but_not_sum():
    rng = np.random.default_rng(1)
    mono, multi = FEYNMAN["III.19.51"], FEYNMAN["I.13.4"]
    X, y = mono.sample(200, rng)
    terms, _ = log_ols(X, y)
    assert recovered(mono.terms, terms, *mono.sample(200, rng))
    X, y = multi.sample(200, rng)
    terms, _ = log_ols(X, y)
    assert not recovered(multi.terms, terms, *multi.sample(200, rng))


def test_stlsq_recovers_two_term_equation_in_its_library():
    eq = FEYNMAN["II.37.1"]
    rng = np.random.default_rng(2)
    X, y = eq.sample(300, rng)
    terms, _ = stlsq(X, y)
    assert recovered(eq.terms, terms, *eq.sample(300, rng))


def test_classifier_multiclass_and_binary():
    from sklearn.datasets import load_breast_cancer, load_iris

    X, y = load_iris(return_X_y=True)
    clf = SignomialClassifier(n_terms=1, restarts=1).fit(X, y)
    assert clf.score(X, y) > 0.9
    assert SignomialClassifier(n_terms=1, restarts=1).fit(X[y < 2], y[y < 2]).score(X[y < 2], y[y < 2]) > 0.95
    p = clf.predict_proba(X)
    assert p.shape == (150, 3) and np.allclose(p.sum(1), 1)
    assert len(clf.to_sympy()) == 3
    Xb, yb = load_breast_cancer(return_X_y=True)
    clf = SignomialClassifier(n_terms=2, restarts=1, adam_steps=(100, 50)).fit(Xb, yb)
    assert clf.score(Xb, yb) > 0.9
    assert clf.decision_function(Xb).shape == (len(yb),)


def test_sklearn_estimator_checks_that_apply():
    from sklearn.utils.estimator_checks import check_estimator

    fast = dict(restarts=1, adam_steps=(20, 10), lbfgs_iter=30)
    results = check_estimator(SignomialClassifier(**fast), on_fail=None)
    assert not [r["check_name"] for r in results if r["status"] == "failed"]
    # the regressor declares positive_only; sklearn then shifts X to >= 0, and x = 0 is outside a power law's
    # domain: every failing check must be our clear positivity error, nothing else
    results = check_estimator(SignomialRegressor(**fast), on_fail=None)
    failed = [r for r in results if r["status"] == "failed"]
    assert all("strictly positive" in str(r["exception"]) for r in failed), [
        (r["check_name"], r["exception"]) for r in failed if "strictly positive" not in str(r["exception"])]
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    assert {"check_get_params_invariance", "check_set_params", "check_no_attributes_set_in_init",
            "check_estimators_unfitted"} <= passed


# --------------------------------------------------------------------------- bad input

def test_regressor_rejects_non_positive_inputs_clearly():
    X = np.array([[1.0, 2.0], [0.0, 3.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="strictly positive"):
        SignomialRegressor().fit(X, np.ones(3))
    with pytest.raises(ValueError, match="strictly positive"):
        SignomialRegressor().fit(-np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="strictly positive"):
        SignomialClassifier(feature_map="none").fit(-np.ones((4, 2)), [0, 1, 0, 1])


def test_classifier_one_class_and_nan_raise_sklearn_errors():
    X = np.random.default_rng(0).uniform(1, 2, (10, 3))
    with pytest.raises(ValueError, match="class"):
        SignomialClassifier().fit(X, np.zeros(10))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SignomialClassifier().fit(Xn, np.arange(10) % 2)
    with pytest.raises(ValueError, match="NaN"):
        SignomialRegressor().fit(Xn, np.ones(10))


# --------------------------------------------------------------------------- explanations

@pytest.fixture
def sig():
    rng = np.random.default_rng(3)
    return rng.uniform(0.5, 2, 3), rng.uniform(-2, 2, (3, 4)), rng.uniform(1, 10, (50, 4))


def test_elasticity_matches_autograd(sig):
    a, b, X = sig
    lx = torch.tensor(np.log(X), requires_grad=True)
    torch.log((torch.exp(lx @ torch.tensor(b.T)) * torch.tensor(a)).sum(1)).sum().backward()
    assert np.abs(lx.grad.numpy() - elasticity(a, b, X)).max() < 1e-10
    # convex combination of the term exponents when every term is positive
    E = elasticity(a, b, X)
    assert np.all(E >= b.min(0) - 1e-12) and np.all(E <= b.max(0) + 1e-12)


def test_counterfactual_identity_and_boundary(sig):
    a, b, X = sig
    X2 = X.copy()
    X2[:, 1] *= 2.5
    assert np.allclose(counterfactual(a, b, X, 1, 2.5), term_values(a, b, X2).sum(1), rtol=1e-12)
    s = boundary_sensitivity(a, b, a[:1], b[:1], X)
    eps = 1e-6
    Xe = X * np.exp(eps * np.eye(4)[2])
    fd = ((term_values(a, b, Xe).sum(1) - term_values(a[:1], b[:1], Xe).sum(1))
          - (term_values(a, b, X).sum(1) - term_values(a[:1], b[:1], X).sum(1))) / eps
    assert np.allclose(s[:, 2], fd, rtol=1e-4)


def test_k1_attribution_is_exact_shapley(sig):
    a, b, X = sig
    a1, b1 = a[:1], b[:1]
    x, base = X[0], X[1]
    phi = attribution(a1, b1, x, base)
    assert np.isclose(phi.sum(), log_score(a1, b1, x[None])[0] - log_score(a1, b1, base[None])[0], atol=1e-12)
    sh = exact_shapley(lambda p: float(log_score(a1, b1, p[None])[0]), x, base)
    assert np.abs(phi - sh).max() < 1e-12


def test_explanations_reject_bad_shapes_and_non_positive(sig):
    a, b, X = sig
    with pytest.raises(ValueError, match="shapes"):
        elasticity(a, b, X[:, :3])
    with pytest.raises(ValueError, match="positive"):
        elasticity(a, b, -X)


def test_presets_cover_every_scale():
    assert set(PRESETS) == {"smoke", "book", "full"}
    assert len(PRESETS["smoke"]["sr_ids"]) == 12
