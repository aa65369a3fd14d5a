"""One gradient step at HalfCheetah-v5 sizes (obs 17, act 6), 3 x 256 networks, batch 256, CPU, one thread.

Like for like (the asserted ratio, the issue's 1.5x target): our batched SAC path configured as SB3's (4 plain ReLU
critics, one actor, alpha, delay 1) against ``stable_baselines3.SAC(n_critics=4).train(gradient_steps=1)``; SB3's
step also samples its replay buffer and logs, ours gets a prebuilt batch (a small advantage to ours, stated).
Reported, not asserted: the full DSAC-AID step (4 Gaussian critics, two actors, alpha; more work than SB3's step,
so its ratio measures the algorithm, not the kernel). torchrl's ``REDQLoss`` is installed but not wired here yet.
Also the ensemble's critic forward + backward three ways: our batched ``baddbmm`` layers, ``torch.func``
``stack_module_state`` + ``vmap``, and a Python loop over 4 modules.

Run: ``pytest benchmarks/bench_dsac_aid.py`` (``make bench``); ratios go to ``results/bench/dsac-aid.json``.
"""
from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from icml26.dsac_aid import BatchedAgent, agent_config
from icml26.timing import interleaved_best, record_bench

ROUNDS = 15
OBS, ACT, B, HIDDEN = 17, 6, 256, (256, 256, 256)


def _batch(g: torch.Generator):
    return {"obs": torch.randn(1, B, OBS, generator=g), "act": torch.rand(1, B, ACT, generator=g) * 2 - 1,
            "rew": torch.randn(1, B, generator=g), "next_obs": torch.randn(1, B, OBS, generator=g), "done": torch.zeros(1, B)}


def _ours(name: str = "SAC", **kw):
    agent = BatchedAgent(agent_config(name, hidden=HIDDEN, batch_size=B, delay=1, **kw), OBS, ACT, 1, seed=0)
    batch = _batch(torch.Generator().manual_seed(0))
    return lambda: agent.update(batch)


def _sb3():
    from stable_baselines3 import SAC

    torch.set_num_threads(1)
    env = gym.make("HalfCheetah-v5")
    model = SAC("MlpPolicy", env, policy_kwargs=dict(net_arch=list(HIDDEN), n_critics=4), batch_size=B, learning_starts=B + 10,
                seed=0, device="cpu")
    model.learn(B + 20)
    return lambda: model.train(gradient_steps=1, batch_size=B)


def test_ratio_dsac_aid_step_vs_sb3_sac_4_critics():
    pytest.importorskip("stable_baselines3")
    torch.set_num_threads(1)
    contenders = {"ours": _ours("SAC", n_critics=4), "aid": _ours("DSAC-AID"), "sb3": _sb3()}
    for fn in contenders.values():
        fn()
    best = interleaved_best(contenders, rounds=ROUNDS)
    ratio = best["ours"] / best["sb3"]
    print(f"\nour SAC(4 critics) {best['ours'] * 1e3:.1f} ms, DSAC-AID {best['aid'] * 1e3:.1f} ms, "
          f"SB3 SAC(n_critics=4) {best['sb3'] * 1e3:.1f} ms, like-for-like ratio {ratio:.2f}")
    record_bench("dsac-aid", "one SAC gradient step, 4 critics, HalfCheetah sizes, 3x256, batch 256 (like for like)",
                 "icml26.dsac_aid batched SAC path (4 critics)", best["ours"],
                 "stable_baselines3.SAC(n_critics=4).train(1)", best["sb3"], rounds=ROUNDS,
                 note="same work; SB3 also samples its buffer and logs; 1 thread")
    record_bench("dsac-aid", "one DSAC-AID step vs one SB3 SAC(n_critics=4) step (algorithm, not kernel)",
                 "icml26.dsac_aid DSAC-AID (4 Gaussian critics, 2 actors, alpha)", best["aid"],
                 "stable_baselines3.SAC(n_critics=4).train(1)", best["sb3"], rounds=ROUNDS,
                 note="DSAC-AID does more work per step (sigma heads, a second actor): not like for like")
    assert ratio <= 1.5


def test_ensemble_layouts_batched_vmap_loop():
    from torch.func import functional_call, stack_module_state

    torch.set_num_threads(1)
    agent = BatchedAgent(agent_config("DSAC-AID", hidden=HIDDEN, batch_size=B), OBS, ACT, 1, seed=0)
    net = agent.critic
    mods = [net.member_as_sequential(e) for e in range(4)]
    for m in mods:
        m.requires_grad_(True)
    params, buffers = stack_module_state(mods)
    base = mods[0]
    x = torch.randn(4, B, OBS + ACT)

    def batched():
        net.zero_grad(set_to_none=True)
        net(x).square().mean().backward()

    def vmapped():
        for p in params.values():
            p.grad = None
        torch.vmap(lambda p, b, xi: functional_call(base, (p, b), (xi,)))(params, buffers, x).square().mean().backward()

    def loop():
        for m in mods:
            m.zero_grad(set_to_none=True)
        sum(m(x[i]).square().mean() for i, m in enumerate(mods)).backward()

    best = interleaved_best({"batched": batched, "vmap": vmapped, "loop": loop}, rounds=ROUNDS)
    print("\ncritic ensemble fwd+bwd (4 x 3x256, batch 256): " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in best.items()))
    record_bench("dsac-aid", "critic ensemble forward+backward, batched vs loop", "icml26.dsac_aid.BatchedMLP (baddbmm)",
                 best["batched"], "Python loop over 4 nn.Sequential", best["loop"], rounds=ROUNDS)
    record_bench("dsac-aid", "critic ensemble forward+backward, batched vs vmap", "icml26.dsac_aid.BatchedMLP (baddbmm)",
                 best["batched"], "torch.func.stack_module_state + vmap", best["vmap"], rounds=ROUNDS)
    assert best["batched"] <= 2.0 * min(best["vmap"], best["loop"])
