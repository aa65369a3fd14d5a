"""Single-process emulator of asynchronous PipeDream-1F1B with weight stashing (brief section 2.1).

In the official runtime stage ``s`` of ``P`` keeps ``P - 1 - s`` minibatches in flight, so its
gradient for minibatch ``u`` is computed with the weights it had ``tau_s = P - 1 - s`` updates ago
(weight stashing: forward and backward use the *same* stashed version), and the update is applied
to its *current* weights. In steady state this is exactly:

    loss_u = f(theta_0^{u - tau_0}, ..., theta_{P-1}^{u - tau_{P-1}}; batch_u)
    theta_s^{u+1} = Opt_s(theta_s^u, d loss_u / d theta_s)

which :class:`AsyncPipeline` computes with one forward/backward through the mixed-version model.
Warm-up: the stash starts filled with the initial weights. ``P = 1`` is synchronous training.
Each stage has its own optimizer, LR schedule and per-parameter-group gradient clipping.

**Without weight stashing** (``stash=False``; for the paper's "without weight stashing" ablation, brief section 4:
"all baselines degrade catastrophically, basis rotation nearly unaffected"). The ablation's code is not public and
the official runtime has no such switch (its ``--no_input_pipelining`` keeps one weight version *and* drops the
warm-up minibatches, i.e. synchronous training), so this mode is the chapter's reconstruction, the natural reading
of PipeDream with recomputation and without ``load_old_params``: PipeDream without stashing runs
the *forward* of minibatch ``u`` on stage ``s`` with the weights it has then, ``theta_s^{u - tau_s}``, and its
*backward* ``tau_s`` updates later with the weights it has by then, the current ``theta_s^u``. With the
official runtime's activation recomputation (brief section 2.1: the backward recomputes the stage's forward
from the stage's stored input), stage ``s``'s backward is the vector-Jacobian product of
``f_s(x_s; theta_s^u)`` at the input ``x_s`` that the stale forward delivered, with the cotangent that stage
``s + 1`` sent back from its own backward. :class:`AsyncPipeline` computes exactly that with two passes: a
no-grad forward through the mixed-version model (each stage at ``theta_s^{u - tau_s}``) records every stage
boundary's value; then a forward at the current weights in which each boundary's *value* is replaced by the
recorded one while its *gradient* flows through the current-weight computation (:class:`_Substitute`). The
last stage has ``tau = 0`` in 1F1B, so the loss is the stale forward's. Stashing makes forward and backward
use the same version; without it they differ, so the gradient is not the gradient of any one model.
"""
from __future__ import annotations

from collections import deque
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .optim import METHODS, make_stage_optimizer, pipedream_lr_factor, rotated_weights, warmup_cosine


T_CORR_FRACTION = 7 / 250
"""PipeDream-LR correction window as a fraction of the run: the official ``lr_correction_epoch = 7``
of the README's 250 epochs (2.8 %)."""
WARMUP_FRACTION = 3 / 250
"""Linear warm-up as a fraction of the run: the official 3 of 250 epochs (1.2 %)."""


def stage_delays(P: int) -> list[int]:
    """Delay of each stage, ``tau_s = P - 1 - s`` (first stage stalest)."""
    if isinstance(P, bool) or not isinstance(P, (int, np.integer)) or P < 1:
        raise ValueError(f"the number of pipeline stages P must be an integer >= 1, got {P!r}")
    return [int(P) - 1 - s for s in range(int(P))]


def split_stages(model: nn.Module, P: int) -> list[list[nn.Module]]:
    """Split ``model.pipeline_parts()`` into ``P`` contiguous stages.

    Blocks are spread as evenly as possible (earlier stages get the extra block); the ``first``
    modules (embeddings) join stage 0 and the ``last`` modules (head) join stage ``P - 1``, as in the
    official stage files.
    """
    stage_delays(P)
    first, blocks, last = model.pipeline_parts()
    if len(blocks) < P:
        raise ValueError(f"cannot split {len(blocks)} blocks into P = {P} stages (need at least one block per stage)")
    sizes = [len(blocks) // P + (1 if s < len(blocks) % P else 0) for s in range(P)]
    stages, i = [], 0
    for s in range(P):
        stages.append(list(blocks[i:i + sizes[s]]))
        i += sizes[s]
    stages[0] = list(first) + stages[0]
    stages[-1] = stages[-1] + list(last)
    return stages


class _Substitute(torch.autograd.Function):
    """``value`` forward, the gradient to ``out`` backward (a stage boundary without weight stashing)."""

    @staticmethod
    def forward(ctx, out: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return value.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad, None


class _Call(nn.Module):
    """Holds the model as a submodule so that :func:`torch.func.functional_call` can run any closure over it with
    some of its parameters replaced (``"model.<name>"``); the closure calls the model itself."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, fn: Callable[[], torch.Tensor]) -> torch.Tensor:
        return fn()


class AsyncPipeline:
    """Per-stage delay ``P - 1 - s`` for a model split into ``len(stages)`` stages, with weight stashing
    (``stash=True``: forward and backward at ``theta_s^{u - tau_s}``) or without it (``stash=False``: forward
    at ``theta_s^{u - tau_s}``, backward at the current ``theta_s^u``; module docstring).

    ``delays`` overrides the per-stage delays (default :func:`stage_delays`; a test hook: ``stash=False`` with
    every delay 0 is synchronous training). Without stashing the last stage's delay must be 0, as in 1F1B.
    """

    def __init__(self, model: nn.Module, stages: Sequence[Sequence[nn.Module]], stash: bool = True,
                 delays: Sequence[int] | None = None):
        self.P = len(stages)
        self.delays = stage_delays(self.P) if delays is None else [int(d) for d in delays]
        if len(self.delays) != self.P or min(self.delays) < 0:
            raise ValueError(f"delays must be {self.P} integers >= 0, got {delays!r}")
        if not stash and self.delays[-1] != 0:
            raise ValueError("without weight stashing the last stage's delay must be 0 (it computes the loss)")
        self.stash_weights = bool(stash)
        self.boundaries = [list(mods)[-1] for mods in stages[:-1]] if stages else []
        self.model = model
        self.stage_params: list[list[nn.Parameter]] = []
        seen: dict[int, int] = {}
        for s, mods in enumerate(stages):
            if not mods:
                raise ValueError(f"stage {s} holds no module")
            params = []
            for mod in mods:
                for p in mod.parameters():
                    if id(p) in seen:
                        if seen[id(p)] != s:
                            raise ValueError(f"a parameter belongs to stages {seen[id(p)]} and {s}: stages must be disjoint")
                        continue
                    seen[id(p)] = s
                    params.append(p)
            self.stage_params.append(params)
        missing = [name for name, p in model.named_parameters() if id(p) not in seen]
        if missing:
            raise ValueError(f"the stage split does not cover the model: {len(missing)} parameter(s) in no stage, "
                             f"e.g. {missing[:3]}")
        own = {id(p) for p in model.parameters()}
        if any(i not in own for i in seen):
            raise ValueError("the stages hold parameters that are not the model's")
        self.stash = [deque([[p.detach().clone() for p in ps] for _ in range(d + 1)], maxlen=d + 1)
                      for ps, d in zip(self.stage_params, self.delays)]
        self._names = {id(p): name for name, p in model.named_parameters()}
        self._call = _Call(model)
        bound = [id(p) for mod in model.modules() for p in mod.parameters(recurse=False)]
        self._tied = len(bound) != len(set(bound))      # a weight shared by two modules: functional_call must tie it

    def _stale(self, grad: bool) -> tuple[dict[str, torch.Tensor], list[tuple[nn.Parameter, torch.Tensor]]]:
        """Each delayed stage's stashed version ``u - tau_s``, as ``{"model.<name>": tensor}`` for
        :func:`torch.func.functional_call` (stages with delay 0 keep their parameters), and, with ``grad``, the pairs
        (parameter, leaf) whose leaf's gradient is the parameter's. The stash itself is never written."""
        params, pairs = {}, []
        for ps, hist, d in zip(self.stage_params, self.stash, self.delays):
            if d > 0:
                for p, old in zip(ps, hist[0]):
                    leaf = old.detach().requires_grad_(grad and p.requires_grad)
                    params["model." + self._names[id(p)]] = leaf
                    if grad:
                        pairs.append((p, leaf))
        return params, pairs

    def _run(self, params: dict[str, torch.Tensor], loss_fn: Callable[[], torch.Tensor]) -> torch.Tensor:
        """``loss_fn()`` with the model's parameters named in ``params`` replaced by those tensors for this call only
        (:func:`torch.func.functional_call`: the model's own parameters are never swapped)."""
        if not params:
            return loss_fn()
        return torch.func.functional_call(self._call, params, (loss_fn,), tie_weights=self._tied)

    def forward_backward(self, loss_fn: Callable[[], torch.Tensor]) -> torch.Tensor:
        """Run ``loss_fn`` and its backward: with stashing, each stage at its stashed version ``u - tau_s``
        both ways; without, forward values at ``u - tau_s`` and backward at the current weights. The gradients
        land in the current parameters' ``.grad``."""
        for p in self.model.parameters():
            p.grad = None
        if not self.stash_weights and self.boundaries:
            return self._forward_backward_unstashed(loss_fn)
        params, pairs = self._stale(grad=True)
        loss = self._run(params, loss_fn)
        loss.backward()
        for p, leaf in pairs:
            p.grad = leaf.grad
        return loss.detach()

    def _forward_backward_unstashed(self, loss_fn: Callable[[], torch.Tensor]) -> torch.Tensor:
        values: list[torch.Tensor | None] = [None] * len(self.boundaries)

        def recorder(s):
            def hook(mod, args, out):
                if not isinstance(out, torch.Tensor):
                    raise TypeError("a stage boundary module must return one tensor")
                values[s] = out.detach()
            return hook

        def substituter(s):
            def hook(mod, args, out):
                return _Substitute.apply(out, values[s])
            return hook

        params, _ = self._stale(grad=False)
        handles = [m.register_forward_hook(recorder(s)) for s, m in enumerate(self.boundaries)]
        try:
            with torch.no_grad():
                self._run(params, loss_fn)       # pass 1: the stale forward's stage-boundary values
        finally:
            for h in handles:
                h.remove()
        handles = [m.register_forward_hook(substituter(s)) for s, m in enumerate(self.boundaries)]
        try:
            loss = loss_fn()                    # pass 2: those values, gradients at the current weights
            loss.backward()
        finally:
            for h in handles:
                h.remove()
        return loss.detach()

    def push(self) -> None:
        """Stash the freshly updated weights (call after every stage has stepped)."""
        for ps, hist, d in zip(self.stage_params, self.stash, self.delays):
            if d > 0:
                hist.append([p.detach().clone() for p in ps])


@dataclass
class TrainRun:
    """Curves of one pipeline run: train loss per step, eval loss at ``eval_steps``."""

    method: str
    P: int
    seed: int
    train_loss: np.ndarray
    eval_steps: np.ndarray
    eval_loss: np.ndarray
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


def train_pipeline(model: nn.Module, method: str, P: int, batches: Iterator, loss_fn: Callable,
                   eval_fn: Callable[[nn.Module], float], *, steps: int, lr: float, eval_every: int,
                   warmup: int = 0, min_lr_ratio: float = 0.1, t_corr: int | None = None, clip: float | None = 1.0,
                   betas: tuple[float, float] = (0.9, 0.999), weight_decay: float = 0.01,
                   freq: int | Sequence[int] = 10,
                   shampoo_beta: float | None = None, seed: int = 0, on_step: Callable | None = None,
                   stash: bool = True, delays: Sequence[int] | None = None,
                   stop_at: float | None = None, keep_state: bool = False) -> TrainRun:
    """Train ``model`` with ``method`` on an emulated asynchronous ``P``-stage pipeline.

    ``loss_fn(model, batch) -> loss``. Every stage has its own optimizer (:func:`make_stage_optimizer`),
    the warm-up + cosine schedule, the PipeDream-LR correction for ``method == "PipeDream-LR"``
    (``t_corr`` steps; default :data:`T_CORR_FRACTION` of the run, the official 7 of 250 epochs), and
    gradient clipping per stage and parameter group. ``freq`` is the basis-refresh period, one value or
    one per stage (the stage-aware allocation, :func:`stage_aware_freqs`). ``stash=False`` trains without
    weight stashing (:class:`AsyncPipeline`). ``delays`` overrides the per-stage delays (default ``P - 1 - s``):
    every delay 0 at ``P > 1`` is synchronous training with the ``P``-stage split's per-stage clipping, the positive
    control of the pipeline claims (it isolates the clipping granularity's part of a slowdown). ``stop_at`` ends the
    run at the first evaluation whose loss is ``<= stop_at`` (the iterations to that target are unchanged); the
    evaluations it skips are NaN (never a hit), the skipped training losses NaN. The model's device is the run's: the loop syncs the host once
    per step (the loss, for the divergence test) and once per evaluation; on CUDA the basis-rotation
    optimizer skips its per-tensor finiteness check (one host sync per weight), which the loss test covers.
    ``keep_state`` keeps, in plain CPU tensors that pickle from a worker process, the final weights
    (``extra["state"]``, the model's ``state_dict``) and every basis-rotation weight's final bases
    (``extra["bases"]``: parameter name -> ``(U, V)``, None = identity on that side): a diagnostic of the trained
    model (claim C7p) then reuses the run instead of repeating it.

    A run whose loss becomes non-finite stops there and is recorded as *diverged*
    (``extra["diverged_at"]``; its remaining eval losses are ``inf``, so it never reaches a target and
    counts as censored) instead of raising.
    """
    import time

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    if steps < 1 or eval_every < 1:
        raise ValueError("steps and eval_every must be >= 1")
    t0 = time.perf_counter()
    pipe = AsyncPipeline(model, split_stages(model, P), stash=stash, delays=delays)
    rotated = rotated_weights(model)
    on_cuda = any(p.is_cuda for p in model.parameters())
    freqs = [int(freq)] * P if isinstance(freq, (int, np.integer)) else [int(f) for f in freq]
    if len(freqs) != P or min(freqs) < 1:
        raise ValueError(f"freq must be an integer >= 1 or one such value per stage ({P}), got {freq!r}")
    opts = [make_stage_optimizer(method, ps, rotated, lr=lr, betas=betas, weight_decay=weight_decay, freq=f,
                                 shampoo_beta=shampoo_beta, check_finite=not on_cuda)
            for ps, f in zip(pipe.stage_params, freqs)]
    t_corr = max(1, round(T_CORR_FRACTION * steps)) if t_corr is None else t_corr
    extra: dict = {}
    lr_corr = METHODS[method].get("lr_correction", False)
    train, ev_steps, ev = [], [], []
    for t in range(steps):
        batch = next(batches)
        loss = float(pipe.forward_backward(lambda: loss_fn(model, batch)))   # the step's one host sync
        if not math.isfinite(loss):
            extra["diverged_at"] = t
            ev_steps += list(range((t // eval_every + 1) * eval_every, steps + 1, eval_every))
            ev += [float("inf")] * (len(ev_steps) - len(ev))
            train += [float("inf")] * (steps - len(train))
            break
        sched = warmup_cosine(t, steps, warmup, min_lr_ratio)
        for opt, tau in zip(opts, pipe.delays):
            factor = sched * (pipedream_lr_factor(t, tau, t_corr) if lr_corr else 1.0)
            for g in opt.param_groups:
                g["lr"] = lr * factor
                if clip is not None:
                    torch.nn.utils.clip_grad_norm_(g["params"], clip)
            opt.step()
        pipe.push()
        train.append(loss)
        if (t + 1) % eval_every == 0 or t == 0:
            ev_steps.append(t + 1)
            ev.append(eval_fn(model))
            if stop_at is not None and ev[-1] <= stop_at:
                extra["stopped_at"] = t + 1
                ev_steps += list(range((t // eval_every + 1) * eval_every, steps + 1, eval_every))
                ev_steps = sorted(set(ev_steps))
                ev += [float("nan")] * (len(ev_steps) - len(ev))
                train += [float("nan")] * (steps - len(train))
                break
        if on_step is not None:
            on_step()
    if keep_state:
        from .optim import BasisRotationAdam

        cpu = lambda x: None if x is None else x.detach().cpu().clone()
        names = {id(p): n for n, p in model.named_parameters()}
        extra["state"] = {k: cpu(v) for k, v in model.state_dict().items()}
        extra["bases"] = {names[id(p)]: tuple(cpu(b) for b in o.bases(p)) for mo in opts for o in mo.optimizers
                          if isinstance(o, BasisRotationAdam) for g in o.param_groups for p in g["params"]}
    return TrainRun(method, int(P), seed, np.array(train), np.array(ev_steps), np.array(ev),
                    time.perf_counter() - t0, extra)


def stage_aware_freqs(P: int, base: int) -> list[int]:
    """Stage-aware refresh periods (paper, "stage-aware allocation"): the same total refresh budget as
    a uniform period ``base``, with refresh *rates* proportional to ``tau_s + 1`` (staler stages refresh
    more often). Rates ``r_s = (tau_s + 1) / mean(tau + 1) / base``; periods ``round(1 / r_s)``."""
    if base < 1:
        raise ValueError("base refresh period must be >= 1")
    w = np.array(stage_delays(P), dtype=float) + 1.0
    return [max(1, int(round(base * w.mean() / x))) for x in w]


def split_freqs(P: int, early: int, late: int) -> list[int]:
    """Refresh periods of a two-level allocation: the first ``P // 2`` stages (the stalest) refresh every
    ``early`` steps, the last ``P // 2`` every ``late`` steps; an odd ``P``'s middle stage takes the shorter
    period. ``split_freqs(P, a, b)`` and ``split_freqs(P, b, a)`` spend the same refresh budget, so they are a
    direction test of stage-aware allocation (earlier stages have larger delays) that needs no guessed rule."""
    stage_delays(P)
    if min(early, late) < 1:
        raise ValueError("refresh periods must be >= 1")
    half = P // 2
    mid = [min(early, late)] if P % 2 else []
    return [int(early)] * half + mid + [int(late)] * half


def iterations_to_target(run: TrainRun, target: float) -> int | None:
    """First evaluated step at which the eval loss is <= ``target`` (None if never within the run)."""
    hit = np.nonzero(run.eval_loss <= target)[0]
    return int(run.eval_steps[hit[0]]) if hit.size else None
