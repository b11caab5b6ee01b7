"""An immutable parent-pointer draft tree; every view (depth, mask, positions, paths) is derived.

Node 0 is the root: the last emitted token, not yet in any KV cache. Nodes are stored in a
topological order (a parent always precedes its children), so the flat order is the order in
which the tree is scored. Each node keeps its draws in draw order: `draws[n]` lists the child
node of every candidate drawn at n. Several draws may name the same child (K independent
sequences merged into a trie), or different children with the same token (i.i.d. branching).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch


@dataclass(frozen=True)
class DraftTree:
    tokens: tuple[int, ...]
    parents: tuple[int, ...]  # -1 for the root
    draws: tuple[tuple[int, ...], ...]  # per node: child node id of each draw, in draw order

    @staticmethod
    def root(token: int) -> DraftTree:
        return DraftTree(tokens=(int(token),), parents=(-1,), draws=((),))

    def __len__(self) -> int:
        return len(self.tokens)

    def add_draws(self, node: int, draw_tokens: list[int], merge: bool) -> DraftTree:
        """Attach the candidates drawn at `node` (a current leaf), in draw order.

        merge=False: one child per draw (i.i.d. / without-replacement branching).
        merge=True: draws of the same token share one child (a trie of independent sequences).
        """
        if self.draws[node]:
            raise ValueError(f"node {node} already has draws")
        tokens, parents, draws = list(self.tokens), list(self.parents), [list(d) for d in self.draws]
        seen: dict[int, int] = {}
        for tok in draw_tokens:
            if merge and tok in seen:
                draws[node].append(seen[tok])
                continue
            tokens.append(int(tok))
            parents.append(node)
            draws.append([])
            seen[tok] = len(tokens) - 1
            draws[node].append(len(tokens) - 1)
        return DraftTree(tuple(tokens), tuple(parents), tuple(tuple(d) for d in draws))

    def candidates(self, node: int) -> list[int]:
        """Tokens of the draws made at `node`, in draw order (duplicates kept)."""
        return [self.tokens[c] for c in self.draws[node]]

    def children(self, node: int) -> list[int]:
        """Distinct child nodes of `node`, in order of first draw."""
        return list(dict.fromkeys(self.draws[node]))

    @cached_property
    def depths(self) -> tuple[int, ...]:
        depth: list[int] = []
        for parent in self.parents:
            depth.append(0 if parent < 0 else depth[parent] + 1)
        return tuple(depth)

    @property
    def max_depth(self) -> int:
        return max(self.depths)

    def is_leaf(self, node: int) -> bool:
        return not self.draws[node]

    def nodes_at_depth(self, depth: int) -> list[int]:
        return [n for n, d in enumerate(self.depths) if d == depth]

    def path(self, node: int) -> list[int]:
        """Root-to-node list of node ids."""
        out = []
        while node >= 0:
            out.append(node)
            node = self.parents[node]
        return out[::-1]

    def leaves(self) -> list[int]:
        return [n for n in range(len(self)) if self.is_leaf(n)]

    def positions(self, offset: int) -> torch.Tensor:
        """[N] position id of each node: offset + depth (siblings share a position)."""
        return torch.tensor(self.depths, dtype=torch.long) + offset

    def retrieve_paths(self) -> list[list[int]]:
        """Root-to-leaf node paths, one per leaf."""
        return [self.path(leaf) for leaf in self.leaves()]
