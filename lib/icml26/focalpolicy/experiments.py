"""What the notebook runs: variants, training of seed ensembles, evaluation on ChunkReach2D and MetaWorld."""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from . import metrics as M
from .data import ChunkDataset, make_chunks
from .env import ChunkReach2D, collect_demos
from .policies import ChunkPolicy, make_policy
from .runner import ChunkedRunner, Rollout
from .train import train_policy

VARIANTS: dict[str, dict] = {
    "FlowPolicy-H4": dict(kind="flowpolicy", horizon=4, n_action_steps=3),
    "FlowPolicy-H12": dict(kind="flowpolicy", horizon=12),
    "FocalPolicy": dict(kind="focal", w_f=1e-4),
    "-LAS": dict(kind="focal", w_f=1e-4, sampler="consistency", delta=0.01),
    "-FCO": dict(kind="focal", full_horizon=True),
    "w_f=0": dict(kind="focal", w_f=0.0),
    "w_f=1e-2": dict(kind="focal", w_f=1e-2),
    "w_f=1": dict(kind="focal", w_f=1.0),
    "adaptive": dict(kind="focal", w_f=1e-4, freq="adaptive"),
    "window 1-4": dict(kind="focal", w_f=1e-4, window_start=1),
    "LAS 3c0af28": dict(kind="focal", w_f=1e-4, las_commit="3c0af28"),
    "FlowPolicy-H12+FCO": dict(kind="flowpolicy", horizon=12, fco=True, w_f=1e-4),
    "FlowPolicy-H12+LAS": dict(kind="flowpolicy", horizon=12, sampler="las", segments=1),
    "FM-10": dict(kind="fm", steps=10),
    "FM-10+FCO": dict(kind="fm", steps=10, fco=True, w_f=1e-4),
}
"""Every policy of the chapter (brief §5.2): FlowPolicy (horizon 4 executes 3, as DP3/FlowPolicy on
MetaWorld), FocalPolicy and its ablations (-FCO: the time loss on the whole horizon, no frequency term;
-LAS: r = t + 0.01; the w_f sweep; the unused adaptive frequency loss; the time window on the executed
indices 1-4 (the paper as drawn: figs/pipeline.png puts the time loss on "Chunk 1 Execution"); the LAS
configuration of the official side branch ``original``, 3c0af28; every other LAS user takes the default branch's,
915f7bc), the modules plugged into FlowPolicy at the
same horizon (FlowPolicy-H12+FCO, FlowPolicy-H12+LAS: the paper's "generalizability" test), FM-10 and FM-10
with the FCO plugged in."""

W_F_SWEEP = ("w_f=0", "FocalPolicy", "w_f=1e-2", "w_f=1")


def training_groups(names: Sequence[str]) -> list[tuple[str, ...]]:
    """Variants trained together: the FocalPolicy variants that differ only in w_f share one ensemble."""
    names = list(names)
    for n in names:
        if n not in VARIANTS:
            raise ValueError(f"unknown variant {n!r}; valid: {', '.join(VARIANTS)}")
    sweep = tuple(n for n in W_F_SWEEP if n in names)
    groups = [sweep] if len(sweep) > 1 else []
    groups += [(n,) for n in names if not (len(sweep) > 1 and n in sweep)]
    return groups


@dataclass
class VariantRun:
    name: str
    policies: list[ChunkPolicy]                       # one per seed (EMA weights)
    losses: np.ndarray                                # (steps,) mean over the seeds of the group
    evals: dict[int, list[dict]] = field(default_factory=dict)   # step -> per-seed validation metrics


def validation_metrics(policy: ChunkPolicy, val: ChunkDataset, seed: int = 0) -> dict:
    """One-shot predictions at held-out demo windows: proximal (indices < n), executed and distal MSE, the MSE
    of every chunk index (``per_index``, in action units squared) and, per index, the correlation of the
    normalised prediction with the input noise (``noise_corr``: 1 when the one-step map passes the noise
    through untouched, ~0 when it cancels it; ``A = x + v(x, 0.01)``, so an index the loss leaves untrained
    keeps ``x``).

    Works on a seed ensemble (returns per-member lists) and on a single policy (one-element lists).
    """
    S = policy.members
    g = torch.Generator().manual_seed(10_000 + seed)
    obs = val.obs.repeat(S, 1, 1)
    noise = torch.randn(obs.shape[0], policy.horizon, policy.action_dim, generator=g)
    pred = policy.predict_action(obs, noise=noise)["action_pred"].reshape(S, len(val), policy.horizon, -1)
    err = (pred - val.action[None]) ** 2
    n, s0 = policy.n_action_steps, policy.n_obs_steps - 1
    out = {"proximal": err[:, :, :n].mean((1, 2, 3)).tolist(),
           "executed": err[:, :, s0:s0 + n].mean((1, 2, 3)).tolist()}
    out["distal"] = err[:, :, n:].mean((1, 2, 3)).tolist() if policy.horizon > n else [float("nan")] * S
    out["per_index"] = err.mean((1, 3)).tolist()
    pn = policy.act_norm.normalize(pred.to(policy.device)).cpu()          # (S, N, T, D) normalised
    z = noise.reshape(S, len(val), policy.horizon, -1)
    pc, zc = pn - pn.mean(1, keepdim=True), z - z.mean(1, keepdim=True)
    corr = (pc * zc).sum(1) / (pc.pow(2).sum(1).sqrt() * zc.pow(2).sum(1).sqrt()).clamp_min(1e-12)   # (S, T, D)
    out["noise_corr"] = corr.mean(-1).tolist()
    return out


def train_group(group: Sequence[str], demos: list[dict], val_demos: list[dict], seeds: Sequence[int], rc: Mapping,
                obs_dim: int, action_dim: int, n_obs_steps: int = 2, batch_size: int = 128,
                weight_decay: float = 1e-6) -> dict[str, VariantRun]:
    """Train one group of variants (`training_groups`) over ``seeds`` as one ensemble; evaluate on the way.

    ``rc``: ``network`` (``"mlp"`` | ``"unet"``), ``net`` (its keyword arguments), ``steps``, ``lr``, ``warmup``,
    ``eval_steps`` (validation metrics recorded at these steps: the training curves)."""
    base = dict(VARIANTS[group[0]])
    horizon, n_act = base.get("horizon", 12), base.get("n_action_steps", 4)
    data = make_chunks(demos, horizon, n_obs_steps, n_act)
    val = make_chunks(val_demos, horizon, n_obs_steps, n_act)
    S = len(seeds)
    if len(group) > 1:        # the w_f sweep: member (i, s) = variant i, seed s
        base["w_f"] = [VARIANTS[name]["w_f"] for name in group for _ in seeds]
    members = S * len(group)
    torch.manual_seed(int(seeds[0]) * 1000 + 7)
    network = rc["network"]
    net_kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in dict(rc.get("net", {})).items()}
    net_kwargs["members"] = members
    policy = make_policy(base, obs_dim, action_dim, network, net_kwargs, n_obs_steps)
    evals = {step: (lambda p: validation_metrics(p, val)) for step in rc["eval_steps"] if step <= rc["steps"]}
    res = train_policy(policy, data, rc["steps"], seed=int(seeds[0]), batch_size=batch_size, lr=rc["lr"],
                       weight_decay=weight_decay, warmup=rc["warmup"], eval_every=evals)
    out = {}
    for i, name in enumerate(group):
        idx = [i * S + j for j in range(S)]
        out[name] = VariantRun(name, [res.policy.member(k) for k in idx], np.asarray(res.losses),
                               {step: [{k: v[m] for k, v in ev.items()} for m in idx] for step, ev in res.evals.items()})
    return out


def train_variants(names: Sequence[str], demos, val_demos, seeds, rc, obs_dim, action_dim, progress=None, **kw):
    """`train_group` for every group of ``names`` (the seeds of a group train as one ensemble)."""
    runs: dict[str, VariantRun] = {}
    groups = training_groups(names)
    it = progress(groups, desc="variants") if progress else groups
    for group in it:
        runs.update(train_group(group, demos, val_demos, seeds, rc, obs_dim, action_dim, **kw))
    return runs


def curve_values(run: VariantRun, key: str = "executed") -> tuple[list[int], list[list[float]]]:
    """(steps, seeds x steps) of a validation metric recorded during training: a training curve for the ledger."""
    steps = sorted(run.evals)
    return steps, [[run.evals[st][s][key] for st in steps] for s in range(len(run.policies))]


class PlantedOffset:
    """Positive control of the coherence tests: ``policy`` with a random offset of size ``h`` added to every
    action of each executed chunk (one offset per chunk, a random direction): the interior steps of a chunk are
    unchanged and every chunk boundary gets a jump, an inter-chunk discontinuity planted by construction."""

    def __init__(self, policy: ChunkPolicy, h: float, seed: int = 0):
        if not h > 0:
            raise ValueError(f"the planted offset must be > 0, got {h}")
        self.policy, self.h = policy, h
        self.n_obs_steps, self.n_action_steps = policy.n_obs_steps, policy.n_action_steps
        self._g = torch.Generator().manual_seed(seed)

    def predict_action(self, obs, generator=None) -> dict:
        out = self.policy.predict_action(obs, generator=generator)
        B, D = out["action"].shape[0], out["action"].shape[-1]
        d = torch.randn(B, 1, D, generator=self._g)
        d = self.h * d / d.norm(dim=-1, keepdim=True)
        return {"action_pred": out["action_pred"], "action": out["action"] + d}


def rollout_metrics(rollouts: list[Rollout], n_action_steps: int) -> dict:
    acts = [r.actions for r in rollouts]
    jb, _ = zip(*[M.boundary_and_interior_jumps(a, n_action_steps) for a in acts]) if acts else ((), ())
    jb = np.concatenate(jb) if jb else np.zeros(0)
    return {"success": float(np.mean([r.success for r in rollouts])),
            "collision": float(np.mean([r.collision for r in rollouts])),
            "rho": M.boundary_jump_ratio(acts, n_action_steps), "jerk": M.mean_squared_jerk(acts),
            "jb": float(jb.mean()) if jb.size else float("nan"),
            "hfr": M.hf_energy_ratio(acts),
            "switches": float(np.mean([M.side_switches(r.observations[:, :2]) > 0 for r in rollouts]))}


def evaluate_reach(run: VariantRun, mode: str, n_rollouts: int, start_seed: int = 100_000,
                   wrap=None) -> tuple[list[dict], list]:
    """Per-seed rollout metrics on ChunkReach2D (the same ``n_rollouts`` start/goal draws for every policy);
    ``wrap(policy, seed)`` wraps each seed's policy (the planted-offset positive control)."""
    per_seed, rollouts = [], []
    for s, pol in enumerate(run.policies):
        pol = wrap(pol, s) if wrap is not None else pol
        runner = ChunkedRunner(lambda: ChunkReach2D(mode), max_steps=200)
        ro = runner.run(pol, range(start_seed, start_seed + n_rollouts), generator=torch.Generator().manual_seed(s))
        per_seed.append(rollout_metrics(ro, pol.n_action_steps))
        rollouts.append(ro)
    return per_seed, rollouts


def fixed_start_sides(run: VariantRun, n_rollouts: int, start=(-0.8, 0.1), goal=(0.8, 0.2)) -> list[dict]:
    """From one start/goal (default: the centre of the training starts and goals on the y > 0 side), the side each rollout passes the obstacle on (y at x = 0), per seed."""
    out = []
    for s, pol in enumerate(run.policies):
        runner = ChunkedRunner(lambda: ChunkReach2D("multimodal"), max_steps=200)
        ro = runner.run(pol, range(n_rollouts), generator=torch.Generator().manual_seed(500 + s),
                        options={"start": start, "goal": goal})
        ys = np.array([M.crossing_side(r.observations[:, :2]) for r in ro])
        above, below = np.mean(ys > 0), np.mean(ys < 0)
        out.append({"y_cross": ys, "above": float(above), "below": float(below), "minority": float(min(above, below)),
                    "collision": float(np.mean([r.collision for r in ro])),
                    "success": float(np.mean([r.success for r in ro]))})
    return out


def start_state_endpoints(run: VariantRun, n_samples: int, start=(-0.8, 0.1), goal=(0.8, 0.2)) -> list[dict]:
    """Predicted chunks at one start state (history = the start twice, as at reset), per seed: the endpoint of
    the *executed* window, ``start + sum of the executed deltas`` (indices ``n_obs - 1 .. n_obs - 2 + n``; the
    distal indices, which the released loss barely trains, are left out), and the side of its y."""
    out = []
    for s, pol in enumerate(run.policies):
        o = np.concatenate([start, goal]).astype(np.float32)
        obs = torch.tensor(np.tile(o, (n_samples, pol.n_obs_steps, 1)))
        pred = pol.predict_action(obs, generator=torch.Generator().manual_seed(900 + s))["action_pred"].numpy()
        s0 = pol.n_obs_steps - 1
        end_y = start[1] + pred[:, s0:s0 + pol.n_action_steps, 1].sum(1)
        above, below = float(np.mean(end_y > start[1])), float(np.mean(end_y < start[1]))
        out.append({"end_y": end_y, "above": above, "below": below, "minority": min(above, below)})
    return out


def chunk_w2(run: VariantRun, val_demos: list[dict], n: int = 256, seed: int = 0) -> list[float]:
    """Sliced W2 between one-shot predicted chunks and demonstrated chunks at held-out windows, per seed."""
    pol0 = run.policies[0]
    val = make_chunks(val_demos, pol0.horizon, pol0.n_obs_steps, pol0.n_action_steps)
    idx = torch.randperm(len(val), generator=torch.Generator().manual_seed(seed))[:n]
    out = []
    for s, pol in enumerate(run.policies):
        pred = pol.predict_action(val.obs[idx], generator=torch.Generator().manual_seed(s))["action_pred"]
        out.append(M.sliced_w2(pred.numpy(), val.action[idx].numpy(), seed=seed))
    return out


def reach_demos(n_demos: int, val_demos: int, mode: str, seed: int = 0):
    return collect_demos(n_demos, mode, seed), collect_demos(val_demos, mode, seed + 99)


def metaworld_experiment(task: str, methods: Sequence[str], seeds: Sequence[int], mc: Mapping, rc_template: Mapping,
                         progress=None, n_obs_steps: int = 2, batch_size: int = 128) -> dict:
    """State-based MetaWorld: expert demos, train ``methods`` over ``seeds``, roll out; per-method per-seed metrics
    (``methods``) and the training curves (``curves``: executed-window validation MSE on held-out demos)."""
    from . import metaworld_tasks as MW

    # MT1 task indices: evaluation on the last ``rollouts`` tasks; below them, the expert's first n_demos solved
    # tasks are the demos and the next two solved ones the validation windows (unsolved tasks are skipped)
    eval_first = MW.N_TASKS - mc["rollouts"]
    n_val = min(2, mc["n_demos"])
    pool = MW.collect_demos(task, mc["n_demos"] + n_val, first_task=0, max_steps=mc["max_steps"], stop_before=eval_first)
    demos, val = pool[:mc["n_demos"]], pool[mc["n_demos"]:]
    n_eval = 6                 # validation points on the held-out demos: the training curves judged by the convergence rule
    eval_steps = tuple(sorted({round(mc["steps"] * (i + 1) / n_eval) for i in range(n_eval)}))
    rc = dict(rc_template, steps=mc["steps"], lr=mc["lr"], warmup=mc["warmup"], eval_steps=eval_steps,
              network=mc.get("network", rc_template.get("network")), net=mc.get("net", rc_template.get("net", {})))
    runs = train_variants(methods, demos, val, seeds, rc, 39, 4, progress=progress, n_obs_steps=n_obs_steps,
                          batch_size=batch_size)
    out = {"demo_len": float(np.mean([len(d["actions"]) for d in demos])), "methods": {},
           "curves": {name: curve_values(runs[name], "executed") for name in methods}}
    expert_acts = [d["actions"] for d in demos]
    out["expert"] = {"rho": M.boundary_jump_ratio(expert_acts, 4), "jerk": M.mean_squared_jerk(expert_acts),
                     "success": float(MW.expert_success(task, range(eval_first, MW.N_TASKS), mc["max_steps"]).mean())}
    runner = ChunkedRunner(lambda: MW.make_env(task, mc["max_steps"]), max_steps=mc["max_steps"])
    for name in methods:
        per_seed = []
        for s, pol in enumerate(runs[name].policies):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ro = runner.run(pol, range(eval_first, MW.N_TASKS), generator=torch.Generator().manual_seed(s))
            per_seed.append(rollout_metrics(ro, pol.n_action_steps))
        out["methods"][name] = per_seed
    runner.close()
    return out
