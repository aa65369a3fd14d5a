"""An independent numpy transcription of the authors' released classifier update (their ``ecsel.py``, read for its
formulas, not copied), used to check :func:`icml26.ecsel.model.fit_signomial_authors` (fidelity check F1 of the
chapter, and the unit tests). It is written the plain way, one restart and one mini-batch at a time, where the
library runs every restart (and every grid point) side by side.

The authors' classifier (brief Eq. 1-2): ``z_c = sum_k alpha_ck prod_j x_j**beta_ckj``; multi-class (and binary
with ``use_sigmoid=False``) is a softmax whose analytical gradient with respect to the logits is ``(P - Y) / n``
(the per-sample mean cross-entropy), binary with ``use_sigmoid=True`` one logit and a sigmoid (gradient
``(sigmoid(z) - y) / n``), the logits clipped to +-500 first and a non-finite term replaced by 0 / +-1e10, as
theirs; either is back-propagated through each term; ``lam * sign(theta)`` is added for the L1
term on all constants and exponents; the gradient is clipped to norm 1; a bias-corrected Adam step follows. Each
epoch shuffles the rows with the restart's generator (the one that drew its initialisation) and walks through
them in mini-batches. Early stopping reads the loss they monitor after each step (softmax: ``-mean(Y * log P)``
over the n x C one-hot entries, i.e. cross-entropy / C; sigmoid: the mean binary cross-entropy; both with the
probabilities clipped to [1e-15, 1 - 1e-15]) plus
``lam * |theta|_1``, averaged over the epoch's batches by size; the best epoch is kept, a restart stops after
``patience`` epochs without an improvement larger than ``min_delta``, and the restart of lowest best loss wins.
"""
from __future__ import annotations

import numpy as np

from .model import authors_init


def authors_reference(logX: np.ndarray, y: np.ndarray, *, n_classes: int, n_terms: int, lam: float, lr: float,
                      epochs: int, seed: int, batch_size: int | None = None, use_sigmoid: bool = False,
                      restarts: int = 1, patience: int | None = None, min_delta: float = 1e-6,
                      divide_gradient_by_c: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
    """The authors' update for ``epochs`` epochs (``batch_size`` None: full batch; ``patience`` None: no early
    stop); returns the kept ``(alpha (C, K), beta (C, K, m), monitored loss)``. ``divide_gradient_by_c`` follows
    the gradient of CE / C instead (this chapter's earlier, unfaithful objective), to show that a comparison
    tells the two apart."""
    logX = np.asarray(logX, float)
    y = np.asarray(y, int)
    n, m = logX.shape
    sigmoid = int(n_classes) == 2 and use_sigmoid
    C = 1 if sigmoid else int(n_classes)
    bs = n if batch_size is None else int(batch_size)
    best_all = (None, None, np.inf)
    with np.errstate(over="ignore"):  # exp(-z) of a large logit: sigmoid 0, as it should
        return _run(logX, y, n, m, C, sigmoid, bs, int(n_terms), lam, lr, int(epochs), int(seed), int(restarts),
                    patience, min_delta, divide_gradient_by_c, best_all)


def _run(logX, y, n, m, C, sigmoid, bs, n_terms, lam, lr, epochs, seed, restarts, patience, min_delta,
         divide_gradient_by_c, best_all):
    for r in range(int(restarts)):
        rng = np.random.default_rng(int(seed) + r)
        a, b = authors_init(rng, C, int(n_terms), m)
        mom, vel, t = [np.zeros_like(a), np.zeros_like(b)], [np.zeros_like(a), np.zeros_like(b)], 0
        best, keep, wait = np.inf, (a.copy(), b.copy()), 0
        for _ in range(int(epochs)):
            perm = rng.permutation(n)
            total = 0.0
            for start in range(0, n, bs):
                rows = perm[start:start + bs]
                U, yb = logX[rows], y[rows]
                T = np.exp(np.einsum("nm,ckm->nck", U, b))
                Z = _logits(a, T)
                if sigmoid:
                    D = (_sigmoid(Z[:, 0]) - yb)[:, None] / len(rows)
                else:
                    D = (_softmax(Z) - np.eye(C)[yb]) / len(rows) / (C if divide_gradient_by_c else 1)
                g = [np.einsum("nc,nck->ck", D, T) + lam * np.sign(a),
                     np.einsum("nc,nck,nm->ckm", D, a[None] * T, U) + lam * np.sign(b)]
                norm = np.sqrt(sum(float((x ** 2).sum()) for x in g))
                if norm > 1.0:
                    g = [x / norm for x in g]
                if not all(np.all(np.isfinite(x)) for x in g):  # their skipped step: no update, no loss counted
                    continue
                t += 1
                for i in range(2):
                    mom[i] = 0.9 * mom[i] + 0.1 * g[i]
                    vel[i] = 0.999 * vel[i] + 0.001 * g[i] ** 2
                a = a - lr * (mom[0] / (1 - 0.9 ** t)) / (np.sqrt(vel[0] / (1 - 0.999 ** t)) + 1e-8)
                b = b - lr * (mom[1] / (1 - 0.9 ** t)) / (np.sqrt(vel[1] / (1 - 0.999 ** t)) + 1e-8)
                Z = _logits(a, np.exp(np.einsum("nm,ckm->nck", U, b)))
                if sigmoid:
                    p = np.clip(_sigmoid(Z[:, 0]), 1e-15, 1 - 1e-15)
                    data = -np.mean(yb * np.log(p) + (1 - yb) * np.log(1 - p))
                else:
                    data = -np.mean(np.eye(C)[yb] * np.log(np.clip(_softmax(Z), 1e-15, 1 - 1e-15)))
                total += (data + lam * (np.abs(a).sum() + np.abs(b).sum())) * len(rows)
            loss = total / n
            if loss < best - min_delta:
                best, keep, wait = loss, (a.copy(), b.copy()), 0
            else:
                wait += 1
                if patience is not None and wait >= patience:
                    break
        if best < best_all[2]:
            best_all = (keep[0], keep[1], best)
    return best_all


def _logits(a, T):
    """Their logits: each term ``const * prod x**beta``, a non-finite term replaced by 0 / +-1e10."""
    term = a[None] * T
    return np.where(np.isfinite(term), term, np.nan_to_num(term, nan=0.0, posinf=1e10, neginf=-1e10)).sum(-1)


def _sigmoid(z):
    return 1 / (1 + np.exp(-np.clip(z, -500, 500)))


def _softmax(Z):
    Z = np.clip(Z, -500, 500)
    E = np.exp(Z - Z.max(1, keepdims=True))
    return E / E.sum(1, keepdims=True)


def authors_softmax_reference(logX: np.ndarray, y: np.ndarray, *, n_classes: int, n_terms: int, lam: float, lr: float,
                              epochs: int, seed: int, min_delta: float = 1e-6,
                              divide_gradient_by_c: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
    """Full-batch run of the authors' multi-class update for ``epochs`` steps (:func:`authors_reference`)."""
    return authors_reference(logX, y, n_classes=n_classes, n_terms=n_terms, lam=lam, lr=lr, epochs=epochs, seed=seed,
                             min_delta=min_delta, divide_gradient_by_c=divide_gradient_by_c)
