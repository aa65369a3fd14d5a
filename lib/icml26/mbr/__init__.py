"""Noisy-Channel Minimum Bayes Risk decoding (Sakai, Kamigaito, Watanabe; ICML 2026; arXiv 2607.05198).

Model library of the ``mbr`` chapter. Equation names refer to the research brief ``papers/mbr.md``
(R1, R2 of §2.2 are **our reconstructions** of the paper's four-channel decomposition; only the
abstract (ICML and arXiv v1) and a third-party digest of the paper could be read).

* world (stand-in for WMT data): :class:`SynTrans` (exact ``log p*``), :data:`TASKS`, :class:`NoiseModel`
  , :func:`noisy_sample`, :func:`noisy_samples`, :func:`source_text`
* utilities: :func:`utility_tensors`, :func:`utility_matrix`, :func:`sentence_score`, :data:`UTILITIES`,
  :class:`ConceptEmbedder` (SoftF1), :func:`bleu_ratio` (§3.1), :func:`corpus_chrf_from_stats`
* decoders: :func:`mbr_decode`, :func:`channel_scores` (R2), :func:`r1_scores` (R1), :data:`METHODS`,
  :func:`from_mix`, :func:`reference_weights`, :func:`multiplicities`
* experiments: :func:`run_study` -> :class:`Study` (seeds x tasks x dev/test), :func:`grid_configs`,
  :func:`channel_subset`, :func:`select_config`, :func:`beta_unit`, :func:`baselines`, :func:`evaluate`,
  :func:`corpus_chrf_single_refs`, :func:`paired_bootstrap`, :func:`r1_configs`, :func:`r1_grid_selections`, :meth:`Study.r1`,
  :meth:`Study.with_planted` (positive control), :meth:`Study.shuffled_dev` (the null of the channel advice),
  :func:`bayes_selection` (regret oracle), :func:`zscores`, :func:`z_gain`, :func:`paper_grid` (the z unit's sub-grid),
  :func:`intersection_union` (the test of "on every setting"), :func:`crossfit_z_gain` (the optimal configuration
  without its in-sample maximum), :func:`share_on_side` (the exact sign test of the channel advice)
* readings (``analysis``): :func:`z_gains` (dev-tuned, cross-fitted optimum, in-sample, random-configuration null),
  :func:`random_z_gain`, :func:`point_gains`, :func:`advice_share` (ties and MAP left out; a strict MBR optimum counts by MBR's
  value), :func:`advice_outcome` (one pair of it), :func:`dev_best`, :func:`mbr_dev_margin`, :func:`r1_model_subset`
  (GC4's identifiable sub-grid), :func:`intersection_union_between` ("+1 to +2 z" in every task)
* full scale: :class:`Seq2Seq`, :class:`Seq2SeqConfig`, :func:`seq2seq_sampler_factory`, :func:`resampled_factory`
  (the same trained models sampled at another temperature: the second regime)
"""
from __future__ import annotations

from .decode import (CHANNELS, METHODS, MBRResult, channel_scores, check_weights, from_mix, mbr_decode,
                     multiplicities, r1_scores, r1_terms, reference_weights)
from .experiments import (CHANNEL_SUBSETS, DEV_TIE, KNOWN_DECODERS, TUNING_SUBSETS, crossfit_z_gain, share_on_side, INF, MAP_CONFIG, MBR_CONFIG, PAPER_WEIGHT_MAX, PLANTED, PLANTED_STREAMS,
                          R1_MBR_CONFIG, Study, TaskData, baselines, bayes_selection, beta_unit,
                          build_split, calibrated_lbar, channel_subset, config_index, corpus_chrf_single_refs, embedder_for,
                          evaluate, evaluate_grid, grid_configs, grid_scores, grid_selections, intersection_union,
                          make_world, mix_scores, paired_bootstrap, paper_grid, planted_references, r1_configs, r1_grid_selections, rowwise_spearman, run_study,
                          score_correlation, select, select_config, shared_tokens, spearman, string_noise,
                          z_gain, zscores)
from .metrics import (UTILITIES, ConceptEmbedder, NgramStats, bleu_ratio, bleu_tokens, corpus_chrf_from_stats,
                      sentence_score, utility_matrix, utility_tensors)
from .analysis import (advice_outcome, advice_share, dev_best, intersection_union_between, map_config, mbr_dev_margin,
                       per_source_scores, point_gains,
                       r1_model_subset, random_z_gain, seed_means, sign_within, tuned_in, z_gains)
from .presets import PRESETS
from .seq2seq import Seq2Seq, Seq2SeqConfig, resampled_factory, seq2seq_sampler_factory
from .syntrans import (TASKS, NoiseModel, SynTrans, TaskSpec, noisy_sample, noisy_samples, source_text)

__all__ = [
    "CHANNELS", "CHANNEL_SUBSETS", "KNOWN_DECODERS", "TUNING_SUBSETS", "crossfit_z_gain", "share_on_side", "PAPER_WEIGHT_MAX", "PLANTED", "PLANTED_STREAMS", "intersection_union", "paper_grid",
    "planted_references", "z_gain", "R1_MBR_CONFIG", "bayes_selection", "r1_terms", "ConceptEmbedder", "INF", "MAP_CONFIG", "MBR_CONFIG", "METHODS", "MBRResult",
    "NgramStats", "NoiseModel", "PRESETS", "Seq2Seq", "Seq2SeqConfig", "Study", "SynTrans", "TASKS", "TaskData",
    "TaskSpec", "UTILITIES", "baselines", "beta_unit", "bleu_ratio", "bleu_tokens", "build_split", "calibrated_lbar", "channel_scores",
    "channel_subset", "check_weights", "config_index", "corpus_chrf_from_stats", "corpus_chrf_single_refs",
    "embedder_for", "evaluate", "evaluate_grid", "from_mix", "grid_configs", "grid_scores", "grid_selections",
    "make_world", "mbr_decode", "mix_scores", "multiplicities", "noisy_sample", "noisy_samples", "paired_bootstrap", "r1_configs", "r1_grid_selections", "r1_scores", "reference_weights",
    "rowwise_spearman", "run_study", "score_correlation", "select", "select_config", "sentence_score",
    "seq2seq_sampler_factory", "resampled_factory", "shared_tokens", "source_text", "spearman", "string_noise", "utility_matrix", "utility_tensors",
    "zscores", "DEV_TIE", "advice_outcome", "advice_share", "dev_best", "intersection_union_between", "map_config", "mbr_dev_margin", "per_source_scores", "point_gains",
    "r1_model_subset", "random_z_gain", "seed_means", "sign_within", "tuned_in", "z_gains",
]
