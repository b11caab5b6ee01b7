"""The fused head's rows computed incrementally, through the lean target's kind of products (drafting's forward).

Why: drafting adds a few rows at a time (the pairs the last step committed, then one level of the tree), each
attending to keys and values kept from earlier rows (in slots: head_slots.py), where `FusedHead.unrolled`
recomputes a whole sequence.
The products are `PackedProjection`s in a `lean_layers` dataclass and a `head`, as in a lean target, so the
product plan a calibration chose for the target goes on them too (few_rows.apply_plan; calibrate.put_plan).

`LeanFusedHead.call` computes what the module computes for the same rows (float rounding aside:
tests/models/test_fused_head.py checks it against `FusedHead.unrolled`); the norms are the module's own.
Read-only after construction; one per loaded pair, shared by its runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from decoding.models.head.fused import FusedHead, rotary, rotate
from decoding.models.head.head_slots import HeadSlots
from decoding.models.lean import few_rows
from decoding.models.lean.packed_linear import PackedProjection


@dataclass(frozen=True)
class HeadCall:
    """One call's rows: x [n, hidden] (the parents' states), or with from_taps the target's taps flattened
    [n, (len(taps) + 1) x hidden] (a step's catch-up: g is fused from them); e [n, hidden] the rows' token
    embeddings; positions [n] long; write_at [n] long, the consecutive slots first, first + 1, ... (`first`: the
    same on the host, read without waiting for the device); sees [n, width] bool (LeanFusedHead.rows_at)."""

    x: torch.Tensor
    e: torch.Tensor
    positions: torch.Tensor
    write_at: torch.Tensor
    first: int
    sees: torch.Tensor
    from_taps: bool = False


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

    def __init__(self, module: FusedHead, lm_rows: torch.Tensor, ids: torch.Tensor | None = None) -> None:
        self.module, self.config = module, module.config
        self.lean_layers = [FusedProducts(*(PackedProjection(m) for m in (
            module.fuse, module.mix, module.qkv, module.o, module.gate, module.up, module.down)))]
        self.head = PackedProjection(SimpleNamespace(weight=lm_rows, bias=None))  # [.., hidden] -> [.., H]
        self.head_size = lm_rows.shape[0]
        self.ids = torch.arange(self.head_size) if ids is None else ids.cpu()  # [H]: the token id of each row
        few_rows.half_panels_where_exact(self)  # weights shipped in float16: half the bytes a level reads
        self.taps = self.config.taps

    def fused(self, taps: torch.Tensor) -> torch.Tensor:
        """taps [n, len(taps) + 1, hidden] -> g [n, hidden]."""
        parts = [norm(taps[:, k]) for k, norm in enumerate(self.module.tap_norms)]
        return self.lean_layers[0].fuse(torch.cat(parts, dim=-1))

    def call(self, slots: HeadSlots, rows: HeadCall) -> tuple[torch.Tensor, torch.Tensor]:
        """One call of the head (a step's catch-up, or a drafted level): the rows' output states h [n, hidden] and
        q's logits over the head's ids [m, H] of the rows drafting reads: the last (the root's) of a catch-up, every
        row of a level. The rows' keys and values are written into `slots` at rows.write_at."""
        h = self.states(slots, rows)
        return h, self.logits(h[-1:] if rows.from_taps else h)

    def states(self, slots: HeadSlots, rows: HeadCall) -> torch.Tensor:
        """The call's output states h [n, hidden], its keys and values written into `slots` (no logits)."""
        return self.rows_at(self.state_in(rows), rows.e, rows.positions, slots, rows.write_at, rows.sees)

    def state_in(self, rows: HeadCall) -> torch.Tensor:
        """The rows' states g [n, hidden]: given, or for a catch-up fused from the target's taps."""
        return self.fused(rows.x.unflatten(-1, (len(self.taps) + 1, -1))) if rows.from_taps else rows.x

    def rows_at(self, g: torch.Tensor, e: torch.Tensor, positions: torch.Tensor, slots: HeadSlots,
                write_at: torch.Tensor, sees: torch.Tensor) -> torch.Tensor:
        """n new rows: state g [n, hidden], token embedding e [n, hidden], rotary positions [n]; their keys and
        values go into `slots` at write_at [n]; sees [n, width] bool: row i attends to slot c < width where
        sees[i, c] (the kept pairs, its drafted ancestors, itself). Returns the rows' output states h [n, hidden]."""
        c, p = self.config, self.lean_layers[0]
        m = self.module
        x = g + p.mix(torch.cat([m.embed_norm(e), m.state_norm(g)], -1))  # [n, hidden]: the layer's input stream
        q, k, v = p.qkv(m.input_norm(x)).chunk(3, dim=-1)  # [n, width] each
        split = lambda x: x.unflatten(-1, (c.heads, c.head_dim)).transpose(0, 1)  # noqa: E731  [heads, n, dim]
        cos, sin = rotary(positions, c.head_dim, c.rope_base, g.device)  # [n, dim]
        q, k, v = rotate(split(q), cos, sin), rotate(split(k), cos, sin), split(v)
        slots.keys.index_copy_(1, write_at, k)
        slots.values.index_copy_(1, write_at, v)
        width = sees.shape[-1]
        attended = F.scaled_dot_product_attention(q, slots.keys[:, :width], slots.values[:, :width],
                                                  attn_mask=sees)  # [heads, n, dim]
        x = x + p.o(attended.transpose(0, 1).flatten(-2))  # [n, hidden]
        y = m.post_norm(x)
        return x + p.down(F.silu(p.gate(y)) * p.up(y))

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """states [n, hidden] -> q's logits over the head's ids [n, H]."""
        return self.head(self.module.out_norm(h))
