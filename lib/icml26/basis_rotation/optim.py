"""Adam in a rotated basis (Algorithms 1-2 of Jung, Shin & Lee, ICML 2026) and the paper's baselines.

Numbering follows the research brief ``papers/basis-rotation.md`` (section 2.2: Algorithm 1, 2.3:
Algorithm 2, 2.4: baselines). The update mirrors the official ``optim/basis_rotation.py`` (SOAP
structure): for a weight ``W`` (m x n) with gradient ``G``

* (Alg. 2, ``S = 2nd``) ``L <- b_s L + (1 - b_s) G G^T``, ``R <- b_s R + (1 - b_s) G^T G``;
  every ``freq`` steps the bases ``U`` (m x m), ``V`` (n x n) are refreshed: cold start
  ``eigh`` (descending), warm start one power-iteration step ``Q <- qr(L Q)`` after sorting the
  estimated eigenvalues ``diag(Q^T L Q)`` and permuting the rotated second moment along that axis;
* (Alg. 2, ``S = 1st``) the bases come from the look-ahead momentum ``M' = b1 M + (1 - b1) G``:
  cold start full SVD, warm start ``U <- qr(M' V)``, ``V <- qr(M'^T U)`` (complete), with the same
  sort-and-permute bookkeeping as the official code (including its axis conventions);
* (Alg. 1) ``Gt = U^T G V``, ``M <- b1 M + (1 - b1) G`` (first moment kept in the ORIGINAL space),
  ``Mt = U^T M V``, ``Vt <- b2 Vt + (1 - b2) Gt**2`` (second moment in the ROTATED space),
  ``W <- W - lr wd W``, ``W <- W - lr sqrt(1 - b2^t) / (1 - b1^t) * U (Mt / (sqrt(Vt) + eps)) V^T``.

Geometry ``bi`` rotates both sides; ``uni`` only the smaller side (left if m < n, else right). As in
the official code, ``uni`` with m >= n refreshes its basis at *every* step (its refresh test is
``t % freq == 0 or U is None`` and ``U`` stays None); ``uni_refresh_quirk=False`` turns that off.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch
from torch import nn

SOURCES = ("2nd", "1st")
GEOMETRIES = ("bi", "uni")
ROTATED_MODULE_KEYS = ("attn", "mlp", "sa", "ffwd")
"""Substrings of a module name whose ``nn.Linear`` weights are rotated (official ``optimizer.py``)."""


def _check_finite_grad(grad: torch.Tensor, what: str) -> None:
    if not torch.isfinite(grad).all():
        raise ValueError(f"non-finite (NaN or inf) gradient in {what}: the step is refused")


class BasisRotationAdam(torch.optim.Optimizer):
    """Adam with basis rotation (Algorithm 1), eigenbasis estimated by Algorithm 2.

    Parameters
    ----------
    params: 2-D tensors only (weights of ``nn.Linear``); anything else is a ``ValueError`` (the
        paper sends embeddings, norms and biases to AdamW, see :func:`make_stage_optimizer`).
    source: ``"2nd"`` (EMA of ``G G^T`` / ``G^T G``, the default) or ``"1st"`` (momentum SVD).
    geometry: ``"bi"`` (two-sided, default) or ``"uni"`` (one-sided, the smaller dimension).
    freq: refresh period ``T_freq`` of the basis (>= 1).
    shampoo_beta: EMA coefficient of the covariance factors; ``None`` means ``betas[1]``.
    check_finite: refuse NaN/inf gradients with a ``ValueError`` (one reduction per tensor).
    uni_refresh_quirk: reproduce the official code's every-step refresh for ``uni`` when m >= n.
    """

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01, source: str = "2nd", geometry: str = "bi",
                 freq: int = 10, shampoo_beta: float | None = None, check_finite: bool = True,
                 uni_refresh_quirk: bool = True):
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        if geometry not in GEOMETRIES:
            raise ValueError(f"geometry must be one of {GEOMETRIES}, got {geometry!r}")
        if isinstance(freq, bool) or not isinstance(freq, int) or freq < 1:
            raise ValueError(f"the refresh period freq must be an integer >= 1, got {freq!r}")
        if not lr >= 0:
            raise ValueError(f"lr must be >= 0, got {lr!r}")
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"betas must lie in [0, 1), got {betas!r}")
        if shampoo_beta is not None and not 0 <= shampoo_beta < 1:
            raise ValueError(f"shampoo_beta must lie in [0, 1), got {shampoo_beta!r}")
        if not eps > 0:
            raise ValueError(f"eps must be > 0, got {eps!r}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, source=source,
                        geometry=geometry, freq=freq, shampoo_beta=shampoo_beta)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"BasisRotationAdam rotates 2-D weights only; got a tensor of shape "
                                     f"{tuple(p.shape)} (send it to AdamW, as the paper does)")
        self.check_finite = check_finite
        self.uni_refresh_quirk = uni_refresh_quirk

    # ------------------------------------------------------------------ bookkeeping
    @staticmethod
    def _sides(group: dict, shape: Sequence[int]) -> tuple[bool, bool]:
        m, n = shape
        if group["geometry"] == "bi":
            return True, True
        return m < n, m >= n

    def _init_state(self, p: torch.Tensor, group: dict) -> dict:
        state = self.state[p]
        m, n = p.shape
        use_left, use_right = self._sides(group, p.shape)
        state.update(step=0, exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p), QL=None, QR=None,
                     GGL=None, GGR=None, frozen=False)
        if group["source"] == "2nd":
            if use_left:
                state["GGL"] = torch.zeros(m, m, dtype=p.dtype, device=p.device)
            if use_right:
                state["GGR"] = torch.zeros(n, n, dtype=p.dtype, device=p.device)
        return state

    def fix_basis(self, p: torch.Tensor, left: torch.Tensor | None = None, right: torch.Tensor | None = None) -> None:
        """Freeze the rotation of ``p`` to the given orthogonal ``left`` (m x m) / ``right`` (n x n).

        ``None`` on a side means identity; with both ``None`` the optimizer is plain Adam (in the
        official code's eps convention). Used for the exact-eigenbasis invariance check.
        """
        group = next((g for g in self.param_groups if any(q is p for q in g["params"])), None)
        if group is None:
            raise ValueError("fix_basis: the tensor is not one of this optimizer's parameters")
        m, n = p.shape
        for name, Q, k in (("left", left, m), ("right", right, n)):
            if Q is not None:
                if Q.shape != (k, k):
                    raise ValueError(f"fix_basis: {name} basis must be {k} x {k}, got {tuple(Q.shape)}")
                eye = torch.eye(k, dtype=Q.dtype, device=Q.device)
                if not torch.allclose(Q.T @ Q, eye, atol=1e-6):
                    raise ValueError(f"fix_basis: the {name} basis is not orthogonal")
        state = self.state[p] if len(self.state[p]) else self._init_state(p, group)
        state["QL"] = None if left is None else left.to(p)
        state["QR"] = None if right is None else right.to(p)
        state["frozen"] = True

    def bases(self, p: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The current (U, V) of ``p`` (None = identity on that side)."""
        state = self.state[p]
        return state.get("QL"), state.get("QR")

    # ------------------------------------------------------------------ Algorithm 2
    def _refresh(self, p: torch.Tensor, state: dict, grad: torch.Tensor, group: dict) -> None:
        m, n = p.shape
        use_left, use_right = self._sides(group, p.shape)
        warm = (state["QL"] is not None if use_left else True) and (state["QR"] is not None if use_right else True)
        if group["source"] == "2nd":
            if not warm:
                for side, key, GG in (("L", "QL", state["GGL"]), ("R", "QR", state["GGR"])):
                    if GG is None:
                        continue
                    eye = torch.eye(GG.shape[0], dtype=GG.dtype, device=GG.device)
                    _, Q = torch.linalg.eigh(GG + 1e-30 * eye)
                    state[key] = torch.flip(Q, [1])  # descending eigenvalues
                return
            v = state["exp_avg_sq"]
            for dim, key, GG in ((0, "QL", state["GGL"]), (1, "QR", state["GGR"])):
                if GG is None:
                    continue
                Q = state[key]
                est = torch.diagonal(Q.T @ GG @ Q)
                order = torch.argsort(est, descending=True)
                v = v.index_select(dim, order)
                state[key] = torch.linalg.qr(GG @ Q[:, order]).Q  # one power-iteration step
            state["exp_avg_sq"] = v
            return
        # S = 1st: look-ahead momentum M' = b1 M + (1 - b1) G
        beta1 = group["betas"][0]
        target = beta1 * state["exp_avg"] + (1 - beta1) * grad
        if not warm:
            U, _, Vh = torch.linalg.svd(target, full_matrices=True)
            if use_left:
                state["QL"] = U
            if use_right:
                state["QR"] = Vh.T
            return
        old_L, old_R = state["QL"], state["QR"]
        v = state["exp_avg_sq"]
        new_L = new_R = None
        if use_left:  # U <- qr(M' V), columns of V sorted by ||M' v_j||^2, Vt permuted along axis 1
            o = old_R if old_R is not None else torch.eye(n, dtype=p.dtype, device=p.device)
            order = torch.argsort(((target @ o) ** 2).sum(0), descending=True)
            v = v.index_select(1, order)
            new_L = torch.linalg.qr(target @ o[:, order], mode="complete").Q
        if use_right:  # V <- qr(M'^T U), columns of U sorted, Vt permuted along axis 0 (official code)
            o = old_L if old_L is not None else torch.eye(m, dtype=p.dtype, device=p.device)
            order = torch.argsort(((target.T @ o) ** 2).sum(0), descending=True)
            v = v.index_select(0, order)
            new_R = torch.linalg.qr(target.T @ o[:, order], mode="complete").Q
        if use_left:
            state["QL"] = new_L
        if use_right:
            state["QR"] = new_R
        state["exp_avg_sq"] = v

    @staticmethod
    def _project(x: torch.Tensor, QL, QR) -> torch.Tensor:
        if QL is not None:
            x = QL.T @ x
        if QR is not None:
            x = x @ QR
        return x

    @staticmethod
    def _project_back(x: torch.Tensor, QL, QR) -> torch.Tensor:
        if QR is not None:
            x = x @ QR.T
        if QL is not None:
            x = QL @ x
        return x

    # ------------------------------------------------------------------ Algorithm 1
    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            sbeta = group["shampoo_beta"] if group["shampoo_beta"] is not None else beta2
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if self.check_finite:
                    _check_finite_grad(grad, f"a {tuple(p.shape)} weight")
                state = self.state[p]
                if len(state) == 0:
                    state = self._init_state(p, group)
                state["step"] += 1
                t = state["step"]
                if not state["frozen"]:
                    if state["GGL"] is not None:
                        state["GGL"].mul_(sbeta).addmm_(grad, grad.T, alpha=1 - sbeta)
                    if state["GGR"] is not None:
                        state["GGR"].mul_(sbeta).addmm_(grad.T, grad, alpha=1 - sbeta)
                    use_left, use_right = self._sides(group, p.shape)
                    missing = ((use_left and state["QL"] is None) or (use_right and state["QR"] is None)
                               or (self.uni_refresh_quirk and state["QL"] is None))
                    if t % group["freq"] == 0 or missing:
                        self._refresh(p, state, grad, group)
                QL, QR = state["QL"], state["QR"]
                exp_avg = state["exp_avg"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                if QL is None and QR is None:
                    g_rot, m_rot = grad, exp_avg
                else:  # rotate G and M together: one batched product per side
                    g_rot, m_rot = self._project(torch.stack((grad, exp_avg)), QL, QR).unbind(0)
                state["exp_avg_sq"].mul_(beta2).addcmul_(g_rot, g_rot, value=1 - beta2)
                denom = state["exp_avg_sq"].sqrt().add_(group["eps"])
                step_size = group["lr"] * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
                update = self._project_back(m_rot / denom, QL, QR)
                if group["weight_decay"] > 0:
                    p.add_(p, alpha=-group["lr"] * group["weight_decay"])
                p.add_(update, alpha=-step_size)
        return loss


# ---------------------------------------------------------------------- baselines and the method table
METHODS: dict[str, dict] = {
    "AdamW": dict(kind="adamw", label="AdamW (PipeDream)"),
    "PipeDream-LR": dict(kind="adamw", lr_correction=True, label="PipeDream-LR"),
    "NAdamW": dict(kind="nadamw", label="NAdamW (Nesterov)"),
    "AdamW (beta1 0.6)": dict(kind="adamw", beta1=0.6, label="AdamW, beta1 = 0.6 (momentum control)"),
    "BR (2nd, bi)": dict(kind="br", source="2nd", geometry="bi", label="Basis rotation (2nd, bi)"),
    "BR (2nd, uni)": dict(kind="br", source="2nd", geometry="uni", label="Basis rotation (2nd, uni)"),
    "BR (1st, bi)": dict(kind="br", source="1st", geometry="bi", label="Basis rotation (1st, bi)"),
    "BR (1st, uni)": dict(kind="br", source="1st", geometry="uni", label="Basis rotation (1st, uni)"),
}
"""The methods of the chapter: the paper's three baselines, its four (S, G) variants, and a control that is not
the paper's: AdamW with ``beta1 = 0.6`` (about the momentum torch NAdam's schedule
``mu_t = beta1 (1 - 0.5 * 0.96^(0.004 t))`` reaches over a few thousand steps: 0.45 at t = 1, 0.62 at 3000),
which tests whether NAdamW's edge over AdamW under delay is its low effective momentum. Not in :data:`BASELINES`."""
BASELINES = ("AdamW", "PipeDream-LR", "NAdamW")
VARIANTS = ("BR (2nd, bi)", "BR (2nd, uni)", "BR (1st, bi)", "BR (1st, uni)")


class MultiOptimizer:
    """Several optimizers stepped together (the official ``MultipleOptimizer``)."""

    def __init__(self, optimizers: Sequence[torch.optim.Optimizer]):
        self.optimizers = [o for o in optimizers if o is not None]

    @property
    def param_groups(self) -> list[dict]:
        return [g for o in self.optimizers for g in o.param_groups]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        for o in self.optimizers:
            o.step()


def rotated_weights(model: nn.Module, keys: Sequence[str] = ROTATED_MODULE_KEYS) -> set[int]:
    """ids of the ``nn.Linear`` weights the method rotates: those whose module name contains a key."""
    return {id(mod.weight) for name, mod in model.named_modules()
            if isinstance(mod, nn.Linear) and any(k in name for k in keys)}


def make_stage_optimizer(method: str, params: Sequence[nn.Parameter], rotated: set[int], *, lr: float,
                         betas: tuple[float, float] = (0.9, 0.999), weight_decay: float = 0.01, eps: float = 1e-8,
                         freq: int = 10, shampoo_beta: float | None = None,
                         check_finite: bool = True) -> MultiOptimizer:
    """The optimizer of one pipeline stage, as the official code builds it (``check_finite``: passed to
    :class:`BasisRotationAdam`).

    * ``AdamW`` / ``PipeDream-LR``: ``torch.optim.AdamW`` on every parameter (the LR correction is a
      schedule, see :func:`pipedream_lr_factor`);
    * ``NAdamW``: ``torch.optim.NAdam(decoupled_weight_decay=True, momentum_decay=0.004)``;
    * a method with a ``beta1`` entry (the momentum control) overrides ``betas[0]``;
    * ``BR (S, G)``: :class:`BasisRotationAdam` on the rotated Linear weights, AdamW on the rest.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    spec = METHODS[method]
    params = list(params)
    if "beta1" in spec:
        betas = (float(spec["beta1"]), betas[1])
    if spec["kind"] == "adamw":
        return MultiOptimizer([torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)])
    if spec["kind"] == "nadamw":
        return MultiOptimizer([torch.optim.NAdam(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                                 momentum_decay=0.004, decoupled_weight_decay=True)])
    rot = [p for p in params if id(p) in rotated and p.dim() == 2]
    rest = [p for p in params if not (id(p) in rotated and p.dim() == 2)]
    opts = []
    if rest:
        opts.append(torch.optim.AdamW(rest, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
    if rot:
        opts.append(BasisRotationAdam(rot, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      source=spec["source"], geometry=spec["geometry"], freq=freq,
                                      shampoo_beta=shampoo_beta, check_finite=check_finite))
    return MultiOptimizer(opts)


def warmup_cosine(t: int, total: int, warmup: int, min_ratio: float = 0.1) -> float:
    """LR multiplier of the official runs: linear warm-up, then cosine decay to ``min_ratio``."""
    if t < warmup:
        return (t + 1) / warmup
    progress = min(1.0, (t - warmup) / max(1, total - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def pipedream_lr_factor(t: int, tau: int, t_corr: int) -> float:
    """PipeDream-LR correction ``1 / tau^(1 - min(t / t_corr, 1))`` (no effect for tau <= 1)."""
    if tau <= 1:
        return 1.0
    return float(tau) ** -(1.0 - min(t / max(1, t_corr), 1.0))
