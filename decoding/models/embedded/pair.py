"""The `embedded` pair: SmolLM2-135M-Instruct (model.py) as the target and its int8 self-draft (self_draft.py).
`embedded_parts` is the target and codec every embedded-target pair shares (embedded-head, lookup)."""

from __future__ import annotations

import torch

from decoding.models.codec import HFCodec, eos_ids_of, max_context_of
from decoding.models.embedded import model as embedded
from decoding.models.embedded.self_draft import int8_self_draft
from decoding.models.hf_treelm import HFTreeLM
from decoding.models.hub.load import resolve_device
from decoding.models.loaded import cached
from decoding.models.model_pair import ModelPair, Progress
from decoding.models.scoring import scoring_target

DRAFT_NAME = f"{embedded.MODEL_NAME} int8 self-draft (down_proj float32)"
DRAFT_DTYPE = "int8 dynamic per-channel weights, down_proj float32 (cpu)"


def embedded_parts(device: str, progress: Progress):
    """(target model, codec) of the embedded model on `device`, float32 everywhere."""
    tokenizer = cached(("embedded-tokenizer:" + embedded.MODEL_NAME, "cpu", "-"),
                       lambda: embedded.load_tokenizer(progress))
    model = cached(("embedded:" + embedded.MODEL_NAME, device, "float32"),
                   lambda: embedded.load_target(device, progress))
    vocab = int(model.config.vocab_size)
    codec = HFCodec(tokenizer, eos_ids_of(tokenizer, model), vocab, max_context_of(model))
    return model, codec


def embedded_pair(device: str, progress: Progress) -> ModelPair:
    device = resolve_device(device)
    model, codec = embedded_parts(device, progress)

    def build() -> torch.nn.Module:
        progress("building the int8 self-draft (per-channel weights, down_proj kept float32)")
        return int8_self_draft(model)

    draft = cached((f"embedded-draft:{embedded.MODEL_NAME}", "cpu", "qint8"), build)
    scorer = scoring_target(model, embedded.MODEL_NAME)
    return ModelPair(
        kind="embedded", target_name=embedded.MODEL_NAME, draft_name=DRAFT_NAME,
        codec=codec, new_target=lambda: HFTreeLM(scorer, codec.vocab_size),
        new_draft=lambda: HFTreeLM(draft, codec.vocab_size), device=device, dtype="float32",
        target_model=model, draft_model=draft, draft_dtype=DRAFT_DTYPE,
    )
