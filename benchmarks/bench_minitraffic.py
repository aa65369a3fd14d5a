"""kNN graph attention, forward + backward: 16 windows x 688 tokens (43 lanes x 16 patches), d = 64, k = 8.

Contenders: ours (`KNNGraphAttention`: gathers on a (B, N, k) neighbour index), the peer
`torch_geometric.nn.GATConv(add_self_loops=False)` on the same edges (the same algorithm, the layer the
released code uses), dense `F.scaled_dot_product_attention` over all 688 tokens (what the kNN graph
replaces), and the released code's path (KMeans(5) over the batch x patch tokens, kNN inside clusters,
GAT). `test_ratio_vs_pyg` records ours / PyG in `results/bench/minitraffic.json` (target <= 1.5), the
like-for-like ratio. The kNN attention needs 1.2 % of the dense FLOPs; the committed measurement has it
several times faster than dense SDPA at 688 tokens (read the ratio from the JSON, not from this docstring).
The "released" contender is not like-for-like (256 tokens of width n_vars * P, KMeans outside autograd).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from icml26.minitraffic import KNNGraphAttention, MiniTraffic, knn_graph
from icml26.timing import interleaved_best, record_bench

GATConv = pytest.importorskip("torch_geometric.nn").GATConv

B, N, D, K, HEADS = 16, 688, 64, 8, 4
ROUNDS = 7


def _inputs():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(B, N, D, generator=g)
    idx = knn_graph(h, K)
    src = (idx + torch.arange(B).view(B, 1, 1) * N).reshape(-1)
    dst = torch.arange(B * N).repeat_interleave(K)
    return h, idx, torch.stack([src, dst])


def _contenders():
    torch.manual_seed(0)
    h, idx, edge = _inputs()
    ours = KNNGraphAttention(D, D // HEADS, heads=HEADS)
    pyg = GATConv(D, D // HEADS, heads=HEADS, add_self_loops=False)
    wq = torch.nn.Linear(D, 3 * D)
    released = MiniTraffic(d=D, d_ff=128, layers=1, heads=4, graph_heads=4, released_code=True, released_channels=43)
    xr = 80 + torch.randn(B, 43, 18)

    def run_ours():
        x = h.clone().requires_grad_(True)
        ours(x, idx).sum().backward()

    def run_pyg():
        x = h.reshape(B * N, D).clone().requires_grad_(True)
        pyg(x, edge).sum().backward()

    def run_dense():
        x = h.clone().requires_grad_(True)
        q, k, v = wq(x).view(B, N, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        F.scaled_dot_product_attention(q, k, v).sum().backward()

    def run_released():
        p = released.patchify(released.revin.norm(xr)).requires_grad_(True)
        released._released_mixer(p).sum().backward()

    return {"ours": run_ours, "pyg": run_pyg, "dense": run_dense, "released": run_released}


@pytest.mark.parametrize("name", ["ours", "pyg", "dense", "released"])
def test_knn_attention(benchmark, name):
    fn = _contenders()[name]
    benchmark.group = "kNN graph attention fwd+bwd, 16 x 688 tokens, d=64, k=8"
    benchmark(fn)


def test_ratio_vs_pyg():
    torch.set_num_threads(1)
    c = _contenders()
    best = interleaved_best(c, rounds=ROUNDS)
    rec = record_bench("minitraffic", "knn_graph_attention_fwd_bwd", "icml26.minitraffic.KNNGraphAttention",
                       best["ours"], "torch_geometric.nn.GATConv", best["pyg"], ROUNDS,
                       note=f"16 x 688 tokens, d=64, k=8, 1 thread; dense SDPA {best['dense'] * 1e3:.1f} ms, "
                            f"released KMeans+GAT path {best['released'] * 1e3:.1f} ms, "
                            f"ours {best['ours'] * 1e3:.1f} ms, PyG {best['pyg'] * 1e3:.1f} ms")
    print(rec["note"])
    assert rec["ratio"] <= 1.5
