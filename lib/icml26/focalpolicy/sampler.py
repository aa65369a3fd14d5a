"""Time samplers of the one-step flow policies (brief §2.3; official code ``models/time_sampler.py``).

Convention: ``x_t = t A + (1 - t) eps``, **t = 1 is data**.

* `LASSampler` (Locally Anchored Sampling, FocalPolicy): ``t ~ U(0.01, 1)`` and the anchor ``r = 1 - r~`` from
  the MeanFlow "v0" logit-normal sampler: ``t~ = sigmoid(N(P_mean_t, 1.6^2))``, ``r~' = sigmoid(N(P_mean_r,
  1.6^2))``, ``r~ = min(t~, r~')`` with probability ``ratio`` (else ``max``); the sampler's own t is discarded.
* The official repository has two branches. Its default branch ``main`` starts at 915f7bc (16 Jun 2026 13:18)
  and has carried ``P_mean_t = 0.6``, ``P_mean_r = 4.0``, ``ratio = 0.15`` with no ``1 - r`` since that first
  commit (unchanged at 2d7dc31, 22 Jun); since ``1 - sigmoid(z) = sigmoid(-z)`` that is this sampler with
  ``P_mean = (-0.6, -4.0)`` and ``ratio = 0.85`` (``LASSampler.official("915f7bc")``, the chapter's primary
  configuration; `las_anchor_main` draws the branch literally, for the check). The side branch ``original``
  (3c0af28, 13:56 the same day) writes ``r = 1 - r~`` with ``ratio = 0.75`` (median anchor 0.968), run as the
  sensitivity row "LAS 3c0af28".
* `ConsistencySampler` (FlowPolicy / consistency-FM and the -LAS ablation): ``t ~ U(0.01, 1)``,
  ``r = min(t + delta, 1)`` with ``delta = 0.01``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

T_MIN = 0.01
MAIN_COMMIT = "915f7bc"       # the first commit of the official default branch (its LAS config is unchanged at 2d7dc31)


def uniform_t(n: int, generator: torch.Generator | None = None, t_min: float = T_MIN) -> torch.Tensor:
    """``t ~ U(t_min, 1)`` (the released code's ``torch.rand * (1 - 0.01) + 0.01``)."""
    if not 0 < t_min < 1:
        raise ValueError(f"t_min must lie in (0, 1), got {t_min}")
    return torch.rand(n, generator=generator) * (1 - t_min) + t_min


@dataclass(frozen=True)
class LASSampler:
    """Locally anchored (t, r) pairs: t uniform, r = 1 - r~ from the logit-normal "v0" sampler (brief §2.3)."""

    P_mean_t: float = -0.6
    P_mean_r: float = -4.0
    P_std: float = 1.6
    ratio: float = 0.75
    t_min: float = T_MIN

    def __post_init__(self):
        if not 0 <= self.ratio <= 1:
            raise ValueError(f"ratio must lie in [0, 1], got {self.ratio}")
        if not self.P_std > 0:
            raise ValueError(f"P_std must be > 0, got {self.P_std}")

    @classmethod
    def official(cls, commit: str = MAIN_COMMIT) -> "LASSampler":
        """The released configuration at ``commit``: the default branch ``main`` (``"915f7bc"``, its first
        commit, or ``"2d7dc31"``, its newest: the same sampler, ratio 0.15 in its own convention, 0.85 in this
        one) or the side branch ``original`` (``"3c0af28"``: ratio 0.75)."""
        if commit == "3c0af28":
            return cls()
        if commit in ("915f7bc", "2d7dc31"):
            return cls(ratio=0.85)
        raise ValueError(f"unknown official commit {commit!r}; valid: '915f7bc', '2d7dc31', '3c0af28'")

    def anchor(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """r = 1 - r~ (n draws)."""
        t_tilde = torch.sigmoid(torch.randn(n, generator=generator) * self.P_std + self.P_mean_t)
        r_prime = torch.sigmoid(torch.randn(n, generator=generator) * self.P_std + self.P_mean_r)
        hi, lo = torch.maximum(t_tilde, r_prime), torch.minimum(t_tilde, r_prime)
        keep_lo = torch.rand(n, generator=generator) < self.ratio
        r_tilde = torch.where(keep_lo, lo, hi)
        return 1.0 - r_tilde

    def __call__(self, n: int, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(t, r): the sampler's own t is discarded, t ~ U(0.01, 1) independently of r."""
        r = self.anchor(n, generator)
        t = uniform_t(n, generator, self.t_min)
        return t, r


@dataclass(frozen=True)
class ConsistencySampler:
    """(t, min(t + delta, 1)) pairs of consistency flow matching (FlowPolicy)."""

    delta: float = 0.01
    t_min: float = T_MIN

    def __post_init__(self):
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must lie in (0, 1), got {self.delta}")

    def __call__(self, n: int, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        t = uniform_t(n, generator, self.t_min)
        return t, torch.clamp(t + self.delta, max=1.0)


def las_anchor_main(n: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """The anchor r of the official default branch (915f7bc .. 2d7dc31), written as its ``time_sampler.py`` and
    config do (``P_mean_t = 0.6``, ``P_mean_r = 4.0``, ``P_std = 1.6``, ``ratio = 0.15``, no ``1 - r``): the
    reference that `LASSampler.official("915f7bc")` is checked against (in distribution)."""
    a = torch.sigmoid(torch.randn(n, generator=generator) * 1.6 + 0.6)
    b = torch.sigmoid(torch.randn(n, generator=generator) * 1.6 + 4.0)
    hi, lo = torch.maximum(a, b), torch.minimum(a, b)
    mask = torch.rand(n, generator=generator) < 1 - 0.15
    return torch.where(mask, hi, lo)
