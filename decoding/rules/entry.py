"""The registry entry: one verifier described once, with its metadata and three pure functions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from decoding import laws
from decoding.verdict import NodeVerdict

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
