"""What a pair's target session runs, chosen per device: on a CUDA GPU the lean forward replayed from CUDA graphs
(cuda/graphed_target.py), on the CPU the lean float32 forward (lean/target.py), transformers' model elsewhere.
The same p up to float rounding (tests/models/test_lean_target.py, tests/test_cuda.py)."""

from __future__ import annotations

import torch

from decoding.models.cuda.graphed_target import GraphedLlama, supports_graphs
from decoding.models.lean import target as lean_target
from decoding.models.lean.packed_linear import use_packed_projection
from decoding.models.loaded import cached


def scoring_target(model, key: str) -> torch.nn.Module:
    """What HFTreeLM runs for a llama-style target (see the module docstring); built once per model (`key`),
    read-only after."""
    if supports_graphs(model):
        return graphed(model, key)
    if model.device.type != "cpu" or not lean_target.supports(model) or model.dtype != torch.float32:
        return model
    use_packed_projection(model)  # the lean target shares the model's o/down/head projections (and packs)
    return cached((f"lean-target:{key}", "cpu", "float32"), lambda: lean_target.LeanFloatLlama(model))


def graphed(model, key: str, fuse: bool = True) -> GraphedLlama:
    """`model`'s forward replayed from CUDA graphs, built once per model (`key`)."""
    key3 = (f"graphed:{key}:{fuse}", str(model.device), str(model.dtype))
    return cached(key3, lambda: GraphedLlama(model, fuse=fuse))


def on_device(model, key: str) -> torch.nn.Module:
    """What HFTreeLM runs for a hub or local model: on one CUDA GPU a llama-style model's forward replayed from
    CUDA graphs, on its own weights (no fused copies: a custom model may be large); else the model itself."""
    return graphed(model, key, fuse=False) if supports_graphs(model) else model
