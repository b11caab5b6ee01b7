"""The registry entry: one verifier described once, with its metadata and three pure functions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from decoding.verify import laws
from decoding.verify.step_law import Outcome, node_level_law
from decoding.verify.tree import DraftTree
from decoding.verify.verdict import NodeVerdict

if TYPE_CHECKING:
    from decoding.verify.walk import Walk

VerifyFn = Callable[[torch.Tensor, torch.Tensor, Sequence[int], torch.Generator], NodeVerdict]
ConditionalFn = Callable[[torch.Tensor, torch.Tensor, Sequence[int]], tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class Verifier:
    """A token-level verifier.

    verify(p, q, candidates, generator) -> NodeVerdict
        p: [V] warped target law at the node; q: [V] the law the candidates were drawn from.
    conditional(p, q, candidates) -> (accept [k], residual [V])
        accept[i]: exact probability that candidate i is accepted given the candidates;
        residual: law of the emitted token when none is accepted (zeros if that never happens).
    """

    name: str
    title: str
    lossless: bool
    law: str
    max_candidates: int | None
    description: str
    paper: str
    verify: VerifyFn
    conditional: ConditionalFn

    level = "node"  # a tree-level verifier (block, traversal) judges a whole tree at once

    def judge(self, tree: DraftTree, p: torch.Tensor, q: torch.Tensor, generator: torch.Generator) -> Walk:
        """Verify a whole drafted tree (p, q: [N, V]): the walk lifts this node-level rule to the tree."""
        from decoding.verify.walk import walk  # the walk module imports this one

        return walk(tree, p, q, self, generator)

    def step_law(self, tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> list[Outcome]:
        """The exact law of this step's outcome given the tree (see step_law.py)."""
        return node_level_law(self, tree, p, q)

    def sample(self, q: torch.Tensor, k: int, generator: torch.Generator) -> list[int]:
        """k candidates from q with this verifier's candidate law, in draw order."""
        self.check_k(k)
        return laws.sample(self.law, q, k, generator)

    def check_k(self, k: int) -> None:
        """Refuse a candidate count this verifier is not defined for, with a clear message."""
        if k < 1:
            raise ValueError(f"verifier {self.name!r} needs at least one candidate per node, got {k}")
        if self.max_candidates is not None and k > self.max_candidates:
            raise ValueError(
                f"verifier {self.name!r} ({self.title}) takes at most {self.max_candidates} "
                f"candidates per node, got {k}"
            )
