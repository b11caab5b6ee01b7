"""The int8 self-draft of a llama-style target as a lean forward: same function, half the time.

Why: on the 2-core CPU the int8 self-draft (embedded.int8_self_draft) ran a cached one-token forward
in ~48 ms against the float32 target's ~57 ms, while its arithmetic is a third of the target's. The
rest was overhead: 180 quantized Linear modules per token (each quantizes its input again), the
transformers layer stack, and a DynamicCache that concatenates every layer's keys and values per call.

`LeanInt8Llama` computes the SAME draft law (q): int8 per-output-channel weights with dynamic int8
activations on every projection but down_proj (float32), from the target's own weights. The
differences are in how it is computed:
- q/k/v and gate/up are FUSED (one int8 product each, on the same input): per-output-channel weight
  scales and a per-tensor activation scale make a fused product equal to the separate ones;
- the fbgemm op is called directly, the layers are a plain loop, the norms and rotary embedding are
  the target's own modules (down_proj is the target's float32 weight, shared, not copied);
- keys and values live in preallocated buffers that grow by doubling (`GrowingCache`), so a call
  writes its rows in place instead of concatenating.
`head_size` < V keeps the head over the first head_size token ids only (-inf logits beyond: q = 0
there, and the verifier still sees the exact q; fast_draft.py says why those ids).
It speaks the calling convention HFTreeLM uses (input ids, 4-D additive mask, position ids, a cache,
logits_to_keep), so HFTreeLM drives it like any transformers model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from decoding.models.embedded import int8_linears
from decoding.models.growing_cache import GrowingCache
from decoding.models.treelm import additive_mask


def _int8(weight: torch.Tensor) -> torch.Tensor:
    """fbgemm packed params of an int8 per-output-channel dynamic Linear with `weight` [out, in]."""
    linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    linear.weight = torch.nn.Parameter(weight.detach().to("cpu", torch.float32).clone(), requires_grad=False)
    return int8_linears(torch.nn.Sequential(linear))[0]._packed_params._packed_params


def _int8_product(x: torch.Tensor, packed) -> torch.Tensor:
    return torch.ops.quantized.linear_dynamic(x, packed, reduce_range=True)


@dataclass
class LeanLayer:
    """One decoder layer's parts: the target's norm modules, fused int8 products, the float32 down_proj."""

    input_norm: torch.nn.Module
    qkv: object  # packed int8 [q_out + 2 kv_out, hidden]
    o: object  # packed int8 [hidden, hidden]
    post_norm: torch.nn.Module
    gate_up: object  # packed int8 [2 intermediate, hidden]
    down: torch.Tensor  # [hidden, intermediate] float32: the target's own weight, never written


def lean_layer(layer) -> LeanLayer:
    attn, mlp = layer.self_attn, layer.mlp
    qkv = torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])  # [q_out + 2 kv_out, hidden]
    return LeanLayer(layer.input_layernorm, _int8(qkv), _int8(attn.o_proj.weight), layer.post_attention_layernorm,
                     _int8(torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight])), mlp.down_proj.weight.detach())


def supports(target) -> bool:
    """Whether `target` is a llama-style decoder this lean forward reproduces (no biases, SiLU gated MLP)."""
    config = target.config.get_text_config()
    inner = getattr(target, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None or getattr(config, "model_type", "") != "llama" or config.hidden_act != "silu":
        return False
    attn, mlp = layers[0].self_attn, layers[0].mlp
    return not (getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False)
                or attn.q_proj.bias is not None or mlp.down_proj.bias is not None)


@dataclass
class LeanOutput:
    logits: torch.Tensor  # [1, kept rows, V]


class LeanInt8Llama(torch.nn.Module):
    """The int8 self-draft of a llama target (see the module docstring); built once, read-only after."""

    def __init__(self, target, head_size: int | None = None) -> None:
        super().__init__()
        if not supports(target):
            raise ValueError("the lean int8 draft needs a llama-style target (no biases, SiLU MLP)")
        self.config = target.config
        inner = target.model
        self.embed, self.rotary, self.norm = inner.embed_tokens, inner.rotary_emb, inner.norm
        self.lean_layers = [lean_layer(layer) for layer in inner.layers]
        self.vocab = int(target.lm_head.weight.shape[0])
        self.head_size = self.vocab if head_size is None else head_size
        if not 0 < self.head_size <= self.vocab:
            raise ValueError(f"head_size must be in 1..{self.vocab}, got {head_size}")
        self.head = _int8(target.lm_head.weight[: self.head_size])  # the first head_size token ids
        self.heads = self.config.num_attention_heads
        self.kv_heads = self.config.num_key_value_heads
        self.head_dim = getattr(self.config, "head_dim", None) or self.config.hidden_size // self.heads
        self.scaling = self.head_dim ** -0.5

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        return torch.float32

    def new_cache(self) -> GrowingCache:
        return GrowingCache(len(self.lean_layers))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, past_key_values: GrowingCache | None = None,
                use_cache: bool = True, logits_to_keep: int = 1) -> LeanOutput:
        """input_ids [1, n]; attention_mask [1, 1, n, filled + n] additive float or None (causal);
        position_ids [1, n]. Writes the n new keys/values into the cache; logits of the last rows."""
        cache = past_key_values if past_key_values is not None else self.new_cache()
        n, filled = input_ids.shape[1], cache.get_seq_length()
        if position_ids is None:
            position_ids = torch.arange(filled, filled + n)[None]  # [1, n]
        if attention_mask is None:
            attention_mask = _causal_mask(n, filled)
        h = self.embed(input_ids)  # [1, n, hidden]
        cos, sin = self.rotary(h, position_ids)  # [1, n, head_dim] each
        for index, layer in enumerate(self.lean_layers):
            h = h + self._attention(layer, layer.input_norm(h), cos, sin, attention_mask, cache, index)
            x = layer.post_norm(h)
            gate, up = _int8_product(x, layer.gate_up).chunk(2, dim=-1)  # [1, n, intermediate] each
            h = h + F.linear(F.silu(gate) * up, layer.down)
        h = self.norm(h[:, -logits_to_keep:])  # [1, keep, hidden]
        return LeanOutput(logits=self._head(h))  # [1, keep, V]

    def _head(self, h: torch.Tensor) -> torch.Tensor:
        """[1, keep, hidden] -> [1, keep, V] logits; -inf beyond the first head_size ids (q = 0 there)."""
        kept = _int8_product(h, self.head)  # [1, keep, head_size]
        if self.head_size == self.vocab:
            return kept
        return F.pad(kept, (0, self.vocab - self.head_size), value=float("-inf"))

    def _attention(self, layer: LeanLayer, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                   mask: torch.Tensor, cache: GrowingCache, index: int) -> torch.Tensor:
        n = x.shape[1]
        q_out, kv_out = self.heads * self.head_dim, self.kv_heads * self.head_dim
        q, k, v = _int8_product(x, layer.qkv).split([q_out, kv_out, kv_out], dim=-1)
        q = q.view(1, n, self.heads, self.head_dim).transpose(1, 2)  # [1, heads, n, d]
        k = k.view(1, n, self.kv_heads, self.head_dim).transpose(1, 2)  # [1, kv_heads, n, d]
        v = v.view(1, n, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        keys, values = cache.append(index, k, v)  # [1, kv_heads, filled + n, d] each
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask.to(q.dtype), scale=self.scaling,
                                             enable_gqa=self.heads != self.kv_heads)  # [1, heads, n, d]
        return _int8_product(out.transpose(1, 2).reshape(1, n, q_out), layer.o)  # [1, n, hidden]


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding as transformers' llama applies it: x cos + rotate_half(x) sin."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None] + rotated * sin[:, None]


def _causal_mask(n: int, filled: int) -> torch.Tensor:
    """[1, 1, n, filled + n] additive: row i sees the cache and new rows 0..i."""
    return additive_mask(torch.ones(n, filled + n, dtype=torch.bool).tril(filled), torch.float32)
