"""The tokenizer facade the engine and the viz use: prompt -> ids, id -> text, EOS ids, sizes."""

from __future__ import annotations

from typing import Protocol


class Codec(Protocol):
    eos_ids: frozenset[int]
    vocab_size: int  # width of the logits (may exceed the tokenizer's size: padding rows)
    max_context: int  # model max positions; the engine refuses prompts longer than that

    def encode_prompt(self, text: str, chat: bool) -> list[int]: ...

    def token_text(self, token_id: int) -> str: ...

    def decode(self, ids: list[int]) -> str: ...


def check_prompt(text: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the prompt is empty")


class HFCodec:
    """A transformers tokenizer behind the Codec protocol."""

    def __init__(self, tokenizer, eos_ids: frozenset[int], vocab_size: int, max_context: int) -> None:
        self.tokenizer = tokenizer
        self.eos_ids = eos_ids
        self.vocab_size = vocab_size
        self.max_context = max_context
        self._texts: dict[int, str] = {}

    def encode_prompt(self, text: str, chat: bool) -> list[int]:
        """Prompt ids; with chat=True and a chat template, one user turn plus the assistant header."""
        check_prompt(text)
        tok = self.tokenizer
        if chat and getattr(tok, "chat_template", None):
            rendered = tok.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                               add_generation_prompt=True)
            ids = tok.encode(rendered, add_special_tokens=False)
        else:
            ids = tok.encode(text)
        if not ids:
            raise ValueError("the prompt gives no tokens")
        return [int(i) for i in ids]

    def token_text(self, token_id: int) -> str:
        """The token's own text as decoding writes it, leading space kept (SentencePiece '▁' included)."""
        token_id = int(token_id)
        if token_id not in self._texts:
            text = self.tokenizer.decode([token_id], skip_special_tokens=False, clean_up_tokenization_spaces=False)
            piece = self.tokenizer.convert_ids_to_tokens(token_id)
            if isinstance(piece, str) and piece.startswith("▁") and not text.startswith(" "):
                text = " " + text
            self._texts[token_id] = text
        return self._texts[token_id]

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`, special tokens (chat markers, EOS) left out."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)


def eos_ids_of(tokenizer, model) -> frozenset[int]:
    """Every id that ends a turn: the tokenizer's EOS and the model's (generation) config EOS ids."""
    found: set[int] = set()
    for value in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None),
                  getattr(model.config, "eos_token_id", None)):
        if value is None:
            continue
        found.update(int(v) for v in (value if isinstance(value, list | tuple) else [value]))
    return frozenset(found)


def max_context_of(model, default: int = 2048) -> int:
    text_config = model.config.get_text_config()
    return int(getattr(text_config, "max_position_embeddings", None) or default)
