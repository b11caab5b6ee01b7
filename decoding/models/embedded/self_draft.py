"""The embedded target's int8 self-draft: the same model with int8 per-output-channel dynamic weights on every
Linear except `down_proj` (its input carries the activation outliers; keeping it float32 keeps the draft close
to the target), and one activation scale per row (lean/row_quant.py), so a row's q does not depend on the rows
batched with it. On a CPU a llama-style target's draft runs on the lean forward (lean/int8_draft.py), the same
draft computed without transformers' overhead; transformers' modules otherwise (what `assistant_model=` needs).
"""

from __future__ import annotations

import copy

import torch

from decoding.models.lean import int8_draft
from decoding.models.lean.row_quant import int8_linears, per_row_activations


def int8_self_draft(model) -> torch.nn.Module:
    """The int8 self-draft of `model`: the lean forward on a CPU for llama-style targets, else transformers'."""
    if int8_draft.supports(model) and model.device.type == "cpu":
        return int8_draft.LeanInt8Llama(model)
    return transformers_self_draft(model)


def transformers_self_draft(target) -> torch.nn.Module:
    """A CPU copy of `target` with int8 per-output-channel dynamic weights on every Linear but down_proj, each
    row's activations quantized on its own scale (row_quant.py: a row's q does not depend on its batch)."""
    draft = int8_linears(copy.deepcopy(target).to("cpu", torch.float32).eval(), keep_float=("down_proj",))
    return per_row_activations(draft)
