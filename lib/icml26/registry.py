"""The book's chapters: one entry per ICML 2026 paper, grouped into parts by field.

The registry is the single list the `repro` command, the table of contents test and the scorecard
agree on. A chapter is *written* when `notebooks/<slug>.ipynb` exists.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChapterInfo:
    slug: str
    title: str
    part: str

    @property
    def package(self) -> str:
        """Name of the chapter's subpackage in `icml26` (dashes become underscores)."""
        return self.slug.replace("-", "_")


OPTIMIZATION = "Optimization and training at scale"
THEORY = "Learning theory, sampling and interpretable models"
GENERATIVE = "Generative models, vision and signals"
DECISIONS = "Reinforcement learning and control"
LANGUAGE = "Language models and agents"

CHAPTERS: tuple[ChapterInfo, ...] = (
    ChapterInfo("lion", "Convergence Analysis of the Lion Optimizer in Centralized and Distributed Settings", OPTIMIZATION),
    ChapterInfo("basis-rotation", "Mitigating Staleness in Asynchronous Pipeline Parallelism via Basis Rotation", OPTIMIZATION),
    ChapterInfo("cqf", "Removing Noise, not Finding Gold: Quality Filtering for Large-Scale Pretraining", OPTIMIZATION),
    ChapterInfo("ate-mixtures", "Sampling and Identity-Testing Without Approximate Tensorization of Entropy", THEORY),
    ChapterInfo("ecsel", "ECSEL: Explainable Classification via Signomial Equation Learning", THEORY),
    ChapterInfo("mbr", "Noisy-Channel Minimum Bayes Risk Decoding", THEORY),
    ChapterInfo("icr", "Evaluating the Representation Space of Diffusion Models via Self-Supervised Principles", GENERATIVE),
    ChapterInfo("infer", "INFER: Learning Implicit Neural Frequency Response Fields", GENERATIVE),
    ChapterInfo("ambisur", "Revisiting Photometric Ambiguity for Accurate Gaussian-Splatting Surfaces (AmbiSuR)", GENERATIVE),
    ChapterInfo("birqa", "BiRQA: Bidirectional Robust Quality Assessment for Images", GENERATIVE),
    ChapterInfo("minitraffic", "Being More Lightweight and Practical: Mini-sized Contrastive Learning Pre-trained Models "
                "for Fine-grained Traffic Task (MiniTraffic)", GENERATIVE),
    ChapterInfo("cello", "Cello: Cell-wise Feature Aggregation for Reliable Pathology Image Analysis", GENERATIVE),
    ChapterInfo("mice-bench", "MICE-Bench: Multi-Reference Image Creation and Editing", GENERATIVE),
    ChapterInfo("focalpolicy", "FocalPolicy: Frequency-Optimized Chunking and Locally Anchored Flow Matching", DECISIONS),
    ChapterInfo("bfq", "Fast and Highly Expressive Policy Learning for Offline RL (Bootstrapped Flow Q-Learning)", DECISIONS),
    ChapterInfo("dsac-aid", "Taming the Aleatoric Impulse (DSAC-AID)", DECISIONS),
    ChapterInfo("fedwave", "Weaving in the Clouds: Federated Collaboration among LLM Agents (FedWave)", LANGUAGE),
    ChapterInfo("constitutional-evolution", "Evolving Interpretable Constitutions for Multi-Agent Coordination", LANGUAGE),
    ChapterInfo("probellm", "ProbeLLM: Automating Principled Diagnosis of LLM Failures", LANGUAGE),
)

PARTS: tuple[str, ...] = (OPTIMIZATION, THEORY, GENERATIVE, DECISIONS, LANGUAGE)

SLUGS: tuple[str, ...] = tuple(c.slug for c in CHAPTERS)
_BY_SLUG = {c.slug: c for c in CHAPTERS}


def chapter_info(slug: str) -> ChapterInfo:
    """Look up a chapter by slug; an unknown slug is a `KeyError` naming the valid ones."""
    try:
        return _BY_SLUG[slug]
    except KeyError:
        raise KeyError(f"unknown chapter {slug!r}; known chapters: {', '.join(SLUGS)}") from None
