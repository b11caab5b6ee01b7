"""The `custom` pair: a target and a draft from the hub or local folders that share one vocabulary."""

from __future__ import annotations

import torch

from decoding.models.codec import HFCodec, eos_ids_of, max_context_of
from decoding.models.hf_treelm import HFTreeLM
from decoding.models.hub.load import (
    ModelLoadError,
    check_same_vocab,
    default_dtype,
    load_causal_lm,
    load_tokenizer,
    resolve_device,
    resolve_spec,
)
from decoding.models.loaded import cached
from decoding.models.model_pair import ModelPair, Progress
from decoding.models.scoring import on_device


def custom_pair(target: str, draft: str, device: str, progress: Progress) -> ModelPair:
    device = resolve_device(device)
    check_same_vocab(target, hf_tokenizer(target), draft, hf_tokenizer(draft))
    model, codec, _, dtype = custom_target(target, device, progress)
    draft_model = hf_model(draft, device, default_dtype(device), progress)
    vocab = codec.vocab_size
    scorer, drafter = on_device(model, resolve_spec(target)[0]), on_device(draft_model, resolve_spec(draft)[0])
    return ModelPair(
        kind="custom", target_name=target, draft_name=draft, codec=codec,
        new_target=lambda: HFTreeLM(scorer, vocab), new_draft=lambda: HFTreeLM(drafter, vocab),
        device=device, dtype=dtype, target_model=model, draft_model=draft_model,
    )


def custom_target(spec: str, device: str, progress: Progress):
    """(model, codec, name, dtype name) of a hub/local target."""
    dtype = default_dtype(device)
    tokenizer = hf_tokenizer(spec)
    model = hf_model(spec, device, dtype, progress)
    vocab = int(model.config.get_text_config().vocab_size)
    check_tokenizer_fits(spec, tokenizer, vocab)
    codec = HFCodec(tokenizer, eos_ids_of(tokenizer, model), vocab, max_context_of(model))
    return model, codec, spec, str(dtype).removeprefix("torch.")


def check_tokenizer_fits(spec: str, tokenizer, vocab: int) -> None:
    """Refuse a folder whose tokenizer makes ids its model has no logits for (a mixed-up folder)."""
    largest = max(tokenizer.get_vocab().values(), default=-1)
    if largest >= vocab:
        raise ModelLoadError(f"the tokenizer of {spec!r} does not match its model: it has token id {largest} "
                             f"but the model scores only {vocab} ids")


def hf_model(spec: str, device: str, dtype: torch.dtype, progress: Progress):
    name, _ = resolve_spec(spec)
    return cached((name, device, str(dtype)), lambda: load_causal_lm(spec, device, dtype, progress))


def hf_tokenizer(spec: str):
    name, _ = resolve_spec(spec)
    return cached(("tokenizer:" + name, "cpu", "-"), lambda: load_tokenizer(spec))
