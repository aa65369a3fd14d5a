"""icml26: the thin library behind the ICML 2026 reproduction book.

The chapter runtime (scales, seeding, claims ledger, figure style, glue) lives at the top level;
each paper's model code lives in its own subpackage, ``icml26.<slug with _>``.
"""
from __future__ import annotations

from .chapter import Chapter
from .checks import at_least, at_most, between, close_to, equals, fails, is_true
from .convergence import TrainingCurve
from .ledger import INCONCLUSIVE, KINDS, NOT_REACHED, NOT_REPRODUCED, REPRODUCED, STATUSES, ClaimFailed, ClaimsIncomplete
from .progress import progress
from .registry import CHAPTERS, SLUGS, chapter_info
from .scales import SCALES, ScaleError, resolve_scale, select_preset
from .seeding import device, seed_everything
from .stats import SeedSummary, over_seeds, paired_difference
from .timing import SpeedRatio, interleaved_best, speed_ratio
from .style import method_colors, use_book_style

__version__ = "0.1.0"

__all__ = [
    "CHAPTERS", "Chapter", "ClaimFailed", "ClaimsIncomplete", "INCONCLUSIVE", "KINDS", "NOT_REACHED", "NOT_REPRODUCED",
    "REPRODUCED", "SCALES", "SLUGS", "STATUSES", "ScaleError", "SeedSummary", "SpeedRatio", "TrainingCurve", "at_least",
    "at_most", "between", "chapter_info", "close_to", "device", "equals", "fails", "interleaved_best", "is_true",
    "method_colors", "over_seeds", "paired_difference", "progress", "resolve_scale", "seed_everything",
    "select_preset", "speed_ratio", "use_book_style",
]
