"""The int8 self-draft of a llama-style target as a lean forward: same function, half the time.

Why: on the 2-core CPU the int8 self-draft (embedded/self_draft.py) ran a cached one-token forward in
nearly the float32 target's time, while its arithmetic is a third of the target's (docs/speed.md,
"Measurements the code's comments cite"). The rest was overhead: 180 quantized Linear modules per token
(each quantizes its input again), the transformers layer stack, and a DynamicCache that concatenates every
layer's keys and values per call.

`LeanInt8Llama` computes the SAME draft law (q): int8 per-output-channel weights with dynamic int8
activations on every projection but down_proj (float32), from the target's own weights, through the
shared lean forward (llama.py):
- q/k/v and gate/up are FUSED (one int8 product each, on the same input): per-output-channel weight
  scales and one activation scale per row make a fused product equal to the separate ones;
- each row's activations are quantized on their own scale (row_quant.py), so a row's q does not depend
  on the rows it is batched with (a prefill, a tree level): a run rebuilt from its plain state draws
  from the q the uninterrupted run drew from;
- the fbgemm op is called directly (down_proj is the target's float32 weight, shared, not copied).
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F

from decoding.models.lean.llama import LeanLayer, LeanLlama, RMSNorm, fused, supports
from decoding.models.lean.row_quant import int8_linears, per_row

__all__ = ["LeanInt8Llama", "supports"]


def _int8(weight: torch.Tensor) -> object:
    """fbgemm packed params of an int8 per-output-channel dynamic Linear with `weight` [out, in]."""
    linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    linear.weight = torch.nn.Parameter(weight.detach().to("cpu", torch.float32).clone(), requires_grad=False)
    return int8_linears(torch.nn.Sequential(linear))[0]._packed_params._packed_params


def _int8_product(packed, x: torch.Tensor) -> torch.Tensor:
    """x [..., in] -> [..., out] through the int8 weights, each row's activations on its own scale (row_quant.py)."""
    return per_row(lambda rows: torch.ops.quantized.linear_dynamic(rows, packed, reduce_range=True), x)


def _int8_layer(layer) -> LeanLayer:
    attn, mlp = layer.self_attn, layer.mlp
    down = mlp.down_proj.weight.detach()  # [hidden, intermediate] float32: the target's own, never written
    return LeanLayer(
        input_norm=RMSNorm(layer.input_layernorm),
        qkv=partial(_int8_product, _int8(fused(attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight))),
        o=partial(_int8_product, _int8(attn.o_proj.weight)),
        post_norm=RMSNorm(layer.post_attention_layernorm),
        gate_up=partial(_int8_product, _int8(fused(mlp.gate_proj.weight, mlp.up_proj.weight))),
        down=partial(F.linear, weight=down),
    )


class LeanInt8Llama(LeanLlama):
    """The int8 self-draft of a llama target (see the module docstring); built once, read-only after."""

    def __init__(self, target) -> None:
        super().__init__(target)  # refuses a target that is not llama-style
        self.lean_layers = [_int8_layer(layer) for layer in target.model.layers]
        self._head_product = partial(_int8_product, _int8(target.lm_head.weight))

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """[1, keep, hidden] -> [1, keep, V] logits."""
        return self._head_product(h)
