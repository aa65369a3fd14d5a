"""FocalPolicy (He, Yang et al., ICML 2026; arXiv 2605.15944): LAS + FCO one-step flow policies.

Model library of the ``focalpolicy`` chapter; section numbers refer to the research brief
``papers/focalpolicy.md``, which transcribes the official code (commit 3c0af28).

* transforms and losses: :func:`dct_ortho`, :func:`dct_matrix`, :func:`fco_loss`, :func:`freq_loss`,
  :func:`adaptive_freq_loss`, :func:`time_loss`
* samplers: :class:`LASSampler`, :class:`ConsistencySampler`, :func:`uniform_t`
* policies (``compute_loss(batch)``, ``predict_action(obs)``): :class:`FMPolicy`, :class:`ConsistencyFMPolicy`
  (FlowPolicy), :class:`FocalPolicy`; :func:`make_policy`; networks :class:`ChunkMLP`,
  :class:`EnsembleChunkMLP`, :class:`VmapEnsemble`, :class:`ConditionalUnet1D`
* data and training: :func:`make_chunks`, :class:`ChunkDataset`, :func:`train_policy`
* environments: :class:`ChunkReach2D` (``ChunkReach2D-v0``), :func:`expert_demo`, :func:`collect_demos`;
  MetaWorld: ``metaworld_tasks``
* execution and metrics: :class:`ChunkedRunner`, ``metrics``
* theory: :func:`las_quantiles`, :func:`fixed_point_one_step_std`, :func:`flow_map_slope`,
  :func:`posterior_mean_slope`
* sizes: :data:`PRESETS`; what the notebook runs: ``experiments``
"""
from __future__ import annotations

from . import experiments, metrics
from .data import ChunkDataset, make_chunks
from .dct import dct_matrix, dct_ortho
from .env import ENV_ID, ChunkReach2D, ExpertConfig, ReachConfig, collect_demos, expert_demo, min_jerk, register
from .losses import adaptive_freq_loss, fco_loss, freq_loss, time_loss
from .networks import ChunkMLP, ConditionalUnet1D, EnsembleChunkMLP, VmapEnsemble, make_network
from .policies import ChunkPolicy, ConsistencyFMPolicy, FMPolicy, FocalPolicy, MinMaxNormalizer, make_policy
from .presets import PRESETS
from .runner import ChunkedRunner, Rollout
from .sampler import ConsistencySampler, LASSampler, uniform_t
from .theory import fixed_point_one_step_std, flow_map_slope, las_quantiles, posterior_mean_slope, sigma_t
from .train import TrainResult, train_policy

register()

__all__ = [
    "ENV_ID", "PRESETS", "ChunkDataset", "ChunkMLP", "ChunkPolicy", "ChunkReach2D", "ChunkedRunner", "ConditionalUnet1D",
    "ConsistencyFMPolicy", "ConsistencySampler", "EnsembleChunkMLP", "ExpertConfig", "FMPolicy", "FocalPolicy",
    "LASSampler", "MinMaxNormalizer", "ReachConfig", "Rollout", "TrainResult", "VmapEnsemble", "adaptive_freq_loss", "collect_demos",
    "dct_matrix", "dct_ortho", "expert_demo", "experiments", "fco_loss", "fixed_point_one_step_std", "flow_map_slope",
    "freq_loss", "las_quantiles", "make_chunks", "make_network", "make_policy", "metrics", "min_jerk",
    "posterior_mean_slope", "register", "sigma_t", "time_loss", "train_policy", "uniform_t",
]
