"""The flexible prototype-based contrastive local module (brief 2.2b) [ours + GleasonFM].

Each local class k holds ``M_k`` l2-normalised prototypes mu_{k,m}; a region embedding z scores
``s_k = max_m cos(z, mu_{k,m})`` (max over prototypes), and the loss is ProtoNCE with a margin on the
true class,

    L_proto = -log exp((s_y - margin)/tau) / (exp((s_y - margin)/tau) + sum_{k != y} exp(s_k/tau)).

Prototypes are initialised by scikit-learn's `MiniBatchKMeans` on each class's embeddings,
re-normalised after each step, dead prototypes (never the arg-max of their class) are re-seeded on
the hardest example, and `add_class` adds a new class from a few examples without retraining.
"""
from __future__ import annotations

import numpy as np
import torch
from sklearn.cluster import MiniBatchKMeans
from torch import nn


class PrototypeHead(nn.Module):
    def __init__(self, n_classes: int, dim: int, n_protos: int = 3, tau: float = 0.1, margin: float = 0.1):
        super().__init__()
        if not (isinstance(tau, (int, float)) and tau > 0 and np.isfinite(tau)):
            raise ValueError(f"temperature tau must be > 0, got {tau}")
        if n_classes < 1 or n_protos < 1:
            raise ValueError(f"need >= 1 class and >= 1 prototype per class, got {n_classes}, {n_protos}")
        self.tau, self.margin, self.n_protos = float(tau), float(margin), n_protos
        self.protos = nn.Parameter(nn.functional.normalize(torch.randn(n_classes, n_protos, dim), dim=-1))
        self.register_buffer("active", torch.ones(n_classes, n_protos, dtype=torch.bool))

    @property
    def n_classes(self) -> int:
        return self.protos.shape[0]

    def scores(self, z: torch.Tensor) -> torch.Tensor:
        """s_{.,k} = max over the active prototypes of class k of cos(z, mu_{k,m}); z (..., d) -> (..., K)."""
        zn = nn.functional.normalize(z, dim=-1)
        mu = nn.functional.normalize(self.protos, dim=-1)
        cos = torch.einsum("...d,kmd->...km", zn, mu)
        cos = cos.masked_fill(~self.active, -2.0)
        return cos.max(-1).values

    def probs(self, z: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.scores(z) / self.tau, -1)

    def loss(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """ProtoNCE with margin (module docstring) over a batch of embeddings z (n, d), labels y (n,)."""
        if len(y) == 0:
            return z.sum() * 0
        if int(y.min()) < 0 or int(y.max()) >= self.n_classes:
            raise ValueError(f"local labels must be in [0, {self.n_classes}), got range [{int(y.min())}, {int(y.max())}]")
        s = self.scores(z)
        s = s - self.margin * nn.functional.one_hot(y, self.n_classes).to(s.dtype)
        return nn.functional.cross_entropy(s / self.tau, y)

    @torch.no_grad()
    def init_kmeans(self, z: np.ndarray, y: np.ndarray, seed: int = 0) -> "PrototypeHead":
        """k-means initialisation per class (GleasonFM). Every class needs at least one example."""
        z = nn.functional.normalize(torch.as_tensor(z, dtype=torch.float32), dim=-1).numpy()
        y = np.asarray(y)
        for k in range(self.n_classes):
            zk = z[y == k]
            if len(zk) == 0:
                raise ValueError(f"no example of local class {k}: cannot place a prototype for it")
            self.protos[k] = torch.as_tensor(self._centres(zk, self.n_protos, seed))
        return self

    @staticmethod
    def _centres(zk: np.ndarray, n: int, seed: int) -> np.ndarray:
        if len(zk) >= n:
            km = MiniBatchKMeans(n_clusters=n, random_state=seed, n_init=3, batch_size=256).fit(zk)
            c = km.cluster_centers_
        else:  # fewer examples than prototypes: repeat them (duplicates are harmless under the max)
            c = zk[np.arange(n) % len(zk)]
        return c / np.linalg.norm(c, axis=1, keepdims=True).clip(1e-12)

    @torch.no_grad()
    def renormalise(self):
        self.protos.copy_(nn.functional.normalize(self.protos, dim=-1))

    @torch.no_grad()
    def reseed_dead(self, z: torch.Tensor, y: torch.Tensor) -> int:
        """Re-seed every prototype that is the arg-max for none of its class's examples on the hardest
        example of that class (lowest score). Returns how many were re-seeded."""
        zn = nn.functional.normalize(z, dim=-1)
        cos = torch.einsum("nd,kmd->nkm", zn, nn.functional.normalize(self.protos, dim=-1))
        n_reseeded = 0
        for k in range(self.n_classes):
            idx = (y == k).nonzero().flatten()
            if len(idx) == 0:
                continue
            ck = cos[idx, k]                                  # (n_k, M)
            used = torch.zeros(self.n_protos, dtype=torch.bool)
            used[ck.argmax(1)] = True
            hard = idx[ck.max(1).values.argsort()]
            for j, m in enumerate((~used).nonzero().flatten()):
                self.protos[k, m] = zn[hard[j % len(hard)]]
                n_reseeded += 1
        return n_reseeded

    @torch.no_grad()
    def add_class(self, examples: torch.Tensor, seed: int = 0) -> int:
        """A new local class from a few example embeddings (n, d), no retraining: k-means prototypes.
        Returns the new class index."""
        examples = torch.as_tensor(examples, dtype=torch.float32)
        if examples.ndim != 2 or examples.shape[1] != self.protos.shape[-1] or len(examples) == 0:
            raise ValueError(f"add_class needs (n >= 1, {self.protos.shape[-1]}) example embeddings, got {tuple(examples.shape)}")
        if not torch.isfinite(examples).all():
            raise ValueError("add_class: examples contain NaN or inf")
        zn = nn.functional.normalize(examples, dim=-1).numpy()
        new = torch.as_tensor(self._centres(zn, self.n_protos, seed), dtype=self.protos.dtype)
        self.protos = nn.Parameter(torch.cat([self.protos.data, new[None]]))
        self.active = torch.cat([self.active, torch.ones(1, self.n_protos, dtype=torch.bool)])
        return self.n_classes - 1
