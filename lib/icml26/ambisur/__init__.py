"""AmbiSuR (Li et al., ICML 2026): photometric ambiguity in Gaussian-splatting surface reconstruction.

A CPU, pure-torch, scaled-down re-implementation of the components read off the official code (brief):
Gaussian Primitive Truncation in the rasterizer, Ray-Colour Consistency as an injected colour gradient,
the dual-end SH ambiguity indicator and the Amorphous Local Regulariser, on a PGSR-lite base.
"""
from .losses import (alr_loss, depth_normal_loss, mono_depth_loss, photometric, prior_depth_loss, psnr,
                     rcc_lambda_per_pixel, rcc_surrogate, sh_ambiguity, sh_uncertainty)
from .metrics import auroc, chamfer, region_cd
from .model import GaussianModel, eval_sh, quat_to_rotmat, sh_basis, sh_degree
from .presets import PRESETS
from .render import HARD_CUT_SIGMA, CameraT, RayColorConsistency, Render, composite_weights, depth_to_normal, project, render
from .scene import AMBIGUOUS, REGIONS, Camera, Layout, Scene, backproject, layout, make_scene, mono_disparity, sfm_points
from .train import CURVES, RUN_LABELS, RUNS, Hyper, RunResult, evaluate, init_model, train_run

__all__ = ["AMBIGUOUS", "CURVES", "Camera", "CameraT", "GaussianModel", "HARD_CUT_SIGMA", "Hyper", "PRESETS", "REGIONS", "RUNS",
           "RUN_LABELS", "RayColorConsistency", "Render", "RunResult", "Scene", "alr_loss", "chamfer",
           "depth_normal_loss", "depth_to_normal", "eval_sh", "evaluate", "init_model", "Layout", "layout", "make_scene",
           "mono_depth_loss", "mono_disparity", "photometric",
           "prior_depth_loss", "project", "psnr", "quat_to_rotmat", "rcc_lambda_per_pixel", "rcc_surrogate",
           "region_cd", "render", "sh_ambiguity", "sh_basis", "sh_degree", "sh_uncertainty", "auroc", "backproject",
           "sfm_points", "composite_weights",
           "train_run"]
