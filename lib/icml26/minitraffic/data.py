"""Datasets from the simulator: a target corridor (lane and road speeds, few-shot days) and source
corridors (road speeds only, many days), windows T -> H that never cross a simulated day, splits by day.

Stand-in for the paper's PeMS-Lane/PeMS-Road (target: 8 roads, lanes [5, 6, 5, 6, 5, 6, 5, 5] = 43
lanes) and its multi-source road pre-training data.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .simulator import Corridor, DayResult, simulate_day

PEMS_LANES = (5, 6, 5, 6, 5, 6, 5, 5)


def fill_missing(x: np.ndarray) -> np.ndarray:
    """Forward-fill NaN along the last axis (a leading NaN takes the first valid value)."""
    x = np.array(x, dtype=float, copy=True)
    for row in x.reshape(-1, x.shape[-1]):
        valid = np.flatnonzero(~np.isnan(row))
        if valid.size == 0:
            raise ValueError("a detector series is entirely missing")
        idx = np.maximum.accumulate(np.where(np.isnan(row), 0, np.arange(row.size)))
        idx[: valid[0]] = valid[0]
        row[:] = row[idx]
    return x


class DaySplit:
    """A chronological day split: training days first, then ``n_val`` validation days, then ``n_test`` test days."""

    n_train_max: int
    n_val: int
    n_test: int

    @property
    def val_days(self) -> list[int]:
        return list(range(self.n_train_max, self.n_train_max + self.n_val))

    @property
    def test_days(self) -> list[int]:
        start = self.n_train_max + self.n_val
        return list(range(start, start + self.n_test))


@dataclass
class Target(DaySplit):
    """The target corridor: per day (n, 288) lane / road speeds (filled), masks, lane -> road map."""

    corridor: Corridor
    days: list                      # DayResult per day, chronological
    lane_road: np.ndarray           # (n_lanes,) road index of each lane
    lane_pos: np.ndarray            # (n_lanes,) lane index within its road
    n_train_max: int
    n_val: int
    n_test: int

    @property
    def n_lanes(self) -> int:
        return self.corridor.n_lanes

    @property
    def n_roads(self) -> int:
        return self.corridor.n_roads

    def lane(self, day: int) -> np.ndarray:
        return fill_missing(self.days[day].lane_speed)

    def road(self, day: int) -> np.ndarray:
        return fill_missing(self.days[day].road_speed)

    def observed(self, day: int, level: str = "lane") -> np.ndarray:
        raw = self.days[day].lane_speed if level == "lane" else self.days[day].road_speed
        return ~np.isnan(raw) & (np.nan_to_num(raw) >= 1.0)

    def train_days(self, n: int) -> list[int]:
        """The ``n`` training days just before the validation day (few-shot D_L = n)."""
        if not 1 <= n <= self.n_train_max:
            raise ValueError(f"D_L must be in [1, {self.n_train_max}], got {n}")
        return list(range(self.n_train_max - n, self.n_train_max))



def _weekend(day: int) -> bool:
    return day % 7 in (5, 6)


def make_target(lanes=PEMS_LANES, n_train_max: int = 7, n_val: int = 1, n_test: int = 2, seed: int = 0,
                demand_max: float = 1350.0, incident_rate: float = 0.5, progress=None) -> Target:
    """Simulate the target corridor: ``n_train_max + n_val + n_test`` consecutive days."""
    lanes = tuple(int(j) for j in lanes)
    if min(n_train_max, n_test) < 1 or n_val < 0:
        raise ValueError(f"need >= 1 train and test day and >= 0 val days, got {n_train_max}, {n_val}, {n_test}")
    n = len(lanes)
    corridor = Corridor(lanes=lanes, demand_max=demand_max, incident_rate=incident_rate,
                        onramp_at=max(1, n // 2 - 1), offramp_at=min(n - 1, n // 2 + 1))
    total = n_train_max + n_val + n_test
    it = range(total) if progress is None else progress(range(total), desc="target days")
    days = [simulate_day(corridor, seed=10_000 * (seed + 1) + d, weekend=_weekend(d)) for d in it]
    lane_road = np.repeat(np.arange(n), lanes)
    lane_pos = np.concatenate([np.arange(j) for j in lanes])
    return Target(corridor, days, lane_road, lane_pos, n_train_max, n_val, n_test)


def make_sources(n_corridors: int, n_days: int, seed: int = 0, progress=None) -> list[np.ndarray]:
    """Source corridors' road speeds: a list of (n_roads, 288) arrays (filled), one per corridor-day.

    Corridors differ in roads (5-8), lanes (3-6), peak demand, free-speed offset and incident rate.
    """
    if n_corridors < 1 or n_days < 1:
        raise ValueError(f"need >= 1 source corridor and day, got {n_corridors}, {n_days}")
    rng = np.random.default_rng(seed + 7)
    jobs = []
    for c in range(n_corridors):
        n_roads = int(rng.integers(5, 9))
        lanes = tuple(int(v) for v in rng.integers(3, 7, size=n_roads))
        corridor = Corridor(lanes=lanes, demand_max=float(rng.uniform(1150, 1500)),
                            speed_offset=float(rng.uniform(-8, 5)), incident_rate=float(rng.uniform(0.3, 0.7)),
                            onramp_at=int(rng.integers(1, n_roads - 1)), offramp_at=int(rng.integers(2, n_roads)))
        jobs += [(corridor, 1_000 * (c + 1) + d + 100_000 * seed, _weekend(d)) for d in range(n_days)]
    it = jobs if progress is None else progress(jobs, desc="source corridor-days")
    return [fill_missing(simulate_day(cor, seed=s, weekend=w).road_speed) for cor, s, w in it]


def windows(series: np.ndarray, T: int, H: int, stride: int = 1, observed: np.ndarray | None = None):
    """All windows of one day: x (W, N, T), y (W, N, H), ymask (W, N, H); never across days."""
    if series.ndim != 2:
        raise ValueError(f"series must be (channels, time), got shape {series.shape}")
    if np.isnan(series).any():
        raise ValueError("series contains NaN off the missing mask: fill it (fill_missing) first")
    L = series.shape[1]
    starts = np.arange(0, L - T - H + 1, stride)
    x = np.stack([series[:, s:s + T] for s in starts])
    y = np.stack([series[:, s + T:s + T + H] for s in starts])
    m = np.ones_like(y, bool) if observed is None else np.stack([observed[:, s + T:s + T + H] for s in starts])
    return x, y, m
