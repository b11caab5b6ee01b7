"""A key/value cache in preallocated buffers: a call writes its rows in place; capacity doubles when full.

transformers' DynamicCache concatenates every layer's keys and values on every call (60 copies of the
whole cache per forward for a 30-layer model). `GrowingCache` keeps them in buffers
[1, kv_heads, capacity, head_dim] and a length. It offers what HFTreeLM needs of a cache:
`get_seq_length()`, and per layer `keys` / `values` views that can be assigned (to keep a tree's
accepted path: the assigned rows become the cache's first rows).
"""

from __future__ import annotations

import torch

MIN_CAPACITY = 256


class GrowingTensor:
    """Rows along dim -2 of a buffer that grows by doubling; `view()` is the filled part."""

    def __init__(self) -> None:
        self.buffer: torch.Tensor | None = None
        self.length = 0

    def view(self) -> torch.Tensor:
        assert self.buffer is not None
        return self.buffer[..., : self.length, :]

    def append(self, rows: torch.Tensor) -> torch.Tensor:
        """rows [..., n, d] -> the filled part after writing them: [..., length + n, d]."""
        self._reserve(rows, self.length + rows.shape[-2])
        self.buffer[..., self.length: self.length + rows.shape[-2], :] = rows
        self.length += rows.shape[-2]
        return self.view()

    def assign(self, rows: torch.Tensor) -> None:
        """Make `rows` [..., m, d] the whole content (a slice of view() or any other tensor)."""
        if self._is_prefix(rows):
            self.length = rows.shape[-2]  # a prefix of what is there: nothing to copy
            return
        rows = rows.clone() if self.buffer is not None and _shares_memory(rows, self.buffer) else rows
        self.length = 0
        with torch.inference_mode():  # the buffers are inference tensors (written inside forwards)
            self.append(rows)

    def _is_prefix(self, rows: torch.Tensor) -> bool:
        return (self.buffer is not None and rows.data_ptr() == self.buffer.data_ptr()
                and rows.stride() == self.buffer.stride() and rows.shape[-2] <= self.length
                and rows.shape[:-2] == self.buffer.shape[:-2])

    def _reserve(self, like: torch.Tensor, rows: int) -> None:
        if self.buffer is not None and self.buffer.shape[-2] >= rows:
            return
        capacity = max(MIN_CAPACITY, rows, 2 * (self.buffer.shape[-2] if self.buffer is not None else 0))
        grown = like.new_empty(*like.shape[:-2], capacity, like.shape[-1])
        if self.buffer is not None and self.length:
            grown[..., : self.length, :] = self.view()
        self.buffer = grown


def _shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


class GrowingLayer:
    """One layer's keys and values, with the attribute interface of a transformers cache layer."""

    is_initialized = True

    def __init__(self) -> None:
        self._keys, self._values = GrowingTensor(), GrowingTensor()

    @property
    def keys(self) -> torch.Tensor:
        return self._keys.view() if self._keys.buffer is not None else torch.empty(0)

    @keys.setter
    def keys(self, rows: torch.Tensor) -> None:
        self._keys.assign(rows)

    @property
    def values(self) -> torch.Tensor:
        return self._values.view() if self._values.buffer is not None else torch.empty(0)

    @values.setter
    def values(self, rows: torch.Tensor) -> None:
        self._values.assign(rows)


class GrowingCache:
    """Keys and values of every layer; `append` is what a layer's attention calls."""

    def __init__(self, n_layers: int) -> None:
        self.layers = [GrowingLayer() for _ in range(n_layers)]

    def get_seq_length(self) -> int:
        return self.layers[0]._keys.length if self.layers else 0

    def append(self, index: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """k, v [1, kv_heads, n, d] -> this layer's keys and values after writing them: [1, kv_heads, L + n, d]."""
        layer = self.layers[index]
        return layer._keys.append(k), layer._values.append(v)
