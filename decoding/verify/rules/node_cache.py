"""`NodeCache`: what a rule precomputes for one node (p, q, k), kept for repeated verify calls on it.

Why: a Monte-Carlo check (compare/montecarlo.py) verifies the same nodes thousands of times with
fresh uniforms; khisti_is would refit its induced draft law on every call. The cache is an explicit
object owned by the caller (`Verifier.memoised()` makes one per use), never module state.

Key: the identity of the caller's p and q rows (data pointer, shape, strides, version counter) and
k. The cache holds the rows themselves, so their memory cannot be freed and reused by other tensors
while an entry lives, and an in-place write bumps the version and misses. Bounded, LRU.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import torch

MAX_NODES = 64


def _key(t: torch.Tensor) -> tuple:
    return (t.data_ptr(), t.dtype, tuple(t.shape), t.stride(), t._version)


class NodeCache:
    """At most `max_nodes` entries, least recently used evicted first (one per node and k)."""

    def __init__(self, max_nodes: int = MAX_NODES) -> None:
        if max_nodes < 1:
            raise ValueError("a node cache holds at least one node")
        self.max_nodes = max_nodes
        self._entries: OrderedDict[Hashable, tuple[torch.Tensor, torch.Tensor, Any]] = OrderedDict()
        self.hits = self.misses = 0

    def get(self, p: torch.Tensor, q: torch.Tensor, k: int, build: Callable[[], Any]) -> Any:
        """The value cached for (p, q, k), or build() stored under it."""
        key = (_key(p), _key(q), k)
        if key in self._entries:
            self._entries.move_to_end(key)
            self.hits += 1
            return self._entries[key][2]
        self.misses += 1
        value = build()
        self._entries[key] = (p, q, value)  # the rows are held: their memory stays theirs
        while len(self._entries) > self.max_nodes:
            self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
