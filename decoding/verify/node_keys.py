"""Per-node generators keyed by (seed, the node's whole context): what a keyed candidate law (gumbel) and its
verifier (gls) both read, so the drafts and the target token come from the same exponentials.

Why keyed by context and not drawn from the run's generator: the run's generator is consumed differently by
different drafters (how many nodes, how many draws), so two runs with the same seed would give a node
different randomness. A key made of the seed and the node's context (prompt, tokens emitted so far, the
tree path down to the node) gives the same exponentials to the same context whatever drafted it: GLS's
target token Y = argmin E/p then depends on (seed, context, p) only, and a one-draft GLS run emits the same
text with any draft model (docs/verifiers.md §17.4). Distinct contexts get independent streams (a 64-bit
blake2b digest), so the emitted sequence keeps the target's law.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch

from decoding.verify.tree import DraftTree


def _ints(tokens: Sequence[int]) -> bytes:
    return b"".join(int(t).to_bytes(8, "little", signed=True) for t in tokens)


class NodeKeys:
    """The keys of one step's nodes: the committed context (ending with the root's token) hashed once."""

    def __init__(self, seed: int, context: Sequence[int]) -> None:
        if not context:
            raise ValueError("a keyed node needs a context of at least one token (the root)")
        self._root = hashlib.blake2b(_ints([seed]), digest_size=8, person=b"specscope-gls")
        self._root.update(_ints(context))

    def seed(self, tree: DraftTree, node: int) -> int:
        """The 63-bit seed of `node`: the root context plus the tokens on the path below the root."""
        h = self._root.copy()
        h.update(_ints(_path_tokens(tree, node)))
        return int.from_bytes(h.digest(), "little") >> 1

    def generator(self, tree: DraftTree, node: int) -> torch.Generator:
        """A fresh CPU generator for `node`: the same context always gives the same stream."""
        g = torch.Generator(device="cpu")
        g.manual_seed(self.seed(tree, node))
        return g


def _path_tokens(tree: DraftTree, node: int) -> list[int]:
    """Tokens from the root's first child down to `node` (the root's token is the context's last)."""
    tokens = []
    while node != 0:
        tokens.append(tree.tokens[node])
        node = tree.parents[node]
    return tokens[::-1]
