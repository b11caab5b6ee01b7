"""Merge several draft trees under one shared root into one forest, scored in ONE target forward.

Why: a compare step judges the same step with verifiers whose candidate laws differ, so it drafts
one tree per law. Scoring them one by one would cost one target forward each; flattened into one
forest (one mask, one position vector) they cost one. A forest node stands for a token path from
the root, so shared prefixes are scored once (the logits of a node depend only on its token path).

Node order: by depth, then by (tree, node) of first appearance. Growing the trees by one level
therefore never renumbers the forest nodes already there, which lets drafting feed the forest to
the draft model level by level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from decoding.verify.tree import DraftTree


@dataclass(frozen=True)
class Forest:
    tree: DraftTree  # the merged forest: node 0 is the shared root
    maps: tuple[tuple[int, ...], ...]  # maps[t][n]: forest id of node n of tree t

    def to_forest(self, t: int, nodes: Sequence[int]) -> list[int]:
        """Forest ids of `nodes` of tree t (e.g. its accepted path, for the KV commit)."""
        return [self.maps[t][n] for n in nodes]


def _token_paths(tree: DraftTree) -> list[tuple[int, ...]]:
    paths: list[tuple[int, ...]] = []
    for n, parent in enumerate(tree.parents):
        paths.append(() if parent < 0 else paths[parent] + (tree.tokens[n],))
    return paths


def build_forest(trees: Sequence[DraftTree]) -> Forest:
    """One DraftTree holding every token path of `trees` once, plus each tree's node -> forest map."""
    if not trees:
        raise ValueError("a forest needs at least one tree")
    root = trees[0].tokens[0]
    if any(t.tokens[0] != root for t in trees):
        raise ValueError("the trees of a forest must share their root token")
    paths = [_token_paths(t) for t in trees]
    order = sorted(
        ((t.depths[n], ti, n) for ti, t in enumerate(trees) for n in range(len(t))),
    )
    ids: dict[tuple[int, ...], int] = {}
    tokens: list[int] = []
    parents: list[int] = []
    for _, ti, n in order:
        key = paths[ti][n]
        if key in ids:
            continue
        ids[key] = len(tokens)
        tokens.append(trees[ti].tokens[n])
        parents.append(-1 if not key else ids[key[:-1]])
    children: list[list[int]] = [[] for _ in tokens]
    for node, parent in enumerate(parents):
        if parent >= 0:
            children[parent].append(node)
    forest = DraftTree(tuple(tokens), tuple(parents), tuple(tuple(c) for c in children))
    maps = tuple(tuple(ids[key] for key in tree_paths) for tree_paths in paths)
    return Forest(forest, maps)
