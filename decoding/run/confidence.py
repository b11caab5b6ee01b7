"""Drafting that stops where the draft is unsure (DecodeConfig.min_confidence): EAGLE-2's dynamic depth.

A drafted node's confidence is the draft's own probability of its path: the product, along the path from the
root, of q1(token) at each parent, where q1 = softmax(the draft's logits) at temperature 1 (the law a head
is trained to, whatever the run's temperature: at T = 0 the drafted q is one-hot, and says nothing). A node
gets children only where its confidence is at least `floor`; a node below it stays a leaf, drafted and
verified like any leaf, but nothing is drafted beneath it. So a step drafts deep where the draft is sure and
stops early where it is not, and a leaf costs no draft forward.

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
        self.law: dict[Path, torch.Tensor] = {}  # a non-leaf node's path -> q1 over its next token [V]

    def expanding(self, tree: DraftTree, nodes: list[int]) -> list[int]:
        """The nodes of `nodes` that get children: every one with no floor, else those sure enough."""
        if self.floor <= 0:
            return nodes
        return [n for n in nodes if self.of(path_tokens(tree, n)) >= self.floor]

    def learn(self, tree: DraftTree, nodes: list[int], logits: torch.Tensor) -> None:
        """The draft's logits [n, V] at `nodes` (about to get children): q1 at each, for their children's confidence."""
        if self.floor <= 0:
            return
        q1 = torch.softmax(logits.double(), dim=-1)  # [n, V]
        for node, row in zip(nodes, q1, strict=True):
            self.law[path_tokens(tree, node)] = row

    def of(self, path: Path) -> float:
        """The confidence of a drafted path: its parent's times q1 at the parent of its last token."""
        if path not in self.confidence:
            parent = path[:-1]
            self.confidence[path] = self.of(parent) * float(self.law[parent][path[-1]])
        return self.confidence[path]


def path_tokens(tree: DraftTree, node: int) -> Path:
    """The tokens from the root's first child down to `node` (the root's token excluded)."""
    return tuple(tree.tokens[n] for n in tree.path(node)[1:])
