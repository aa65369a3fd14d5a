"""MBR decoders and the noisy-channel decomposition (paper: four channels; formulas: our reconstruction).

The paper decomposes MBR into four weighted channels: the hypothesis->reference likelihood (alpha),
the hypothesis prior (beta), the reference->hypothesis likelihood (gamma) and the reference prior
(delta). Its exact parametrisation could not be retrieved, so the scores below are **our
reconstructions** (brief §2.2), labelled R2 (primary) and R1 (secondary):

R2 (expected-utility form, brief eq. R2)::

    S(h) = sum_{r in uniq(R)} w_delta(r) * [alpha * u(h, r) + gamma * u(r, h)] + beta * lbar(h)
    w_delta(r) = c(r)^(1 - delta) * pi(r)^delta / Z,   pi(r) = exp(lbar(r)),   lbar = log p / |y|

with ``c(r)`` the multiplicity of r among the samples. Special cases (brief table §2.2):
(1, 0, 0, 0) standard MBR (Eikema & Aziz), (0, 0, 1, 0) reverse-direction MBR, (1/2, 0, 1/2, 0)
symmetrised MBR, (1, 0, 0, 1) model-based MBR-L (Jinnai et al. 2023), (0, 1, 0, 0) MAP over samples.
S is homogeneous of degree one in (alpha, beta, gamma) and w_delta is invariant to a constant shift of
lbar, so with ``lambda = gamma / (alpha + gamma)`` the direction mix only (lambda, delta,
beta / (alpha + gamma)) matter for the argmax (checked in the chapter's Theory section).

delta's target: over *distinct* references, ``w_1(r) ∝ pi(r)`` counts each sampled string once, so with M
draws the delta = 1 estimate targets ``sum_r p(r) P(r in sample) f(r) / Z`` with
``P(r in sample) = 1 - (1 - p(r))^M``: the model distribution when M covers the support, its square
``p^2 / Z`` when almost every draw is distinct (the regime of SynTrans; the chapter measures the share).

R1 (probabilistic skeleton, brief eq. R1): a joint ``J_ij ∝ U_ij`` over (hypothesis, reference) pairs
per direction, its marginals and conditionals, and
``S(h_i) = log sum_j exp(alpha log P->(r_j|h_i) + gamma log P<-(h_i|r_j) + beta log pi_H(h_i) + delta log pi_R(r_j))``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from .metrics import ConceptEmbedder, check_utility, utility_matrix

CHANNELS: tuple[str, ...] = ("alpha: hyp->ref likelihood", "beta: hypothesis prior",
                             "gamma: ref->hyp likelihood", "delta: reference prior")

METHODS: dict[str, tuple[float, float, float, float]] = {
    "mbr": (1.0, 0.0, 0.0, 0.0),
    "reverse": (0.0, 0.0, 1.0, 0.0),
    "symmetric": (0.5, 0.0, 0.5, 0.0),
    "model": (1.0, 0.0, 0.0, 1.0),
    "map": (0.0, 1.0, 0.0, 0.0),
}
"""The five known decoders as channel weights (alpha, beta, gamma, delta) of R2."""


def check_weights(weights) -> tuple[float, float, float, float]:
    """(alpha, beta, gamma, delta) as floats; a clear error for a wrong length, non-finite or negative
    weights, or delta outside [0, 1]."""
    try:
        w = tuple(float(x) for x in weights)
    except TypeError:
        raise ValueError(f"weights must be a sequence (alpha, beta, gamma, delta), got {weights!r}") from None
    if len(w) != 4:
        raise ValueError(f"weights must have 4 entries (alpha, beta, gamma, delta), got {len(w)}: {weights!r}")
    if not all(np.isfinite(w)):
        raise ValueError(f"weights must be finite, got {w}")
    if w[0] < 0 or w[1] < 0 or w[2] < 0:
        raise ValueError(f"the channel weights alpha, beta and gamma must be >= 0, got {w}")
    if not 0.0 <= w[3] <= 1.0:
        raise ValueError(f"delta interpolates the reference prior between counts (0) and p (1): it must lie in [0, 1], got {w[3]}")
    if w[0] == w[1] == w[2] == 0:
        raise ValueError("alpha, beta and gamma are all zero: nothing would be scored")
    return w  # type: ignore[return-value]


def from_mix(lam: float, delta: float, beta: float) -> tuple[float, float, float, float]:
    """Channel weights from the normalised form: alpha = 1 - lambda, gamma = lambda."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must lie in [0, 1], got {lam}")
    return (1.0 - lam, float(beta), float(lam), float(delta))


def multiplicities(strings: Sequence[str]) -> np.ndarray:
    """c(r) at the first occurrence of each distinct string, 0 at its repeats (brief pitfall 4)."""
    seen: dict[str, int] = {}
    counts = np.zeros(len(strings))
    for j, s in enumerate(strings):
        if s in seen:
            counts[seen[s]] += 1
        else:
            seen[s] = j
            counts[j] = 1
    return counts


def reference_weights(counts: np.ndarray, ref_lbar: np.ndarray | None, delta: float) -> np.ndarray:
    """w_delta(r) ∝ c(r)^(1-delta) pi(r)^delta over the distinct references (zero at repeats).

    delta = 0: the Monte-Carlo estimate c(r)/M; delta = 1: model-based weights p(r)/sum p (MBMBR-L)."""
    counts = np.asarray(counts, dtype=float)
    if delta == 0.0:
        logw = np.where(counts > 0, np.log(np.where(counts > 0, counts, 1.0)), -np.inf)
    else:
        if ref_lbar is None:
            raise ValueError("delta != 0 needs the references' length-normalised log-probabilities (ref_lbar)")
        logw = np.where(counts > 0, (1 - delta) * np.log(np.where(counts > 0, counts, 1.0)) + delta * ref_lbar, -np.inf)
    return np.exp(logw - logsumexp(logw, axis=-1, keepdims=True))


def channel_scores(U_fwd: np.ndarray, U_rev: np.ndarray, weights, *, ref_counts: np.ndarray | None = None,
                   ref_lbar: np.ndarray | None = None, hyp_lbar: np.ndarray | None = None) -> np.ndarray:
    """R2 score of every hypothesis (brief eq. R2), batched over leading axes.

    ``U_fwd, U_rev``: (..., N, M) with ``U_fwd[i, j] = u(h_i, r_j)``, ``U_rev[i, j] = u(r_j, h_i)``;
    ``ref_counts``: (..., M) multiplicities at first occurrence (:func:`multiplicities`), required when
    delta > 0 (without them every repeat would be weighted again, brief pitfall 4); with delta = 0 and no
    counts every column is one draw (the Monte-Carlo average over the multiset). ``ref_lbar``: (..., M)
    and ``hyp_lbar``: (..., N) length-normalised log-probabilities. Returns (..., N)."""
    a, b, g, d = check_weights(weights)
    U_fwd = np.asarray(U_fwd, dtype=float); U_rev = np.asarray(U_rev, dtype=float)
    if U_fwd.shape != U_rev.shape or U_fwd.ndim < 2:
        raise ValueError(f"U_fwd and U_rev must have the same shape (..., N, M), got {U_fwd.shape} and {U_rev.shape}")
    if not (np.all(np.isfinite(U_fwd)) and np.all(np.isfinite(U_rev))):
        raise ValueError("utility matrices must be finite")
    if ref_counts is None and d > 0 and (a or g):
        raise ValueError("delta > 0 weights distinct references: pass ref_counts=multiplicities(references) "
                         "(repeats would otherwise be counted twice)")
    counts = np.ones(U_fwd.shape[:-2] + U_fwd.shape[-1:]) if ref_counts is None else np.asarray(ref_counts, float)
    score = np.zeros(U_fwd.shape[:-1])
    if a or g:
        w = reference_weights(counts, ref_lbar, d)
        score = score + np.einsum("...ij,...j->...i", a * U_fwd + g * U_rev, w)
    if b:
        if hyp_lbar is None:
            raise ValueError("beta != 0 needs the hypotheses' length-normalised log-probabilities (hyp_lbar)")
        score = score + b * np.asarray(hyp_lbar, dtype=float)
    return score


def r1_terms(U_fwd: np.ndarray, U_rev: np.ndarray, floor: float = 1e-12):
    """The four log-terms of R1 with g(u) = u, from the utility joints ``J ∝ U`` of both directions:
    ``log P->(r_j|h_i)``, ``log P<-(h_i|r_j)`` (both (..., N, M)), and the utility marginals
    ``log P->(h_i)`` (..., N, 1) and ``log P<-(r_j)`` (..., 1, M) (R1-u's priors). Utilities must be finite
    and non-negative (entries below ``floor`` are raised to it, so every log is finite).

    For a symmetric utility with H = R the two conditionals still differ:
    ``log P->(r_j|h_i) - log P<-(h_i|r_j) = log P(r_j) - log P(h_i)``, so R1's alpha and gamma act even
    where R2's direction mix is inert (the chapter's Theory section)."""
    U_fwd = np.asarray(U_fwd, float); U_rev = np.asarray(U_rev, float)
    if U_fwd.shape != U_rev.shape or U_fwd.ndim < 2:
        raise ValueError(f"U_fwd and U_rev must have the same shape (..., N, M), got {U_fwd.shape} and {U_rev.shape}")
    if not (np.all(np.isfinite(U_fwd)) and np.all(np.isfinite(U_rev))) or np.any(U_fwd < 0) or np.any(U_rev < 0):
        raise ValueError("R1 with g(u) = u needs finite, non-negative utilities")
    Jf = np.maximum(U_fwd, floor); Jr = np.maximum(U_rev, floor)
    Jf = Jf / Jf.sum(axis=(-2, -1), keepdims=True); Jr = Jr / Jr.sum(axis=(-2, -1), keepdims=True)
    Pf_h = Jf.sum(-1, keepdims=True)            # P->(h_i)
    Pr_r = Jr.sum(-2, keepdims=True)            # P<-(r_j)
    return np.log(Jf / Pf_h), np.log(Jr / Pr_r), np.log(Pf_h), np.log(Pr_r)


def r1_scores(U_fwd: np.ndarray, U_rev: np.ndarray, weights, *, prior_h: np.ndarray | None = None,
              prior_r: np.ndarray | None = None, floor: float = 1e-12) -> np.ndarray:
    """R1 score (brief §2.2, our reconstruction) with g(u) = u (:func:`r1_terms`); priors default to the
    utility marginals ``P->(h)`` and ``P<-(r)`` (R1-u). Shapes as :func:`channel_scores`."""
    a, b, g, d = check_weights(weights)
    for name, prior in (("prior_h", prior_h), ("prior_r", prior_r)):
        if prior is not None and (not np.all(np.isfinite(prior)) or np.any(np.asarray(prior) <= 0)):
            raise ValueError(f"{name} must be positive probabilities")
    log_r_given_h, log_h_given_r, pi_h, pi_r = r1_terms(U_fwd, U_rev, floor)
    if prior_h is not None:
        pi_h = np.log(np.asarray(prior_h, float))[..., :, None]
    if prior_r is not None:
        pi_r = np.log(np.asarray(prior_r, float))[..., None, :]
    return logsumexp(a * log_r_given_h + g * log_h_given_r + b * pi_h + d * pi_r, axis=-1)


@dataclass
class MBRResult:
    """The output of :func:`mbr_decode`."""

    index: int
    hypothesis: str
    scores: np.ndarray
    weights: tuple[float, float, float, float]
    U_fwd: np.ndarray
    U_rev: np.ndarray


def mbr_decode(hypotheses: Sequence[str], references: Sequence[str] | None = None, *, utility: str = "chrf",
               method: str = "mbr", weights=None, hyp_lbar=None, ref_lbar=None,
               embedder: ConceptEmbedder | None = None) -> MBRResult:
    """Pick one hypothesis by MBR or one of its channel-weighted variants (R2).

    ``method``: ``"mbr"``, ``"reverse"``, ``"symmetric"``, ``"model"`` (MBMBR-L), ``"map"`` or ``"nc"``
    (noisy-channel with explicit ``weights = (alpha, beta, gamma, delta)``). References default to the
    hypotheses (H = R, the usual sampling-based MBR). ``hyp_lbar`` / ``ref_lbar``: *length-normalised*
    log-probabilities ``log p(y|x) / |y|`` (brief pitfall 5), not raw log-probabilities. The utility
    matrices are computed once for both directions."""
    if isinstance(hypotheses, str) or len(hypotheses) == 0:
        raise ValueError("hypotheses must be a non-empty list of strings")
    same = references is None
    references = list(hypotheses) if same else list(references)
    if len(references) == 0:
        raise ValueError("references must be a non-empty list of strings")
    check_utility(utility)
    if method == "nc":
        if weights is None:
            raise ValueError("method='nc' needs weights=(alpha, beta, gamma, delta)")
        w = check_weights(weights)
    elif method in METHODS:
        if weights is not None:
            raise ValueError(f"weights are only used with method='nc' (method {method!r} fixes them)")
        w = METHODS[method]
    else:
        raise ValueError(f"unknown method {method!r}; valid methods are {sorted(METHODS) + ['nc']}")
    hyp_lbar = None if hyp_lbar is None else np.asarray(hyp_lbar, float)
    ref_lbar = None if ref_lbar is None else np.asarray(ref_lbar, float)
    if same and ref_lbar is None:
        ref_lbar = hyp_lbar
    for name, arr, n in (("hyp_lbar", hyp_lbar, len(hypotheses)), ("ref_lbar", ref_lbar, len(references))):
        if arr is not None and (arr.shape != (n,) or not np.all(np.isfinite(arr))):
            raise ValueError(f"{name} must be {n} finite numbers, got shape {arr.shape}")
    U_fwd, U_rev = utility_matrix(list(hypotheses), references, utility, embedder)
    scores = channel_scores(U_fwd, U_rev, w, ref_counts=multiplicities(references), ref_lbar=ref_lbar, hyp_lbar=hyp_lbar)
    i = int(np.argmax(scores))
    return MBRResult(i, hypotheses[i], scores, w, U_fwd, U_rev)
