"""A key/value cache for a forward replayed from a CUDA graph: every layer's keys and values in ONE buffer.

A CUDA graph replays kernels on fixed addresses, so the cache cannot grow per call as GrowingCache does.
`Slots` holds one buffer [layers, 2, 1, kv_heads, capacity, head_dim] (keys at [:, 0], values at [:, 1])
and a length; a call writes its rows at the positions `write_at` names (a tensor the graph reads, so the
same graph writes anywhere), attention reads the whole capacity under a mask that blocks the unfilled
slots. Keeping a tree's accepted path is one gather over all layers (`keep`), not two per layer.

`Slots` also owns the graphs captured on its buffer (graphed_target.py fills `graphs`): they are valid
until the buffer grows. `SlotCache` is what a session holds: a handle that gives its `Slots` back to the
model's spare list when the session is dropped, so the next run reuses the buffer and its graphs instead
of capturing again. The spare list never holds more slots than were ever live at once (the app keeps at
most 16 runs: ui/run_cache.py); each is ~24 MB of float32 keys and values for SmolLM2-135M at 512 slots,
plus its graphs' workspace.
"""

from __future__ import annotations

import weakref

import torch

MIN_CAPACITY = 512


class Slots:
    """The buffer, its filled length, and the graphs captured on it (session state; one user at a time)."""

    def __init__(self, n_layers: int, kv_heads: int, head_dim: int, dtype: torch.dtype, device: torch.device,
                 capacity: int | None = None) -> None:
        shape = (n_layers, 2, 1, kv_heads, capacity or MIN_CAPACITY, head_dim)
        self.buffer = torch.zeros(shape, dtype=dtype, device=device)
        self.length = 0
        self.write_at: torch.Tensor | None = None  # [n] long: the slots the current call's rows go to
        self.graphs: dict[object, object] = {}  # rows bucket (and taps) -> a captured call (graphed_target.Captured)
        self.pool = None  # the CUDA graphs' shared memory pool, made at the first capture

    @property
    def capacity(self) -> int:
        return self.buffer.shape[-2]

    def get_seq_length(self) -> int:
        return self.length

    def reserve(self, rows: int) -> None:
        """Room for `rows` slots; growing copies the filled part into a new buffer and drops the graphs."""
        if rows <= self.capacity:
            return
        capacity = max(rows, 2 * self.capacity)
        *outer, _, head_dim = self.buffer.shape
        grown = self.buffer.new_zeros(*outer, capacity, head_dim)
        grown[..., : self.length, :] = self.buffer[..., : self.length, :]
        self.buffer, self.graphs, self.pool = grown, {}, None

    def append(self, index: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """k, v [1, kv_heads, n, d] written at `write_at` of layer `index`; its whole keys and values
        [1, kv_heads, capacity, d] (the caller's mask hides the slots that are not filled)."""
        keys, values = self.buffer[index, 0], self.buffer[index, 1]
        keys.index_copy_(-2, self.write_at, k)
        values.index_copy_(-2, self.write_at, v)
        return keys, values

    def keep(self, positions: list[int]) -> None:
        """Keep only slots `positions` (in order), as the first slots of every layer."""
        if positions != list(range(len(positions))):
            index = torch.tensor(positions, dtype=torch.long, device=self.buffer.device)
            with torch.inference_mode():
                self.buffer[..., : len(positions), :] = self.buffer.index_select(-2, index)
        self.length = len(positions)


class SlotCache:
    """A session's lease on a `Slots`: the cache HFTreeLM holds; the slots go back to `spare` when it is dropped."""

    def __init__(self, slots: Slots, spare: list[Slots]) -> None:
        self.slots = slots
        weakref.finalize(self, spare.append, slots)

    def get_seq_length(self) -> int:
        return self.slots.length

    def keep(self, positions: list[int]) -> None:
        self.slots.keep(positions)
