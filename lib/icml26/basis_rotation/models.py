"""Stand-in models for the pipeline experiments: a deep tanh MLP and a tiny character-level GPT.

Both expose ``pipeline_parts() -> (first, blocks, last)``: modules that always sit on the first
stage (embeddings), the blocks split evenly over the stages, and modules on the last stage
(final norm, head). Linear weights that the method rotates live in modules named ``mlp`` / ``attn``
(the official selection rule, :data:`icml26.basis_rotation.optim.ROTATED_MODULE_KEYS`).
The GPT follows the official ``models/gptn`` block: pre-LN, causal self-attention with separate
``c_q / c_k / c_v`` projections without bias (so basis rotation keeps one d x d left basis per
projection, as officially), ReLU FFN (4x), a biased ``lm_head`` and plain ``N(0, 0.02)`` initialisation
of every matrix. Remaining differences (stated in the chapter): character vocabulary, learned
positions of length ``ctx``. The attention output projection ``c_proj`` has a bias, as the official
``proj = nn.Linear(n_embd, n_embd)`` does (not a deviation).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MLPBlock(nn.Module):
    """``x -> tanh(mlp(x))``: one hidden layer of the deep MLP (its weight is rotated)."""

    def __init__(self, width: int):
        super().__init__()
        self.mlp = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.mlp(x))


class ResidualMLPBlock(MLPBlock):
    """``x -> x + tanh(mlp(x)) / sqrt(n_blocks)``: a residual block for the deep (``gpu``) MLP, so that 32 blocks
    still train; the branch scale keeps the output's variance bounded in the depth."""

    def __init__(self, width: int, n_blocks: int):
        super().__init__(width)
        self.scale = float(n_blocks) ** -0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.scale * torch.tanh(self.mlp(x))


class DeepMLP(nn.Module):
    """``inp`` (not rotated) -> ``n_blocks`` tanh blocks (rotated) -> ``head`` (not rotated); ``residual``
    blocks (:class:`ResidualMLPBlock`) for a very deep stand-in."""

    def __init__(self, d_in: int, width: int, n_blocks: int, d_out: int, residual: bool = False):
        super().__init__()
        if min(d_in, width, n_blocks, d_out) < 1:
            raise ValueError("DeepMLP sizes must all be >= 1")
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.ModuleList(ResidualMLPBlock(width, n_blocks) if residual else MLPBlock(width)
                                    for _ in range(n_blocks))
        self.head = nn.Linear(width, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.inp(x))
        for b in self.blocks:
            x = b(x)
        return self.head(x)

    def pipeline_parts(self):
        return [self.inp], list(self.blocks), [self.head]


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, n_head: int):
        super().__init__()
        if d % n_head:
            raise ValueError(f"d_model {d} is not divisible by n_head {n_head}")
        self.n_head = n_head
        self.c_q = nn.Linear(d, d, bias=False)
        self.c_k = nn.Linear(d, d, bias=False)
        self.c_v = nn.Linear(d, d, bias=False)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.c_q(x), self.c_k(x), self.c_v(x)
        q, k, v = (z.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.relu(self.c_fc(x)))


class GPTBlock(nn.Module):
    """Pre-LN transformer block: ``x + attn(ln_1 x)``, then ``x + mlp(ln_2 x)``."""

    def __init__(self, d: int, n_head: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = FeedForward(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Embed(nn.Module):
    def __init__(self, vocab: int, d: int, ctx: int):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.wte(idx) + self.wpe(pos)


class Head(nn.Module):
    def __init__(self, d: int, vocab: int):
        super().__init__()
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.ln_f(x))


class TinyGPT(nn.Module):
    """Character-level decoder-only transformer (stand-in for the paper's 95M-3B GPTs)."""

    def __init__(self, vocab: int, d_model: int, n_layer: int, n_head: int, ctx: int):
        super().__init__()
        self.ctx = ctx
        self.embed = Embed(vocab, d_model, ctx)
        self.blocks = nn.ModuleList(GPTBlock(d_model, n_head) for _ in range(n_layer))
        self.head = Head(d_model, vocab)
        for name, p in self.named_parameters():  # the official initialisation: plain N(0, 0.02)
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(x)

    def pipeline_parts(self):
        return [self.embed], list(self.blocks), [self.head]
