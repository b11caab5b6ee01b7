"""Few-row products of the target's lm_head, by the method this machine does fastest (a per-row-count plan).

Why: a verify multiplies a few rows (the tree's nodes) by the [V, hidden] lm_head, the widest product of the
forward (49152 x 576, 113 MB float32 for SmolLM2-135M). What that costs depends on the BLAS and the CPU far
more than on the arithmetic: on one 2-core AMD EPYC VM, one thread, MKL's F.linear took 12.6 / 29.5 / 44.3 ms
for 1 / 2 / 3 rows where numpy's OpenBLAS took 4.6 / 11.7 / 11.1 ms (issue 26; docs/speed.md). So the method
is measured on the machine (decoding/speed/products.py) and chosen per row count; p stays the target's:
every method computes the same product up to float rounding (tests/models/test_few_rows.py).

`PRODUCTS` is the registry of methods; `PlannedProjection` wraps the lean target's head with a plan
{rows: method}; rows without an entry (and non-float32 or non-CPU input) take the wrapped projection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from decoding.models.packed_linear import PackedProjection

SPLITS = 4  # column blocks of the split product


@dataclass(frozen=True)
class Product:
    about: str
    run: Callable[[PlannedProjection, torch.Tensor], torch.Tensor]  # (projection, x [M, in]) -> [M, out]


def _stock(proj: PlannedProjection, x: torch.Tensor) -> torch.Tensor:
    return proj.inner(x)


def _numpy(proj: PlannedProjection, x: torch.Tensor) -> torch.Tensor:
    out = torch.from_numpy(x.detach().contiguous().numpy() @ proj.transposed())  # [M, out]
    return out if proj.bias is None else out + proj.bias


def _split(proj: PlannedProjection, x: torch.Tensor) -> torch.Tensor:
    blocks = proj.weight.chunk(SPLITS, dim=0)  # [out / SPLITS, in] each: views, no copy
    out = torch.cat([torch.nn.functional.linear(x, w) for w in blocks], dim=-1)  # [M, out]
    return out if proj.bias is None else out + proj.bias


PRODUCTS: dict[str, Product] = {
    "stock": Product("F.linear (MKL); MKL's pre-packed GEMM from 4 rows inside a tree forward", _stock),
    "numpy": Product("numpy's matmul (its BLAS, OpenBLAS in the wheels) on a transposed copy of the weight", _numpy),
    "split": Product(f"F.linear over {SPLITS} column blocks of the weight, concatenated", _split),
}


class PlannedProjection:
    """The lean target's head with a plan: rows -> a PRODUCTS key. Built by `apply_plan`, read-only after."""

    def __init__(self, inner: PackedProjection, plan: dict[int, str]) -> None:
        unknown = sorted(set(plan.values()) - set(PRODUCTS))
        if unknown:
            raise ValueError(f"unknown product method(s) {unknown}; known: {', '.join(PRODUCTS)}")
        self.inner, self.plan = inner, dict(plan)
        self.weight, self.bias = inner.weight, inner.bias  # [out, in], [out] or None
        self._transposed: np.ndarray | None = None

    def transposed(self) -> np.ndarray:
        """The weight as a C-contiguous [in, out] float32 array (one copy, made on first use)."""
        if self._transposed is None:
            self._transposed = np.ascontiguousarray(self.weight.detach().numpy().T)
        return self._transposed

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1]
        method = self.plan.get(rows, "stock")
        if method == "stock" or x.device.type != "cpu" or x.dtype != torch.float32:
            return self.inner(x)
        out = PRODUCTS[method].run(self, x.reshape(rows, -1))  # [rows, out]
        return out.reshape(*x.shape[:-1], self.weight.shape[0])


def head_of(lean) -> PackedProjection:
    """The lean target's own head projection, unwrapped."""
    head = lean.head
    return head.inner if isinstance(head, PlannedProjection) else head


def apply_plan(lean, plan: dict[int, str]) -> None:
    """Route the lean target's head through `plan` (an empty plan restores the stock head). The model's own
    lm_head (what transformers' generate() runs) is left alone."""
    inner = head_of(lean)
    lean.head = PlannedProjection(inner, plan) if any(m != "stock" for m in plan.values()) else inner
