"""ProbeLLM (Huang et al., ICML 2026, arXiv 2602.12966): hierarchical-MCTS probing of a model for
verifiable failures, and their consolidation into failure modes.

Modules: `space` (verifiable arithmetic items, strata, micro moves, python_exec verification),
`targets` (the two planted-mode oracles and SmolLM2-135M-Instruct behind one ``query``), `tinylm` (target (b): a
char-level decoder trained on corrupted data, its exact failure map by enumeration, the same ``query``), `tree` (the docs' two UCB1
trees, macro and micro, with an explicit budget split; the single-tree ablation; the baselines at an equal budget), `modes` (failure-aware embeddings,
HDBSCAN, boundary-aware rule induction), `experiments` (metrics and the chapter's experiment loops),
`presets`.
"""
from __future__ import annotations

from .presets import PRESETS
from .space import FEATURES, FORMS, MICRO_MOVES, OPS, Item, Space, features, fine_cell, noisy_label, render, verify
from .targets import PLANTED_MODES, PLANTED_MODES_2, Mode, PlantedOracle, SmolLM2Target
from .tinylm import TINY_REGIONS, CharLM, TinyArithLM
from .tree import STRATEGIES, HierarchicalSampler, Node, SearchResult, search, ucb1, ucb_bandit_pulls

__all__ = ["FEATURES", "FORMS", "MICRO_MOVES", "OPS", "PLANTED_MODES", "PLANTED_MODES_2", "PRESETS", "STRATEGIES", "HierarchicalSampler",
           "Item", "Mode", "Node", "PlantedOracle", "SearchResult", "SmolLM2Target", "Space", "TINY_REGIONS", "CharLM", "TinyArithLM", "features", "noisy_label",
           "render", "search", "ucb1", "ucb_bandit_pulls", "verify", "fine_cell"]
