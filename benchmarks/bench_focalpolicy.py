"""FocalPolicy's kernels against their best peers on PyPI (``make bench``; not part of ``make test``).

* The FCO frequency loss on a (128, 12, 4) batch, forward + backward, like for like: both sides transform the
  difference ``pred - target`` once (one DCT each), ours with one precomputed orthonormal DCT-II matrix
  (``einsum``), the peer with ``torch_dct.dct(norm="ortho")`` (the official code's dependency, time moved to the
  last axis and back). The released code transforms both tensors (two DCTs); that extra factor of ~2 comes from
  linearity, not from the implementation, and is not counted here. No target was set, so nothing is asserted on
  the ratio (the values must agree).
* The seed ensemble, the chapter's own speed idea: one training step of 3 seeds of the 3x128 MLP as
  `EnsembleChunkMLP` (batched matmuls) vs ``torch.func.stack_module_state`` + ``vmap`` over 3 `ChunkMLP` s (the
  generic PyTorch way) vs a Python loop over the 3 networks; the same work (forward + backward, batch 128 each).
* The UNet seed ensemble (the chapter's main network): one training step of 3 seeds of `ConditionalUnet1D` as a
  `VmapEnsemble` (``torch.func.vmap`` over stacked parameters, one call) vs a Python loop over the 3 separate
  networks; the same work (forward + backward, batch 64 per seed, down dims (16, 32), the book preset's). The
  preset docstring's unit costs refer here instead of quoting a ratio.
* Inference **per network call**, labelled as the algorithmic ratio it is: one-step FocalPolicy (1 call) vs FM-10
  through ``flow_matching``'s Euler ``ODESolver`` (10 calls) on the same network; the recorded value is the time per
  sample of chunks, and the ratio measures the algorithm (1 call vs 10), not a kernel.

Ratios are measured interleaved in one process (``icml26.timing.interleaved_best``) and recorded in
``results/bench/focalpolicy.json``.
"""
from __future__ import annotations

import pytest
import torch

from icml26.focalpolicy import freq_loss, make_policy
from icml26.focalpolicy.experiments import VARIANTS
from icml26.timing import interleaved_best, record_bench

torch_dct = pytest.importorskip("torch_dct")
flow_matching = pytest.importorskip("flow_matching")
ROUNDS = 30
REPEAT = 20
K_FCO = "FCO frequency loss, forward + backward, (128, 12, 4), one DCT each side"
K_MLP = "3-seed ensemble training step (MLP 3x128, batch 128 per seed), forward + backward"
K_UNET = "3-seed ensemble training step (UNet, down dims (16, 32), batch 64 per seed), forward + backward"
K_INF = "chunk inference per sample, batch 64: one-step (1 network call) vs FM-10 (10 calls)"
KERNELS = (K_FCO, K_MLP, K_UNET, K_INF)


@pytest.fixture(scope="module", autouse=True)
def _drop_stale_entries():
    """`record_bench` keeps the kernels already in ``results/bench/focalpolicy.json``; entries of kernels this
    file no longer measures (older revisions' two-DCT and one-call-vs-ten rows) are dropped before recording,
    so the Performance page shows only what this benchmark measures."""
    import json

    from icml26.timing import bench_dir

    path = bench_dir() / "focalpolicy.json"
    if path.exists():
        record = json.loads(path.read_text())
        kept = {k: v for k, v in record.get("comparisons", {}).items() if k in KERNELS}
        if kept != record.get("comparisons"):
            record["comparisons"] = kept
            path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    yield


def _peer_freq_loss(pred, target):
    d = torch_dct.dct((pred - target).transpose(1, 2), norm="ortho").transpose(1, 2)    # one transform, as ours
    return (d ** 2).sum(dim=(1, 2)).mean()


def _loss_step(fn, pred, target):
    def run():
        for _ in range(REPEAT):
            p = pred.detach().requires_grad_(True)
            fn(p, target).backward()
    return run


def test_fco_loss_vs_torch_dct():
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    pred, target = torch.randn(128, 12, 4, generator=g), torch.randn(128, 12, 4, generator=g)
    assert torch.allclose(freq_loss(pred, target), _peer_freq_loss(pred, target), rtol=1e-5)
    best = interleaved_best({"ours": _loss_step(freq_loss, pred, target),
                             "torch_dct": _loss_step(_peer_freq_loss, pred, target)}, rounds=ROUNDS)
    ratio = best["ours"] / best["torch_dct"]
    print(f"\nFCO frequency loss fwd+bwd (128, 12, 4): ours {best['ours'] / REPEAT * 1e6:.0f} us, "
          f"torch_dct {best['torch_dct'] / REPEAT * 1e6:.0f} us, speed-up {1 / ratio:.1f}x")
    record_bench("focalpolicy", K_FCO,
                 "icml26.focalpolicy.freq_loss", best["ours"] / REPEAT,
                 "torch_dct.dct(norm='ortho') of the difference (the official code's transform)", best["torch_dct"] / REPEAT,
                 rounds=ROUNDS, note="one torch thread; the same loss value to 1e-5; like for like (one transform each)")


def test_seed_ensemble_vs_vmap_and_loop():
    import copy

    from torch.func import functional_call, stack_module_state, vmap

    from icml26.focalpolicy.networks import ChunkMLP, EnsembleChunkMLP

    torch.set_num_threads(1)
    torch.manual_seed(0)
    S, B = 3, 128
    ens = EnsembleChunkMLP(S, 12, 4, 78)
    nets = [ens.member(s) for s in range(S)]
    params, buffers = stack_module_state(nets)
    base = copy.deepcopy(nets[0]).to("meta")
    x, t, c = torch.randn(S * B, 12, 4), torch.rand(S * B) * 99, torch.randn(S * B, 78)

    def f(p, b, xs, ts, cs):
        return functional_call(base, (p, b), (xs, ts, cs))

    with torch.no_grad():
        y_v = vmap(f)(params, buffers, x.view(S, B, 12, 4), t.view(S, B), c.view(S, B, 78)).reshape(S * B, 12, 4)
    assert torch.allclose(ens(x, t, c), y_v, atol=1e-5)

    def ours():
        for _ in range(REPEAT):
            ens.zero_grad(); ens(x, t, c).square().mean().backward()

    def vmapped():
        for _ in range(REPEAT):
            ps = {k: v.detach().requires_grad_(True) for k, v in params.items()}
            vmap(f)(ps, buffers, x.view(S, B, 12, 4), t.view(S, B), c.view(S, B, 78)).square().mean().backward()

    def loop():
        for _ in range(REPEAT):
            for s_, n in enumerate(nets):
                n.zero_grad(); n(x[s_ * B:(s_ + 1) * B], t[s_ * B:(s_ + 1) * B], c[s_ * B:(s_ + 1) * B]).square().mean().backward()

    best = interleaved_best({"ours": ours, "vmap": vmapped, "loop": loop}, rounds=ROUNDS)
    print(f"\n3-seed MLP step: EnsembleChunkMLP {best['ours'] / REPEAT * 1e6:.0f} us, torch.func vmap "
          f"{best['vmap'] / REPEAT * 1e6:.0f} us, loop {best['loop'] / REPEAT * 1e6:.0f} us")
    record_bench("focalpolicy", K_MLP,
                 "icml26.focalpolicy.EnsembleChunkMLP", best["ours"] / REPEAT,
                 "torch.func.stack_module_state + vmap over 3 ChunkMLPs", best["vmap"] / REPEAT, rounds=ROUNDS,
                 note=f"one torch thread; a Python loop over the 3 networks took {best['loop'] / REPEAT * 1e6:.0f} us")


def test_unet_vmap_ensemble_vs_loop():
    from icml26.focalpolicy.networks import ConditionalUnet1D, VmapEnsemble

    torch.set_num_threads(1)
    torch.manual_seed(0)
    S, B, kw = 3, 64, dict(down_dims=(16, 32))
    ens = VmapEnsemble(lambda: ConditionalUnet1D(12, 4, 78, **kw), S)
    nets = [ens.member(s) for s in range(S)]
    x, t, c = torch.randn(S * B, 12, 4), torch.rand(S * B) * 99, torch.randn(S * B, 78)
    with torch.no_grad():
        y_loop = torch.cat([n(x[s * B:(s + 1) * B], t[s * B:(s + 1) * B], c[s * B:(s + 1) * B]) for s, n in enumerate(nets)])
        assert torch.allclose(ens(x, t, c), y_loop, atol=1e-5)

    def vmapped():
        for _ in range(REPEAT):
            ens.zero_grad(); ens(x, t, c).square().mean().backward()

    def loop():
        for _ in range(REPEAT):
            for s_, n in enumerate(nets):
                n.zero_grad(); n(x[s_ * B:(s_ + 1) * B], t[s_ * B:(s_ + 1) * B], c[s_ * B:(s_ + 1) * B]).square().mean().backward()

    best = interleaved_best({"vmap": vmapped, "loop": loop}, rounds=ROUNDS)
    print(f"\n3-seed UNet step: VmapEnsemble {best['vmap'] / REPEAT * 1e6:.0f} us, loop {best['loop'] / REPEAT * 1e6:.0f} us")
    record_bench("focalpolicy", K_UNET,
                 "icml26.focalpolicy.VmapEnsemble (torch.func.vmap, one call)", best["vmap"] / REPEAT,
                 "a Python loop over the 3 ConditionalUnet1D networks", best["loop"] / REPEAT, rounds=ROUNDS,
                 note="one torch thread; the same outputs to 1e-5; no target set, nothing asserted on the ratio")


def test_one_step_inference_vs_fm10_ode_solver():
    from flow_matching.solver import ODESolver

    torch.set_num_threads(1)
    torch.manual_seed(0)
    pol = make_policy(VARIANTS["FocalPolicy"], 39, 4, "mlp").eval()
    obs = torch.randn(64, 2, 39)
    cond = pol._cond(obs)
    noise = torch.randn(64, 12, 4)
    solver = ODESolver(velocity_model=lambda x, t: pol.velocity(x, t.expand(x.shape[0]), cond))

    @torch.no_grad()
    def one_step():
        for _ in range(REPEAT):
            pol.sample_normalized(cond, noise)

    @torch.no_grad()
    def fm10():
        for _ in range(REPEAT):
            solver.sample(x_init=noise, step_size=0.1, method="euler")

    best = interleaved_best({"one_step": one_step, "fm10": fm10}, rounds=ROUNDS)
    ratio = best["one_step"] / best["fm10"]
    print(f"\nInference, batch 64, MLP: one-step {best['one_step'] / REPEAT * 1e6:.0f} us, FM-10 ODESolver "
          f"{best['fm10'] / REPEAT * 1e6:.0f} us, speed-up {1 / ratio:.1f}x")
    record_bench("focalpolicy", K_INF,
                 "icml26.focalpolicy FocalPolicy one-step", best["one_step"] / REPEAT,
                 "flow_matching ODESolver(euler, step 0.1), same network", best["fm10"] / REPEAT, rounds=ROUNDS,
                 note="ALGORITHMIC ratio (1 network call against 10), not a kernel comparison; FlowPolicy's one-step "
                      "inference costs the same as FocalPolicy's; one torch thread, the same MLP for both")


def test_benchmark_fco_loss(benchmark):
    g = torch.Generator().manual_seed(0)
    pred, target = torch.randn(128, 12, 4, generator=g), torch.randn(128, 12, 4, generator=g)
    benchmark.group = "FCO frequency loss"
    benchmark(_loss_step(freq_loss, pred, target))
