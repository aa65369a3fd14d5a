"""Sizes of the constitutional-evolution chapter at the three scales (DESIGN.md "Three scales, one notebook").

Same keys at every scale (the tests run the `full` code path on `smoke` sizes). Measured wall times of the
whole notebook (``repro run``, a 2-core machine shared with other jobs): smoke 14-18 s since the search scores
each generation as one batch (`batch.py`; 17.5 s before, episodes one by one, the same day; the notebook's
own timings: searches 0.73-0.76 s vs 3.2 s, total 10.8-12.5 s vs 13.6 s); full 2,634 s at revision 4,
before batching (commit 1cc0d51: the three GP searches 1,718 s, the sweeps with the talk-world search 507 s,
the K ablation 247 s, SmolLM2 125 s), inside its 2,700 s budget; book and full are not re-timed since. The
run's own ``timings`` in its results JSON are the record.

K4's positive control (`experiments.planted_control`: one more multi-island search per GP seed at the preset's own
GP configuration, from a planted population, plus its 2 x I x pop x K starting-genome episodes and N fresh
episodes) adds, measured with this session's numba kernels on the shared 2-core machine under ``nice``: smoke
~1-2 s (the notebook's ``k4_control`` timing), book ~10 s (3 GP seeds, ~3 s each), full ~65-70 s (3 GP seeds,
~20 s each: one more search of the size of each of the three (multi-island, single-island, random)
that the ``search`` section runs per GP seed).
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    energy0=30.0, f_max=4.0, food_density=0.25, regrowth=0.08, broadcast_cost=0.5, vision=2,
    migrants=1, tournament=3, elite=1, parsimony=0.002,
    hhh_spreads=(0.0, 0.5, 1.0),             # interpretation-noise sensitivity of the HHH stand-in
    density_sweep=(0.15, 0.25, 0.4),         # F5: food density (evaluation of C* and C_des)
    cost_sweep=(0.0, 0.5, 1.0),              # F5: broadcast cost (C_des with and without its BROADCAST rule)
    talk_world=dict(food_patches=3, food_density=0.8, f_max=12.0),  # F5: the world where messages can pay
    richness_sweep=(4.0, 6.0, 8.0, 12.0, 16.0),  # F5: F_max of the talk world's patches (the crossover)
    adversary_damage=(6.0, 12.0, 24.0),      # K1 diagnosis: attack damage under the foraging adversary
    adversary_conflict_q=(0.0, 0.25, 0.5, 1.0),  # K1 diagnosis: probability of the adversary's conflict rules
    rank_delta=0.02, rank_sigma=0.05,        # the brief's ranking-probability example (Theory)
    interactive_episodes=3,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: no SmolLM2; 1 GP seed.
    "smoke": dict(_COMMON, grid=10, n_agents=8, steps=60, islands=2, pop=6, generations=4, K=2,
                  migrate_every=2, gp_seeds=(0,), n_eval=5, workers=1, llm=False,
                  k_ablation=(1,), k_ablation_seeds=(0,), sweep_generations=3, rank_sims=2000),
    # book: 3 GP seeds x 10 fresh evaluation seeds, equal-evaluation ablations, a talk-world GP on each GP seed
    # (the default world's G),
    # SmolLM2 reading of 4 texts in 64 situations.
    "book": dict(_COMMON, grid=12, n_agents=10, steps=80, islands=3, pop=8, generations=16, K=3,
                 migrate_every=4, gp_seeds=(0, 1, 2), n_eval=10, workers=2, llm=True,
                 k_ablation=(1, 5), k_ablation_seeds=(0,), sweep_generations=16, rank_sims=20000),
    # full: the brief's search (I 4 x n 16, G 30, M 3, K 5 = 9,600 episodes of T = 150 per GP run, x 3 GP seeds
    # x 3 searches), N = 20 fresh seeds, the talk world's search at the same G, the K = 2 ablation on one seed; a GPU changes nothing here (numpy
    # agents) except the SmolLM2 reading, which is small at either size.
    "full": dict(_COMMON, grid=15, n_agents=12, steps=150, islands=4, pop=16, generations=30, K=5,
                 migrate_every=3, gp_seeds=(0, 1, 2), n_eval=20, workers=2, llm=True,
                 k_ablation=(2,), k_ablation_seeds=(0,), sweep_generations=30, rank_sims=50000),
}
