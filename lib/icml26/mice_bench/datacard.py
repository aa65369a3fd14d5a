"""The paper's published numbers (final ICML version unless marked "early") used by the chapter.

Sources: the official repository's README / data card and the figures in ``docs/assets``
(``data.png``, ``performance_3metrics.png``, ``model_ev.jpg``); curve values are read off the figure (+-0.1).
"""
from __future__ import annotations

from .concepts import DIMENSIONS

TIERS = {"Easy": (2, 3), "Medium": (4, 5), "Hard": (6, 7)}
TIER_TOTALS = {"Easy": 823, "Medium": 926, "Hard": 123}
"""Creation cases per difficulty tier (data card); 1,872 in all."""
PER_DIMENSION_TIERS = {
    "Identity": (340, 581, 107), "Object": (342, 595, 109), "Style": (314, 563, 108), "Scene": (328, 578, 108),
    "Material": (328, 571, 108), "Control": (318, 535, 106), "Appearance": (289, 585, 106),
}
"""Creation cases that reference each dimension, per tier (Easy, Medium, Hard)."""
POOL_SIZES = {"Identity": 359, "Object": 629, "Style": 356, "Scene": 372, "Material": 186, "Control": 475, "Appearance": 496}
N_CREATION, N_EDITING, N_TOTAL = 1872, 1247, 3119
N_MODELS, N_SUBTASKS = 13, 22

EDITING_SUBTASKS = {
    # (category, subtask): (percent of editing cases, dimensions edited)
    ("Add", "object"): (7.3, ("Object",)), ("Add", "identity"): (4.9, ("Identity",)),
    ("Add", "accessory"): (3.1, ("Appearance",)), ("Add", "clothes"): (3.6, ("Appearance",)),
    ("Replace", "clothes"): (2.4, ("Appearance",)), ("Replace", "accessory"): (2.1, ("Appearance",)),
    ("Replace", "identity"): (3.5, ("Identity",)), ("Replace", "object"): (4.0, ("Object",)),
    ("Replace", "material"): (1.8, ("Material",)), ("Replace", "texture"): (1.4, ("Material",)),
    ("Remove", "accessory"): (2.9, ("Appearance",)), ("Remove", "object"): (5.1, ("Object",)),
    ("Move", "accessory"): (2.7, ("Control",)), ("Move", "object"): (5.3, ("Control",)),
    ("Style", "transfer"): (5.5, ("Style",)), ("Style", "composite"): (3.5, ("Style",)),
    ("Background", "indoor"): (5.8, ("Scene",)), ("Background", "outdoor"): (3.3, ("Scene",)),
    ("Background", "landscape"): (2.9, ("Scene",)),
    ("Conditioned", "openpose"): (3.6, ("Control",)), ("Conditioned", "canny"): (2.9, ("Control",)),
    ("Conditioned", "layout"): (2.5, ("Control",)),
    ("Hybrid", "Control"): (1.8, ("Control",)), ("Hybrid", "Object"): (4.1, ("Object",)),
    ("Hybrid", "Scene"): (2.8, ("Scene",)), ("Hybrid", "Identity"): (3.4, ("Identity",)),
    ("Hybrid", "Material"): (2.1, ("Material",)), ("Hybrid", "Style"): (2.1, ("Style",)),
    ("Hybrid", "Appearance"): (3.6, ("Appearance",)),
}
"""The 22 atomic subtasks (7 categories) and the Hybrid group, with the data card's percentages. A Hybrid
case edits its named dimension plus 1-3 others (2-4 references)."""
GLOBAL_EDITS = ("Style", "Background")
"""Edit categories that change the whole canvas: NERC (non-edited-region consistency) is undefined there."""

PAPER_AVERAGE = {  # performance_3metrics.png, the figure's "Overall Average" line (black, dashed), k = 2..7
    # (review v2, D10: it is not the mean of the 8 plotted curves, e.g. 8.75 vs 8.51 for CC at k = 2, so it
    # probably averages all 13 models; the chapter calls it "the figure's overall average")
    "PF": (8.9, 8.3, 8.1, 7.25, 6.35, 5.6),
    "CC": (8.75, 7.85, 7.5, 6.4, 6.1, 5.25),
    "PR": (8.68, 7.95, 7.78, 7.28, 6.92, 6.92),
}
PAPER_MODELS = {
    # performance_3metrics.png, the 8 per-model curves read off the official figure (huayu-zheng/MICE-Bench
    # @96b4f5b, docs/assets; read by eye on a 2x zoom of the 6946 x 1435 PNG, +-0.1), k = 2..7; OmniGen2 is
    # plotted for k = 2..5 only. Used to test every per-generator threshold on the paper's own models before it
    # is declared (issue 46, item 2).
    "CC": {
        "GPT-Image 1.5": (9.52, 9.28, 8.92, 8.60, 8.35, 8.05), "Seedream 4.5": (9.45, 8.90, 8.90, 8.45, 8.33, 7.57),
        "NanoBanana 2": (9.45, 9.10, 8.50, 7.65, 7.53, 6.30), "FLUX.2 klein": (9.30, 7.92, 8.22, 7.40, 7.30, 5.25),
        "Qwen-Image-Edit-2511": (8.70, 7.90, 6.82, 4.70, 5.12, 4.30), "OmniGen2": (7.52, 6.28, 6.45, 5.38),
        "BAGEL": (7.30, 6.00, 5.78, 5.18, 4.02, 3.10), "DreamOmni2": (6.85, 5.20, 4.85, 3.22, 1.85, 1.77),
    },
    "PR": {
        "GPT-Image 1.5": (9.17, 8.59, 8.51, 8.49, 8.45, 8.01), "Seedream 4.5": (8.73, 8.29, 7.94, 7.68, 7.67, 7.26),
        "NanoBanana 2": (8.89, 8.06, 7.94, 8.18, 7.71, 8.69), "FLUX.2 klein": (8.56, 8.21, 8.18, 8.01, 7.91, 7.72),
        "Qwen-Image-Edit-2511": (8.50, 7.77, 7.35, 6.67, 6.24, 5.79), "OmniGen2": (8.56, 7.60, 7.14, 7.07),
        "BAGEL": (8.36, 7.53, 7.53, 7.09, 5.88, 5.86), "DreamOmni2": (8.26, 7.65, 7.93, 7.74, 7.87, 8.13),
    },
}
"""Per-model CC and PR curves of the final paper's figure (8 of the 13 models are plotted)."""


def paper_model_stats(metric: str) -> dict[str, dict[str, float]]:
    """Per plotted model: drop = first - last plotted value (k = 2 to its largest k) and Spearman rho(k, score)."""
    from scipy.stats import spearmanr

    out = {}
    for name, ys in PAPER_MODELS[metric].items():
        ks = list(range(2, 2 + len(ys)))
        out[name] = {"drop": float(ys[0] - ys[-1]), "rho": float(spearmanr(ks, ys).statistic)}
    return out


PAPER_EXTREMES = {"GPT-Image 1.5 CC": (9.5, 8.05), "DreamOmni2 CC": (6.85, 1.75)}
PAPER_HEATMAP_RANGES = {"IF": (5.34, 9.31), "CC": (5.62, 9.01), "Aesthetics": (5.41, 6.82), "Quality": (5.88, 7.37)}
EARLY = {"tipping_k": 5, "edit_k3": 62.4, "create_k3": 51.7, "composite_weights": (0.3, 0.4, 0.15, 0.15),
         "dominance_share": 43.2, "omission_share": 31.2}

assert set(PER_DIMENSION_TIERS) == set(DIMENSIONS)
