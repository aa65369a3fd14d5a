"""Sizes of the birqa chapter at the three scales (DESIGN.md "Three scales, one notebook").

Same keys at every scale. Times are for the whole notebook (``repro run birqa``, one torch thread, a 2-core
machine shared with other jobs); see the comments next to each preset.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    seed=0, size=32, side=64, n_crops=1, window=7, levels=3, channels=12,
    lr=1e-2, batch=32, eps_train=4.0 / 255, n_anchors=8, lam=0.1, gamma=1.0, at_lr=1e-3, at_batch=16,
    eps_main=4, eps_list=(2, 4, 8), attack_batch=64,
    ablations=("-CSRAM", "-SCGB", "mean head", "one scale"),
    speed_side=512, speed_rounds=3, speed_threads=2,
)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: 20 refs x 8 types x 3 levels = 480 pairs (336 train / 144 test), 1 seed. Measured 46 s for the whole
    # notebook (repro run; 39 s inside: attacks 11.0, train 8.4, data 2.7, ablations 2.4, Deep-FR 1.9, speed 1.6)
    "smoke": dict(_COMMON, ablations=("-CSRAM", "one scale"), n_kinds=8, dist_levels=(1, 3, 5), epochs=4, at_epochs=1, at_steps=1, seeds=(0,),
                  deepfr_epochs=3, ablation_seeds=(0,), n_attack=72, attack_steps=3,
                  attacks=("fgsm", "ifgsm", "mifgsm", "apgd"), speed_side=256, speed_rounds=2),
    # book: 20 refs x 10 types x 5 levels = 1000 pairs (700 train / 300 test), 3 seeds. Measured 177 s for the whole
    # notebook (repro run; 172 s inside: attacks 51.6, train 46.0, ablations 45.4, speed 7.4, Deep-FR 5.2, data 2.8)
    "book": dict(_COMMON, n_kinds=10, dist_levels=(1, 2, 3, 4, 5), epochs=6, at_epochs=1, at_steps=2, seeds=(0, 1, 2),
                 deepfr_epochs=6, ablation_seeds=(0, 1, 2), n_attack=120, attack_steps=5,
                 attacks=("fgsm", "ifgsm", "mifgsm", "apgd")),
    # full: 20 refs x 2 crops x 18 types x 5 levels = 3600 pairs (2520 train), 3 seeds, longer schedules. Not run;
    # estimated from the book sections scaled by their work: AT/AAT ~400 s (3.6x pairs, 3 epochs, PGD-3), ablations
    # ~330 s, attacks ~330 s (400 pairs, 10 steps), vanilla ~110 s, Deep-FR ~40 s, data ~10 s: ~20 min on the
    # shared 2-core machine, inside the 45 min budget. No GPU variant: the chapter's code runs on the CPU.
    "full": dict(_COMMON, n_crops=2, n_kinds=18, dist_levels=(1, 2, 3, 4, 5), epochs=12, at_epochs=3, at_steps=3,
                 seeds=(0, 1, 2), deepfr_epochs=12, ablation_seeds=(0, 1, 2), n_attack=400,
                 attack_steps=10, attacks=("fgsm", "ifgsm", "mifgsm", "apgd")),
}
