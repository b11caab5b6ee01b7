"""The toy pair: a 12-word language whose every probability can be read, enumerated and tested.

Target logits are a function of the last two tokens: a hand-written grammar (which word may follow
which) plus a fixed noise table; the draft adds a second fixed noise table, so it agrees with the
target only partly (alpha about .7 at T = 1). Tables come from a fixed seed, built once: no
randomness at run time, no download, instant. "<eos>" also stands for the start of text.
"""

from __future__ import annotations

import re
from functools import cache

import torch

from decoding.models.model_pair import ModelPair
from decoding.models.treelm import ContextTreeLM

VOCAB = ("<eos>", " the", " cat", " dog", " sat", " on", " mat", " and", " ran", " a", " big", ".")
V = len(VOCAB)
EOS = 0
MAX_CONTEXT = 4096
SEED = 20240611
GRAMMAR_WEIGHT = 2.5  # logit bonus of a grammatical next word
TARGET_NOISE = 0.8  # spread of the target's context-dependent logits
DRAFT_NOISE = 0.9  # spread of the draft's extra error (sets alpha)

# which words may follow each word (everything else is possible, but unlikely)
GRAMMAR = {
    "<eos>": ("the", "a"),
    "the": ("cat", "dog", "mat", "big"),
    "a": ("cat", "dog", "mat", "big"),
    "big": ("cat", "dog", "mat"),
    "cat": ("sat", "ran", "and", "."),
    "dog": ("sat", "ran", "and", "."),
    "mat": (".", "and"),
    "sat": ("on", "."),
    "ran": ("on", ".", "and"),
    "on": ("the", "a"),
    "and": ("the", "a", "ran", "sat"),
    ".": ("<eos>", "the", "a"),
}


def _word(token: str) -> str:
    return token.strip()


WORD_IDS = {_word(t): i for i, t in enumerate(VOCAB)}


@cache
def _tables() -> tuple[torch.Tensor, torch.Tensor]:
    """Target [V, V, V] and draft [V, V, V] logits indexed by (second-last, last, next) token."""
    grammar = torch.zeros(V, V)
    for word, nexts in GRAMMAR.items():
        grammar[WORD_IDS[word], [WORD_IDS[w] for w in nexts]] = GRAMMAR_WEIGHT
    g = torch.Generator().manual_seed(SEED)
    target = grammar[None] + TARGET_NOISE * torch.randn(V, V, V, generator=g)
    draft = target + DRAFT_NOISE * torch.randn(V, V, V, generator=g)
    return target, draft


def _last_two(context_ids: list[int]) -> tuple[int, int]:
    if not context_ids:
        raise ValueError("the toy models need at least one context token")
    prev = context_ids[-2] if len(context_ids) >= 2 else EOS
    return int(prev), int(context_ids[-1])


def toy_target_logits(context_ids: list[int]) -> torch.Tensor:
    """[V] float32 next-token logits of the toy target after `context_ids` (a pure function)."""
    return _tables()[0][_last_two(context_ids)].clone()


def toy_draft_logits(context_ids: list[int]) -> torch.Tensor:
    """[V] float32 next-token logits of the toy draft after `context_ids` (a pure function)."""
    return _tables()[1][_last_two(context_ids)].clone()


def target_session() -> ContextTreeLM:
    return ContextTreeLM(toy_target_logits, V)


def draft_session() -> ContextTreeLM:
    return ContextTreeLM(toy_draft_logits, V)


class ToyCodec:
    """A word tokenizer over VOCAB: words separated by spaces, '.' and '<eos>' stand alone."""

    eos_ids = frozenset({EOS})
    vocab_size = V
    max_context = MAX_CONTEXT

    def encode_prompt(self, text: str, chat: bool = False) -> list[int]:
        """Text -> ids (`chat` is ignored: the toy has no chat template)."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("the prompt is empty")
        ids = []
        for word in re.findall(r"<eos>|\.|[^\s.]+", text.lower()):
            if word not in WORD_IDS:
                known = " ".join(_word(t) for t in VOCAB)
                raise ValueError(f"the toy vocabulary has no word {word!r}; it knows: {known}")
            ids.append(WORD_IDS[word])
        return ids

    def token_text(self, token_id: int) -> str:
        return VOCAB[token_id]

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`, without the <eos> marker."""
        return "".join(VOCAB[i] for i in ids if i != EOS)


def toy_pair() -> ModelPair:
    """The `toy` pair: this file's 12-word target and its perturbed draft."""
    return ModelPair(kind="toy", target_name="toy target (12 words)", draft_name="toy draft (perturbed target)",
                     codec=ToyCodec(), new_target=target_session, new_draft=draft_session,
                     device="cpu", dtype="float32")
