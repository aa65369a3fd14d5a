"""Offline data for the pipeline experiments (nothing is downloaded).

* :class:`TeacherRegression`: synthetic regression with *correlated* inputs (so the layers'
  Hessians are not axis-aligned) labelled by a random deep tanh teacher; stand-in for the paper's
  language-model data in the deep-MLP experiment.
* :func:`stdlib_corpus` / :class:`CharCorpus`: a deterministic character corpus made of the source
  text of a fixed list of Python standard-library modules (stand-in for OpenWebText).
"""
from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence

import numpy as np
import torch

STDLIB_MODULES = (
    "textwrap", "string", "json.decoder", "json.encoder", "heapq", "bisect", "functools", "fractions",
    "statistics", "colorsys", "calendar", "difflib", "shlex", "glob", "fnmatch", "copy", "pprint",
    "reprlib", "numbers", "queue", "sched", "graphlib", "ipaddress", "argparse", "configparser",
    "csv", "dataclasses", "enum", "contextlib", "operator", "random", "tokenize", "typing",
    "pathlib", "shutil", "tempfile", "gettext", "locale", "base64", "uuid",
)


class TeacherRegression:
    """``y = teacher(x) + noise`` with ``x ~ N(0, S)``, ``S`` a random rotation of decaying scales."""

    def __init__(self, d_in: int = 16, d_out: int = 4, n_train: int = 8192, n_eval: int = 1024,
                 teacher_width: int = 32, teacher_depth: int = 3, cond: float = 30.0, noise: float = 0.05,
                 seed: int = 0):
        if min(d_in, d_out, n_train, n_eval, teacher_width, teacher_depth) < 1 or cond < 1:
            raise ValueError("TeacherRegression sizes must be >= 1 and cond >= 1")
        g = torch.Generator().manual_seed(seed)
        Q, _ = torch.linalg.qr(torch.randn(d_in, d_in, generator=g))
        scales = torch.logspace(0, -np.log10(cond) / 2, d_in)  # std ratio sqrt(cond)
        A = Q * scales
        layers, width_in = [], d_in
        for _ in range(teacher_depth - 1):
            layers.append(torch.randn(width_in, teacher_width, generator=g) * (2.0 / width_in) ** 0.5)
            width_in = teacher_width
        layers.append(torch.randn(width_in, d_out, generator=g) / width_in ** 0.5)

        def teacher(x):
            for W in layers[:-1]:
                x = torch.tanh(x @ W)
            return x @ layers[-1]

        def sample(n):
            x = torch.randn(n, d_in, generator=g) @ A.T * d_in ** 0.5 / scales.norm()
            return x, teacher(x) + noise * torch.randn(n, d_out, generator=g)

        self.x_train, self.y_train = sample(n_train)
        self.x_eval, self.y_eval = sample(n_eval)
        self.d_in, self.d_out = d_in, d_out

    def to(self, device) -> "TeacherRegression":
        """Move the pools to ``device`` (they are drawn on the CPU, so the data do not depend on it)."""
        for k in ("x_train", "y_train", "x_eval", "y_eval"):
            setattr(self, k, getattr(self, k).to(device))
        return self

    def batches(self, batch: int, seed: int):
        """An endless stream of minibatches drawn with replacement from the training pool (indices drawn on
        the CPU, so the stream is the same on every device)."""
        g = torch.Generator().manual_seed(10_000 + seed)
        n = self.x_train.shape[0]
        dev = self.x_train.device
        while True:
            idx = torch.randint(0, n, (batch,), generator=g)
            if dev.type != "cpu":
                idx = idx.to(dev, non_blocking=True)
            yield self.x_train[idx], self.y_train[idx]

    def eval_loss(self, model: torch.nn.Module) -> float:
        with torch.no_grad():
            return float(torch.nn.functional.mse_loss(model(self.x_eval), self.y_eval))


def stdlib_corpus(modules: Sequence[str] = STDLIB_MODULES, max_chars: int | None = None) -> str:
    """Concatenated source of ``modules`` (ASCII; other characters become ``?``)."""
    parts = []
    for name in modules:
        parts.append(inspect.getsource(importlib.import_module(name)))
    text = "\n".join(parts).encode("ascii", "replace").decode("ascii")
    return text[:max_chars] if max_chars else text


class CharCorpus:
    """Byte-level (vocab 128) tokens of a text, split 90/10 into train and validation."""

    vocab = 128

    def __init__(self, text: str, ctx: int):
        if ctx < 2:
            raise ValueError("ctx must be >= 2")
        data = torch.tensor(np.frombuffer(text.encode("ascii", "replace"), dtype=np.uint8).astype(np.int64))
        if data.numel() < 20 * ctx:
            raise ValueError(f"corpus too short ({data.numel()} chars) for context {ctx}")
        split = int(0.9 * data.numel())
        self.train, self.val, self.ctx = data[:split], data[split:], ctx

    def _batch(self, data, idx):
        x = torch.stack([data[i:i + self.ctx] for i in idx.tolist()])
        y = torch.stack([data[i + 1:i + 1 + self.ctx] for i in idx.tolist()])
        return x, y

    def batches(self, batch: int, seed: int, device=None):
        """Endless ``(x, y)`` minibatches, built on the CPU and moved to ``device`` (None: stay on the CPU)."""
        g = torch.Generator().manual_seed(20_000 + seed)
        hi = self.train.numel() - self.ctx - 1
        while True:
            x, y = self._batch(self.train, torch.randint(0, hi, (batch,), generator=g))
            yield (x, y) if device is None else (x.to(device, non_blocking=True), y.to(device, non_blocking=True))

    def eval_batches(self, n_batches: int, batch: int, seed: int = 0, device=None):
        g = torch.Generator().manual_seed(30_000 + seed)
        hi = self.val.numel() - self.ctx - 1
        out = [self._batch(self.val, torch.randint(0, hi, (batch,), generator=g)) for _ in range(n_batches)]
        return out if device is None else [(x.to(device), y.to(device)) for x, y in out]
