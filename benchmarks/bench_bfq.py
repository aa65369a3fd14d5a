"""BFQ's core kernels against the best peers on PyPI (no package implements BFQ, OFQL or FQL).

* Action generation: BFQ's one-step flow map vs the *same-size* flow-matching network sampled with Meta's
  ``flow_matching`` ``ODESolver(method="euler")``, 10 steps (FM-10, the multi-step generation BFQ replaces),
  batch 1 and 256, 3x256 MLPs. Target: BFQ >= 5x faster (ratio ours/peer <= 0.2).
* Training step: one BFQ gradient step (twin critics + flow-map actor, Bernoulli switch per update) vs one
  torchrl ``TD3BCLoss`` step (critic + actor losses, backward, Adam) at equal sizes, batch 256. TD3+BC is the
  cheapest behaviour-regularised actor-critic; BFQ does more work per step (up to three flow-map passes for the
  composition target), so the bound is a cost ceiling, ratio <= 2.5.

Run: ``pytest benchmarks/bench_bfq.py`` (``make bench``); ratios recorded in ``results/bench/bfq.json``.
"""
from __future__ import annotations

import warnings

import pytest
import torch

from icml26.bfq import AgentConfig, BehaviorRegularizedAgent, FlowMapPolicy, FlowMatchingPolicy, OfflineDataset
from icml26.bfq.conventions import to_fql_time
from icml26.timing import interleaved_best, record_bench

flow_matching = pytest.importorskip("flow_matching")
pytest.importorskip("torchrl")
from flow_matching.solver import ODESolver  # noqa: E402
from flow_matching.utils import ModelWrapper  # noqa: E402

from icml26.bfq import peers  # noqa: E402

HIDDEN = (256, 256, 256)
STATE, ACTION = 10, 2
ROUNDS = 7
torch.set_num_threads(1)


def _generators(batch: int, reps: int):
    g = torch.Generator().manual_seed(0)
    s = torch.randn(1, batch, STATE, generator=g)
    eps = torch.randn(1, batch, ACTION, generator=g)
    bfq = FlowMapPolicy([0], ACTION, STATE, HIDDEN, 64)
    fm = FlowMatchingPolicy([0], ACTION, STATE, HIDDEN, 64)

    class Wrapped(ModelWrapper):
        def forward(self, x, t, **extras):
            return -fm.velocity(x[None], to_fql_time(t).expand(1, batch, 1), s)[0]

    solver = ODESolver(velocity_model=Wrapped(fm))
    grid = torch.tensor([0.0, 1.0])

    @torch.no_grad()
    def ours():
        for _ in range(reps):
            bfq.sample(s, eps)

    @torch.no_grad()
    def peer():
        for _ in range(reps):
            solver.sample(x_init=eps[0], step_size=0.1, method="euler", time_grid=grid)

    return ours, peer


@pytest.mark.parametrize("batch", [1, 256])
def test_action_generation(benchmark, batch):
    ours, _ = _generators(batch, 1)
    benchmark.group = f"action generation, batch {batch}"
    benchmark(ours)


@pytest.mark.parametrize("batch", [1, 256])
def test_ratio_one_step_vs_flow_matching_euler10(batch):
    reps = 50 if batch == 1 else 10
    ours, peer = _generators(batch, reps)
    best = interleaved_best({"bfq": ours, "fm10": peer}, rounds=ROUNDS)
    ratio = best["bfq"] / best["fm10"]
    print(f"\nbatch {batch}: BFQ-1 {best['bfq'] / reps * 1e3:.3f} ms, flow_matching Euler-10 {best['fm10'] / reps * 1e3:.3f} ms,"
          f" ratio {ratio:.3f}")
    record_bench("bfq", f"action generation, batch {batch}, 3x256", "icml26.bfq.FlowMapPolicy.sample (1 pass)",
                 best["bfq"] / reps, "flow_matching ODESolver euler, 10 steps, same-size net", best["fm10"] / reps,
                 rounds=ROUNDS, note="the multi-step generation that BFQ's one-step map replaces")
    assert ratio <= 0.2


def test_ratio_train_step_vs_torchrl_td3bc():
    g = torch.Generator().manual_seed(0)
    n = 4096
    s, s2 = torch.randn(n, STATE, generator=g), torch.randn(n, STATE, generator=g)
    a = torch.rand(n, ACTION, generator=g) * 2 - 1
    r, d = torch.randn(n, generator=g), torch.zeros(n)
    data = OfflineDataset("bench", s, a, r, s2, d, torch.zeros(1).numpy())
    cfg = AgentConfig(hidden=HIDDEN)
    bfq = BehaviorRegularizedAgent("bfq", [0], data, cfg)
    td3 = BehaviorRegularizedAgent("td3bc", [0], data, cfg)
    loss = peers.torchrl_td3bc(td3)
    opt = torch.optim.Adam(loss.parameters(), lr=3e-4)
    idx = torch.randint(0, n, (256,), generator=g)
    batch = peers.torchrl_batch(s[idx], a[idx], r[idx], s2[idx], d[idx])

    def peer_step():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = loss(batch)
        opt.zero_grad(set_to_none=True)
        (out["loss_actor"] + out["loss_qvalue"]).backward()
        opt.step()

    reps = 3
    best = interleaved_best({"bfq": lambda: [bfq.update() for _ in range(reps)],
                             "torchrl": lambda: [peer_step() for _ in range(reps)]}, rounds=ROUNDS)
    ratio = best["bfq"] / best["torchrl"]
    print(f"\ntrain step, batch 256, 3x256: BFQ {best['bfq'] / reps * 1e3:.1f} ms, torchrl TD3BCLoss "
          f"{best['torchrl'] / reps * 1e3:.1f} ms, ratio {ratio:.2f}")
    record_bench("bfq", "training step (critic + actor), batch 256, 3x256", "icml26.bfq BFQ update",
                 best["bfq"] / reps, "torchrl TD3BCLoss step (losses, backward, Adam)", best["torchrl"] / reps,
                 rounds=ROUNDS, note="different algorithms: TD3+BC is the cheapest behaviour-regularised step; "
                                     "BFQ's composition target costs up to three flow-map passes")
    assert ratio <= 2.5
