"""BiRQA: Bidirectional Robust Quality Assessment for Images (Gushchin, Vatolin & Antsiferova, ICML 2026;
arXiv 2602.20351). Model library of the ``birqa`` chapter.

Only the abstract and first page of the paper are public here; the feature maps, CSRAM, SCGB, the
reliability-aware head and Anchored Adversarial Training are **our instantiation** (research brief 2.2),
from the abstract and the public ICLR-2026 reviews.

* features (four maps per pyramid level): :func:`feature_pyramid`, :func:`ssim_map`, :func:`vif_map`,
  :func:`chroma_map`, :func:`lbp_map`, :func:`lbp_codes`, :func:`rgb_to_ycbcr`, :func:`check_pair`
* models: :class:`BiRQA`, :class:`DeepFRScratch`, :class:`LPIPSVGG16`, :class:`TopIQLike` (speed peers)
* training: :func:`clean_loss`, :func:`plcc_loss`, :func:`train_vanilla`, :class:`AnchoredAdversarialTrainer` (AT with
  Chistyakova et al. 2024's label lowering; AAT with MOS-band batches), :func:`clean_finetune` (controls)
* attacks: :func:`attack` (FGSM, I-FGSM, PGD, MI-FGSM, ART's APGD; boost/reduce), the lab's rank-direction protocol
  :func:`rank_direction`, :func:`attack_directed`; :func:`ir_score`
* the anchored bound: :func:`anchored_bound`, :func:`stratified_anchors`, :data:`COUNTER_EXAMPLE`
* data and oracle MOS: ``data``, ``oracle``; baselines and correlations: ``metrics``
* what the notebook runs: ``experiments``; sizes: :data:`PRESETS`
"""
from __future__ import annotations

from . import data, experiments, metrics, oracle
from .attacks import ATTACKS, UNSEEN, art_apgd, art_margin_classifier, attack, attack_batched, attack_directed, ir_score, rank_direction
from .bound import COUNTER_EXAMPLE, BoundCheck, anchored_bound, hinge, stratified_anchors
from .features import (FEATURE_NAMES, chroma_map, check_pair, feature_pyramid, lbp_bits, lbp_codes, lbp_map,
                       rgb_to_ycbcr, ssim_map, vif_map, vif_terms)
from .model import BiRQA, DeepFRScratch, LPIPSVGG16, TopIQLike, count_parameters
from .presets import PRESETS
from .train import (AnchoredAdversarialTrainer, band_anchors, band_batches, chunk_means, clean_finetune, clean_loss, grad_l1, plcc_loss,
                    predict, train_images, train_vanilla)

__all__ = [
    "ATTACKS", "UNSEEN", "AnchoredAdversarialTrainer", "BiRQA", "TopIQLike", "art_apgd", "art_margin_classifier", "attack_directed", "band_anchors",
    "band_batches", "chunk_means", "clean_finetune", "rank_direction", "BoundCheck", "COUNTER_EXAMPLE", "DeepFRScratch", "FEATURE_NAMES",
    "LPIPSVGG16", "PRESETS", "anchored_bound", "attack", "attack_batched", "check_pair", "chroma_map", "clean_loss",
    "count_parameters", "data", "experiments", "feature_pyramid", "grad_l1", "hinge", "ir_score", "lbp_bits",
    "lbp_codes", "lbp_map", "metrics", "oracle", "plcc_loss", "predict", "rgb_to_ycbcr", "ssim_map",
    "stratified_anchors", "train_images", "train_vanilla", "vif_map", "vif_terms",
]
