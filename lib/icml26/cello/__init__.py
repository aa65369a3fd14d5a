"""Cello (ICML 2026): cell-wise feature aggregation for pathology images, a scaled-down reproduction.

Stage 1 trains a cell encoder with protein (IHC) supervision (`encoders`); stage 2 aggregates cached
cell embeddings with local prototypes, gated global attention and a decision-route consistency loss
(`model`, `prototypes`, `pooling`). `slides` renders the procedural cohort (the WSI stand-in), `ihc`
runs the real-pixel demo on scikit-image's bundled IHC image, `theory` the numerical theory checks,
`experiments` the chapter's experiments. Every equation beyond the abstract is our reconstruction.
"""
from .encoders import (CellEncoder, FoundationEncoder, PatchEncoder, ProteinHead, crops_to_tensor, embed, protein_loss,
                       rank_normalise, train_protein_encoder, train_simclr)
from .experiments import CELLO_VARIANTS, CHANCE, PATCH_BASELINES, PATCH_MODELS, pretrain_fm, run_seed
from .ihc import ihc_demo, segment_nuclei
from .model import Cello, check_route_matrix, kl
from .pooling import GatedAttentionPool, masked_softmax, region_softmax
from .presets import PRESETS
from .prototypes import PrototypeHead
from .slides import (CELL_TYPES, REGION_CLASSES, Slide, extract_crops, extract_tiles, make_cohort, make_slide,
                     make_twin_cohort, region_classes)
from .stains import STAINS, check_stain_matrix, deconvolve, jitter_stains, render_od
from .theory import dilution_monte_carlo, oracle_auc, pca_vs_protein_probe
from .train import Bags, auc, fit_mil, make_bags, make_model, predict

__all__ = [
    "Bags", "CELLO_VARIANTS", "CELL_TYPES", "CHANCE", "Cello", "CellEncoder", "FoundationEncoder", "GatedAttentionPool",
    "PATCH_MODELS", "PRESETS", "PatchEncoder", "ProteinHead", "PrototypeHead", "REGION_CLASSES", "STAINS", "Slide", "auc",
    "check_route_matrix", "check_stain_matrix", "crops_to_tensor", "deconvolve", "dilution_monte_carlo", "embed",
    "extract_crops", "extract_tiles", "fit_mil", "ihc_demo", "jitter_stains", "kl", "make_bags", "make_cohort", "make_model",
    "make_slide", "make_twin_cohort", "masked_softmax", "oracle_auc", "pca_vs_protein_probe", "predict", "pretrain_fm",
    "protein_loss", "rank_normalise", "region_classes", "region_softmax", "render_od", "run_seed", "segment_nuclei",
    "train_protein_encoder", "train_simclr",
]
