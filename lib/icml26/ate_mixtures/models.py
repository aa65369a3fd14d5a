"""Mixture models on the hypercube {0,1}^n: exact enumeration and the pieces a Glauber sampler needs.

Notation follows the research brief ``papers/ate-mixtures.md`` (Gay, He, Kocurek, O'Donnell,
arXiv 2506.23456, Section 2): a mixture ``mu = sum_a rho(a) mu_a`` of ``k`` components on
``Omega = {0,1}^n``. A state ``x`` is stored as the integer ``sum_i x_i 2^i`` (bit ``i`` is coordinate
``i``), so flipping coordinate ``i`` is ``x ^ (1 << i)``.

* :class:`ProductMixture`: components ``Bern(p_a1) x ... x Bern(p_an)``; each is exactly 1-ATE
  (models M1, M2 of the brief).
* :class:`CurieWeissMixture`: components ``mu_a(x) ∝ exp(beta/(2n) M^2 + h_a M)``, ``M = sum_i (2x_i-1)``
  (model M3; high temperature, ATE constant O(1) but not known exactly).

Exact arrays (``components``, ``mu``, ``posterior``) enumerate all ``2^n`` states and are limited to
``n <= MAX_EXACT_N``; the Monte-Carlo :class:`~icml26.ate_mixtures.glauber.GlauberSampler` has no limit.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
from scipy.special import gammaln, logsumexp

MAX_EXACT_N = 16
"""Largest n for exact enumeration (2^16 = 65536 states)."""


def check_exact_n(n: int) -> int:
    """``n`` if ``{0,1}^n`` can be enumerated exactly, else a ValueError pointing to the MC sampler."""
    if n > MAX_EXACT_N:
        raise ValueError(
            f"n = {n} is too large for exact enumeration of {{0,1}}^n (2^{n} states; the limit is "
            f"n <= {MAX_EXACT_N}). Use the Monte-Carlo sampler icml26.ate_mixtures.GlauberSampler "
            f"(vectorised Glauber chains) for larger n."
        )
    return n


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return int(n)


def check_weights(weights, k: int | None = None) -> np.ndarray:
    """Mixture weights: finite, in [0, 1], summing to 1 (to 1e-9)."""
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"weights must be a non-empty 1-d array, got shape {w.shape}")
    if k is not None and w.size != k:
        raise ValueError(f"expected {k} mixture weights (one per component), got {w.size}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"weights must be finite, got {w}")
    if np.any(w < 0) or np.any(w > 1):
        raise ValueError(f"weights must lie in [0, 1], got {w}")
    if abs(w.sum() - 1.0) > 1e-9:
        raise ValueError(f"weights must sum to 1, got sum {w.sum():.12g}")
    return w


def check_probabilities(p, name: str = "probabilities") -> np.ndarray:
    """An array of probabilities: finite and in [0, 1]."""
    a = np.asarray(p, dtype=float)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    if np.any(a < 0) or np.any(a > 1):
        bad = a[(a < 0) | (a > 1)]
        raise ValueError(f"{name} must lie in [0, 1], got values such as {bad[:3]}")
    return a


def sample_indices(mu: np.ndarray, shape, rng: np.random.Generator) -> np.ndarray:
    """I.i.d. draws of state indices from the probability vector ``mu`` (inverse-CDF), array of ``shape``."""
    cdf = np.cumsum(mu)
    u = rng.random(shape) * cdf[-1]
    return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)


def states(n: int) -> np.ndarray:
    """All of {0,1}^n as a ``(2^n, n)`` uint8 array; row ``x`` holds the bits of the integer ``x``."""
    check_exact_n(_check_n(n))
    idx = np.arange(2 ** n, dtype=np.int64)
    return ((idx[:, None] >> np.arange(n)) & 1).astype(np.uint8)


class Mixture:
    """Base class: a k-component mixture on {0,1}^n with weights ``rho`` (Section 2 of the brief)."""

    n: int
    weights: np.ndarray

    @property
    def k(self) -> int:
        return int(self.weights.size)

    # --- exact enumeration -------------------------------------------------------------------
    def _component_probs(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @cached_property
    def components(self) -> np.ndarray:
        """``(k, 2^n)`` exact component probabilities ``mu_a(x)`` (each row sums to 1)."""
        check_exact_n(self.n)
        return self._component_probs()

    @cached_property
    def mu(self) -> np.ndarray:
        """``(2^n,)`` the mixture ``mu = sum_a rho_a mu_a``."""
        return self.weights @ self.components

    @cached_property
    def posterior(self) -> np.ndarray:
        """``(k, 2^n)`` posterior ``p(a|x) = rho_a mu_a(x) / mu(x)`` (0 where ``mu(x) = 0``)."""
        joint = self.weights[:, None] * self.components
        with np.errstate(invalid="ignore", divide="ignore"):
            post = np.where(self.mu > 0, joint / self.mu, 0.0)
        return post

    def sample(self, m: int, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """``m`` i.i.d. exact samples of ``mu`` as state indices, shape ``size + (m,)``."""
        if m < 1:
            raise ValueError(f"need at least one sample, got m = {m}")
        return sample_indices(self.mu, size + (int(m),), rng)

    def sample_states(self, m: int, rng: np.random.Generator) -> np.ndarray:
        """``(m, n)`` uint8 exact samples (for any n: draw the component, then sample it)."""
        a = rng.choice(self.k, size=int(m), p=self.weights)
        return self._sample_components(a, rng)

    def _sample_components(self, a: np.ndarray, rng: np.random.Generator) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def log_weight_by_ones(self) -> np.ndarray | None:
        """``log mu(x)`` as a function of ``|x|`` (length ``n + 1``) when ``mu`` is exchangeable, else ``None``.

        For an exchangeable ``mu`` the number of ones ``|x|`` under Glauber dynamics is itself a Markov
        chain (a birth-death chain on ``{0..n}``), exact at any ``n`` (:func:`~icml26.ate_mixtures.lumped_chain`).
        """
        return None

    # --- Monte-Carlo interface (GlauberSampler) ----------------------------------------------
    def mc_init(self, X: np.ndarray):  # pragma: no cover - abstract
        """Sufficient statistics of chains ``X`` (C, n) for incremental site updates."""
        raise NotImplementedError

    def mc_prob_one(self, stats, X: np.ndarray, sites: np.ndarray) -> np.ndarray:  # pragma: no cover
        """``P(x_i = 1 | x_{-i})`` under the mixture for chain c at site ``sites[c]``."""
        raise NotImplementedError

    def mc_update(self, stats, X: np.ndarray, sites: np.ndarray, new: np.ndarray):  # pragma: no cover
        raise NotImplementedError


class ProductMixture(Mixture):
    """Mixture of product Bernoulli measures: ``mu_a = prod_i Bern(marginals[a, i])``.

    Product measures satisfy 1-ATE (Definition 2 with c = 1), so this is the setting of our
    self-contained special case (T*) of the paper's Theorem 4.
    """

    def __init__(self, weights, marginals):
        m = np.array(check_probabilities(marginals, "component marginals"), dtype=float)
        if m.ndim != 2:
            raise ValueError(f"marginals must be a (k, n) array, got shape {m.shape}")
        m.setflags(write=False)  # cached arrays (components, mu, posterior, MC tables) depend on it
        self.marginals = m
        self.weights = np.array(check_weights(weights, m.shape[0]))
        self.weights.setflags(write=False)
        self.n = _check_n(m.shape[1])

    @classmethod
    def symmetric(cls, n: int, p: float, weights=(0.5, 0.5)) -> "ProductMixture":
        """Model M1: ``rho_1 Bern(p)^n + rho_2 Bern(1-p)^n``, two modes at ``1^n`` and ``0^n``."""
        n = _check_n(n)
        p = float(check_probabilities(p, "p"))
        return cls(weights, np.array([[p] * n, [1.0 - p] * n]))

    @classmethod
    def corners(cls, n: int, k: int, p: float) -> "ProductMixture":
        """``k`` equal-weight components centred on distinct corners of the cube (the k-sweep of F3).

        Corners: ``1^n``, ``0^n``, ``1^{n/2} 0^{n/2}``, ``0^{n/2} 1^{n/2}`` (the first ``k``); component ``a``
        has marginal ``p`` where its corner has a one and ``1 - p`` elsewhere. Needs even ``n`` and ``k <= 4``.
        """
        n = _check_n(n)
        if n % 2:
            raise ValueError(f"corners needs an even n, got {n}")
        if not 1 <= k <= 4:
            raise ValueError(f"corners supports k = 1..4 components, got {k}")
        p = float(check_probabilities(p, "p"))
        h = n // 2
        bits = np.array([[1] * n, [0] * n, [1] * h + [0] * h, [0] * h + [1] * h][:k], dtype=float)
        return cls(np.full(k, 1.0 / k), np.where(bits == 1, p, 1.0 - p))

    @classmethod
    def random(cls, n: int, k: int, rng: np.random.Generator, low: float = 0.1, high: float = 0.9) -> "ProductMixture":
        """Model M2: ``k`` random product components (marginals U[low, high]), Dirichlet(1) weights."""
        n = _check_n(n)
        w = rng.dirichlet(np.ones(k))
        return cls(w / w.sum(), rng.uniform(low, high, size=(k, n)))

    def _component_probs(self) -> np.ndarray:
        X = states(self.n).astype(bool)
        out = np.empty((self.k, X.shape[0]))
        for a in range(self.k):
            p = self.marginals[a]
            out[a] = np.prod(np.where(X, p, 1.0 - p), axis=1)
        return out

    def _sample_components(self, a, rng):
        return (rng.random((a.size, self.n)) < self.marginals[a]).astype(np.uint8)

    def log_weight_by_ones(self) -> np.ndarray | None:
        if not np.all(self.marginals == self.marginals[:, :1]):
            return None  # not exchangeable
        j = np.arange(self.n + 1)[None, :]
        p = self.marginals[:, :1]
        with np.errstate(divide="ignore"):
            logs = np.log(self.weights)[:, None] + j * np.log(p) + (self.n - j) * np.log1p(-p)
        return logsumexp(logs, axis=0)

    # log-likelihood per component, maintained incrementally as a (k, C) array (reductions over k rows
    # are element-wise across rows, much faster than reducing a short last axis)
    def _site_logs(self):
        if getattr(self, "_logs", None) is None:  # marginals are read-only, so the table never goes stale
            with np.errstate(divide="ignore"):
                l1, l0 = np.log(self.marginals), np.log1p(-self.marginals)
            table = np.empty((self.k, 2 * self.n))  # column 2i + b: log P_a(x_i = b)
            table[:, 0::2], table[:, 1::2] = l0, l1
            self._logs = (table, l1 - l0, np.log(self.weights)[:, None],
                          bool(np.all(np.isfinite(l1)) and np.all(np.isfinite(l0))))
        return self._logs

    def mc_init(self, X):
        table = self._site_logs()[0]
        Xb = X.astype(bool)
        return np.stack([np.where(Xb, table[a, 1::2], table[a, 0::2]).sum(axis=1) for a in range(self.k)])

    def mc_prob_one(self, L, X, sites):
        table, _, logw, finite = self._site_logs()
        cur = X.ravel()[np.arange(X.shape[0]) * X.shape[1] + sites]
        rest = L - table[:, 2 * sites + cur]  # log mu_a(x_{-i}) up to constants, (k, C)
        rest += logw
        if not finite:  # marginals at 0 or 1: -inf - -inf
            rest = np.where(np.isnan(rest), -np.inf, rest)
        rest -= rest.max(axis=0)
        w = np.exp(rest, out=rest)
        return (w * self.marginals[:, sites]).sum(axis=0) / w.sum(axis=0)

    def mc_update(self, L, X, sites, new):
        dl = self._site_logs()[1]
        flat = np.arange(X.shape[0]) * X.shape[1] + sites
        Xf = X.reshape(-1)
        change = new.astype(np.int8) - Xf[flat].astype(np.int8)  # +1: 0 -> 1, -1: 1 -> 0, 0: unchanged
        moved = np.flatnonzero(change)
        Xf[flat] = new
        if moved.size:
            if self._site_logs()[3]:
                L[:, moved] += change[moved] * dl[:, sites[moved]]
            else:  # marginals at 0 or 1: -inf + inf would give NaN, recompute the moved chains from scratch
                L[:, moved] = self.mc_init(X[moved])
        return L


class CurieWeissMixture(Mixture):
    """Mixture of Curie-Weiss models ``mu_a(x) ∝ exp(beta/(2n) M(x)^2 + h_a M(x))``, ``M = sum_i (2x_i - 1)``.

    Model M3 of the brief: at ``beta < 1`` each component is a high-temperature mean-field Ising model
    (ATE/MLSI with an O(1) constant, not known exactly), the fields ``h_a`` of opposite sign make the
    mixture bimodal. These components are not product measures; they satisfy ATE (hence MLSI), with
    constants the chapter estimates by exact enumeration (about 1.5 at ``beta = 0.5``, 3 at ``beta = 0.9``).
    They are *not* instances of MLSI without ATE: the chapter has no such component.
    """

    def __init__(self, n: int, beta: float, fields, weights=None):
        self.n = _check_n(n)
        self.beta = float(beta)
        if not (np.isfinite(self.beta) and 0 <= self.beta < 1):
            raise ValueError(f"beta must lie in [0, 1) (high temperature, where each component is ATE/MLSI), got {beta}")
        self.fields = np.array(fields, dtype=float)
        if self.fields.ndim != 1 or not np.all(np.isfinite(self.fields)):
            raise ValueError("fields must be a finite 1-d array (one field per component)")
        k = self.fields.size
        self.weights = np.array(check_weights(np.full(k, 1.0 / k) if weights is None else weights, k))
        self.weights.setflags(write=False)
        self.fields.setflags(write=False)
        Ms = np.arange(-self.n, self.n + 1, 2, dtype=float)
        logbinom = gammaln(self.n + 1) - gammaln((Ms + self.n) / 2 + 1) - gammaln((self.n - Ms) / 2 + 1)
        self._Ms = Ms
        self._logbinom = logbinom
        self.log_z = np.array([logsumexp(logbinom + self._energy(Ms, h)) for h in self.fields])

    def _energy(self, M, h):
        return self.beta / (2 * self.n) * M ** 2 + h * M

    def _component_probs(self) -> np.ndarray:
        M = (2 * states(self.n).astype(float) - 1).sum(axis=1)
        return np.stack([np.exp(self._energy(M, h) - lz) for h, lz in zip(self.fields, self.log_z)])

    def _sample_components(self, a, rng):
        out = np.empty((a.size, self.n), dtype=np.uint8)
        for comp in range(self.k):
            idx = np.flatnonzero(a == comp)
            if idx.size == 0:
                continue
            logp = self._logbinom + self._energy(self._Ms, self.fields[comp]) - self.log_z[comp]
            Mdraw = rng.choice(self._Ms, size=idx.size, p=np.exp(logp) / np.exp(logp).sum())
            ones = ((Mdraw + self.n) / 2).astype(int)
            for r, j in zip(idx, ones):  # uniform configuration with `j` ones
                row = np.zeros(self.n, dtype=np.uint8)
                row[rng.choice(self.n, size=j, replace=False)] = 1
                out[r] = row
        return out

    def log_weight_by_ones(self) -> np.ndarray:
        M = 2.0 * np.arange(self.n + 1) - self.n
        logs = np.log(self.weights)[:, None] + np.stack([self._energy(M, h) - lz for h, lz in zip(self.fields, self.log_z)])
        return logsumexp(logs, axis=0)

    def mc_init(self, X):
        return (2 * X.astype(np.int64) - 1).sum(axis=1)

    def mc_prob_one(self, M, X, sites):
        rows = np.arange(X.shape[0])
        s = 2 * X[rows, sites].astype(np.int64) - 1
        Mrest = (M - s).astype(float)[:, None]
        logw = np.log(self.weights)[None, :] - self.log_z[None, :]
        up = logw + self._energy(Mrest + 1, self.fields[None, :])
        down = logw + self._energy(Mrest - 1, self.fields[None, :])
        lu, ld = logsumexp(up, axis=1), logsumexp(down, axis=1)
        return 1.0 / (1.0 + np.exp(ld - lu))

    def mc_update(self, M, X, sites, new):
        rows = np.arange(X.shape[0])
        M += 2 * (new.astype(np.int64) - X[rows, sites].astype(np.int64))
        X[rows, sites] = new
        return M


class PairPenaltyMixture(Mixture):
    """Two star-like components: ``mu_1(x) ∝ exp(-J C(|x|, 2))`` (every pair of ones costs ``J``) and its mirror
    ``mu_2(x) = mu_1(1 - x)``, with equal weights by default.

    For large ``J`` each component is close to the uniform law on the star ``{0^n, e_1, ..., e_n}`` (hub ``0^n``,
    leaves ``e_i``): states with two ones carry mass ``(n - 1) e^{-J} / 2`` relative to the leaves. Such a component
    satisfies an MLSI with a constant that stays bounded in ``n`` (the chapter computes it, F2d; on the exact star the
    spikes below give ``Ent / (n E(f, log f)) -> 2`` at most) but no ATE with an ``n``-free constant: a spike
    ``f = M 1_{e_1}`` gives ``Ent / L -> log(1/mu(e_1)) / (log 2 + (n - 1) log(1 + e^{-J}))`` as ``M -> inf``, about
    ``log2(n + 1)`` (only the hub-leaf edge sees the spike, while its entropy is that of a point of mass ``1/(n+1)``).
    With ``J`` fixed the star picture fails once ``n e^{-J}`` is not small; :meth:`star` takes ``J = J0 + 2 log n``, so
    that ``C(n, 2) e^{-J}`` stays below ``e^{-J0} / 2`` and the family is MLSI-only uniformly in ``n``. It is the
    chapter's MLSI-only component: not product, not ATE uniformly in ``n``. ``mu`` depends on ``|x|`` only.
    """

    def __init__(self, n: int, J: float, weights=(0.5, 0.5)):
        self.n = _check_n(n)
        self.J = float(J)
        if not (np.isfinite(self.J) and self.J > 0):
            raise ValueError(f"J must be positive and finite, got {J}")
        self.weights = np.array(check_weights(weights, 2))
        self.weights.setflags(write=False)

    @classmethod
    def star(cls, n: int, J0: float) -> "PairPenaltyMixture":
        """The family with ``J = J0 + 2 log n`` (mass off the star bounded by ``e^{-J0}/2`` at every ``n``)."""
        n = _check_n(n)
        return cls(n, float(J0) + 2 * np.log(n))

    def component_log_by_ones(self) -> np.ndarray:
        """``(2, n + 1)``: ``log mu_a(x)`` as a function of ``|x|`` (normalised)."""
        j = np.arange(self.n + 1, dtype=float)
        logbinom = gammaln(self.n + 1) - gammaln(j + 1) - gammaln(self.n - j + 1)
        energy = np.stack([-self.J * j * (j - 1) / 2, -self.J * (self.n - j) * (self.n - j - 1) / 2])
        return energy - logsumexp(energy + logbinom, axis=1)[:, None]

    def _component_probs(self) -> np.ndarray:
        ones = states(self.n).sum(axis=1)
        return np.exp(self.component_log_by_ones()[:, ones])

    def _sample_components(self, a, rng):
        out = np.zeros((a.size, self.n), dtype=np.uint8)
        j = np.arange(self.n + 1, dtype=float)
        logbinom = gammaln(self.n + 1) - gammaln(j + 1) - gammaln(self.n - j + 1)
        for comp in range(self.k):
            idx = np.flatnonzero(a == comp)
            p = np.exp(self.component_log_by_ones()[comp] + logbinom)
            for r, ones in zip(idx, rng.choice(self.n + 1, size=idx.size, p=p / p.sum())):
                out[r, rng.choice(self.n, size=int(ones), replace=False)] = 1
        return out

    def log_weight_by_ones(self) -> np.ndarray:
        return logsumexp(np.log(self.weights)[:, None] + self.component_log_by_ones(), axis=0)

    def mirror(self) -> np.ndarray:
        """The state permutation ``x -> 1 - x`` (maps component 1 onto component 2)."""
        return (2 ** self.n - 1) - np.arange(2 ** self.n)
