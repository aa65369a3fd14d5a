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

from .world import FUNCTION_WORDS, Docs


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
    """Documents packed into one stream (back to back: every document already ends with '.') and cut into
    windows of ctx + 1 tokens."""
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

    def fit(self, docs: Docs, eval_sets=(), eval_at=()) -> "GPTLM":
        """AdamW with cosine decay for ``steps`` steps. ``eval_at``: steps after which the loss on each of
        ``eval_sets`` is recorded (``eval_history_``, one row per step in ``eval_at``: checkpoints of this one
        run, not separately annealed runs); ``train_curve_``: the mean training loss of each tenth of the run."""
        eval_at = sorted({int(s) for s in eval_at})
        if eval_at and (eval_at[0] < 1 or eval_at[-1] > self.steps):
            raise ValueError(f"eval_at must lie in [1, steps={self.steps}], got {eval_at}")
        torch.manual_seed(self.seed)
        self.model = TinyGPT(self.V, **self.arch).to(self.device)
        W = torch.from_numpy(_windows(docs, self.model.ctx))
        gen = torch.Generator().manual_seed(self.seed)
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / self.steps)))
        order = torch.randperm(len(W), generator=gen)
        pos = 0
        self.model.train()
        losses, history = [], []
        for step in range(1, self.steps + 1):
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
            losses.append(float(loss.detach()))
            if step in eval_at:
                self.model.eval()
                history.append([self.loss(e) for e in eval_sets])
                self.model.train()
        self.model.eval()
        self.train_tokens = len(W) * self.model.ctx
        self.eval_history_ = np.array(history)
        parts = np.array_split(np.array(losses), min(10, len(losses)))
        self.train_curve_ = [float(p.mean()) for p in parts]
        return self

    @torch.no_grad()
    def token_logprobs(self, docs: Docs) -> np.ndarray:
        """log P(token | in-document context, at most ctx - 1 tokens) for every token (first: after '.').

        Each document, preceded by '.', is cut into chunks of ``ctx`` targets (vectorised; rows padded)."""
        ctx = self.model.ctx
        dot = FUNCTION_WORDS.index(".")
        L = docs.lengths.astype(np.int64)
        n_chunks = -(-L // ctx)
        doc = np.repeat(np.arange(len(docs)), n_chunks)
        start = (np.arange(n_chunks.sum()) - np.repeat(np.cumsum(n_chunks) - n_chunks, n_chunks)) * ctx
        j = np.arange(ctx + 1)[None, :]
        pos = start[:, None] + j                      # index into '.' + document
        valid = pos <= L[doc][:, None]
        tok_idx = docs.offsets[doc][:, None] + pos - 1
        rows = np.where(pos == 0, dot, docs.tokens[np.clip(tok_idx, 0, max(docs.n_tokens - 1, 0))])
        rows = np.where(valid, rows, 0).astype(np.int64)
        out = np.zeros(docs.n_tokens)
        tgt_valid = valid[:, 1:]
        for r0 in range(0, len(rows), 1024):
            x = torch.from_numpy(rows[r0:r0 + 1024]).to(self.device)
            lp = torch.log_softmax(self.model(x[:, :-1]).float(), -1)
            tgt = lp.gather(-1, x[:, 1:, None])[..., 0].cpu().numpy()
            m = tgt_valid[r0:r0 + 1024]
            out[tok_idx[r0:r0 + 1024, 1:][m]] = tgt[m]
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
