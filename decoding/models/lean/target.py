"""The float32 target of a llama-style model as a lean forward: the same p, less overhead per call.

The target scores every step's tree (HFTreeLM.logits) and, in plain decoding, every token. Through
transformers each call pays its module stack, a DynamicCache that concatenates every layer's keys and
values, and 7 products per layer. `LeanFloatLlama` runs the shared lean forward (lean_llama.py) on the
target's own float32 weights: q/k/v and gate/up fused into one product each (stacked copies of the
weights: ~280 MB more for SmolLM2-135M), o/down/lm_head the target's own Linear modules. Every product
is a `PackedProjection`, so a tree's few rows take MKL's pre-packed GEMM (packed_linear.py) and one
row or a prefill takes F.linear. The logits equal transformers' up to float rounding (tests).
"""

from __future__ import annotations

import torch

from decoding.models.lean.llama import LeanLayer, LeanLlama, RMSNorm, fused, supports
from decoding.models.lean.packed_linear import PackedProjection

__all__ = ["LeanFloatLlama", "supports"]


def _projection(weight: torch.Tensor) -> PackedProjection:
    linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    linear.weight = torch.nn.Parameter(weight, requires_grad=False)
    return PackedProjection(linear)


def _own(linear: torch.nn.Linear) -> PackedProjection:
    """The target module's PackedProjection when HFTreeLM already gave it one (its packs are shared)."""
    return linear.forward if isinstance(linear.forward, PackedProjection) else PackedProjection(linear)


def _float_layer(layer) -> LeanLayer:
    attn, mlp = layer.self_attn, layer.mlp
    return LeanLayer(
        input_norm=RMSNorm(layer.input_layernorm),
        qkv=_projection(fused(attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight)),
        o=_own(attn.o_proj),
        post_norm=RMSNorm(layer.post_attention_layernorm),
        gate_up=_projection(fused(mlp.gate_proj.weight, mlp.up_proj.weight)),
        down=_own(mlp.down_proj),
    )


class LeanFloatLlama(LeanLlama):
    """The float32 target of a llama model (see the module docstring); built once, read-only after."""

    def __init__(self, target) -> None:
        super().__init__(target)  # refuses a target that is not llama-style
        if target.lm_head.weight.dtype != torch.float32:
            raise ValueError("the lean target needs a float32 model")
        self.lean_layers = [_float_layer(layer) for layer in target.model.layers]
        self.head = _own(target.lm_head)  # [.., hidden] -> [.., V]
