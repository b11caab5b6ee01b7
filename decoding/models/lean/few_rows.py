"""The lean target's products (every projection and the lm_head), by the method this machine does fastest
for each row count (a per-row-count plan).

Why: a verify multiplies a few rows (the tree's nodes) by every weight of the model. What that costs depends
on the BLAS and the CPU far more than on the arithmetic: on one CPU, MKL's F.linear for 2 or 3 rows of the
lm_head cost several times its one row, numpy's OpenBLAS a fraction of MKL's, and oneDNN's linear on a weight
reordered once about one row's cost at every row count (docs/speed.md, "Few-row products" and "Measurements the
code's comments cite").
So the method is measured on the machine (decoding/speed/products.py) and chosen per row count; p stays the
target's: every method computes the same product up to float rounding (tests/models/test_few_rows.py).

`PRODUCTS` is the registry of methods (each says whether this torch build has it); `PlannedProjection`
wraps one projection with a plan {rows: method}; rows without an entry (and non-float32 or non-CPU input)
take the wrapped projection. `apply_plan` puts one plan on every product of a lean target.

Padding: a plan may also run a row count as a larger one (`pad` {rows: rows run as}), the added rows zeros and
their products dropped. A library's kernel for a few rows can cost more than its kernel for a few more: on one
CPU oneDNN's forward of 1 or 2 rows cost more than one of 4, and less again run as 4 (docs/speed.md, "Few-row
products", its padding paragraph). Each output row of a product reads its own input row only, so the real
rows' products are the same up to float rounding; attention and the norms never see the added rows. The
calibration pads a row count only where its own timing shows the padded forward is faster on the machine at
hand (products.pad_trials, kept_pads).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import torch

from decoding.models.lean import blas_threads, native_rows
from decoding.models.lean.packed_linear import PackedProjection

SPLITS = 4  # column blocks of the split product
PLAN_ROWS_MAX = 64  # the largest tree forward a plan covers (the packed buckets' largest)
ONEDNN_ROWS_HINT = 8  # the row count oneDNN reorders a weight for; one reordered copy serves every row count
NATIVE_ROWS_MAX = 8  # the native product reads every weight once per block of 6 rows: beyond 8 rows, others
WIDE_ROWS_MAX = 16  # the AVX-512 one, once per block of 12 rows: 13-16 rows re-read each panel from the cache


@dataclass(frozen=True)
class Product:
    about: str
    run: Callable[[PlannedProjection, torch.Tensor], torch.Tensor]  # (projection, x [M, in]) -> [M, out]
    available: Callable[[], bool] = lambda: True  # whether this torch build can run it
    max_rows: int = PLAN_ROWS_MAX  # the most rows a plan runs it for (products.plan_from)


def _stock(proj: PlannedProjection, x: torch.Tensor) -> torch.Tensor:
    return proj.inner(x)


def _numpy(proj: PlannedProjection, x: torch.Tensor) -> torch.Tensor:
    blas_threads.match_torch()  # numpy's BLAS on torch's threads, not every core
    w_t = proj.weight.detach().numpy().T  # [in, out], a transposed view: BLAS reads it as is, no copy
    out = torch.from_numpy(x.detach().contiguous().numpy() @ w_t)  # [M, out]
    return out if proj.bias is None else out + proj.bias


def _split(proj: PlannedProjection, x: torch.Tensor) -> torch.Tensor:
    blocks = proj.weight.chunk(SPLITS, dim=0)  # [out / SPLITS, in] each: views, no copy
    out = torch.cat([torch.nn.functional.linear(x, w) for w in blocks], dim=-1)  # [M, out]
    return out if proj.bias is None else out + proj.bias


def onednn_available() -> bool:
    ops = getattr(torch.ops, "mkldnn", None)
    return bool(torch.backends.mkldnn.is_available()) and all(
        hasattr(ops, name) for name in ("_reorder_linear_weight", "_linear_pointwise"))


def _onednn(proj: PlannedProjection, x: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x.contiguous(), onednn_weight(proj.inner), proj.bias,
                                              "none", [], "")  # [M, out]


def onednn_weight(inner: PackedProjection) -> torch.Tensor:
    """The weight reordered once for oneDNN's GEMM."""
    return _kept_copy(inner, "onednn", lambda w: torch.ops.mkldnn._reorder_linear_weight(w, ONEDNN_ROWS_HINT))


def _native(proj: PlannedProjection, x: torch.Tensor) -> torch.Tensor:
    out = native_rows.product(native_weight(proj.inner), x, proj.weight.shape[0])  # [M, out]
    return out if proj.bias is None else out + proj.bias


def _native512(proj: PlannedProjection, x: torch.Tensor) -> torch.Tensor:
    out = native_rows.product(native_weight(proj.inner), x, proj.weight.shape[0], wide=True)  # [M, out]
    return out if proj.bias is None else out + proj.bias


def native_weight(inner: PackedProjection) -> torch.Tensor:
    """The weight copied once into the native kernels' panels (float16 ones where half_panels_where_exact said)."""
    return _kept_copy(inner, "native", lambda w: native_rows.panels(w, inner.panel_dtype))


def half_panels_where_exact(lean) -> int:
    """Keep the native kernels' copy of each product of `lean` whose weight is exact in float16 (a draft head's,
    shipped in float16) in float16: the same weight in half the bytes. On one AMD EPYC core the shipped head's
    level in float16 panels cost 0.8-1 ms a step less than in float32 ones (sd 1,1,1 at T = 0.8). The
    number of such products."""
    half = [inner for inner in products_of(lean) if native_rows.exact_in_half(inner.weight)]
    for inner in half:
        with inner.lock:
            if inner.panel_dtype != torch.float16:
                inner.panel_dtype, inner.native_panels = torch.float16, None  # a float32 copy: dropped, made again
    return len(half)


COPIES = {"onednn": "onednn_packed", "native": "native_panels", "native512": "native_panels"}  # method -> the
# attribute holding its copy (both native kernels read the same panels)
COPY_MAKERS = {"onednn": onednn_weight, "native": native_weight, "native512": native_weight}  # method -> what
# makes (or returns the kept) copy


def _kept_copy(inner: PackedProjection, method: str, make: Callable[[torch.Tensor], object]):
    """A method's copy of the weight (the size of the weight), made once and kept on the wrapped projection:
    every plan using the method shares it, and plans are swapped freely (a calibration swaps them per
    forward). `release_copies` drops the copies a plan does not use."""
    with inner.lock:
        copy = getattr(inner, COPIES[method], None)
        if copy is None:
            with torch.inference_mode():
                copy = make(inner.weight.detach())
            setattr(inner, COPIES[method], copy)
        return copy


PRODUCTS: dict[str, Product] = {
    "stock": Product("F.linear (MKL); MKL's pre-packed GEMM from 4 rows inside a tree forward", _stock),
    "onednn": Product("oneDNN's linear on a weight reordered once (torch's mkldnn build)", _onednn,
                      onednn_available),
    "numpy": Product("numpy's matmul (its BLAS, OpenBLAS in the wheels, on torch's threads) on the weight's "
                     "transposed view", _numpy),
    "split": Product(f"F.linear over {SPLITS} column blocks of the weight, concatenated", _split),
    "native": Product("native_rows.c, compiled here: each weight read once for up to 6 rows", _native,
                      native_rows.available, max_rows=NATIVE_ROWS_MAX),
    "native512": Product("native_rows.c's AVX-512 kernel, compiled here: each weight read once for up to 12 rows",
                         _native512, native_rows.wide_available, max_rows=WIDE_ROWS_MAX),
}


def row_limits() -> dict[str, int]:
    """Method -> the most rows a plan runs it for."""
    return {name: product.max_rows for name, product in PRODUCTS.items()}


def available_products() -> tuple[str, ...]:
    """The PRODUCTS keys this torch build runs, stock first."""
    return tuple(name for name, product in PRODUCTS.items() if product.available())


class PlannedProjection:
    """The lean target's head with a plan: rows -> a PRODUCTS key. Built by `apply_plan`, read-only after."""

    def __init__(self, inner: PackedProjection, plan: dict[int, str], pad: dict[int, int] | None = None) -> None:
        unknown = sorted(set(plan.values()) - set(PRODUCTS))
        if unknown:
            raise ValueError(f"unknown product method(s) {unknown}; known: {', '.join(PRODUCTS)}")
        missing = sorted(set(plan.values()) - set(available_products()))
        if missing:
            raise ValueError(f"product method(s) {missing} need what this torch build lacks")
        self.inner, self.plan, self.pad = inner, dict(plan), check_pad(pad or {})
        self.weight, self.bias = inner.weight, inner.bias  # [out, in], [out] or None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1]
        run_as = self.pad.get(rows, rows)
        method = self.plan.get(run_as, "stock")
        if (method == "stock" and run_as == rows) or x.device.type != "cpu" or x.dtype != torch.float32:
            return self.inner(x)
        flat = x.reshape(rows, -1)  # [rows, in]
        if run_as > rows:
            flat = torch.cat([flat, flat.new_zeros(run_as - rows, flat.shape[1])])  # [run_as, in], zero rows added
        out = self.inner(flat) if method == "stock" else PRODUCTS[method].run(self, flat)  # [run_as, out]
        return out[:rows].reshape(*x.shape[:-1], self.weight.shape[0])


def check_pad(pad: dict[int, int]) -> dict[int, int]:
    """A padding {rows: rows run as}, each run as more rows, up to PLAN_ROWS_MAX."""
    bad = {r: b for r, b in pad.items() if not (1 <= r < b <= PLAN_ROWS_MAX)}
    if bad:
        raise ValueError(f"a padding runs a row count as more rows, up to {PLAN_ROWS_MAX}; got {bad}")
    return {int(r): int(b) for r, b in pad.items()}


def unwrapped(product) -> PackedProjection:
    """A lean product without its plan."""
    return product.inner if isinstance(product, PlannedProjection) else product


def _planned(product, plan: dict[int, str], pad: dict[int, int]):
    inner = unwrapped(product)
    return PlannedProjection(inner, plan, pad) if pad or any(m != "stock" for m in plan.values()) else inner


def _slots(lean) -> list[tuple[object, str]]:
    """(owner, attribute) of every product of the lean target: the head and each layer's projections."""
    slots: list[tuple[object, str]] = [(lean, "head")]
    for layer in lean.lean_layers:
        slots += [(layer, f.name) for f in fields(layer)
                  if isinstance(getattr(layer, f.name), PackedProjection | PlannedProjection)]
    return slots


def apply_plan(lean, plan: dict[int, str], pad: dict[int, int] | None = None) -> None:
    """Route every product of the lean target (each layer's projections and the head) through `plan`, running
    the row counts in `pad` as more rows; an empty plan and no padding restore the stock products. The model's
    own modules (what transformers' generate() runs) are left alone."""
    pad = check_pad(pad or {})
    for owner, name in _slots(lean):
        setattr(owner, name, _planned(getattr(owner, name), plan, pad))


def products_of(lean) -> list[PackedProjection]:
    """Every product of the lean target (the head and each layer's projections), without plans."""
    return [unwrapped(getattr(owner, name)) for owner, name in _slots(lean)]


def prepare_copies(lean, method: str) -> None:
    """Make `method`'s weight copies for every product of the lean target now (a calibration makes them
    before it times a forward); nothing for a method without copies or without a lean target."""
    make = COPY_MAKERS.get(method)
    if lean is None or make is None:
        return
    for inner in products_of(lean):
        make(inner)


def release_copies(lean, keep: set[str] | frozenset[str] = frozenset()) -> int:
    """Drop the weight copies of the methods not in `keep` from every product of the lean target (each copy
    is the size of its weight: together a second model in memory); the bytes freed."""
    freed, kept = 0, {COPIES[m] for m in keep if m in COPIES}  # kept: the attributes a kept method reads
    for inner in products_of(lean):
        for attr in set(COPIES.values()) - kept:
            copy = getattr(inner, attr, None)
            if copy is not None:
                freed += copy.numel() * copy.element_size()
                with inner.lock:
                    setattr(inner, attr, None)
    return freed


def plan_of(lean) -> dict[int, str]:
    """The plan on the lean target's head (apply_plan puts the same one on every product); {} when stock."""
    return dict(lean.head.plan) if isinstance(lean.head, PlannedProjection) else {}


def pad_of(lean) -> dict[int, int]:
    """The padding on the lean target's products ({rows: rows run as}); {} when none."""
    return dict(lean.head.pad) if isinstance(lean.head, PlannedProjection) else {}


def _row_ranges(values: dict[int, object], up_to: int) -> list[tuple[int, int, object]]:
    """(first, last, value) of each run of equal values over the row counts 1..up_to (None where absent)."""
    runs: list[tuple[int, int, object]] = []
    for n in range(1, up_to + 1):
        value = values.get(n)
        if runs and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], n, value)
        else:
            runs.append((n, n, value))
    return runs


def _rows(a: int, b: int) -> str:
    return f"{a} row{'s' * (a > 1)}" if a == b else f"{a}-{b} rows"


def describe_plan(plan: dict[int, str], up_to: int, pad: dict[int, int] | None = None) -> str:
    """The plan in words, as row ranges: 'onednn for 1-64 rows', 'numpy for 1 row; stock for 2-64 rows', and
    its padding: 'onednn for 1-64 rows; 1-2 rows run as 4'."""
    methods = _row_ranges({n: plan.get(n, "stock") for n in range(1, up_to + 1)}, up_to)
    words = [f"{m} for {_rows(a, b)}" for a, b, m in methods]
    words += [f"{_rows(a, b)} run as {to}" for a, b, to in _row_ranges(pad or {}, up_to) if to is not None]
    return "; ".join(words)


def plan_words(model, up_to: int = PLAN_ROWS_MAX) -> str | None:
    """What computes a model's products, in words, when it is a lean target with a plan on; else None (what
    a trace records: another plan gives the same p up to float rounding)."""
    head = getattr(model, "head", None)
    return describe_plan(head.plan, up_to, head.pad) \
        if isinstance(head, PlannedProjection) and hasattr(model, "lean_layers") else None
