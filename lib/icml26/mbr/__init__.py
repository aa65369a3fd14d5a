"""Noisy-Channel Minimum Bayes Risk decoding (Sakai, Kamigaito, Watanabe; ICML 2026; arXiv 2607.05198).

Model library of the ``mbr`` chapter. Equation names refer to the research brief ``papers/mbr.md``
(R1, R2 of §2.2 are **our reconstructions** of the paper's four-channel decomposition; only the
abstract and a note were readable).

* world (stand-in for WMT data): :class:`SynTrans` (exact ``log p*``), :data:`TASKS`, :class:`NoiseModel`,
  :func:`noisy_sample`, :func:`noisy_samples`, :func:`source_text`
* utilities: :func:`utility_tensors`, :func:`utility_matrix`, :func:`sentence_score`, :data:`UTILITIES`,
  :class:`ConceptEmbedder` (SoftF1), :func:`bleu_ratio` (§3.1)
* decoders: :func:`mbr_decode`, :func:`channel_scores` (R2), :func:`r1_scores` (R1), :data:`METHODS`,
  :func:`from_mix`, :func:`reference_weights`, :func:`multiplicities`
* experiments: :func:`run_study` -> :class:`Study`, :func:`baselines`, :func:`evaluate`,
  :func:`corpus_scores`, :func:`zscores`, :func:`score_correlation`
* full scale: :class:`Seq2Seq`, :class:`Seq2SeqConfig`, :func:`seq2seq_sampler_factory`
"""
from __future__ import annotations

from .decode import (CHANNELS, METHODS, MBRResult, channel_scores, check_weights, from_mix, mbr_decode,
                     multiplicities, r1_scores, reference_weights)
from .experiments import (Study, TaskData, baselines, build_split, corpus_scores, embedder_for, evaluate,
                          grid_configs, grid_scores, grid_selections, make_world, run_study, score_correlation,
                          select, spearman, zscores)
from .metrics import (UTILITIES, ConceptEmbedder, NgramStats, bleu_ratio, bleu_tokens, sentence_score,
                      utility_matrix, utility_tensors)
from .presets import PRESETS
from .seq2seq import Seq2Seq, Seq2SeqConfig, seq2seq_sampler_factory
from .syntrans import TASKS, NoiseModel, SynTrans, TaskSpec, noisy_sample, noisy_samples, source_text

__all__ = [
    "CHANNELS", "ConceptEmbedder", "METHODS", "MBRResult", "NgramStats", "NoiseModel", "PRESETS", "Seq2Seq",
    "Seq2SeqConfig", "Study", "SynTrans", "TASKS", "TaskData", "TaskSpec", "UTILITIES", "baselines", "bleu_ratio",
    "bleu_tokens", "build_split", "channel_scores", "check_weights", "corpus_scores", "embedder_for", "evaluate",
    "from_mix", "grid_configs", "grid_scores", "grid_selections", "make_world", "mbr_decode", "multiplicities",
    "noisy_sample", "noisy_samples", "r1_scores", "reference_weights", "run_study", "score_correlation", "select",
    "sentence_score", "seq2seq_sampler_factory", "source_text", "spearman", "utility_matrix", "utility_tensors",
    "zscores",
]
