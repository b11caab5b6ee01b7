"""What every registry entry does alike, node-level (`Verifier`) or tree-level (`TreeVerifier`): refuse a
candidate count it is not defined for, and draw a node's candidates with its own law.

Why one place: both entries validated k and drew candidates with the same lines, and only the wording
of the upper limit differs (a node-level entry counts candidates per node, a tree-level one names the
tree shapes it supports), so that wording is the one method an entry overrides.
"""

from __future__ import annotations

import torch

from decoding.verify import laws


class EntryBase:
    """Mixed into the frozen entry dataclasses (a plain class: it adds methods, no fields)."""

    name: str
    title: str
    law: laws.Law
    max_candidates: int | None

    def sample(self, q: torch.Tensor, k: int, generator: torch.Generator) -> list[int]:
        """k candidates from q [V] with this verifier's candidate law, in draw order."""
        self.check_k(k)
        return self.law.sample(q, k, generator)

    def check_k(self, k: int) -> None:
        """Refuse a candidate count this verifier is not defined for, with a clear one-line message."""
        if k < 1:
            raise ValueError(f"verifier {self.name!r} needs at least one candidate per node, got {k}")
        if self.max_candidates is not None and k > self.max_candidates:
            raise ValueError(f"verifier {self.name!r} ({self.title}) {self.too_many(k)}")

    def configured(self, config) -> EntryBase:
        """This entry with the parameters a DecodeConfig holds for it; entries without parameters are as they are
        (a node-level entry with `params`, fuzzy, overrides this)."""
        return self

    def too_many(self, k: int) -> str:
        """The refusal of k > max_candidates, after "verifier 'name' (title) "."""
        return f"takes at most {self.max_candidates} candidates per node, got {k}"
