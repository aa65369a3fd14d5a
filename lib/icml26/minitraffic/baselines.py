"""Baselines of the main table (paper: 29 baselines; here the classic and lane-level families):
historical average, persistence, a channel-independent GRU, and STGCN-lite (gated temporal
convolutions around a graph convolution on the lane graph), all plain torch / numpy."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn


def historical_average(train_series: list[np.ndarray], T: int, H: int, stride: int) -> np.ndarray:
    """Time-of-day mean over the training days, returned as the forecast of every test window:
    (W, N, H) for window starts 0, stride, ... of one day."""
    mean = np.mean(np.stack(train_series), axis=0)          # (N, 288)
    L = mean.shape[1]
    starts = np.arange(0, L - T - H + 1, stride)
    return np.stack([mean[:, s + T:s + T + H] for s in starts])


def persistence(x: np.ndarray, H: int) -> np.ndarray:
    """The last observed value, repeated over the horizon."""
    return np.repeat(x[..., -1:], H, axis=-1)


class _Norm(nn.Module):
    def forward(self, x):
        self.mean = x.mean(-1, keepdim=True)
        self.std = x.std(-1, keepdim=True, unbiased=False) + 1e-3
        return (x - self.mean) / self.std


class GRULane(nn.Module):
    """Channel-independent GRU over the window, shared by all lanes, linear head to H steps."""

    def __init__(self, T: int, H: int, hidden: int = 32):
        super().__init__()
        self.norm = _Norm()
        self.gru = nn.GRU(1, hidden, batch_first=True)
        self.head = nn.Linear(hidden, H)

    def forecast(self, x):
        B, C, T = x.shape
        z = self.norm(x).reshape(B * C, T, 1)
        _, h = self.gru(z)
        y = self.head(h[-1]).view(B, C, -1)
        return y * self.norm.std + self.norm.mean


def lane_graph(lane_road: np.ndarray, lane_pos: np.ndarray) -> torch.Tensor:
    """Normalised adjacency D^-1/2 (A + I) D^-1/2: lanes of one road, and the same lateral position on
    the adjacent roads up- and downstream."""
    n = len(lane_road)
    A = np.eye(n)
    for a in range(n):
        for b in range(n):
            same_road = lane_road[a] == lane_road[b]
            neighbour = abs(lane_road[a] - lane_road[b]) == 1 and abs(lane_pos[a] - lane_pos[b]) <= 0
            if a != b and (same_road or neighbour):
                A[a, b] = 1.0
    d = A.sum(1)
    return torch.tensor(A / np.sqrt(np.outer(d, d)), dtype=torch.float32)


class STGCNLite(nn.Module):
    """Two ST blocks: gated temporal conv (kernel 3) -> graph conv (A X W) -> gated temporal conv."""

    def __init__(self, T: int, H: int, adjacency: torch.Tensor, channels: int = 16):
        super().__init__()
        self.register_buffer("A", adjacency)
        self.norm = _Norm()
        c = channels
        self.t1 = nn.Conv2d(1, 2 * c, (1, 3))
        self.g1 = nn.Linear(c, c)
        self.t2 = nn.Conv2d(c, 2 * c, (1, 3))
        self.t3 = nn.Conv2d(c, 2 * c, (1, 3))
        self.g2 = nn.Linear(c, c)
        self.t4 = nn.Conv2d(c, 2 * c, (1, 3))
        self.head = nn.Linear(c * (T - 8), H)

    @staticmethod
    def _glu(conv, x):
        a, b = conv(x).chunk(2, dim=1)
        return a * torch.sigmoid(b)

    def _graph(self, lin, x):          # x (B, c, N, T)
        return torch.relu(lin(torch.einsum("nm,bcmt->bcnt", self.A, x).transpose(1, 3)).transpose(1, 3))

    def forecast(self, x):
        B, C, T = x.shape
        z = self.norm(x).unsqueeze(1)
        z = self._glu(self.t2, self._graph(self.g1, self._glu(self.t1, z)))
        z = self._glu(self.t4, self._graph(self.g2, self._glu(self.t3, z)))
        y = self.head(z.permute(0, 2, 1, 3).reshape(B, C, -1))
        return y * self.norm.std + self.norm.mean
