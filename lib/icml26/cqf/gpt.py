"""`TinyGPT`: a small causal transformer LM (brief §5.6), the optimisation-based learner of §7.

2 layers, d = 96, 4 heads, context 64 (defaults), AdamW (lr 3e-3, cosine decay) on a fixed step
budget; trained on packed windows of the selected documents, on `icml26.device()` (CUDA when present).
Its data-conditioning result depends on the horizon (the number of training tokens), which the chapter
reports; the n-gram model is the ERM-like control.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .world import Docs


class TinyGPT(nn.Module):
    def __init__(self, vocab_size: int, d: int = 96, n_layers: int = 2, n_heads: int = 4, ctx: int = 64):
        super().__init__()
        if d % n_heads:
            raise ValueError("d must be divisible by n_heads")
        self.V, self.ctx = vocab_size, ctx
        self.tok = nn.Embedding(vocab_size, d)
        self.pos = nn.Embedding(ctx, d)
        layer = nn.TransformerEncoderLayer(d, n_heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True,
                                           activation="gelu")
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab_size, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((ctx, ctx), float("-inf")), 1), persistent=False)

    def forward(self, x):
        T = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(T, device=x.device))[None]
        h = self.blocks(h, mask=self.mask[:T, :T], is_causal=True)
        return self.head(self.norm(h))


def _windows(docs: Docs, ctx: int) -> np.ndarray:
    """Documents packed into one stream (a '.' joins them) and cut into windows of ctx + 1 tokens."""
    t = docs.tokens.astype(np.int64)
    n = (len(t) - 1) // ctx
    if n < 1:
        raise ValueError(f"need more than {ctx + 1} training tokens, got {len(t)}")
    idx = np.arange(n)[:, None] * ctx + np.arange(ctx + 1)[None, :]
    return t[idx]


class GPTLM:
    """Train a TinyGPT on documents and expose the LM interface of `NGramLM` (loss, doc_losses, prob_next)."""

    def __init__(self, vocab_size: int, steps: int, batch: int = 32, lr: float = 3e-3, seed: int = 0, device=None,
                 **arch):
        if steps < 1 or batch < 1:
            raise ValueError("steps and batch must be >= 1")
        self.V, self.steps, self.batch, self.lr, self.seed = vocab_size, steps, batch, lr, seed
        self.arch = arch
        self.device = torch.device("cpu") if device is None else torch.device(device)

    def fit(self, docs: Docs) -> "GPTLM":
        torch.manual_seed(self.seed)
        self.model = TinyGPT(self.V, **self.arch).to(self.device)
        W = torch.from_numpy(_windows(docs, self.model.ctx))
        gen = torch.Generator().manual_seed(self.seed)
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / self.steps)))
        order = torch.randperm(len(W), generator=gen)
        pos = 0
        self.model.train()
        for _ in range(self.steps):
            if pos + self.batch > len(order):  # next epoch (only when the budget is smaller than steps*batch)
                order, pos = torch.randperm(len(W), generator=gen), 0
            xb = W[order[pos:pos + self.batch]].to(self.device)
            pos += self.batch
            logits = self.model(xb[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, self.V), xb[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        self.model.eval()
        self.train_tokens = len(W) * self.model.ctx
        return self

    @torch.no_grad()
    def token_logprobs(self, docs: Docs) -> np.ndarray:
        """log P(token | in-document context, at most ctx - 1 tokens) for every token (first: after '.')."""
        ctx = self.model.ctx
        out = np.zeros(docs.n_tokens)
        dot = 3  # "." (FUNCTION_WORDS index)
        for d in range(0, len(docs), 256):
            part = docs.take(np.arange(d, min(d + 256, len(docs))))
            rows, targets, where = [], [], []
            for i in range(len(part)):
                a, b = part.offsets[i], part.offsets[i + 1]
                seq = np.concatenate([[dot], part.tokens[a:b]])
                for s in range(0, len(seq) - 1, ctx):
                    chunk = seq[s:s + ctx + 1]
                    pad = ctx + 1 - len(chunk)
                    rows.append(np.concatenate([chunk, np.zeros(pad, np.int64)]))
                    targets.append(len(chunk) - 1)
                    where.append((a + docs.offsets[d] + s, len(chunk) - 1))
            x = torch.from_numpy(np.stack(rows)).to(self.device)
            lp = torch.log_softmax(self.model(x[:, :-1]).float(), -1)
            tgt = lp.gather(-1, x[:, 1:, None])[..., 0].cpu().numpy()
            for r, (start, n) in enumerate(where):
                out[start:start + n] = tgt[r, :n]
        return out

    def loss(self, docs: Docs) -> float:
        return float(-self.token_logprobs(docs).mean())

    def doc_losses(self, docs: Docs) -> np.ndarray:
        lp = self.token_logprobs(docs)
        return -np.add.reduceat(lp, docs.offsets[:-1]) / np.maximum(docs.lengths, 1)

    @torch.no_grad()
    def prob_next(self, contexts, ctx_len, words) -> np.ndarray:
        contexts = np.asarray(contexts, dtype=np.int64)
        x = torch.from_numpy(contexts[:, -min(contexts.shape[1], self.model.ctx):]).to(self.device)
        p = torch.softmax(self.model(x)[:, -1].float(), -1).cpu().numpy()
        return p[np.arange(len(words)), np.asarray(words)]
