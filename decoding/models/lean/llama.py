"""A llama-style decoder as a plain loop over its layers: the forward both lean models share.

Why: transformers' module stack, its per-call mask and cache bookkeeping and one product per
projection cost more than the arithmetic at this model size on a CPU (lean_draft.py measured it).
`LeanLlama` runs the same function with q/k/v and gate/up FUSED into one product each (the same
input feeds them), the target's own norm and rotary modules, and keys/values written in place into a
`GrowingCache`. What a product is (int8 for the draft, float32 for the target) comes from the subclass
as one callable per projection (`LeanLayer`).

It speaks the calling convention HFTreeLM uses (input ids, 4-D additive mask, position ids, a cache,
logits_to_keep), so HFTreeLM drives it like any transformers model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from decoding.models.lean.growing_cache import GrowingCache
from decoding.models.tree_inputs import additive_mask

Product = Callable[[torch.Tensor], torch.Tensor]  # [..., in] -> [..., out]


@dataclass
class LeanLayer:
    """One decoder layer: the target's norms (modules, or RMSNorm's one fused op) and one product per (fused)
    projection."""

    input_norm: Product
    qkv: Product  # hidden -> q_out + 2 kv_out
    o: Product  # q_out -> hidden
    post_norm: Product
    gate_up: Product  # hidden -> 2 intermediate
    down: Product  # intermediate -> hidden


class RMSNorm:
    """A llama RMSNorm module's function as one call of torch's fused op (F.rms_norm): the same values bit for bit
    on a CPU (tests/models/test_lean_target.py), where transformers' module makes several tensor calls from Python
    and a forward of SmolLM2-135M makes 60 of them (10.8 us a call against 7.5 on one AMD EPYC core)."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.weight = module.weight.detach()  # [hidden], the module's own (shared, never written)
        self.eps = float(module.variance_epsilon)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)


def supports(target) -> bool:
    """Whether `target` is a llama-style decoder the lean forward reproduces (no biases, SiLU gated MLP)."""
    config = target.config.get_text_config()
    inner = getattr(target, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None or getattr(config, "model_type", "") != "llama" or config.hidden_act != "silu":
        return False
    attn, mlp = layers[0].self_attn, layers[0].mlp
    return not (getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False)
                or attn.q_proj.bias is not None or mlp.down_proj.bias is not None)


def fused(*weights: torch.Tensor) -> torch.Tensor:
    """Projections that read the same input, stacked into one weight [sum of outs, in]."""
    return torch.cat([w.detach() for w in weights])


@dataclass
class LeanOutput:
    logits: torch.Tensor  # [1, kept rows, V]
    features: torch.Tensor  # [1, feature rows, hidden]: the final-normed states the head reads (a draft head's input)
    taps: torch.Tensor | None = None  # [1, feature rows, len(taps), hidden]: hidden states after the tapped layers


class LeanLlama(torch.nn.Module):
    """The forward; a subclass builds `lean_layers` and `head` (read-only after construction)."""

    lean_layers: list[LeanLayer]
    head: Product  # [.., hidden] -> [.., V]

    def __init__(self, target) -> None:
        super().__init__()
        if not supports(target):
            raise ValueError("the lean forward needs a llama-style target (no biases, SiLU MLP)")
        self.config = target.config
        inner = target.model
        self.embed, self.rotary, self.norm = inner.embed_tokens, inner.rotary_emb, inner.norm
        self.vocab = int(target.lm_head.weight.shape[0])
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
                use_cache: bool = True, logits_to_keep: int = 1, taps: tuple[int, ...] = (),
                feature_rows: int | None = None) -> LeanOutput:
        """input_ids [1, n]; attention_mask [1, 1, n, filled + n] additive float or None (causal);
        position_ids [1, n]. Writes the n new keys/values into the cache; logits of the last rows.
        taps: also return the hidden states after these layers (transformers' hidden_states indices: 3 = after
        the third layer), as a fused draft head reads them; feature_rows: the features (and taps) of this many
        last rows (default: logits_to_keep), e.g. every row of a prefill for a head that attends to the past."""
        cache = past_key_values if past_key_values is not None else self.new_cache()
        n, filled = input_ids.shape[1], cache.get_seq_length()
        rows = max(feature_rows or logits_to_keep, logits_to_keep)
        position_ids, attention_mask = call_defaults(n, filled, position_ids, attention_mask)
        h = self.embed(input_ids)  # [1, n, hidden]
        cos, sin = self.rotary(h, position_ids)  # [1, n, head_dim] each
        tapped = []
        for index, layer in enumerate(self.lean_layers):
            h = h + self._attention(layer, layer.input_norm(h), cos, sin, attention_mask, cache, index)
            gate, up = layer.gate_up(layer.post_norm(h)).chunk(2, dim=-1)  # [1, n, intermediate] each
            h = h + layer.down(F.silu(gate) * up)
            if index + 1 in taps:
                tapped.append(h[:, -rows:])  # [1, rows, hidden]
        features = self.norm(h[:, -rows:])  # [1, rows, hidden]
        logits = self.head(features[:, -logits_to_keep:])  # [1, keep, V]
        return LeanOutput(logits=logits, features=features, taps=torch.stack(tapped, dim=2) if taps else None)

    def _attention(self, layer: LeanLayer, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                   mask: torch.Tensor, cache: GrowingCache, index: int) -> torch.Tensor:
        n = x.shape[1]
        q_out, qk_out = self.heads * self.head_dim, (self.heads + self.kv_heads) * self.head_dim
        qkv = layer.qkv(x)  # [1, n, q_out + 2 kv_out]
        qk = qkv[..., :qk_out].view(1, n, self.heads + self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(qk, cos, sin).split([self.heads, self.kv_heads], dim=1)  # [1, heads | kv_heads, n, d]: one
        # rotation for both (elementwise: the same values as two)
        v = qkv[..., qk_out:].view(1, n, self.kv_heads, self.head_dim).transpose(1, 2)  # [1, kv_heads, n, d]
        keys, values = cache.append(index, k, v)  # [1, kv_heads, filled + n, d] each
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask.to(q.dtype), scale=self.scaling,
                                             enable_gqa=self.heads != self.kv_heads)  # [1, heads, n, d]
        return layer.o(out.transpose(1, 2).reshape(1, n, q_out))  # [1, n, hidden]


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding as transformers' llama applies it: x cos + rotate_half(x) sin."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None] + rotated * sin[:, None]


def call_defaults(n: int, filled: int, positions: torch.Tensor | None, mask: torch.Tensor | None,
                  device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A call's positions [1, n] and mask [1, 1, n, filled + n] where the caller gave none: the next n positions
    after the `filled` cached ones, causal (the positions on `device`, the mask on the CPU)."""
    if positions is None:
        positions = torch.arange(filled, filled + n, device=device)[None]  # [1, n]
    return positions, causal_mask(n, filled) if mask is None else mask


def causal_mask(n: int, filled: int) -> torch.Tensor:
    """[1, 1, n, filled + n] additive: row i sees the cache and new rows 0..i."""
    return additive_mask(torch.ones(n, filled + n, dtype=torch.bool).tril(filled), torch.float32)
