"""The draft head's forward through the lean target's kind of products, so a product plan can be put on them.

Why: a level of the embedded head multiplies 1-4 rows by 32 MB of weights (its MLP and the first head_size rows
of the target's lm_head), the same few-row products a verify makes, and MKL's few-row GEMM costs the same there:
with one thread a level over 2 or 4 parents took nearly twice one over a single parent (docs/speed.md, "Few-row
products", its draft head paragraph). With the plan a calibration chose for the target (few_rows.apply_plan:
the same method per row count, the same padding), those products read each weight once.

`LeanHead(head, lm_rows)` computes what `DraftHead.forward` computes, then q's logits over the head's ids,
product by product (float rounding aside: tests/models/test_draft_head.py); the module's norms are its own. It
looks like a lean target to few_rows (`head` and `lean_layers`), so apply_plan, plan_of and release_copies
treat it the same way. Read-only after construction; one per loaded pair, shared by its runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from decoding.models.head.weights import DraftHead
from decoding.models.lean import few_rows
from decoding.models.lean.packed_linear import PackedProjection


@dataclass
class HeadProducts:
    """The head's MLP products (few_rows reads a dataclass's product fields, as in a lean layer)."""

    fc: PackedProjection  # [f, e] (2 hidden) -> hidden
    gate: PackedProjection  # hidden -> inner
    up: PackedProjection  # hidden -> inner
    down: PackedProjection  # inner -> hidden


class LeanHead:
    def __init__(self, module: DraftHead, lm_rows: torch.Tensor, ids: torch.Tensor | None = None) -> None:
        self.module = module
        self.lean_layers = [HeadProducts(*(PackedProjection(m) for m in (module.fc, module.gate, module.up,
                                                                          module.down)))]
        self.head = PackedProjection(SimpleNamespace(weight=lm_rows, bias=None))  # [.., hidden] -> [.., H]
        self.head_size = lm_rows.shape[0]
        self.ids = torch.arange(self.head_size) if ids is None else ids.cpu()  # [H]: the token id of each row
        few_rows.half_panels_where_exact(self)  # weights shipped in float16: half the bytes a level reads

    def __call__(self, f: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """(feature f [w, hidden], token embedding e [w, hidden]) -> predicted next feature [w, hidden]."""
        p = self.lean_layers[0]
        x = p.fc(torch.cat([f, e], dim=-1))  # [w, hidden]
        y = self.module.norm(x)
        x = x + p.down(F.silu(p.gate(y)) * p.up(y))
        return self.module.out_norm(x)  # [w, hidden]

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """features [n, hidden] -> q's logits over the head's ids [n, H]."""
        return self.head(features)
