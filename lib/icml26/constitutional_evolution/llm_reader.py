"""A real LLM reads the constitution: SmolLM2-135M-Instruct (the shared `icml26.llm`, offline GGUF).

For each situation of `policies.SITUATIONS` (energy low/high x carrying x weaker neighbour) the model
scores every legal action phrase as the continuation of

    <user> ...constitution text... Situation: <situation> What do you do? <assistant> I will <phrase>

(the summed log-probabilities of the phrase's tokens; the constitution prefix is KV-cached once per text
and shared by every situation and phrase). Renormalised over the legal phrases, the scores give a
situation -> action table (`policies.TablePolicy`) that agents sample each step: exactly a memoised
per-step LLM agent that observes its situation (and nothing else of the world). ``calibrate=True``
subtracts the same scores under an empty constitution (a PMI reading), an option shown beside the raw one.

Cloze scoring is used because letter multiple choice is useless at 135M (first-letter bias, see the
issue). LLM *mutation* is out of reach at this size: `evolve` uses typed GP operators instead.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .constitution import ACTIONS, ACTION_TEXT
from .policies import SITUATIONS, TablePolicy, legal_actions

INTRO = ("You live in a grid world with other agents. You need energy to survive; food gives energy. "
         "Your society follows this constitution:\n")


def situation_text(situation: tuple[bool, bool, bool]) -> str:
    low, carrying, weak = situation
    return " ".join([
        "Your energy is low." if low else "Your energy is high.",
        "You carry food." if carrying else "You carry no food.",
        "A weaker neighbour is next to you." if weak else "No other agent is near you.",
    ])


def load_reader():
    """The SmolLM2 model (10-17 s); a missing wheel raises with its install line."""
    from icml26 import llm

    return llm.load_smollm2()


def read_table(lm, constitution_text: str, calibrate: bool = False, batch_size: int = 16) -> TablePolicy:
    """The (8, len(ACTIONS)) action table of one constitution text under SmolLM2 (module docstring)."""
    if not isinstance(constitution_text, str):
        raise ValueError("constitution_text must be a string")
    logp = _scores(lm, constitution_text, batch_size)
    if calibrate:
        ref = empty_scores(lm)
        logp = np.where(np.isfinite(logp), logp - np.where(np.isfinite(ref), ref, 0.0), -np.inf)
    P = np.zeros((len(SITUATIONS), len(ACTIONS)))
    for k, sit in enumerate(SITUATIONS):
        idx = [ACTIONS.index(a) for a in legal_actions(sit)]
        z = logp[k, idx]
        w = np.exp(z - z.max())
        P[k, idx] = w / w.sum()
    return TablePolicy(P)


def _scores(lm, constitution_text: str, batch_size: int) -> np.ndarray:
    """Summed log-probs (8, len(ACTIONS)) of each legal phrase; -inf on illegal ones. Three cache levels:
    the constitution prefix once, each situation's stem once on top of it, the phrases in one batch."""
    import torch

    tok = lm.tokenizer
    full = tok.render([{"role": "user", "content": INTRO + constitution_text + "\n\nSituation: {SIT} What do you do?"}])
    head, tail = full.split("{SIT}")
    cache_c = lm.prefill(tok.encode(head))
    out = np.full((len(SITUATIONS), len(ACTIONS)), -np.inf)
    for k, sit in enumerate(SITUATIONS):
        stem = tok.encode(situation_text(sit) + tail + "I will")
        first, cache_s = lm.forward(stem, cache=cache_c, logits_at=-1)
        first = torch.log_softmax(first[0, -1].double(), dim=-1)
        acts = legal_actions(sit)
        phrases = [tok.encode(" " + ACTION_TEXT[a]) for a in acts]
        width = max(len(ph) for ph in phrases)
        ids = torch.full((len(phrases), width), tok.eos_token_id, dtype=torch.long)
        for r, ph in enumerate(phrases):
            ids[r, :len(ph)] = torch.as_tensor(ph)
        hidden, _ = lm.trunk(ids, cache_s)
        lsm = torch.log_softmax(lm.head(hidden).double(), dim=-1)       # (n, width, vocab)
        for r, (a, ph) in enumerate(zip(acts, phrases)):
            total = float(first[ph[0]])
            for i in range(1, len(ph)):
                total += float(lsm[r, i - 1, ph[i]])
            out[k, ACTIONS.index(a)] = total
    return out


_EMPTY_CACHE: dict = {}


def empty_scores(lm) -> np.ndarray:
    """Scores under an empty constitution (the calibration reference), computed once per model."""
    if id(lm) not in _EMPTY_CACHE:
        _EMPTY_CACHE[id(lm)] = _scores(lm, "(no rules)", 16)
    return _EMPTY_CACHE[id(lm)]


def tables(lm, texts: dict[str, str], calibrate: bool = False) -> dict[str, TablePolicy]:
    """`read_table` for several named texts."""
    return {name: read_table(lm, t, calibrate=calibrate) for name, t in texts.items()}


def fidelity(table: TablePolicy, actions_by_situation: Sequence[Sequence[str]]) -> float:
    """Mean probability the table gives, per situation, to the actions the exact reading would take there
    (``actions_by_situation[k]``: the exact rule-reader's actions observed in situation k)."""
    P = table.probs
    vals = []
    for k, acts in enumerate(actions_by_situation):
        if len(acts):
            vals.append(float(np.mean([P[k, ACTIONS.index(a)] for a in acts])))
    return float(np.mean(vals)) if vals else float("nan")
