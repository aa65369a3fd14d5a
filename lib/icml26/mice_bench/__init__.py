"""MICE-Bench (ICML 2026): multi-reference image creation and editing, rebuilt on a concept space with exact
ground truth ("MICE-mini") and generators of controlled capacity. See the chapter notebooks/mice-bench.ipynb."""
from . import analysis, cases, concepts, conditioning, datacard, evaluators, experiments, figure, generators, pixel, readout
from .cases import COMBINATIONS, Case, creation_cases, editing_cases, per_k_counts, validate_record
from .concepts import DIMENSIONS, reference, reference_bank, render, render_batch
from .evaluators import cc_official, masked_ssim, nerc_scores, ssim_map
from .pixel import PixelDecoderGenerator
from .presets import PRESETS
from .readout import ConceptReadoutGenerator

__all__ = ["COMBINATIONS", "Case", "ConceptReadoutGenerator", "DIMENSIONS", "PRESETS", "PixelDecoderGenerator", "analysis",
           "cases", "cc_official", "concepts", "conditioning", "creation_cases", "datacard", "editing_cases", "evaluators", "experiments",
           "figure", "generators", "masked_ssim", "nerc_scores", "per_k_counts", "pixel", "readout", "reference", "reference_bank",
           "render", "render_batch", "ssim_map", "validate_record"]
