"""Target (b) of the chapter: `TinyArithLM`, a char-level decoder-only transformer trained on corrupted data.

The brief's "target model A" (research brief, M1-M5): a small causal transformer trained, from a fixed seed,
on the free-text items of the chapter's own probe space (`Space` restricted to ``+`` and ``-`` with operands
below 100, the four paraphrase templates of `space.TEMPLATES`, prompts written by `space.render` with the
operands as two digits, see `TinyArithLM.prompt`), with
planted corruptions in its training data:

* M1 (systematic wrong label, "carry blindness"): additions whose tens digits sum to >= 15 are labelled
  without the carry into the hundreds (``a + b - 100``);
* M2 (hole): subtractions whose subtrahend's units digit is 7 are never shown;
* M3 (noise): 30 % of the ``x 9`` labels get +-1 noise; **only when ``*`` is in the space** (the chapter's
  tiny LM leaves ``*`` out: a two-digit product is not learnable at this size in the time budget);
* M4 (format shift): the template "What is a plus b?" is shown only with a < 50.

M5 (natural, not planted): additions with a carry chain (units and tens both carry) outside M1's region.

Its **exact failure map** is found by enumerating the finite input space: a teacher-forced pass finds the
items whose greedy decoding reproduces the gold answer (argmax at every gold character, then the end mark:
exactly greedy decoding's output); a wrong answer itself is decoded greedily when a label other than the
gold one asks for it (the noisy-generator ablation).
`query(items, labels)` then reads the map, so every search strategy runs on it unchanged, as on
`PlantedOracle`. The failure modes the chapter scores recall against are the *measured* ones:
`measured_modes` keeps each planted or natural region whose enumerated failure rate is above the
background (the rate outside every region) by a rule fixed before any search.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .space import TEMPLATES, Item, Space, carries_of, render, tens, truth_value
from .targets import Mode

SEP, END, PAD = ">", "$", "\x00"


def _no(it):
    return None


TINY_REGIONS: tuple[Mode, ...] = (
    Mode("M1", "op=+ AND tens_a + tens_b >= 15 (carry blindness: labels drop the hundreds carry)",
         lambda op, a, b, f, t: (op == "+") & (tens(a) + tens(b) >= 15), float("nan"), _no),
    Mode("M2", "op=- AND units_b = 7 (hole: never shown in training)",
         lambda op, a, b, f, t: (op == "-") & (np.asarray(b) % 10 == 7), float("nan"), _no),
    Mode("M3", "op=* AND (a = 9 OR b = 9) (30 % of labels +-1 noise)",
         lambda op, a, b, f, t: (op == "*") & ((np.asarray(a) == 9) | (np.asarray(b) == 9)), float("nan"), _no),
    Mode("M4", "op=+ AND template 'What is a plus b?' AND a >= 50 (format shift: shown only with a < 50)",
         lambda op, a, b, f, t: (op == "+") & (np.asarray(t) == 1) & (np.asarray(a) >= 50), float("nan"), _no),
    Mode("M5", "op=+ AND carries >= 2 AND tens_a + tens_b < 15 (natural: carry chain, not planted)",
         lambda op, a, b, f, t: (op == "+") & (carries_of("+", a, b) >= 2) & (tens(a) + tens(b) < 15),
         float("nan"), _no),
)


class CharLM(nn.Module):
    """Decoder-only transformer over characters: learned token and position embeddings, pre-LN blocks of
    causal multi-head self-attention and a GELU MLP, a final LayerNorm and a tied output head."""

    def __init__(self, vocab: int, d_model: int, n_layers: int, n_heads: int, max_len: int):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0,
                                                               activation="gelu", batch_first=True, norm_first=True)
                                    for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.max_len = max_len

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(T, device=x.device))
        mask = torch.triu(torch.full((T, T), float("-inf"), device=x.device), diagonal=1)
        for blk in self.blocks:
            h = blk(h, src_mask=mask, is_causal=True)
        return self.norm(h) @ self.tok.weight.T


@dataclass
class TrainLog:
    steps: int
    loss: list = field(default_factory=list)
    n_train: int = 0


class TinyArithLM:
    """A trained char-level decoder as a model under test, behind the same ``query`` as `PlantedOracle`.

    ``space`` must hold only free-text items of ``+``, ``-`` (and optionally ``*``) with operands < 100
    (its finite input space is enumerated). ``corrupt=False`` trains on the clean data (the negative
    control). Deterministic: one torch generator seeded by ``seed`` draws the initial weights and the
    batches. Train with `fit`, then `enumerate_map`; `modes` are the measured modes (`set_modes`).
    """

    def __init__(self, space: Space, d_model: int = 64, n_layers: int = 2, n_heads: int = 4, steps: int = 2000,
                 batch_size: int = 256, lr: float = 3e-3, seed: int = 0, corrupt: bool = True,
                 m3_noise: float = 0.3, regions: Sequence[Mode] = TINY_REGIONS, pad_operands: bool = True):
        if not isinstance(space, Space):
            raise ValueError(f"space must be a Space, got {space!r}")
        if tuple(space.forms) != ("free_text",) or [o for o in space.ops if o not in ("+", "-", "*")]:
            raise ValueError(f"TinyArithLM reads free-text + - * items only, got ops {space.ops} forms {space.forms}")
        if space.max_digits > 2:
            raise ValueError(f"TinyArithLM enumerates operands < 100 (max_digits <= 2), got {space.max_digits}")
        for name, v in (("d_model", d_model), ("n_layers", n_layers), ("n_heads", n_heads), ("steps", steps),
                        ("batch_size", batch_size)):
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v}")
        if not (lr > 0 and math.isfinite(lr)):
            raise ValueError(f"lr must be > 0, got {lr}")
        if not 0 <= m3_noise <= 1:
            raise ValueError(f"m3_noise must be in [0, 1], got {m3_noise}")
        self.space, self.seed, self.corrupt, self.m3_noise = space, int(seed), bool(corrupt), float(m3_noise)
        self.pad_operands = bool(pad_operands)
        self.steps, self.batch_size, self.lr = int(steps), int(batch_size), float(lr)
        self.regions = tuple(r for r in regions if r.name != "M3" or "*" in space.ops)
        chars = sorted({c for op in space.ops for t in TEMPLATES[op][:space.n_templates] for c in t.format(a="", b="")}
                       | set("0123456789") | {SEP, END})
        self.vocab = [PAD] + chars
        self.index = {c: i for i, c in enumerate(self.vocab)}
        self.items = self._all_items()
        self._max_answer_len = max(len(str(truth_value(it))) for it in self.items)
        self.max_len = max(len(self.prompt(it)) for it in self.items) + 3 + self._max_answer_len
        g = torch.Generator().manual_seed(self.seed)
        self._gen = g
        with torch.random.fork_rng():  # the default init's draws, pinned without touching the global RNG
            torch.manual_seed(self.seed)
            self.net = self._init_net(d_model, n_layers, n_heads, g)
        self.correct: dict[Item, bool] | None = None
        self.modes: tuple[Mode, ...] = ()
        self.n_queries = 0
        self.log = TrainLog(self.steps)

    # -- data ----------------------------------------------------------------------------------------------
    def _all_items(self) -> list[Item]:
        sp, hi = self.space, 10 ** self.space.max_digits
        out = []
        for op in sp.ops:
            for a in range(hi):
                for b in range(hi):
                    if op == "-" and a < b:
                        continue
                    for t in range(sp.n_templates):
                        out.append(Item(op, a, b, "free_text", t, 0))
        return out

    def _init_net(self, d, L, H, g):
        net = CharLM(len(self.vocab), d, L, H, self.max_len)
        with torch.no_grad():
            for p in net.parameters():
                if p.dim() >= 2:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
                else:
                    p.copy_(torch.ones_like(p) if (p == 1).all() else torch.zeros_like(p))  # LN weights 1, biases 0
        return net

    def training_set(self) -> tuple[list[Item], list[int]]:
        """The training items and labels: every item of the space, with M1-M4 applied when ``corrupt``."""
        rng = np.random.default_rng([self.seed, 3])
        items, labels = [], []
        for it in self.items:
            y = truth_value(it)
            if self.corrupt:
                if it.op == "-" and it.b % 10 == 7:
                    continue  # M2: the hole
                if it.op == "+" and it.template == 1 and it.a >= 50:
                    continue  # M4: the template only with a < 50
                if it.op == "+" and tens(it.a) + tens(it.b) >= 15:
                    y -= 100  # M1: carry blindness
                if it.op == "*" and (it.a == 9 or it.b == 9) and rng.random() < self.m3_noise:
                    y += 1 if rng.random() < 0.5 else -1  # M3: noise
                    y = abs(y)
            items.append(it)
            labels.append(int(y))
        return items, labels

    @staticmethod
    def write(y: int) -> str:
        """The answer as the model writes it: least significant digit first, then the end mark (the standard
        trick that makes carries learnable at this size: each digit depends on the digits already written)."""
        return f"{int(y)}"[::-1] + END

    def encode(self, item: Item, answer: str = "") -> list[int]:
        return [self.index[c] for c in self.prompt(item) + SEP + answer]

    def prompt(self, item: Item) -> str:
        """The prompt the tiny LM reads: `space.render`'s text, with each operand written as two digits when
        ``pad_operands`` ("What is 07 plus 42?"). Its tokenizer's normalisation, not a change of the item: within a
        template the digits then sit at fixed positions, which a 2-layer model aligns within the book's step
        budget; the four templates still place the operands differently ("Subtract b from a" names b first)."""
        if not self.pad_operands:
            return render(item)
        return TEMPLATES[item.op][item.template].format(a=f"{item.a:02d}", b=f"{item.b:02d}")

    def _batch(self, seqs: Sequence[list[int]]) -> torch.Tensor:
        T = max(map(len, seqs))
        x = torch.zeros(len(seqs), T, dtype=torch.long)
        for i, s in enumerate(seqs):
            x[i, :len(s)] = torch.tensor(s)
        return x

    # -- training --------------------------------------------------------------------------------------------
    def fit(self, progress: Callable | None = None) -> "TinyArithLM":
        """AdamW with a linear warm-up and cosine decay; cross-entropy on the answer characters and the end
        mark only (the prompt is given). Batches are drawn by the seeded generator."""
        items, labels = self.training_set()
        seqs = [self.encode(it, self.write(y)) for it, y in zip(items, labels)]
        start = [len(self.prompt(it)) + 1 for it in items]  # index of the first answer character
        X = self._batch(seqs)
        Y = torch.full_like(X, -100)
        for i, (s, k) in enumerate(zip(seqs, start)):
            Y[i, k - 1:len(s) - 1] = X[i, k:len(s)]
        self.log.n_train = len(seqs)
        opt = torch.optim.AdamW(self.net.parameters(), lr=self.lr, weight_decay=0.01, betas=(0.9, 0.98))
        warm = max(1, self.steps // 20)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / self.steps))))
        every = max(1, min(50, self.steps // 10))  # the loss is logged every 50 steps, >= 10 points on short runs
        self.net.train()
        it = range(self.steps)
        it = progress(it, desc="tiny LM training") if progress else it
        for step in it:
            idx = torch.randint(len(seqs), (self.batch_size,), generator=self._gen)
            xb, yb = X[idx], Y[idx]
            T = int((xb != 0).sum(1).max())
            logits = self.net(xb[:, :T])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb[:, :T].reshape(-1), ignore_index=-100)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
            opt.step()
            sched.step()
            if step % every == 0 or step == self.steps - 1:
                self.log.loss.append((step, float(loss.detach())))
        self.net.eval()
        return self

    # -- decoding --------------------------------------------------------------------------------------------
    @torch.no_grad()
    def greedy(self, items: Sequence[Item], max_new: int | None = None, batch_size: int = 4096) -> list[str]:
        """Greedy decoding after ``prompt >``: at most ``max_new`` characters, stopping at the end mark (the
        text as written, least significant digit first; `answer` gives the number). Right-padded batches
        under a causal mask: a row's predictions never see its padding."""
        max_new = max_new or self._max_answer_len + 1  # room for one digit too many (a failure either way)
        end = self.index[END]
        out: list[str] = []
        for s in range(0, len(items), batch_size):
            seqs = [self.encode(it) for it in items[s:s + batch_size]]
            n = len(seqs)
            X = torch.zeros(n, max(map(len, seqs)) + max_new, dtype=torch.long)
            for i, q in enumerate(seqs):
                X[i, :len(q)] = torch.tensor(q)
            L = torch.tensor([len(q) for q in seqs])
            done = torch.zeros(n, dtype=torch.bool)
            rows = torch.arange(n)
            gen = torch.zeros(n, max_new, dtype=torch.long)
            for j in range(max_new):
                logits = self.net(X[:, :int(L.max())])
                nxt = logits[rows, L - 1].argmax(-1)
                nxt = torch.where(done, torch.full_like(nxt, end), nxt)
                gen[:, j] = nxt
                X[rows, L] = nxt
                L = L + 1
                done |= nxt == end
                if bool(done.all()):
                    break
            for row in gen.tolist():
                out.append("".join(self.vocab[t] for t in (row[:row.index(end)] if end in row else row)))
        return out

    @torch.no_grad()
    def teacher_forced_ok(self, items: Sequence[Item], batch_size: int = 4096) -> np.ndarray:
        """True where greedy decoding outputs exactly the gold answer then the end mark (argmax on each
        gold character and on the end mark under teacher forcing)."""
        ok = []
        for s in range(0, len(items), batch_size):
            chunk = items[s:s + batch_size]
            seqs = [self.encode(it, self.write(truth_value(it))) for it in chunk]
            X = self._batch(seqs)
            pred = self.net(X).argmax(-1)
            L = torch.tensor([len(q) for q in seqs])[:, None]
            k = torch.tensor([len(self.prompt(it)) + 1 for it in chunk])[:, None]
            pos = torch.arange(X.shape[1] - 1)[None, :]
            judged = (pos >= k - 1) & (pos < L - 1)
            ok.append(((pred[:, :-1] == X[:, 1:]) | ~judged).all(1).numpy())
        return np.concatenate(ok) if ok else np.zeros(0, bool)

    @staticmethod
    def _parse(text: str) -> int:
        """A decoded answer (least significant digit first) as a number (-1 when it is not one: never equal to
        a label)."""
        return int(text[::-1]) if text.isdigit() and len(text) <= 9 else -1

    def enumerate_map(self) -> dict[Item, bool]:
        """The exact failure map: for every item of the input space, whether greedy decoding outputs its gold
        answer (one teacher-forced pass; the wrong answers themselves are decoded greedily on demand)."""
        ok = self.teacher_forced_ok(self.items)
        self.correct = dict(zip(self.items, ok.tolist()))
        self._decoded: dict[Item, int] = {}
        self._fmap = None
        return self.correct

    # -- the target API -----------------------------------------------------------------------------------------
    def _need_map(self):
        if self.correct is None:
            raise RuntimeError("call enumerate_map() after fit() before querying the tiny LM")

    def answer(self, item: Item) -> int:
        """The greedy answer to ``item`` (a number; -1 when the output is not one)."""
        self._need_map()
        item = self.space.check(item)
        if self.correct[item]:
            return truth_value(item)
        if item not in self._decoded:
            self._decoded[item] = self._parse(self.greedy([item])[0])
        return self._decoded[item]

    def query(self, items: Sequence[Item], labels: Sequence | None = None) -> np.ndarray:
        """Failures (greedy answer != label) of ``items``; ``labels`` default to the verified gold answers."""
        self._need_map()
        items = [self.space.check(it) for it in items]
        gold = [truth_value(it) for it in items]
        labels = gold if labels is None else list(labels)
        if len(labels) != len(items):
            raise RuntimeError(f"{len(items)} items but {len(labels)} labels")
        self.n_queries += len(items)
        return np.array([(not self.correct[it]) if lab == g else self.answer(it) != lab
                         for it, lab, g in zip(items, labels, gold)], dtype=bool)

    def fails(self) -> np.ndarray:
        """The failure indicator of every enumerated item (order of ``self.items``)."""
        self._need_map()
        return ~np.array([self.correct[it] for it in self.items], dtype=bool)

    def region_membership(self, items: Sequence[Item], regions: Sequence[Mode] | None = None) -> np.ndarray:
        regions = self.regions if regions is None else regions
        return np.array([[bool(m.predicate(it.op, it.a, it.b, it.form, it.template)) for m in regions]
                         for it in items], dtype=bool).reshape(len(items), len(regions))

    def failure_map(self) -> dict:
        """Per region: its size, the failure rate inside it, and the background (outside every region)."""
        f = self.fails()
        M = self.region_membership(self.items)
        out = {m.name: dict(n=int(M[:, j].sum()), rate=float(f[M[:, j]].mean()) if M[:, j].any() else float("nan"))
               for j, m in enumerate(self.regions)}
        outside = ~M.any(1)
        out["outside"] = dict(n=int(outside.sum()), rate=float(f[outside].mean()) if outside.any() else float("nan"))
        out["all"] = dict(n=len(f), rate=float(f.mean()))
        self._fmap = out
        return out

    def set_modes(self, min_rate: float = 0.2, min_ratio: float = 3.0) -> tuple[Mode, ...]:
        """Define the measured failure modes from the exact map (before any search): every region whose failure
        rate is >= ``min_rate`` and >= ``min_ratio`` x the background rate; its `Mode.rate` is the measured rate."""
        if min_rate < 0 or min_ratio < 0:
            raise ValueError("min_rate and min_ratio must be >= 0")
        fm = self._fmap if getattr(self, "_fmap", None) is not None else self.failure_map()
        bg = fm["outside"]["rate"]
        self.modes = tuple(Mode(m.name, m.text, m.predicate, fm[m.name]["rate"], m.wrong) for m in self.regions
                           if fm[m.name]["rate"] >= min_rate and fm[m.name]["rate"] >= min_ratio * bg)
        return self.modes

    def membership(self, items: Sequence[Item]) -> np.ndarray:
        """(n, M) booleans: which measured modes each item lies in (what the chapter's recall reads)."""
        return self.region_membership(items, self.modes)
