"""MICE-Bench (ICML 2026): multi-reference image creation and editing, rebuilt on a concept space with exact
ground truth ("MICE-mini") and generators of controlled capacity. See the chapter notebooks/mice-bench.ipynb."""
from . import analysis, cases, concepts, datacard, evaluators, experiments, generators
from .cases import COMBINATIONS, Case, creation_cases, editing_cases, per_k_counts, validate_record
from .concepts import DIMENSIONS, reference, reference_bank, render, render_batch
from .evaluators import cc_official, masked_ssim, nerc_scores, ssim_map
from .generators import CompositionalGenerator
from .presets import PRESETS

__all__ = ["COMBINATIONS", "Case", "CompositionalGenerator", "DIMENSIONS", "PRESETS", "analysis", "cases",
           "cc_official", "concepts", "creation_cases", "datacard", "editing_cases", "evaluators", "experiments",
           "generators", "masked_ssim", "nerc_scores", "per_k_counts", "reference", "reference_bank", "render",
           "render_batch", "ssim_map", "validate_record"]
