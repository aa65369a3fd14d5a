"""The GGUF's byte-level BPE tokenizer, rebuilt with `tokenizers`, and its ChatML template (jinja2).

SmolLM2's tokenizer (GGUF ``tokenizer.ggml.pre = smollm``) splits every digit into its own token
(`tokenizers.pre_tokenizers.Digits(individual_digits=True)`) before GPT-2's byte-level split; the
control tokens (``<|im_start|>``, ``<|im_end|>``, ...; GGUF token type 3) are added as special tokens.
"""
from __future__ import annotations

from collections.abc import Sequence

CONTROL = 3  # GGUF token type of control (special) tokens


class ChatTokenizer:
    """Encode/decode text and render chat messages with the model's own template."""

    def __init__(self, meta: dict):
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        tokens, merges = meta["tokens"], meta["merges"]
        vocab = {tok: i for i, tok in enumerate(tokens)}
        bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges], fuse_unk=False,
                         byte_fallback=False)
        tok = Tokenizer(bpe)
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
        tok.decoder = decoders.ByteLevel()
        specials = [t for t, kind in zip(tokens, meta["token_type"]) if kind == CONTROL]
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
        self._tok = tok
        self.vocab = vocab
        self.eos_token_id = int(meta["eos_token_id"])
        self.bos_token_id = int(meta["bos_token_id"])
        self.im_end_id = vocab.get("<|im_end|>", self.eos_token_id)
        self.template_source = meta["chat_template"]
        import jinja2

        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)
        self._template = env.from_string(self.template_source)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (special tokens in it are recognised; no BOS is added, as the GGUF says)."""
        if not isinstance(text, str):
            raise TypeError(f"encode needs a str, got {type(text).__name__}")
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return self._tok.decode(list(map(int, ids)), skip_special_tokens=skip_special_tokens)

    def render(self, messages: Sequence[dict], add_generation_prompt: bool = True) -> str:
        """The chat string (ChatML; a default system message when none is given, as the template says)."""
        for m in messages:
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise ValueError(f"each message needs 'role' and 'content', got {m!r}")
        return self._template.render(messages=list(messages), add_generation_prompt=add_generation_prompt)

    def chat(self, messages: Sequence[dict], add_generation_prompt: bool = True) -> list[int]:
        """Token ids of `render(messages)`."""
        return self.encode(self.render(messages, add_generation_prompt))

    def token_id(self, piece: str) -> int:
        """The id of a single-token string (e.g. ``"7"``, ``" True"``); a `ValueError` when it is not one token."""
        ids = self.encode(piece)
        if len(ids) != 1:
            raise ValueError(f"{piece!r} is {len(ids)} tokens, not one")
        return ids[0]
