"""The fused head's rows computed incrementally, through the lean target's kind of products (drafting's forward).

Why: drafting adds a few rows at a time (the pairs the last step committed, then one level of the tree), each
attending to keys and values kept from earlier rows, where `FusedHead.unrolled` recomputes a whole sequence.
The products are `PackedProjection`s in a `lean_layers` dataclass and a `head`, as in a lean target, so the
product plan a calibration chose for the target goes on them too (few_rows.apply_plan; calibrate.put_plan).

`LeanFusedHead.rows` computes what the module computes for the same rows (float rounding aside:
tests/models/test_fused_head.py checks it against `FusedHead.unrolled`); the norms are the module's own.
Read-only after construction; one per loaded pair, shared by its runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from decoding.models.head.fused import FusedHead, rotary, rotate
from decoding.models.lean import few_rows
from decoding.models.lean.packed_linear import PackedProjection


@dataclass
class FusedProducts:
    """The fused head's products (few_rows reads a dataclass's product fields, as in a lean layer)."""

    fuse: PackedProjection  # (taps + 1) hidden -> hidden
    mix: PackedProjection  # 2 hidden -> hidden
    qkv: PackedProjection  # hidden -> 3 heads x dim
    o: PackedProjection  # heads x dim -> hidden
    gate: PackedProjection  # hidden -> inner
    up: PackedProjection  # hidden -> inner
    down: PackedProjection  # inner -> hidden


class LeanFusedHead:
    """The fused head's incremental forward (module docstring)."""

    def __init__(self, module: FusedHead, lm_rows: torch.Tensor) -> None:
        self.module, self.config = module, module.config
        self.lean_layers = [FusedProducts(*(PackedProjection(m) for m in (
            module.fuse, module.mix, module.qkv, module.o, module.gate, module.up, module.down)))]
        self.head = PackedProjection(SimpleNamespace(weight=lm_rows, bias=None))  # [.., hidden] -> [.., H]
        self.head_size = lm_rows.shape[0]
        few_rows.half_panels_where_exact(self)  # weights shipped in float16: half the bytes a level reads
        self.taps = self.config.taps

    def fused(self, taps: torch.Tensor) -> torch.Tensor:
        """taps [n, len(taps) + 1, hidden] -> g [n, hidden]."""
        parts = [norm(taps[:, k]) for k, norm in enumerate(self.module.tap_norms)]
        return self.lean_layers[0].fuse(torch.cat(parts, dim=-1))

    def rows(self, g: torch.Tensor, e: torch.Tensor, positions: torch.Tensor, past_keys: torch.Tensor,
             past_values: torch.Tensor, sees: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """n new rows: state g [n, hidden], token embedding e [n, hidden], rotary positions [n]; the kept keys and
        values [heads, m, dim]; sees [n, m + n] bool (row i attends to kept key c / new row r). Returns the rows'
        output states h [n, hidden] and their keys and values [heads, n, dim] (for rows attended to later)."""
        c, p = self.config, self.lean_layers[0]
        m = self.module
        x = g + p.mix(torch.cat([m.embed_norm(e), m.state_norm(g)], -1))  # [n, hidden]: the layer's input stream
        q, k, v = p.qkv(m.input_norm(x)).chunk(3, dim=-1)  # [n, width] each
        split = lambda x: x.unflatten(-1, (c.heads, c.head_dim)).transpose(0, 1)  # noqa: E731  [heads, n, dim]
        cos, sin = rotary(positions, c.head_dim, c.rope_base, g.device)  # [n, dim]
        q, k, v = rotate(split(q), cos, sin), rotate(split(k), cos, sin), split(v)
        keys, values = torch.cat([past_keys, k], dim=1), torch.cat([past_values, v], dim=1)  # [heads, m + n, dim]
        attended = F.scaled_dot_product_attention(q, keys, values, attn_mask=sees)  # [heads, n, dim]
        x = x + p.o(attended.transpose(0, 1).flatten(-2))  # [n, hidden]
        y = m.post_norm(x)
        return x + p.down(F.silu(p.gate(y)) * p.up(y)), k, v

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """states [n, hidden] -> q's logits over the head's ids [n, H]."""
        return self.head(self.module.out_norm(h))
