"""OFQL-lite: the MeanFlow average-velocity policy that BFQ replaces (OFQL, arXiv 2508.13904; MeanFlow).

OFQL, BFQ's direct predecessor, learns the same average velocity ``u_theta(a_t, r, t; s)`` as BFQ, with
the one-step policy ``a = eps - u_theta(eps, 0, 1; s)`` (BFQ's operator ``pi = a_t - (t - r) u`` at
``r = 0, t = 1``), but trains it with MeanFlow's *Jacobian* identity instead of BFQ's bootstrap:

    u(z_t, r, t) = v(z_t, t) - (t - r) d/dt u(z_t, r, t),
    d/dt u = v . grad_z u + d_t u,                                                  (MeanFlow identity)

so, in BFQ's time convention (t = 0 data, t = 1 noise, ``z_t = (1 - t) a + t eps``, ``v = eps - a``),

    L_MF = E || u_theta(z_t, r, t) - sg( v - (t - r) [v . grad_z u_theta + d_t u_theta] ) ||^2,

the bracket one forward-mode JVP (`torch.func.jvp`) with tangent ``(v, 0, 1)`` in ``(z, r, t)``.
``(r, t)`` are two sorted uniforms, and with probability ``1 - ratio`` ``r = t`` (plain flow matching;
MeanFlow's default share of ``r != t`` is 25 %). What OFQL's paper adds beyond this (its exact sampler
of ``(r, t)``, adaptive loss weights) is not read here: this is "OFQL-lite", named so.
"""
from __future__ import annotations

import torch
from torch.func import jvp

from .conventions import interpolate, velocity_target
from .flowmap import FlowMapPolicy, _check_unit_interval
from .nets import sinusoidal_embedding


class MeanFlowPolicy(FlowMapPolicy):
    """``E`` MeanFlow average-velocity policies (the "mean" parameterisation of `FlowMapPolicy`).

    Same network, operator and one-step sampler as BFQ; only the behaviour-cloning loss differs
    (`meanflow_loss`), which is what makes BFQ-vs-OFQL the comparison of the two objectives.
    """

    def __init__(self, seeds, action_dim: int, state_dim: int, hidden=(256, 256, 256), pe_dim: int = 64):
        super().__init__(seeds, action_dim, state_dim, hidden, pe_dim, parameterisation="mean")

    def meanflow_loss(self, a, s, gen: torch.Generator, ratio: float = 0.25) -> torch.Tensor:
        """``L_MF`` per member, shape ``(E,)`` (module docstring); ``ratio``: the share of ``r != t``."""
        _check_unit_interval("ratio", ratio)
        E, B, _ = a.shape
        eps = torch.randn(a.shape, generator=gen)
        rt = torch.sort(torch.rand(E, B, 2, generator=gen), dim=-1).values
        r, t = rt[..., :1], rt[..., 1:]
        r = torch.where(torch.rand(E, B, 1, generator=gen) < ratio, r, t)
        z = interpolate(a, eps, t)
        v = velocity_target(a, eps)
        emb_r = sinusoidal_embedding(r, self.pe_dim)

        def u_of(zz, tt):
            emb = torch.cat([sinusoidal_embedding(tt, self.pe_dim), emb_r], dim=-1)
            return self.net(torch.cat([zz, s, emb], dim=-1))

        with torch.no_grad():  # the target: one JVP along (v, dt = 1), under stop-gradient
            _, dudt = jvp(u_of, (z, t), (v, torch.ones_like(t)))
            target = v - (t - r) * dudt
        u = u_of(z, t)
        return ((u - target) ** 2).sum(-1).mean(-1)
