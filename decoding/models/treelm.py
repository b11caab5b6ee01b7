"""The model side of a step: next-token logits of draft-tree nodes, one forward per call.

`TreeLM` is the protocol the engine, drafting and scoring code talk to. Three kinds implement it:
- `HFTreeLM` (hf_treelm.py): a transformers causal LM with a DynamicCache; a call is ONE forward over the
  new nodes with a 4-D tree mask and depth positions (tree_inputs.py; docs/speed.md, "Tree attention");
- `ContextTreeLM`: a pure function of the token context (the toy pair, the prompt-lookup drafter);
- both share `TreeBook`, the bookkeeping of the context, the current tree and its fed nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import torch

from decoding.verify.tree import DraftTree


@runtime_checkable
class TreeLM(Protocol):
    vocab_size: int
    forwards: int  # model forwards made by `logits` so far (the engine counts per step from deltas)
    prefills: int  # forwards made by `start` (context prefill), counted apart

    def start(self, context: list[int]) -> None:
        """Reset to a new context (all token ids so far). The last id is the ROOT of the first tree and
        stays uncached; the ids before it may be prefilled (one forward, counted in `prefills`)."""

    def logits(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        """[len(nodes), V] float32 CPU next-token logits of `nodes` of `tree`, in ONE forward.

        A row of -inf everywhere says "no guess here" (a model-free drafter with nothing to go on,
        e.g. prompt lookup without an n-gram match): drafting leaves that node a leaf (`proposes`).

        Every node's parent was fed in an earlier call since the last commit, or comes earlier in
        `nodes`. Pending tokens (see commit) are fed first, causally, in the step's first call.
        `nodes == []` makes no forward: it only shows the grown tree (the drafted leaves) to commit.
        """

    def commit(self, path: list[int], next_token: int, tree: DraftTree | None = None) -> None:
        """The step accepted `path` (node ids, root first) and emitted `next_token`, the next root.

        Only the prefix and the fed nodes of `path` stay cached; path nodes never fed (a draft leaf)
        become pending. `tree` defaults to the last tree passed to `logits`.
        """


class TreeBook:
    """Bookkeeping shared by every TreeLM: the context, the current tree, the nodes fed since the last commit.

    `context` holds every token id so far, the current root last. A call `logits(tree, nodes)` may
    only name nodes whose parent was fed in an earlier call of the same step or comes earlier in
    `nodes`; an empty `nodes` makes no forward and only records the (grown) tree, so that `commit`
    knows the tokens of drafted leaves.
    """

    def __init__(self) -> None:
        self.context: list[int] = []
        self.tree: DraftTree | None = None
        self.fed: dict[int, int] = {}  # node -> its token, for every node fed since the last commit
        self.forwards = 0
        self.prefills = 0

    def start(self, context: list[int]) -> None:
        """A session whose whole state follows from its context (no cache) only resets; HFTreeLM prefills."""
        self._reset(context)

    def commit(self, path: list[int], next_token: int, tree: DraftTree | None = None) -> None:
        """The accepted path's tokens and the next root join the context (a session with a cache overrides)."""
        tokens = self._path_tokens(path, tree)
        self._reset(self.context + tokens[1:] + [int(next_token)])

    def _reset(self, context: list[int]) -> None:
        if not context:
            raise ValueError("the context is empty: a TreeLM needs at least the root token")
        self.context = [int(t) for t in context]
        self.tree, self.fed = None, {}

    def _admit(self, tree: DraftTree, nodes: list[int]) -> None:
        """Check that `nodes` may be fed now, then record them and the tree."""
        if tree.tokens[0] != self.context[-1]:
            raise ValueError(f"tree root {tree.tokens[0]} is not the current root token {self.context[-1]}")
        for node, token in self.fed.items():
            if node >= len(tree) or tree.tokens[node] != token:
                raise ValueError(f"node {node} changed since it was fed: call commit before a new tree")
        fed_now: set[int] = set()
        for node in nodes:
            if node in self.fed or node in fed_now:
                raise ValueError(f"node {node} was already fed in this step")
            parent = tree.parents[node]
            if parent >= 0 and parent not in self.fed and parent not in fed_now:
                raise ValueError(f"node {node} comes before its parent {parent} was fed (need topological order)")
            fed_now.add(node)
        self.tree = tree
        self.fed.update({n: tree.tokens[n] for n in nodes})

    def _path_tokens(self, path: list[int], tree: DraftTree | None) -> list[int]:
        tree = tree if tree is not None else self.tree
        if not path or path[0] != 0:
            raise ValueError(f"an accepted path starts at the root node 0, got {path}")
        if tree is None or max(path) >= len(tree):
            raise ValueError(f"path {path} names nodes this TreeLM never saw (pass the tree to commit)")
        for child, parent in zip(path[1:], path[:-1], strict=False):
            if tree.parents[child] != parent:
                raise ValueError(f"path {path} is not a root-to-node path of the tree")
        return [tree.tokens[n] for n in path]

    def node_context(self, node: int) -> list[int]:
        """Every token id up to and including `node` of the current tree."""
        assert self.tree is not None
        return self.context + [self.tree.tokens[n] for n in self.tree.path(node)[1:]]


class ContextTreeLM(TreeBook):
    """A TreeLM whose logits are a pure function of the token context (toy models, prompt lookup).

    counts_forwards: whether a call counts as a model forward (the toy: yes; prompt lookup: no).
    """

    def __init__(self, next_logits: Callable[[list[int]], torch.Tensor], vocab_size: int,
                 counts_forwards: bool = True) -> None:
        super().__init__()
        self.next_logits = next_logits
        self.vocab_size = vocab_size
        self.counts_forwards = counts_forwards

    def logits(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        self._admit(tree, nodes)
        if not nodes:
            return torch.empty(0, self.vocab_size)
        self.forwards += int(self.counts_forwards)
        rows = [self.next_logits(self.node_context(n)).to(torch.float32) for n in nodes]
        return torch.stack(rows)  # [len(nodes), V]


def no_draft(vocab_size: int) -> ContextTreeLM:
    """The draft session of a run that never drafts (DecodeConfig.drafting False): it follows the context and
    never runs a model. The pair's own draft would prefill the prompt for nothing (the int8 self-draft's
    prefill made a target-alone run 5 % slower than plain decoding through the same forward)."""
    return ContextTreeLM(_never_called, vocab_size, counts_forwards=False)


def _never_called(context: list[int]) -> torch.Tensor:
    raise RuntimeError("a run that never drafts asked its draft for logits")


def proposes(logits: torch.Tensor) -> torch.Tensor:
    """[n] bool: the draft rows [n, V] with a guess, i.e. some logit above -inf (a NaN row still counts,
    so a broken model fails loudly in the warp instead of going quiet).

    Lossless for every verifier: whether a node gets children depends on that node's context alone,
    fixed before any of its candidates is drawn, and a verifier's law is the target's for every tree
    shape decided that way (tests/lab/test_ragged_trees.py enumerates it exactly).
    """
    return ~torch.isneginf(logits).all(dim=-1)


def with_guess(nodes: list[int], logits: torch.Tensor) -> tuple[list[int], torch.Tensor]:
    """The nodes whose draft row [len(nodes), V] has a guess, and their rows [n, V] (the rest stay leaves)."""
    keep = proposes(logits)  # [len(nodes)]
    return [n for n, k in zip(nodes, keep.tolist(), strict=True) if k], logits[keep]
