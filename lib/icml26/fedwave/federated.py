"""Federated LoRA training (brief section 2.2): Flower-style strategies and the client/server loop.

A strategy's ``aggregate_fit(results)`` takes ``[(params_k, n_k), ...]`` (params: name -> tensor, the trainable
LoRA factors and VCL parameters) and returns the new global parameters, as `flwr.server.strategy.Strategy` does
with its ``FitRes`` list.

* `FedAvg`: theta = sum_k (n_k / n) theta_k, on A and B separately (OpenFedLLM's default, the ICML abstract's
  "standard federated aggregation").
* `FedAvgEMA`: theta_g <- beta theta_g + (1 - beta) FedAvg (the code's server "momentum", beta = 0.9).
* `FedProx`: FedAvg on the server; the client adds (mu / 2) ||theta - theta_g||^2 (mu = 0.01).
* `PositionWeighted`: the code's value-chain aggregation (an ablation): w_k = (a (K-k) + (1-a)(k+1)) / K with a
  falling 1 -> 0.4 -> 0 over training, normalised; relaxed chain theta = sum_k w_k theta_k.
* `Scaffold`: SCAFFOLD (Karimireddy et al. 2020, "SCAFFOLD: Stochastic Controlled Averaging for Federated
  Learning", Algorithm 1 with option II), in the code's baseline list (`run_moe_valuechain.sh:154`, OpenFedLLM's
  `scaffold`). Client i starts from the server model x with y_i = x and takes E local steps
  y_i <- y_i - eta (g_i(y_i) - c_i + c)                                                 (Alg. 1, line 10)
  then sets its control variate c_i+ = c_i - c + (x - y_i) / (E eta)                     (line 12, option II);
  the server sets x <- x + eta_g mean_i (y_i - x) (eta_g = 1, i.e. FedAvg of the y_i) and
  c <- c + (|S| / N) mean_i (c_i+ - c_i) (line 17; every client takes part, |S| = N). With the chapter's local Adam,
  the correction is applied as OpenFedLLM's `SCAFFOLD_Callback` does: after each optimizer step,
  y_i <- y_i - eta (c - c_i). With plain SGD (`optimizer="sgd"`) this is exactly line 10.
* LoRA-only aggregation (regime ``fed-lora``, method ``VC-LoRA-avg``: LoRA-only exchange, per-client VCL): only the
  LoRA factors are averaged, as the release's `get_peft_model_state_dict` exchange does (`main_sft_moe.py:154-170`);
  each client's VCL stays with it and reads its stage. This is *not* the release: there one `value_chain_layer` lives
  on one model object (`main_sft_moe.py:454-462`), synced only through the PEFT dictionary and the router, and by the
  audits A3/A4 it is never trained and its output never reaches the logits, so the release-faithful FedWave is
  FedAvg-single.

At E = 1 local step per round FedProx and SCAFFOLD are FedAvg by their definitions, whatever the local optimizer
(tested): the proximal gradient mu (theta - theta_g) vanishes at the one step's start theta = theta_g, and SCAFFOLD's
corrections lr (c - c_i) average to 0 over the clients (c = mean_i c_i with every client sampled). A federated
client's local training builds a fresh Adam every round, as OpenFedLLM builds a new Trainer every round. The
non-federated regimes (local-only, centralized, centralized-eq) have no round to restart at: each keeps one Adam for
all its steps (the rounds only set the cosine learning rate and when curves are read). Restarted every few steps at
the larger swept rates, a centralized run's first, sign-like Adam steps on a low-noise pooled gradient could throw the
adapters far from the base's copy skill and leave the model at EM 0 on some seeds (`experiments.SHARED_TIED`).

`lora_product_mismatch` measures the bias of averaging the factors separately: (1/K) sum B_k A_k - B_bar A_bar
= (1/K) sum (B_k - B_bar)(A_k - A_bar) (the Theory section's identity).
"""
from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .data import N_STAGES, PairSet, deal, encode
from .model import TinyDecoder, add_lora, lm_loss
from .vcl import REG_WEIGHTS, make_vcl, regulariser_loss

Params = dict[str, torch.Tensor]


def _check_results(results: Sequence[tuple[Params, int]]) -> None:
    if not results:
        raise ValueError("aggregate_fit needs at least one client result")
    keys0 = set(results[0][0])
    for i, (params, n) in enumerate(results):
        if n <= 0:
            raise ValueError(f"client {i} reports n_k = {n} examples: a client without data cannot be aggregated")
        if set(params) != keys0:
            diff = sorted(set(params) ^ keys0)
            raise ValueError(f"client {i}'s state-dict keys differ from client 0's: {diff[:4]}")
        for k, v in params.items():
            if v.shape != results[0][0][k].shape:
                raise ValueError(f"client {i}: {k} has shape {tuple(v.shape)}, client 0 {tuple(results[0][0][k].shape)}")
            if not torch.isfinite(v).all():
                raise ValueError(f"client {i}: parameter {k} is not finite")


def weighted_mean(results: Sequence[tuple[Params, int]], weights: Sequence[float] | None = None) -> Params:
    _check_results(results)
    w = np.array([n for _, n in results], dtype=float) if weights is None else np.asarray(weights, dtype=float)
    w = w / w.sum()
    return {k: sum(float(wi) * p[k] for wi, (p, _) in zip(w, results)) for k in results[0][0]}


class Strategy:
    """The server side of one round (Flower's ``Strategy.aggregate_fit``)."""

    proximal_mu = 0.0
    name = "strategy"

    def initialize(self, params: Params) -> None:
        self.global_params = {k: v.clone() for k, v in params.items()}

    def aggregate_fit(self, results: Sequence[tuple[Params, int]], server_round: int = 1, num_rounds: int = 1) -> Params:
        raise NotImplementedError


class FedAvg(Strategy):
    name = "fedavg"

    def aggregate_fit(self, results, server_round=1, num_rounds=1):
        self.global_params = weighted_mean(results)
        return self.global_params


class FedProx(FedAvg):
    name = "fedprox"

    def __init__(self, mu: float = 0.01):
        if not mu >= 0:
            raise ValueError(f"FedProx mu must be >= 0, got {mu}")
        self.proximal_mu = float(mu)


class Scaffold(FedAvg):
    """SCAFFOLD's server and control variates (module docstring; Karimireddy et al. 2020, Alg. 1, option II)."""

    name = "scaffold"

    def initialize(self, params: Params) -> None:
        super().initialize(params)
        self.c = {k: torch.zeros_like(v) for k, v in params.items()}
        self.c_i: dict[int, Params] = {}

    def correction(self, cid: int) -> Params:
        """c - c_i: what client ``cid`` adds to its gradients (Alg. 1 line 10); c_i = 0 before its first round."""
        ci = self.c_i.get(cid)
        return {k: v - (ci[k] if ci is not None else 0.0) for k, v in self.c.items()}

    def update_controls(self, x: Params, new: Sequence[Params], cids: Sequence[int], steps: int, lr: float) -> None:
        """c_i+ = c_i - c + (x - y_i) / (E eta) (line 12, option II), then c <- c + mean_i (c_i+ - c_i) (line 17)."""
        if steps < 1 or not lr > 0:
            raise ValueError(f"SCAFFOLD needs E >= 1 local steps and a positive lr, got E = {steps}, lr = {lr}")
        delta = {k: torch.zeros_like(v) for k, v in self.c.items()}
        for cid, y in zip(cids, new):
            old = self.c_i.get(cid, {k: torch.zeros_like(v) for k, v in self.c.items()})
            upd = {k: old[k] - self.c[k] + (x[k] - y[k]) / (steps * lr) for k in self.c}
            for k in delta:
                delta[k] += (upd[k] - old[k]) / len(new)
            self.c_i[cid] = upd
        self.c = {k: self.c[k] + delta[k] for k in self.c}


class FedAvgEMA(Strategy):
    name = "fedavg_ema"

    def __init__(self, beta: float = 0.9):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"server EMA beta must be in [0, 1), got {beta}")
        self.beta = float(beta)

    def aggregate_fit(self, results, server_round=1, num_rounds=1):
        avg = weighted_mean(results)
        self.global_params = {k: self.beta * self.global_params[k] + (1 - self.beta) * avg[k] for k in avg}
        return self.global_params


def position_weights(n_stages: int, progress: float) -> np.ndarray:
    """The code's value-chain weights: alpha = 1 (first third of training), 0.4 (second), 0 (last)."""
    a = 1.0 if progress < 1 / 3 else (0.4 if progress < 2 / 3 else 0.0)
    w = np.array([(a * (n_stages - k) + (1 - a) * (k + 1)) / n_stages for k in range(n_stages)])
    return w / w.sum()


class PositionWeighted(Strategy):
    name = "position_weighted"

    def aggregate_fit(self, results, server_round=1, num_rounds=1):
        self.global_params = weighted_mean(results, position_weights(len(results), (server_round - 1) / num_rounds))
        return self.global_params


def lora_product_mismatch(results: Sequence[tuple[Params, int]]) -> float:
    """|| (1/K) sum B_k A_k - B_bar A_bar ||_F / || (1/K) sum B_k A_k ||_F, summed over the adapted matrices."""
    num = den = 0.0
    keys = [k for k in results[0][0] if k.endswith("lora_A.weight")]
    for ka in keys:
        kb = ka.replace("lora_A", "lora_B")
        prods = [p[kb] @ p[ka] for p, _ in results]
        mean_prod = sum(prods) / len(prods)
        bbar = sum(p[kb] for p, _ in results) / len(results)
        abar = sum(p[ka] for p, _ in results) / len(results)
        num += float(((mean_prod - bbar @ abar) ** 2).sum())
        den += float((mean_prod ** 2).sum())
    return math.sqrt(num / den) if den > 0 else 0.0


class Adapted(nn.Module):
    """The frozen base with LoRA, plus an optional VCL: the unit a client trains."""

    def __init__(self, base: TinyDecoder, cfg: dict, vcl: str | None, seed: int = 0):
        super().__init__()
        self.base = copy.deepcopy(base)
        add_lora(self.base, cfg["lora_r"], cfg["lora_alpha"], seed=0)   # the same A on every client and run
        self.vcl = make_vcl(vcl, base.d, N_STAGES, seed=seed) if vcl else None

    def trainable(self) -> Params:
        return {k: p for k, p in self.named_parameters() if p.requires_grad}

    def get_params(self) -> Params:
        return {k: p.detach().clone() for k, p in self.trainable().items()}

    def set_params(self, params: Params) -> None:
        with torch.no_grad():
            for k, p in self.trainable().items():
                p.copy_(params[k])

    def hidden(self, ids):
        return self.base.hidden(ids)

    def head(self, h, stage):
        if self.vcl is not None:
            h = self.vcl(h, stage)
        return self.base.lm_head(h)

    def forward(self, ids, stage=None):
        return self.head(self.hidden(ids), stage)


@dataclass
class Client:
    cid: int
    data: PairSet
    ids: torch.Tensor = field(init=False)
    mask: torch.Tensor = field(init=False)
    stages: torch.Tensor = field(init=False)

    def __post_init__(self):
        if len(self.data) == 0:
            raise ValueError(f"client {self.cid} holds no data")
        self.ids, self.mask = encode(self.data.inputs, self.data.outputs)
        self.stages = torch.as_tensor(self.data.stages, dtype=torch.long)


def _prox_term(prox: tuple[float, Params], P: Params) -> torch.Tensor:
    """FedProx's proximal term (mu / 2) ||w_c - w_global||^2 per client, (C,), for client-stacked parameters P
    (C, ...) against the global ``prox = (mu, global params)``: the one place it is written (`local_train`,
    `local_train_all`)."""
    mu, g = prox
    return 0.5 * mu * sum(((P[k] - g[k][None]) ** 2).flatten(1).sum(1) for k in g)


def _check_finite(losses: torch.Tensor, clients: Sequence["Client"], round_id: int) -> None:
    """Stop on the first client whose local loss (``losses``, (C,)) is not finite, naming it and the round."""
    bad = ~torch.isfinite(losses.detach())
    if bool(bad.any()):
        c = int(torch.nonzero(bad)[0, 0])
        raise FloatingPointError(f"client {clients[c].cid}, round {round_id}: the local loss is "
                                 f"{losses[c].detach().item()}")


def local_train(model: Adapted, client: Client, steps: int, lr: float, batch: int, gen: torch.Generator,
                prox: tuple[float, Params] | None = None, reg: bool = False, round_id: int = 0,
                opt: torch.optim.Optimizer | None = None) -> float:
    """E local Adam steps on the client's data: a fresh optimiser per call (per round, as OpenFedLLM's trainer), or
    ``opt``, an Adam over ``model``'s trainable parameters that the caller keeps across calls (the non-federated
    regimes, `run_method`), its learning rate set to ``lr``."""
    params = list(model.trainable().values())
    if opt is None:
        opt = torch.optim.Adam(params, lr=lr)
    else:
        held = {id(p) for g in opt.param_groups for p in g["params"]}
        if held != {id(p) for p in params}:
            raise ValueError("opt must hold exactly the model's trainable parameters")
        for group in opt.param_groups:
            group["lr"] = lr
    named = model.trainable()
    last = float("nan")
    for _ in range(steps):
        idx = torch.randint(0, len(client.data), (batch,), generator=gen)
        ids, mask, st = client.ids[idx], client.mask[idx], client.stages[idx]
        h = model.hidden(ids)
        loss = lm_loss(model.head(h, st), ids, mask)
        if reg and model.vcl is not None:
            loss = loss + regulariser_loss(model.vcl, h, st)
        if prox is not None and prox[0] > 0:
            loss = loss + _prox_term(prox, {k: named[k][None] for k in prox[1]})[0]
        _check_finite(loss[None], [client], round_id)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        last = loss.item()
    return last


def _lora_apply(lin, h: torch.Tensor, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """A `LoRALinear` on client-stacked input h (C, b, t, d_in) with client-stacked factors A (C, r, d_in), B (C, d_out, r)."""
    low = torch.einsum("cbti,cri->cbtr", h, A)
    return lin.base(h) + torch.einsum("cbtr,cor->cbto", low, B) * lin.scaling


def batched_hidden(model: "Adapted", P: Params, ids: torch.Tensor) -> torch.Tensor:
    """Final-norm hidden states of C clients at once: ids (C, b, t), P the client-stacked LoRA factors (C, ...).
    The same computation as `TinyDecoder.hidden` with each client's own adapters (checked in the tests)."""
    base = model.base
    C, b, t = ids.shape
    x = base.tok(ids) + base.pos(torch.arange(t))
    for i, blk in enumerate(base.blocks):
        f = lambda name, inp: _lora_apply(getattr(blk, name), inp, P[f"base.blocks.{i}.{name}.lora_A.weight"],
                                          P[f"base.blocks.{i}.{name}.lora_B.weight"])
        h = blk.ln1(x)
        d = h.shape[-1]
        q, k, v = (f(n, h).reshape(C * b, t, blk.n_heads, d // blk.n_heads).transpose(1, 2) for n in ("q", "k", "v"))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(C, b, t, d)
        x = x + f("o", a)
        x = x + f("fc2", torch.nn.functional.gelu(f("fc1", blk.ln2(x))))
    return base.norm(x)


def batched_loss(model: "Adapted", P: Params, ids: torch.Tensor, mask: torch.Tensor, stages: torch.Tensor,
                 reg: bool) -> torch.Tensor:
    """Per-client losses (C,) of C clients' batches, each with its own parameters (the VCL looped per client)."""
    from torch.func import functional_call

    h = batched_hidden(model, P, ids)
    out = []
    for c in range(ids.shape[0]):
        hc = h[c]
        if model.vcl is not None:
            vp = {k[4:]: P[k][c] for k in P if k.startswith("vcl.")}
            hv = functional_call(model.vcl, vp, (hc, stages[c]))
            loss = lm_loss(model.base.lm_head(hv), ids[c], mask[c])
            if reg:
                regs = functional_call(model.vcl, vp, (hc, stages[c]), {"regularise": True})
                loss = loss + sum(REG_WEIGHTS[k] * v for k, v in regs.items())
        else:
            loss = lm_loss(model.base.lm_head(hc), ids[c], mask[c])
        out.append(loss)
    return torch.stack(out)


def local_train_all(model: "Adapted", clients: Sequence["Client"], starts: Sequence[Params], steps: int, lr: float,
                    batch: int, gen: torch.Generator, prox: tuple[float, Params] | None = None, reg: bool = False,
                    round_id: int = 0, corrections: Sequence[Params] | None = None,
                    optimizer: str = "adam", keep: dict | None = None) -> list[Params]:
    """`local_train` of every client at once (client-stacked parameters, one Adam over the stack: Adam is
    elementwise, so this is each client's own Adam). Returns each client's parameters after E steps.
    ``corrections``: SCAFFOLD's c - c_i per client, applied after every step as y <- y - lr (c - c_i)
    (`Scaffold`); ``optimizer``: ``"adam"`` (the chapter's) or ``"sgd"``. ``keep``: None builds a fresh optimiser
    (per round, as OpenFedLLM's trainer); a dict carries the stacked parameters and their optimiser from one call to
    the next (clients that train alone, `run_method`'s ``local`` regime): the first call fills it, later calls
    continue from it and require ``starts`` to be the parameters the previous call returned."""
    keys = list(starts[0])
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    if keep:
        P, opt = keep["P"], keep["opt"]
        if set(P) != set(keys) or any(not torch.equal(P[k][c], s[k]) for c, s in enumerate(starts) for k in keys):
            raise ValueError("keep holds other parameters than starts: a kept optimiser continues only from the "
                             "parameters its previous call returned")
        for group in opt.param_groups:
            group["lr"] = lr
    else:
        P = {k: torch.stack([s[k] for s in starts]).clone().requires_grad_(True) for k in keys}
        opt = (torch.optim.Adam if optimizer == "adam" else torch.optim.SGD)(list(P.values()), lr=lr)
        if keep is not None:
            keep.update(P=P, opt=opt)
    corr = None
    if corrections is not None:
        if len(corrections) != len(clients):
            raise ValueError(f"{len(corrections)} corrections for {len(clients)} clients")
        corr = {k: torch.stack([c[k] for c in corrections]) for k in keys}
    for _ in range(steps):
        idx = [torch.randint(0, len(c.data), (batch,), generator=gen) for c in clients]
        ids = torch.stack([c.ids[i] for c, i in zip(clients, idx)])
        mask = torch.stack([c.mask[i] for c, i in zip(clients, idx)])
        st = torch.stack([c.stages[i] for c, i in zip(clients, idx)])
        losses = batched_loss(model, P, ids, mask, st, reg)
        if prox is not None and prox[0] > 0:
            losses = losses + _prox_term(prox, P)
        _check_finite(losses, clients, round_id)
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        opt.step()
        if corr is not None:
            with torch.no_grad():
                for k in keys:
                    P[k].sub_(lr * corr[k])
    return [{k: P[k][c].detach().clone() for k in keys} for c in range(len(clients))]


def round_lr(cfg: dict, r: int) -> float:
    """Cosine decay per round from lr to lr_min (config.py's schedule, our values)."""
    R = cfg["rounds"]
    return cfg["lr_min"] + 0.5 * (cfg["lr"] - cfg["lr_min"]) * (1 + math.cos(math.pi * r / max(R - 1, 1)))


METHODS = {
    # name: (vcl variant, strategy, regime)
    "local-only": ("relaxed_chain", "local", "local"),
    "FedAvg-single": (None, "fedavg", "fed"),
    "FedProx-single": (None, "fedprox", "fed"),
    "FedWave-VC": ("relaxed_chain", "fedavg", "fed"),
    "VC+EMA": ("relaxed_chain", "ema", "fed"),
    "centralized": ("relaxed_chain", "central", "central"),
    "centralized-eq": ("relaxed_chain", "central", "central-eq"),
    "VC-affine": ("affine", "fedavg", "fed"),
    "VC-IID": ("relaxed_chain", "fedavg", "fed-iid"),
    "VC-position": ("relaxed_chain", "position", "fed"),
    "VC-strict": ("strict_chain", "fedavg", "fed"),
    "SCAFFOLD-single": (None, "scaffold", "fed"),
    "VC-LoRA-avg": ("relaxed_chain", "fedavg", "fed-lora"),
    "VC-stage-blind": ("blind_chain", "fedavg", "fed"),
    "FedAvg-rank-matched": (None, "fedavg", "fed"),
}
"""The training runs. FedWave-VC uses the paper's (commented-out) VCL with the run script's ``relaxed_chain`` masks
(`run_moe_valuechain.sh:188`; ``VC-strict`` is the strict-chain variant) and its regularisers, every trainable tensor
averaged; VC-LoRA-avg is the LoRA-only exchange with a per-client VCL: only the LoRA factors averaged, each
client's VCL kept (the release exchanges only the PEFT dictionary, but keeps one untrained VCL whose output never
reaches the logits, so the release-faithful FedWave is FedAvg-single; module docstring). VC-affine is what the
released forward runs (its losses zeroed);
SCAFFOLD-single is the code's `scaffold` baseline (one shared adapter). Controls: ``VC-stage-blind`` is FedWave-VC
with every example fed the constant stage id K-1 (same layer, same parameters, averaged the same way: capacity
without the stage signal); ``FedAvg-rank-matched`` is FedAvg-single at the LoRA rank whose parameter count is
nearest to LoRA + VCL (`matched_lora_rank`); ``centralized-eq`` is centralized training with as many updates per
round as one client (E steps of batch K B, the examples of all clients), where ``centralized`` takes K E steps of
batch B. local-only, centralized and centralized-eq keep one Adam across their rounds (module docstring)."""

RANK_MATCHED = ("FedAvg-rank-matched",)


def lora_count(cfg: dict, r: int | None = None) -> int:
    """LoRA factors of the tiny decoder: n_layers r sum(d_in + d_out) over q, k, v, o, fc1 (d -> 4d), fc2 (4d -> d)."""
    d, r = cfg["d"], cfg["lora_r"] if r is None else r
    return cfg["n_layers"] * r * (4 * 2 * d + 5 * d + 5 * d)


def vcl_count(cfg: dict) -> int:
    """Parameters of `ChainVCL` at width d, K stages: e (K d), W^Q, W^K, W^V (3 d d), C (K^2), W^O (d^2 + d)."""
    d, K = cfg["d"], N_STAGES
    return K * d + 3 * d * d + K * K + d * d + d


def matched_lora_rank(cfg: dict) -> int:
    """The LoRA rank whose parameter count is nearest to LoRA (rank ``lora_r``) + the VCL's (ties: the larger)."""
    target = lora_count(cfg) + vcl_count(cfg)
    per_rank = lora_count(cfg, 1)
    lo = max(1, target // per_rank)
    return min((lo, lo + 1), key=lambda r: (abs(lora_count(cfg, r) - target), -r))


def method_cfg(method: str, cfg: dict) -> dict:
    """The preset a method trains with: the rank-matched control gets `matched_lora_rank` and the same alpha / r."""
    if method in RANK_MATCHED:
        r = matched_lora_rank(cfg)
        return dict(cfg, lora_r=r, lora_alpha=cfg["lora_alpha"] * r / cfg["lora_r"])
    return cfg


def make_strategy(name: str, cfg: dict) -> Strategy:
    return {"fedavg": lambda: FedAvg(), "fedprox": lambda: FedProx(cfg["prox_mu"]), "ema": lambda: FedAvgEMA(cfg["ema_beta"]),
            "position": lambda: PositionWeighted(), "scaffold": lambda: Scaffold()}[name]()


@dataclass
class RunResult:
    method: str
    seed: int
    model: Adapted
    states: dict[int, Params]          # stage -> parameters for that stage (equal except local-only, VC-LoRA-avg)
    curve: list[np.ndarray] = field(default_factory=list)     # per round: per-stage EM on the curve set
    mismatch: list[float] = field(default_factory=list)


def run_method(method: str, base: TinyDecoder, cfg: dict, seed: int,
               curve_fn: Callable[[Adapted, dict[int, Params]], np.ndarray] | None = None) -> RunResult:
    """Train one method (METHODS) for cfg['rounds'] rounds x cfg['local_steps'] steps per client, data seeded by
    ``seed`` (client k's data is the same for every method at a seed; IID re-deals the same pool). ``curve_fn`` is
    called after every round (a round where it returns None is not recorded)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    vcl, strat_name, regime = METHODS[method]
    cfg = method_cfg(method, cfg)
    rng = np.random.default_rng(1000 + seed)
    local = _client_data(cfg, seed)
    if regime == "fed-iid":
        local = deal(local, 1.0, np.random.default_rng(7000 + seed))
    torch.manual_seed(seed)
    model = Adapted(base, cfg, vcl, seed=seed)
    clients = [Client(k, d) for k, d in enumerate(local)]
    reg = vcl is not None and vcl != "affine" and cfg["vcl_reg"]
    init = model.get_params()
    out = RunResult(method, seed, model, {k: init for k in range(N_STAGES)})
    gen = torch.Generator().manual_seed(int(rng.integers(2 ** 31)))
    E, B, R = cfg["local_steps"], cfg["batch"], cfg["rounds"]
    if regime in ("central", "central-eq"):
        # central: K E steps of batch B per round (as many steps as all clients together); central-eq: E steps of
        # batch K B (as many updates as one client, the same examples as all clients together)
        steps, batch = (E * N_STAGES, B) if regime == "central" else (E, B * N_STAGES)
        pooled = Client(-1, PairSet.concat(local))
        opt = torch.optim.Adam(list(model.trainable().values()), lr=cfg["lr"])   # one trainer: no rounds to restart at
        for r in range(R):
            model.set_params(out.states[0])
            local_train(model, pooled, steps, round_lr(cfg, r), batch, gen, reg=reg, round_id=r, opt=opt)
            p = model.get_params()
            out.states = {k: p for k in range(N_STAGES)}
            _record(out, curve_fn, model)
        return out
    if regime == "local":
        keep: dict = {}                                     # each client alone: one Adam for all its steps
        for r in range(R):
            new = local_train_all(model, clients, [out.states[c.cid] for c in clients], E, round_lr(cfg, r), B, gen,
                                  reg=reg, round_id=r, keep=keep)
            out.states = {c.cid: p for c, p in zip(clients, new)}
            _record(out, curve_fn, model)
        return out
    strategy = make_strategy(strat_name, cfg)
    shared_keys = [k for k in init if ".lora_" in k] if regime == "fed-lora" else list(init)
    strategy.initialize({k: init[k] for k in shared_keys})
    for r in range(R):
        g = strategy.global_params
        prox = (strategy.proximal_mu, g) if strategy.proximal_mu > 0 else None
        starts = [{**out.states[c.cid], **g} for c in clients]      # the server's shared part, the client's own rest
        corr = [strategy.correction(c.cid) for c in clients] if isinstance(strategy, Scaffold) else None
        lr = round_lr(cfg, r)
        new = local_train_all(model, clients, starts, E, lr, B, gen, prox=prox, reg=reg, round_id=r, corrections=corr)
        results = [({k: p[k] for k in shared_keys}, len(c.data)) for p, c in zip(new, clients)]
        out.mismatch.append(lora_product_mismatch(results))
        if isinstance(strategy, Scaffold):
            strategy.update_controls(g, [p for p, _ in results], [c.cid for c in clients], E, lr)
        g = strategy.aggregate_fit(results, server_round=r + 1, num_rounds=R)
        out.states = {c.cid: {**p, **g} for p, c in zip(new, clients)}
        _record(out, curve_fn, model)
    model.set_params(out.states[0])
    return out


def _record(out: RunResult, curve_fn, model: Adapted) -> None:
    if curve_fn is not None:
        v = curve_fn(model, out.states)
        if v is not None:
            out.curve.append(v)


def _client_data(cfg: dict, seed: int) -> list[PairSet]:
    from .data import workflow_data

    return workflow_data(cfg.get("workflow", "disjoint"), cfg["n_per_client"], np.random.default_rng(seed))


def strategy_fidelity(seed: int = 0, n_clients: int = 4, rounds: int = 3) -> float:
    """The server updates of C1s's arms against the algorithms' equations, on random client tensors (max |difference|):
    FedAvg's aggregate is the n_k-weighted mean (McMahan et al. 2017, the release's ``fedavg``), and SCAFFOLD's control
    variates follow Karimireddy et al. 2020, Alg. 1, option II, over several rounds from non-zero controls:
    c_i+ = c_i - c + (x - y_i) / (E eta) (line 12), c <- c + (1/N) sum_i (c_i+ - c_i) (line 17), x <- mean y_i, and
    the correction a client adds to its gradient is c - c_i (line 10). A check of the pieces, not of training."""
    g = torch.Generator().manual_seed(seed)
    shapes = {"lora_A": (4, 6), "lora_B": (6, 4)}
    rnd = lambda: {k: torch.randn(*s, generator=g, dtype=torch.float64) for k, s in shapes.items()}
    dev = 0.0
    results = [(rnd(), int(n)) for n in torch.randint(1, 50, (n_clients,), generator=g)]
    agg = FedAvg().aggregate_fit(results)
    w = np.array([n for _, n in results], dtype=float)
    for k in shapes:
        ref = np.tensordot(w / w.sum(), np.stack([p[k].numpy() for p, _ in results]), axes=1)
        dev = max(dev, float(np.abs(agg[k].numpy() - ref).max()))
    s = Scaffold()
    x = rnd()
    s.initialize(x)
    c, ci = {k: torch.zeros_like(v) for k, v in x.items()}, {}
    for r in range(rounds):
        E, lr = 1 + r, 0.05 * (r + 1)
        for cid in range(n_clients):
            ref = {k: c[k] - (ci[cid][k] if cid in ci else 0.0) for k in x}
            got = s.correction(cid)
            dev = max(dev, max(float((got[k] - ref[k]).abs().max()) for k in x))
        ys = [rnd() for _ in range(n_clients)]
        s.update_controls(x, ys, list(range(n_clients)), steps=E, lr=lr)
        new_ci = {cid: {k: (ci[cid][k] if cid in ci else 0.0) - c[k] + (x[k] - y[k]) / (E * lr) for k in x}
                  for cid, y in enumerate(ys)}
        c = {k: c[k] + sum(new_ci[i][k] - (ci[i][k] if i in ci else 0.0) for i in range(n_clients)) / n_clients for k in x}
        ci = new_ci
        dev = max(dev, max(float((s.c[k] - c[k]).abs().max()) for k in x),
                  max(float((s.c_i[i][k] - ci[i][k]).abs().max()) for i in range(n_clients) for k in x))
        x = s.aggregate_fit([(y, 1) for y in ys])
    return dev
