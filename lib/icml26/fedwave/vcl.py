"""The Value Chain Layer (VCL), in both of the released code's variants (brief section 2.1, from the code [C]).

* `AffineVCL`, what the released forward runs ("debug pass-through"): h' = W^O (h + e_s). Its three losses are
  returned as zeros by the released model. Since ``logits = lm_head(h')`` is affine in h', the stage enters the
  logits only as the position-independent bias lm_head(W^O e_s) - lm_head(W^O e_s'): `stage_logit_shift` makes
  that measurable (the chapter's Theory section asserts it).
* `ChainVCL`, the commented-out layer: K heads of width d/K on h~ = h + e_s, head j masked in or out by the stage
  (``strict_chain``: heads {s-1, s}; ``relaxed_chain``: heads {0..s}), then optional cross-head mixing
  o_j <- sum_i C_ji m_s(i) o_i with C = 1/K at init, and h' = h~ + W^O [o_0 || ... || o_{K-1}]. As in the released
  (commented-out) layer the heads are masked *before* mixing (value_chain_model.py:143-149), so stage s reads only
  its active heads' parameters and every slot carries their mix. Ours, not the release's: the residual h~ + (and
  W^O = 0 at init), which keeps the frozen readout intact at initialisation; causal attention (the release's is
  not causal, which an autoregressive decoder cannot use at generation); one head per stage, not four.
  Regularisers (`ChainVCL.regularisers`): position sum_i (cos(e_i, e_{i+1}) - (1 - (i+1)/K))^2 (targets 0.75, 0.5,
  0.25 for K = 4), continuity sum_{i<j} (cos(vec W^Q_i, vec W^Q_j) - tau_ij)^2 (tau 0.5 for neighbours, else 0.2),
  consistency (cos(mean VCL(h, s), mean VCL(h, s-1)) - 0.6)^2; weights 0.1 / 0.1 / 0.2 (the run script's).
* The stage-blind control (``blind_chain``): the same `ChainVCL`, relaxed chain, same parameters and count, but every
  example is fed the constant stage id K-1 (``fixed_stage``), whose mask activates every head: the capacity of the
  layer without its stage signal, so FedWave-VC minus it measures what the inter-stage dependencies add.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

REG_WEIGHTS = {"position": 0.1, "continuity": 0.1, "consistency": 0.2}
CONSISTENCY_BATCH = 8


def _check_stage(stage: torch.Tensor | None, n_stages: int, batch: int) -> torch.Tensor:
    if stage is None:
        raise ValueError("the VCL needs a stage id per example (got stage=None)")
    stage = torch.as_tensor(stage, dtype=torch.long)
    if stage.ndim == 0:
        stage = stage.expand(batch)
    if stage.shape != (batch,):
        raise ValueError(f"stage ids must have shape ({batch},), got {tuple(stage.shape)}")
    if int(stage.min()) < 0 or int(stage.max()) >= n_stages:
        raise ValueError(f"stage id {int(stage.max())} is out of range: K = {n_stages} stages (0..{n_stages - 1})")
    return stage


class AffineVCL(nn.Module):
    """h' = W^O (h + e_s), as released; W^O = I and e_s ~ N(0, 0.02^2) at init (ours: the frozen readout intact)."""

    variant = "affine"

    def __init__(self, d: int, n_stages: int = 4, seed: int = 0):
        super().__init__()
        if n_stages < 2:
            raise ValueError(f"the value chain needs K >= 2 stages, got {n_stages}")
        g = torch.Generator().manual_seed(seed)
        self.n_stages = n_stages
        self.stage_emb = nn.Parameter(0.02 * torch.randn(n_stages, d, generator=g))
        self.W_O = nn.Linear(d, d)
        with torch.no_grad():
            self.W_O.weight.copy_(torch.eye(d))
            self.W_O.bias.zero_()

    def forward(self, h: torch.Tensor, stage, regularise: bool = False):
        if regularise:       # so that torch.func.functional_call can reach the regularisers too
            return self.regularisers(h, stage)
        stage = _check_stage(stage, self.n_stages, h.shape[0])
        return self.W_O(h + self.stage_emb[stage][:, None, :])

    def regularisers(self, h: torch.Tensor | None = None, stage=None) -> dict[str, torch.Tensor]:
        """The released model's `get_value_chain_loss`: zeros."""
        z = self.stage_emb.sum() * 0.0
        return {"position": z, "continuity": z, "consistency": z}


class ChainVCL(nn.Module):
    """Stage-masked multi-head attention on the final hidden states (module docstring)."""

    variant = "chain"

    def __init__(self, d: int, n_stages: int = 4, mode: str = "strict_chain", cross_head: bool = True, seed: int = 0,
                 fixed_stage: int | None = None):
        super().__init__()
        if fixed_stage is not None and not 0 <= fixed_stage < n_stages:
            raise ValueError(f"fixed_stage {fixed_stage} is out of range 0..{n_stages - 1}")
        if n_stages < 2:
            raise ValueError(f"the value chain needs K >= 2 stages, got {n_stages}")
        if d % n_stages:
            raise ValueError(f"width d = {d} must be divisible by the number of stages K = {n_stages}")
        if mode not in ("strict_chain", "relaxed_chain"):
            raise ValueError(f"mode must be 'strict_chain' or 'relaxed_chain', got {mode!r}")
        g = torch.Generator().manual_seed(seed)
        self.n_stages, self.mode, self.cross_head, self.dh = n_stages, mode, cross_head, d // n_stages
        self.fixed_stage = fixed_stage
        self.stage_emb = nn.Parameter(0.02 * torch.randn(n_stages, d, generator=g))
        self.W_Q = nn.Parameter(torch.randn(n_stages, d, self.dh, generator=g) / d ** 0.5)
        self.W_K = nn.Parameter(torch.randn(n_stages, d, self.dh, generator=g) / d ** 0.5)
        self.W_V = nn.Parameter(torch.randn(n_stages, d, self.dh, generator=g) / d ** 0.5)
        self.C = nn.Parameter(torch.full((n_stages, n_stages), 1.0 / n_stages))
        self.W_O = nn.Linear(d, d)
        with torch.no_grad():
            self.W_O.weight.zero_()
            self.W_O.bias.zero_()
        self.register_buffer("masks", self.stage_masks(n_stages, mode))

    @staticmethod
    def stage_masks(n_stages: int, mode: str) -> torch.Tensor:
        """m_s(j): 1 where head j is active for stage s; strict {s-1, s}, relaxed {0..s}."""
        m = torch.zeros(n_stages, n_stages)
        for s in range(n_stages):
            for j in range(n_stages):
                m[s, j] = float(j in (s - 1, s)) if mode == "strict_chain" else float(j <= s)
        return m

    def heads(self, h: torch.Tensor, stage: torch.Tensor) -> torch.Tensor:
        """o: (batch, K, T, d/K): the stage's active heads (the rest zero), then mixed across heads by C."""
        ht = h + self.stage_emb[stage][:, None, :]
        b, t, d = ht.shape
        K, e = self.n_stages, self.dh
        w = torch.cat([self.W_Q, self.W_K, self.W_V], 0).permute(1, 0, 2).reshape(d, 3 * K * e)
        qkv = (ht @ w).view(b, t, 3, K, e).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        o = o * self.masks[stage][:, :, None, None]       # inactive heads output zeros (value_chain_model.py:143) ...
        if self.cross_head:                                # ... then cross-head mixing, every slot kept (:146-149)
            o = torch.einsum("ji,bite->bjte", self.C, o)
        return o

    def _stage(self, stage, batch: int) -> torch.Tensor:
        stage = _check_stage(stage, self.n_stages, batch)
        return stage if self.fixed_stage is None else torch.full_like(stage, self.fixed_stage)

    def forward(self, h: torch.Tensor, stage, regularise: bool = False):
        if regularise:       # so that torch.func.functional_call can reach the regularisers too
            return self.regularisers(h, stage)
        stage = self._stage(stage, h.shape[0])
        o = self.heads(h, stage)
        b, K, t, e = o.shape
        return h + self.stage_emb[stage][:, None, :] + self.W_O(o.permute(0, 2, 1, 3).reshape(b, t, K * e))

    def regularisers(self, h: torch.Tensor, stage) -> dict[str, torch.Tensor]:
        K = self.n_stages
        e = F.normalize(self.stage_emb, dim=1)
        pos = sum((torch.dot(e[i], e[i + 1]) - (1 - (i + 1) / K)) ** 2 for i in range(K - 1))
        wq = F.normalize(self.W_Q.reshape(K, -1), dim=1)
        cont = sum((torch.dot(wq[i], wq[j]) - (0.5 if j == i + 1 else 0.2)) ** 2
                   for i in range(K) for j in range(i + 1, K))
        stage = self._stage(stage, h.shape[0])
        h, stage = h[:CONSISTENCY_BATCH], stage[:CONSISTENCY_BATCH]     # a sub-batch: the term is a batch mean
        prev = (stage - 1).clamp_min(0)
        a = self.forward(h, stage).mean(dim=(0, 1))
        b = self.forward(h, prev).mean(dim=(0, 1))
        cons = (F.cosine_similarity(a, b, dim=0) - 0.6) ** 2
        return {"position": pos, "continuity": cont, "consistency": cons}


def make_vcl(variant: str, d: int, n_stages: int = 4, seed: int = 0) -> nn.Module:
    if variant == "affine":
        return AffineVCL(d, n_stages, seed=seed)
    if variant in ("strict_chain", "relaxed_chain", "chain"):
        return ChainVCL(d, n_stages, mode="relaxed_chain" if variant == "relaxed_chain" else "strict_chain", seed=seed)
    if variant == "blind_chain":
        return ChainVCL(d, n_stages, mode="relaxed_chain", seed=seed, fixed_stage=n_stages - 1)
    raise ValueError(f"unknown VCL variant {variant!r}: 'affine' (as released), 'strict_chain', 'relaxed_chain' or "
                     "'blind_chain' (the stage-blind control)")


def regulariser_loss(vcl: nn.Module, h: torch.Tensor, stage) -> torch.Tensor:
    r = vcl.regularisers(h, stage)
    return sum(REG_WEIGHTS[k] * v for k, v in r.items())


@torch.no_grad()
def stage_logit_shift(model, vcl: AffineVCL, ids: torch.Tensor, s: int, s2: int) -> torch.Tensor:
    """logits(stage s) - logits(stage s2) at every position of ``ids``: for the affine VCL the same vector at every
    position and every input (a stage-dependent logit bias, nothing more)."""
    h = model.hidden(ids)
    return model.lm_head(vcl(h, torch.full((ids.shape[0],), s))) - model.lm_head(vcl(h, torch.full((ids.shape[0],), s2)))
