"""The server-side MoE router (brief section 2.3): g(x) = softmax(W2 ReLU(W1 mean_t h_t(x))), h the frozen base's
final hidden states of the input ``BOS z SEP``, top-k selection with the gates renormalised over the chosen experts.

Training deviates from the released code, on purpose (pitfall 3): the code's local loss
(1/B) sum_i l_i g_k(x_i) + 0.01 Var_j[mean_i g_j] + 0.1 mean_i H(softmax(g(x_i))) has d(l g_k)/d g_k = l > 0, so every
client pushes its *own* gate down, and its entropy term is a double softmax (nearly constant, and added: it
sharpens). We train by cross-entropy to the client id, federated with FedAvg; `code_router_loss` is kept to
demonstrate the degeneracy. The run script's default keyword router (automotive keywords) has no analogue on digit
strings; the neural router is the one reproduced.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .data import BOS, N_STAGES, SEP, check_no_stage_token


class Router(nn.Module):
    def __init__(self, d_in: int, hidden: int = 64, n_experts: int = N_STAGES, seed: int = 0):
        super().__init__()
        if n_experts < 2:
            raise ValueError(f"a router needs K >= 2 experts, got {n_experts}")
        self.n_experts = n_experts
        with torch.random.fork_rng(devices=[]):     # nn.Linear's own init draws from the global RNG: restore it after
            self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, n_experts))
        g = torch.Generator().manual_seed(seed)     # a local generator: the global torch RNG is left untouched
        with torch.no_grad():
            for lin in (self.net[0], self.net[2]):   # nn.Linear's default law, U(-1/sqrt(fan_in), 1/sqrt(fan_in))
                bound = 1.0 / lin.in_features ** 0.5
                lin.weight.copy_(torch.rand(lin.weight.shape, generator=g) * 2 * bound - bound)
                lin.bias.copy_(torch.rand(lin.bias.shape, generator=g) * 2 * bound - bound)
        self.register_buffer("mu", torch.zeros(d_in))
        self.register_buffer("sd", torch.ones(d_in))

    def logits(self, feats: torch.Tensor) -> torch.Tensor:
        return self.net((feats - self.mu) / self.sd)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.logits(feats), -1)


@torch.no_grad()
def base_features(base, inputs: Sequence[Sequence[int]]) -> torch.Tensor:
    """mean_t h_t of the frozen base over ``BOS z SEP`` (grouped by length: no padding inside the mean)."""
    out = torch.zeros(len(inputs), base.d)
    lengths = np.array([len(z) for z in inputs])
    for L in np.unique(lengths):
        idx = np.flatnonzero(lengths == L)
        ids = torch.tensor([[BOS, *inputs[i], SEP] for i in idx], dtype=torch.long)
        check_no_stage_token(ids)
        out[idx] = base.hidden(ids).mean(1)
    return out


def top_k_gates(g: np.ndarray | torch.Tensor, top_k: int) -> np.ndarray:
    """Keep the top_k gates of each row and renormalise them to sum to 1 (pitfall: unnormalised fusion)."""
    g = np.asarray(g, dtype=np.float64)
    K = g.shape[1]
    if not 1 <= top_k <= K:
        raise ValueError(f"top_k must be in [1, K = {K}], got {top_k}")
    if not np.all(np.isfinite(g)):
        raise ValueError("router gates contain NaN or inf")
    order = np.argsort(-g, axis=1, kind="stable")[:, :top_k]
    out = np.zeros_like(g)
    rows = np.arange(len(g))[:, None]
    out[rows, order] = g[rows, order]
    return out / out.sum(1, keepdims=True)


def uniform_gates(n: int, K: int = N_STAGES) -> np.ndarray:
    return np.full((n, K), 1.0 / K)


def train_router(feats: Sequence[torch.Tensor], cfg: dict, seed: int, loss: str = "ce",
                 lm_losses: Sequence[torch.Tensor] | None = None) -> Router:
    """Federated router training, FedAdam-style (OpenFedLLM's `fedadam`): client k holds feats[k] (its own stage's
    inputs) and, each round, takes ``router_steps`` SGD steps (lr 1) from the global router on a minibatch; the server
    treats the mean client displacement as a gradient for its Adam (lr ``router_lr``). With one local step this is
    FedSGD with a server Adam. A client's own data has a single class (its id), so many local steps per round would
    let every client collapse onto its own id before averaging. ``loss='ce'``: cross-entropy to the client id (ours);
    ``loss='code'``: the released weighted loss (`code_router_loss`, needs ``lm_losses``)."""
    if loss not in ("ce", "code"):
        raise ValueError(f"router loss must be 'ce' or 'code', got {loss!r}")
    if loss == "code" and lm_losses is None:
        raise ValueError("the code's router loss needs the per-example LM losses (lm_losses)")
    if len(feats) < 2 or any(len(f) == 0 for f in feats):
        raise ValueError("router training needs K >= 2 clients, each with data")
    allf = torch.cat(list(feats))
    router = Router(allf.shape[1], cfg["router_hidden"], len(feats), seed=seed)
    router.mu.copy_(allf.mean(0))
    router.sd.copy_(allf.std(0).clamp_min(1e-4))
    g = torch.Generator().manual_seed(seed)
    params = list(router.net.parameters())
    server = torch.optim.Adam(params, lr=cfg["router_lr"])
    for _ in range(cfg["router_rounds"]):
        start = [p.detach().clone() for p in params]
        delta = [torch.zeros_like(p) for p in params]
        for k, f in enumerate(feats):
            with torch.no_grad():
                for p, s in zip(params, start):
                    p.copy_(s)
            for _ in range(cfg["router_steps"]):
                idx = torch.randint(0, len(f), (min(64, len(f)),), generator=g)
                if loss == "ce":
                    out = F.cross_entropy(router.logits(f[idx]), torch.full((len(idx),), k))
                else:
                    out = code_router_loss(router(f[idx]), lm_losses[k][idx], k)
                grads = torch.autograd.grad(out, params)
                with torch.no_grad():
                    for p, gr in zip(params, grads):
                        p.sub_(gr)
            with torch.no_grad():
                for d, p, s in zip(delta, params, start):
                    d.add_((s - p) / len(feats))
        with torch.no_grad():
            for p, s in zip(params, start):
                p.copy_(s)
        for p, d in zip(params, delta):
            p.grad = d
        server.step()
    return router


def code_router_loss(gates: torch.Tensor, lm_loss: torch.Tensor, k: int) -> torch.Tensor:
    """The released local router loss of client k: mean(l_i g_k) + 0.01 Var_j(mean_i g_j) + 0.1 mean H(softmax(g))."""
    usage = gates.mean(0)
    ent = -(torch.softmax(gates, -1) * torch.log_softmax(gates, -1)).sum(-1).mean()
    return (lm_loss * gates[:, k]).mean() + 0.01 * usage.var() + 0.1 * ent


def double_softmax_entropy(p: np.ndarray) -> np.ndarray:
    """H(softmax(p)) for rows p on the simplex (the code's entropy term)."""
    p = np.asarray(p, dtype=float)
    s = np.exp(p - p.max(1, keepdims=True))
    s /= s.sum(1, keepdims=True)
    return -(s * np.log(s)).sum(1)


def ceiling_features(inputs: Sequence[Sequence[int]]) -> torch.Tensor:
    """The information the Bayes ceiling (`data.router_ceiling`) routes on, as features: whether z is a sorted string
    (a stage-1 input), its -3 image is sorted (stage 2), the reverse of that is (stage 3), the log of the number of
    strings with z's multiset of digits (how likely a uniform stage-0 draw is to be it) and a one-hot of the length.
    A router trained on these is the positive control of C4a: it can reach the ceiling, so a router short of it is
    short for want of information in its features, not for its head or its training."""
    from .data import MAX_LEN, MIN_LEN

    rows = []
    for z in inputs:
        z = tuple(int(v) for v in z)
        if not MIN_LEN <= len(z) <= MAX_LEN:
            raise ValueError(f"input {z} has length {len(z)}, outside [{MIN_LEN}, {MAX_LEN}]")
        back = tuple((v - 3) % 10 for v in z)
        counts = np.bincount(z, minlength=10)
        log_w = math.lgamma(len(z) + 1) - sum(math.lgamma(c + 1) for c in counts)
        onehot = [float(len(z) == L) for L in range(MIN_LEN, MAX_LEN + 1)]
        rows.append([float(z == tuple(sorted(z))), float(back == tuple(sorted(back))),
                     float(back[::-1] == tuple(sorted(back))), log_w, *onehot])
    return torch.tensor(rows, dtype=torch.float32)
