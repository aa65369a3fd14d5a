"""A real LLM reads the constitution: SmolLM2-135M-Instruct (the shared `icml26.llm`, offline GGUF).

For each of the 64 situations of `policies.SITUATIONS` (energy low/high, carrying or not, a weaker
neighbour or not, food on the cell or not, food in sight or not, at the depot or not) the model scores every
legal action phrase as the continuation of

    <user> ...constitution text... Situation: <situation> What do you do? <assistant> I will <phrase>

by the **mean** log-probability of the phrase's tokens (length-normalised, so that one-token "wait" is not
favoured over "move towards the depot"); the constitution prefix is KV-cached once per text and shared by
every situation and phrase. Renormalised over the legal phrases (a softmax of the mean log-probabilities),
the scores give a situation -> action table (`policies.TablePolicy`) that agents sample each step: a
memoised per-step LLM agent that observes the six facts of its situation.

`fidelity` measures how closely a table follows the exact rule reader in the situations the exact society
meets; the chapter requires it above chance before reading anything into the LLM societies' scores. Two
controls bracket the table pipeline itself: `uniform_table` (every legal action alike: what a reading that
carries no information scores) and `empirical_table` (the exact reader's own action frequencies per
situation: what a perfect reading of the six facts can score). A softmax at temperature 1 over *mean*
per-token log-probabilities is close to uniform at 135M, so `table_from_scores` also decodes greedily
(``temperature=0``: the top-scoring legal phrase).
Cloze scoring is used because letter multiple choice is useless at 135M (first-letter bias). LLM
*mutation* is out of reach at this size: `evolve` uses typed GP operators instead.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .constitution import ACTIONS, ACTION_TEXT
from .policies import SITUATION_FLAGS, SITUATIONS, TablePolicy, legal_actions

INTRO = ("You live in a grid world with other agents. You need energy to survive; food gives energy. "
         "Your society follows this constitution:\n")

FACT_TEXT: dict[str, tuple[str, str]] = {
    "energy_low": ("Your energy is low.", "Your energy is high."),
    "carrying": ("You carry food.", "You carry no food."),
    "neighbour_weaker": ("A neighbour weaker than you is next to you.", "No weaker neighbour is next to you."),
    "food_here": ("There is food on your cell.", "There is no food on your cell."),
    "food_visible": ("You can see food nearby.", "You see no food nearby."),
    "at_depot": ("You are at the depot.", "You are not at the depot."),
}
"""The sentence for each situation fact, (true, false)."""


def situation_text(situation: Sequence[bool]) -> str:
    """The situation in words, one sentence per fact of `policies.SITUATION_FLAGS`."""
    return " ".join(FACT_TEXT[f][0 if v else 1] for f, v in zip(SITUATION_FLAGS, situation))


def load_reader():
    """The SmolLM2 model (10-17 s); a missing wheel raises with its install line."""
    from icml26 import llm

    return llm.load_smollm2()


def read_table(lm, constitution_text: str, temperature: float = 1.0) -> TablePolicy:
    """The (64, len(ACTIONS)) action table of one constitution text under SmolLM2 (module docstring)."""
    return table_from_scores(read_scores(lm, constitution_text), temperature)


def table_from_scores(logp: np.ndarray, temperature: float = 1.0) -> TablePolicy:
    """Softmax of the mean log-probabilities over each situation's legal actions at ``temperature``
    (-inf elsewhere); ``temperature=0`` puts all mass on the top-scoring legal action (first on ties)."""
    logp = np.asarray(logp, dtype=float)
    if logp.shape != (len(SITUATIONS), len(ACTIONS)):
        raise ValueError(f"scores must have shape {(len(SITUATIONS), len(ACTIONS))}, got {logp.shape}")
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be finite and >= 0, got {temperature!r}")
    P = np.zeros((len(SITUATIONS), len(ACTIONS)))
    for k, sit in enumerate(SITUATIONS):
        idx = [ACTIONS.index(a) for a in legal_actions(sit)]
        z = logp[k, idx]
        if not np.all(np.isfinite(z)):
            raise ValueError(f"situation {k}: a legal action has a non-finite score {z.tolist()}")
        if temperature == 0:
            P[k, idx[int(np.argmax(z))]] = 1.0
        else:
            w = np.exp((z - z.max()) / temperature)
            P[k, idx] = w / w.sum()
    return TablePolicy(P)


def uniform_table() -> TablePolicy:
    """Every legal action equally likely in every situation: the table of a reading that carries nothing."""
    return table_from_scores(np.zeros((len(SITUATIONS), len(ACTIONS))))


def empirical_table(actions_by_situation: Sequence[Sequence[str]]) -> TablePolicy:
    """The exact rule reader's action frequencies per situation (``actions_by_situation[k]``: every action
    it took in situation k, as `experiments.situation_actions` returns them); uniform over the legal actions
    in situations it never met. The best a table over the six facts can do at reproducing that society."""
    if len(actions_by_situation) != len(SITUATIONS):
        raise ValueError(f"need one action list per situation ({len(SITUATIONS)}), got {len(actions_by_situation)}")
    P = uniform_table().probs.copy()
    for k, acts in enumerate(actions_by_situation):
        if not len(acts):
            continue
        legal = set(legal_actions(SITUATIONS[k]))
        bad = sorted(set(acts) - legal)
        if bad:
            raise ValueError(f"situation {k}: actions {bad} are not legal there")
        P[k] = 0.0
        for a in acts:
            P[k, ACTIONS.index(a)] += 1.0 / len(acts)
    return TablePolicy(P)


def read_scores(lm, constitution_text: str) -> np.ndarray:
    """Mean per-token log-probs (64, len(ACTIONS)) of each legal phrase; -inf on illegal ones. Three cache
    levels: the constitution prefix once, each situation's stem once on top of it, the phrases in one batch."""
    import torch

    if not isinstance(constitution_text, str):
        raise ValueError("constitution_text must be a string")

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
            out[k, ACTIONS.index(a)] = total / len(ph)
    return out


def fidelity(table: TablePolicy, actions_by_situation: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per situation the exact society met: the mean probability the table gives to the actions the exact
    rule reader took there (``actions_by_situation[k]``), and chance (one over the number of legal
    actions). Two arrays over the situations met, in index order."""
    P = table.probs
    met = [k for k, acts in enumerate(actions_by_situation) if len(acts)]
    fid = np.array([np.mean([P[k, ACTIONS.index(a)] for a in actions_by_situation[k]]) for k in met])
    chance = np.array([1.0 / len(legal_actions(SITUATIONS[k])) for k in met])
    return fid, chance
