"""Measure the lm_head's few-row product by every method (models/few_rows.PRODUCTS) and choose per row count.

Each method runs the real head weight on random rows, methods interleaved call by call (a busy machine slows
them alike), medians kept. A method other than the stock one is chosen for a row count only when it is at
least MARGIN faster: a noisy machine should not trade the stock product for a tie.
"""

from __future__ import annotations

import statistics
import time

import torch

from decoding.models.few_rows import PRODUCTS, PlannedProjection, head_of

MARGIN = 0.10  # a method must beat stock by 10 % to be chosen


def measure(lean, rows: tuple[int, ...] = tuple(range(1, 9)), repeats: int = 5) -> dict[int, dict[str, float]]:
    """rows -> method -> median ms of one product of the lean target's head."""
    head = head_of(lean)
    hidden = head.weight.shape[1]
    methods = {name: PlannedProjection(head, {n: name for n in rows}) for name in PRODUCTS}
    out: dict[int, dict[str, float]] = {}
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for n in rows:
            x = torch.randn(1, n, hidden, generator=gen)  # [1, n, hidden], as the forward passes it
            times: dict[str, list[float]] = {name: [] for name in methods}
            for round_ in range(repeats + 1):
                for name, proj in methods.items():
                    start = time.perf_counter()
                    proj(x)
                    if round_:  # the first round warms up (and makes numpy's transposed copy)
                        times[name].append(1000 * (time.perf_counter() - start))
            out[n] = {name: statistics.median(ms) for name, ms in times.items()}
    return out


def choose(product_ms: dict[int, dict[str, float]], margin: float = MARGIN) -> dict[int, str]:
    """rows -> the fastest method, kept only where it beats stock by `margin` (rows left out stay stock)."""
    plan = {}
    for n, by_method in product_ms.items():
        best = min(by_method, key=by_method.get)
        if best != "stock" and by_method[best] < (1 - margin) * by_method["stock"]:
            plan[n] = best
    return plan
