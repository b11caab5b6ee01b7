"""The model side of a step: next-token logits of draft-tree nodes, one forward per call.

`TreeLM` is the protocol the engine, drafting and scoring code talk to. Three kinds implement it:
- `HFTreeLM`: a transformers causal LM with a DynamicCache; a call is ONE forward over the new
  nodes with a 4-D tree mask and depth positions (docs/speed.md, "Tree attention");
- `ContextTreeLM`: a pure function of the token context (the toy pair, the prompt-lookup drafter);
- both share `TreeBook`, the bookkeeping of the context, the current tree and its fed nodes.

Cache layout of an `HFTreeLM` during a step: [committed prefix P][pending m][fed tree nodes, in
the order they were fed]. Pending tokens are accepted tokens that were never fed (a draft leaf):
they are fed, causally, in front of the tree nodes of the next step's first call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import torch

from decoding.models.packed_linear import packed_products, use_packed_projection
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


def tree_rows_allowed(tree: DraftTree, nodes: list[int], slots: dict[int, int], base: int,
                      n_cols: int) -> torch.Tensor:
    """[len(nodes), n_cols] bool: a node row sees columns [0, base) and the slots of its path (itself included)."""
    allowed = torch.zeros(len(nodes), n_cols, dtype=torch.bool)
    allowed[:, :base] = True
    for row, node in enumerate(nodes):
        allowed[row, [slots[a] for a in tree.path(node)]] = True
    return allowed


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """bool [n_new, n_cols] -> float [1, 1, n_new, n_cols]: 0 attend, finfo.min blocked (eager and sdpa)."""
    mask = torch.zeros(allowed.shape, dtype=dtype)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


def step_inputs(tree: DraftTree, nodes: list[int], pending: list[int], slots: dict[int, int], n_cached: int,
                base: int, filled: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs of one tree call: ids [1, n_new], additive mask [1, 1, n_new, filled + n_new], positions [1, n_new].

    The new tokens are `pending` (fed causally after the n_cached committed tokens) then `nodes`.
    base = n_cached + every pending token: a tree row sees all of them, plus the slots of its path;
    a node's position is base + its depth (siblings share one).
    """
    n_new = len(pending) + len(nodes)
    pending_rows = torch.ones(len(pending), filled + n_new, dtype=torch.bool).tril(filled)
    node_rows = tree_rows_allowed(tree, nodes, slots, base, filled + n_new)
    allowed = torch.cat([pending_rows, node_rows])  # [n_new, filled + n_new]
    depths = torch.tensor([tree.depths[n] for n in nodes], dtype=torch.long)
    positions = torch.cat([torch.arange(n_cached, n_cached + len(pending)), base + depths])  # [n_new]
    ids = torch.tensor([pending + [tree.tokens[n] for n in nodes]])  # [1, n_new]
    return ids, additive_mask(allowed, dtype), positions[None]


class HFTreeLM(TreeBook):
    """A transformers causal LM behind the TreeLM protocol, with its own DynamicCache (one per session).

    vocab_size: width of the returned logits; a narrower model is padded with -inf (a token the
    model cannot produce), a wider one is cut (e.g. a draft whose embedding has more padding rows).
    """

    def __init__(self, model, vocab_size: int | None = None) -> None:
        super().__init__()
        self.model = model
        use_packed_projection(model)  # few-row products packed once per row bucket; inert outside logits
        self.model_vocab = int(model.config.get_text_config().vocab_size)
        self.vocab_size = int(vocab_size or self.model_vocab)
        self.cache = None
        self.n_cached = 0  # committed prefix P in the cache
        self.pending: list[int] = []  # accepted tokens not in the cache, fed before the next root
        self.pending_fed = False  # the pending tokens were fed in this step's first call
        self.slots: dict[int, int] = {}  # tree node -> its cache slot (this step)

    @property
    def device(self) -> torch.device:
        return self.model.device

    def start(self, context: list[int]) -> None:
        from transformers import DynamicCache

        self._reset(context)
        new_cache = getattr(self.model, "new_cache", None)  # a lean model brings its own cache kind
        self.cache = new_cache() if callable(new_cache) else DynamicCache()
        self.n_cached, self.pending, self.pending_fed, self.slots = 0, [], False, {}
        if len(context) > 1:
            ids = torch.tensor([self.context[:-1]], device=self.device)  # [1, P]
            with torch.inference_mode():
                self._forward(ids, keep=1)
            self.n_cached = len(context) - 1
            self.prefills += 1

    def logits(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        self._admit(tree, nodes)
        if not nodes:
            return torch.empty(0, self.vocab_size)
        pending = [] if self.pending_fed else self.pending  # fed once, in the step's first call
        filled = self.cache.get_seq_length()  # prefix (+ pending) + nodes fed earlier in this step
        self.slots.update({n: filled + len(pending) + i for i, n in enumerate(nodes)})
        ids, mask, positions = step_inputs(tree, nodes, pending, self.slots, self.n_cached,
                                           self.n_cached + len(self.pending), filled, self.model.dtype)
        dev = self.device
        with torch.inference_mode(), packed_products():
            logits = self._forward(ids.to(dev), mask.to(dev), positions.to(dev), keep=len(nodes))
        self.pending_fed = True
        self.forwards += 1
        return self._fit_vocab(logits[0, -len(nodes):].float().cpu())  # [len(nodes), V]

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None, positions: torch.Tensor | None = None,
                 keep: int = 1) -> torch.Tensor:
        """ONE model forward over ids [1, n] into the cache: logits [1, keep, V] of the last `keep` rows
        (a subclass that also needs the rows' features overrides this)."""
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=self.cache,
                         use_cache=True, logits_to_keep=keep)
        return out.logits

    def _fit_vocab(self, logits: torch.Tensor) -> torch.Tensor:
        width = logits.shape[-1]
        if width > self.vocab_size:
            return logits[:, : self.vocab_size]
        if width < self.vocab_size:
            pad = torch.full((logits.shape[0], self.vocab_size - width), float("-inf"))
            return torch.cat([logits, pad], dim=-1)
        return logits

    def commit(self, path: list[int], next_token: int, tree: DraftTree | None = None) -> None:
        tokens = self._path_tokens(path, tree)
        fed_path = [n for n in path if n in self.slots]  # a prefix of the path: parents are fed first
        keep = list(range(self.n_cached))
        if self.pending_fed:
            keep += range(self.n_cached, self.n_cached + len(self.pending))
            self.pending = []
        keep += [self.slots[n] for n in fed_path]
        self._keep_cache(keep)
        self.n_cached = len(keep)
        self.pending = self.pending + tokens[len(fed_path):]
        self.pending_fed, self.slots = False, {}
        self.context = self.context + tokens[1:] + [int(next_token)]
        self.tree, self.fed = None, {}

    def _keep_cache(self, keep: list[int]) -> None:
        """Keep only cache positions `keep` (in order) on every layer; a plain prefix is a slice."""
        if self.cache is None or self.cache.get_seq_length() == len(keep) == 0:
            return
        if hasattr(self.cache, "keep"):  # a cache in one buffer gathers every layer at once (slot_cache.py)
            self.cache.keep(keep)
            return
        contiguous = keep == list(range(len(keep)))
        index = torch.tensor(keep, dtype=torch.long)
        for layer in self.cache.layers:
            if not getattr(layer, "is_initialized", False) or layer.keys.numel() == 0:
                continue
            if contiguous:
                layer.keys = layer.keys[..., : len(keep), :]
                layer.values = layer.values[..., : len(keep), :]
            else:
                idx = index.to(layer.keys.device)
                layer.keys = layer.keys.index_select(-2, idx)
                layer.values = layer.values.index_select(-2, idx)
