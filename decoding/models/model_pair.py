"""`ModelPair`: what the engine needs of a model pair (fresh sessions, the tokenizer facade, a description).

Built by the pair builders (pairs.py's table) and shared read-only by every run and user of that pair. The one
mutable thing reachable from a shared pair is the target's product plan (lean/few_rows.py): this machine's
calibration puts it on the loaded lean target (decoding/speed/plan.py), and `describe()` reports it under
PLAN_KEY; it changes p by float rounding at most, so `same_pair` leaves it out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from decoding.models.codec import Codec
from decoding.models.lean import few_rows
from decoding.models.treelm import TreeLM

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ModelPair:
    """What the engine needs of a pair: fresh sessions, the tokenizer facade, a description.

    target_model / draft_model: the shared read-only transformers models (None for model-free sides).
    draft_reads_target: the draft session reads its run's target session (a draft head's features), so
    `draft_session` needs that session.
    """

    kind: str
    target_name: str
    draft_name: str
    codec: Codec
    new_target: Callable[[], TreeLM]
    new_draft: Callable[[], TreeLM]
    device: str
    dtype: str
    target_model: Any = None
    draft_model: Any = None
    draft_dtype: str | None = None  # when the draft differs from `dtype` (the int8 self-draft)
    draft_reads_target: bool = False
    draft_products: Any = None  # the draft's lean products, where a product plan goes too (the draft head's)

    @property
    def names(self) -> tuple[str, str]:
        return self.target_name, self.draft_name

    def target_session(self) -> TreeLM:
        return self.new_target()

    def draft_session(self, target: TreeLM | None = None) -> TreeLM:
        """A fresh draft session; `target`: the same run's target session (needed when draft_reads_target)."""
        if not self.draft_reads_target:
            return self.new_draft()
        if target is None:
            raise ValueError(f"the {self.kind} pair's draft reads its run's target session: pass it")
        return self.new_draft(target)

    def encode_prompt(self, text: str, chat: bool) -> list[int]:
        return self.codec.encode_prompt(text, chat)

    def token_text(self, token_id: int) -> str:
        return self.codec.token_text(token_id)

    def decode(self, ids: list[int]) -> str:
        return self.codec.decode(ids)

    @property
    def eos_ids(self) -> frozenset[int]:
        return self.codec.eos_ids

    @property
    def vocab_size(self) -> int:
        return self.codec.vocab_size

    @property
    def max_context(self) -> int:
        return self.codec.max_context

    def describe(self) -> dict:
        """JSON-ready description for the trace."""
        out = {"kind": self.kind, "target": self.target_name, "draft": self.draft_name,
               "device": self.device, "dtype": self.dtype, "vocab_size": self.vocab_size}
        if self.draft_dtype:
            out["draft_dtype"] = self.draft_dtype
        products = few_rows.plan_words(getattr(self.target_session(), "model", None))
        if products:
            out[PLAN_KEY] = products  # the machine's product plan (decoding/speed): p up to float rounding
        return out


PLAN_KEY = "products"  # describe()'s entry for the machine's product plan: information, not identity


def same_pair(a: dict, b: dict) -> bool:
    """Whether two descriptions (`ModelPair.describe()`, a trace's `models`) name the same pair. The product
    plan is left out: a calibration puts it on, or changes it, under a loaded pair and its live runs (p moves
    by float rounding at most), and a run started before must still be that pair's run."""
    return {k: v for k, v in a.items() if k != PLAN_KEY} == {k: v for k, v in b.items() if k != PLAN_KEY}
