"""Few-row products of a tree forward through MKL's pre-packed GEMM.

Why: a verify forward multiplies a few rows (the tree's N nodes) by every weight matrix. On a CPU,
MKL's GEMM for 4..64 rows re-packs the whole weight matrix on every call and costs 1.5-3x a one-row
product (docs/speed.md, "Cost of one target forward on a CPU"): that, not the arithmetic, is what made a
5-row verify cost 2x a decode step. MKL can pack a weight once for a given row count (`cblas_sgemm_pack`, exposed as
`torch.ops.mkl._mkl_reorder_linear_weight`); the product then reads the packed copy directly. On the 2-core
CPU it cut a 5-row tree forward of SmolLM2-135M by a quarter and a 22-row one by half (docs/speed.md,
"Measurements the code's comments cite").

A packed copy serves one row count, so rows are padded with zeros up to a bucket (BUCKETS) and the
extra rows are dropped: rows are independent, so the kept rows are the same product (float rounding
only). Each packed bucket is a second copy of the weights (540 MB for the embedded target); a
`PackedProjection` keeps at most MAX_PACKS of them, least recently used first out. One-row decode
steps, long prefills, non-CPU devices and torch builds without MKL keep `F.linear`.
"""

from __future__ import annotations

import contextvars
import copy
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

import torch

BUCKETS = (4, 8, 16, 32, 64)  # padded row counts a weight is packed for
MIN_ROWS = 4  # fewer rows keep F.linear: measured cheaper for 2 and 3 rows per forward of the lean target
# (`python -m bench forwards`), packing wins from 4 rows on (docs/speed.md, "Measurements the code's comments cite")
MAX_PACKS = 3  # packed copies kept per weight (each one the size of the weight)
_ACTIVE = contextvars.ContextVar("specscope_packed_products", default=False)


def mkl_packing_available() -> bool:
    return bool(torch._C.has_mkl) and hasattr(torch.ops.mkl, "_mkl_linear")


@contextmanager
def packed_products() -> Iterator[None]:
    """Inside this block, the few-row products of models set up with `use_packed_projection` are packed."""
    token = _ACTIVE.set(True)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def bucket_for(rows: int) -> int | None:
    """The smallest bucket holding `rows` rows; None below MIN_ROWS or above the largest bucket."""
    if rows < MIN_ROWS:
        return None
    return next((b for b in BUCKETS if rows <= b), None)


class PackedProjection:
    """The forward of one float nn.Linear: F.linear, or the packed product for MIN_ROWS..BUCKETS[-1] rows."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        self.weight, self.bias = linear.weight, linear.bias
        self.packs: OrderedDict[int, torch.Tensor] = OrderedDict()
        self.lock = threading.Lock()  # users share a model: one packing per bucket
        self.panel_dtype = torch.float32  # the native products' copy (few_rows.half_panels_where_exact)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1]
        bucket = bucket_for(rows) if _ACTIVE.get() and x.device.type == "cpu" else None
        if bucket is None or x.dtype != torch.float32 or self.weight.dtype != torch.float32:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        flat = torch.nn.functional.pad(x.reshape(rows, -1), (0, 0, 0, bucket - rows))  # [bucket, in]
        out = torch.ops.mkl._mkl_linear(flat, self.pack(bucket), self.weight, self.bias, bucket)  # [bucket, out]
        return out[:rows].reshape(*x.shape[:-1], self.weight.shape[0])

    def __deepcopy__(self, memo: dict) -> PackedProjection:
        """A copied model (the int8 self-draft is a deepcopy of its target) gets the copied weights and no
        packs: packed tensors are opaque to deepcopy, and repacking is cheap next to a copy."""
        clone = PackedProjection.__new__(PackedProjection)
        clone.weight = copy.deepcopy(self.weight, memo)
        clone.bias = copy.deepcopy(self.bias, memo)
        clone.packs, clone.lock = OrderedDict(), threading.Lock()
        clone.panel_dtype = self.panel_dtype
        return clone

    def pack(self, bucket: int) -> torch.Tensor:
        with self.lock:
            if bucket in self.packs:
                self.packs.move_to_end(bucket)
                return self.packs[bucket]
            with torch.inference_mode():
                packed = torch.ops.mkl._mkl_reorder_linear_weight(self.weight.detach(), bucket)
            self.packs[bucket] = packed
            while len(self.packs) > MAX_PACKS:
                self.packs.popitem(last=False)
            return packed


def use_packed_projection(model) -> None:
    """Route every float32 nn.Linear of `model` through a PackedProjection (idempotent). Inert outside
    `packed_products()`, and where MKL is missing."""
    if getattr(model, "_specscope_packed", False) or not mkl_packing_available():
        return
    for module in model.modules():
        if type(module) is torch.nn.Linear and module.weight.dtype == torch.float32:
            module.forward = PackedProjection(module)
    model._specscope_packed = True
