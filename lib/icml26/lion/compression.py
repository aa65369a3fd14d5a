"""Sign compression and server aggregation rules of distributed Lion (brief Algorithms 3-4).

A step of distributed Lion has node directions v^j (one row per node along ``node_dim``) and produces
one update direction u shared by all nodes; ``x <- x - eta (u + lambda x)``. The rules:

=============  =========================  ==============================  ==================
rule           uplink Q1(v^j)             server / downlink               theorem (brief)
=============  =========================  ==============================  ==================
``avg_sign``   v^j (full precision)       sign(mean_j v^j)                Alg. 3, Thms 3-4
``mv``         S_G(v^j) (1 bit)           majority vote = sign(sum)       Alg. 4, Thm 5
``uu``         S_G(v^j) (1 bit)           S_1(mean_j S_G(v^j)) (1 bit)    Alg. 4, Thms 6-7
``sign_mv``    sign(v^j) (1 bit)          majority vote                   Liu et al. 2024
=============  =========================  ==============================  ==================

Randomness is explicit: pass a ``torch.Generator`` or pre-drawn uniforms (the simulator and the
multi-process implementation share uniforms this way so their iterates agree exactly).
"""
from __future__ import annotations

from typing import Literal

import torch

from ._checks import check_finite

Rule = Literal["avg_sign", "mv", "uu", "sign_mv"]
AGGREGATION_RULES: tuple[str, ...] = ("avg_sign", "mv", "uu", "sign_mv")
TieRule = Literal["random", "zero"] | None
_TIE_RULES = ("random", "zero", None)


def _uniforms(shape: torch.Size, like: torch.Tensor, generator: torch.Generator | None,
              uniforms: torch.Tensor | None) -> torch.Tensor:
    if uniforms is None:
        return torch.rand(shape, generator=generator, dtype=like.dtype, device=like.device)
    if uniforms.shape != shape:
        raise ValueError(f"uniforms must have shape {tuple(shape)}, got {tuple(uniforms.shape)}")
    return uniforms


def unbiased_sign(v: torch.Tensor, R: float | torch.Tensor, generator: torch.Generator | None = None,
                  *, uniforms: torch.Tensor | None = None) -> torch.Tensor:
    """Unbiased stochastic sign S_R (brief Alg. 4): +1 w.p. (R + v)/(2R), -1 otherwise.

    E S_R(v) = v / R and Var S_R(v) = 1 - v^2/R^2. Requires R > 0 and |v| <= R coordinate-wise
    (raises ``ValueError`` otherwise; clip first if your estimator can leave [-R, R], e.g. STORM).
    ``R`` may be a tensor broadcastable to ``v``. Returns a tensor of +-1 with v's dtype.
    """
    check_finite(v, "v")
    R_t = torch.as_tensor(R, dtype=v.dtype, device=v.device)
    if not bool(torch.isfinite(R_t).all()) or bool((R_t <= 0).any()):
        raise ValueError(f"unbiased_sign needs a finite radius R > 0, got {R!r}")
    if bool((v.abs() > R_t).any()):
        raise ValueError("unbiased_sign needs |v| <= R coordinate-wise (clip v to [-R, R] first)")
    u = _uniforms(v.shape, v, generator, uniforms)
    prob_plus = (R_t + v) / (2 * R_t)
    return torch.where(u < prob_plus, 1.0, -1.0).to(v.dtype)


def majority_vote(signs: torch.Tensor, tie: TieRule = "random", generator: torch.Generator | None = None,
                  dim: int = 0, *, uniforms: torch.Tensor | None = None) -> torch.Tensor:
    """Majority vote sign(sum_j s_j) over the node axis ``dim`` (brief Alg. 4, Thm 5 downlink).

    tie: ``"random"`` breaks a zero sum with a fair coin (uniforms of the output's shape are drawn
    always, so the random stream does not depend on the data); ``"zero"`` keeps sign(0) = 0 (no move
    on that coordinate); ``None`` refuses an even node count (``ValueError``), since +-1 votes from an
    odd number of nodes never tie (a 0 entry among the votes can still tie; it then gives 0).
    """
    if tie not in _TIE_RULES:
        raise ValueError(f"tie must be one of {_TIE_RULES}, got {tie!r}")
    check_finite(signs, "signs")
    n = signs.shape[dim]
    if tie is None and n % 2 == 0:
        raise ValueError(f"majority vote over an even number of nodes ({n}) needs a tie rule ('random' or 'zero')")
    total = signs.sum(dim)
    vote = torch.sign(total)
    if tie == "random":
        u = _uniforms(total.shape, total, generator, uniforms)
        vote = torch.where(total == 0, torch.where(u < 0.5, 1.0, -1.0).to(vote.dtype), vote)
    return vote


def needs_uplink_uniforms(rule: str) -> bool:
    """Whether the uplink compressor of ``rule`` is randomised (S_G)."""
    return _check_rule(rule) in ("mv", "uu")


def needs_downlink_uniforms(rule: str, tie: TieRule = "random") -> bool:
    """Whether the server side of ``rule`` is randomised (S_1, or a random tie-break)."""
    rule = _check_rule(rule)
    return rule == "uu" or (rule in ("mv", "sign_mv") and tie == "random")


def _check_rule(rule: str) -> str:
    if rule not in AGGREGATION_RULES:
        raise ValueError(f"unknown aggregation rule {rule!r}; valid: {AGGREGATION_RULES}")
    return rule


def uplink(v: torch.Tensor, rule: str, G: float | None = None, generator: torch.Generator | None = None,
           *, uniforms: torch.Tensor | None = None, clip: bool = True) -> torch.Tensor:
    """Node-side message Q1(v^j) of ``rule`` (works on any shape; each entry is one coordinate).

    For ``mv``/``uu`` the message is S_G(v); with ``clip=True`` v is first clipped to [-G, G] (a no-op
    for plain Lion, whose v is a convex combination of G-bounded gradients; active for STORM
    estimators, which can leave the box — brief Pitfalls).
    """
    rule = _check_rule(rule)
    check_finite(v, "v")
    if rule == "avg_sign":
        return v
    if rule == "sign_mv":
        return torch.sign(v)
    if G is None or not G > 0:
        raise ValueError(f"rule {rule!r} needs the gradient bound G > 0 (assumption bg1), got {G!r}")
    if clip:
        v = v.clamp(-G, G)
    return unbiased_sign(v, G, generator, uniforms=uniforms)


def downlink(messages: torch.Tensor, rule: str, tie: TieRule = "random", generator: torch.Generator | None = None,
             node_dim: int = 0, *, uniforms: torch.Tensor | None = None) -> torch.Tensor:
    """Server-side Q2 of ``rule`` applied to the stacked node messages -> the shared direction u."""
    rule = _check_rule(rule)
    if rule == "avg_sign":
        return torch.sign(messages.mean(node_dim))
    if rule in ("mv", "sign_mv"):
        return majority_vote(messages, tie, generator, dim=node_dim, uniforms=uniforms)
    average = messages.mean(node_dim).clamp(-1.0, 1.0)  # mean of +-1 votes lies in [-1, 1]
    return unbiased_sign(average, 1.0, generator, uniforms=uniforms)


def aggregate(v: torch.Tensor, rule: str, G: float | None = None, tie: TieRule = "random",
              generator: torch.Generator | None = None, node_dim: int = 0, *,
              uplink_uniforms: torch.Tensor | None = None, downlink_uniforms: torch.Tensor | None = None,
              clip: bool = True) -> torch.Tensor:
    """u = Q2( Q1(v^1), ..., Q1(v^n) ) for the node directions stacked along ``node_dim``.

    Draw order with a generator: uplink uniforms (shape of v) first, then downlink uniforms.
    """
    messages = uplink(v, rule, G, generator, uniforms=uplink_uniforms, clip=clip)
    return downlink(messages, rule, tie, generator, node_dim, uniforms=downlink_uniforms)


def payload_bits(rule: str, d: int, float_bits: int = 32) -> tuple[int, int]:
    """(uplink, downlink) bits per node per step for ``d`` coordinates.

    1-bit rules send d bits each way; ``avg_sign`` is counted as a full-precision all-reduce
    (float_bits * d each way), which is how ``distributed.py`` implements it (a parameter server
    could broadcast sign(mean) with 1 bit/coordinate instead).
    """
    rule = _check_rule(rule)
    if rule == "avg_sign":
        return float_bits * d, float_bits * d
    return d, d


_BIT_WEIGHTS = torch.tensor([128, 64, 32, 16, 8, 4, 2, 1], dtype=torch.uint8)


def pack_signs(signs: torch.Tensor) -> torch.Tensor:
    """Pack +-1 signs along the last axis into uint8 bytes (bit 1 = +1, MSB first; padded with 0 bits).

    Shape (..., d) -> (..., ceil(d / 8)). A 0 entry cannot travel in one bit: ``ValueError``.
    """
    if not bool(((signs == 1) | (signs == -1)).all()):
        raise ValueError("pack_signs needs entries in {-1, +1} (a 0 sign cannot be sent in one bit)")
    d = signs.shape[-1]
    bits = (signs > 0).to(torch.uint8)
    pad = (-d) % 8
    if pad:
        bits = torch.nn.functional.pad(bits, (0, pad))
    bits = bits.reshape(*signs.shape[:-1], -1, 8)
    return (bits * _BIT_WEIGHTS.to(bits.device)).sum(-1, dtype=torch.uint8)


def unpack_signs(packed: torch.Tensor, d: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Inverse of :func:`pack_signs`: uint8 (..., ceil(d/8)) -> +-1 of shape (..., d) and ``dtype``."""
    if packed.dtype != torch.uint8:
        raise ValueError(f"packed signs must be uint8, got {packed.dtype}")
    if packed.shape[-1] != (d + 7) // 8:
        raise ValueError(f"{packed.shape[-1]} bytes cannot hold exactly d={d} signs")
    bits = (packed.unsqueeze(-1) & _BIT_WEIGHTS.to(packed.device)) != 0
    bits = bits.reshape(*packed.shape[:-1], -1)[..., :d]
    return torch.where(bits, 1.0, -1.0).to(dtype)
