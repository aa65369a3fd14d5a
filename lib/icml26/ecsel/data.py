"""Offline data: sklearn's bundled classification sets and the two synthetic case-study stand-ins.

The paper's case studies use Online Shoppers Intention (OSI) and PaySim, which need downloads; these
generators are **stand-ins** with a *known* signomial logit, which keeps what the case studies test (does
the fitted equation expose the composite PageValues/ExitRates, the super-linear exponent on the origin
balance?) and loses the real data's noise, confounders and feature count.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Dataset:
    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    truth: dict | None = None


def load_classification(name: str) -> Dataset:
    """One of sklearn's bundled datasets: breast_cancer, wine, iris, digits (no download)."""
    from sklearn import datasets

    loaders = dict(breast_cancer=datasets.load_breast_cancer, wine=datasets.load_wine, iris=datasets.load_iris,
                   digits=datasets.load_digits)
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; choose from {sorted(loaders)}")
    d = loaders[name]()
    names = [str(f) for f in getattr(d, "feature_names", [f"x{j}" for j in range(d.data.shape[1])])]
    return Dataset(name, d.data.astype(float), d.target, names)


OSI_TRUTH = dict(a=0.6, exponent=0.5, threshold=6.0)


def osi_like(n: int, seed: int) -> Dataset:
    """Online-shoppers stand-in: ``logit = a (PV / ER)**0.5 - t`` (the PVER composite), ~15 % buyers.

    PV ~ LogNormal(0, 1) + 0.01, ER ~ U(0.005, 0.2), ProductRelated_Duration ~ LogNormal(3, 1) and
    BounceRates ~ U(0.001, 0.2) (the last two are distractors: true exponent 0).
    """
    rng = np.random.default_rng(seed)
    pv = rng.lognormal(0.0, 1.0, n) + 0.01
    er = rng.uniform(0.005, 0.2, n)
    prd = rng.lognormal(3.0, 1.0, n)
    br = rng.uniform(0.001, 0.2, n)
    t = OSI_TRUTH
    logit = t["a"] * (pv / er) ** t["exponent"] - t["threshold"]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
    X = np.column_stack([pv, er, prd, br])
    return Dataset("osi_like", X, y, ["PageValues", "ExitRates", "ProductRelated_Duration", "BounceRates"],
                   truth=dict(t, beta={"PageValues": 0.5, "ExitRates": -0.5, "ProductRelated_Duration": 0.0,
                                       "BounceRates": 0.0}))


PAYSIM_TRUTH = dict(beta_amount=0.8, beta_obo=1.42, log_c=-12.7, threshold=3.0)


def paysim_like(n: int, seed: int) -> Dataset:
    """PaySim stand-in: ``logit = c amount**0.8 oldbalanceOrg**1.42 - t``, ~2-3 % fraud (imbalanced).

    amount ~ LogNormal(4, 1), oldbalanceOrg ~ LogNormal(5, 1.2), oldbalanceDest ~ LogNormal(5, 1.2)
    (a distractor) and step ~ U(1, 744) hours (a distractor).
    """
    rng = np.random.default_rng(seed)
    amount = rng.lognormal(4.0, 1.0, n)
    obo = rng.lognormal(5.0, 1.2, n)
    dbo = rng.lognormal(5.0, 1.2, n)
    step = rng.uniform(1.0, 744.0, n)
    t = PAYSIM_TRUTH
    logit = np.exp(t["log_c"] + t["beta_amount"] * np.log(amount) + t["beta_obo"] * np.log(obo)) - t["threshold"]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
    X = np.column_stack([amount, obo, dbo, step])
    return Dataset("paysim_like", X, y, ["amount", "oldbalanceOrg", "oldbalanceDest", "step"],
                   truth=dict(t, beta={"amount": 0.8, "oldbalanceOrg": 1.42, "oldbalanceDest": 0.0, "step": 0.0}))
