"""DPO with router-induced preferences (brief section 2.4; Rafailov et al.'s sigmoid loss).

For an unlabeled input x the router ranks the experts; y_w is sampled from the top-1 expert, y_l from the top-2
expert (T = 0.7, top-p 0.9), identical pairs dropped. The policy is the fused model (top-2 output fusion); its
log-probability of a response is sum_t log sum_k g^_k p(y_t | x, y_<t, stage k) on the response tokens (y and EOS).
The reference is the pre-DPO model. Loss: -log sigma(beta [(log pi(y_w) - log ref(y_w)) - (log pi(y_l) - log ref(y_l))]).

The label-flip knob q: each pair keeps the router's order with probability q and is swapped otherwise. With a
population label accuracy q the objective q log sigma(beta D) + (1 - q) log sigma(-beta D) peaks at
D* = logit(q) / beta: the learned margin changes sign at q = 1/2 (Theory section).
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .data import MAX_OUT, N_STAGES, encode
from .evaluate import decode
from .federated import Adapted


def dpo_loss(pol_w: torch.Tensor, pol_l: torch.Tensor, ref_w: torch.Tensor, ref_l: torch.Tensor,
             beta: float) -> torch.Tensor:
    """Mean sigmoid DPO loss of sequence log-probabilities."""
    if not beta > 0:
        raise ValueError(f"DPO beta must be > 0, got {beta}")
    for name, t in (("pol_w", pol_w), ("pol_l", pol_l), ("ref_w", ref_w), ("ref_l", ref_l)):
        if not torch.isfinite(t).all():
            raise ValueError(f"DPO input {name} contains NaN or inf")
    margin = (pol_w - ref_w) - (pol_l - ref_l)
    return -F.logsigmoid(beta * margin).mean()


@dataclass
class Pairs:
    inputs: list[tuple[int, ...]]
    chosen: list[tuple[int, ...]]
    rejected: list[tuple[int, ...]]
    gates: np.ndarray                 # (n, K) top-2 renormalised gates of each input

    def __len__(self):
        return len(self.inputs)


def make_pairs(model: Adapted, inputs: Sequence[Sequence[int]], gates: np.ndarray, seed: int,
               temperature: float = 0.7, top_p: float = 0.9) -> Pairs:
    """Router-induced pairs: y_w from the top-1 expert, y_l from the top-2 expert; empty or identical dropped."""
    gates = np.asarray(gates)
    order = np.argsort(-gates, axis=1, kind="stable")
    gen = torch.Generator().manual_seed(seed)
    def one_expert(col):
        g = np.zeros_like(gates)
        g[np.arange(len(gates)), order[:, col]] = 1.0
        return decode(model, inputs, g, temperature=temperature, top_p=top_p, gen=gen)
    yw, yl = one_expert(0), one_expert(1)
    keep = [i for i in range(len(inputs)) if yw[i] and yl[i] and yw[i] != yl[i] and len(yw[i]) <= MAX_OUT
            and len(yl[i]) <= MAX_OUT]
    return Pairs([tuple(inputs[i]) for i in keep], [yw[i] for i in keep], [yl[i] for i in keep], gates[keep])


def flip_labels(pairs: Pairs, q: float, seed: int) -> Pairs:
    """Keep the router's order with probability q, swap chosen and rejected otherwise."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"label accuracy q must be in [0, 1], got {q}")
    swap = np.random.default_rng(seed).random(len(pairs)) >= q
    c = [l if s else w for w, l, s in zip(pairs.chosen, pairs.rejected, swap)]
    r = [w if s else l for w, l, s in zip(pairs.chosen, pairs.rejected, swap)]
    return Pairs(pairs.inputs, c, r, pairs.gates)


def fused_logprob(model: Adapted, ids: torch.Tensor, mask: torch.Tensor, gates: torch.Tensor) -> torch.Tensor:
    """sum over response tokens of log sum_k g_k p(y_t | ., stage k)."""
    h = model.hidden(ids)
    tgt = ids[:, 1:]
    mix = 0.0
    for k in range(N_STAGES):
        if float(gates[:, k].max()) == 0:
            continue
        lp = torch.log_softmax(model.head(h, torch.full((ids.shape[0],), k)), -1)[:, :-1]
        tok = lp.gather(-1, tgt[..., None])[..., 0]
        mix = mix + gates[:, k:k + 1] * tok.exp()
    return (torch.log(mix.clamp_min(1e-30)) * mask).sum(1)


@torch.no_grad()
def pair_margin(policy: Adapted, reference: Adapted, pairs: Pairs) -> float:
    """Mean DPO margin D = (log pi/ref)(chosen) - (log pi/ref)(rejected) of ``policy`` against ``reference`` on
    ``pairs``, in the pairs' order (pass unflipped pairs to read it in the router's order)."""
    if len(pairs) == 0:
        raise ValueError("no pairs to measure a margin on")
    ids_w, m_w = encode(pairs.inputs, pairs.chosen)
    ids_l, m_l = encode(pairs.inputs, pairs.rejected)
    g = torch.tensor(pairs.gates, dtype=torch.float32)
    lw = fused_logprob(policy, ids_w, m_w, g) - fused_logprob(reference, ids_w, m_w, g)
    ll = fused_logprob(policy, ids_l, m_l, g) - fused_logprob(reference, ids_l, m_l, g)
    return float((lw - ll).mean())


def split_pairs(pairs: Pairs, held_out: float = 0.5, seed: int = 0) -> tuple[Pairs, Pairs]:
    """A seeded split of the pairs into (train, held-out), by input."""
    if not 0.0 < held_out < 1.0:
        raise ValueError(f"held-out share must be in (0, 1), got {held_out}")
    if len(pairs) < 2:
        raise ValueError(f"need at least 2 pairs to hold some out, got {len(pairs)}")
    perm = np.random.default_rng(seed).permutation(len(pairs))
    cut = min(max(int(round(len(pairs) * (1 - held_out))), 1), len(pairs) - 1)     # both parts non-empty
    def take(idx):
        return Pairs([pairs.inputs[i] for i in idx], [pairs.chosen[i] for i in idx], [pairs.rejected[i] for i in idx],
                     pairs.gates[np.asarray(idx, dtype=int)])
    return take(perm[:cut]), take(perm[cut:])


def train_dpo(model: Adapted, pairs: Pairs, cfg: dict, seed: int, beta: float | None = None,
              steps: int | None = None, on_step=None) -> tuple[Adapted, list[float]]:
    """DPO on a copy of the model's trainable state (the reference is the frozen pre-DPO model). Returns the trained
    copy and the mean margin D = (log pi/ref)(y_w) - (log pi/ref)(y_l) after each step, on the batch (the training
    labels). ``on_step(policy)``, if given, is called after every step (to read held-out margins)."""
    beta = cfg["dpo_beta"] if beta is None else beta
    steps = cfg["dpo_steps"] if steps is None else steps
    if not beta > 0:
        raise ValueError(f"DPO beta must be > 0, got {beta}")
    if len(pairs) == 0:
        raise ValueError("no preference pairs left after dropping identical ones")
    pol = copy.deepcopy(model)
    ids_w, m_w = encode(pairs.inputs, pairs.chosen)
    ids_l, m_l = encode(pairs.inputs, pairs.rejected)
    g = torch.tensor(pairs.gates, dtype=torch.float32)
    with torch.no_grad():
        ref_w, ref_l = fused_logprob(model, ids_w, m_w, g), fused_logprob(model, ids_l, m_l, g)
    opt = torch.optim.Adam(list(pol.trainable().values()), lr=cfg["dpo_lr"])
    gen = torch.Generator().manual_seed(seed)
    margins = []
    for step in range(steps):
        idx = torch.randint(0, len(pairs), (min(cfg["dpo_batch"], len(pairs)),), generator=gen)
        pw = fused_logprob(pol, ids_w[idx], m_w[idx], g[idx])
        pl = fused_logprob(pol, ids_l[idx], m_l[idx], g[idx])
        loss = dpo_loss(pw, pl, ref_w[idx], ref_l[idx], beta)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"DPO step {step}: loss is {float(loss)}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(pol.trainable().values()), 1.0)
        opt.step()
        margins.append(float(((pw - ref_w[idx]) - (pl - ref_l[idx])).mean().detach()))
        if on_step is not None:
            on_step(pol)
    return pol, margins
