"""The chapter's experiments (brief §5): SynTrans tasks, candidate sets, utilities, decoders, grids.

Everything is deterministic given the preset's seed. For every source we keep all N samples of
``p_theta`` as candidates and as pseudo-references (H = R, self-pair included for every decoder,
brief pitfall 8), and the *oracle expected utility* ``O[u][s, i] = mean_k u(h_i, r*_k)`` of every
candidate against K fresh draws of the true distribution p* (brief §5.3 (b)); any decoder's quality
is then a lookup ``O[u][s, selected]``. One held-out true reference per source gives WMT-style corpus
scores (sacrebleu ``corpus_chrf`` / ``corpus_bleu``, §5.3 (a)).
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import rankdata, spearmanr

from ..progress import progress
from .decode import METHODS, channel_scores, from_mix, multiplicities
from .metrics import UTILITIES, ConceptEmbedder, utility_tensors
from .syntrans import NoiseModel, SynTrans, noisy_samples, source_text


@dataclass
class TaskData:
    """One split (dev or test) of one SynTrans task with its samples and utility tensors."""

    task: str
    split: str
    trees: list[dict]
    samples: list[list[str]]            # (S, N) candidates = pseudo-references
    lbar: np.ndarray                    # (S, N) length-normalised log p_theta
    counts: np.ndarray                  # (S, N) multiplicity at first occurrence, 0 at repeats
    oracle_refs: list[list[str]]        # (S, K) draws of p*
    heldout: list[str]                  # (S,) one more draw of p*
    U: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # u -> (fwd, rev), (S, N, N)
    O: dict[str, np.ndarray] = field(default_factory=dict)                     # u -> (S, N)
    true_logp: np.ndarray | None = None  # (S, N) exact log p*(h|x) of every candidate

    @property
    def n_sources(self) -> int:
        return len(self.samples)

    def chars(self) -> np.ndarray:
        return np.array([[len("".join(h.split())) for h in hs] for hs in self.samples], dtype=float)

    def tokens(self) -> np.ndarray:
        return np.array([[len(h.split()) for h in hs] for hs in self.samples], dtype=float)


def make_world(task: str, seed: int) -> SynTrans:
    return SynTrans.make(task, seed)


def embedder_for(worlds: Sequence[SynTrans], dim: int = 32, seed: int = 0) -> ConceptEmbedder:
    """One SoftF1 embedder over the union of the tasks' target vocabularies (synonyms share a vector)."""
    concept: dict[str, int] = {}
    offset = 0
    for w in worlds:
        c = w.lexicon.concept
        concept.update({t: k + offset for t, k in c.items()})
        offset += max(c.values()) + 1
    return ConceptEmbedder(concept, dim=dim, seed=seed)


def build_split(world: SynTrans, split: str, n_sources: int, n_samples: int, n_oracle: int, seed: int,
                noise: NoiseModel, utilities: Sequence[str], embedder: ConceptEmbedder, sampler=None,
                exact_logp: bool = False) -> TaskData:
    """Draw sources, N candidates from p_theta (``oracle-noise``, or ``sampler(trees, n, rng)`` for the
    seq2seq model), K oracle references and one held-out reference; compute all utility tensors."""
    rng = np.random.default_rng([seed, ord(world.name), {"dev": 1, "test": 2}[split]])
    trees = [world.sample_source(rng) for _ in range(n_sources)]
    if sampler is None:
        vocab = world.lexicon.target_vocabulary
        draws = [noisy_samples(world, t, rng, noise, n_samples, vocab) for t in trees]
        samples = [[d[0] for d in ds] for ds in draws]
        lbar = np.array([[d[1] for d in ds] for ds in draws])
    else:
        samples, lbar = sampler(trees, n_samples, rng)
    refs = [world.sample_references(t, rng, n_oracle + 1) for t in trees]
    oracle, heldout = [r[:n_oracle] for r in refs], [r[n_oracle] for r in refs]
    data = TaskData(world.name, split, trees, samples, np.asarray(lbar, float),
                    np.stack([multiplicities(s) for s in samples]), oracle, heldout)
    # one pass: candidates against [pseudo-references | oracle references]
    both = utility_tensors(samples, [s + o for s, o in zip(samples, oracle)], utilities, embedder)
    N = n_samples
    data.U = {u: (fr[0][:, :, :N], fr[1][:, :, :N]) for u, fr in both.items()}
    data.O = {u: fr[0][:, :, N:].mean(-1) for u, fr in both.items()}
    if exact_logp:
        data.true_logp = np.array([[world.log_prob(t, h) for h in hs] for t, hs in zip(trees, samples)])
    return data


# ----------------------------------------------------------------------------- decoders

def select(data: TaskData, utility: str, weights) -> np.ndarray:
    """Index of the selected candidate for every source under R2 channel weights."""
    fwd, rev = data.U[utility]
    s = channel_scores(fwd, rev, weights, ref_counts=data.counts, ref_lbar=data.lbar, hyp_lbar=data.lbar)
    return np.argmax(s, axis=-1)


def evaluate(data: TaskData, idx: np.ndarray) -> dict[str, float]:
    """Mean oracle expected utility of the selected candidates, for every utility."""
    rows = np.arange(data.n_sources)
    return {u: float(O[rows, idx].mean()) for u, O in data.O.items()}


def corpus_scores(data: TaskData, idx: np.ndarray) -> dict[str, float]:
    """WMT-style corpus chrF and BLEU of the selections against the single held-out reference."""
    import sacrebleu

    hyps = [data.samples[s][i] for s, i in enumerate(idx)]
    return {"corpus_chrf": float(sacrebleu.corpus_chrf(hyps, [data.heldout]).score),
            "corpus_bleu": float(sacrebleu.corpus_bleu(hyps, [data.heldout]).score)}


def baselines(data: TaskData, utility: str) -> dict[str, np.ndarray]:
    """Selections of the side-by-side decoders: random sample (the first draw), MAP over samples,
    standard / reverse / symmetric / model-based MBR (brief §5.4)."""
    out = {"random": np.zeros(data.n_sources, dtype=int)}
    for name in ("map", "mbr", "reverse", "symmetric", "model"):
        out[name] = select(data, utility, METHODS[name])
    return out


# ----------------------------------------------------------------------------- channel-weight grid

def grid_configs(lams: Sequence[float], deltas: Sequence[float], betas: Sequence[float]) -> list[tuple[float, float, float]]:
    """(lambda, delta, beta) configurations, MBR (0, 0, 0) first so that ties resolve to MBR."""
    cfgs = list(itertools.product(lams, deltas, betas))
    cfgs.sort(key=lambda c: (c != (0.0, 0.0, 0.0)))
    return cfgs


def grid_selections(data: TaskData, utility: str, configs: Sequence[tuple[float, float, float]]) -> np.ndarray:
    """(n_configs, S) selected indices for every configuration."""
    fwd, rev = data.U[utility]
    out = np.empty((len(configs), data.n_sources), dtype=int)
    cache: dict[tuple[float, float], np.ndarray] = {}
    for c, (lam, delta, beta) in enumerate(configs):
        key = (lam, delta)
        if key not in cache:
            cache[key] = channel_scores(fwd, rev, from_mix(lam, delta, 0.0),
                                        ref_counts=data.counts, ref_lbar=data.lbar)
        out[c] = np.argmax(cache[key] + beta * data.lbar, axis=-1)
    return out


def grid_scores(data: TaskData, selections: np.ndarray, metric: str) -> np.ndarray:
    """Mean oracle expected ``metric`` of every configuration's selections: (n_configs,)."""
    rows = np.arange(data.n_sources)
    return data.O[metric][rows[None, :], selections].mean(axis=1)


def zscores(scores: np.ndarray) -> np.ndarray:
    """z = (score - mean over configs) / std over configs (our reading of the paper's z-scores)."""
    sd = scores.std()
    return (scores - scores.mean()) / sd if sd > 0 else np.zeros_like(scores)


def score_correlation(data: TaskData, utility: str, weights) -> float:
    """Mean over sources of the Spearman correlation between a decoder's scores and the oracle
    expected utility of the candidates (F6): how well the decoder ranks by the true MBR objective."""
    fwd, rev = data.U[utility]
    s = channel_scores(fwd, rev, weights, ref_counts=data.counts, ref_lbar=data.lbar, hyp_lbar=data.lbar)
    a = rankdata(s, axis=-1); b = rankdata(data.O[utility], axis=-1)
    a = a - a.mean(-1, keepdims=True); b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    ok = den > 0
    return float(((a * b).sum(-1)[ok] / den[ok]).mean())


@dataclass
class Study:
    """All splits and the grid results of one run (the notebook's experiment state)."""

    preset: Mapping[str, Any]
    worlds: dict[str, SynTrans]
    splits: dict[tuple[str, str], TaskData]
    configs: list[tuple[float, float, float]]
    grid: dict[tuple[str, str, str], np.ndarray]  # (task, split, utility) -> (n_configs,) scores (same metric)
    selections: dict[tuple[str, str, str], np.ndarray]  # (task, split, utility) -> (n_configs, S)
    embedder: ConceptEmbedder

    def tuned(self, task: str, utility: str, tune_task: str | None = None) -> int:
        """Index of the configuration with the best dev score (same metric as the utility)."""
        return int(np.argmax(self.grid[(tune_task or task, "dev", utility)]))

    def config_weights(self, c: int) -> tuple[float, float, float, float]:
        lam, delta, beta = self.configs[c]
        return from_mix(lam, delta, beta)


def run_study(p: Mapping[str, Any], sampler_factory=None) -> Study:
    """Build dev/test splits of every task and evaluate the whole (lambda, delta, beta) grid."""
    worlds = {t: make_world(t, p["seed"]) for t in p["tasks"]}
    if p.get("model", "oracle-noise") == "seq2seq" and sampler_factory is None:
        from ..seeding import device
        from .seq2seq import Seq2SeqConfig, seq2seq_sampler_factory

        sampler_factory = seq2seq_sampler_factory(Seq2SeqConfig(**p["seq2seq"]), seed=p["seed"], device=device(),
                                                  progress=progress)
    emb = embedder_for(list(worlds.values()), dim=p["embed_dim"], seed=p["seed"])
    noise = NoiseModel(**p["noise"])
    jobs = [(t, s) for t in p["tasks"] for s in ("dev", "test")]
    splits = {}
    for t, s in progress(jobs, desc="SynTrans splits"):
        sampler = sampler_factory(worlds[t]) if sampler_factory is not None else None
        splits[(t, s)] = build_split(worlds[t], s, p["n_sources"], p["n_samples"], p["n_oracle"], p["seed"], noise,
                                     p["utilities"], emb, sampler=sampler)
    scale = p["beta_scale"]
    configs = grid_configs(p["lams"], p["deltas"], [b * scale for b in p["betas"]])
    grid, sels = {}, {}
    for (t, s), d in splits.items():
        for u in p["utilities"]:
            sel = grid_selections(d, u, configs)
            sels[(t, s, u)] = sel
            grid[(t, s, u)] = grid_scores(d, sel, u)
    return Study(p, worlds, splits, configs, grid, sels, emb)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    r = spearmanr(a, b).statistic
    return float(r) if np.isfinite(r) else 0.0


__all__ = [
    "Study", "TaskData", "UTILITIES", "baselines", "build_split", "corpus_scores", "embedder_for", "evaluate",
    "grid_configs", "grid_scores", "grid_selections", "make_world", "run_study", "score_correlation", "select",
    "source_text", "spearman", "zscores",
]
