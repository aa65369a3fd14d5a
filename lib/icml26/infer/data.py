"""Ground truth for the INFER chapter: a simulated, confined, reverberant "cabin" (brief §5.1).

Stand-in for the paper's real car cabins, MeshRIR and RAF: a pyroomacoustics image-source (ISM)
simulation of a small shoebox with frequency-dependent (octave-band) absorption and a two-driver
loudspeaker (woofer + tweeter, 0.12 m apart) behind a 4th-order Linkwitz-Riley crossover. The
complex frequency response at receiver ``r`` is

    H_r(f) = RFFT_N( taper * [ LR4_LP * h_{w,r}  +  LR4_HP * h_{t,r} ] + noise )         (brief §5.1)

where ``h_{w,r}``, ``h_{t,r}`` are the ISM room impulse responses (RIRs) from the two drivers and the
filters are applied causally in the time domain (so H stays the transform of a causal sequence).

pyroomacoustics delays every RIR by ``frac_delay_length // 2`` samples (40 for its default 81-tap
fractional-delay sinc); :func:`arrival_samples` includes that offset, which the renderer's
time-of-flight mask needs (brief §7, pitfall 4).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import signal

SPEED_OF_SOUND = 343.0
"""m/s, pyroomacoustics' default ``c``."""

#: octave-band centre frequencies of the absorption tables (Hz)
BAND_CENTERS = (125, 250, 500, 1000, 2000, 4000)
#: absorption coefficients per surface: glass/plastic floor and side walls (reflective), padded roof
#: and seat-back walls (absorptive). Plausible cabin values, our choice (brief §5.1).
CABIN_ABSORPTION: dict[str, tuple[float, ...]] = {
    "floor": (0.04, 0.05, 0.06, 0.08, 0.10, 0.12),
    "ceiling": (0.20, 0.35, 0.50, 0.60, 0.65, 0.70),
    "west": (0.10, 0.18, 0.30, 0.45, 0.55, 0.60),    # front: dashboard
    "east": (0.15, 0.30, 0.45, 0.55, 0.60, 0.65),    # rear: seat backs
    "south": (0.04, 0.04, 0.05, 0.05, 0.06, 0.06),   # side glass
    "north": (0.04, 0.04, 0.05, 0.05, 0.06, 0.06),   # side glass
}

MIN_FS = 1000
MAX_FS = 48000


@dataclass(frozen=True)
class CabinConfig:
    """Geometry and signal sizes of one simulated cabin.

    ``fs`` sampling rate (Hz), ``n_fft`` DFT length of the modelled response (F = n_fft/2 + 1 bins),
    ``ir_length`` samples of the simulated response that are kept (must fit in ``n_fft``),
    ``max_order`` ISM reflection order, ``grid`` receivers per axis (an axis with one receiver sits at
    ``plane_z`` for z, mid-room for x and y), ``margin`` (m) between the receiver grid and the walls,
    ``crossover_hz`` the woofer/tweeter crossover, ``noise_db`` white measurement-noise level relative
    to the mean response energy per sample, ``zero_phase_hpf`` keeps pyroomacoustics' default
    zero-phase RIR high-pass (acausal: only for the negative control of the data-causality check).

    Spatial sampling: the field at frequency f varies on the scale of the wavelength c/f, so a grid of
    spacing delta represents it without aliasing only below c / (2 delta) (:meth:`alias_frequency`);
    the default one plane of 24 x 12 receivers (delta ~ 0.1 m) is unaliased to ~1.6 kHz, above the
    modelled band (0.45 fs = 900 Hz at fs = 2 kHz).
    """

    room: tuple[float, float, float] = (2.6, 1.5, 1.2)
    fs: int = 2000
    n_fft: int = 256
    ir_length: int = 256
    max_order: int = 10
    grid: tuple[int, int, int] = (24, 12, 1)
    margin: float = 0.15
    speaker: tuple[float, float, float] = (0.35, 0.2, 0.55)
    driver_spacing: float = 0.12
    crossover_hz: float = 450.0
    noise_db: float = -40.0
    taper: int = 24
    test_fraction: float = 0.25
    extrapolation_x: float = 0.75
    plane_z: float = 0.6
    zero_phase_hpf: bool = False
    seed: int = 0

    def __post_init__(self):
        room = np.asarray(self.room, dtype=float)
        if room.shape != (3,) or not np.all(np.isfinite(room)) or np.any(room <= 0):
            raise ValueError(f"room must be three positive finite lengths in metres, got {self.room}")
        if not isinstance(self.fs, (int, np.integer)) or not MIN_FS <= self.fs <= MAX_FS:
            raise ValueError(
                f"fs={self.fs!r}: the simulation needs an integer sampling rate in [{MIN_FS}, {MAX_FS}] Hz "
                f"(below {MIN_FS} Hz pyroomacoustics keeps only its 125 Hz octave band, so the cabin's "
                "frequency-dependent absorption would be lost)")
        if not 0 < self.crossover_hz < 0.25 * self.fs:
            raise ValueError(
                f"fs={self.fs} Hz cannot honour a {self.crossover_hz} Hz crossover: the crossover must lie "
                f"below fs/4 = {self.fs / 4:g} Hz so that both drivers' bands are inside the simulated band")
        if not isinstance(self.n_fft, (int, np.integer)) or self.n_fft < 16 or self.n_fft % 2:
            raise ValueError(f"n_fft must be an even integer >= 16, got {self.n_fft!r}")
        if not isinstance(self.ir_length, (int, np.integer)) or self.ir_length < 8:
            raise ValueError(f"ir_length must be an integer >= 8, got {self.ir_length!r}")
        if self.n_fft < self.ir_length:
            raise ValueError(
                f"n_fft={self.n_fft} is smaller than the response ({self.ir_length} samples): the DFT would "
                "alias the response circularly; use n_fft >= ir_length")
        if not isinstance(self.max_order, (int, np.integer)) or self.max_order < 0:
            raise ValueError(f"max_order must be a non-negative integer, got {self.max_order!r}")
        if (len(self.grid) != 3 or not all(isinstance(g, (int, np.integer)) and not isinstance(g, bool) for g in self.grid)
                or any(g < 1 for g in self.grid)):
            raise ValueError(f"grid must be three positive integer receiver counts, got {self.grid}")
        if not self.margin <= self.plane_z <= room[2] - self.margin:
            raise ValueError(f"plane_z={self.plane_z} m must lie inside the room, at least margin={self.margin} m from "
                             f"floor and ceiling")
        if not 0 <= self.margin < 0.5 * room.min():
            raise ValueError(f"margin must be in [0, {0.5 * room.min():g}) m, got {self.margin}")
        check_inside(np.asarray(self.speaker)[None], self.room, what="speaker")
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"test_fraction must be in (0, 1), got {self.test_fraction}")
        if not 0 < self.extrapolation_x < 1:
            raise ValueError(f"extrapolation_x must be a fraction of the room length in (0, 1), got {self.extrapolation_x}")

    @property
    def n_freq(self) -> int:
        return self.n_fft // 2 + 1

    @property
    def freqs(self) -> np.ndarray:
        """One-sided DFT grid f_k = k fs / N, k = 0..N/2 (Hz)."""
        return np.fft.rfftfreq(self.n_fft, 1.0 / self.fs)

    def spacing(self) -> np.ndarray:
        """Receiver spacing per axis (m); ``nan`` on an axis with a single receiver."""
        return np.array([(L - 2 * self.margin) / (n - 1) if n > 1 else np.nan for L, n in zip(self.room, self.grid)])

    def alias_frequency(self) -> float:
        """c / (2 max spacing): above this frequency the receiver grid under-samples the field (spatial Nyquist)."""
        return float(SPEED_OF_SOUND / (2 * np.nanmax(self.spacing())))

    def drivers(self) -> np.ndarray:
        """Woofer and tweeter positions [2, 3]: the tweeter sits ``driver_spacing`` above the woofer."""
        s = np.asarray(self.speaker, dtype=float)
        return np.stack([s - [0, 0, self.driver_spacing / 2], s + [0, 0, self.driver_spacing / 2]])


def check_inside(points: np.ndarray, room, what: str = "receivers", margin: float = 0.0) -> np.ndarray:
    """Raise a ValueError unless every point of ``points`` [M, 3] lies inside the shoebox ``room``."""
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f"{what} must be an array of shape [M, 3], got shape {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{what} contain NaN or infinite coordinates")
    room = np.asarray(room, dtype=float)
    outside = np.any((p < margin) | (p > room - margin), axis=1)
    if outside.any():
        i = int(np.argmax(outside))
        raise ValueError(f"{int(outside.sum())} of the {what} lie outside the room [0, {room.tolist()}] m "
                         f"(first: index {i}, position {p[i].round(3).tolist()})")
    return p


def receiver_grid(cfg: CabinConfig) -> np.ndarray:
    """The regular receiver grid [M, 3] inside the room, ``cfg.margin`` from every wall."""
    mid = (cfg.room[0] / 2, cfg.room[1] / 2, cfg.plane_z)
    axes = [np.linspace(cfg.margin, L - cfg.margin, int(n)) if n > 1 else np.array([c])
            for L, n, c in zip(cfg.room, cfg.grid, mid)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)


def linkwitz_riley(fc: float, fs: int) -> tuple[np.ndarray, np.ndarray]:
    """4th-order Linkwitz-Riley low- and high-pass (squared 2nd-order Butterworth), as SOS arrays."""
    lp = signal.butter(2, fc, "low", fs=fs, output="sos")
    hp = signal.butter(2, fc, "high", fs=fs, output="sos")
    return np.concatenate([lp, lp]), np.concatenate([hp, hp])


def global_delay() -> int:
    """The fixed delay (samples) pyroomacoustics puts in front of every RIR: frac_delay_length // 2."""
    import pyroomacoustics as pra

    return int(pra.constants.get("frac_delay_length")) // 2


def arrival_samples(receivers: np.ndarray, cfg: CabinConfig) -> np.ndarray:
    """Direct-sound arrival (fractional samples) at each receiver: the pyroomacoustics delay plus the
    time of flight from the nearer driver, ``n_arr = D + fs * min_d |x_r - x_d| / c``."""
    r = np.asarray(receivers, dtype=float)
    d = np.linalg.norm(r[:, None, :] - cfg.drivers()[None], axis=-1).min(1)
    return global_delay() + cfg.fs * d / SPEED_OF_SOUND


def simulate_rirs(cfg: CabinConfig, receivers: np.ndarray) -> np.ndarray:
    """pyroomacoustics ISM RIRs from both drivers to ``receivers`` [M, 3] -> array [2, M, L] (raw, untruncated)."""
    import pyroomacoustics as pra

    receivers = check_inside(receivers, cfg.room)
    materials = {wall: pra.Material({"coeffs": list(c), "center_freqs": list(BAND_CENTERS)})
                 for wall, c in CABIN_ABSORPTION.items()}
    room = pra.ShoeBox(list(cfg.room), fs=int(cfg.fs), materials=materials, max_order=int(cfg.max_order),
                       air_absorption=True, ray_tracing=False, min_phase=True)
    for pos in cfg.drivers():
        room.add_source(list(pos))
    room.add_microphone_array(receivers.T.copy())
    # pyroomacoustics high-passes every RIR with a zero-phase (sosfiltfilt) filter by default: that
    # smears energy in front of the direct sound, which makes the ground truth acausal. Switch it off
    # for this call only (unless cfg.zero_phase_hpf asks for the default, as a negative control), and
    # keep its octave-band filters minimum phase (min_phase=True above).
    previous = pra.constants.get("rir_hpf_enable")
    pra.constants.set("rir_hpf_enable", bool(cfg.zero_phase_hpf))
    try:
        room.compute_rir()
    finally:
        pra.constants.set("rir_hpf_enable", previous)
    length = max(len(room.rir[m][s]) for m in range(len(receivers)) for s in range(2))
    out = np.zeros((2, len(receivers), length))
    for m in range(len(receivers)):
        for s in range(2):
            h = room.rir[m][s]
            out[s, m, :len(h)] = h
    return out


def cabin_responses(cfg: CabinConfig, receivers: np.ndarray, rng: np.random.Generator | None = None,
                    info: dict | None = None) -> np.ndarray:
    """Time-domain responses [M, ir_length] at ``receivers``: crossover-filtered two-driver RIR sum,
    truncated with a half-Hann taper over the last ``cfg.taper`` samples, plus white measurement noise.

    The crossover filters run over the whole simulated RIR; the fraction of its energy beyond
    ``ir_length`` (lost to the truncation) goes into ``info["truncated_energy"]`` (max over receivers).
    """
    rirs = simulate_rirs(cfg, receivers)
    lp, hp = linkwitz_riley(cfg.crossover_hz, cfg.fs)
    L = cfg.ir_length
    if rirs.shape[-1] < L:
        rirs = np.pad(rirs, ((0, 0), (0, 0), (0, L - rirs.shape[-1])))
    h = signal.sosfilt(lp, rirs[0], axis=-1) + signal.sosfilt(hp, rirs[1], axis=-1)
    if info is not None:
        e = h ** 2
        info["truncated_energy"] = float(np.max(e[:, L:].sum(1) / np.maximum(e.sum(1), 1e-30)))
    h = h[:, :L].copy()
    if cfg.taper > 0:
        t = min(cfg.taper, L)
        h[:, L - t:] *= np.hanning(2 * t)[t:]
    if rng is not None and cfg.noise_db is not None:
        level = np.sqrt(np.mean(h ** 2) * 10 ** (cfg.noise_db / 10))
        h = h + level * rng.standard_normal(h.shape)
    return h


@dataclass
class CabinData:
    """Simulated cabin dataset: receivers, time responses, complex frequency responses and splits.

    ``H`` is normalised by ``scale`` (the RMS of |H| over the training receivers) so that all
    models see responses of order one; ``h`` is the matching time response.
    """

    cfg: CabinConfig
    receivers: np.ndarray          # [M, 3] m
    h: np.ndarray                  # [M, n_fft] normalised time responses (zero beyond ir_length)
    H: np.ndarray                  # [M, F] complex, = rfft(h)
    arrival: np.ndarray            # [M] direct-sound arrival in samples (incl. the pra delay)
    train: np.ndarray              # indices, interpolation split
    test: np.ndarray
    extra_train: np.ndarray        # indices, extrapolation split (rear slab x > extrapolation_x * Lx held out)
    extra_test: np.ndarray
    scale: float
    sim_seconds: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def freqs(self) -> np.ndarray:
        return self.cfg.freqs

    @property
    def n_freq(self) -> int:
        return self.cfg.n_freq


def simulate_cabin(cfg: CabinConfig | None = None, receivers: np.ndarray | None = None) -> CabinData:
    """Simulate the cabin at ``receivers`` (default: :func:`receiver_grid`) and build the splits.

    Raises ValueError for receivers outside the room (and, through :class:`CabinConfig`, for a
    sampling rate the simulation cannot honour or an FFT shorter than the response).
    """
    import time

    cfg = cfg or CabinConfig()
    receivers = receiver_grid(cfg) if receivers is None else check_inside(receivers, cfg.room)
    rng = np.random.default_rng(cfg.seed)
    t0 = time.perf_counter()
    info: dict = {}
    h = cabin_responses(cfg, receivers, rng, info=info)
    sim_seconds = time.perf_counter() - t0
    h = np.pad(h, ((0, 0), (0, cfg.n_fft - h.shape[1])))
    M = len(receivers)
    perm = rng.permutation(M)
    n_test = max(1, int(round(cfg.test_fraction * M)))
    test, train = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    rear = receivers[:, 0] > cfg.extrapolation_x * cfg.room[0]
    extra_test, extra_train = np.flatnonzero(rear), np.flatnonzero(~rear)
    H = np.fft.rfft(h, cfg.n_fft, axis=-1)
    scale = float(np.sqrt(np.mean(np.abs(H[train]) ** 2)))
    return CabinData(cfg=cfg, receivers=receivers, h=h / scale, H=H / scale,
                     arrival=arrival_samples(receivers, cfg), train=train, test=test,
                     extra_train=extra_train, extra_test=extra_test, scale=scale, sim_seconds=sim_seconds, info=info)


def room_modes(room, n_max: int = 3, f_max: float | None = None) -> np.ndarray:
    """Sorted axial/tangential/oblique mode frequencies f_lmn = c/2 sqrt((l/Lx)^2 + (m/Ly)^2 + (n/Lz)^2)."""
    Lx, Ly, Lz = room
    f = sorted({SPEED_OF_SOUND / 2 * np.sqrt((l / Lx) ** 2 + (m / Ly) ** 2 + (n / Lz) ** 2)
                for l in range(n_max + 1) for m in range(n_max + 1) for n in range(n_max + 1) if l + m + n > 0})
    f = np.asarray(f)
    return f if f_max is None else f[f <= f_max]


def ground_truth_at(data: CabinData, receivers: np.ndarray) -> np.ndarray:
    """Noise-free ground-truth responses [M, F] at arbitrary receivers, normalised like ``data.H``
    (a fresh simulation: used by the interactive section to move the receiver off the grid)."""
    receivers = check_inside(receivers, data.cfg.room)
    h = cabin_responses(data.cfg, receivers, rng=None)
    return np.fft.rfft(h, data.cfg.n_fft, axis=-1) / data.scale
