"""The chapter's experiments, sized by :data:`icml26.basis_rotation.PRESETS`.

* :func:`delay_sweep`        steady-state loss vs delay on the d-dim rotated quadratic (claim C1)
* :func:`exact_invariance`   exact-eigenbasis Adam on the rotated problem vs aligned Adam (C2)
* :func:`trajectories_2d`    the 2-D intuition figure
* :func:`slowdown_sweep`     iterations to a target vs P for each method (deep MLP, tiny GPT)
* :func:`slowdown_table`     seed means of the per-seed iterations / slowdowns, with censoring (the figures)
* :func:`hessian_diagnostic` r(H) of one block's exact Hessian before / after rotation (C7)
* :func:`levels_2d`          2-D steady-state levels over seeds (the intuition figure's claim)
* :func:`alignment_sweep`    cos(delayed update, fresh update) vs rotation angle / r(H) (the mechanism)
* :func:`seed_iterations`, :func:`slowdown_vs_target`  per-seed iterations and slowdowns
* :func:`run_sweeps`, :func:`sweep_workers`  independent pipeline runs in a pool of single-thread worker processes
* :func:`lr_frontier`, :func:`frontier_at`  slowdown against synchronous speed over a learning-rate grid (C4m)
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..seeding import device as compute_device
from .data import CharCorpus, TeacherRegression, stdlib_corpus
from .hessian import cauchy_l11_estimate, l11_ratio, rotate_hessian, weight_hessian
from .models import DeepMLP, TinyGPT
from .optim import BasisRotationAdam
from .pipeline import TrainRun, iterations_to_target, split_stages, train_pipeline
from .toys import random_rotation, rotation2d, run_quadratic, steady_state_loss, update_alignment


# ---------------------------------------------------------------------- toys
def _delay_job(d: int, cond: float, tau: int, seed: int, steps: int, last: int, lr: float, sigma: float,
               freq: int) -> tuple[float, float, float]:
    """One (delay, seed) cell of :func:`delay_sweep`: steady-state losses of aligned Adam, rotated Adam and basis
    rotation (rotated)."""
    lam = np.logspace(0, -np.log10(cond), d)
    Q = random_rotation(d, seed)
    w0 = np.random.default_rng(1000 + seed).standard_normal(d)
    kw = dict(tau=tau, steps=steps, lr=lr, sigma=sigma, freq=freq, seed=seed)
    return (steady_state_loss(run_quadratic(lam, np.eye(d), Q.T @ w0, method="adam", **kw), last),
            steady_state_loss(run_quadratic(lam, Q, w0, method="adam", **kw), last),
            steady_state_loss(run_quadratic(lam, Q, w0, method="br", **kw), last))


def delay_sweep(d: int, taus: Sequence[int], seeds: Sequence[int], steps: int, last: int, lr: float = 1e-2,
                sigma: float = 0.05, cond: float = 100.0, freq: int = 10, progress: Callable | None = None,
                workers: int = 1) -> dict:
    """Steady-state loss of aligned Adam, rotated Adam and basis rotation (rotated) for each delay.

    Returns ``{"taus", "seeds", "loss": {method: array (len(taus), len(seeds))}}`` with methods
    ``"Adam, aligned H"``, ``"Adam, rotated H"``, ``"BR (2nd, bi), rotated H"``. ``workers > 1`` computes the
    (delay, seed) cells in the chapter's pool (:func:`pool_map`; each cell seeds itself: the same values).
    """
    names = ("Adam, aligned H", "Adam, rotated H", "BR (2nd, bi), rotated H")
    out = {n: np.zeros((len(taus), len(seeds))) for n in names}
    cells = [(i, j) for i in range(len(taus)) for j in range(len(seeds))]
    jobs = [dict(d=d, cond=cond, tau=taus[i], seed=seeds[j], steps=steps, last=last, lr=lr, sigma=sigma, freq=freq)
            for i, j in cells]
    for (i, j), vals in zip(cells, pool_map(_delay_job, jobs, workers=workers, progress=progress, desc="delay sweep")):
        for n, v in zip(names, vals):
            out[n][i, j] = v
    return {"taus": list(taus), "seeds": list(seeds), "loss": out}


def exact_invariance(d: int, tau: int, steps: int, seed: int = 0, lr: float = 1e-2, sigma: float = 0.05,
                     cond: float = 100.0) -> float:
    """max_t ||Q^T w_t(exact basis, rotated H) - w_t(Adam, aligned H)||_inf over a delayed run."""
    lam = np.logspace(0, -np.log10(cond), d)
    Q = random_rotation(d, seed)
    w0 = np.random.default_rng(1000 + seed).standard_normal(d)
    kw = dict(tau=tau, steps=steps, lr=lr, sigma=sigma, seed=seed)
    rot = run_quadratic(lam, Q, w0, method="exact", **kw)
    ali = run_quadratic(lam, np.eye(d), Q.T @ w0, method="adam", **kw)
    return float(np.abs(rot.path @ Q - ali.path).max())


def trajectories_2d(theta: float, tau: int, steps: int, lam=(1.0, 0.05), w0=(1.0, 1.0), lr: float = 0.05,
                    sigma: float = 0.02, seed: int = 0, shampoo_beta: float = 0.95) -> dict:
    """Iterates of Adam and basis rotation on a 2-D quadratic rotated by ``theta`` with delay ``tau``.

    ``w0`` is given in the eigen-coordinates, so every problem starts equally far from the optimum.
    """
    Q = rotation2d(theta)
    start = Q @ np.asarray(w0, dtype=float)
    kw = dict(tau=tau, steps=steps, lr=lr, sigma=sigma, seed=seed, shampoo_beta=shampoo_beta)
    return {"Adam": run_quadratic(lam, Q, start, method="adam", **kw),
            "Basis rotation": run_quadratic(lam, Q, start, method="br", **kw), "Q": Q, "lam": np.asarray(lam)}


def levels_2d(tau: int, steps: int, seeds: Sequence[int], last: int = 50, window: tuple[int, int] | None = None,
              **kw) -> dict[str, np.ndarray]:
    """Mean loss of the 2-D problem over a window of steps, per seed: Adam aligned (theta = 0), Adam rotated
    45 degrees, basis rotation rotated 45 degrees.

    ``window = (start, stop)``: the steps ``start <= t < stop`` (``stop <= steps``). Every run uses a constant
    step size, so its first ``stop`` iterates do not depend on ``steps``: a fixed window gives the same
    value at every horizon, where "the last ``last`` steps" (the default, ``window=None``) moves with it.
    """
    if window is not None:
        start, stop = (int(x) for x in window)
        if not 0 <= start < stop <= steps:
            raise ValueError(f"window must satisfy 0 <= start < stop <= steps = {steps}, got {window!r}")
        sl = slice(start, stop)
    else:
        if not 1 <= last <= steps:
            raise ValueError(f"last must lie in [1, steps = {steps}], got {last!r}")
        sl = slice(steps - last, steps)
    out = {"Adam, aligned": [], "Adam, rotated": [], "BR, rotated": []}
    for s in seeds:
        a = trajectories_2d(0.0, tau, steps, seed=s, **kw)
        r = trajectories_2d(np.pi / 4, tau, steps, seed=s, **kw)
        out["Adam, aligned"].append(float(a["Adam"].loss[sl].mean()))
        out["Adam, rotated"].append(float(r["Adam"].loss[sl].mean()))
        out["BR, rotated"].append(float(r["Basis rotation"].loss[sl].mean()))
    return {k: np.array(v) for k, v in out.items()}


def r_2d(theta: float, lam=(1.0, 0.05)) -> float:
    """r(H) = ||H||_{1,1} / tr H of the 2-D Hessian rotated by ``theta``: 1 + |l1 - l2||sin 2theta| / (l1 + l2)."""
    l1, l2 = lam
    return 1.0 + abs(l1 - l2) * abs(np.sin(2 * theta)) / (l1 + l2)


def _align_job(lam, angle_deg: float, seed: int, arms, tau: int, steps: int, lr: float, sigma: float,
               shampoo_beta: float, betas: tuple[float, float]) -> dict[str, float]:
    """One (angle, seed) cell of :func:`alignment_sweep`: each arm's mean cos(delayed update, fresh update)."""
    Q = rotation2d(np.radians(angle_deg))
    w0 = Q @ np.ones(2)
    return {name: update_alignment(lam, Q, w0, method=meth, tau=tau, steps=steps, lr=lr, sigma=sigma,
                                   shampoo_beta=shampoo_beta, betas=betas, seed=seed) for name, meth in arms}


def alignment_sweep(angles_deg: Sequence[float], tau: int, steps: int, seeds: Sequence[int], lam=(1.0, 0.05),
                    lr: float = 0.05, sigma: float = 0.02, shampoo_beta: float = 0.95,
                    betas: tuple[float, float] = (0.0, 0.999), exact: bool = False,
                    progress: Callable | None = None, workers: int = 1) -> dict:
    """Mean cos(delayed update, fresh update) of Adam and basis rotation on the 2-D quadratic as its
    Hessian is rotated by each angle (:func:`~icml26.basis_rotation.toys.update_alignment`).

    ``beta1 = 0`` by default: the theory's setting (asynchronous Adam with beta1 = 0, RMSProp-like), where
    an update is the preconditioned gradient itself; with beta1 = 0.9 the momentum dominates both updates
    and their cosine is ~0.98-0.99 whatever the angle (a pilot run), so it cannot show the mechanism.
    ``exact=True`` adds ``"Exact basis"``: Adam frozen in the Hessian's eigenbasis, what basis rotation would do
    with a perfect estimate (the mechanism with the estimator taken out: the positive control of claim C8b).
    Returns ``{"angles", "r": r(H) per angle, "cos": {"Adam"|"Basis rotation"[|"Exact basis"]: (n_angles, n_seeds)}}``.
    ``workers > 1`` computes the (angle, seed) cells in the chapter's pool (:func:`pool_map`; the same values).
    """
    arms = (("Adam", "adam"), ("Basis rotation", "br")) + ((("Exact basis", "exact"),) if exact else ())
    cos = {name: np.zeros((len(angles_deg), len(seeds))) for name, _ in arms}
    cells = [(i, j) for i in range(len(angles_deg)) for j in range(len(seeds))]
    jobs = [dict(lam=tuple(lam), angle_deg=angles_deg[i], seed=seeds[j], arms=arms, tau=tau, steps=steps, lr=lr,
                 sigma=sigma, shampoo_beta=shampoo_beta, betas=tuple(betas)) for i, j in cells]
    for (i, j), vals in zip(cells, pool_map(_align_job, jobs, workers=workers, progress=progress, desc="alignment sweep")):
        for name, _ in arms:
            cos[name][i, j] = vals[name]
    return {"angles": list(angles_deg), "r": np.array([r_2d(np.radians(a), lam) for a in angles_deg]), "cos": cos}


# ---------------------------------------------------------------------- pipeline tasks
@dataclass
class Task:
    """A model factory, a data stream, a loss and an evaluation for :func:`train_pipeline`, on ``device``
    (the data live there; :func:`slowdown_sweep` moves each model there after its CPU initialisation)."""

    name: str
    make_model: Callable[[], torch.nn.Module]
    batches: Callable[[int], object]
    loss_fn: Callable
    eval_fn: Callable[[torch.nn.Module], float]
    device: torch.device = torch.device("cpu")
    spec: tuple[str, dict] | None = None
    """How a worker process rebuilds the task (``(kind, plain cfg)``, kind ``"mlp"`` or ``"gpt"``): closures do not
    pickle, so :func:`run_sweeps` sends this instead; None: the task runs in this process only."""


def _device(device) -> torch.device:
    return torch.device(device) if device is not None else compute_device()


def _plain(v):
    """A preset value as plain, picklable Python (a chapter's preset holds read-only mapping proxies)."""
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_plain(x) for x in v)
    return v


def teacher_data(cfg: dict) -> TeacherRegression:
    """The deep MLP's data set (:class:`TeacherRegression`, seed 0) at ``cfg``'s sizes, on the CPU."""
    return TeacherRegression(d_in=cfg["d_in"], d_out=cfg["d_out"], n_train=cfg["n_train"], cond=cfg["cond"], seed=0)


def mlp_task(cfg: dict, device=None) -> Task:
    """Deep tanh MLP on :class:`TeacherRegression` (stand-in for the paper's GPT + OpenWebText), on ``device``
    (default :func:`icml26.device`: CUDA when present). ``cfg["residual"]`` (default False): residual blocks."""
    dev = _device(device)
    data = teacher_data(cfg).to(dev)

    def make():
        return DeepMLP(cfg["d_in"], cfg["width"], cfg["n_blocks"], cfg["d_out"], residual=cfg.get("residual", False))

    return Task("deep MLP", make, lambda seed: data.batches(cfg["batch"], seed),
                lambda m, b: F.mse_loss(m(b[0]), b[1]), data.eval_loss, dev, spec=("mlp", _plain(cfg)))


def gpt_task(cfg: dict, device=None) -> Task:
    """Tiny character-level GPT on the standard-library corpus, on ``device`` (default :func:`icml26.device`)."""
    dev = _device(device)
    corpus = CharCorpus(stdlib_corpus(max_chars=cfg.get("max_chars")), cfg["ctx"])
    on = None if dev.type == "cpu" else dev
    evals = corpus.eval_batches(cfg["eval_batches"], cfg["batch"], device=on)

    def make():
        return TinyGPT(corpus.vocab, cfg["d_model"], cfg["n_layer"], cfg["n_head"], cfg["ctx"])

    def loss_fn(m, b):
        return F.cross_entropy(m(b[0]).flatten(0, 1), b[1].flatten())

    def eval_fn(m):
        with torch.no_grad():
            return float(sum(loss_fn(m, b) for b in evals) / len(evals))

    return Task("tiny GPT", make, lambda seed: corpus.batches(cfg["batch"], seed, device=on), loss_fn, eval_fn, dev,
                spec=("gpt", _plain(cfg)))


def sweep_workers(task: Task, parallel: bool = True) -> int:
    """Processes for :func:`run_sweeps`: one on a GPU (the runs share it) or when ``parallel`` is off; else the
    machine's cores, capped at this chapter's share of it (``ICML26_CPUS``, set when `repro` runs chapters side by
    side). Each run seeds itself and every worker computes on one thread, as the chapter does, so the numbers do
    not depend on it (tested)."""
    if task.device.type != "cpu" or task.spec is None:
        return 1
    return pool_workers(parallel)


def pool_workers(parallel: bool = True) -> int:
    """Processes for CPU work sent to the chapter's pool (:func:`pool_map`, :func:`run_sweeps`): one when
    ``parallel`` is off, else the machine's cores capped at ``ICML26_CPUS`` (as :func:`sweep_workers`)."""
    if not parallel:
        return 1
    n = os.cpu_count() or 1
    return max(1, min(n, int(os.environ.get("ICML26_CPUS", n))))


def pool_map(fn: Callable | Sequence[Callable], jobs: Sequence[Mapping], *, workers: int = 1,
             progress: Callable | None = None, desc: str | None = None) -> list:
    """``[fn(**job) for job in jobs]``, in this process (``workers <= 1``) or in the chapter's pool of single-thread
    worker processes (the one :func:`run_sweeps` uses); ``fn`` may also be one function per job. A function must be
    module-level (it pickles by name) and every job must seed itself (the toys draw their noise from their ``seed``),
    so a value does not depend on where it is computed (tested); a job's values are made plain (a chapter's preset
    holds read-only mappings) and results come back in job order."""
    jobs = [{k: _plain(v) for k, v in j.items()} for j in jobs]
    fns = list(fn) if isinstance(fn, (list, tuple)) else [fn] * len(jobs)
    if len(fns) != len(jobs):
        raise ValueError(f"one function per job: {len(fns)} functions for {len(jobs)} jobs")
    if workers <= 1 or len(jobs) <= 1:
        idx = list(range(len(jobs)))
        return [fns[i](**jobs[i]) for i in (progress(idx, desc=desc) if progress else idx)]
    from concurrent.futures import as_completed

    futures = {_pool(workers).submit(f, **j): i for i, (f, j) in enumerate(zip(fns, jobs))}
    out: list = [None] * len(jobs)
    done = as_completed(futures)
    for f in (progress(done, desc=desc, total=len(futures)) if progress else done):
        out[futures[f]] = f.result()
    return out


_POOL: dict = {}                 # the chapter's one worker pool (spawned once, reused by every sweep)
_WORKER_TASKS: dict = {}         # in a worker: the tasks it has rebuilt, by spec


def _pool(workers: int):
    import atexit
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    if _POOL.get("workers") != workers:
        if _POOL.get("pool") is not None:
            _POOL["pool"].shutdown()
        _POOL["pool"] = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                            initializer=_init_worker)
        _POOL["workers"] = workers
        if not _POOL.get("atexit"):
            atexit.register(lambda: _POOL["pool"].shutdown(cancel_futures=True) if _POOL.get("pool") else None)
            _POOL["atexit"] = True
    return _POOL["pool"]


def _init_worker() -> None:
    import signal

    from ..chapter import pin_threads

    pin_threads()   # one torch/BLAS thread per worker, as the chapter computes: the same numbers as in-process
    # The pool outlives the cells; when the kernel is interrupted or shut down, Ctrl-C reaches its process group and
    # would print each idle worker's KeyboardInterrupt traceback into the build log. The parent owns the workers'
    # lifetime (the atexit shutdown above), so they ignore SIGINT.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_task(spec: tuple[str, dict]) -> Task:
    key = repr(spec)
    if key not in _WORKER_TASKS:
        kind, cfg = spec
        _WORKER_TASKS[key] = {"mlp": mlp_task, "gpt": gpt_task}[kind](cfg, device="cpu")
    return _WORKER_TASKS[key]


def _one_run(task: Task, job: tuple[str, int, int], kw: dict) -> TrainRun:
    m, P, s = job
    torch.manual_seed(s)
    model = task.make_model().to(task.device)
    return train_pipeline(model, m, P, task.batches(s), task.loss_fn, task.eval_fn, seed=s, **kw)


def _run_in_worker(spec: tuple[str, dict], job: tuple[str, int, int], kw: dict) -> TrainRun:
    return _one_run(_worker_task(spec), job, kw)


_COST = {"BR (2nd, bi)": 1.7, "BR (2nd, uni)": 1.9, "BR (1st, bi)": 1.8, "BR (1st, uni)": 1.9}


def run_sweeps(task: Task, sweeps: Mapping[str, Mapping], *, workers: int = 1, progress: Callable | None = None,
               desc: str | None = None) -> dict[str, dict[tuple[str, int, int], TrainRun]]:
    """Several :func:`slowdown_sweep` calls at once: ``sweeps`` maps a name to ``dict(methods, Ps, seeds, steps, lr,
    eval_every, warmup, **train_kw)``; returns the name -> runs. With ``workers > 1`` (:func:`sweep_workers`) the runs
    go to the chapter's pool of spawned single-thread processes, the costliest first; each worker rebuilds the task
    from ``task.spec``. One run's numbers do not depend on where it runs: it seeds itself (initialisation drawn on
    the CPU from the seed, data stream from the seed)."""
    jobs = []
    for name, sw in sweeps.items():
        sw = dict(sw)
        methods, Ps, seeds = sw.pop("methods"), sw.pop("Ps"), sw.pop("seeds")
        kw = {k: _plain(v) for k, v in sw.items()}
        jobs += [(name, (m, int(P), int(s)), kw) for m in methods for P in Ps for s in seeds]
    desc = desc or f"{task.name} runs"
    out: dict[str, dict] = {name: {} for name in sweeps}
    if workers <= 1 or len(jobs) <= 1:
        for name, job, kw in (progress(jobs, desc=desc) if progress else jobs):
            out[name][job] = _one_run(task, job, kw)
        return out
    if task.spec is None:
        raise ValueError("a task without a spec cannot run in worker processes (workers > 1)")
    from concurrent.futures import as_completed

    pool = _pool(workers)
    cost = lambda j: (_COST.get(j[1][0], 1.0) * (1 + 0.03 * j[1][1]) * j[2]["steps"]
                      * (2.0 if not j[2].get("stash", True) else 1.0))
    futures = {pool.submit(_run_in_worker, task.spec, job, kw): (name, job)
               for name, job, kw in sorted(jobs, key=lambda j: -cost(j))}
    done = as_completed(futures)
    for f in (progress(done, desc=desc, total=len(futures)) if progress else done):
        name, job = futures[f]
        out[name][job] = f.result()
    return {name: {job: out[name][job] for n_, job, _ in jobs if n_ == name} for name in sweeps}


def slowdown_sweep(task: Task, methods: Sequence[str], Ps: Sequence[int], seeds: Sequence[int], *, steps: int,
                   lr: float, eval_every: int, warmup: int, progress: Callable | None = None, workers: int = 1,
                   **train_kw) -> dict[tuple[str, int, int], TrainRun]:
    """One run per (method, P, seed); the model initialisation depends on the seed only (drawn on the CPU,
    then moved to ``task.device``). ``train_kw`` goes to :func:`train_pipeline` (e.g. ``freq``, ``stash``);
    ``workers > 1`` runs them in the chapter's process pool (:func:`run_sweeps`)."""
    sw = dict(methods=methods, Ps=Ps, seeds=seeds, steps=steps, lr=lr, eval_every=eval_every, warmup=warmup, **train_kw)
    return run_sweeps(task, {"runs": sw}, workers=workers, progress=progress)["runs"]


def mean_curve(runs: dict, method: str, P: int) -> TrainRun:
    """The seed-averaged eval curve of (method, P) as a TrainRun."""
    sel = [r for (m, p, _), r in runs.items() if m == method and p == P]
    if not sel:
        raise KeyError(f"no run for {method!r} at P = {P}")
    return TrainRun(method, P, -1, np.mean([r.train_loss for r in sel], 0), sel[0].eval_steps,
                    np.mean([r.eval_loss for r in sel], 0))


def slowdown_table(runs: dict, methods: Sequence[str], Ps: Sequence[int], target: float, steps: int) -> dict:
    """Iterations to ``target`` and slowdowns vs each method's own ``P = 1``, from the *per-seed* values that the
    claims use (:func:`seed_iterations`, :func:`seed_slowdown`): ``iters`` is the seed mean of the counts,
    ``slowdown`` the seed mean of the per-seed slowdowns (seeds censored at ``P = 1`` left out; NaN when all are).

    A run that never reaches the target is *censored*: its count is the lower bound ``steps``, and a slowdown
    with a censored ``P``-count is a lower bound; ``censored`` flags a setting where any seed is.
    """
    if Ps[0] != 1:
        raise ValueError(f"slowdowns are relative to P = 1: Ps must start with 1, got {tuple(Ps)}")
    iters, cens, slow = {}, {}, {}
    for m in methods:
        it1 = seed_iterations(runs, m, 1, target, steps)
        for P in Ps:
            itP = it1 if P == 1 else seed_iterations(runs, m, P, target, steps)
            sd, _ = seed_slowdown(itP, it1)
            iters[(m, P)] = float(itP[0].mean())
            cens[(m, P)] = bool(itP[1].any())
            slow[(m, P)] = float(np.nanmean(sd)) if np.isfinite(sd).any() else float("nan")
    return {"target": target, "iters": iters, "censored": cens, "slowdown": slow}


def seed_iterations(runs: dict, method: str, P: int, target: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed iterations to ``target`` (censored runs count ``steps``, a lower bound) and censoring flags,
    in seed order."""
    sel = sorted(((s, r) for (m, p, s), r in runs.items() if m == method and p == P), key=lambda x: x[0])
    if not sel:
        raise KeyError(f"no run for {method!r} at P = {P}")
    its = [iterations_to_target(r, target) for _, r in sel]
    return np.array([steps if i is None else i for i in its], dtype=float), np.array([i is None for i in its])


def slowdown_vs_target(runs: dict, methods: Sequence[str], P: int, targets: Sequence[float], steps: int) -> dict:
    """Per-seed slowdown iterations(P) / iterations(1) of each method at each target level.

    ``{"slowdown": {(method, target): array per seed}, "censored": {(method, target): any run censored}}``;
    a slowdown whose P = 1 run is censored is NaN.
    """
    slow, cens = {}, {}
    for m in methods:
        for tg in targets:
            i1, c1 = seed_iterations(runs, m, 1, tg, steps)
            iP, cP = seed_iterations(runs, m, P, tg, steps)
            slow[(m, tg)] = np.where(c1, np.nan, iP / i1)
            cens[(m, tg)] = bool(cP.any() or c1.any())
    return {"slowdown": slow, "censored": cens, "targets": list(targets)}


def fastest_lr(counts: dict) -> float:
    """The learning rate whose runs need the fewest iterations to the target: ``counts`` maps a learning rate to
    its :func:`seed_iterations` result (per-seed counts, a censored count being the lower bound ``steps``, and
    the censoring flags); the seed mean decides, the larger learning rate among equal means."""
    if not counts:
        raise ValueError("fastest_lr needs at least one learning rate")
    return min(counts, key=lambda lr: (float(np.mean(counts[lr][0])), -lr))


def matched_lr(counts: dict, reference: float) -> float:
    """The learning rate of ``counts`` (as in :func:`fastest_lr`) whose seed-mean count lies nearest
    ``reference`` in ``|log(count / reference)|``: the matched-synchronous-speed rule of claim C4m; the larger
    learning rate among equal distances."""
    if not counts:
        raise ValueError("matched_lr needs at least one learning rate")
    if not reference > 0:
        raise ValueError(f"the reference count must be > 0, got {reference!r}")
    return min(counts, key=lambda lr: (abs(math.log(float(np.mean(counts[lr][0])) / reference)), -lr))


def secant_lr(counts: dict, reference: float, digits: int = 2) -> float | None:
    """One secant step of the matched-speed rule (claim C4m): between the two neighbouring learning rates of
    ``counts`` (as in :func:`fastest_lr`) whose seed-mean counts bracket ``reference`` (the count falls as the rate
    grows), the rate at which the line through them in ``(log lr, log count)`` meets ``reference``, rounded to
    ``digits`` significant digits. None when no neighbouring pair brackets it or the rate is already in the grid."""
    if not reference > 0:
        raise ValueError(f"the reference count must be > 0, got {reference!r}")
    lrs = sorted(counts)
    mean = {lr: float(np.mean(counts[lr][0])) for lr in lrs}
    for lo, hi in zip(lrs, lrs[1:]):
        c_lo, c_hi = mean[lo], mean[hi]
        if c_lo >= reference >= c_hi and c_lo > c_hi:
            k = math.log(c_lo / c_hi) / math.log(hi / lo)             # count ~ lr^-k on the bracket
            lr = lo * (c_lo / reference) ** (1.0 / k)
            lr = float(f"{lr:.{digits}g}")
            return None if any(math.isclose(lr, x, rel_tol=1e-9) for x in lrs) else lr
    return None


def lr_frontier(runs_by_lr: Mapping[float, dict], method: str, P: int, target: float, steps: int) -> dict[float, dict]:
    """The speed-staleness frontier of one method over its learning-rate grid (the matched-speed test, C4m): for each
    rate of ``runs_by_lr`` (runs keyed ``(method, P, seed)`` at ``P = 1`` and at ``P``, on the same seeds), the
    per-seed ``P = 1`` iterations to ``target`` with their censoring (:func:`seed_iterations`) and the per-seed
    slowdown at ``P`` with its lower-bound flags (:func:`seed_slowdown`). Rates without runs at ``P`` are left out."""
    out = {}
    for lr, runs in sorted(runs_by_lr.items()):
        if not any(k[0] == method and k[1] == P for k in runs):
            continue
        it1 = seed_iterations(runs, method, 1, target, steps)
        sd, lower = seed_slowdown(seed_iterations(runs, method, P, target, steps), it1)
        out[lr] = {"it1": it1, "slowdown": sd, "lower": lower}
    return out


def matched_speed_runs(sweeps: Callable[[dict, str], dict], arms: Mapping[str, tuple[str, Sequence[float]]],
                       sweep: Callable[[str, float, Sequence[int], tuple[int, ...]], dict], *, aux: Sequence[int],
                       rest: Sequence[int], P: int, lr_official: float, target: float, steps: int, frontier: bool = True,
                       tuned_extra: Sequence[float] = ()) -> dict:
    """The runs of the matched-synchronous-speed test (claim C4m) and of the asynchronously tuned reading (C4t), by
    the rule stated in the presets and the chapter.

    ``arms`` maps ``"base"`` (the best baseline), ``"br"`` (basis rotation) and any other arm (the negative control)
    to ``(method, learning-rate grid)``. ``sweep(method, lr, seeds, Ps)`` builds one :func:`run_sweeps` entry and
    ``sweeps(entries, desc)`` runs a dict of them (keyed ``(arm, lr)`` or ``(arm, lr, "rest")``). The rule:

    1. every rate of every grid at ``P = 1`` on the auxiliary seeds ``aux`` (and at ``P`` too with ``frontier``;
       without it, at ``P`` only ``lr_official`` of the baseline's and basis rotation's grids, which the chapter's
       readings at the official rate use); the baseline takes the rate with the fewest ``P = 1`` iterations
       (:func:`fastest_lr`), whose seed-mean count is the reference;
    2. one secant step for every other arm inside the pair of its rates whose counts bracket the reference
       (:func:`secant_lr`); each arm takes the rate whose count is nearest the reference (:func:`matched_lr`);
    3. the deepest ``P`` on ``aux`` where it is still missing: the chosen rates, basis rotation's grid choice without
       the secant step, and every rate of the baseline's and basis rotation's grids (C4t); basis rotation's
       ``tuned_extra`` rates at ``P = 1`` and ``P`` (outside the rule, which never sees them); the chosen rates on the
       other seeds ``rest``.

    Returns ``runs`` (arm -> lr -> runs keyed ``(method, P, seed)``), ``lr_sel`` (arm -> chosen rate), ``ref_count``,
    ``lr_grid`` (basis rotation's choice before the secant step) and ``secant`` (arm -> the secant rate or None)."""
    if "base" not in arms or "br" not in arms:
        raise ValueError(f"arms must hold 'base' and 'br', got {sorted(arms)}")
    runs: dict[str, dict] = {a: {} for a in arms}

    def add(out):
        for key, r in out.items():
            runs[key[0]].setdefault(key[1], {}).update(r)

    def counts(a):
        return {lr: seed_iterations(subset_seeds(r, aux), arms[a][0], 1, target, steps) for lr, r in runs[a].items()}

    def has_deep(a, lr):
        return all((arms[a][0], P, int(s)) in runs[a].get(lr, {}) for s in aux)

    # without the frontier, the official rate runs at P only in the arms whose readings use it (the baseline's and basis
    # rotation's; the control's chosen rate is added in step 3 where needed)
    add(sweeps({(a, lr): sweep(m, lr, aux, (1, P) if frontier or (lr == lr_official and a in ("base", "br")) else (1,))
                for a, (m, lrs) in arms.items() for lr in lrs}, "matched-speed grids"))
    lr_b = fastest_lr(counts("base"))
    ref = float(counts("base")[lr_b][0].mean())
    lr_grid = matched_lr(counts("br"), ref)
    sec = {a: secant_lr(counts(a), ref) for a in arms if a != "base"}
    todo = {(a, lr): sweep(arms[a][0], lr, aux, (1, P) if frontier else (1,)) for a, lr in sec.items() if lr is not None}
    if todo:
        add(sweeps(todo, "secant steps"))
    sel = {"base": lr_b, **{a: matched_lr(counts(a), ref) for a in arms if a != "base"}}
    need = set(sel.items()) | {("br", lr_grid)} | {(a, lr) for a in ("base", "br") for lr in runs[a]}
    last = {(a, lr): sweep(arms[a][0], lr, aux, (P,)) for a, lr in need if not has_deep(a, lr)}
    last.update({("br", lr): sweep(arms["br"][0], lr, aux, (1, P)) for lr in tuned_extra if lr not in runs["br"]})
    if rest:
        last.update({(a, lr, "rest"): sweep(arms[a][0], lr, rest, (1, P)) for a, lr in sel.items()})
    if last:
        add(sweeps(last, "chosen rates"))
    return {"runs": runs, "lr_sel": sel, "ref_count": ref, "lr_grid": lr_grid, "secant": sec}


def async_tuned(runs_by_lr: Mapping[float, dict], method: str, P: int, target: float, steps: int) -> dict:
    """``method`` tuned for the asynchronous setting (claims C4t, C4ts): of the rates of ``runs_by_lr`` (runs keyed
    ``(method, P, seed)`` at ``P = 1`` and at ``P`` on the same seeds; rates without runs at ``P`` are left out), the
    one whose seed-mean iterations to ``target`` *at* ``P`` are fewest (:func:`fastest_lr` on the deep counts; a
    censored count is the lower bound ``steps``). Returns ``lr``, the per-seed counts at ``P`` (``itP``) and at
    ``P = 1`` (``it1``) with their censoring flags, and the per-seed ``slowdown`` with its ``lower`` flags."""
    deep = {lr: runs for lr, runs in runs_by_lr.items() if any(k[0] == method and k[1] == P for k in runs)}
    if not deep:
        raise ValueError(f"no run of {method!r} at P = {P} in any rate")
    counts = {lr: seed_iterations(runs, method, P, target, steps) for lr, runs in deep.items()}
    lr = fastest_lr(counts)
    it1 = seed_iterations(deep[lr], method, 1, target, steps)
    sd, lower = seed_slowdown(counts[lr], it1)
    return {"lr": lr, "itP": counts[lr], "it1": it1, "slowdown": sd, "lower": lower}


def frontier_at(frontier: Mapping[float, dict], count: float) -> float:
    """A method's seed-mean slowdown at the synchronous speed ``count`` (iterations to the target at ``P = 1``),
    interpolated linearly in (log count, log slowdown) between the two rates of its :func:`lr_frontier` whose mean
    counts bracket it; NaN outside the range of its counts, or where a bracketing rate has no slowdown."""
    pts = sorted((float(np.mean(v["it1"][0])), float(np.nanmean(v["slowdown"])) if np.isfinite(v["slowdown"]).any()
                  else float("nan")) for v in frontier.values())
    for (c0, s0), (c1, s1) in zip(pts, pts[1:]):
        if c0 <= count <= c1:
            if not (np.isfinite(s0) and np.isfinite(s1)):
                return float("nan")
            if c1 == c0:
                return float(np.exp((np.log(s0) + np.log(s1)) / 2))
            w = (np.log(count) - np.log(c0)) / (np.log(c1) - np.log(c0))
            return float(np.exp((1 - w) * np.log(s0) + w * np.log(s1)))
    return float("nan")


def subset_seeds(runs: dict, seeds: Sequence[int]) -> dict:
    """The runs of ``runs`` (keyed ``(method, P, seed)``) whose seed is in ``seeds``: the main sweep restricted to
    the seeds of an experiment that runs fewer, so that per-seed pairs line up."""
    keep = set(int(s) for s in seeds)
    return {k: r for k, r in runs.items() if k[2] in keep}


# ---------------------------------------------------------------------- Hessian diagnostic
def hessian_diagnostic(cfg: dict, seed: int = 0) -> dict:
    """Train a small MLP with basis rotation (initialisation and data order from ``seed``), then compare r(H) of
    one block's exact Hessian in the original coordinates, in the optimizer's estimated basis ``U (x) V``, and in a
    Haar-random Kronecker basis ``U_r (x) V_r`` of the same shape (``r_rand``: the control, a rotation that knows
    nothing of ``H``), and the Cauchy-sketch estimate of ||H||_{1,1} with the exact value."""
    data = teacher_data(cfg)
    torch.manual_seed(seed)
    model = DeepMLP(cfg["d_in"], cfg["width"], cfg["n_blocks"], cfg["d_out"])
    block = model.blocks[cfg["block"]].mlp
    rot = BasisRotationAdam([block.weight], lr=cfg["lr"], shampoo_beta=cfg["shampoo_beta"])
    rest = torch.optim.AdamW([p for p in model.parameters() if p is not block.weight], lr=cfg["lr"])
    stream = data.batches(cfg["batch"], seed)
    for _ in range(cfg["steps"]):
        x, y = next(stream)
        model.zero_grad()
        F.mse_loss(model(x), y).backward()
        rot.step()
        rest.step()
    W = block.weight
    x_all, y_all = data.x_train[: cfg["n_hessian"]].double(), data.y_train[: cfg["n_hessian"]].double()
    model.double()

    name = f"blocks.{cfg['block']}.mlp.weight"

    def loss_of(w):
        return F.mse_loss(torch.func.functional_call(model, {name: w}, (x_all,)), y_all)

    H = weight_hessian(loss_of, W.detach().double())
    U, V = rot.bases(W)
    Ht = rotate_hessian(H, U.double(), V.double(), W.shape)
    m, n = W.shape
    Ur = torch.tensor(random_rotation(m, 7919 + 2 * seed))
    Vr = torch.tensor(random_rotation(n, 7920 + 2 * seed))
    H_rand = rotate_hessian(H, Ur, Vr, W.shape)
    evals, evecs = torch.linalg.eigh(H)
    est = cauchy_l11_estimate(lambda z: H @ z, H.shape[0], cfg["cauchy_draws"], seed)
    return {"H": H.numpy(), "H_rot": Ht.numpy(), "r_orig": l11_ratio(H), "r_rot": l11_ratio(Ht), "r_rand": l11_ratio(H_rand),
            "l11": float(H.abs().sum()), "l11_cauchy": est, "trace": float(torch.diagonal(H).sum()),
            "neg_eig_mass": float(evals.clamp(max=0).abs().sum() / evals.abs().sum()), "shape": tuple(W.shape)}


def pipeline_block_misalignment(cfg: dict, seed: int = 0, *, steps: int, block: int = 1, n_hessian: int = 2048,
                                draws: int = 201, exact: bool = False, run: TrainRun | None = None) -> dict:
    """Misalignment of the *pipeline* MLP's own layers (the stand-in property of claims C4, measured by claim C7p): the
    deep MLP of ``cfg`` (:func:`mlp_task`, on the CPU) trained synchronously with basis rotation (2nd, bi) as the main
    sweep's ``P = 1`` run is (``steps``, the warm-up and cosine schedule, ``cfg``'s lr, covariance EMA and refresh
    period), then the Hessian of the training loss on the first ``n_hessian`` examples with respect to block
    ``block``'s weight (``width x width``) is probed with Hessian-vector products only: ``||H||_{1,1}`` by the Cauchy
    sketch (:func:`cauchy_l11_estimate`, ``draws`` draws) in the original coordinates, in the optimizer's basis
    ``U (x) V`` and in a Haar-random Kronecker basis (the control), and ``tr H`` by Hutchinson's estimator (``draws``
    Rademacher draws). ``ratio`` = ``||H_rot||_{1,1} / ||H||_{1,1}`` (the trace cancels: it is rotation invariant),
    ``ratio_rand`` the same for the random basis, ``r_orig`` / ``r_rot`` the estimated ``r(H)``. ``exact`` (small
    blocks only: the test of the sketch) adds the exact values from the full Hessian under ``"exact"``. ``run``: that
    training run already made (the main sweep's ``P = 1`` basis-rotation run of ``seed``, trained with
    ``keep_state=True``: its final weights and bases), used instead of training again (the same model: tested)."""
    from torch.func import functional_call

    from .pipeline import WARMUP_FRACTION

    task = mlp_task(cfg, device="cpu")
    torch.manual_seed(seed)
    model = task.make_model()
    if run is None:
        run = train_pipeline(model, "BR (2nd, bi)", 1, task.batches(seed), task.loss_fn, task.eval_fn, steps=steps,
                             lr=cfg["lr"], eval_every=steps, warmup=max(1, round(WARMUP_FRACTION * steps)),
                             shampoo_beta=cfg["shampoo_beta"], freq=cfg["freq"], seed=seed, keep_state=True)
    elif (run.method, run.P, run.seed) != ("BR (2nd, bi)", 1, seed) or "state" not in run.extra:
        raise ValueError("run must be the P = 1 'BR (2nd, bi)' run of this seed, trained with keep_state=True; got "
                         f"{(run.method, run.P, run.seed)}" + ("" if "state" in run.extra else " without its state"))
    elif "stopped_at" in run.extra or len(run.train_loss) != steps:
        raise ValueError(f"run must be a full {steps}-step run")
    model.load_state_dict(run.extra["state"])
    if not 0 <= block < len(model.blocks):
        raise ValueError(f"block must be in [0, {len(model.blocks)}), got {block}")
    W = next(m.weight for m in model.blocks[block].modules() if isinstance(m, torch.nn.Linear))
    name = next(n for n, p in model.named_parameters() if p is W)
    U, V = run.extra["bases"][name]
    m, n = W.shape
    U = torch.eye(m, dtype=torch.float64) if U is None else U.detach().double()
    V = torch.eye(n, dtype=torch.float64) if V is None else V.detach().double()
    Ur = torch.tensor(random_rotation(m, 7919 + 2 * seed))
    Vr = torch.tensor(random_rotation(n, 7920 + 2 * seed))
    data = teacher_data(cfg)
    x, y = data.x_train[:n_hessian].double(), data.y_train[:n_hessian].double()
    model = model.double()
    W0 = W.detach().double().clone()

    for p in model.parameters():
        p.requires_grad_(False)
    w = W0.clone().requires_grad_(True)
    gw = torch.autograd.grad(F.mse_loss(functional_call(model, {name: w}, (x,)), y), w, create_graph=True)[0]

    def hvp(v):                   # a backward pass through the gradient's graph, kept for every draw
        return torch.autograd.grad(gw, w, v.reshape(m, n), retain_graph=True)[0].reshape(-1).detach()

    def in_basis(A, B):           # the HVP of K^T H K with K = A (x) B, for a row-major vec
        return lambda z: (A.T @ hvp((A @ z.reshape(m, n) @ B.T).reshape(-1)).reshape(m, n) @ B).reshape(-1)

    l11 = cauchy_l11_estimate(hvp, m * n, draws, seed)
    l11_rot = cauchy_l11_estimate(in_basis(U, V), m * n, draws, seed)
    l11_rand = cauchy_l11_estimate(in_basis(Ur, Vr), m * n, draws, seed)
    gen = torch.Generator().manual_seed(seed)
    Z = torch.randint(0, 2, (draws, m * n), generator=gen, dtype=torch.int64).double() * 2 - 1
    tr = float(np.mean([float(z @ hvp(z)) for z in Z]))
    ex = None
    if exact:
        H = weight_hessian(lambda w_: F.mse_loss(functional_call(model, {name: w_}, (x,)), y), W0)
        ex = {"l11": float(H.abs().sum()), "l11_rot": float(rotate_hessian(H, U, V, (m, n)).abs().sum()),
              "l11_rand": float(rotate_hessian(H, Ur, Vr, (m, n)).abs().sum()), "trace": float(torch.diagonal(H).sum())}
    return {"exact": ex, "l11": l11, "l11_rot": l11_rot, "l11_rand": l11_rand, "trace": tr, "ratio": l11_rot / l11,
            "ratio_rand": l11_rand / l11, "r_orig": l11 / tr, "r_rot": l11_rot / tr, "shape": (m, n), "block": block}


def seed_slowdown(it_P: tuple[np.ndarray, np.ndarray], it_1: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed slowdown ``iterations(P) / iterations(1)`` from two :func:`seed_iterations` results, and the
    seeds where it is only a lower bound.

    A seed whose ``P = 1`` run is censored has no slowdown (NaN: its denominator is a bound, the ratio
    nothing); a seed censored at ``P`` only has a slowdown that is a *lower* bound (``lower`` True)."""
    (iP, cP), (i1, c1) = it_P, it_1
    c1 = np.asarray(c1, bool)
    sd = np.where(c1, np.nan, np.asarray(iP, float) / np.asarray(i1, float))
    return sd, np.asarray(cP, bool) & ~c1


def censoring_reason(claim_side: str, parts: dict, interval: tuple[float, float] | None = None,
                     threshold: float | None = None, where: str = "the deepest P") -> str:
    """Why a claim built from censored counts cannot be judged here, or ``""`` when it can.

    ``claim_side`` is the declared region's side (``"at_least"`` or ``"at_most"`` ``threshold``). ``parts`` maps
    a name to ``(values per seed, sign, lower)``: a slowdown or an iteration count, ``sign = +1`` when the claimed
    quantity increases with it and ``-1`` when it decreases, ``lower`` the seeds where it is only a lower bound
    (censored at the deepest ``P``; :func:`seed_slowdown`). A NaN value (censored at ``P = 1``: no slowdown) makes
    the claim untestable. A lower bound on a part makes the claimed value a bound in the direction of ``sign``
    (``+1``: a lower bound, ``-1``: an upper bound); that is the *wrong way* when it could make a pass vacuous: an
    upper bound on a value claimed ``at_least``, a lower bound on one claimed ``at_most``. A miss is still a miss:
    when ``interval`` (the value's confidence interval) already lies wholly outside the region, a wrong-way bound
    only pushes it further out, and no reason is returned for it. ``where`` names the depth of the ``lower``
    flags in the reason (``"P = 1"`` for a comparison of synchronous counts)."""
    if claim_side not in ("at_least", "at_most"):
        raise ValueError(f"claim_side must be 'at_least' or 'at_most', got {claim_side!r}")
    outside = False
    if interval is not None and threshold is not None and all(np.isfinite(interval)):
        outside = interval[1] < threshold if claim_side == "at_least" else interval[0] > threshold
    why = []
    for name, (values, sign, lower) in parts.items():
        values = np.asarray(values, float)
        if np.isnan(values).any():
            why.append(f"{name} never reaches the target at P = 1 in some seed (no slowdown)")
            continue
        if not np.asarray(lower, bool).any() or sign not in (1, -1):
            continue
        value_bound = "lower" if sign > 0 else "upper"
        wrong = (claim_side == "at_least") == (value_bound == "upper")
        if wrong and not outside:
            why.append(f"{name} is censored at {where} in some seed: its count is a lower bound, which makes "
                       f"the claimed value {'a lower' if value_bound == 'lower' else 'an upper'} bound, the wrong way for this region")
    return "; ".join(why)


# ---------------------------------------------------------------------- coverage: depth, stashing
def depth_growth(runs: dict, method: str, Ps: Sequence[int], target: float, steps: int) -> dict:
    """Per-seed growth of ``method``'s slowdown between the two deepest pipelines run (the depth pathology):
    ``slowdown(P_deep) - slowdown(P_prev)``, slowdowns against the method's own ``P = 1`` (:func:`seed_slowdown`;
    ``P_prev = 1`` gives slowdown 1 exactly). Returns the difference, both slowdowns, their ``lower`` flags (a
    seed censored at that depth only: a lower bound) and the depths; a seed censored at ``P = 1`` is NaN."""
    Ps = sorted(int(p) for p in Ps)
    if len(Ps) < 2 or Ps[0] != 1:
        raise ValueError(f"depth_growth needs P = 1 and at least one deeper P, got {tuple(Ps)}")
    P_deep, P_prev = Ps[-1], Ps[-2]
    it1 = seed_iterations(runs, method, 1, target, steps)
    sd_deep, lo_deep = seed_slowdown(seed_iterations(runs, method, P_deep, target, steps), it1)
    if P_prev == 1:
        sd_prev, lo_prev = np.where(np.isnan(sd_deep), np.nan, 1.0), np.zeros_like(lo_deep)
    else:
        sd_prev, lo_prev = seed_slowdown(seed_iterations(runs, method, P_prev, target, steps), it1)
    return {"diff": sd_deep - sd_prev, "sd_deep": sd_deep, "sd_prev": sd_prev, "lower_deep": lo_deep,
            "lower_prev": lo_prev, "P_deep": P_deep, "P_prev": P_prev}


def final_loss(run: TrainRun, last: int = 3) -> tuple[float, bool]:
    """Mean of the last ``last`` evaluation losses, and whether the run diverged. A diverged run counts as having
    learnt nothing: its value is its *first* evaluation loss (after one step), a lower bound on its real final
    loss (which is infinite)."""
    if last < 1:
        raise ValueError("last must be >= 1")
    if "diverged_at" in run.extra:
        return float(run.eval_loss[0]), True
    return float(np.mean(run.eval_loss[-last:])), False


def stash_degradation(runs_off: dict, runs_on: dict, method: str, P: int, last: int = 3) -> dict:
    """Per-seed ``log(final loss without weight stashing / with it)`` of ``method`` at ``P`` (:func:`final_loss`),
    seeds in order. ``lower``: the run without stashing diverged (the log-ratio is a lower bound); ``upper``: the
    run with stashing diverged (an upper bound)."""
    def per_seed(runs):
        sel = sorted(((s, r) for (m, p, s), r in runs.items() if m == method and p == P), key=lambda x: x[0])
        if not sel:
            raise KeyError(f"no run for {method!r} at P = {P}")
        return [s for s, _ in sel], [final_loss(r, last) for _, r in sel]
    s_off, off = per_seed(runs_off)
    s_on, on = per_seed(runs_on)
    if s_off != s_on:
        raise ValueError(f"the two sets of runs have different seeds: {s_off} vs {s_on}")
    return {"log_ratio": np.log([a[0] / b[0] for a, b in zip(off, on)]), "lower": np.array([a[1] for a in off]),
            "upper": np.array([b[1] for b in on]), "seeds": s_off}


def intersection_union(summaries: dict, threshold: float = 0.0) -> tuple[str, object]:
    """The one interval that decides an intersection-union test of "every value > ``threshold``" over several
    :class:`~icml26.stats.SeedSummary` (one per baseline): `icml26.stats.intersection_union` at that bound (an
    undefined one first, else one wholly below, else the lowest lower end). Returns ``(name, summary)``."""
    from ..stats import intersection_union as iut

    return iut(summaries, threshold)


def stash_mode_gaps(P: int = 4, steps: int = 20, seed: int = 0, width: int = 16, lr: float = 1e-2) -> dict:
    """Checks of the emulator's no-stashing mode on a small deep MLP trained with AdamW (CPU, float32):
    ``sync_gap``, the largest |difference| of the final weights between ``stash=False`` with every delay 0 and
    synchronous training (0 exactly: the boundary substitution changes no value and no gradient), and
    ``mode_gap``, the same between ``stash=True`` and ``stash=False`` with the 1F1B delays (> 0: forward and
    backward at different versions change the gradients). Both runs of a pair see the same data and initialisation."""
    from .pipeline import AsyncPipeline

    data = TeacherRegression(d_in=8, d_out=2, n_train=256, n_eval=16, teacher_width=8, teacher_depth=2, seed=0)

    def train(stash: bool, delays) -> list[torch.Tensor]:
        torch.manual_seed(seed)
        model = DeepMLP(8, width, P, 2)
        stages = split_stages(model, P)
        pipe = AsyncPipeline(model, stages, stash=stash, delays=delays)
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        stream = data.batches(32, seed)
        for _ in range(steps):
            x, y = next(stream)
            pipe.forward_backward(lambda: F.mse_loss(model(x), y))
            opt.step()
            pipe.push()
        return [p.detach().clone() for p in model.parameters()]

    def sync() -> list[torch.Tensor]:
        torch.manual_seed(seed)
        model = DeepMLP(8, width, P, 2)
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        stream = data.batches(32, seed)
        for _ in range(steps):
            x, y = next(stream)
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
        return [p.detach().clone() for p in model.parameters()]

    gap = lambda a, b: max(float((u - v).abs().max()) for u, v in zip(a, b))
    return {"sync_gap": gap(train(False, [0] * P), sync()),
            "mode_gap": gap(train(False, None), train(True, None)), "P": P, "steps": steps}
