"""A tree-level verifier: one registry entry that judges a whole drafted tree at once.

Token-level entries (entry.py) decide node by node and the walk lifts them to a tree. Sequence-level
verifiers (block verification, traversal verification, Medusa's typical acceptance over paths) decide
on a whole path or tree, with one coin per position, so they provide the two tree functions directly:
    judge(tree, p, q, generator) -> TreeWalk   the accepted path, the emitted tokens and, in order,
                                               every test the verifier made (TreeEvent story);
    step_law(tree, p, q) -> list[Outcome]      the exact law of the step's outcome (step_law.py).
They have no node-level `verify`/`conditional`: nothing may lift them node by node (level = "tree").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from decoding.verify import laws
from decoding.verify.entry_base import EntryBase
from decoding.verify.step_law import Outcome
from decoding.verify.tree import DraftTree
from decoding.verify.walk import Walk


@dataclass(frozen=True)
class TreeEvent:
    """One entry of a tree-level verifier's story, in the order it happened.

    kind: block "coin" (position i: h_i, eta_i), "tau"; traversal "try" (a leaf tested with its
    weight w), "delete" (a rejected leaf removed, its parent's rows updated); typical_medusa
    "typical" (one candidate's test), "choose"; hsd "ratio" (a prefix's P, Q and r = P/Q), "stepback"
    (position k's coin), "final" (the whole-draft coin), "tau"; every verifier ends with "emit".
    """

    kind: str
    node: int  # the tree node this event is about
    token: int  # that node's token (the emitted token for "emit")
    numerator: float | None = None
    denominator: float | None = None
    threshold: float | None = None  # the probability tested (h_i, w(leaf)) or the value computed
    uniform: float | None = None  # the coin, when one was drawn
    passed: bool | None = None
    label: str = ""  # what the numbers are
    note: str = ""  # why, in words
    target: torch.Tensor | None = None  # [V] updated target row (delete) or the emission law (emit)
    draft: torch.Tensor | None = None  # [V] updated draft row (delete)


@dataclass(frozen=True)
class TreeWalk(Walk):
    """A Walk (visits stay empty) plus the tree-level story and the nodes the verifier rejected."""

    events: tuple[TreeEvent, ...] = ()
    rejected: tuple[int, ...] = ()


JudgeFn = Callable[[DraftTree, torch.Tensor, torch.Tensor, torch.Generator], TreeWalk]
LawFn = Callable[[DraftTree, torch.Tensor, torch.Tensor], list[Outcome]]
ShapeFn = Callable[[DraftTree], str | None]


@dataclass(frozen=True)
class TreeVerifier(EntryBase):
    """A tree-level verifier with the registry's metadata (same fields as a token-level Verifier).

    shape(tree) -> None when the verifier is defined on this tree, else a one-line refusal.
    max_candidates bounds the draws per node (block: 1, a chain), checked on configs by check_k.
    """

    name: str
    title: str
    lossless: bool
    law: laws.Law  # the candidate law drafting must use at every node (a name is looked up: laws.get)
    max_candidates: int | None
    description: str
    paper: str
    judge_fn: JudgeFn = field(repr=False)
    law_fn: LawFn = field(repr=False)
    shape: ShapeFn = field(repr=False)
    shapes: str = ""  # the supported shapes, in words

    level = "tree"

    def __post_init__(self) -> None:
        object.__setattr__(self, "law", laws.get(self.law))

    def judge(self, tree: DraftTree, p: torch.Tensor, q: torch.Tensor, generator: torch.Generator) -> TreeWalk:
        """Verify the whole tree (p, q: [N, V] rows; q rows of leaves unused)."""
        self._check_shape(tree)
        return self.judge_fn(tree, p, q, generator)

    def memoised(self, cache=None) -> TreeVerifier:
        """Itself: a tree-level verifier keeps no per-node precomputation (Verifier.memoised's twin)."""
        return self

    def step_law(self, tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> list[Outcome]:
        """The exact law of this step's outcome given the tree."""
        self._check_shape(tree)
        return sorted(self.law_fn(tree, p, q), key=lambda o: o.path)

    def too_many(self, k: int) -> str:
        """A tree-level entry's limit is a shape: say which ones it supports."""
        return f"supports {self.shapes}; got {k} candidates at a node"

    def _check_shape(self, tree: DraftTree) -> None:
        refusal = self.shape(tree)
        if refusal is not None:
            raise ValueError(f"verifier {self.name!r} ({self.title}): {refusal}")
