"""Classifier-based quality filtering (CQF): Nait Saada et al., ICML 2026 (arXiv 2510.00866).

Model library of the ``cqf`` chapter (research brief ``papers/cqf.md``; equation numbers are the paper's):

* world (stand-in for RedPajama and the HQ sets): :class:`SynthWeb`, :class:`Docs`, :class:`Vocab`,
  :data:`GENRES`, :data:`HQ_SETS`, :data:`WEB_MIX`
* features and classifier (§2): :func:`hashed_features`, :func:`ngram_counts`, :func:`embedding_features`,
  :class:`QualityClassifier`
* selection (Eq. 4.1, §7): :func:`calibrate`, :class:`ScoreCDF`, :func:`cqf_select`, :func:`select_many`,
  :class:`Request`, :func:`exclusive_buckets`, :func:`perm`
* baselines (§5, Fig. 7): :class:`DSIRLike`, :class:`CRISPLike`
* language models: :class:`NGramLM`, :class:`TinyGPT`, :class:`GPTLM`; metrics :func:`t1_accuracy`,
  :func:`decile_losses`, :func:`conditioning_fraction`, the format-invariant reader's text :func:`format_invariant`
* the §3.2 toy: :func:`cqf_composition`, :func:`kl_curve`, :func:`k_star`
* experiments / sizes: :func:`run_seed`, :func:`semireal_composition`, the controls :func:`planted` and
  :func:`oracle_is`, the diagnostic :func:`noise_removal`, :data:`PRESETS`
"""
from __future__ import annotations

from .baselines import CRISPLike, DSIRLike
from .classifier import QualityClassifier
from .experiments import E1_SETS, noise_removal, oracle_is, planted, run_seed, semireal_composition
from .features import embedding_features, hashed_features, ngram_counts
from .gpt import GPTLM, TinyGPT
from .metrics import conditioning_fraction, decile_losses, format_invariant, t1_accuracy, t1_logprobs
from .ngram import NGramLM
from .presets import PRESETS
from .selection import Request, ScoreCDF, Selection, calibrate, cqf_select, exclusive_buckets, perm, select_many
from .toy import TOY_A, TOY_B, TOY_TYPES, cqf_composition, k_star, kl, kl_curve
from .world import ALL_GENRES, GENRES, HQ_SETS, WEB_MIX, Docs, SynthWeb, Vocab

__all__ = [
    "ALL_GENRES", "CRISPLike", "DSIRLike", "Docs", "E1_SETS", "GENRES", "GPTLM", "HQ_SETS", "NGramLM", "PRESETS",
    "QualityClassifier", "Request", "ScoreCDF", "Selection", "SynthWeb", "TOY_A", "TOY_B", "TOY_TYPES", "TinyGPT",
    "Vocab", "WEB_MIX", "calibrate", "conditioning_fraction", "cqf_composition", "cqf_select", "decile_losses",
    "embedding_features", "exclusive_buckets", "format_invariant", "hashed_features", "k_star", "kl", "kl_curve", "ngram_counts",
    "noise_removal", "oracle_is", "perm", "planted", "run_seed", "select_many", "semireal_composition", "t1_accuracy", "t1_logprobs",
]
