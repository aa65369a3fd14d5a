"""An independent numpy transcription of the authors' released multi-class update (their ``ecsel.py``, read
for its formulas, not copied), used to check :func:`icml26.ecsel.model.fit_signomial_authors` (fidelity check
F1 of the chapter, and the unit tests).

The authors' softmax classifier (brief Eq. 1-2): ``z_c = sum_k alpha_ck prod_j x_j**beta_ckj``; their analytical
gradient of the cross-entropy with respect to the logits is ``(P - Y) / n`` (the per-sample mean cross-entropy),
back-propagated through each term; ``lam * sign(theta)`` is added for the L1 term on all constants and exponents;
the gradient is clipped to norm 1; a bias-corrected Adam step follows. Early stopping reads the loss they monitor,
``-mean(Y * log P)`` over the n x C one-hot entries (cross-entropy / C) plus ``lam * |theta|_1``, after the step.
"""
from __future__ import annotations

import numpy as np

from .model import authors_init


def authors_softmax_reference(logX: np.ndarray, y: np.ndarray, *, n_classes: int, n_terms: int, lam: float, lr: float,
                              epochs: int, seed: int, min_delta: float = 1e-6,
                              divide_gradient_by_c: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
    """Full-batch run of the authors' multi-class update for ``epochs`` steps; returns the best epoch's
    ``(alpha (C, K), beta (C, K, m), monitored loss)``. ``divide_gradient_by_c`` follows the gradient of CE / C
    instead (this chapter's earlier, unfaithful objective), to show that a comparison tells the two apart."""
    logX = np.asarray(logX, float)
    y = np.asarray(y, int)
    n, m = logX.shape
    C = int(n_classes)
    a, b = authors_init(np.random.default_rng(int(seed)), C, int(n_terms), m)
    Y = np.eye(C)[y]
    mom = [np.zeros_like(a), np.zeros_like(b)]
    vel = [np.zeros_like(a), np.zeros_like(b)]
    best, keep = np.inf, (a.copy(), b.copy())

    def probs(a, b):
        T = np.exp(np.einsum("nm,ckm->nck", logX, b))
        Z = (a[None] * T).sum(-1)
        P = np.exp(Z - Z.max(1, keepdims=True))
        return T, P / P.sum(1, keepdims=True)

    for t in range(1, int(epochs) + 1):
        T, P = probs(a, b)
        D = (P - Y) / n / (C if divide_gradient_by_c else 1)
        g = [np.einsum("nc,nck->ck", D, T) + lam * np.sign(a),
             np.einsum("nc,nck,nm->ckm", D, a[None] * T, logX) + lam * np.sign(b)]
        norm = np.sqrt(sum(float((x ** 2).sum()) for x in g))
        if norm > 1.0:
            g = [x / norm for x in g]
        for i in range(2):
            mom[i] = 0.9 * mom[i] + 0.1 * g[i]
            vel[i] = 0.999 * vel[i] + 0.001 * g[i] ** 2
        a = a - lr * (mom[0] / (1 - 0.9 ** t)) / (np.sqrt(vel[0] / (1 - 0.999 ** t)) + 1e-8)
        b = b - lr * (mom[1] / (1 - 0.9 ** t)) / (np.sqrt(vel[1] / (1 - 0.999 ** t)) + 1e-8)
        _, P = probs(a, b)
        loss = -np.mean(Y * np.log(P)) + lam * (np.abs(a).sum() + np.abs(b).sum())
        if loss < best - min_delta:
            best, keep = loss, (a.copy(), b.copy())
    return keep[0], keep[1], float(best)
