"""CQF selection (paper §2 and Eq. 4.1), exclusive score buckets (Fig. 9/22) and Perm(k) (§7).

CQF keeps a web document when its score passes the threshold of its LQ score CDF,
``C(s(x)) >= 1 - k``, i.e. ``s(x) >= tau_k`` with ``P_LQ(s >= tau_k) = k``. ``tau_k`` is calibrated on a
*held-out* LQ sample (never the classifier's own negatives), and selection streams fresh documents until
the token budget is filled: no document is ever repeated, so keeping a fraction k costs about budget/k
generated tokens (reported as ``generated`` vs ``kept``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .world import Docs


def check_fraction(k: float, name: str = "k") -> float:
    k = float(k)
    if not (0.0 < k <= 1.0) or np.isnan(k):
        raise ValueError(f"{name} must lie in (0, 1], got {k!r}")
    return k


@dataclass
class ScoreCDF:
    """The empirical CDF of classifier scores on held-out LQ documents."""

    scores: np.ndarray

    def __post_init__(self):
        self.scores = np.sort(np.asarray(self.scores, dtype=float))
        if self.scores.size == 0:
            raise ValueError("ScoreCDF: no calibration scores")
        if not np.all(np.isfinite(self.scores)):
            raise ValueError("ScoreCDF: NaN or infinite calibration scores")

    def tau(self, k: float) -> float:
        """Threshold with P_LQ(s >= tau) = k (the (1-k) quantile); -inf for k = 1 (keep everything)."""
        k = check_fraction(k)
        if k == 1.0:
            return -np.inf
        return float(np.quantile(self.scores, 1.0 - k))

    def cdf(self, s) -> np.ndarray:
        return np.searchsorted(self.scores, np.asarray(s, dtype=float), side="right") / len(self.scores)


def calibrate(clf, lq_holdout: Docs) -> ScoreCDF:
    """Fit the LQ score CDF of ``clf`` on held-out LQ docs; overlapping the training docs is an error."""
    train = getattr(clf, "train_ids_", None)
    if train is not None and np.intersect1d(train, lq_holdout.ids).size:
        raise ValueError("calibration documents overlap the classifier's training documents: "
                         "calibrate tau_k on held-out LQ documents")
    clf.cdf_ = ScoreCDF(clf.score_docs(lq_holdout))
    return clf.cdf_


@dataclass
class Request:
    """One selection from the stream: documents whose score under ``scorer`` lies in [low, high)."""

    scorer: str | None
    low: float = -np.inf
    high: float = np.inf
    budget: int = 0
    n_eval_docs: int = 0


@dataclass
class Selection:
    """The kept training documents, held-out documents of the same distribution, and the costs."""

    train: Docs
    eval: Docs
    generated_tokens: int
    kept_tokens: int
    request: Request = field(repr=False, default=None)


def select_many(stream, scorers: dict, requests: dict[str, Request], max_generated_tokens: int,
                featurize) -> dict[str, Selection]:
    """Fill several selections in one pass over a stream of fresh web batches.

    ``scorers``: name -> a function of the batch's feature matrix returning scores; ``featurize``: batch ->
    features. Each request keeps, in stream order, the documents whose score is in [low, high) until its
    budget is filled, then ``n_eval_docs`` more for held-out evaluation. A request that cannot be filled
    within ``max_generated_tokens`` is a ValueError naming generated vs kept tokens.
    """
    for name, r in requests.items():
        if r.budget <= 0:
            raise ValueError(f"request {name}: the token budget must be > 0, got {r.budget}")
        if r.scorer is not None and r.scorer not in scorers:
            raise ValueError(f"request {name}: unknown scorer {r.scorer!r}")
    kept = {n: [] for n in requests}
    kept_tok = {n: 0 for n in requests}
    evals = {n: [] for n in requests}
    n_eval = {n: 0 for n in requests}
    done_at = {}
    generated = 0
    for batch in stream:
        generated += batch.n_tokens
        open_ = [n for n in requests if n not in done_at]
        X = featurize(batch) if any(requests[n].scorer is not None for n in open_) else None
        cache = {}
        for n in open_:
            r = requests[n]
            if r.scorer is None:
                mask = np.ones(len(batch), dtype=bool)
            else:
                if r.scorer not in cache:
                    s = np.asarray(scorers[r.scorer](X), dtype=float)
                    if not np.all(np.isfinite(s)):
                        raise ValueError(f"scorer {r.scorer}: NaN scores")
                    cache[r.scorer] = s
                s = cache[r.scorer]
                mask = (s >= r.low) & (s < r.high)
            idx = np.flatnonzero(mask)
            if kept_tok[n] < r.budget:
                cum = kept_tok[n] + np.cumsum(batch.lengths[idx])
                m = int(np.searchsorted(cum, r.budget) + 1)
                take, idx = idx[:m], idx[m:]
                kept[n].append(batch.take(take))
                kept_tok[n] += int(batch.lengths[take].sum())
            if kept_tok[n] >= r.budget and n_eval[n] < r.n_eval_docs:
                take = idx[: r.n_eval_docs - n_eval[n]]
                evals[n].append(batch.take(take))
                n_eval[n] += len(take)
            if kept_tok[n] >= r.budget and n_eval[n] >= r.n_eval_docs:
                done_at[n] = generated
        if len(done_at) == len(requests):
            break
        if generated >= max_generated_tokens:
            missing = {n: kept_tok[n] for n in requests if n not in done_at}
            raise ValueError(f"the generation cap of {max_generated_tokens} tokens cannot fill every budget: "
                             f"generated {generated}, kept (tokens) {missing}; documents are never repeated")
    out = {}
    for n, r in requests.items():
        out[n] = Selection(Docs.concat(kept[n]), Docs.concat(evals[n]), done_at[n], kept_tok[n], r)
    return out


def cqf_select(stream, clf, k: float, budget: int, max_generated_factor: float = 3.0, n_eval_docs: int = 0) -> Selection:
    """CQF(k) (Eq. 4.1): stream fresh documents, keep those with s(x) >= tau_k until ``budget`` tokens.

    ``clf`` must be calibrated (`calibrate`) on held-out LQ documents. The cap on generated tokens is
    ``max_generated_factor * budget / k``.
    """
    k = check_fraction(k)
    if budget <= 0:
        raise ValueError(f"budget must be > 0 tokens, got {budget}")
    if getattr(clf, "cdf_", None) is None:
        raise ValueError("calibrate the classifier's LQ score CDF first (selection.calibrate)")
    req = {"cqf": Request("clf", clf.cdf_.tau(k), np.inf, int(budget), n_eval_docs)}
    return select_many(stream, {"clf": clf.score_matrix}, req, int(max_generated_factor * budget / k),
                       clf.featurize)["cqf"]


def exclusive_buckets(cdf: ScoreCDF, edges=(0.0, 0.3, 0.7, 0.9, 0.95, 1.0)) -> list[tuple[float, float]]:
    """Score intervals [tau, tau') holding the LQ quantile ranges between consecutive ``edges``
    (Exclusive CQF, Fig. 9/22: buckets, not nested top-k sets)."""
    e = np.asarray(edges, dtype=float)
    if e.ndim != 1 or len(e) < 2 or e[0] != 0.0 or e[-1] != 1.0 or np.any(np.diff(e) <= 0):
        raise ValueError(f"edges must increase from 0 to 1, got {edges}")
    out = []
    for lo, hi in zip(e[:-1], e[1:]):
        low = -np.inf if lo == 0.0 else float(np.quantile(cdf.scores, lo))
        high = np.inf if hi == 1.0 else float(np.quantile(cdf.scores, hi))
        out.append((low, high))
    return out


def perm(docs: Docs, k: float, rng: np.random.Generator) -> Docs:
    """Perm(k) (§7, after Kallini et al. 2024): each document's tokens are shuffled with probability k."""
    k = float(k)
    if not (0.0 <= k <= 1.0) or np.isnan(k):
        raise ValueError(f"Perm probability must lie in [0, 1], got {k!r}")
    shuffled = rng.random(len(docs)) < k
    doc = docs.doc_of_token
    pos = (np.arange(docs.n_tokens) - np.repeat(docs.offsets[:-1], docs.lengths)) / np.maximum(np.repeat(docs.lengths, docs.lengths), 1)
    key = np.where(shuffled[doc], rng.random(docs.n_tokens), pos)
    order = np.lexsort((key, doc))
    return Docs(docs.tokens[order], docs.offsets.copy(), docs.genre.copy(), docs.ids.copy())
