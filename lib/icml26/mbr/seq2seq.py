"""A tiny seq2seq transformer for the ``full`` scale (brief §5.2 ``seq2seq`` model; stand-in for an NMT
model / LLM sampler). Trained on (source, p*-reference) pairs of a SynTrans task; candidates are drawn
by ancestral or epsilon sampling, and ``lbar`` is the model's length-normalised log-probability.
torch is imported lazily so the smoke/book scales never load it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .syntrans import SynTrans, source_text

PAD, BOS, EOS = 0, 1, 2
MAX_SOURCE_LEN = 128
"""Positions of the shared positional table available to source sentences (SynTrans sources have <= 39 words)."""


@dataclass
class Seq2SeqConfig:
    d_model: int = 96
    heads: int = 4
    layers: int = 1
    steps: int = 2000
    batch: int = 64
    lr: float = 3e-3
    n_train: int = 30000
    max_len: int = 48
    epsilon: float = 0.02  # epsilon sampling threshold (0 = ancestral)
    temperature: float = 1.0  # sampling temperature (the scores lbar stay those of the unmodified model)
    # the learning-rate schedule: "onecycle" (torch's OneCycleLR over all steps, annealed to ~0 at the last step) or
    # "hold" (:func:`lr_factor`: linear warm-up over ``warmup`` of the steps, a cosine from ``lr`` down to
    # ``final_lr * lr``, then that rate held constant over the last ``hold`` of the steps)
    schedule: str = "onecycle"
    warmup: float = 0.05
    hold: float = 0.4
    final_lr: float = 0.1
    n_evals: int = 20  # held-out KL evaluations over training (Seq2Seq.train), plus one at step 0

    def __post_init__(self):
        if self.schedule not in ("onecycle", "hold"):
            raise ValueError(f"unknown schedule {self.schedule!r}; valid: 'onecycle', 'hold'")
        if not (0 <= self.warmup and 0 <= self.hold and self.warmup + self.hold < 1 and 0 < self.final_lr <= 1):
            raise ValueError(f"need warmup, hold >= 0, warmup + hold < 1 and 0 < final_lr <= 1, got "
                             f"{self.warmup}, {self.hold}, {self.final_lr}")


def lr_factor(step: int, cfg: Seq2SeqConfig) -> float:
    """The "hold" schedule's multiplier of ``cfg.lr`` at a (0-based) step: a linear warm-up over the first
    ``warmup`` of the steps, a cosine from 1 down to ``final_lr`` until ``1 - hold`` of the steps, then ``final_lr``
    held constant to the end. The hold is what the convergence rule (``icml26.convergence``) reads: its last fifth
    judges the model at a fixed learning rate, after the anneal (a run annealed to its last step, OneCycle's, keeps
    improving through the anneal and can pass the rule only if the model reaches its floor earlier)."""
    n = cfg.steps
    warm = max(1, round(cfg.warmup * n))
    end = max(warm + 1, round((1 - cfg.hold) * n))
    if step < warm:
        return (step + 1) / warm
    if step >= end:
        return cfg.final_lr
    frac = (step - warm) / (end - warm)
    return cfg.final_lr + (1 - cfg.final_lr) * 0.5 * (1 + np.cos(np.pi * frac))


class Seq2Seq:
    """Encoder-decoder transformer over SynTrans source ids and target words."""

    def __init__(self, world: SynTrans, cfg: Seq2SeqConfig, seed: int = 0, device: Any = None):
        import torch
        from torch import nn

        self.world, self.cfg = world, cfg
        lex = world.lexicon
        src_vocab = sorted({w for ws in lex.source.values() for w in ws})
        self.src_ids = {w: i + 3 for i, w in enumerate(src_vocab)}
        tgt_vocab = lex.target_vocabulary
        self.tgt_ids = {w: i + 3 for i, w in enumerate(tgt_vocab)}
        self.tgt_words = ["<pad>", "<s>", "</s>"] + tgt_vocab
        self.device = device or torch.device("cpu")
        torch.manual_seed(seed)
        d = cfg.d_model
        self.src_emb = nn.Embedding(len(src_vocab) + 3, d)
        self.tgt_emb = nn.Embedding(len(self.tgt_words), d)
        self.pos = nn.Embedding(max(cfg.max_len + 2, MAX_SOURCE_LEN), d)  # shared by source and target positions
        self.net = nn.Transformer(d, cfg.heads, cfg.layers, cfg.layers, 4 * d, dropout=0.0, batch_first=True)
        self.out = nn.Linear(d, len(self.tgt_words))
        self.modules = nn.ModuleList([self.src_emb, self.tgt_emb, self.pos, self.net, self.out]).to(self.device)
        self.seed = int(seed)
        self.rng = np.random.default_rng([seed, 4242])

    def _encode_src(self, trees):
        import torch

        seqs = [[self.src_ids[w] for w in source_text(t).split()] for t in trees]
        L = max(map(len, seqs))
        if L > MAX_SOURCE_LEN:
            raise ValueError(f"a source sentence has {L} words; the positional table holds {MAX_SOURCE_LEN}")
        x = torch.zeros(len(seqs), L, dtype=torch.long)
        for i, s in enumerate(seqs):
            x[i, : len(s)] = torch.tensor(s)
        return x.to(self.device)

    def _memory(self, src):
        """The encoder's output for padded source ids (``nn.Transformer.encoder``, its final norm included)."""
        import torch

        pos_s = torch.arange(src.shape[1], device=self.device)
        return self.net.encoder(self.src_emb(src) + self.pos(pos_s), src_key_padding_mask=src == PAD)

    def _decode(self, memory, src_pad, tgt_in, last_only: bool = False):
        """Decoder logits for target prefixes ``tgt_in`` given the encoder memory (all positions, or the last)."""
        import torch

        T = tgt_in.shape[1]
        pos_t = torch.arange(T, device=self.device)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=self.device), diagonal=1)
        h = self.net.decoder(self.tgt_emb(tgt_in) + self.pos(pos_t), memory, tgt_mask=mask,
                             tgt_key_padding_mask=tgt_in == PAD, memory_key_padding_mask=src_pad)
        return self.out(h[:, -1]) if last_only else self.out(h)

    def _logits(self, src, tgt_in, last_only: bool = False):
        """Encoder then decoder: the same computation as ``nn.Transformer.forward``."""
        return self._decode(self._memory(src), src == PAD, tgt_in, last_only)

    def target_batch(self, references: list[str]):
        """Padded teacher-forcing targets ``[BOS] y [EOS]``; a reference longer than ``max_len`` is cut
        there and gets no EOS (a truncation is not an end of sentence)."""
        import torch

        full = [[self.tgt_ids[w] for w in ref.split()] for ref in references]
        ys = [[BOS] + y[: self.cfg.max_len] + ([EOS] if len(y) <= self.cfg.max_len else []) for y in full]
        tgt = torch.zeros(len(ys), max(map(len, ys)), dtype=torch.long)
        for i, y in enumerate(ys):
            tgt[i, : len(y)] = torch.tensor(y)
        return tgt

    def train(self, progress=None, n_heldout: int = 256, n_evals: int | None = None) -> list[float]:
        """Teacher-forced cross-entropy on fresh (x, y ~ p*) pairs; returns the training loss (under the
        configured learning-rate schedule, ``cfg.schedule``).

        The convergence curve is held out: ``n_heldout`` fixed (x, y ~ p*) pairs drawn apart from training (their own
        random stream, so training is unchanged), on which ``KL(p* || p_theta) = E[log p*(y|x) - log p_theta(y|x)]``
        (nats per sentence, the exact log p* of SynTrans) is measured ``n_evals`` times, evenly over training, and
        at step 0: ``self.heldout = (steps, kl)`` (``n_evals`` defaults to ``cfg.n_evals``). A training loss under a
        decaying learning rate flattens partly by construction; this curve does not.

        A reference longer than ``max_len`` is cut there *without* an end-of-sentence token, so the
        model is never taught to stop where a sentence was only truncated."""
        import torch

        n_evals = self.cfg.n_evals if n_evals is None else int(n_evals)
        hrng = np.random.default_rng([self.seed, 777])   # the held-out pairs' own stream
        h_trees = [self.world.sample_source(hrng) for _ in range(n_heldout)]
        h_refs = [self.world.sample_reference(t, hrng) for t in h_trees]
        h_star = np.array([self.world.log_prob(t, r) for t, r in zip(h_trees, h_refs)])
        at = set(np.unique(np.linspace(0, self.cfg.steps, n_evals + 1).round().astype(int)).tolist()) if n_evals else set()
        kl_steps, kl_vals = [], []

        def heldout_kl(step: int) -> None:
            kl_steps.append(step)
            kl_vals.append(float(np.mean(h_star - self.log_prob(h_trees, h_refs))))

        opt = torch.optim.AdamW(self.modules.parameters(), lr=self.cfg.lr)
        if self.cfg.schedule == "onecycle":
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, self.cfg.lr, total_steps=self.cfg.steps)
        else:
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, self.cfg))
        pool = [self.world.sample_source(self.rng) for _ in range(self.cfg.n_train)]
        losses = []
        if 0 in at:
            heldout_kl(0)
        steps = range(self.cfg.steps) if progress is None else progress(range(self.cfg.steps), desc="seq2seq")
        for _ in steps:
            trees = [pool[i] for i in self.rng.integers(len(pool), size=self.cfg.batch)]
            tgt = self.target_batch([self.world.sample_reference(t, self.rng) for t in trees]).to(self.device)
            logits = self._logits(self._encode_src(trees), tgt[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1),
                                                     ignore_index=PAD)
            opt.zero_grad(); loss.backward(); opt.step(); sched.step()
            losses.append(float(loss.detach()))
            if len(losses) in at:
                heldout_kl(len(losses))
        self.heldout = (kl_steps, kl_vals)
        return losses

    def log_prob(self, trees, references: list[str], batch: int = 256) -> np.ndarray:
        """Teacher-forced ``log p_theta(y | x)`` of whole outputs (end-of-sentence token included; the model's
        unmodified distribution, not the epsilon-truncated one it samples from), one per (tree, reference) pair.
        With draws ``y ~ p*`` and SynTrans's exact ``log p*``, ``mean(log p* - log p_theta)`` estimates
        KL(p* || p_theta) in nats per sentence (the chapter's fit of the model to p*)."""
        import torch

        if len(trees) != len(references):
            raise ValueError(f"one reference per tree: got {len(trees)} trees and {len(references)} references")
        out = []
        with torch.no_grad():
            for i in range(0, len(trees), batch):
                tgt = self.target_batch(references[i:i + batch]).to(self.device)
                logits = self._logits(self._encode_src(trees[i:i + batch]), tgt[:, :-1])
                lp = torch.log_softmax(logits, -1).gather(2, tgt[:, 1:, None]).squeeze(2)
                out.append((lp * (tgt[:, 1:] != PAD)).sum(1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0)

    def sample(self, trees, n: int, rng: np.random.Generator, temperature: float | None = None
               ) -> tuple[list[list[str]], np.ndarray]:
        """n samples per source (epsilon sampling with ``cfg.epsilon``, the most probable token always
        kept; 0 = ancestral; at ``temperature`` (default ``cfg.temperature``): the distribution sampled from is
        ``softmax(logits / temperature)``) and their length-normalised log-probabilities under the model (of the
        unmodified distribution at temperature 1; the end-of-sentence token counts as one position). An output
        that stops at once is the empty string, scored as such (no word is substituted for it)."""
        import torch

        temperature = float(self.cfg.temperature if temperature is None else temperature)
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")

        gen = torch.Generator(device="cpu").manual_seed(int(rng.integers(2 ** 31)))
        src = self._encode_src(trees)
        with torch.no_grad():
            memory = self._memory(src).repeat_interleave(n, dim=0)    # encode each source once
        src_pad = (src == PAD).repeat_interleave(n, dim=0)
        B = memory.shape[0]
        ys = torch.full((B, 1), BOS, dtype=torch.long, device=self.device)
        logp = torch.zeros(B, device=self.device); length = torch.zeros(B, device=self.device)
        done = torch.zeros(B, dtype=torch.bool, device=self.device)
        with torch.no_grad():
            for _ in range(self.cfg.max_len + 1):
                act = (~done).nonzero().squeeze(1)                    # finished sequences leave the batch
                if act.numel() == 0:
                    break
                lp = torch.log_softmax(self._decode(memory[act], src_pad[act], ys[act], last_only=True), -1)
                lp[:, PAD] = -float("inf"); lp[:, BOS] = -float("inf")
                probs = lp.exp() if temperature == 1.0 else torch.softmax(lp / temperature, -1)
                if self.cfg.epsilon > 0:
                    keep = (probs >= self.cfg.epsilon) | (probs == probs.max(-1, keepdim=True).values)
                    probs = torch.where(keep, probs, torch.zeros_like(probs))
                pick = torch.multinomial((probs / probs.sum(-1, keepdim=True)).cpu(), 1, generator=gen).squeeze(1).to(self.device)
                nxt = torch.full((B,), PAD, dtype=torch.long, device=self.device)
                nxt[act] = pick
                logp[act] += lp.gather(1, pick[:, None]).squeeze(1)
                length[act] += 1
                done[act] = pick == EOS
                ys = torch.cat([ys, nxt[:, None]], 1)
        words = [[self.tgt_words[t] for t in row[1:].tolist() if t > EOS] for row in ys]
        texts = [" ".join(w) for w in words]
        lbar = (logp / length.clamp(min=1)).cpu().numpy()
        return [texts[i * n:(i + 1) * n] for i in range(len(trees))], lbar.reshape(len(trees), n)


def seq2seq_sampler_factory(cfg: Seq2SeqConfig, seed: int = 0, device: Any = None, progress=None):
    """A ``sampler_factory`` for :func:`icml26.mbr.experiments.run_study`: trains one model per task."""
    def factory(world: SynTrans):
        cache = factory.__dict__.setdefault("models", {})
        if world.name not in cache:
            model = Seq2Seq(world, cfg, seed=seed, device=device)
            model.losses = model.train(progress)   # run_study keeps them as the convergence curves
            cache[world.name] = model
        return cache[world.name].sample
    return factory


def resampled_factory(models: dict, temperature: float):
    """A ``sampler_factory`` that reuses already trained models (one per task name, e.g. ``Study.models``) and
    samples them at another ``temperature``: a second regime of the same model (flatter candidates, the same
    scores ``lbar``), with no training."""
    if not models:
        raise ValueError("resampled_factory needs trained models (one per task)")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")

    def factory(world: SynTrans):
        model = models[world.name]
        return lambda trees, n, rng: model.sample(trees, n, rng, temperature=temperature)
    factory.models = dict(models)
    return factory
