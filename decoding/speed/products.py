"""Choose the lean target's product method per row count (models/few_rows.PRODUCTS) from whole forwards timed here.

Why whole forwards and not one product alone: a method's cost in a forward is not its cost alone. numpy's
OpenBLAS keeps its own threads spinning after a product, and they fight torch's threads for the cores in the
attention that follows (on a 2-core AMD EPYC VM its products were the fastest alone and its forward 4x the
slowest); a reordered weight is a second copy that competes for the cache. So calibrate.py times the target
forward with each method on every product (`uniform`), and this module keeps, per row count, the fastest
method that beats stock by MARGIN (a noisy machine should not trade the stock product for a tie), then
extends the choice to every row count up to PLAN_ROWS_MAX (`expand`: a row count takes the choice of the
largest measured size at or below it).
"""

from __future__ import annotations

from decoding.models.few_rows import PLAN_ROWS_MAX, describe_plan

MARGIN = 0.10  # a method must beat stock by 10 % to be chosen


def uniform(method: str) -> dict[int, str]:
    """A plan that runs `method` at every row count."""
    return {n: method for n in range(1, PLAN_ROWS_MAX + 1)}


def choose(forward_ms: dict[int, dict[str, float]], margin: float = MARGIN) -> dict[int, str]:
    """rows -> the fastest method, kept only where it beats stock by `margin` (rows left out stay stock)."""
    plan = {}
    for n, by_method in forward_ms.items():
        best = min(by_method, key=by_method.get)
        if best != "stock" and by_method[best] < (1 - margin) * by_method["stock"]:
            plan[n] = best
    return plan


def expand(chosen: dict[int, str], measured: tuple[int, ...], up_to: int = PLAN_ROWS_MAX) -> dict[int, str]:
    """The plan for every row count 1..up_to: each takes the choice made at the largest measured size <= it
    (stock where that size kept stock); sizes below the smallest measured take its choice."""
    sizes = sorted(measured)
    plan = {}
    for n in range(1, up_to + 1):
        at = max((s for s in sizes if s <= n), default=sizes[0])
        if chosen.get(at, "stock") != "stock":
            plan[n] = chosen[at]
    return plan


def describe(plan: dict[int, str], up_to: int = PLAN_ROWS_MAX) -> str:
    """The plan in words, as row ranges: 'onednn for 1-64 rows', 'numpy for 1 row; stock for 2-64 rows'."""
    return describe_plan(plan, up_to)
