"""Drafting that stops where the draft is unsure (DecodeConfig.min_confidence): EAGLE-2's dynamic depth.

A drafted node's confidence is the draft's own probability of its path: the product, along the path from the
root, of q(token) at each parent, where q is the law the candidates were drawn from (the draft warped at the
run's temperature), or at T = 0, where a sampled draft's q is one-hot and says nothing, the draft's law at
temperature 1 (`confidence_temperature`; a ranked law's q at T = 0 is that law already). A node gets children
only where its confidence is at least `floor`; a node below it stays a leaf, drafted and verified like any
leaf, but nothing is drafted beneath it. So a step drafts deep where the draft is sure and stops early where
it is not, and a leaf costs no draft forward.

Lossless for every lossless verifier: whether a node gets children is a function of its own context (its
path's tokens and the draft's laws at its ancestors), fixed before any of its candidates is drawn, and a
verifier's law is the target's for every tree shape decided that way (treelm.proposes' ragged trees; exact
enumeration: tests/lab/test_ragged_trees.py). The wrong way, drawing a node's candidates and then dropping
those below the floor, depends on the draw and is biased; the same test catches it.

Session state: one per drafted tree (run/drafting.py) or forest (compare/drafting.py), keyed by path tokens, so
a forest's nodes rebuilt each level keep their confidences.
"""

from __future__ import annotations

import torch

from decoding.verify.tree import DraftTree

Path = tuple[int, ...]  # the tokens after the root, root first excluded


class PathConfidence:
    """The draft's probability of each drafted path, and which nodes may get children (module docstring)."""

    def __init__(self, floor: float) -> None:
        self.floor = float(floor)
        self.confidence: dict[Path, float] = {(): 1.0}
        self.law: dict[Path, torch.Tensor] = {}  # a non-leaf node's path -> the law of its next token [V]

    def expanding(self, tree: DraftTree, nodes: list[int]) -> list[int]:
        """The nodes of `nodes` that get children: every one with no floor, else those sure enough."""
        if not self.on:
            return nodes
        return [n for n in nodes if self.of(path_tokens(tree, n)) >= self.floor]

    @property
    def on(self) -> bool:
        return self.floor > 0

    def learn(self, tree: DraftTree, nodes: list[int], laws: torch.Tensor) -> None:
        """The confidence laws [n, V] at `nodes` (about to get children), for their children's confidence."""
        for node, row in zip(nodes, laws, strict=True):
            self.law[path_tokens(tree, node)] = row

    def of(self, path: Path) -> float:
        """The confidence of a drafted path: its parent path's, times the parent's law at the path's last token."""
        if path not in self.confidence:
            parent = path[:-1]
            self.confidence[path] = self.of(parent) * float(self.law[parent][path[-1]])
        return self.confidence[path]


def confidence_temperature(temperature: float) -> float:
    """The temperature of the law a confidence multiplies: the run's, or 1 at T = 0 (module docstring)."""
    return temperature if temperature > 0 else 1.0


def path_tokens(tree: DraftTree, node: int) -> Path:
    """The tokens from the root's first child down to `node` (the root's token excluded)."""
    return tuple(tree.tokens[n] for n in tree.path(node)[1:])
