"""The frozen base (a stand-in for the paper's 7-8B instruct LLM) and LoRA adapters (brief section 2).

`TinyDecoder` is a pre-LN causal decoder over the 14-symbol vocabulary, pretrained here on a generic copy task
and then frozen. `LoRALinear` adds Delta W = (alpha / r) B A to a frozen `nn.Linear` (Hu et al.; the paper's
client adapters), B = 0 at init and the same seeded A on every client. The factors are `nn.Linear` modules named
``lora_A`` / ``lora_B`` like peft's, so `to_peft_state_dict` gives keys that `peft.set_peft_model_state_dict`
loads into `peft.get_peft_model` of the same module.

The stage signal enters only through the Value Chain Layer on the final hidden state (`vcl.py`):
``logits = lm_head(VCL(final_norm(h), stage))``.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .data import SEQ_LEN, VOCAB

LORA_TARGETS = ("q", "k", "v", "o", "fc1", "fc2")


class LoRALinear(nn.Module):
    """y = W x + b + (alpha / r) B A x, W and b frozen; A: (r, d_in) seeded Kaiming-uniform (peft's init), B = 0."""

    def __init__(self, base: nn.Linear, r: int, alpha: float, seed: int = 0):
        super().__init__()
        if not isinstance(r, int) or r < 1:
            raise ValueError(f"LoRA rank r must be an integer >= 1, got {r!r}")
        if not alpha > 0:
            raise ValueError(f"LoRA alpha must be > 0, got {alpha!r}")
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.r, self.alpha, self.scaling = r, float(alpha), float(alpha) / r
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        g = torch.Generator().manual_seed(int(seed))
        bound = 1.0 / math.sqrt(base.in_features)      # kaiming_uniform_(a=sqrt(5)) as in peft / nn.Linear
        with torch.no_grad():
            self.lora_A.weight.copy_(torch.empty_like(self.lora_A.weight).uniform_(-bound, bound, generator=g))
            self.lora_B.weight.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling


class Block(nn.Module):
    def __init__(self, d: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.ln1(x)
        q, k, v = (m(h).view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for m in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.o(a)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyDecoder(nn.Module):
    """Token + learned position embeddings, ``n_layers`` pre-LN blocks, final LayerNorm, untied lm_head."""

    def __init__(self, d: int = 64, n_layers: int = 2, n_heads: int = 4, vocab: int = VOCAB, seq_len: int = SEQ_LEN):
        super().__init__()
        if d % n_heads:
            raise ValueError(f"width d = {d} must be divisible by n_heads = {n_heads}")
        self.d = d
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq_len, d)
        self.blocks = nn.ModuleList(Block(d, n_heads) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab)

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """Final-norm hidden states ``(batch, seq, d)`` (what the VCL and the router read)."""
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)

    def forward(self, ids: torch.Tensor, stage: torch.Tensor | None = None, vcl: nn.Module | None = None) -> torch.Tensor:
        h = self.hidden(ids)
        if vcl is not None:
            h = vcl(h, stage)
        return self.lm_head(h)


def add_lora(model: TinyDecoder, r: int, alpha: float, seed: int = 0, targets=LORA_TARGETS) -> list[str]:
    """Freeze ``model`` and wrap every target Linear of every block in a `LoRALinear`; returns the wrapped paths.
    The same ``seed`` on every client gives every client the same A (B = 0), as the pitfalls ask."""
    for p in model.parameters():
        p.requires_grad_(False)
    names = []
    for i, blk in enumerate(model.blocks):
        for j, t in enumerate(targets):
            base = getattr(blk, t)
            if not isinstance(base, nn.Linear):
                raise ValueError(f"blocks.{i}.{t} is not an nn.Linear (already wrapped?)")
            setattr(blk, t, LoRALinear(base, r, alpha, seed=seed * 1000 + i * 17 + j))
            names.append(f"blocks.{i}.{t}")
    return names


def lora_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The adapter factors (detached copies), keyed ``blocks.i.t.lora_A.weight`` / ``...lora_B.weight``."""
    return {k: v.detach().clone() for k, v in model.state_dict().items() if ".lora_" in k}


def to_peft_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Our adapter keys -> peft's keys (``base_model.model.<path>.lora_A.weight``, adapter name stripped),
    as `peft.set_peft_model_state_dict` expects."""
    return {f"base_model.model.{k.replace('.base.', '.')}": v for k, v in state.items()}


def lm_loss(logits: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy on the response tokens (mask aligned with the targets ids[:, 1:])."""
    tok = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1),
                          reduction="none").view(ids.shape[0], -1)
    per = (tok * mask).sum(1) / mask.sum(1).clamp_min(1)
    if reduction == "none":
        return per
    return per.mean()


def pretrain_base(cfg: dict, seed: int, progress=None) -> TinyDecoder:
    """Pretrain the base on the generic copy task (`data.pretrain_pairs`), then freeze it."""
    import numpy as np

    from .data import encode, pretrain_pairs

    torch.manual_seed(seed)
    model = TinyDecoder(cfg["d"], cfg["n_layers"], cfg["n_heads"])
    rng = np.random.default_rng(seed)
    data = pretrain_pairs(cfg["pretrain_samples"], rng)
    ids, mask = encode(data.inputs, data.outputs)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["pretrain_lr"], weight_decay=0.0)
    steps = range(cfg["pretrain_steps"])
    if progress is not None:
        steps = progress(steps, desc="pretrain base")
    g = torch.Generator().manual_seed(seed)
    for step in steps:
        idx = torch.randint(0, len(data), (cfg["pretrain_batch"],), generator=g)
        lr = cfg["pretrain_lr"] * 0.5 * (1 + math.cos(math.pi * step / cfg["pretrain_steps"]))
        for group in opt.param_groups:
            group["lr"] = lr
        loss = lm_loss(model(ids[idx]), ids[idx], mask[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model

