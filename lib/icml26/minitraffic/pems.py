"""The paper's real data: PeMS-Lane (43 lanes) and its road series, as released by the authors.

Files (``pems_data/``, copied unchanged from github.com/ShuhaoLii/Mini-Traffic ``dataset/`` at commit
118b29b; provenance in ``pems_data/PROVENANCE.md``; Caltrans PeMS measurements, speeds in **mph**):

* ``PeMS_speed_43.csv``: PeMS-Lane, 43 lane detectors, 8,059 five-minute rows (2017-02-05 .. 2017-03-04).
* ``PeMS_road_speed_43.csv``: its 8 road series; each is the arithmetic mean of its lanes (lanes per road
  6, 5, 5, 6, 5, 6, 5, 5; checked exactly by `road_lane_mean_error`).
* ``all_speed_40.csv`` / ``PeMS_road_speed_40.csv``: PeMSF-Lane (40 lanes, 5 per road) and its roads. The 40
  lanes are **a subset of the 43** (the same detectors, the same days: 39 columns identical, one with an offset;
  `pemsf_lane_index` finds them): the
  released protocol's road pre-training source (``PeMS_road_speed_40``) is the target corridor's own road
  series, not another corridor.

``all_speed_40.csv`` carries the timestamps (the 43-lane file only a row number; its rows match it one to
one, checked); two rows without a timestamp are dropped and the 5 missing steps are forward-filled onto a
complete grid of 28 days x 288 bins.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .data import DaySplit

DATA_DIR = Path(__file__).with_name("pems_data")
PEMS43_GROUPS = (6, 5, 5, 6, 5, 6, 5, 5)
BINS = 288
N_DAYS = 28


def _read(name: str):
    import pandas as pd

    path = DATA_DIR / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the PeMS files ship with the chapter (see PROVENANCE.md)")
    return pd.read_csv(path, index_col=0)


def _to_grid(values: np.ndarray, stamps) -> np.ndarray:
    """Rows with timestamps -> (n, 28, 288) on the complete 5-min grid (missing steps forward-filled)."""
    import pandas as pd

    t = pd.to_datetime(pd.Index(stamps), format="%m/%d/%Y %H:%M", errors="coerce")
    keep = ~t.isna()
    frame = pd.DataFrame(values[keep], index=t[keep])
    frame = frame[~frame.index.duplicated()]
    grid = pd.date_range("2017-02-05 00:00", periods=N_DAYS * BINS, freq="5min")
    full = frame.reindex(grid).ffill().bfill()
    if full.isna().any().any():
        raise ValueError("a PeMS series is entirely missing")
    return full.to_numpy(float).T.reshape(values.shape[1], N_DAYS, BINS)


@dataclass
class PemsData:
    """PeMS-Lane on a (channels, day, bin) grid; day 0 = Sunday 2017-02-05."""

    lane: np.ndarray          # (43, 28, 288) mph
    road: np.ndarray          # (8, 28, 288) mph, the released road file (= mean of the lanes)
    road40: np.ndarray        # (8, 28, 288) mph, the released pre-training source (PeMSF roads)
    lane_road: np.ndarray     # (43,) road of each lane
    lane_pos: np.ndarray      # (43,) lane index within its road
    pemsf_index: np.ndarray   # (40,) the PeMS-43 lane behind each PeMSF lane

    @property
    def weekday(self) -> np.ndarray:
        """(28,) True on Monday-Friday (day 0 is a Sunday)."""
        return np.array([d % 7 not in (0, 6) for d in range(N_DAYS)])


@lru_cache(maxsize=1)
def load_pems() -> PemsData:
    """Read the released CSVs (cached)."""
    l43, r43, l40, r40 = (_read(n) for n in ("PeMS_speed_43.csv", "PeMS_road_speed_43.csv", "all_speed_40.csv",
                                             "PeMS_road_speed_40.csv"))
    if not (len(l43) == len(r43) == len(l40)):
        raise ValueError(f"row counts differ: {len(l43)}, {len(r43)}, {len(l40)}")
    idx = pemsf_lane_index(l43.to_numpy(float), l40.to_numpy(float))
    lane = _to_grid(l43.to_numpy(float), l40.index)
    road = _to_grid(r43.to_numpy(float), l40.index)
    road40 = _to_grid(r40.to_numpy(float), r40.index)
    lane_road = np.repeat(np.arange(len(PEMS43_GROUPS)), PEMS43_GROUPS)
    lane_pos = np.concatenate([np.arange(j) for j in PEMS43_GROUPS])
    return PemsData(lane, road, road40, lane_road, lane_pos, idx)


def pemsf_lane_index(lanes43: np.ndarray, lanes40: np.ndarray, min_corr: float = 0.9999) -> np.ndarray:
    """For each PeMSF lane the PeMS-43 column it copies: the closest one (mean absolute difference), which must correlate above
    ``min_corr`` (in the released files 39 of the 40 are identical and one, PeMSF lane 24, is PeMS lane 26
    up to a small offset; correlation > 0.99999)."""
    a = (lanes43 - lanes43.mean(0)) / lanes43.std(0)
    b = (lanes40 - lanes40.mean(0)) / lanes40.std(0)
    out = np.array([int(np.argmin(np.abs(lanes43 - lanes40[:, [j]]).mean(0))) for j in range(lanes40.shape[1])])
    corr = (a[:, out] * b).mean(0)                            # correlation with the closest column
    worst = int(np.argmin(corr))
    if corr[worst] < min_corr:
        raise ValueError(f"PeMSF lane {worst} copies no PeMS-43 lane (correlation {corr[worst]:.4f})")
    return out


def road_lane_mean_error(data: PemsData) -> float:
    """max |road - mean of its lanes| over every road and step (0 when the road file is the lane mean)."""
    mean = np.stack([data.lane[data.lane_road == r].mean(0) for r in range(data.road.shape[0])])
    return float(np.abs(mean - data.road).max())


def lag_autocorr(x: np.ndarray, lag: int = 1, hours: tuple[float, float] = (6.0, 22.0)) -> float:
    """Mean lag-``lag`` autocorrelation of series ``(..., 288)`` over the daytime bins (per series, then mean)."""
    a, b = int(hours[0] * 12), int(hours[1] * 12)
    x = np.asarray(x, float)[..., a:b].reshape(-1, b - a)
    x = x - x.mean(-1, keepdims=True)
    num = (x[:, lag:] * x[:, :-lag]).sum(-1)
    den = (x**2).sum(-1)
    ok = den > 0
    return float(np.mean(num[ok] / den[ok]))


def lane_road_distortion(lane: np.ndarray, road: np.ndarray, lane_road: np.ndarray, T: int,
                         stride: int = 6) -> np.ndarray:
    """||lane_AC - road_AC||^2 / ||road_AC||^2 over windows of length T (AC: the window's mean removed): how
    far a real lane is from its road, the distortion an FDA pseudo-lane stands in for. ``lane (L, days, 288)``."""
    out = []
    for li in range(lane.shape[0]):
        for d in range(lane.shape[1]):
            lw = np.lib.stride_tricks.sliding_window_view(lane[li, d], T)[::stride]
            rw = np.lib.stride_tricks.sliding_window_view(road[lane_road[li], d], T)[::stride]
            lw = lw - lw.mean(-1, keepdims=True)
            rw = rw - rw.mean(-1, keepdims=True)
            den = (rw**2).sum(-1)
            ok = den > 1e-6
            out.append(((lw - rw) ** 2).sum(-1)[ok] / den[ok])
    return np.concatenate(out)


class RealTarget(DaySplit):
    """PeMS-Lane as the few-shot target: the interface of `data.Target` on the real series.

    Split by day, chronological (the released 70/10/20): train days 0-18, validation days 19-21, test days
    22-27. Few-shot ``D_L`` days are the last ``D_L`` **weekdays** before the validation block (the test block
    is Mon-Sat); ``D_L`` = 19 takes every training day.
    """

    n_train_max, n_val, n_test = 19, 3, 6

    def __init__(self, data: PemsData | None = None):
        self.data = load_pems() if data is None else data
        self.lane_road, self.lane_pos = self.data.lane_road, self.data.lane_pos
        self.days = list(range(N_DAYS))

    @property
    def n_lanes(self) -> int:
        return self.data.lane.shape[0]

    @property
    def n_roads(self) -> int:
        return self.data.road.shape[0]

    def lane(self, day: int) -> np.ndarray:
        return self.data.lane[:, day]

    def road(self, day: int) -> np.ndarray:
        return self.data.road[:, day]

    def observed(self, day: int, level: str = "lane") -> np.ndarray:
        x = self.lane(day) if level == "lane" else self.road(day)
        return x >= 1.0

    def train_days(self, n: int) -> list[int]:
        if n == self.n_train_max:
            return list(range(self.n_train_max))
        wd = [d for d in range(self.n_train_max) if self.data.weekday[d]]
        if not 1 <= n <= len(wd):
            raise ValueError(f"D_L must be in [1, {len(wd)}] weekdays or {self.n_train_max} (all), got {n}")
        return wd[-n:]

    def sources(self, shuffle_seed: int | None = None) -> list[np.ndarray]:
        """The released pre-training source, PeMS_road_speed_40, on the training days only: a list of (8, 288)
        road days. ``shuffle_seed``: the negative control, each road-day's bins permuted in time."""
        out = [self.data.road40[:, d].copy() for d in range(self.n_train_max)]
        if shuffle_seed is not None:
            rng = np.random.default_rng(shuffle_seed)
            out = [np.stack([rng.permutation(r) for r in day]) for day in out]
        return out
