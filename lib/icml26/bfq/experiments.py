"""The chapter's experiments, sized by the preset (`icml26.bfq.presets`): toys, offline RL, lambda, speed."""
from __future__ import annotations

import time

import numpy as np
import torch

import dataclasses

from .agent import GRID_KNOB, AgentConfig, BehaviorRegularizedAgent
from .baselines import DiffusionPolicy, FlowMatchingPolicy, NoiseActor
from .data import (TOYS, evaluate, evaluate_bandit, mode_coverage, normalized_score, reference_returns, rollout_dataset,
                   toy_samples)
from .flowmap import FlowMapPolicy
from .metrics import sliced_w2
from .nets import member_generators

BANDIT_DRAWS = 64
"""Bandit actions per member in one scoring "episode" (a block of draws; its score is their mean reward x 100)."""

TOY_METHODS = ("bfq", "bfq_edm", "fm", "fql", "dql")
"""Behaviour models of the toys; their samples: BFQ-1 (and the EDM ablation), FM-1 and FM-10, FQL-1, DQL-5."""


# ------------------------------------------------------------------------------------------- toys
def _toy_model(kind: str, seeds, hidden, pe_dim):
    if kind == "bfq":
        return FlowMapPolicy(seeds, 2, 0, hidden, pe_dim)
    if kind == "bfq_edm":
        return FlowMapPolicy(seeds, 2, 0, hidden, pe_dim, parameterisation="edm")
    if kind in ("fm", "fql"):
        return FlowMatchingPolicy(seeds, 2, 0, hidden, pe_dim)
    if kind == "dql":
        return DiffusionPolicy(seeds, 2, 0, hidden, pe_dim, n_steps=5, max_action=10.0)
    raise ValueError(f"unknown toy method {kind!r}; valid: {', '.join(TOY_METHODS)}")


def fit_toys(kind: str, toys, seeds, steps: int, batch: int, n_data: int, hidden, pe_dim: int = 64,
             lr: float = 3e-4, lam: float = 0.5, progress=None, curve_every: int = 0, curve_n: int = 1000):
    """Fit one behaviour model per (toy, seed) as one ensemble (members = toys x seeds, toy-major).

    Returns ``(model, extra, curve)``; for ``fql`` ``extra`` is the one-step actor distilled from FM-10
    (FQL's BC part without the Q term), else None. With ``curve_every > 0`` and the bandit among the toys,
    ``curve`` lists ``(step, coverage per seed)`` of the model's cheapest sampler (BFQ-1, FM-10) during
    training, from fixed noise.
    """
    toys, seeds = list(toys), list(seeds)
    if steps < 1 or batch < 1 or n_data < 1:
        raise ValueError("steps, batch and n_data must be >= 1")
    member_seeds = [1000 * i + s for i in range(len(toys)) for s in seeds]
    E = len(member_seeds)
    X = torch.stack([torch.as_tensor(toy_samples(toy, n_data, np.random.default_rng(1000 * i + s)))
                     for i, toy in enumerate(toys) for s in seeds])
    model = _toy_model(kind, member_seeds, hidden, pe_dim)
    actor = NoiseActor([m + 77 for m in member_seeds], 2, 0, hidden) if kind == "fql" else None
    params = list(model.parameters()) + (list(actor.parameters()) if actor is not None else [])
    opt = torch.optim.Adam(params, lr=lr)
    gen = member_generators(member_seeds, salt=TOY_METHODS.index(kind) + 11)
    rows = torch.arange(E)[:, None]
    empty = torch.zeros(E, batch, 0)
    it = range(steps) if progress is None else progress(range(steps), desc=f"toys: {kind}")
    curve = []
    bandit = toys.index("bandit") if "bandit" in toys else None
    curve_eps = torch.randn(E, curve_n, 2, generator=torch.Generator().manual_seed(4242))
    for step in it:
        a = X[rows, torch.randint(0, n_data, (E, batch), generator=gen)]
        if kind in ("bfq", "bfq_edm"):
            loss = model.bc_loss(a, empty, gen, lam=lam)
        else:
            loss = model.loss(a, empty, gen)
        if actor is not None:
            z = torch.randn(a.shape, generator=gen)
            with torch.no_grad():
                target = model.sample(empty, z, 10)
            loss = loss + ((actor(empty, z) - target) ** 2).sum(-1).mean(-1)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        if curve_every and bandit is not None and kind in ("bfq", "bfq_edm", "fm") and (step + 1) % curve_every == 0:
            with torch.no_grad():
                z = torch.zeros(E, curve_n, 0)
                x = model.sample(z, curve_eps) if kind != "fm" else model.sample(z, curve_eps, 10)
            rows_b = x.view(len(toys), len(seeds), curve_n, 2)[bandit].numpy()
            curve.append((step + 1, [mode_coverage(r) for r in rows_b]))
    return model, actor, curve


@torch.no_grad()
def toy_sample_sets(models: dict, toys, seeds, n: int, seed: int = 123) -> dict:
    """Samples of every generator variant, ``{variant: array (toys, seeds, n, 2)}``, plus ``data``."""
    toys, seeds = list(toys), list(seeds)
    E = len(toys) * len(seeds)
    gen = torch.Generator().manual_seed(seed)
    eps = torch.randn(E, n, 2, generator=gen)
    empty = torch.zeros(E, n, 0)
    out = {"data": np.stack([toy_samples(toy, n, np.random.default_rng(9_999 + 1000 * i + s))
                             for i, toy in enumerate(toys) for s in seeds])}
    for kind, (model, actor, *_) in models.items():
        if kind == "bfq":
            out["BFQ-1"] = model.sample(empty, eps)
            out["BFQ-2"] = model.sample_steps(empty, eps, 2)
        elif kind == "bfq_edm":
            out["BFQ-1 (EDM form)"] = model.sample(empty, eps)
        elif kind == "fm":
            out["FM-1"] = model.sample(empty, eps, 1)
            out["FM-10"] = model.sample(empty, eps, 10)
        elif kind == "fql":
            out["FQL-1"] = actor(empty, eps)
        elif kind == "dql":
            out["DQL-5"] = model.sample(empty, gen)
    shape = (len(toys), len(seeds), n, 2)
    return {k: np.asarray(v, dtype=np.float64).reshape(shape) for k, v in out.items()}


def toy_metrics(samples: dict, toys, projections: int = 256) -> dict:
    """Sliced W2 of every variant to the data, ``{variant: array (toys, seeds)}``, and bandit coverage."""
    toys = list(toys)
    ref = samples["data"]
    w2 = {k: np.array([[sliced_w2(v[i, j], ref[i, j], projections, seed=i * 100 + j) for j in range(v.shape[1])]
                       for i in range(v.shape[0])]) for k, v in samples.items() if k != "data"}
    cover = {}
    if "bandit" in toys:
        b = toys.index("bandit")
        cover = {k: np.array([mode_coverage(v[b, j]) for j in range(v.shape[1])]) for k, v in samples.items()}
    return {"w2": w2, "coverage": cover}


# ------------------------------------------------------------------------------------------- offline RL
def make_datasets(names, episodes: dict, seed: int = 0) -> dict:
    """The offline datasets by name (``episodes``: per env key)."""
    return {name: rollout_dataset(name, episodes[name.split("-")[0]], seed + k) for k, name in enumerate(names)}


def references(env_keys, episodes: int, seed: int = 7) -> dict:
    return {e: reference_returns(e, episodes, seed) for e in env_keys}


def train_and_score(method: str, dataset, seeds, steps: int, config: AgentConfig, refs: dict, eval_episodes: int,
                    progress=None, desc: str = "") -> dict:
    """Train one method (one ensemble over ``seeds``) and score it; returns per-seed scores and timings."""
    agent = BehaviorRegularizedAgent(method, seeds, dataset, config)
    it = range(steps) if progress is None else progress(range(steps), desc=desc or f"{dataset.name}: {method}")
    t0 = time.perf_counter()
    for _ in it:
        agent.update()
    train_s = time.perf_counter() - t0
    env_key = dataset.name.split("-")[0]
    returns = evaluate(agent, env_key, eval_episodes, seed=2024)
    score = normalized_score(returns, refs[env_key]["ref"], refs[env_key]["random"])
    return {"agent": agent, "returns": returns, "score": score, "train_s": train_s}


def curve_marks(steps: int, points: int, tail: int) -> list[int]:
    """The steps at which a learning curve is scored: ``points - tail`` evenly over the first four fifths of
    the run and ``tail`` evenly over its last fifth, which the book's convergence rule judges
    (`icml26.convergence`: a line over the last fifth). Dense tail points give that line a small
    standard error, so the rule can see a curve that still climbs (`gate_resolution`)."""
    if points < 1 or not 0 <= tail <= points or steps < 1:
        raise ValueError(f"need steps >= 1 and 0 <= tail <= points >= 1, got {steps}, {points}, {tail}")
    head = np.linspace(0.8 * steps / max(points - tail, 1), 0.8 * steps, points - tail) if points > tail else []
    last = np.linspace(0.8 * steps + 0.2 * steps / tail, steps, tail) if tail else []
    return sorted({int(round(x)) for x in [*head, *last] if round(x) >= 1})


def gate_resolution(curve) -> float:
    """The smallest remaining gain the convergence rule would flag on ``curve`` (a recorded
    `icml26.convergence.TrainingCurve`): the allowance plus two standard errors of the tail line's
    improvement. A curve still gaining less than this is called converged, so this is the rule's power."""
    v = curve.verdict()
    return float(v.allowance + 2.0 * v.stderr) if np.isfinite(v.improvement) else float("inf")


def score_episodes(agent, dataset, refs, episodes: int, seed: int, select: int = 0) -> np.ndarray:
    """Per-member, per-episode normalised scores ``(E, episodes)`` (bandit: mean reward x 100 per draw block,
    with ``select`` candidates Q-selected for every method when > 0, `evaluate_bandit`)."""
    if dataset.name == "bandit-offline":
        return np.stack([100.0 * evaluate_bandit(agent, BANDIT_DRAWS, seed + 17 * k, select) for k in range(episodes)], 1)
    env_key = dataset.name.split("-")[0]
    returns = evaluate(agent, env_key, episodes, seed=seed, per_episode=True)
    return normalized_score(returns, refs[env_key]["ref"], refs[env_key]["random"])


def train_grid_and_score(method: str, dataset, seeds, grid, steps: int, config: AgentConfig, refs: dict,
                         eval_episodes: int, curve_points: int = 0, curve_episodes: int = 2, progress=None,
                         desc: str = "", curve_tail: int | None = None, select: int = 0) -> dict:
    """Train ``method`` at every value of its tuning knob (`GRID_KNOB`) x every seed as one ensemble,
    choose the value on *tuning* episodes and score it on *separate* episodes.

    Members are grid-major (``len(grid) x len(seeds)``). After training, each member runs
    ``2 * eval_episodes`` episodes: the first half picks the grid value with the best mean score over the
    seeds (the paper tunes eta per task; every method gets the same number of grid values), the second half
    gives the reported per-seed scores of that value, so the choice does not inflate the reported score.
    With ``curve_points > 0``, every member is also scored on ``curve_episodes`` episodes at the steps of
    `curve_marks` (``curve_tail`` of them in the last fifth; None: evenly spaced), the score-vs-steps
    curves. ``select`` > 0: bandit scores Q-select among that many candidates (`evaluate_bandit`).
    ``bc`` has no knob: pass ``grid=(None,)``.
    Returns per-seed ``score``, the chosen ``value``, ``grid_scores`` (tuning means per value),
    ``curve_steps``/``curve`` (seeds x points, of the chosen value), the ``agent`` and ``train_s``.
    """
    seeds, grid = list(seeds), list(grid)
    if not grid or steps < 1 or eval_episodes < 1:
        raise ValueError("need a non-empty grid, steps >= 1 and eval_episodes >= 1")
    knob = GRID_KNOB.get(method)
    if knob is None and grid != [None]:
        raise ValueError(f"{method} has no tuning knob: pass grid=(None,)")
    members = [1000 * g + s for g in range(len(grid)) for s in seeds]
    cfg = config if knob is None else dataclasses.replace(config, **{knob: tuple(v for v in grid for _ in seeds)})
    agent = BehaviorRegularizedAgent(method, members, dataset, cfg)
    if not curve_points:
        marks = set()
    elif curve_tail is None:
        marks = set(np.linspace(steps / curve_points, steps, curve_points).astype(int).tolist())
    else:
        marks = set(curve_marks(steps, curve_points, curve_tail))
    it = range(1, steps + 1) if progress is None else progress(range(1, steps + 1), desc=desc or f"{dataset.name}: {method}")
    curve_steps, curve = [], []
    train_s = 0.0
    for step in it:
        t0 = time.perf_counter()
        agent.update()
        train_s += time.perf_counter() - t0
        if step in marks:
            curve_steps.append(step)
            # the same episodes (start states, noise) at every point: common random numbers, so the curve's
            # steps differ by the policy alone and the convergence rule's tail line has a small standard error
            curve.append(score_episodes(agent, dataset, refs, curve_episodes, seed=500, select=select).mean(1))
    per_ep = score_episodes(agent, dataset, refs, 2 * eval_episodes, seed=2024, select=select)
    tune = per_ep[:, :eval_episodes].mean(1).reshape(len(grid), len(seeds))
    report = per_ep[:, eval_episodes:].mean(1).reshape(len(grid), len(seeds))
    best = int(np.argmax(tune.mean(1)))
    out = {"agent": agent, "score": report[best], "value": grid[best], "grid_scores": tune.mean(1),
           "all_scores": report, "train_s": train_s, "curve_steps": curve_steps, "curve": None, "best": best}
    if curve:
        c = np.array(curve).reshape(len(curve), len(grid), len(seeds))[:, best, :].T
        out["curve"] = c
    return out


@torch.no_grad()
def action_w2_to_noise_and_data(agent, dataset, members, n: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sliced W2 of each listed member's (unclipped) actions at dataset states to N(0, I) and to the dataset's
    actions at the same states (brief Sec. 5.4.4: the lambda = 0 collapse emits its noise)."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, len(dataset), (n,), generator=g)
    s = dataset.states[idx][None].expand(agent.E, n, -1)
    a = agent.policy_action(s, g).numpy()
    noise = torch.randn(n, dataset.action_dim, generator=g).numpy()
    data = dataset.actions[idx].numpy()
    to_noise = np.array([sliced_w2(a[m], noise, 64, seed=m) for m in members])
    to_data = np.array([sliced_w2(a[m], data, 64, seed=m) for m in members])
    return to_noise, to_data


# ------------------------------------------------------------------------------------------- speed
def speed_models(state_dim: int, action_dim: int, hidden, pe_dim: int = 64) -> dict:
    """One-member networks of each method at the given size, for the timing of action generation."""
    return {"BFQ-1": FlowMapPolicy([0], action_dim, state_dim, hidden, pe_dim),
            "FM-10": FlowMatchingPolicy([0], action_dim, state_dim, hidden, pe_dim),
            "DQL-5": DiffusionPolicy([0], action_dim, state_dim, hidden, pe_dim, n_steps=5),
            "FQL-1": NoiseActor([0], action_dim, state_dim, hidden)}


def action_callables(models: dict, batch: int, state_dim: int, action_dim: int, reps: int) -> dict:
    """Callables generating ``reps`` action batches of size ``batch`` with each method (no grad)."""
    gen = torch.Generator().manual_seed(0)
    s = torch.randn(1, batch, state_dim, generator=gen)
    eps = torch.randn(1, batch, action_dim, generator=gen)

    def run(name):
        model = models[name]

        @torch.no_grad()
        def f():
            for _ in range(reps):
                if name == "BFQ-1":
                    model.sample(s, eps)
                elif name == "FM-10":
                    model.sample(s, eps, 10)
                elif name == "DQL-5":
                    model.sample(s, gen)
                else:
                    model(s, eps)
        return f

    return {name: run(name) for name in models}


def train_step_callables(dataset, config: AgentConfig, methods=("bfq", "dql", "ofql"), reps: int = 5) -> dict:
    """Callables running ``reps`` full gradient steps (critic + actor) of one-member agents."""
    agents = {m: BehaviorRegularizedAgent(m, [0], dataset, config) for m in methods}
    for a in agents.values():
        a.update()

    def run(agent):
        def f():
            for _ in range(reps):
                agent.update()
        return f

    return {m: run(a) for m, a in agents.items()}
