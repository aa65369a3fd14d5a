"""The chapter's experiments (brief §5): SynTrans tasks, candidate sets, utilities, decoders, grids, seeds.

Everything is deterministic given the preset's seed. One *seed* is one independent replicate: fresh
source sentences, fresh samples of ``p_theta`` and fresh true references for the dev and test split of
every task (the two SynTrans worlds themselves are fixed). For every source we keep all N samples of
``p_theta`` as candidates and as pseudo-references (H = R, self-pair included for every decoder, brief
pitfall 8) and draw from the true distribution p*:

* K *oracle* references: ``O[u][s, i] = mean_k u(h_i, r*_k)`` is the evaluation (lower variance than one
  reference; test splits only by default: no claim reads a dev split's);
* (test splits) a Bayes-optimal candidate can be picked with many more draws of p*
  (:func:`bayes_selection`), so regret is measured against an oracle stronger than MBR;
* one *held-out* reference: the dev-split tuning signal ``dev[u][s, i] = u(h_i, r_heldout)``, the
  paper's protocol (one human reference per dev sentence, the utility as the selection metric), and, for the
  null of the channel advice, the same against the next source's held-out reference (``dev_shuffled``);
* (optionally) the planted control's fresh draws of p*, scored in the same pass (:meth:`Study.with_planted`);
* the chrF statistics against every oracle reference, for corpus chrF averaged over K single-reference
  corpora with a standard error (the WMT-style number, brief §5.3 (a)).

**Calibration of the model score.** The ``oracle-noise`` sampler's trace log-probability detects its own
injected errors (within-source Spearman with the oracle chrF of 0.66 on book-sized test splits, 0.69 on task A
and 0.64 on B; measured with :func:`rowwise_spearman`), which makes the hypothesis prior an oracle. The model
score the decoders see is therefore ``calibrated_lbar``: per source,
``lbar_c = mu + sd * (c * z + sqrt(1 - c^2) * eps)`` with ``z`` the standardised trace score and ``eps`` a
score per distinct string that is built without the trace score or any reference. ``eps`` is *structured*
(:func:`string_noise`): a share of it is a preference for short outputs, the length bias of real NMT scores
(the beam-search curse, Stahlberg and Byrne 2019), the rest white noise; within a source it has mean 0 and
variance 1. It is *not* independent of quality: shorter SynTrans candidates have a lower oracle chrF
(within-source Spearman of shortness with it -0.29 on task A, -0.39 on B at book sizes), so ``eps`` alone
(c = 0) is anti-correlated with quality (Spearman -0.20 on A, -0.27 on B). ``c`` (the calibration, in
[0, 1]) is the weight of the trace score in the model score (its correlation with the trace score would be
c if ``eps`` were uncorrelated with ``z``; measured, their within-source correlation is -0.11 on A and -0.16
on B): c = 1 is the self-aware sampler, c = 0 a score that knows only the length preference. Measured at book sizes (mean
of tasks A and B), the within-source Spearman of ``lbar_c`` with the oracle chrF is -0.24 at c = 0, -0.08
at 0.25, 0.11 at 0.5 (the chapter's c), 0.33 at 0.75, 0.48 at 0.9 and 0.66 at 1; the notebook measures
and glues these per run. The candidates, references and utilities do not depend on c, so a sweep over c
changes only what beta and delta can see (and R1-m's prior). A trained model (``seq2seq``) is used as it
is (c = 1).

The channel-weight grid is (lambda, delta, b) with the hypothesis-prior weight ``beta = b * beta_unit``:
``beta_unit = sd_u / sd_lbar``, the mean within-source spread of the MBR expected utility over that of
lbar, both computed from the candidates alone (no reference), so that b is dimensionless and means the
same for every utility (brief pitfall 7). ``b = inf`` is MAP over samples.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp
from scipy.stats import rankdata, spearmanr, zscore

from ..progress import progress
from .decode import METHODS, channel_scores, from_mix, multiplicities, r1_terms, reference_weights
from .metrics import UTILITIES, ConceptEmbedder, corpus_chrf_from_stats, utility_tensors
from .syntrans import NoiseModel, SynTrans, noisy_samples, source_text

INF = math.inf
MBR_CONFIG = (0.0, 0.0, 0.0)
MAP_CONFIG = (0.0, 0.0, INF)
DEV_TIE = 1e-12
"""Dev scores within this of a sub-grid's best are *dev-best*: the dev signal cannot choose between them."""
PLANTED = ("planted oracle",)
"""The positive control's configuration (:meth:`Study.with_planted`)."""
CHANNEL_SUBSETS = ("lambda", "delta", "beta", "all")
"""The sub-grids tuned separately: one channel free, the others at their MBR value ("all": the full grid)."""
TUNING_SUBSETS = CHANNEL_SUBSETS + ("known", "paper")
"""Every sub-grid :func:`channel_subset` knows: the channel sub-grids, ``"known"`` (the five decoders R2 unifies,
brief §2.2 table: MBR, reverse, symmetric, MBR-L and MAP) and ``"paper"`` (:func:`paper_grid`, the z unit's
configurations, plus :data:`PLANTED` when the grid holds it)."""
KNOWN_DECODERS = {"mbr": (0.0, 0.0, 0.0), "reverse": (1.0, 0.0, 0.0), "symmetric": (0.5, 0.0, 0.0),
                  "model": (0.0, 1.0, 0.0), "map": (0.0, 0.0, math.inf)}
"""The known decoders as R2 grid configurations (lambda, delta, b) (:data:`icml26.mbr.METHODS` as weights)."""


@dataclass
class TaskData:
    """One split (dev or test) of one SynTrans task for one seed, with its samples and utility tensors."""

    task: str
    split: str
    seed: int
    trees: list[dict]
    samples: list[list[str]]            # (S, N) candidates = pseudo-references
    lbar_trace: np.ndarray              # (S, N) length-normalised log p_theta of the generation trace
    eps: np.ndarray                     # (S, N) the score's part built without the trace (string_noise): length
                                        # preference + white noise; anti-correlated with quality through length
    counts: np.ndarray                  # (S, N) multiplicity at first occurrence, 0 at repeats
    oracle_refs: list[list[str]]        # (S, K) draws of p*
    heldout: list[str]                  # (S,) one more draw of p*: the dev tuning reference
    calibration: float = 1.0            # c: the trace score's weight in the model score (calibrated_lbar)
    U: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # u -> (fwd, rev), (S, N, N)
    O: dict[str, np.ndarray] = field(default_factory=dict)                     # u -> (S, N) oracle E[u]
    dev: dict[str, np.ndarray] = field(default_factory=dict)                   # u -> (S, N) u(h, r_heldout)
    chrf_stats: dict[str, np.ndarray] = field(default_factory=dict)            # corpus chrF statistics
    true_logp: np.ndarray | None = None  # (S, N) exact log p*(h|x) of every candidate
    planted: dict[str, np.ndarray] = field(default_factory=dict)  # u -> (S,) the planted control's picks
    dev_shuffled: dict[str, np.ndarray] = field(default_factory=dict)  # u -> (S, N) u(h, next source's held-out ref)
    n_planted: int = 0                   # the fresh p* draws those picks used (0: none computed)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_sources(self) -> int:
        return len(self.samples)

    @property
    def n_samples(self) -> int:
        return len(self.samples[0])

    @property
    def lbar(self) -> np.ndarray:
        """The model score (length-normalised log-probability) of every candidate at this calibration."""
        if "lbar" not in self._cache:
            self._cache["lbar"] = calibrated_lbar(self.lbar_trace, self.eps, self.calibration)
        return self._cache["lbar"]

    def recalibrated(self, calibration: float) -> "TaskData":
        """The same samples and utilities, scored by a model with another calibration c."""
        if not 0.0 <= calibration <= 1.0:
            raise ValueError(f"calibration must lie in [0, 1], got {calibration}")
        # what does not read the model score carries over: R2's utility part at delta = 0 (Monte-Carlo weights)
        # and R1's utility terms; the rest (lbar, beta_unit, delta > 0) is recomputed at the new calibration
        keep = {k: v for k, v in self._cache.items()
                if (k[0] == "mix" and k[3] == 0.0) or k[0] == "r1_terms"}
        return dataclasses.replace(self, calibration=float(calibration), _cache=keep)

    def chars(self) -> np.ndarray:
        return np.array([[len("".join(h.split())) for h in hs] for hs in self.samples], dtype=float)

    def tokens(self) -> np.ndarray:
        return np.array([[len(h.split()) for h in hs] for hs in self.samples], dtype=float)


def calibrated_lbar(lbar_trace: np.ndarray, eps: np.ndarray, calibration: float) -> np.ndarray:
    """``mu + sd * (c * z + sqrt(1 - c^2) * eps)`` per source (module docstring): the trace score with its
    within-source mean and spread, standardised and mixed with the non-trace score ``eps``
    (:func:`string_noise`) at weights ``c`` and ``sqrt(1 - c^2)``."""
    lbar_trace = np.asarray(lbar_trace, float); eps = np.asarray(eps, float)
    if lbar_trace.shape != eps.shape or lbar_trace.ndim != 2:
        raise ValueError(f"lbar_trace and eps must both be (S, N), got {lbar_trace.shape} and {eps.shape}")
    if not 0.0 <= calibration <= 1.0:
        raise ValueError(f"calibration must lie in [0, 1], got {calibration}")
    if calibration == 1.0:
        return lbar_trace
    mu = lbar_trace.mean(-1, keepdims=True); sd = lbar_trace.std(-1, keepdims=True)
    z = (lbar_trace - mu) / np.where(sd > 0, sd, 1.0)
    return mu + sd * (calibration * z + math.sqrt(1.0 - calibration ** 2) * eps)


def string_noise(samples: Sequence[Sequence[str]], rng: np.random.Generator, length_bias: float = 0.0) -> np.ndarray:
    """The part of the calibrated model score built without the trace score or any reference, one value per
    candidate, shared by repeats of the same string within a source:
    ``length_bias * z_short + sqrt(1 - length_bias^2) * w``, with ``z_short`` the within-source standardised
    negative token length (a systematic preference for short outputs) and ``w`` a standard normal draw.
    ``length_bias = 0`` is white noise, independent of quality. With ``length_bias > 0`` it is not: where
    shorter candidates are worse, as on SynTrans, it is anti-correlated with quality (module docstring)."""
    if not 0.0 <= length_bias <= 1.0:
        raise ValueError(f"length_bias must lie in [0, 1], got {length_bias}")
    out = rng.standard_normal((len(samples), len(samples[0])))
    if length_bias:
        short = -np.array([[len(h.split()) for h in hs] for hs in samples], dtype=float)
        sd = short.std(-1, keepdims=True)
        z_short = (short - short.mean(-1, keepdims=True)) / np.where(sd > 0, sd, 1.0)
        out = length_bias * z_short + math.sqrt(1.0 - length_bias ** 2) * out
    for s, hs in enumerate(samples):
        first: dict[str, int] = {}
        for i, h in enumerate(hs):
            out[s, i] = out[s, first.setdefault(h, i)]
    return out


def make_world(task: str, seed: int) -> SynTrans:
    return SynTrans.make(task, seed)


def embedder_for(world: SynTrans, dim: int = 32, seed: int = 0) -> ConceptEmbedder:
    """The SoftF1 embedder of one task: its target tokens, synonyms sharing a vector.

    One embedder per task: SoftF1 only compares strings of the same source sentence, and the two
    tasks' pseudo-word vocabularies overlap (:func:`shared_tokens`), so a merged table would give a
    shared token one task's concept and silently break the other's synonym sharing."""
    if not isinstance(world, SynTrans):
        raise ValueError(f"embedder_for takes one SynTrans world (one embedder per task), got {type(world).__name__}")
    return ConceptEmbedder(world.lexicon.concept, dim=dim, seed=seed)


def shared_tokens(worlds: Sequence[SynTrans]) -> set[str]:
    """Target tokens that occur in more than one world's vocabulary."""
    seen: dict[str, int] = {}
    for w in worlds:
        for t in w.lexicon.concept:
            seen[t] = seen.get(t, 0) + 1
    return {t for t, k in seen.items() if k > 1}


def build_split(world: SynTrans, split: str, n_sources: int, n_samples: int, n_oracle: int, seed: int,
                noise: NoiseModel, utilities: Sequence[str], embedder: ConceptEmbedder, sampler=None,
                exact_logp: bool = False, calibration: float = 1.0, length_bias: float = 0.0,
                n_planted: int = 0) -> TaskData:
    """Draw sources, N candidates from p_theta (``oracle-noise``, or ``sampler(trees, n, rng)`` for the
    seq2seq model, always at calibration 1), K oracle references and one held-out reference; compute all
    utility tensors. A dev split may have K = 0 (only its held-out reference is read: the tuning signal). ``length_bias``: the share of the score's non-trace part that prefers short outputs
    (:func:`string_noise`). ``n_planted > 0``: also the planted control's picks (:meth:`Study.with_planted`), from
    ``n_planted`` fresh draws of p* on that control's own random stream (exactly :func:`bayes_selection`'s), scored
    in the same pass as the split's own references."""
    if split not in ("dev", "test"):
        raise ValueError(f"split must be 'dev' or 'test', got {split!r}")
    if n_sources < 1 or n_samples < 2 or n_oracle < (2 if split == "test" else 0):
        raise ValueError(f"need n_sources >= 1, n_samples >= 2 and n_oracle >= 2 (>= 0 on a dev split), got "
                         f"{n_sources}, {n_samples}, {n_oracle}")
    drawn = draw_candidates(world, split, n_sources, n_samples, seed, noise, sampler)
    return score_split(world, split, n_oracle, seed, utilities, embedder, drawn, exact_logp=exact_logp,
                       calibration=calibration, length_bias=length_bias, n_planted=n_planted)


def draw_candidates(world: SynTrans, split: str, n_sources: int, n_samples: int, seed: int, noise: NoiseModel,
                    sampler=None) -> tuple:
    """The first half of :func:`build_split`: the split's sources and their N candidates (the only part that runs the
    sampler, on its device): ``(trees, samples, trace, sampled, rng)``, ``rng`` the split's stream after the
    candidates (:func:`score_split` draws the references from it), ``sampled`` whether a ``sampler`` drew them."""
    if split not in ("dev", "test"):
        raise ValueError(f"split must be 'dev' or 'test', got {split!r}")
    if n_sources < 1 or n_samples < 2:
        raise ValueError(f"need n_sources >= 1 and n_samples >= 2, got {n_sources}, {n_samples}")
    rng = np.random.default_rng([seed, ord(world.name), {"dev": 1, "test": 2}[split]])
    trees = [world.sample_source(rng) for _ in range(n_sources)]
    if sampler is None:
        vocab = world.lexicon.target_vocabulary
        draws = [noisy_samples(world, t, rng, noise, n_samples, vocab) for t in trees]
        samples = [[d[0] for d in ds] for ds in draws]
        trace = np.array([[d[1] for d in ds] for ds in draws])
    else:
        samples, trace = sampler(trees, n_samples, rng)
        trace = np.asarray(trace, float)
    return trees, samples, trace, sampler is not None, rng


def score_split(world: SynTrans, split: str, n_oracle: int, seed: int, utilities: Sequence[str],
                embedder: ConceptEmbedder, drawn: tuple, exact_logp: bool = False, calibration: float = 1.0,
                length_bias: float = 0.0, n_planted: int = 0) -> TaskData:
    """The second half of :func:`build_split` (numpy on the CPU: references, planted draws, every utility tensor),
    from :func:`draw_candidates`'s ``drawn``; a pure function of its arguments, so :func:`run_study` may run it in a
    worker process (``workers``) with the same result."""
    trees, samples, trace, sampled, rng = drawn
    n_sources, n_samples = len(trees), len(samples[0])
    if sampled:
        calibration = 1.0
    refs = [world.sample_references(t, rng, n_oracle + 1) for t in trees]
    oracle, heldout = [r[:n_oracle] for r in refs], [r[n_oracle] for r in refs]
    eps = string_noise(samples, np.random.default_rng([seed, ord(world.name), {"dev": 1, "test": 2}[split], 99]), length_bias)
    data = TaskData(world.name, split, seed, trees, samples, trace, eps,
                    np.stack([multiplicities(s) for s in samples]), oracle, heldout, float(calibration))
    planted_refs = ([[] for _ in trees] if not n_planted else
                    planted_references(world, trees, n_planted, seed, PLANTED_STREAMS[split]))
    # a dev split also scores its candidates against the next source's held-out reference (Study.shuffled_dev)
    shifted = [[heldout[(s + 1) % n_sources]] if split == "dev" else [] for s in range(n_sources)]
    # one pass: candidates against [pseudo-references | oracle references | held-out reference | planted draws | shifted]
    stats: dict[str, np.ndarray] = {}
    both = utility_tensors(samples, [s + o + [h] + q + x for s, o, h, q, x in zip(samples, oracle, heldout, planted_refs, shifted)],
                           utilities, embedder, chrf_stats=stats)
    N, K = n_samples, n_oracle
    if n_planted:
        data.planted = {u: np.argmax(fr[0][:, :, N + K + 1:N + K + 1 + n_planted].mean(-1), axis=-1) for u, fr in both.items()}
        data.n_planted = int(n_planted)
    if split == "dev":
        data.dev_shuffled = {u: fr[0][:, :, -1] for u, fr in both.items()}
    data.U = {u: (fr[0][:, :, :N], fr[1][:, :, :N]) for u, fr in both.items()}
    # a dev split without oracle references (n_oracle = 0: no claim reads them) has no O and no chrF statistics
    data.O = {u: fr[0][:, :, N:N + K].mean(-1) for u, fr in both.items()} if K else {}
    data.dev = {u: fr[0][:, :, N + K] for u, fr in both.items()}
    if stats and K:
        data.chrf_stats = {"m": stats["m"][:, :, :, N:N + K].astype(np.int32), "nh": stats["nh"],
                           "nr": stats["nr"][:, :, N:N + K]}
    if exact_logp:
        data.true_logp = np.array([[world.log_prob(t, h) for h in hs] for t, hs in zip(trees, samples)])
    return data


PLANTED_STREAMS = {"dev": 11, "test": 12}
"""The planted control's random streams of p* draws, one per split kind (:func:`planted_references`)."""


def planted_references(world: SynTrans, trees: Sequence[dict], n_refs: int, seed: int, stream: int) -> list[list[str]]:
    """``n_refs`` fresh draws of p* for each source, from the random stream ``[seed, task, 3, stream]``, apart from
    every other draw of the study (:func:`bayes_selection` and the planted control use these)."""
    rng = np.random.default_rng([seed, ord(world.name), 3, int(stream)])
    return [world.sample_references(t, rng, n_refs) for t in trees]


# ----------------------------------------------------------------------------- decoders

def mix_scores(data: TaskData, utility: str, lam: float, delta: float) -> np.ndarray:
    """The utility part of R2, ``sum_r w_delta(r) [(1 - lambda) u(h, r) + lambda u(r, h)]``: (S, N)."""
    key = ("mix", utility, float(lam), float(delta))
    if key not in data._cache:
        fwd, rev = data.U[utility]
        data._cache[key] = channel_scores(fwd, rev, from_mix(lam, delta, 0.0), ref_counts=data.counts, ref_lbar=data.lbar)
    return data._cache[key]


def beta_unit(data: TaskData, utility: str) -> float:
    """``sd_u / sd_lbar``: the hypothesis-prior weight at which one within-source standard deviation of
    lbar moves the score by one within-source standard deviation of the MBR expected utility (means
    over sources). Computed from the candidates only, so it is available on any split."""
    key = ("beta_unit", utility)
    if key not in data._cache:
        sd_u = float(mix_scores(data, utility, 0.0, 0.0).std(axis=-1).mean())
        sd_l = float(data.lbar.std(axis=-1).mean())
        data._cache[key] = sd_u / sd_l if sd_l > 0 else 0.0
    return data._cache[key]


def select_config(data: TaskData, utility: str, config: tuple[float, float, float]) -> np.ndarray:
    """Selected candidate per source under grid configuration ``(lambda, delta, b)`` (b = inf: MAP,
    ties in lbar broken by the utility part)."""
    lam, delta, b = config
    mix = mix_scores(data, utility, lam, delta)
    if math.isinf(b):
        top = data.lbar == data.lbar.max(axis=-1, keepdims=True)
        return np.argmax(np.where(top, mix, -np.inf), axis=-1)
    if b < 0:
        raise ValueError(f"the hypothesis-prior weight b must be >= 0, got {b}")
    return np.argmax(mix + b * beta_unit(data, utility) * data.lbar, axis=-1)


def select(data: TaskData, utility: str, weights) -> np.ndarray:
    """Index of the selected candidate for every source under explicit R2 channel weights."""
    fwd, rev = data.U[utility]
    s = channel_scores(fwd, rev, weights, ref_counts=data.counts, ref_lbar=data.lbar, hyp_lbar=data.lbar)
    return np.argmax(s, axis=-1)


def evaluate(data: TaskData, idx: np.ndarray) -> dict[str, float]:
    """Mean oracle expected utility of the selected candidates, for every utility."""
    rows = np.arange(data.n_sources)
    return {u: float(O[rows, idx].mean()) for u, O in data.O.items()}


def corpus_chrf_single_refs(data: TaskData, idx: np.ndarray) -> np.ndarray:
    """Corpus chrF of the selections against each of the K single-reference corpora (one oracle
    reference per source): (K,). Its mean and standard error replace one noisy held-out corpus."""
    if not data.chrf_stats:
        raise ValueError("this split was built without chrF statistics (add 'chrf' or 'chrf1' to the utilities)")
    rows = np.arange(data.n_sources)
    m = data.chrf_stats["m"][:, rows, idx, :]                  # (6, S, K)
    nh = data.chrf_stats["nh"][:, rows, idx][:, :, None]       # (6, S, 1)
    return corpus_chrf_from_stats(m, nh, data.chrf_stats["nr"])


def baselines(data: TaskData, utility: str) -> dict[str, np.ndarray]:
    """Selections of the side-by-side decoders: random sample (the first draw), MAP over samples,
    standard / reverse / symmetric / model-based MBR (brief §5.4)."""
    out = {"random": np.zeros(data.n_sources, dtype=int), "map": select_config(data, utility, MAP_CONFIG)}
    for name in ("mbr", "reverse", "symmetric", "model"):
        out[name] = select(data, utility, METHODS[name])
    return out


# ----------------------------------------------------------------------------- channel-weight grid

def grid_configs(lams: Sequence[float], deltas: Sequence[float], betas: Sequence[float],
                 with_map: bool = True) -> list[tuple[float, float, float]]:
    """(lambda, delta, b) configurations: MBR (0, 0, 0) first, so that ties resolve to MBR, and MAP
    (0, 0, inf) once at the end (b = inf makes lambda and delta irrelevant up to ties)."""
    cfgs = [tuple(float(x) for x in c) for c in itertools.product(lams, deltas, betas) if not math.isinf(c[2])]
    if MBR_CONFIG not in cfgs:
        raise ValueError("the grid must contain MBR, (lambda, delta, b) = (0, 0, 0): add 0 to every axis")
    cfgs.sort(key=lambda c: (c != MBR_CONFIG))
    if with_map:
        cfgs.append(MAP_CONFIG)
    return cfgs


def config_index(configs: Sequence[tuple[float, float, float]], config: tuple[float, float, float]) -> int:
    """Position of a configuration in the grid (a clear error when it is absent)."""
    try:
        return list(configs).index(tuple(float(x) for x in config))
    except ValueError:
        raise ValueError(f"configuration {config} is not in the grid") from None


def _is_r2_config(cfg) -> bool:
    """Whether ``cfg`` is one of R2's ``(lambda, delta, b)`` configurations (not :data:`PLANTED`, not R1's)."""
    return (isinstance(cfg, tuple) and len(cfg) == 3
            and all(isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) for x in cfg))


def channel_subset(configs: Sequence[tuple], channel: str, mbr_config: tuple = MBR_CONFIG) -> list[int]:
    """Indices of the sub-grid where only ``channel`` is free (``"all"``: every configuration, of any
    grid, e.g. R1's or one with :data:`PLANTED`; ``"paper"``: :func:`paper_grid` of any grid, with the planted
    configuration when present; ``"known"``: the five decoders of :data:`KNOWN_DECODERS`, R2 only); MBR
    (``mbr_config``) first.

    The one-channel sub-grids are defined on R2's ``(lambda, delta, b)`` grid: a configuration that is not
    such a triple (the planted oracle) belongs to no channel's sub-grid and is left out of it; an R1 grid
    has no such sub-grids (a clear error)."""
    if channel not in TUNING_SUBSETS:
        raise ValueError(f"unknown channel {channel!r}; valid: {TUNING_SUBSETS}")
    if channel == "all":
        m = list(configs).index(mbr_config)
        return [m] + [c for c in range(len(configs)) if c != m]
    if channel == "paper":
        m = list(configs).index(mbr_config)
        keep = set(paper_grid(configs)) | {c for c, cfg in enumerate(configs) if cfg == PLANTED}
        return [m] + [c for c in range(len(configs)) if c != m and c in keep]
    if not _is_r2_config(mbr_config):
        raise ValueError(f"the {channel!r}-only sub-grid is defined on R2's (lambda, delta, b) grid; got MBR "
                         f"configuration {mbr_config!r} (R1's grid has only channel='all')")
    m = config_index(configs, mbr_config)
    if channel == "known":
        known = {tuple(float(x) for x in k) for k in KNOWN_DECODERS.values()}
        return [m] + [c for c, cfg in enumerate(configs) if c != m and _is_r2_config(cfg) and tuple(map(float, cfg)) in known]
    keep = {"lambda": lambda l, d, b: d == 0 and b == 0, "delta": lambda l, d, b: l == 0 and b == 0,
            "beta": lambda l, d, b: l == 0 and d == 0}[channel]
    return [m] + [c for c, cfg in enumerate(configs) if c != m and _is_r2_config(cfg) and keep(*cfg)]


def grid_selections(data: TaskData, utility: str, configs: Sequence[tuple[float, float, float]]) -> np.ndarray:
    """(n_configs, S) selected indices for every configuration."""
    return np.stack([select_config(data, utility, c) for c in configs])


def grid_scores(values: np.ndarray, selections: np.ndarray) -> np.ndarray:
    """Mean over sources of ``values[s, selected]`` for every configuration: (n_configs,)."""
    rows = np.arange(values.shape[0])
    return values[rows[None, :], selections].mean(axis=1)


def zscores(scores: np.ndarray, unit: Sequence[int] | None = None) -> np.ndarray:
    """z = (score - mean over configs) / std over configs (population std, ddof = 0: ``scipy.stats.zscore``'s
    default), our reading of the paper's z-scores. ``unit``: the configurations whose mean and spread define the
    unit (default: all of them; the chapter uses :func:`paper_grid`). A unit whose configurations all score the
    same gives zeros (no configuration differs from MBR) where scipy would give NaN."""
    scores = np.asarray(scores, float)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError(f"scores: one non-empty 1-d vector of configuration scores, got shape {scores.shape}")
    if unit is None:
        return zscore(scores, ddof=0) if scores.std() > 0 else np.zeros_like(scores)
    ref = scores[np.asarray(unit, dtype=int)]
    if ref.size == 0:
        raise ValueError("the z unit needs at least one configuration")
    sd = ref.std()
    return (scores - ref.mean()) / sd if sd > 0 else np.zeros_like(scores)


def z_gain(scores: np.ndarray, pick: int, base: int, unit: Sequence[int] | None = None) -> float:
    """``z[pick] - z[base]`` in the unit of :func:`zscores`: the score difference over the unit's spread."""
    z = zscores(scores, unit)
    return float(z[pick] - z[base])


def crossfit_z_gain(values: np.ndarray, candidates: Sequence[int], base: int, unit: Sequence[int] | None = None,
                    halves: int = 2) -> float:
    """The z-gain of the *optimal* configuration without its in-sample maximum: ``values`` (n_configs, S) are the
    per-source test scores of every configuration; the sources are cut into ``halves`` interleaved folds, the
    configuration with the best mean on the other folds (among ``candidates``) is scored on each fold, as
    :func:`z_gain` against ``base`` in the fold's own unit (:func:`zscores` over ``unit``), and the folds' gains are
    averaged. The argmax over a configuration's own test scores (the digest's "optimal configuration" read
    literally) is biased upward by the winner's curse; this estimate is not (cross-fitting)."""
    values = np.asarray(values, float)
    if values.ndim != 2 or values.shape[1] < 2 * halves:
        raise ValueError(f"values: (n_configs, S) with S >= {2 * halves}, got shape {values.shape}")
    candidates = np.asarray(candidates, dtype=int)
    if candidates.size == 0:
        raise ValueError("crossfit_z_gain needs at least one candidate configuration")
    folds = np.arange(values.shape[1]) % halves
    out = []
    for f in range(halves):
        pick_on, score_on = values[:, folds != f].mean(1), values[:, folds == f].mean(1)
        pick = int(candidates[int(np.argmax(pick_on[candidates]))])
        out.append(z_gain(score_on, pick, base, unit))
    return float(np.mean(out))


def share_on_side(hits: int, trials: int, confidence: float = 0.95):
    """The share of ``trials`` (non-tied (seed, setting) pairs) whose dev-optimal weight lies on the advised side,
    with its exact Clopper-Pearson interval (``scipy.stats.binomtest``), as a :class:`~icml26.stats.SeedSummary`
    (values: the 0/1 outcomes; method ``"exact binomial"``). Its interval lies above 0.5 exactly when the exact
    two-sided sign test rejects "no preference" (p = 1/2) at ``1 - confidence``. No trial: an undefined summary."""
    from scipy.stats import binomtest

    from ..stats import SeedSummary

    hits, trials = int(hits), int(trials)
    if not 0 <= hits <= trials:
        raise ValueError(f"need 0 <= hits <= trials, got {hits}, {trials}")
    values = tuple([1.0] * hits + [0.0] * (trials - hits))
    if trials == 0:
        nan = float("nan")
        return SeedSummary(values, nan, nan, nan, nan, confidence, "undefined")
    p = hits / trials
    ci = binomtest(hits, trials).proportion_ci(confidence_level=confidence, method="exact")
    return SeedSummary(values, p, math.sqrt(p * (1 - p) / trials), float(ci.low), float(ci.high), confidence,
                       "exact binomial")


PAPER_WEIGHT_MAX = 1.0
"""The paper-like sub-grid (:func:`paper_grid`) keeps the configurations whose channel weights all lie in [0, 1]."""


def paper_grid(configs: Sequence[tuple]) -> list[int]:
    """Indices of the *paper-like* sub-grid: the configurations whose four channel weights all lie in
    [0, :data:`PAPER_WEIGHT_MAX`] (our reading of a grid over alpha, beta, gamma, delta): R2's
    ``(lambda, delta, b)`` with finite ``b <= 1`` (no MAP, no b = 2, 4, 8), R1's ``(prior, alpha, beta, gamma,
    delta)`` with ``beta, delta <= 1``. The planted control belongs to no grid. MBR is always in it."""
    out = []
    for i, c in enumerate(configs):
        if _is_r2_config(c):
            lam, delta, b = c
            ok = math.isfinite(b) and b <= PAPER_WEIGHT_MAX
        elif isinstance(c, tuple) and len(c) == 5 and c[0] in ("u", "m"):
            ok = all(0.0 <= float(w) <= PAPER_WEIGHT_MAX for w in c[1:])
        else:
            ok = False
        if ok:
            out.append(i)
    if not out:
        raise ValueError("no configuration of the grid lies in the paper-like sub-grid")
    return out


def intersection_union(summaries: Mapping[Any, Any], check) -> tuple[Any, Any]:
    """The one interval that decides an intersection-union test of "every setting's mean lies in ``check``'s
    region" (an ``at_least`` or ``at_most`` region), from one :class:`~icml26.stats.SeedSummary` per setting:
    `icml26.stats.intersection_union` at the region's bound (an undefined setting first; else one wholly outside,
    the farthest; else the least favourable). Its interval lies inside the region iff every setting's does, and
    wholly outside it iff some setting's does. Returns ``(key, summary)``."""
    from ..stats import intersection_union as iut

    if not summaries:
        raise ValueError("intersection_union needs at least one setting")
    region = check.region()
    if region is None or (math.isinf(region[0]) == math.isinf(region[1])):
        raise ValueError(f"intersection_union needs a one-sided region (at_least or at_most), got {check.describe()}")
    upper = math.isinf(region[0])            # at_most: the region is (-inf, bound]
    return iut(summaries, region[1] if upper else region[0], upper=upper)


def score_correlation(data: TaskData, utility: str, weights) -> float:
    """Mean over sources of the Spearman correlation between a decoder's scores and the oracle
    expected utility of the candidates (F6): how well the decoder ranks by the true MBR objective.
    Sources where either is constant (undefined correlation) are left out."""
    fwd, rev = data.U[utility]
    s = channel_scores(fwd, rev, weights, ref_counts=data.counts, ref_lbar=data.lbar, hyp_lbar=data.lbar)
    return rowwise_spearman(s, data.O[utility])


def rowwise_spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over rows of the Spearman correlation of ``a[s]`` and ``b[s]`` (rows with a constant side left out)."""
    a = rankdata(a, axis=-1); b = rankdata(b, axis=-1)
    a = a - a.mean(-1, keepdims=True); b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    ok = den > 0
    return float(((a * b).sum(-1)[ok] / den[ok]).mean()) if ok.any() else float("nan")


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho; NaN (not 0) when it is undefined (a constant vector)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant input; the NaN says it
        return float(spearmanr(a, b).statistic)


# ----------------------------------------------------------------------------- R1 (brief §2.2, secondary)

R1_MBR_CONFIG = ("u", 1.0, 1.0, 0.0, 0.0)
"""R1-u at (alpha, beta, gamma, delta) = (1, 1, 0, 0): the hypothesis marginal of the utility joint, i.e. MBR."""


def r1_configs(lams: Sequence[float], betas: Sequence[float], deltas: Sequence[float],
               priors: Sequence[str] = ("u", "m")) -> list[tuple[str, float, float, float, float]]:
    """R1 configurations ``(prior, alpha, beta, gamma, delta)`` with alpha = 1 - lambda, gamma = lambda,
    prior exponents beta and delta, for each prior (``"u"``: utility marginals, R1-u; ``"m"``: the model's
    exp(lbar), R1-m); MBR (:data:`R1_MBR_CONFIG`) first."""
    for prior in priors:
        if prior not in ("u", "m"):
            raise ValueError(f"prior must be 'u' (utility marginals) or 'm' (model probabilities), got {prior!r}")
    cfgs = [(prior, 1.0 - l, float(b), float(l), float(d)) for prior in priors for l, b, d in itertools.product(lams, betas, deltas)]
    if R1_MBR_CONFIG not in cfgs:
        cfgs.append(R1_MBR_CONFIG)
    cfgs.sort(key=lambda w: w != R1_MBR_CONFIG)
    return cfgs


def r1_grid_selections(data: TaskData, utility: str, configs: Sequence[tuple[str, float, float, float, float]]) -> np.ndarray:
    """(n_configs, S) R1 selections (:func:`icml26.mbr.r1_scores`), the four log-terms
    (:func:`icml26.mbr.decode.r1_terms`) computed once per split and utility. The hypothesis prior does not
    depend on the reference, so ``beta * log pi_H(h)`` comes out of the log-sum-exp: one log-sum-exp per
    (prior, alpha, gamma, delta), shared by every beta."""
    key = ("r1_terms", utility)
    if key not in data._cache:
        data._cache[key] = r1_terms(*data.U[utility])
    A, G, PH_u, PR_u = data._cache[key]
    priors = {"u": (PH_u[..., 0], PR_u), "m": (data.lbar, data.lbar[:, None, :])}
    inner: dict[tuple, np.ndarray] = {}
    out = []
    for prior, a, b, g, d in configs:
        PH, PR = priors[prior]
        k = (prior, a, g, d)
        if k not in inner:
            inner[k] = logsumexp(a * A + g * G + d * PR, axis=-1)
        out.append(np.argmax(inner[k] + b * PH, axis=-1))
    return np.stack(out)


# ----------------------------------------------------------------------------- statistics

def paired_bootstrap(diffs: Sequence[np.ndarray], n_resamples: int = 1000, seed: int = 0,
                     confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of per-source paired differences pooled over seeds, and its percentile bootstrap interval,
    resampling sources with replacement within each seed (stratified). Returns (mean, low, high)."""
    diffs = [np.asarray(d, float) for d in diffs]
    if not diffs or any(d.ndim != 1 or d.size == 0 for d in diffs):
        raise ValueError("diffs: one non-empty 1-d array of per-source differences per seed")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    n = sum(d.size for d in diffs)
    total = np.zeros(n_resamples)
    for d in diffs:
        total += d[rng.integers(d.size, size=(n_resamples, d.size))].sum(axis=1)
    boot = total / n
    a = (1 - confidence) / 2
    return float(np.concatenate(diffs).mean()), float(np.quantile(boot, a)), float(np.quantile(boot, 1 - a))


# ----------------------------------------------------------------------------- the study

@dataclass
class Study:
    """All splits of every seed and the grid results of one run (the notebook's experiment state).

    Keys: ``splits[(seed, task, split)]``; ``selections[(seed, task, split, u)]``: (n_configs, S);
    ``test[(seed, task, u)]``: oracle expected u of every configuration on test; ``dev[(seed, task, u)]``:
    the single-reference dev score (the tuning signal)."""

    preset: Mapping[str, Any]
    worlds: dict[str, SynTrans]
    embedders: dict[str, ConceptEmbedder]
    seeds: list[int]
    splits: dict[tuple[int, str, str], TaskData]
    configs: list[tuple[float, float, float]]
    selections: dict[tuple[int, str, str, str], np.ndarray]
    test: dict[tuple[int, str, str], np.ndarray]
    dev: dict[tuple[int, str, str], np.ndarray]
    calibration: float
    model: str
    mbr_config: tuple = MBR_CONFIG
    curves: dict[str, list[float]] = field(default_factory=dict)   # trained model per task -> its loss curve
    models: dict[str, Any] = field(default_factory=dict, repr=False)  # trained model per task (full), for its fit to p*

    @property
    def tasks(self) -> list[str]:
        return list(self.preset["tasks"])

    @property
    def utilities(self) -> list[str]:
        return list(self.preset["utilities"])

    @property
    def mbr(self) -> int:
        """Index of standard MBR in the grid (looked up, never assumed)."""
        return list(self.configs).index(self.mbr_config)

    def tuned(self, seed: int, task: str, utility: str, channel: str = "all", tune_task: str | None = None) -> int:
        """Index of the configuration with the best dev score (single held-out reference, the utility as
        metric) within a channel's sub-grid; ties go to MBR, then to the grid order."""
        subset = channel_subset(self.configs, channel, self.mbr_config)
        dev = self.dev[(seed, tune_task or task, utility)][subset]
        return subset[int(np.argmax(dev))]

    def dev_best(self, seed: int, task: str, utility: str, channel: str = "all",
                 subset: Sequence[int] | None = None) -> list[int]:
        """The configurations of a channel's sub-grid (or of ``subset``, in its order) whose dev score lies within
        :data:`DEV_TIE` of its best (MBR first when among them and first in the sub-grid): the ones the dev signal
        cannot choose between."""
        subset = channel_subset(self.configs, channel, self.mbr_config) if subset is None else list(subset)
        if not subset:
            raise ValueError("dev_best needs a non-empty sub-grid")
        dev = np.asarray(self.dev[(seed, task, utility)])[subset]
        return [subset[i] for i in np.flatnonzero(dev >= dev.max() - DEV_TIE)]

    def decodes_as_mbr(self, seed: int, task: str, utility: str, config: int) -> bool:
        """Whether configuration ``config`` selects MBR's candidates on every dev source (it is MBR there)."""
        sel = self.selections[(seed, task, "dev", utility)]
        return bool(np.array_equal(sel[config], sel[self.mbr]))

    def ties_mbr(self, seed: int, task: str, utility: str, channel: str = "all", side=None,
                 subset: Sequence[int] | None = None) -> bool:
        """Whether the dev signal cannot choose between MBR and a *genuinely different* configuration of a sub-grid:
        MBR is dev-best (:meth:`dev_best`) together with another configuration that differs from it on
        ``side(config)`` when given (e.g. the side of a piece of advice; None: nothing to compare, ignored), else in
        the candidates it selects on the dev split (another decoder there). A strict MBR optimum is no tie: the dev
        signal prefers MBR, and :meth:`tuned` returns it by that preference; nor is a configuration that decodes as
        MBR does (any lambda under a symmetric utility, I3). ``subset``: another sub-grid than the channel's.
        (Before the fix this was true whenever MBR was dev-best, a strict preference included.)"""
        best = self.dev_best(seed, task, utility, channel, subset)
        if self.mbr not in best or len(best) < 2:
            return False
        if side is None:
            return any(not self.decodes_as_mbr(seed, task, utility, i) for i in best if i != self.mbr)
        return len({side(self.configs[i]) for i in best} - {None}) > 1

    def per_source(self, seed: int, task: str, utility: str, config: int, metric: str | None = None,
                   split: str = "test") -> np.ndarray:
        """Oracle expected ``metric`` (default: the utility) of configuration ``config``'s selections: (S,)."""
        d = self.splits[(seed, task, split)]
        sel = self.selections[(seed, task, split, utility)][config]
        return d.O[metric or utility][np.arange(d.n_sources), sel]

    def gain(self, task: str, utility: str, channel: str = "all", tune_task: str | None = None) -> tuple[list[float], list[float]]:
        """Per-seed test scores (tuned, MBR) of a channel's dev-tuned configuration: two lists over seeds."""
        tuned = [float(self.test[(s, task, utility)][self.tuned(s, task, utility, channel, tune_task)]) for s in self.seeds]
        base = [float(self.test[(s, task, utility)][self.mbr]) for s in self.seeds]
        return tuned, base

    def source_gains(self, task: str, utility: str, channel: str = "all", tune_task: str | None = None) -> list[np.ndarray]:
        """Per-source test differences (tuned - MBR), one array per seed (for the paired bootstrap)."""
        return [self.per_source(s, task, utility, self.tuned(s, task, utility, channel, tune_task))
                - self.per_source(s, task, utility, self.mbr) for s in self.seeds]

    def recalibrated(self, calibration: float) -> "Study":
        """The same samples and utilities, with the sampler's log-probabilities at another calibration."""
        splits = {k: d.recalibrated(calibration) for k, d in self.splits.items()}
        sel, test, dev = evaluate_grid(splits, self.configs, self.utilities)
        return dataclasses.replace(self, splits=splits, selections=sel, test=test, dev=dev, calibration=float(calibration))

    def r1(self, configs: Sequence[tuple[str, float, float, float, float]]) -> "Study":
        """The same splits under R1's grid (:func:`r1_configs`): tuned and compared with MBR exactly like R2's."""
        sel, test, dev = evaluate_grid(self.splits, configs, self.utilities, selector=r1_grid_selections)
        return dataclasses.replace(self, configs=list(configs), selections=sel, test=test, dev=dev, mbr_config=R1_MBR_CONFIG)

    def shuffled_dev(self) -> "Study":
        """The same grid, tuned on a *shuffled* dev signal: every dev source's held-out reference replaced by the
        next source's (a cyclic shift within the split), so the signal keeps the utility's generic preferences
        (length, frequent tokens) and loses what it says about this source. The null of the channel-advice
        claims: a dev optimum that this signal reproduces says nothing about the source. Test scores unchanged."""
        dev = {}
        for (seed, task, split), d in self.splits.items():
            if split != "dev":
                continue
            signal = d.dev_shuffled                          # computed with the split (build_split)
            if not set(self.utilities) <= set(signal):
                key = ("dev_shuffled", tuple(self.utilities))
                if key not in d._cache:
                    other = np.roll(np.arange(d.n_sources), -1)
                    both = utility_tensors(d.samples, [[d.heldout[j]] for j in other], self.utilities, self.embedders[task])
                    d._cache[key] = {u: fr[0][:, :, 0] for u, fr in both.items()}
                signal = d._cache[key]
            for u in self.utilities:
                dev[(seed, task, u)] = grid_scores(signal[u], self.selections[(seed, task, split, u)])
        return dataclasses.replace(self, dev=dev)

    def with_planted(self, n_refs: int) -> "Study":
        """This grid plus a *planted* configuration, :data:`PLANTED`, that selects on every split the candidate
        with the best expected utility over ``n_refs`` fresh draws of p* (:func:`bayes_selection`), drawn apart
        from the references that score it (a test split's K oracle references, a dev split's held-out one).
        Its advantage is then the same on dev and test and its test score is not in-sample. Tuning and testing it
        runs G1's pipeline on an effect present by construction: the positive control of the gain claims.

        (Revision 2 selected it with the split's own oracle references: 4 on dev, a weak oracle the dev tuning
        rarely preferred, and on test the same 32 that score it, an in-sample advantage G1's configurations never
        have; the control then measured that mismatch, not the pipeline's power.)"""
        sel, test, dev = dict(self.selections), dict(self.test), dict(self.dev)
        for (seed, task, split), d in self.splits.items():
            picks = (d.planted if d.n_planted == n_refs and set(self.utilities) <= set(d.planted) else
                     bayes_selection(self.worlds[task], d, self.utilities, n_refs, d.n_sources, seed,
                                     self.embedders[task], stream=PLANTED_STREAMS[split]))
            for u in self.utilities:
                planted = picks[u]
                sel[(seed, task, split, u)] = np.vstack([self.selections[(seed, task, split, u)], planted[None]])
                values = d.O[u] if split == "test" else d.dev[u]
                score = values[np.arange(d.n_sources), planted].mean()
                (test if split == "test" else dev)[(seed, task, u)] = np.append((self.test if split == "test" else self.dev)[(seed, task, u)], score)
        return dataclasses.replace(self, configs=list(self.configs) + [PLANTED], selections=sel, test=test, dev=dev)


def evaluate_grid(splits: Mapping[tuple[int, str, str], TaskData], configs, utilities: Sequence[str],
                  selector=None):
    """Selections of every configuration on every split (``selector(data, utility, configs)``, default
    R2's :func:`grid_selections`), their test oracle scores and dev scores."""
    selector = selector or grid_selections
    sel, test, dev = {}, {}, {}
    for (seed, task, split), d in splits.items():
        for u in utilities:
            s = selector(d, u, configs)
            sel[(seed, task, split, u)] = s
            if split == "test":
                test[(seed, task, u)] = grid_scores(d.O[u], s)
            else:
                dev[(seed, task, u)] = grid_scores(d.dev[u], s)
    return sel, test, dev


def split_workers(requested: int, n_jobs: int) -> int:
    """Worker processes for :func:`run_study`'s utility stage: the preset's ``workers`` (default 1: every split in
    this process), capped by the splits, the cores less one (this process samples) and ``ICML26_CPUS`` (`repro
    book` running chapters side by side)."""
    import os

    cap = max(1, (os.cpu_count() or 1) - 1)
    return max(1, min(int(requested), int(n_jobs), cap, int(os.environ.get("ICML26_CPUS", requested))))


def run_study(p: Mapping[str, Any], sampler_factory=None, show_progress: bool = True) -> Study:
    """Build dev/test splits of every task for every seed and evaluate the whole (lambda, delta, b) grid.

    ``p["workers"] > 1`` (the `full` preset's `gpu` variant): the candidates are drawn here, split after split (the
    sampler's device), and each split's utilities (CPU numpy, the study's largest cost) are computed in a pool of
    that many single-thread worker processes while the next split samples; :func:`score_split` is a pure function
    of what it is sent, so the splits are the same as with one process."""
    for key in ("seed", "n_seeds", "tasks", "utilities", "n_sources", "n_samples", "n_oracle", "lams", "deltas", "betas"):
        if key not in p:
            raise ValueError(f"preset is missing {key!r}")
    if p["n_seeds"] < 1:
        raise ValueError(f"n_seeds must be >= 1, got {p['n_seeds']}")
    model = p.get("model", "oracle-noise")
    if model not in ("oracle-noise", "seq2seq"):
        raise ValueError(f"unknown model {model!r}; valid: 'oracle-noise', 'seq2seq'")
    worlds = {t: make_world(t, p["seed"]) for t in p["tasks"]}
    if model == "seq2seq" and sampler_factory is None:
        from ..seeding import device
        from .seq2seq import Seq2SeqConfig, seq2seq_sampler_factory

        sampler_factory = seq2seq_sampler_factory(Seq2SeqConfig(**p["seq2seq"]), seed=p["seed"], device=device(),
                                                  progress=progress if show_progress else None)
    embedders = {t: embedder_for(w, dim=p["embed_dim"], seed=p["seed"]) for t, w in worlds.items()}
    noise = NoiseModel(**p["noise"])
    calibration = float(p.get("calibration", 1.0)) if model == "oracle-noise" else 1.0
    seeds = [int(p["seed"]) + r for r in range(int(p["n_seeds"]))]
    jobs = [(s, t, sp) for s in seeds for t in p["tasks"] for sp in ("dev", "test")]
    # dev: WMT-sized (n_dev_sources), n_dev_oracle oracle references (default 0: no claim reads them); test: n_sources, K
    size = {"dev": (p.get("n_dev_sources", p["n_sources"]), p.get("n_dev_oracle", 0)),
            "test": (p["n_sources"], p["n_oracle"])}
    splits = {}
    workers = split_workers(p.get("workers", 1), len(jobs))
    pool = None
    if workers > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        from ..chapter import pin_threads

        # one BLAS/torch thread per worker, as the chapter's own process: the same numbers as in-process (tested)
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"), initializer=pin_threads)
    try:
        for s, t, sp in (progress(jobs, desc="SynTrans splits") if show_progress else jobs):
            sampler = sampler_factory(worlds[t]) if sampler_factory is not None else None
            # the candidates in this process (the sampler's device), the utilities here or in a worker (same result)
            drawn = draw_candidates(worlds[t], sp, size[sp][0], p["n_samples"], s, noise, sampler)
            args = (worlds[t], sp, size[sp][1], s, p["utilities"], embedders[t], drawn)
            kw = dict(calibration=calibration, length_bias=float(p.get("length_bias", 0.0)),
                      n_planted=int(p.get("n_planted_refs", 0)))
            splits[(s, t, sp)] = pool.submit(score_split, *args, **kw) if pool else score_split(*args, **kw)
        if pool:
            splits = {k: f.result() for k, f in splits.items()}
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    configs = grid_configs(p["lams"], p["deltas"], p["betas"])
    sel, test, dev = evaluate_grid(splits, configs, p["utilities"])
    models = dict(getattr(sampler_factory, "models", {}))
    curves = {t: list(m.losses) for t, m in models.items()}
    return Study(p, worlds, embedders, seeds, splits, configs, sel, test, dev, calibration, model, curves=curves,
                 models=models)


def bayes_selection(world: SynTrans, data: TaskData, utilities: Sequence[str], n_refs: int, n_sources: int, seed: int,
                    embedder: ConceptEmbedder | None = None, stream: int = 7) -> dict[str, np.ndarray]:
    """The Bayes-optimal candidate of each of the first ``n_sources`` sources under every utility: argmax
    of ``mean_k u(h, r_k)`` over ``n_refs`` fresh draws of p*, independent of the split's K oracle
    references, on which it is then scored: {utility: (n_sources,)}. With n_refs >= 256 its Monte-Carlo
    error is far below MBR's, whose references are N model samples. ``stream`` names an independent random
    stream of p* draws (the regret oracle uses the default, the planted control its own)."""
    if n_refs < 2 or not 1 <= n_sources <= data.n_sources:
        raise ValueError(f"need n_refs >= 2 and 1 <= n_sources <= {data.n_sources}, got {n_refs}, {n_sources}")
    refs = planted_references(world, data.trees[:n_sources], n_refs, seed, stream)
    both = utility_tensors(data.samples[:n_sources], refs, tuple(utilities), embedder)
    return {u: np.argmax(fwd.mean(-1), axis=-1) for u, (fwd, _) in both.items()}


__all__ = [
    "CHANNEL_SUBSETS", "DEV_TIE", "KNOWN_DECODERS", "TUNING_SUBSETS", "crossfit_z_gain", "share_on_side", "INF", "MAP_CONFIG", "MBR_CONFIG", "Study", "TaskData", "UTILITIES", "baselines", "beta_unit",
    "PLANTED", "PLANTED_STREAMS", "R1_MBR_CONFIG", "bayes_selection", "planted_references", "build_split", "calibrated_lbar", "channel_subset", "config_index", "corpus_chrf_single_refs", "embedder_for", "evaluate",
    "evaluate_grid", "draw_candidates", "score_split", "split_workers", "grid_configs", "grid_scores", "grid_selections", "intersection_union", "make_world", "mix_scores",
    "paired_bootstrap", "PAPER_WEIGHT_MAX", "paper_grid", "z_gain",
    "r1_configs", "r1_grid_selections", "reference_weights", "rowwise_spearman", "run_study", "score_correlation",
    "select", "select_config", "shared_tokens", "source_text", "spearman", "string_noise", "zscores",
]
