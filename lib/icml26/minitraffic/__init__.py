"""MiniTraffic (ICML 2026): mini-sized contrastive pre-trained models for fine-grained (lane-level)
traffic speed prediction, reproduced on the authors' released PeMS-Lane data (`pems`), with uxsim-simulated
corridors (`simulator`) kept as a secondary lab behind a realism check."""
from .baselines import GRULane, STGCNLite, historical_average, lane_graph, persistence
from .data import PEMS_LANES, Target, fill_missing, make_sources, make_target, windows
from .fda import FDA, ac_part, relative_distortion, released_fda
from .graph import DenseTokenAttention, EdgeGAT, KNNGraphAttention, info_nce, knn_graph
from .model import (MiniTraffic, RevIN, count_params, lane_tokens, layer_params, n_patches, random_mask,
                    same_road_chance, same_road_share)
from .pems import (PEMS43_GROUPS, PemsData, RealTarget, lag_autocorr, lane_road_distortion, load_pems,
                   road_lane_mean_error)
from .presets import PRESETS
from .simulator import Corridor, DayResult, Incident, capacity_veh_per_h, demand_profile, simulate_day
from .train import (HORIZONS, RoadExtension, day_windows, evaluate_simple, finetune, metrics, mini_config, passes,
                    predict, pretrain, run_method, test_windows, train_projection)

__all__ = [
    "PEMS43_GROUPS", "PemsData", "RealTarget", "lag_autocorr", "lane_road_distortion", "load_pems",
    "road_lane_mean_error", "same_road_chance", "same_road_share",
    "FDA", "GRULane", "HORIZONS", "PEMS_LANES", "PRESETS", "Corridor", "DayResult", "DenseTokenAttention", "EdgeGAT",
    "Incident", "KNNGraphAttention", "MiniTraffic", "RevIN", "RoadExtension", "STGCNLite", "Target", "ac_part",
    "capacity_veh_per_h", "count_params", "demand_profile", "evaluate_simple", "fill_missing", "finetune",
    "historical_average", "info_nce", "knn_graph", "lane_graph", "layer_params", "make_sources", "make_target",
    "metrics", "mini_config", "n_patches", "passes", "persistence", "predict", "pretrain", "random_mask",
    "relative_distortion", "released_fda", "run_method", "simulate_day", "test_windows", "windows", "train_projection",
    "lane_tokens", "day_windows",
]
