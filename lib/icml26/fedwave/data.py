"""The synthetic 4-stage value chain: a stand-in for the paper's private automotive workflow data.

Four stage maps over digit strings (the brief's section 5, our design [D]; the paper's data are not public):

* f0 = sort ascending ("design"), f1 = +3 mod 10 per digit ("production"),
* f2 = reverse ("supply"), f3 = append the checksum (sum mod 10), then drop repeated digits ("quality").

The chain is z0 = x, z_{k+1} = f_k(z_k), y = z4. Client k holds only pairs (z_k, z_{k+1}) of its own draws of x,
so its input distribution is stage k-1's output distribution (the inter-stage dependency). The stage id is never a
token: a sequence is ``BOS z SEP f(z) EOS`` over the 14 plain symbols.

A second stand-in, the *shared* workflow (`shared_stage_map`, `shared_client_datasets`), keeps what collaboration
needs and the first one lacks (review v2 section 1 (a)-(c)):

* (a) stages that share structure: every stage applies the same digit substitution sigma(v) = (7 v + 3) mod 10
  (a bijection without fixed point, so copying gets no digit right), then signs the record with its own stamp, the
  last digit overwritten by k: f^s_k(z) = sigma(z)_{1..L-1} k (the stages still clash: one input, four outputs);
* (b) clients with scarce data (the presets' ``shared_n_per_client``, 16 pairs: too few to learn sigma alone, while
  the 64 of all four clients teach it much better, the gate P1; with 64 pairs each, local-only learnt it alone);
* (c) the stage instruction in the prompt: ``BOS I_k z SEP f^s_k(z) EOS``, I_k one of four instruction tokens
  (ids 14..17), like the role text of the paper's alpaca prompts. Raw strings have 3..6 digits so that I_k z fits.

The frozen base is pretrained to copy strings, half of them behind an instruction token that it learns to skip
(`pretrain_pairs`): it has seen the instruction format but not what any instruction means.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations_with_replacement

import numpy as np
import torch

BOS, SEP, EOS, PAD = 10, 11, 12, 13
N_PLAIN = 14                                     # digits and the four structure symbols
INSTR = 14                                       # instruction tokens I_0..I_3 = 14..17 (the shared workflow only)
N_STAGES = 4
VOCAB = N_PLAIN + N_STAGES
MIN_LEN, MAX_LEN = 4, 7
MAX_OUT = MAX_LEN + 1
SEQ_LEN = 1 + MAX_LEN + 1 + MAX_OUT + 1          # BOS x SEP y EOS = 18
STAGE_NAMES = ("design: sort", "production: +3 mod 10", "supply: reverse", "quality: checksum + dedup")


def stage_map(k: int, z: Sequence[int]) -> tuple[int, ...]:
    """f_k of one digit string (module docstring)."""
    z = tuple(int(v) for v in z)
    if k == 0:
        return tuple(sorted(z))
    if k == 1:
        return tuple((v + 3) % 10 for v in z)
    if k == 2:
        return z[::-1]
    if k == 3:
        out: list[int] = []
        for v in z + (sum(z) % 10,):
            if v not in out:
                out.append(v)
        return tuple(out)
    raise ValueError(f"stage id {k} is out of range: there are {N_STAGES} stages (0..{N_STAGES - 1})")


def chain(x: Sequence[int], upto: int = N_STAGES) -> list[tuple[int, ...]]:
    """[z0, z1, ..., z_upto] of one raw string."""
    zs = [tuple(int(v) for v in x)]
    for k in range(upto):
        zs.append(stage_map(k, zs[-1]))
    return zs


def raw_strings(n: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """n uniform strings of uniform length in [4, 7]."""
    lens = rng.integers(MIN_LEN, MAX_LEN + 1, size=n)
    return [tuple(int(v) for v in rng.integers(0, 10, size=L)) for L in lens]


@dataclass
class PairSet:
    """(input, output, stage) triples with their stage ids; the stage is metadata, never a token."""

    inputs: list[tuple[int, ...]]
    outputs: list[tuple[int, ...]]
    stages: np.ndarray

    def __len__(self) -> int:
        return len(self.inputs)

    def subset(self, idx) -> "PairSet":
        idx = np.asarray(idx, dtype=int)
        return PairSet([self.inputs[i] for i in idx], [self.outputs[i] for i in idx], self.stages[idx])

    @staticmethod
    def concat(sets: Sequence["PairSet"]) -> "PairSet":
        return PairSet([z for s in sets for z in s.inputs], [z for s in sets for z in s.outputs],
                       np.concatenate([s.stages for s in sets]).astype(int))


def _check_client(k: int, n: int) -> None:
    """A client id in 0..N_STAGES-1 holding at least one pair."""
    if not 0 <= k < N_STAGES:
        raise ValueError(f"stage id {k} is out of range 0..{N_STAGES - 1}")
    if n < 1:
        raise ValueError(f"client {k} would hold no data (n = {n}): every client needs at least one pair")


def stage_pairs(k: int, n: int, rng: np.random.Generator) -> PairSet:
    """Client k's private data: n pairs (z_k, z_{k+1}) from n fresh raw draws."""
    _check_client(k, n)
    zs = [chain(x, k + 1) for x in raw_strings(n, rng)]
    return PairSet([z[k] for z in zs], [z[k + 1] for z in zs], np.full(n, k))


def client_datasets(n_per_client: int, rng: np.random.Generator, mix_ratio: float = 0.0) -> list[PairSet]:
    """One PairSet per client. ``mix_ratio = 0``: stage-local (client k holds stage k only, the paper's setting);
    ``mix_ratio = 1``: the released pipeline's fully mixed IID split (each client a quarter of every stage)."""
    if not 0.0 <= mix_ratio <= 1.0:
        raise ValueError(f"mix_ratio must be in [0, 1], got {mix_ratio}")
    local = [stage_pairs(k, n_per_client, rng) for k in range(N_STAGES)]
    return local if mix_ratio == 0.0 else deal(local, mix_ratio, rng)


def deal(local: Sequence[PairSet], mix_ratio: float, rng: np.random.Generator) -> list[PairSet]:
    """Re-deal the clients' pooled data: a fraction ``mix_ratio`` of it, drawn by ``rng``, dealt evenly to the
    clients, the rest kept by its own stage's client (``mix_ratio = 1``: an IID split, the released ``mix_ratio``).
    The one place IID dealing is written (`client_datasets`, and the VC-IID arm of `federated.run_method`)."""
    if not 0.0 <= mix_ratio <= 1.0:
        raise ValueError(f"mix_ratio must be in [0, 1], got {mix_ratio}")
    pooled = PairSet.concat(local)
    n_mix = int(round(mix_ratio * len(pooled)))
    perm = rng.permutation(len(pooled))
    mixed, kept = perm[:n_mix], perm[n_mix:]
    shares = np.array_split(mixed, N_STAGES)
    out = []
    for k in range(N_STAGES):
        own = [i for i in kept if pooled.stages[i] == k]
        out.append(pooled.subset(np.concatenate([shares[k], np.asarray(own, dtype=int)])))
    return out


def chain_set(n: int, rng: np.random.Generator) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """n raw strings and their end-to-end targets y = z4."""
    xs = raw_strings(n, rng)
    return xs, [chain(x)[-1] for x in xs]


def pretrain_pairs(n: int, rng: np.random.Generator) -> PairSet:
    """The frozen base's generic task: copy (z -> z), lengths 4..7 (a stage-free 'echo' skill); every second pair
    puts a random instruction token before a 3..6-digit string, which the copy skips (``I_k z -> z``), so the
    base knows the instruction format of the shared workflow but not what any instruction asks."""
    lens = rng.integers(MIN_LEN, MAX_LEN + 1, size=n)
    xs = [tuple(int(v) for v in rng.integers(0, 10, size=L)) for L in lens]
    ys = list(xs)
    for i in range(1, n, 2):
        ys[i] = xs[i][1:]
        xs[i] = (INSTR + int(rng.integers(N_STAGES)), *ys[i])
    return PairSet(xs, ys, np.full(n, -1))


def encode(inputs: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids ``(n, SEQ_LEN)`` of ``BOS z SEP y EOS PAD...`` and the mask of the response tokens (y and EOS),
    aligned with the *targets* (position t predicts token t+1: mask[t] = 1 where token t+1 is a response token)."""
    n = len(inputs)
    ids = torch.full((n, SEQ_LEN), PAD, dtype=torch.long)
    mask = torch.zeros((n, SEQ_LEN - 1), dtype=torch.bool)
    for i, (z, y) in enumerate(zip(inputs, outputs)):
        seq = [BOS, *z, SEP, *y, EOS]
        if len(z) > MAX_LEN or len(y) > MAX_OUT:
            raise ValueError(f"pair {i}: lengths {len(z)}, {len(y)} exceed {MAX_LEN}, {MAX_OUT}")
        ids[i, :len(seq)] = torch.tensor(seq)
        mask[i, len(z) + 1:len(seq) - 1] = True
    return ids, mask


def check_no_stage_token(ids: torch.Tensor) -> None:
    """Leakage guard of the routed experiments: only digits and the four structure symbols may appear (no
    instruction token of the shared workflow)."""
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= N_PLAIN):
        raise ValueError(f"token ids must lie in [0, {N_PLAIN}): a stage token (or another symbol) leaked into the "
                         f"inputs of a routed experiment (min {int(ids.min())}, max {int(ids.max())})")


def router_ceiling(lengths: Sequence[int] = tuple(range(MIN_LEN, MAX_LEN + 1))) -> dict[str, float]:
    """The Bayes-optimal router accuracy E_x max_k P(k | x) on the stage-input mixture (uniform over stages and
    lengths), exactly, by enumerating multisets (brief section 3.7).

    For length L, stage 0's input is uniform (weight 1 on each of 10^L strings); the inputs of stages 1-3 are the
    sorted string of a multiset m (weight L!/prod m_i!), its +3 image and the reverse of that. So
    ceiling_L = (1/K) 10^-L [ (10^L - |S|) + sum_{z in S} max(1, c1, c2, c3) ] with S the strings of stages 1-3.
    """
    per_len = {}
    for L in lengths:
        counts: dict[tuple[int, ...], list[int]] = {}
        for m in combinations_with_replacement(range(10), L):
            w = math.factorial(L)
            for v in set(m):
                w //= math.factorial(m.count(v))
            z1 = tuple(m)
            z2 = stage_map(1, z1)
            z3 = stage_map(2, z2)
            for k, z in ((1, z1), (2, z2), (3, z3)):
                counts.setdefault(z, [1, 0, 0, 0])[k] += w
        total = 10 ** L
        s = (total - len(counts)) + sum(max(c) for c in counts.values())
        per_len[L] = s / (N_STAGES * total)
    return {"ceiling": float(np.mean(list(per_len.values()))), **{f"L={L}": v for L, v in per_len.items()}}


def brute_force_ceiling(L: int) -> float:
    """The same ceiling by enumerating all 10^L raw strings (feasible for small L; a test cross-check)."""
    counts: dict[tuple[int, ...], list[int]] = {}
    for idx in range(10 ** L):
        x = tuple(int(c) for c in str(idx).zfill(L))
        zs = chain(x, 3)
        for k in range(N_STAGES):
            counts.setdefault(zs[k], [0, 0, 0, 0])[k] += 1
    return sum(max(c) for c in counts.values()) / (N_STAGES * 10 ** L)


# ------------------------------------------------------------------ the shared workflow (module docstring)
SHARED_MIN_LEN, SHARED_MAX_LEN = MIN_LEN - 1, MAX_LEN - 1      # 3..6 digits, so that I_k z has at most 7 tokens
SHARED_STAGE_NAMES = ("sigma + stamp 0", "sigma + stamp 1", "sigma + stamp 2", "sigma + stamp 3")


def sigma(z: Sequence[int]) -> tuple[int, ...]:
    """The shared sub-skill: the digit substitution v -> (7 v + 3) mod 10 (a bijection without fixed point)."""
    return tuple((7 * int(v) + 3) % 10 for v in z)


def shared_stage_map(k: int, z: Sequence[int]) -> tuple[int, ...]:
    """f^s_k(z) = sigma(z) with its last digit overwritten by the stage's stamp k: every stage translates the record
    into the shared code book sigma (the shared sub-skill) and signs it (the stage's own part, which clashes across
    stages)."""
    if not 0 <= k < N_STAGES:
        raise ValueError(f"stage id {k} is out of range: there are {N_STAGES} stages (0..{N_STAGES - 1})")
    u = sigma(z)
    return u[:-1] + (k,)


def shared_chain(x: Sequence[int], upto: int = N_STAGES) -> list[tuple[int, ...]]:
    """[z0, ..., z_upto] of one raw string under the shared workflow's maps."""
    zs = [tuple(int(v) for v in x)]
    for k in range(upto):
        zs.append(shared_stage_map(k, zs[-1]))
    return zs


def instruct(k: int, z: Sequence[int]) -> tuple[int, ...]:
    """The prompt body I_k z of stage k (the instruction token, then the digits)."""
    if not 0 <= k < N_STAGES:
        raise ValueError(f"stage id {k} is out of range 0..{N_STAGES - 1}")
    return (INSTR + k, *(int(v) for v in z))


def shared_raw_strings(n: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    lens = rng.integers(SHARED_MIN_LEN, SHARED_MAX_LEN + 1, size=n)
    return [tuple(int(v) for v in rng.integers(0, 10, size=L)) for L in lens]


def shared_stage_pairs(k: int, n: int, rng: np.random.Generator) -> PairSet:
    """Client k's private data in the shared workflow: n pairs (I_k z_k, z_{k+1}) from n fresh raw draws."""
    _check_client(k, n)
    zs = [shared_chain(x, k + 1) for x in shared_raw_strings(n, rng)]
    return PairSet([instruct(k, z[k]) for z in zs], [z[k + 1] for z in zs], np.full(n, k))


def shared_client_datasets(n_per_client: int, rng: np.random.Generator) -> list[PairSet]:
    """One stage-local PairSet per client of the shared workflow (scarce: the presets hold 16 pairs each)."""
    return [shared_stage_pairs(k, n_per_client, rng) for k in range(N_STAGES)]


def shared_chain_set(n: int, rng: np.random.Generator) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """n raw strings of the shared workflow and their end-to-end targets y = z4."""
    xs = shared_raw_strings(n, rng)
    return xs, [shared_chain(x)[-1] for x in xs]


def workflow_data(workflow: str, n_per_client: int, rng: np.random.Generator) -> list[PairSet]:
    """The clients' data of a workflow: ``"disjoint"`` (the four clashing maps, `client_datasets`) or
    ``"shared"`` (`shared_client_datasets`)."""
    if workflow == "disjoint":
        return client_datasets(n_per_client, rng)
    if workflow == "shared":
        return shared_client_datasets(n_per_client, rng)
    raise ValueError(f"unknown workflow {workflow!r}: 'disjoint' or 'shared'")
