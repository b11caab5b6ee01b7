"""What a one-level verifier returns: the outcome and every test it made, in order.

These are the in-memory types of the token-level library (they may hold [V] tensors).
`records.py` turns them into plain, JSON-ready data for the viz.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class AcceptTest:
    """One accept/reject test: passed iff uniform <= threshold = min(1, numerator / denominator)."""

    candidate: int  # index into the candidate tuple (draw order); -1 for a test on no candidate
    token: int
    numerator: float
    denominator: float
    threshold: float
    uniform: float
    passed: bool
    label: str = ""  # what the numerator/denominator are, e.g. "r(x)/d(x)", "p(x)/(rho q(x))"


@dataclass(frozen=True)
class ResidualUpdate:
    """The residual (and, without replacement, the draft law) after a rejected test."""

    after_test: int  # index into NodeVerdict.tests
    residual: torch.Tensor  # [V] float64, normalised (all zero only if it holds no mass)
    draft: torch.Tensor | None = None  # [V] float64: current d for without-replacement laws
    note: str = ""


@dataclass(frozen=True)
class NodeVerdict:
    """Outcome at one node.

    accepted: index of the accepted candidate, or None when the token came from the residual.
    token: the emitted token (the accepted candidate's token, or the residual sample).
    via_residual: True when a residual sample equal to a candidate counts as accepting it
        (hu_greedy); then `accepted` is that candidate's index.
    residual: [V] the law the residual token was drawn from (None if a candidate was accepted by test).
    """

    accepted: int | None
    token: int
    tests: tuple[AcceptTest, ...] = ()
    updates: tuple[ResidualUpdate, ...] = ()
    residual: torch.Tensor | None = None
    via_residual: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
