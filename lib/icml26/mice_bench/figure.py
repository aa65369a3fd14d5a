"""The paper's own figure as data: the official `performance_3metrics.png`, its automatic digitisation, and
the test of the abstract's words on the curves it plots (issue 46; review of revision 1ae09b8, finding 1).

The abstract says "all models experience notable degradation in concept consistency and physical realism as
concept complexity increases". The only per-model evidence the authors publish for it is the figure
`performance_3metrics.png` (CC, PR and PF against the number of references k = 2..7 for 8 of the 13 models,
and the figure's "Overall Average"). ``datacard.PAPER_MODELS`` holds those curves as read by hand; this module

* ships the CC and PR panels of the official figure (``official/performance_3metrics_cc_pr.png``: the right
  two thirds of huayu-zheng/MICE-Bench @96b4f5b ``docs/assets/performance_3metrics.png``, MIT licence,
  downscaled 2x with Lanczos and mapped without dithering onto a 32-colour palette made of the 8 legend
  colours, 16 greys and 8 half-tints, 54 kB);
* digitises its markers automatically (`digitise`): each model's markers are found by their legend colour in
  a window around each k's column, and their centre row is mapped to a score through the panel's frame and
  its axis limits (CC 0-10, PR 5.5-9.5); a marker hidden under another model's is left out (NaN);
* turns a curve into the figure claims' statistic with its reading error (`reading_interval`): the drop from
  k = 2 to the last plotted k, where each read value lies within +-``READING_ERROR`` of the plotted one, so
  the drop lies within +-2 x ``READING_ERROR`` (interval arithmetic, no distribution assumed).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .datacard import PAPER_AVERAGE, PAPER_MODELS

OFFICIAL_FIGURE = Path(__file__).with_name("official") / "performance_3metrics_cc_pr.png"
PROVENANCE = ("huayu-zheng/MICE-Bench @96b4f5b, docs/assets/performance_3metrics.png (MIT): the CC and PR panels, "
              "downscaled 2x, 32-colour palette")
LEGEND_COLOURS = {
    # RGB of each model's line in the figure's legend (its PF panel), read from the official PNG
    "BAGEL": (230, 57, 70), "DreamOmni2": (58, 134, 255), "FLUX.2 klein": (247, 127, 0),
    "GPT-Image 1.5": (6, 167, 125), "NanoBanana 2": (131, 56, 236), "OmniGen2": (92, 179, 56),
    "Qwen-Image-Edit-2511": (45, 106, 79), "Seedream 4.5": (69, 123, 157),
}
AVERAGE_COLOUR = (0, 0, 0)
"""The figure's "Overall Average": black diamonds on a dashed black line."""
AXIS_LIMITS = {"CC": (0.0, 10.0), "PR": (5.5, 9.5)}
"""The y-axis limits of each panel (its bottom and top frame lines), read off the tick labels."""
PANEL_ORDER = ("CC", "PR")
KS = (2, 3, 4, 5, 6, 7)
READING_ERROR = 0.1
"""Half-width of the hand reading of one plotted value (``datacard``: "+-0.1"). The automatic digitisation
measures how far the hand reading is from the markers (`max_reading_difference`)."""


def load_official_figure() -> np.ndarray:
    """The committed CC and PR panels of the official figure as an (H, W, 3) uint8 array."""
    from PIL import Image

    if not OFFICIAL_FIGURE.exists():
        raise FileNotFoundError(f"the official figure is missing: {OFFICIAL_FIGURE} ({PROVENANCE})")
    return np.asarray(Image.open(OFFICIAL_FIGURE).convert("RGB"))


def _codes(img: np.ndarray) -> np.ndarray:
    """One integer per pixel (0xRRGGBB): colour masks become one comparison."""
    x = np.asarray(img).astype(np.int32)
    return (x[..., 0] << 16) | (x[..., 1] << 8) | x[..., 2]


def _code(rgb) -> int:
    return (int(rgb[0]) << 16) | (int(rgb[1]) << 8) | int(rgb[2])


def _panel(img: np.ndarray, metric: str) -> tuple[np.ndarray, int]:
    """The panel of ``metric`` (left half: CC, right half: PR) and its x offset in the image."""
    if metric not in PANEL_ORDER:
        raise ValueError(f"metric must be one of {PANEL_ORDER}, got {metric!r}")
    half = img.shape[1] // 2
    i = PANEL_ORDER.index(metric)
    return img[:, i * half:(i + 1) * half], i * half


def _frame(panel: np.ndarray) -> tuple[int, int]:
    """Top and bottom rows of the panel's frame: the rows that are dark over most of their width."""
    dark = panel.astype(int).sum(-1) < 200
    rows = np.flatnonzero(dark.mean(1) > 0.5)
    if len(rows) < 2:
        raise ValueError("no frame found in the figure panel")
    return int(rows.min()), int(rows.max())


def _k_columns(codes: np.ndarray) -> np.ndarray:
    """The x of the markers at k = 2..7: the six highest peaks of the column profile of coloured pixels."""
    from scipy.signal import find_peaks

    coloured = np.isin(codes, [_code(rgb) for rgb in LEGEND_COLOURS.values()])
    prof = coloured.sum(0).astype(float)
    peaks, _ = find_peaks(prof, distance=codes.shape[1] // 9)
    if len(peaks) < len(KS):
        raise ValueError(f"found {len(peaks)} marker columns, expected {len(KS)}")
    return np.sort(peaks[np.argsort(prof[peaks])[-len(KS):]])


def _marker_row(mask: np.ndarray, x: int, half: int = 7, min_width: int = 9, min_height: int = 6) -> float:
    """Centre row of a filled marker in column window x +- half: the longest run of rows in which at least
    ``min_width`` pixels have the colour (a line crossing the window is thinner than a marker); NaN if none."""
    win = mask[:, max(0, x - half):x + half + 1]
    rows = np.flatnonzero(win.sum(1) >= min_width)
    if len(rows) == 0:
        return float("nan")
    runs = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1)
    run = max(runs, key=len)
    return (run[0] + run[-1]) / 2.0 if len(run) >= min_height else float("nan")


def calibration(metric: str, img: np.ndarray | None = None) -> dict:
    """Where the panel of ``metric`` lies in the image: x offset, frame rows, axis limits, marker columns."""
    img = load_official_figure() if img is None else img
    panel, x0 = _panel(img, metric)
    top, bottom = _frame(panel)
    return {"x0": x0, "top": top, "bottom": bottom, "limits": AXIS_LIMITS[metric], "xs": _k_columns(_codes(panel))}


def digitise(metric: str, img: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The plotted values of every model (and ``"Overall Average"``) at k = 2..7 read from the official figure's
    markers inside the panel's frame; NaN where the marker is hidden (under another model's) or not plotted
    (OmniGen2 beyond k = 5)."""
    img = load_official_figure() if img is None else img
    cal = calibration(metric, img)
    panel, _ = _panel(img, metric)
    codes = _codes(panel)
    top, bottom, (lo, hi) = cal["top"], cal["bottom"], cal["limits"]
    inside = np.zeros(codes.shape, bool)
    inside[top + 2:bottom - 1] = True
    out = {}
    for name, rgb in {**LEGEND_COLOURS, "Overall Average": AVERAGE_COLOUR}.items():
        mask = (codes == _code(rgb)) & inside
        ys = np.array([_marker_row(mask, int(x)) for x in cal["xs"]])
        out[name] = hi - (ys - top) / (bottom - top) * (hi - lo)
    return out


def hand_curves(metric: str) -> dict[str, np.ndarray]:
    """The hand-read curves of ``datacard`` (8 models and the overall average), NaN-padded to k = 2..7."""
    out = {}
    for name, ys in {**PAPER_MODELS[metric], "Overall Average": PAPER_AVERAGE[metric]}.items():
        y = np.full(len(KS), np.nan)
        y[:len(ys)] = ys
        out[name] = y
    return out


def max_reading_difference(metric: str, img: np.ndarray | None = None, auto: dict | None = None) -> tuple[float, int, int]:
    """(largest |automatic - hand| over the markers found, markers found, markers plotted) for one panel
    (``auto``: a `digitise` result, else computed)."""
    auto, hand = (digitise(metric, img) if auto is None else auto), hand_curves(metric)
    diffs, plotted = [], 0
    for name, h in hand.items():
        a = auto[name]
        plotted += int(np.isfinite(h).sum())
        ok = np.isfinite(h) & np.isfinite(a)
        diffs.extend(np.abs(a[ok] - h[ok]).tolist())
    return (float(max(diffs)) if diffs else float("nan")), len(diffs), plotted


def drop(ys) -> float:
    """Drop of a plotted curve from k = 2 to its last plotted k (NaN-padded curves allowed)."""
    y = np.asarray(ys, float)
    y = y[np.isfinite(y)]
    if len(y) < 2:
        raise ValueError("a curve needs at least two plotted values")
    return float(y[0] - y[-1])


def tier_drop(ys) -> float:
    """Mean of the Easy tier (k = 2, 3) minus the mean of the hardest tier the curve reaches (Hard: k = 6, 7;
    Medium: k = 4, 5 for a curve plotted up to k = 5): a reading of "as complexity increases" that does not
    rest on the single k = 7 point."""
    y = np.asarray(ys, float)
    n = int(np.isfinite(y).sum())
    last = (4, 5) if n <= 4 else (6, 7)
    return float(np.nanmean(y[:2]) - np.nanmean(y[[k - 2 for k in last]]))


def reading_interval(value: float, n_reads: int = 2, error: float = READING_ERROR):
    """A `SeedSummary`-shaped interval for a statistic of read values: ``value`` +- n_reads x error (each read
    value within +-error of the plotted one; interval arithmetic). ``values`` holds the two ends, ``method``
    says it is a reading interval, not a seed interval."""
    from icml26.stats import SeedSummary

    half = n_reads * error
    return SeedSummary((value - half, value + half), float(value), float(half), value - half, value + half,
                       1.0, f"reading error +-{error:g} per value")


def worst_drop(curves: dict[str, np.ndarray], fn=drop) -> tuple[str, float]:
    """(model, value) of the smallest drop over the curves (the worst case for "all models degrade")."""
    vals = {n: fn(y) for n, y in curves.items()}
    name = min(vals, key=vals.get)
    return name, vals[name]


def verdict_sweep(curves: dict[str, np.ndarray], thresholds, fn=drop, error: float = READING_ERROR) -> list[str]:
    """For each threshold t of "notable": the verdict of "every curve's drop >= t" read from the worst curve's
    reading interval: reproduced (inside), not reproduced (outside) or inconclusive (straddles)."""
    _, w = worst_drop(curves, fn)
    out = []
    for t in thresholds:
        lo, hi = w - 2 * error, w + 2 * error
        out.append("reproduced" if lo >= t else "not reproduced" if hi < t else "inconclusive")
    return out
