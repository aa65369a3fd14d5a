"""The quality classifier of CQF (paper §2, Fig. 1): features + L2-regularised logistic regression.

The paper embeds documents with sBert and fits an L2 logistic regression on n HQ + n LQ embeddings, the
regularisation chosen by held-out accuracy. Here the features are hashed unigram+bigram counts from token
ids (`features.hashed_features`, DCLM/FastText-style) or the "sBert-like" random-embedding mean, and the
regularisation C in {0.01, 0.1, 1, 10} is chosen by `GridSearchCV` on a `PredefinedSplit`.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, PredefinedSplit

from .features import embedding_features, hashed_features
from .world import Docs, Vocab

C_GRID = (0.01, 0.1, 1.0, 10.0)


class QualityClassifier(BaseEstimator, ClassifierMixin):
    """P(HQ | x) from document features; a scikit-learn estimator over `Docs`.

    ``fit(hq, lq)`` takes the two document sets (``fit_docs``); the classic ``fit(X, y)`` is used by
    `GridSearchCV` internally on feature matrices. ``score_docs(docs)`` returns s(x) in [0, 1].
    """

    def __init__(self, vocab: Vocab | None = None, features: str = "hashed", C_grid=C_GRID, val_fraction: float = 0.25,
                 seed: int = 0, norm: str | None = "l2"):
        self.vocab = vocab
        self.features = features
        self.C_grid = C_grid
        self.val_fraction = val_fraction
        self.seed = seed
        self.norm = norm

    def featurize(self, docs: Docs):
        if self.features == "hashed":
            return hashed_features(docs, self.vocab, norm=self.norm)
        if self.features == "embed":
            return embedding_features(docs, self.vocab, seed=self.seed)
        raise ValueError(f"features must be 'hashed' or 'embed', got {self.features!r}")

    def fit(self, X, y):
        y = np.asarray(y)
        if len(np.unique(y)) < 2:
            raise ValueError("the classifier needs both classes (HQ and LQ documents) to train")
        rng = np.random.default_rng(self.seed)
        test_fold = np.where(rng.random(len(y)) < self.val_fraction, 0, -1)
        search = GridSearchCV(LogisticRegression(max_iter=2000), {"C": list(self.C_grid)},
                              cv=PredefinedSplit(test_fold), scoring="accuracy", refit=True)
        search.fit(X, y)
        self.model_ = search.best_estimator_
        self.C_ = float(search.best_params_["C"])
        self.val_accuracy_ = float(search.best_score_)
        self.classes_ = self.model_.classes_
        return self

    def fit_docs(self, hq: Docs, lq: Docs) -> "QualityClassifier":
        """Train on HQ (label 1) and LQ (label 0) documents; records their stream ids (``train_ids_``)."""
        if self.vocab is None:
            raise ValueError("QualityClassifier needs the world's vocab")
        if len(hq) == 0 or len(lq) == 0:
            raise ValueError(f"need HQ and LQ training documents, got {len(hq)} HQ and {len(lq)} LQ")
        X = self.featurize(Docs.concat([hq, lq]))
        y = np.concatenate([np.ones(len(hq), int), np.zeros(len(lq), int)])
        self.fit(X, y)
        self.train_ids_ = np.concatenate([hq.ids, lq.ids])
        self.lq_train_ids_ = np.asarray(lq.ids)
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(X)

    def predict(self, X):
        return self.model_.predict(X)

    def score_matrix(self, X) -> np.ndarray:
        """s(x) = P(HQ | x) for a feature matrix."""
        s = self.model_.predict_proba(X)[:, list(self.model_.classes_).index(1)]
        if not np.all(np.isfinite(s)):
            raise ValueError("non-finite classifier scores")
        return s

    def score_docs(self, docs: Docs) -> np.ndarray:
        """s(x) = P(HQ | x) for documents (paper §2: the "quality" score)."""
        return self.score_matrix(self.featurize(docs))

    @property
    def coef_(self):
        return self.model_.coef_

    @property
    def intercept_(self):
        return self.model_.intercept_
