"""Sizes of the icr chapter at the three scales (DESIGN.md "Three scales, one notebook").

Channels ``(c1, c2, c3)`` of the 8x8 U-Net set the feature dimension ``d = c3`` of the ``dec2`` layer.
Wall times of the whole notebook (``repro run icr``) on the shared 2-core development machine are noted
next to each preset.
"""
from __future__ import annotations

from typing import Any

_COMMON: dict[str, Any] = dict(
    seed=0, level=3, layer="dec2", sigma_fix=0.4, ema_beta=0.999, lr=2e-3, heun_steps=18, n_views=8,
    sigma_range=(0.005, 5.0), robust_n=(64, 128, 256, 512, 1297), robust_v=(2, 4, 8, 16), robust_levels=(1, 2, 3, 4),
    memo_threshold=0.1, n_test=500,
)

PRESETS: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, channels=(8, 16, 32), rich_steps=200, rich_bs=64, rich_ckpts=3, n_icr=512, n_sigma=6,
                  limited_n=(16,), limited_steps=250, limited_bs=32, limited_ckpts=4, n_gen=32, probe_max_iter=200,
                  robust_v=(2, 4, 8), robust_levels=(1, 3)),
    "book": dict(_COMMON, channels=(16, 32, 64), rich_steps=1000, rich_bs=64, rich_ckpts=5, n_icr=1297, n_sigma=8,
                 limited_n=(16, 32), limited_steps=1200, limited_bs=32, limited_ckpts=8, n_gen=64, probe_max_iter=1000),
    "full": dict(_COMMON, channels=(32, 64, 128), rich_steps=20000, rich_bs=128, rich_ckpts=12, n_icr=1297, n_sigma=12,
                 limited_n=(16, 32, 64), limited_steps=20000, limited_bs=64, limited_ckpts=15, n_gen=256,
                 probe_max_iter=2000),
}
