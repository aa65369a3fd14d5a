"""icml26.fedwave: FedWave (federated LoRA + Value Chain Layer + server MoE router + DPO) on a tiny frozen decoder
and a synthetic 4-stage value chain, with SmolLM2-135M features for the router (see the chapter)."""
from __future__ import annotations

from . import audit, drift
from .data import (N_STAGES, SHARED_STAGE_NAMES, STAGE_NAMES, PairSet, chain, client_datasets, router_ceiling,
                   shared_client_datasets, shared_stage_map, stage_map)
from .dpo import dpo_loss, flip_labels, make_pairs, pair_margin, split_pairs, train_dpo
from .evaluate import chain_em, decode, exact_match, one_hot, stage_em
from .federated import (METHODS, Adapted, FedAvg, FedAvgEMA, FedProx, PositionWeighted, Scaffold, Strategy,
                        lora_product_mismatch, position_weights, run_method, weighted_mean)
from .model import LoRALinear, TinyDecoder, add_lora, lora_state, pretrain_base, to_peft_state_dict
from .presets import PRESETS
from .router import Router, code_router_loss, double_softmax_entropy, top_k_gates, train_router, uniform_gates
from .vcl import AffineVCL, ChainVCL, make_vcl, stage_logit_shift

__all__ = [
    "AffineVCL", "Adapted", "audit", "drift", "ChainVCL", "Scaffold", "SHARED_STAGE_NAMES", "shared_client_datasets",
    "shared_stage_map", "FedAvg", "FedAvgEMA", "FedProx", "LoRALinear", "METHODS", "N_STAGES",
    "PRESETS", "PairSet", "PositionWeighted", "Router", "STAGE_NAMES", "Strategy", "TinyDecoder", "add_lora", "chain",
    "chain_em", "client_datasets", "code_router_loss", "decode", "double_softmax_entropy", "dpo_loss", "exact_match",
    "flip_labels", "lora_product_mismatch", "pair_margin", "split_pairs", "lora_state", "make_pairs", "make_vcl", "one_hot", "position_weights",
    "pretrain_base", "router_ceiling", "run_method", "stage_em", "stage_logit_shift", "stage_map", "to_peft_state_dict",
    "top_k_gates", "train_dpo", "train_router", "uniform_gates", "weighted_mean",
]
