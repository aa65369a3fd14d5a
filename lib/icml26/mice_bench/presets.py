"""Sizes of the mice-bench chapter at the three scales (DESIGN.md "Three scales, one notebook").

Same keys at every scale. Wall times of the whole notebook (one torch thread, on the 2-core machine shared
with other jobs) are written next to each preset.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(aggregator="sum", batch=24, lr=2e-3, size=32, edit_fraction=0.25)

PRESETS: dict[str, dict[str, Any]] = {
    # smoke: measured 36-47 s for the whole notebook (repro run, 2 cores shared with ~8 jobs; inside the chapter
    # ~36 s: judge renders + training ~20 s, 2 generators x 120 steps ~6.5 s, baselines ~1 s)
    "smoke": dict(_COMMON, V=6, n_renders=2000, n_test=400, clf_epochs=3, n_train_edit=400,
                  capacities=(8, 128), k3_variant=False, steps=120, seeds=(0,), n_create=120, n_edit=44),
    # book: measured 272 s for the whole notebook (repro run under the lock; inside: judge 70 s, baselines 12 s,
    # 12 generators x 650 steps + scoring 176 s). Too few steps: the learned generators stay at chance (see M2y)
    "book": dict(_COMMON, V=8, n_renders=6000, n_test=1000, clf_epochs=5, n_train_edit=2000,
                 capacities=(8, 32, 128), k3_variant=True, steps=650, seeds=(0, 1, 2), n_create=600, n_edit=300),
    # full: estimated ~25 min on one free core (judge 200k image passes ~8 min, 12 generators x 3000 steps at
    # ~24 ms ~14 min, 36k renders ~1 min, scoring 17 x 3,119 cases ~2 min); not run in this revision
    "full": dict(_COMMON, V=8, n_renders=20000, n_test=2000, clf_epochs=10, n_train_edit=5000,
                 capacities=(8, 32, 128), k3_variant=True, steps=3000, seeds=(0, 1, 2), n_create=1872, n_edit=1247,
                 gpu=dict(size=48, steps=4000, n_renders=30000, clf_epochs=15)),
}
