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


_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _grads_are_finite(grads: list[torch.Tensor]) -> bool:
    """Whether every gradient entry is finite (no NaN, no inf).

    Fast path: one read pass per tensor (a sum is NaN/inf as soon as one entry is; low-precision
    gradients are summed in float32, so 200k fp16 halves do not overflow to inf). Only when a sum is not
    finite does the exact ``isfinite().all()`` pass run, so a sum that overflows on huge but finite
    gradients is never a false positive. ~20x cheaper than ``isfinite().all()`` on CPU when all is well.
    """
    if not grads:
        return True
    sums = [g.sum(dtype=torch.float32) if g.dtype in _LOW_PRECISION else g.sum() for g in grads]
    if bool(torch.isfinite(torch.stack(sums)).all()):
        return True
    return all(bool(torch.isfinite(g).all()) for g in grads)


def _params_with_grad(group: dict) -> list[torch.Tensor]:
    return [p for p in group["params"] if p.grad is not None]


# --------------------------------------------------------------------------- the update rules, paper betas
# One definition of each rule (paper convention: beta = weight on the NEW gradient). The simulator
# (``simulator.lion_loop``), the multi-process workers and the digits workers call these; the torch
# optimizers below run the same arithmetic with fused ``_foreach`` kernels in the standard convention,
# and ``tests/test_lion.py`` ties both to each other step by step.

def lion_direction(m: torch.Tensor, g: torch.Tensor, beta1) -> torch.Tensor:
    """v_t = (1 - beta1) m_{t-1} + beta1 g_t (Alg. 1, the interpolation that is signed)."""
    return torch.lerp(m, g, beta1)


def ema_momentum(m: torch.Tensor, g: torch.Tensor, beta2) -> torch.Tensor:
    """m_t = (1 - beta2) m_{t-1} + beta2 g_t (Alg. 1, momentum tracking)."""
    return torch.lerp(m, g, beta2)


def storm_direction(g: torch.Tensor, m: torch.Tensor, g_hat: torch.Tensor, beta1) -> torch.Tensor:
    """v_t = g_t + (1 - beta1)(m_{t-1} - gh_t) (the distributed VR step direction, Thms 4 and 7: the plain
    interpolation plus (1 - beta1)(g_t - gh_t))."""
    return g + (1.0 - beta1) * (m - g_hat)


def storm_momentum(g: torch.Tensor, m: torch.Tensor, g_hat: torch.Tensor, beta2) -> torch.Tensor:
    """m_t = g_t + (1 - beta2)(m_{t-1} - gh_t) (Alg. 2, STORM momentum; gh_t: the same sample at x_{t-1})."""
    return g + (1.0 - beta2) * (m - g_hat)


def lion_update(x: torch.Tensor, u: torch.Tensor, eta, weight_decay) -> torch.Tensor:
    """x_{t+1} = x_t - eta (u_t + lambda x_t) (decoupled weight decay; u_t = sign(v_t) or its compressed version)."""
    return x - eta * (u + weight_decay * x)


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

    #: parameters are updated in chunks of about this many elements: CPU ``_foreach`` kernels run op by op
    #: over their whole list, so a chunk that fits in L2 (512 KB of float32) keeps each tensor in cache
    #: across the four ops of the update instead of streaming all parameters from memory four times
    CHUNK_ELEMENTS = 1 << 17

    @staticmethod
    def _chunks(params: list[torch.Tensor], limit: int) -> list[list[torch.Tensor]]:
        chunks, current, size = [], [], 0
        for p in params:
            current.append(p)
            size += p.numel()
            if size >= limit:
                chunks.append(current)
                current, size = [], 0
        if current:
            chunks.append(current)
        return chunks

    @torch.no_grad()
    def step(self, closure: Closure | None = None) -> torch.Tensor | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        groups = [(group, _params_with_grad(group)) for group in self.param_groups]
        if self.check_finite:  # before anything moves: a refused step leaves every parameter untouched
            grads = [p.grad for _, params in groups for p in params]
            if not _grads_are_finite(grads):
                raise ValueError("Lion.step: a gradient contains NaN or inf")
        for group, params in groups:
            if not params:
                continue
            lr, wd = group["lr"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            for chunk in self._chunks(params, self.CHUNK_ELEMENTS):
                grads = [p.grad for p in chunk]
                momenta = []
                for p in chunk:
                    state = self.state[p]
                    if not state:
                        state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    momenta.append(state["exp_avg"])
                if wd != 0.0:
                    torch._foreach_mul_(chunk, 1.0 - lr * wd)
                # lerp(g, m, b1) = g + b1 (m - g) = b1 m + (1 - b1) g
                update = torch._foreach_lerp(grads, momenta, beta1)
                torch._foreach_sign_(update)
                torch._foreach_add_(chunk, update, alpha=-lr)
                # lerp(m, g, 1 - b2) = b2 m + (1 - b2) g
                torch._foreach_lerp_(momenta, grads, 1.0 - beta2)
        return loss


class LionVR(Optimizer):
    """Lion with STORM variance reduction, Algorithm 2 of the brief (paper Thm 2 / per node in Thm 4, 7).

    In paper betas, with g_t = grad f(x_t; xi_t) and gh_t = grad f(x_{t-1}; xi_t) from the SAME sample::

        m_1     = (1/B0) sum_b grad f(x_1; xi_b)                    # big initial batch, B0 = O(T^{1/3})
        v_t     = (1 - beta1) m_{t-1} + beta1 g_t                   # the centralised interpolation (LaTeX form)
        x_{t+1} = x_t - eta (sign(v_t) + lambda x_t)
        m_t     = g_t + (1 - beta2) (m_{t-1} - gh_t)                # STORM momentum (brief Alg. 2)

    ``storm_interpolation=True`` signs the STORM-transported interpolation v_t = g_t + (1 - beta1)(m_{t-1} - gh_t)
    instead, the form the third-party LaTeX audit reads for the *distributed* VR variant (Thm 4) only
    (with beta1 = beta2 it gives v_t = m_t). In standard betas (this class), (1 - beta_paper) = beta_std.

    Usage (the same-sample requirement is explicit: the closure is evaluated at x_t AND at x_{t-1})::

        opt = LionVR(model.parameters(), lr=1e-3, betas=(0.9, 0.9))
        big_batch_loss(model).backward(); opt.step()       # t = 1: p.grad is the B0 batch gradient -> m_1
        def closure():                                    # t >= 2: a FIXED minibatch, no fresh randomness
            opt.zero_grad(); loss = loss_fn(model(xb), yb); loss.backward(); return loss
        opt.step(closure)                                 # calls closure at x_t, then at x_{t-1}

    A parameter's first step initialises its momentum from its gradient (m_1) and steps with v_1 = m_1;
    each later call requires a closure and costs two gradient evaluations. Parameters without a gradient
    (frozen, or unused by the loss) are skipped, as in every torch optimizer; one that gets a gradient
    for the first time later is initialised then. All state (momentum, x_{t-1}) lives in
    ``self.state``, so ``state_dict()`` / ``load_state_dict()`` resume a run exactly.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.9),
        weight_decay: float = 0.0,
        storm_interpolation: bool = False,
        check_finite: bool = True,
    ) -> None:
        check_lr(lr)
        betas = check_betas(betas)
        check_weight_decay(weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))
        self.storm_interpolation = storm_interpolation
        self.check_finite = check_finite

    def _all_params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _initialised(self, p: torch.Tensor) -> bool:
        return "exp_avg" in self.state[p]

    def _grads(self, params: list[torch.Tensor], name: str) -> list[torch.Tensor]:
        missing = [i for i, p in enumerate(params) if p.grad is None]
        if missing:
            raise ValueError(f"LionVR.step: parameter(s) {missing} had a gradient at x_t but none {name}; "
                             "the closure must evaluate the same loss at both points")
        grads = [p.grad.detach().clone() for p in params]
        if self.check_finite and not _grads_are_finite(grads):
            raise ValueError(f"LionVR.step: the gradient {name} contains NaN or inf")
        return grads

    def _zero_grads(self) -> None:
        for p in self._all_params():
            p.grad = None

    @staticmethod
    @torch.no_grad()
    def _apply(params: list[torch.Tensor], directions: list[torch.Tensor], group_of: dict) -> None:
        """x <- x (1 - lr wd) - lr sign(v) for the given params (each with its own group's lr, wd)."""
        for p, v in zip(params, directions):
            group = group_of[p]
            if group["weight_decay"] != 0.0:
                p.mul_(1.0 - group["lr"] * group["weight_decay"])
            p.add_(torch.sign(v), alpha=-group["lr"])

    def step(self, closure: Closure | None = None) -> torch.Tensor | None:
        params = self._all_params()
        group_of = {p: g for g in self.param_groups for p in g["params"]}
        any_initialised = any(self._initialised(p) for p in params)
        loss = None
        if closure is not None:
            self._zero_grads()
            with torch.enable_grad():
                loss = closure()
        active = [p for p in params if p.grad is not None]
        if not active:
            if not any_initialised:
                raise ValueError("LionVR.step: no parameter has a gradient (the first step needs the B0 batch "
                                 "gradient in p.grad, or a closure)")
            return loss
        fresh = [p for p in active if not self._initialised(p)]
        running = [p for p in active if self._initialised(p)]
        if running and closure is None:
            raise ValueError("LionVR.step needs a closure after the first step (gradients at x_t and x_{t-1})")
        g_now = self._grads(active, "at x_t")
        by_param = dict(zip(active, g_now))
        directions: dict[torch.Tensor, torch.Tensor] = {}
        new_momenta: dict[torch.Tensor, torch.Tensor] = {}
        for p in fresh:  # t = 1 for this parameter: m_1 = its (B0 batch) gradient, v_1 = m_1
            directions[p] = new_momenta[p] = by_param[p]
        if running:
            # the whole model goes back to x_{t-1} (every parameter with a stored x_{t-1}), same closure
            moved = [p for p in params if "prev_param" in self.state[p]]
            with torch.no_grad():
                current = {p: p.detach().clone() for p in moved}
                for p in moved:
                    p.copy_(self.state[p]["prev_param"])
            self._zero_grads()
            with torch.enable_grad():
                closure()
            g_prev = dict(zip(running, self._grads(running, "at x_{t-1} (same sample)")))
            with torch.no_grad():
                for p in moved:
                    p.copy_(current[p])
                for p in running:
                    b1, b2 = group_of[p]["betas"]
                    m, g, gh = self.state[p]["exp_avg"], by_param[p], g_prev[p]
                    correction = m - gh                                    # m_{t-1} - gh_t
                    directions[p] = g + b1 * correction if self.storm_interpolation else torch.lerp(g, m, b1)
                    new_momenta[p] = g + b2 * correction                    # m_t = g_t + b2_std (m_{t-1} - gh_t)
        with torch.no_grad():
            for p in params:  # x_t becomes x_{t-1} of the next step for every parameter with state
                if self._initialised(p) or p in new_momenta:
                    self.state[p]["prev_param"] = p.detach().clone()
            self._apply(active, [directions[p] for p in active], group_of)
            for p in active:
                self.state[p]["exp_avg"] = new_momenta[p]
                p.grad = by_param[p]
        return loss


class Signum(Optimizer):
    """signSGD with momentum (Signum, Bernstein et al. 2018): m <- b m + (1 - b) g; p <- p (1 - lr wd) - lr sign(m).

    A baseline for the digits experiment (Lion with beta1_std = beta2_std = b is exactly Signum).
    """

    def __init__(self, params: Iterable, lr: float = 1e-4, momentum: float = 0.9, weight_decay: float = 0.0,
                 check_finite: bool = True) -> None:
        check_lr(lr)
        check_betas((momentum, momentum), "momentum")
        check_weight_decay(weight_decay)
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))
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
