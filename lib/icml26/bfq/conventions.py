"""Time conventions of flow policies (pitfall 1 of the issue): one tested converter.

BFQ/OFQL: ``t = 0`` is data, ``t = 1`` noise, ``a_t = (1 - t) a + t eps``, conditional velocity
``d a_t / dt = eps - a``; generation integrates from ``t = 1`` down to ``t = 0``.

FQL, shortcut models and Meta's ``flow_matching`` (``CondOTScheduler``): ``x_0`` noise, ``x_1`` data,
``x_t = (1 - t) x_0 + t x_1``, velocity ``x_1 - x_0``; generation integrates from 0 up to 1.

The two are the same path under ``t -> 1 - t``, with the velocity's sign flipped.
"""
from __future__ import annotations

import torch


def interpolate(a: torch.Tensor, eps: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """BFQ's path: ``a_t = (1 - t) a + t eps`` (t = 0 data, t = 1 noise)."""
    return (1.0 - t) * a + t * eps


def velocity_target(a: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """BFQ's conditional velocity ``d a_t/dt = eps - a``."""
    return eps - a


def to_fql_time(t):
    """BFQ time -> FQL/flow_matching time (``s = 1 - t``); the map is its own inverse."""
    return 1.0 - t


def to_fql_velocity(v_bfq: torch.Tensor) -> torch.Tensor:
    """BFQ velocity (``d/dt``, towards noise) -> FQL velocity (``d/ds`` with ``s = 1 - t``, towards data)."""
    return -v_bfq


def from_fql_velocity(v_fql: torch.Tensor) -> torch.Tensor:
    """FQL velocity -> BFQ velocity (the same sign flip)."""
    return -v_fql
