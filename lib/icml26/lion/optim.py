"""Lion (Algorithm 1), Lion with STORM variance reduction (Algorithm 2) and Signum, as torch optimizers.

Beta convention
---------------
The optimizers take ``betas`` in the *standard* convention of Chen et al. (2023) and ``lion-pytorch``:
``beta`` is the weight on the OLD momentum. The paper (and the brief, Algorithms 1-4 and every theorem
schedule) writes beta as the weight on the NEW gradient. The map is ``beta_paper = 1 - beta_std``;
use :func:`paper_betas_to_std` / :func:`std_betas_to_paper` (default (0.9, 0.99) std <=> (0.1, 0.01) paper).
Mixing the two silently turns the schedule beta2 = T^{-1/2} into "no momentum" (brief, Pitfalls).
"""
from __future__ import annotations

from typing import Callable, Iterable

import torch
from torch.optim import Optimizer

from ._checks import check_betas, check_lr, check_weight_decay

Closure = Callable[[], torch.Tensor]


def paper_betas_to_std(beta1_paper: float, beta2_paper: float) -> tuple[float, float]:
    """Paper betas (weights on the new gradient, in (0, 1]) -> standard betas (weights on old momentum)."""
    for b in (beta1_paper, beta2_paper):
        if not (0.0 < b <= 1.0):
            raise ValueError(f"paper betas must lie in (0, 1], got {(beta1_paper, beta2_paper)!r}")
    return 1.0 - beta1_paper, 1.0 - beta2_paper


def std_betas_to_paper(beta1_std: float, beta2_std: float) -> tuple[float, float]:
    """Standard betas (weights on old momentum, in [0, 1)) -> paper betas (weights on the new gradient)."""
    check_betas((beta1_std, beta2_std))
    return 1.0 - beta1_std, 1.0 - beta2_std


def _grads_are_finite(grads: list[torch.Tensor]) -> bool:
    # One fast read pass per tensor: a sum is NaN/inf as soon as one entry is (an overflowing sum of
    # huge finite gradients is refused too). ~20x cheaper than isfinite().all() or an inf-norm on CPU.
    return bool(torch.isfinite(torch.stack([g.sum() for g in grads])).all())


def _params_with_grad(group: dict) -> list[torch.Tensor]:
    return [p for p in group["params"] if p.grad is not None]


class Lion(Optimizer):
    """Lion, Algorithm 1 of the brief (Chen et al. 2023), vectorised with ``torch._foreach_*`` ops.

    With standard betas (b1, b2) and decoupled weight decay wd, per step::

        p  <- p * (1 - lr * wd)                       # decoupled weight decay (lambda x_t term)
        p  <- p - lr * sign(b1 * m + (1 - b1) * g)    # v_t = (1 - beta1) m_{t-1} + beta1 g_t  (paper betas)
        m  <- b2 * m + (1 - b2) * g                   # m_t = (1 - beta2) m_{t-1} + beta2 g_t  (paper betas)

    i.e. ``x_{t+1} = x_t - eta (sign(v_t) + lambda x_t)`` with eta = lr, lambda = wd and
    beta_paper = 1 - beta_std (see :func:`paper_betas_to_std`). The momentum starts at zero, exactly as
    ``lion_pytorch.Lion`` (the brief's m_0 = g_1 is the simulator's default, see ``simulator.py``).
    Theorem 1 schedule (paper betas): beta2 = O(T^{-1/2}), beta2^2 <= beta1 <= sqrt(beta2),
    eta = O(d^{-1/2} T^{-3/4}), lambda <= 1/(2 eta T).

    Args:
        params: parameters or parameter groups.
        lr: step size eta >= 0.
        betas: standard-convention (beta1, beta2) in [0, 1).
        weight_decay: decoupled weight decay lambda >= 0 (p <- p (1 - lr * wd), as lion-pytorch).
        check_finite: raise ``ValueError`` when a gradient holds NaN/inf (one extra read pass).
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.99),
        weight_decay: float = 0.0,
        check_finite: bool = True,
    ) -> None:
        check_lr(lr)
        betas = check_betas(betas)
        check_weight_decay(weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))
        self.check_finite = check_finite

    @torch.no_grad()
    def step(self, closure: Closure | None = None) -> torch.Tensor | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = _params_with_grad(group)
            if not params:
                continue
            grads = [p.grad for p in params]
            if self.check_finite and not _grads_are_finite(grads):
                raise ValueError("Lion.step: a gradient contains NaN or inf")
            momenta = []
            for p in params:
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                momenta.append(state["exp_avg"])
            lr, wd = group["lr"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            if wd != 0.0:
                torch._foreach_mul_(params, 1.0 - lr * wd)
            # lerp(g, m, b1) = g + b1 (m - g) = b1 m + (1 - b1) g
            update = torch._foreach_lerp(grads, momenta, beta1)
            torch._foreach_sign_(update)
            torch._foreach_add_(params, update, alpha=-lr)
            # lerp(m, g, 1 - b2) = b2 m + (1 - b2) g
            torch._foreach_lerp_(momenta, grads, 1.0 - beta2)
        return loss


class LionVR(Optimizer):
    """Lion with STORM variance reduction, Algorithm 2 of the brief (paper Thm 2 / per node in Thm 4, 7).

    In paper betas, with g_t = grad f(x_t; xi_t) and gh_t = grad f(x_{t-1}; xi_t) from the SAME sample::

        m_1     = (1/B0) sum_b grad f(x_1; xi_b)                    # big initial batch, B0 = O(T^{1/3})
        v_t     = g_t + (1 - beta1) (m_{t-1} - gh_t)                # STORM-transported interpolation
        x_{t+1} = x_t - eta (sign(v_t) + lambda x_t)
        m_t     = g_t + (1 - beta2) (m_{t-1} - gh_t)                # STORM momentum (brief Alg. 2)

    ``storm_interpolation=False`` uses the brief's centralised form v_t = (1 - beta1) m_{t-1} + beta1 g_t
    instead (the brief marks the exact form of v as reconstructed [R]; with beta1 = beta2 the STORM form
    gives v_t = m_t). In standard betas (this class), (1 - beta_paper) = beta_std.

    Usage (the same-sample requirement is explicit: the closure is evaluated at x_t AND at x_{t-1})::

        opt = LionVR(model.parameters(), lr=1e-3, betas=(0.9, 0.9))
        big_batch_loss(model).backward(); opt.step()       # t = 1: p.grad is the B0 batch gradient -> m_1
        def closure():                                    # t >= 2: a FIXED minibatch, no fresh randomness
            opt.zero_grad(); loss = loss_fn(model(xb), yb); loss.backward(); return loss
        opt.step(closure)                                 # calls closure at x_t, then at x_{t-1}

    The first call initialises m from ``p.grad`` (or from ``closure()`` if given) and steps with
    v_1 = m_1; each later call requires a closure and costs two gradient evaluations.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.9),
        weight_decay: float = 0.0,
        storm_interpolation: bool = True,
        check_finite: bool = True,
    ) -> None:
        check_lr(lr)
        betas = check_betas(betas)
        check_weight_decay(weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))
        self.storm_interpolation = storm_interpolation
        self.check_finite = check_finite
        self._initialised = False

    def _all_params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _collect_grads(self, name: str) -> list[torch.Tensor]:
        params = self._all_params()
        if any(p.grad is None for p in params):
            raise ValueError(f"LionVR.step: every parameter needs a gradient ({name})")
        grads = [p.grad.detach().clone() for p in params]
        if self.check_finite and not _grads_are_finite(grads):
            raise ValueError(f"LionVR.step: the gradient {name} contains NaN or inf")
        return grads

    def _zero_grads(self) -> None:
        for p in self._all_params():
            p.grad = None

    @torch.no_grad()
    def _apply_update(self, directions: list[torch.Tensor]) -> None:
        """x <- x (1 - lr wd) - lr sign(v), group by group; ``directions`` is flat over all params."""
        i = 0
        for group in self.param_groups:
            params = group["params"]
            v = directions[i : i + len(params)]
            i += len(params)
            lr, wd = group["lr"], group["weight_decay"]
            if wd != 0.0:
                torch._foreach_mul_(params, 1.0 - lr * wd)
            torch._foreach_add_(params, torch._foreach_sign(v), alpha=-lr)

    def step(self, closure: Closure | None = None) -> torch.Tensor | None:
        params = self._all_params()
        loss = None
        if not self._initialised:  # t = 1: m_1 = big-batch gradient at x_1, v_1 = m_1
            if closure is not None:
                self._zero_grads()
                with torch.enable_grad():
                    loss = closure()
            momenta = self._collect_grads("of the initial batch B0")
            with torch.no_grad():
                for p, m in zip(params, momenta):
                    self.state[p]["exp_avg"] = m
                    self.state[p]["prev_param"] = p.detach().clone()
                self._apply_update(momenta)
            self._initialised = True
            return loss
        if closure is None:
            raise ValueError("LionVR.step needs a closure after the first step (gradients at x_t and x_{t-1})")
        self._zero_grads()
        with torch.enable_grad():
            loss = closure()
        g_now = self._collect_grads("at x_t")
        with torch.no_grad():
            current = [p.detach().clone() for p in params]
            torch._foreach_copy_(params, [self.state[p]["prev_param"] for p in params])
        self._zero_grads()
        with torch.enable_grad():
            closure()
        g_prev = self._collect_grads("at x_{t-1} (same sample)")
        with torch.no_grad():
            torch._foreach_copy_(params, current)
            for p, g, x_t in zip(params, g_now, current):
                p.grad = g
                self.state[p]["prev_param"] = x_t  # x_t becomes x_{t-1} of the next step
            momenta = [self.state[p]["exp_avg"] for p in params]
            betas = [(grp["betas"], len(grp["params"])) for grp in self.param_groups]
            b1 = [b[0] for b, k in betas for _ in range(k)]
            b2 = [b[1] for b, k in betas for _ in range(k)]
            correction = torch._foreach_sub(momenta, g_prev)  # m_{t-1} - gh_t
            if self.storm_interpolation:
                directions = torch._foreach_mul(correction, b1)
                torch._foreach_add_(directions, g_now)
            else:
                directions = torch._foreach_mul(momenta, b1)  # b1 m + (1 - b1) g
                torch._foreach_add_(directions, torch._foreach_mul(g_now, [1.0 - b for b in b1]))
            self._apply_update(directions)
            # m_t = g_t + b2_std (m_{t-1} - gh_t)
            torch._foreach_mul_(correction, b2)
            torch._foreach_add_(correction, g_now)
            torch._foreach_copy_(momenta, correction)
        return loss


class Signum(Optimizer):
    """signSGD with momentum (Signum, Bernstein et al. 2018): m <- b m + (1 - b) g; p <- p (1 - lr wd) - lr sign(m).

    A baseline for the digits experiment (Lion with beta1_std = beta2_std = b is exactly Signum).
    """

    def __init__(self, params: Iterable, lr: float = 1e-4, momentum: float = 0.9, weight_decay: float = 0.0) -> None:
        check_lr(lr)
        check_betas((momentum, momentum), "momentum")
        check_weight_decay(weight_decay)
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure: Closure | None = None) -> torch.Tensor | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = _params_with_grad(group)
            if not params:
                continue
            grads = [p.grad for p in params]
            if not _grads_are_finite(grads):
                raise ValueError("Signum.step: a gradient contains NaN or inf")
            momenta = []
            for p in params:
                if not self.state[p]:
                    self.state[p]["momentum_buffer"] = torch.zeros_like(p)
                momenta.append(self.state[p]["momentum_buffer"])
            torch._foreach_lerp_(momenta, grads, 1.0 - group["momentum"])
            if group["weight_decay"] != 0.0:
                torch._foreach_mul_(params, 1.0 - group["lr"] * group["weight_decay"])
            torch._foreach_add_(params, torch._foreach_sign(momenta), alpha=-group["lr"])
        return loss
