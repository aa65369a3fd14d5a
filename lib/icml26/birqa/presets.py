"""Sizes of the birqa chapter at the three scales (DESIGN.md "Three scales, one notebook").

Same keys at every scale. Times are for the whole notebook (``repro run birqa``, one torch thread, a 2-core
machine shared with other jobs); see the comments next to each preset. ``full`` carries a ``gpu`` variant,
applied only when ``icml26.device()`` is CUDA (the chapter's data, models and attacks are device-aware).

Robustness protocol (attacks.py): the lab's rank-direction attack at eps_main / 255 with FGSM and PGD (the
training algorithm) and the unseen MI-FGSM and ART's APGD; the eps sweep over the lab's grid
{2, 4, 6, 8, 10}/255 with ``sweep_attack``. AT and AAT: PGD in both directions, ``at_steps`` steps of
2.5 eps / at_steps, ``at_epochs`` epochs fine-tuning the converged vanilla model (the clean control ``more``
gets the same epochs).
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    seed=0, size=32, side=64, n_crops=1, window=7, levels=3, channels=12,
    lr=1e-2, batch=32, eps_train=4.0 / 255, n_anchors=8, lam=0.1, gamma=1.0, at_lr=1e-3, at_batch=16,
    at_penalty=1.0, at_band=64,
    eps_main=4, eps_list=(2, 4, 6, 8, 10), sweep_attack="pgd", pc_scale=0.1, attack_batch=64,
    attacks=("fgsm", "pgd", "mifgsm", "apgd"),
    ablations=("-CSRAM", "-SCGB", "mean head", "one scale"),
    speed_side=512, speed_rounds=3, speed_threads=2,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: 20 refs x 7 types x 3 levels = 420 pairs, 1 seed, one adversarial epoch (no convergence: smoke
    # verdicts on trained models are inconclusive by design). Measured 63 s inside the notebook (repro 70 s) on the
    # shared machine under load (speed 16 s of it: the timing rounds spread 0.17-1.4x, a loaded machine)
    "smoke": dict(_COMMON, ablations=("-CSRAM", "one scale"), n_kinds=7, dist_levels=(1, 3, 5), epochs=4, at_epochs=1,
                  at_steps=1, seeds=(0,), deepfr_epochs=2, ablation_seeds=(0,), n_attack=48, attack_steps=2,
                  eps_list=(2, 8), speed_side=64, speed_rounds=2),
    # book: 20 refs x 10 types x 5 levels = 1000 pairs (700 train / 300 test), 3 seeds, 4 adversarial epochs
    # of PGD-2 (estimated from the smoke timings; to be measured with `repro run birqa --scale book`).
    "book": dict(_COMMON, n_kinds=10, dist_levels=(1, 2, 3, 4, 5), epochs=8, at_epochs=4, at_steps=2, seeds=(0, 1, 2),
                 deepfr_epochs=6, ablation_seeds=(0, 1, 2), n_attack=120, attack_steps=5, speed_side=256),
    # full: 20 refs x 2 crops x 18 types x 5 levels = 3600 pairs (2520 train), 3 seeds, AT and AAT 10 epochs of
    # PGD-3 in both directions, 10-step evaluation attacks on 300 test pairs. Not run in this revision. Estimate
    # from the published full run (1314 s; its 3 adversarial epochs x 2 models x 3 seeds took ~470 s, i.e. ~26 s per
    # model-epoch-seed; its ~22 attack calls per seed on 400 pairs took ~343 s): adversarial training 2 x 10 x 3 x 26
    # = ~1560 s, vanilla + clean control ~140 s, ~40 attack-call equivalents per seed (ART's APGD counted twice) on
    # 300 pairs ~470 s, ablations ~310 s, speed (TOPIQ-like at 512^2) ~40 s, Deep-FR + data ~50 s: ~43 min on the
    # shared 2-core machine, just inside the 45 min budget (smoke measured 63 s inside the notebook, 70 s in repro).
    # gpu: the brief's scale (C = 32, L = 4, 96-px crops, 4 crops per reference, 5 seeds, 20 adversarial epochs);
    # not run (no GPU was lent to this revision).
    "full": dict(_COMMON, n_crops=2, n_kinds=18, dist_levels=(1, 2, 3, 4, 5), epochs=12, at_epochs=10, at_steps=3,
                 seeds=(0, 1, 2), deepfr_epochs=12, ablation_seeds=(0, 1, 2), n_attack=300, attack_steps=10,
                 gpu=dict(size=96, side=192, n_crops=4, levels=4, channels=32, seeds=(0, 1, 2, 3, 4),
                          ablation_seeds=(0, 1, 2, 3, 4), epochs=30, at_epochs=20, at_steps=5, n_attack=1000,
                          attack_batch=256, at_band=128, speed_side=1080)),
}
