"""Lane-level corridor traffic from a maintained mesoscopic simulator (uxsim, C++ engine).

A **secondary lab** beside the released PeMS-Lane files (`pems`): it fails the chapter's realism check
(simulated lanes have a daytime lag-1 autocorrelation near 0.3 against about 0.9 for real lanes: platoons of
DELTAN vehicles and speeds read from instantaneous travel times make them noisy), so no forecasting claim is
judged on it. The corridor: a freeway corridor of ``len(lanes)`` road segments, each lane a single-lane uxsim `Link`
(Newell's simplified car-following = triangular fundamental diagram) between road nodes, so that lanes
differ (free-flow speed ``110 - 5 j`` km/h plus a corridor offset, lane choice, incidents) instead of
uxsim's identical round-robin lanes. At each node ~30 % of platoons re-choose by DUO (the quickest lane,
incident avoidance); the others keep a lateral position drawn at departure (``links_prefer``); traffic
for an off-ramp takes the right lane. AM/PM (weekday) or midday (weekend) demand with AR(1) noise,
an on-ramp and an off-ramp, a lane drop at the downstream end, and Poisson incidents that cut one
lane's discharge capacity for 15-60 min.

Detectors: per lane link and 5-min bin, flow ``q = dN_dep/dt`` and a speed from the link's instantaneous
travel time (not Edie's q / k); the road speed is ``sum q / sum k = sum q / sum(q/v)``
(total flow over total density, the flow-weighted harmonic mean of the lane speeds, Theory T4).
Sensor noise N(0, 1) km/h and ~1 % missing readings are added afterwards.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BIN_S = 300                     # detector aggregation, seconds (5 min)
DAY_S = 24 * 3600
BINS_PER_DAY = DAY_S // BIN_S   # 288
KAPPA = 0.2                     # jam density, veh/m/lane
REACTION_TIME = 1.5             # s; sets the capacity q_c = u kappa w / (u + w), w = 1/(tau kappa)
DELTAN = 5                      # platoon size (uxsim's deltan)
LINK_LENGTH = 800.0             # m per lane link (one road segment)
CONNECTOR_LENGTH = 50.0


def capacity_veh_per_h(free_flow_kmh: float, tau: float = REACTION_TIME, kappa: float = KAPPA) -> float:
    """Capacity of the triangular fundamental diagram of Newell's model: q_c = u kappa w / (u + w)."""
    u = free_flow_kmh / 3.6
    w = 1.0 / (tau * kappa)
    return 3600.0 * u * kappa * w / (u + w)


@dataclass(frozen=True)
class Corridor:
    """One corridor's layout and demand parameters (validated)."""

    lanes: tuple[int, ...]
    demand_max: float = 1300.0            # veh/h per lane of road 0 at the peak
    speed_offset: float = 0.0             # km/h added to every lane's free-flow speed
    incident_rate: float = 0.5            # Poisson rate per corridor-day
    onramp_at: int = 2                    # node index of the on-ramp
    offramp_at: int = 4                   # node index of the off-ramp
    offramp_share: float = 0.12
    onramp_share: float = 0.12
    duo_share: float = 0.3                # share of platoons choosing their lane by DUO at each node
    lane_drop: int = 1                    # lanes lost at the downstream end

    def __post_init__(self):
        if len(self.lanes) < 2:
            raise ValueError(f"a corridor needs at least 2 roads, got lanes={self.lanes}")
        if any((not isinstance(j, (int, np.integer))) or j < 2 or j > 8 for j in self.lanes):
            raise ValueError(f"lanes per road must be integers in [2, 8], got {self.lanes}")
        if self.demand_max < 0 or self.onramp_share < 0 or self.offramp_share < 0:
            raise ValueError("demand parameters must be non-negative")
        if not 0 <= self.duo_share <= 1:
            raise ValueError(f"duo_share must be in [0, 1], got {self.duo_share}")
        if self.incident_rate < 0:
            raise ValueError(f"incident_rate must be >= 0, got {self.incident_rate}")
        for name, node in (("onramp_at", self.onramp_at), ("offramp_at", self.offramp_at)):
            if not 1 <= node <= len(self.lanes) - 1:
                raise ValueError(f"{name} must be an inner node in [1, {len(self.lanes) - 1}], got {node}")
        if not 0 <= self.lane_drop < self.lanes[-1]:
            raise ValueError(f"lane_drop must be in [0, {self.lanes[-1]}), got {self.lane_drop}")

    @property
    def n_roads(self) -> int:
        return len(self.lanes)

    @property
    def n_lanes(self) -> int:
        return int(sum(self.lanes))

    def free_speed(self, road: int, lane: int) -> float:
        """Free-flow speed of lane ``lane`` (0 = leftmost) in km/h: 110 - 5 j + offset."""
        return 110.0 - 5.0 * lane + self.speed_offset


@dataclass
class Incident:
    road: int
    lane: int
    start_s: float
    end_s: float
    factor: float


@dataclass
class DayResult:
    """Detector output of one simulated day (bins of 5 min)."""

    lane_speed: np.ndarray            # (n_lanes, 288) km/h, noisy, NaN where missing
    lane_flow: np.ndarray             # (n_lanes, 288) veh/h
    road_speed: np.ndarray            # (n_roads, 288) km/h, noisy, NaN where missing
    lane_speed_clean: np.ndarray      # (n_lanes, 288) before noise
    road_speed_clean: np.ndarray
    incident_mask: np.ndarray         # (n_lanes, 288) bool: lane blocked
    incidents: list = field(default_factory=list)
    vehicles_in: int = 0
    vehicles_out: int = 0
    vehicles_left: int = 0
    weekend: bool = False


def demand_profile(weekend: bool, rng: np.random.Generator) -> np.ndarray:
    """Relative demand per 5-min bin, g(t) (1 + u_t) with AR(1) u (phi 0.95, sigma 0.05)."""
    h = (np.arange(BINS_PER_DAY) + 0.5) * BIN_S / 3600.0
    if weekend:
        g = 0.12 + 0.7 * np.exp(-0.5 * ((h - 13.5) / 3.0) ** 2)
    else:
        g = 0.12 + 0.55 * np.exp(-0.5 * ((h - 12.5) / 4.0) ** 2) \
            + 0.55 * np.exp(-0.5 * ((h - 8.0) / 1.0) ** 2) + 0.6 * np.exp(-0.5 * ((h - 17.5) / 1.5) ** 2)
        g = g / g.max()
    g = g * (0.2 + 0.8 * np.clip((h - 4.0) / 2.0, 0, 1)) + 0.03   # night
    u = np.zeros(BINS_PER_DAY)
    for t in range(1, BINS_PER_DAY):
        u[t] = 0.95 * u[t - 1] + 0.05 * rng.standard_normal()
    return np.clip(g * (1.0 + u), 0.0, None)


def simulate_day(corridor: Corridor, seed: int, weekend: bool = False, noise_kmh: float = 1.0,
                 missing: float = 0.01, incidents: list[Incident] | None = None) -> DayResult:
    """Simulate one 24-h day of ``corridor`` with uxsim's C++ engine (seed-deterministic).

    ``incidents``: explicit incidents (else Poisson draws at ``corridor.incident_rate``).
    """
    from uxsim import World

    if noise_kmh < 0 or not 0 <= missing < 1:
        raise ValueError(f"noise_kmh must be >= 0 and missing in [0, 1), got {noise_kmh}, {missing}")
    rng = np.random.default_rng(seed)
    lanes = corridor.lanes
    I = corridor.n_roads
    W = World(name="", deltan=DELTAN, reaction_time=REACTION_TIME, tmax=DAY_S + 3600, random_seed=int(seed),
              print_mode=0, save_mode=0, show_mode=0, show_progress=0, vehicle_logging_timestep_interval=-1,
              duo_update_time=300, cpp=True)
    for i in range(I + 1):
        W.addNode(f"n{i}", 800.0 * i, 0.0)
    lane_links: list[list] = []
    for i in range(I):
        row = []
        for j in range(lanes[i]):
            W.addNode(f"m{i}_{j}", 800.0 * i + 400.0, 10.0 * j)
            link = W.addLink(f"r{i}l{j}", f"n{i}", f"m{i}_{j}", length=LINK_LENGTH,
                             free_flow_speed=corridor.free_speed(i, j) / 3.6, jam_density=KAPPA)
            W.addLink(f"c{i}_{j}", f"m{i}_{j}", f"n{i + 1}", length=CONNECTOR_LENGTH,
                      free_flow_speed=corridor.free_speed(i, j) / 3.6, jam_density=KAPPA)
            row.append(link)
        lane_links.append(row)
    W.addNode("end", 800.0 * (I + 1), 0.0)
    kept = lanes[-1] - corridor.lane_drop
    W.addLink("exit", f"n{I}", "end", length=600.0, free_flow_speed=100 / 3.6, jam_density=KAPPA * kept,
              number_of_lanes=kept)
    W.addNode("on", 800.0 * corridor.onramp_at - 200, -100.0)
    W.addLink("onramp", "on", f"n{corridor.onramp_at}", length=300.0, free_flow_speed=60 / 3.6, jam_density=KAPPA)
    W.addNode("off", 800.0 * corridor.offramp_at + 200, -100.0)
    W.addLink("offramp", f"n{corridor.offramp_at}", "off", length=300.0, free_flow_speed=60 / 3.6, jam_density=KAPPA)

    profile = demand_profile(weekend, rng)
    main_rate = corridor.demand_max * lanes[0] * profile          # veh/h per bin
    vehicles_in = 0

    def lanes_for(position: float, exit_node: int | None, start: int) -> list:
        prefer = []
        for i in range(start, I):
            if exit_node is not None and i >= exit_node:
                break
            if exit_node is not None and i >= exit_node - 2:
                j = lanes[i] - 1
            else:
                j = min(int(position * lanes[i]), lanes[i] - 1)
            prefer.append(lane_links[i][j])
        return prefer

    for b in range(BINS_PER_DAY):
        for origin, rate, start in (("n0", main_rate[b], 0),
                                    ("on", corridor.demand_max * corridor.onramp_share * lanes[0] * profile[b],
                                     corridor.onramp_at)):
            n_platoons = rng.poisson(rate * BIN_S / 3600.0 / DELTAN)
            times = np.sort(rng.uniform(b * BIN_S, (b + 1) * BIN_S, n_platoons))
            for t in times:
                exits = origin == "n0" and rng.random() < corridor.offramp_share
                dest = "off" if exits else "end"
                if rng.random() < corridor.duo_share and not exits:
                    prefer = []
                else:
                    prefer = lanes_for(rng.random(), corridor.offramp_at if exits else None, start)
                W.addVehicle(origin, dest, float(t), links_prefer=prefer)
                vehicles_in += DELTAN

    if incidents is None:
        incidents = []
        for _ in range(rng.poisson(corridor.incident_rate)):
            road = int(rng.integers(I))
            start_s = float(rng.uniform(6 * 3600, 20 * 3600))
            incidents.append(Incident(road, int(rng.integers(lanes[road])), start_s,
                                      start_s + 60.0 * rng.uniform(15, 60), float(rng.uniform(0.1, 0.3))))
    for inc in incidents:
        if not 0 <= inc.road < I or not 0 <= inc.lane < lanes[inc.road]:
            raise ValueError(f"incident on a missing lane: road {inc.road}, lane {inc.lane} (lanes {lanes})")
        if not 0 <= inc.start_s < inc.end_s <= DAY_S or not 0 <= inc.factor <= 1:
            raise ValueError(f"incident times must satisfy 0 <= start < end <= 1 day and factor in [0, 1]: {inc}")
    events = sorted([(inc.start_s, 0, inc) for inc in incidents] + [(inc.end_s, 1, inc) for inc in incidents],
                    key=lambda e: (e[0], e[1]))
    original = {}
    for t, kind, inc in events:
        W.exec_simulation(until_t=t)
        link = lane_links[inc.road][inc.lane]
        if kind == 0:
            original.setdefault(link.name, link.capacity_out)
            link.capacity_out = capacity_veh_per_h(corridor.free_speed(inc.road, inc.lane)) / 3600.0 * inc.factor
        else:
            link.capacity_out = original[link.name]
    W.exec_simulation()

    dt = W.DELTAT
    step = int(round(BIN_S / dt))
    n_bins_steps = BINS_PER_DAY * step
    speeds, flows, blocked = [], [], []
    road_speed = np.zeros((I, BINS_PER_DAY))
    for i in range(I):
        q_sum = np.zeros(BINS_PER_DAY)
        k_sum = np.zeros(BINS_PER_DAY)
        for j, link in enumerate(lane_links[i]):
            A = np.asarray(link.cum_arrival, dtype=float)[: n_bins_steps + 1]
            Dp = np.asarray(link.cum_departure, dtype=float)[: n_bins_steps + 1]
            n_t = np.clip(A - Dp, 0.0, None)[:n_bins_steps].reshape(BINS_PER_DAY, step)   # vehicles on the link
            tt = np.asarray(link.traveltime_instant, dtype=float)[:n_bins_steps].reshape(BINS_PER_DAY, step)
            v_t = LINK_LENGTH / np.maximum(tt, 1e-9)                                      # space-mean, m/s
            q = (Dp[step::step] - Dp[:-1:step][:BINS_PER_DAY]) / BIN_S                  # veh/s
            v_free = corridor.free_speed(i, j) / 3.6
            occupancy = n_t.sum(axis=1)
            v = np.where(occupancy > 0, (n_t * v_t).sum(axis=1) / np.maximum(occupancy, 1e-12), v_free)
            v = np.clip(v, 0.5, v_free)                                                 # Edie: sum N v / sum N
            speeds.append(v * 3.6)
            flows.append(q * 3600.0)
            q_sum += q
            k_sum += q / v                                                               # density k = q / v
            mask = np.zeros(BINS_PER_DAY, bool)
            for inc in incidents:
                if inc.road == i and inc.lane == j:
                    mask[int(inc.start_s // BIN_S): int(np.ceil(inc.end_s / BIN_S))] = True
            blocked.append(mask)
        lane_v = np.asarray(speeds[-lanes[i]:]) / 3.6
        # v_R = sum q / sum(q / v) (T4); with no flow in the bin, the lanes' mean speed
        road_speed[i] = np.where(k_sum > 0, q_sum / np.maximum(k_sum, 1e-15), lane_v.mean(axis=0)) * 3.6
    lane_clean = np.asarray(speeds)
    out = int(round(np.asarray(W.get_link("exit").cum_departure)[-1] + np.asarray(W.get_link("offramp").cum_departure)[-1]))
    on_network = sum(int(round(np.asarray(l.cum_arrival)[-1] - np.asarray(l.cum_departure)[-1])) for l in W.LINKS)
    in_network = sum(int(round(np.asarray(l.cum_arrival)[-1])) for l in (W.get_link("onramp"),)) + \
        sum(int(round(np.asarray(l.cum_arrival)[-1])) for l in lane_links[0])
    noisy_lane = lane_clean + noise_kmh * rng.standard_normal(lane_clean.shape)
    noisy_road = road_speed + noise_kmh * rng.standard_normal(road_speed.shape)
    noisy_lane[rng.random(noisy_lane.shape) < missing] = np.nan
    noisy_road[rng.random(noisy_road.shape) < missing] = np.nan
    return DayResult(lane_speed=noisy_lane, lane_flow=np.asarray(flows), road_speed=noisy_road,
                     lane_speed_clean=lane_clean, road_speed_clean=road_speed, incident_mask=np.asarray(blocked),
                     incidents=list(incidents), vehicles_in=in_network, vehicles_out=out,
                     vehicles_left=on_network, weekend=weekend)
