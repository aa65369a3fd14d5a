"""Greedy and sampled decoding, exact match per stage and end to end, and output fusion over experts.

An *expert* is the adapted model read with one stage id (the VCL's e_s and mask). Output fusion (brief section
2.3 (a), our reading of "input-conditioned expert fusion"): at every decoding step the next-token distribution is
sum_{k in Top-k(g(x))} g^_k(x) p(. | x, y_<t, stage = k), with the gates renormalised over the chosen experts.
The LoRA trunk does not depend on the stage, so it runs once per step for all experts.

p(. | x, y_<t, stage = k) is computed exactly as the teacher-forced forward of training computes it
(`federated.local_train`: ``lm_loss(model.head(model.hidden(ids), stage), ...)``): the VCL (brief section 2.1) is
applied to the final hidden states of the *whole* prefix ``BOS x SEP y_<t`` and the last position of its output is
read (`next_token_logits`). The `ChainVCL` is a causal attention over the sequence, so feeding it the last hidden
state alone would be a different function from the one trained; the sequences are at most 18 tokens, so the prefix
is simply recomputed at every step (no cache).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .data import BOS, EOS, MAX_OUT, N_STAGES, SEP, check_no_stage_token, instruct
from .federated import Adapted, Params


def _prompts(inputs: Sequence[Sequence[int]]) -> torch.Tensor:
    return torch.tensor([[BOS, *z, SEP] for z in inputs], dtype=torch.long)


def _strip(row: Sequence[int]) -> tuple[int, ...]:
    out = []
    for t in row:
        if t == EOS:
            break
        out.append(int(t))
    return tuple(out)


def next_token_logits(model: Adapted, h: torch.Tensor, stage: torch.Tensor) -> torch.Tensor:
    """Logits ``(batch, vocab)`` of the token after the prefix whose final hidden states are ``h`` (batch, T, d),
    read as expert ``stage``: lm_head(VCL(h_{1..T}, stage))_T, the VCL run over the whole prefix. Equal to the
    teacher-forced ``model(ids, stage)[:, T - 1]`` of any sequence that starts with this prefix (the trunk and the
    VCL are causal)."""
    return model.head(h, stage)[:, -1]


@torch.no_grad()
def decode(model: Adapted, inputs: Sequence[Sequence[int]], gates: np.ndarray, temperature: float = 0.0,
           top_p: float = 1.0, gen: torch.Generator | None = None, instructions: bool = False) -> list[tuple[int, ...]]:
    """Decode every input with the gate-weighted mixture of its experts (``gates``: (n, K), rows summing to 1):
    at step t the next token is drawn from sum_k g_k softmax(l_k / temperature), where l_k = `next_token_logits` of
    expert k on the full prefix ``BOS x SEP y_<t`` (brief section 2.3 (a); the same function as the teacher-forced
    forward that training fits). ``temperature = 0``: greedy (argmax of sum_k g_k softmax(l_k)); otherwise sampling at
    that temperature with nucleus ``top_p``. Returns each output up to (not including) its first EOS, at most
    MAX_OUT + 1 tokens. ``instructions``: the inputs may carry the shared workflow's instruction tokens (otherwise
    the leakage guard rejects them)."""
    gates = np.asarray(gates, dtype=np.float64)
    n = len(inputs)
    if gates.shape != (n, N_STAGES):
        raise ValueError(f"gates must have shape ({n}, {N_STAGES}), got {gates.shape}")
    if not np.all(np.isfinite(gates)) or np.any(gates < 0) or not np.allclose(gates.sum(1), 1.0, atol=1e-6):
        raise ValueError("gates must be finite, non-negative, and sum to 1 per input (renormalise after top-k)")
    outs: list[tuple[int, ...] | None] = [None] * n
    lengths = np.array([len(z) for z in inputs])
    G = torch.tensor(gates, dtype=torch.float32)
    for L in np.unique(lengths):
        idx = np.flatnonzero(lengths == L)
        ids = _prompts([inputs[i] for i in idx])
        if not instructions:
            check_no_stage_token(ids)
        g = G[idx]
        active = [k for k in range(N_STAGES) if float(g[:, k].max()) > 0]
        done = torch.zeros(len(idx), dtype=torch.bool)
        for _ in range(MAX_OUT + 1):
            h = model.hidden(ids)                  # the whole prefix: the VCL attends over all of it
            probs = 0.0
            for k in active:
                logits = next_token_logits(model, h, torch.full((len(idx),), k))
                if temperature > 0:
                    logits = logits / temperature
                probs = probs + g[:, k:k + 1] * torch.softmax(logits, -1)
            if temperature > 0:
                sorted_p, order = probs.sort(-1, descending=True)
                keep = sorted_p.cumsum(-1) - sorted_p < top_p
                sorted_p = sorted_p * keep
                pick = torch.multinomial(sorted_p / sorted_p.sum(-1, keepdim=True), 1, generator=gen)
                nxt = order.gather(-1, pick)[:, 0]
            else:
                nxt = probs.argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, EOS), nxt)
            done |= nxt == EOS
            ids = torch.cat([ids, nxt[:, None]], 1)
            if bool(done.all()):
                break
        for j, i in enumerate(idx):
            outs[i] = _strip(ids[j, L + 2:].tolist())
    return outs  # type: ignore[return-value]


def one_hot(stages: Sequence[int]) -> np.ndarray:
    s = np.asarray(stages, dtype=int)
    if s.size and (s.min() < 0 or s.max() >= N_STAGES):
        raise ValueError(f"stage id {int(s.max())} out of range 0..{N_STAGES - 1}")
    g = np.zeros((len(s), N_STAGES))
    g[np.arange(len(s)), s] = 1.0
    return g


def exact_match(pred: Sequence[Sequence[int]], target: Sequence[Sequence[int]]) -> np.ndarray:
    return np.array([tuple(p) == tuple(t) for p, t in zip(pred, target)], dtype=float)


def stage_em(model: Adapted, states: dict[int, Params], tests: Sequence, instructions: bool = False,
             shift: int = 0) -> np.ndarray:
    """Per-stage EM with the oracle stage id; ``tests[k]`` a PairSet of stage k; stage k read with states[k].
    ``shift``: a negative control, stage k read as stage (k + shift) mod K (its parameters, VCL stage id and, with
    ``instructions``, its instruction token) and scored against stage k's targets."""
    em = []
    for k, t in enumerate(tests):
        j = (k + shift) % N_STAGES
        model.set_params(states[j])
        inputs = [instruct(j, z[1:]) for z in t.inputs] if instructions and shift else t.inputs
        em.append(exact_match(decode(model, inputs, one_hot([j] * len(t)), instructions=instructions),
                              t.outputs).mean())
    return np.array(em)


def chain_em(model: Adapted, states: dict[int, Params], xs, ys, router=None, top_k: int = 2,
             instructions: bool = False, shift: int = 0) -> float:
    """End-to-end EM of x -> f3(f2(f1(f0(x)))): oracle stage order, or routed at every hop (``router``: a callable
    giving (n, K) gates for a list of inputs). ``instructions``: the shared workflow, hop k's prompt is I_k z
    (`data.instruct`), and a hop's input may have at most 6 digits. ``shift``: hop k read as stage (k + shift) mod K
    (a negative control, as in `stage_em`)."""
    z = list(xs)
    max_len = 6 if instructions else 7
    for k in range(N_STAGES):
        keep = [i for i, v in enumerate(z) if 1 <= len(v) <= max_len]
        kept = set(keep)
        cur = [z[i] if i in kept else () for i in range(len(z))]
        j = (k + shift) % N_STAGES
        if router is None:
            model.set_params(states[j])
            gates = one_hot([j] * len(keep))
        else:
            gates = router([cur[i] for i in keep])
        prompts = [instruct(j, cur[i]) if instructions else cur[i] for i in keep]
        pred = decode(model, prompts, gates, instructions=instructions) if keep else []
        nxt = [()] * len(z)
        for j, i in enumerate(keep):
            nxt[i] = pred[j]
        z = nxt
    return float(exact_match(z, ys).mean())
