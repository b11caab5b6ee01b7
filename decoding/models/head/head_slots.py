"""The fused draft head's keys and values in slots: the committed pairs first, then this step's drafted nodes.

Why: a drafted row attends to every committed pair, to its own drafted ancestors and to itself. With all of
them in one buffer [heads, capacity, dim] and a row-by-slot mask, every call of the head has one form: its rows'
keys and values written at the slots `write_at` names, attention over the slots under `sees`. On a CPU a call
then concatenates nothing; on a GPU the same call replays from a CUDA graph on fixed addresses
(head/graphed_calls.py), which is why the buffer never moves between calls unless it must grow.

Session state: one per draft session (fused_drafter.py), one user at a time.
"""

from __future__ import annotations

import torch

MIN_CAPACITY = 256  # slots made at first; a longer context doubles the buffer (and drops graphs made on it)


class HeadSlots:
    """The buffer, how many committed pairs it holds, and which slot each drafted node of this step took."""

    def __init__(self, heads: int, head_dim: int, device: torch.device | str, dtype: torch.dtype = torch.float32,
                 capacity: int = MIN_CAPACITY) -> None:
        self.keys = torch.zeros(heads, capacity, head_dim, dtype=dtype, device=device)  # [heads, capacity, dim]
        self.values = torch.zeros_like(self.keys)
        self.committed = 0  # slots 0 .. committed - 1: pairs 0 .. committed - 1 of the context
        self.drafted: dict[int, int] = {}  # drafted tree node -> its slot (committed, committed + 1, ...)
        self.graphs: dict[object, object] = {}  # captured calls on this buffer (graphed_calls.py fills it)
        self.pool = None  # their CUDA memory pool

    @property
    def capacity(self) -> int:
        return self.keys.shape[1]

    @property
    def filled(self) -> int:
        return self.committed + len(self.drafted)

    def reserve(self, slots: int) -> None:
        """Room for `slots` slots; growing copies the filled part into a new buffer and drops the graphs."""
        if slots <= self.capacity:
            return
        capacity = max(slots, 2 * self.capacity)
        for name in ("keys", "values"):
            old = getattr(self, name)
            grown = old.new_zeros(old.shape[0], capacity, old.shape[2])
            grown[:, : self.filled] = old[:, : self.filled]
            setattr(self, name, grown)
        self.graphs, self.pool = {}, None

    def forget(self, committed: int) -> None:
        """Keep the first `committed` pairs only; this step's drafted nodes are dropped."""
        self.committed = committed
        self.drafted = {}
