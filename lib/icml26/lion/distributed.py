"""Real multi-process distributed Lion on ``torch.distributed`` (brief Algorithms 3-4).

One process per node. Each worker keeps its own momentum m^j and its own data (its node of O1),
forms v^j at the shared iterate, and the nodes agree on one direction u per step:

* ``avg_sign`` (Alg. 3, uncompressed): ``all_reduce`` of the full-precision v^j, then sign of the mean.
* ``mv`` / ``uu`` / ``sign_mv`` (Alg. 4, 1 bit each way): each worker packs Q1(v^j) into uint8
  (8 signs per byte), rank 0 (the server) ``gather``s the packed bytes, applies Q2 and ``broadcast``s
  the packed 1-bit result.

Bytes are counted as the payloads handed to the collectives, per worker per step, next to the
full-precision all-reduce payload of a float32 implementation (d float32 values each way; ours
all-reduces the simulator's float64, 2x that, so that its iterates equal the simulator's exactly). The same worker code runs on a
cluster: launch with ``torchrun`` and call :func:`lion_worker` with ``init_method="env://"``.
For tests :func:`run_distributed` spawns the processes locally on a free port (gloo, CPU).
"""
from __future__ import annotations

import datetime
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ._checks import check_positive_int
from .compression import downlink, needs_downlink_uniforms, needs_uplink_uniforms, pack_signs, unpack_signs, uplink
from .objectives import PeriodicObjective
from .schedules import METHODS, STORM_INTERPOLATION, Schedule
from .simulator import RandomStream, Variant, lion_loop

FLOAT32_BYTES = 4


@dataclass
class WorkerConfig:
    """Everything one worker needs (picklable): the full objective, the run, and the randomness mode.

    ``replicate_simulator_rng=True`` gives every worker a replica of the simulator's generator (it
    draws all nodes' numbers and keeps its own), so iterates match :func:`simulator.simulate` with the
    same seed; ``False`` gives each worker an independent generator seeded by (seed, rank).
    """

    objective: PeriodicObjective
    method: str
    T: int
    schedule: Schedule
    x0: float = 0.0
    center: float = 0.0
    seed: int = 0
    tie: str | None = "random"
    replicate_simulator_rng: bool = True
    storm_interpolation: bool | None = None   # None: the method's own form (schedules.STORM_INTERPOLATION)


@dataclass
class DistributedResult:
    """Outcome of one multi-process run (iterates from rank 0; all ranks hold the same iterates).

    bytes_up / bytes_down: payload bytes a worker sends / receives per step in the collectives;
    fp32_allreduce_bytes: the payload of a float32 all-reduce of the d-vector (per direction).
    """

    method: str
    n_workers: int
    d: int
    T: int
    iterates: np.ndarray  # (T + 1, d): x_1 .. x_{T+1}
    bytes_up: int
    bytes_down: int
    fp32_allreduce_bytes: int
    ranks_agree: bool
    wall_s: float


def _make_exchange(cfg: WorkerConfig, rank: int, world: int, counter: dict[str, int]):
    rule = METHODS[cfg.method][0]
    d, G = cfg.objective.d, cfg.objective.G

    def exchange(v: torch.Tensor, up_u: torch.Tensor | None, down_u: torch.Tensor | None) -> torch.Tensor:
        v = v[:, 0]  # (1, d): this worker's direction
        if rule == "avg_sign":  # Alg. 3: full-precision average
            total = v.clone()
            dist.all_reduce(total, op=dist.ReduceOp.SUM)
            counter["up"] += total.numel() * total.element_size()
            counter["down"] += total.numel() * total.element_size()
            return torch.sign(total / world)
        message = uplink(v, rule, G, uniforms=None if up_u is None else up_u[:, 0])
        packed = pack_signs(message)  # (1, ceil(d/8)) uint8
        gathered = [torch.empty_like(packed) for _ in range(world)] if rank == 0 else None
        dist.gather(packed, gathered, dst=0)
        counter["up"] += packed.numel() * packed.element_size()
        if rank == 0:
            votes = unpack_signs(torch.cat(gathered), d, dtype=torch.float64)  # (n, d)
            u = downlink(votes, rule, cfg.tie, node_dim=0, uniforms=None if down_u is None else down_u[0])
            result = pack_signs(u.unsqueeze(0))
        else:
            result = torch.empty_like(packed)
        dist.broadcast(result, src=0)
        counter["down"] += result.numel() * result.element_size()
        return unpack_signs(result, d, dtype=torch.float64)

    return exchange


def lion_worker(cfg: WorkerConfig, rank: int, world_size: int) -> dict:
    """Run one worker in an initialised process group; returns its iterates and byte counts."""
    rule, vr, _ = METHODS[cfg.method]
    if cfg.objective.n_nodes != world_size:
        raise ValueError(f"objective has {cfg.objective.n_nodes} nodes but the world has {world_size} workers")
    if cfg.replicate_simulator_rng:
        stream = RandomStream(torch.Generator().manual_seed(cfg.seed), world_size, node=rank)
    else:
        stream = RandomStream(torch.Generator().manual_seed(cfg.seed * 1_000_003 + rank), 1)
    counter = {"up": 0, "down": 0}
    x0 = torch.full((1, cfg.objective.d), float(cfg.x0), dtype=torch.float64)
    center = torch.full((1, cfg.objective.d), float(cfg.center), dtype=torch.float64) if cfg.center else None
    out = lion_loop(cfg.objective.node(rank), [cfg.schedule], [cfg.T], x0, stream,
                    _make_exchange(cfg, rank, world_size, counter), vr=vr, center=center,
                    needs_up=needs_uplink_uniforms(rule), needs_down=needs_downlink_uniforms(rule, cfg.tie),
                    storm_interpolation=(STORM_INTERPOLATION.get(cfg.method, False) if cfg.storm_interpolation is None
                                         else cfg.storm_interpolation), record_iterates=True)
    return {"iterates": out.iterates[:, 0].numpy(), "bytes_up": counter["up"] // cfg.T,
            "bytes_down": counter["down"] // cfg.T}


def _spawned_worker(rank: int, world_size: int, configs: list[WorkerConfig], init_method: str,
                    timeout_s: float, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        results = [lion_worker(cfg, rank, world_size) for cfg in configs]
        torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    """A TCP port that is free on localhost right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check_distributed_rule(method: str, n: int, tie: str | None) -> None:
    rule = METHODS[method][0]
    if rule in ("mv", "sign_mv") and n % 2 == 0 and tie != "random":
        raise ValueError(f"{method!r} with an even number of workers ({n}) needs tie='random': "
                         "a zero vote cannot travel in a 1-bit downlink")


def run_distributed(objective: PeriodicObjective, methods: Sequence[str], T: int, *, tie: str | None = "random",
                    seed: int = 0, replicate_simulator_rng: bool = True, timeout_s: float = 120.0,
                    **variant) -> dict[str, DistributedResult]:
    """Spawn ``objective.n_nodes`` local gloo processes and run each of ``methods`` for T steps.

    ``variant``: the keyword arguments of :class:`icml26.lion.simulator.Variant` (x0, center, c_eta,
    c_beta, beta1_power, weight_decay, ...), so the schedule is exactly the one :func:`simulator.simulate`
    uses with the same keywords. One process group serves all methods (one start-up cost). Raises
    ``TimeoutError`` if the workers do not finish within ``timeout_s`` seconds (they are terminated).
    """
    spec = Variant(**variant)
    n, d = objective.n_nodes, objective.d
    check_positive_int(T, "T")
    if n < 2:
        raise ValueError("run_distributed needs an objective with at least 2 nodes (one process per node)")
    configs = []
    for method in methods:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; valid: {tuple(METHODS)}")
        _check_distributed_rule(method, n, tie)
        sched = spec.schedule(method, T, d, n, objective.G)
        configs.append(WorkerConfig(objective, method, T, sched, spec.x0, spec.center, seed, tie,
                                    replicate_simulator_rng))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out_dir:
        init_method = f"tcp://127.0.0.1:{free_port()}"
        ctx = mp.start_processes(_spawned_worker, args=(n, configs, init_method, timeout_s, out_dir),
                                 nprocs=n, join=False, start_method="spawn")
        deadline = time.monotonic() + timeout_s
        while not ctx.join(timeout=1.0):
            if time.monotonic() > deadline:
                for p in ctx.processes:
                    if p.is_alive():
                        p.terminate()
                raise TimeoutError(f"distributed workers did not finish within {timeout_s} s")
        per_rank = [torch.load(os.path.join(out_dir, f"rank{r}.pt"), weights_only=False) for r in range(n)]
    wall = time.perf_counter() - start
    results = {}
    for i, method in enumerate(methods):
        rank0 = per_rank[0][i]
        agree = all(np.array_equal(rank0["iterates"], per_rank[r][i]["iterates"]) for r in range(1, n))
        results[method] = DistributedResult(
            method, n, d, T, rank0["iterates"], rank0["bytes_up"], rank0["bytes_down"],
            d * FLOAT32_BYTES, agree, wall)
    return results
