"""Choose the lean target's product method per row count (models/few_rows.PRODUCTS) from whole forwards timed here.

Why whole forwards and not one product alone: a method's cost in a forward is not its cost alone. numpy's
OpenBLAS keeps its own threads spinning after a product, and they fight torch's threads for the cores in the
attention that follows (on a 2-core AMD EPYC VM its products were the fastest alone and its forward 4x the
slowest); a reordered weight is a second copy that competes for the cache. So calibrate.py times the target
forward with each method on every product (`uniform`), and this module keeps, per row count, the fastest
method that beats stock by MARGIN (a noisy machine should not trade the stock product for a tie), then
extends the choice to every row count up to PLAN_ROWS_MAX. A row count between two timed sizes takes the method
fastest on the straight line between its two timings (`interpolate`): a kernel that runs a block of rows per
weight read turns steep past its block, so the choice at 4 rows (the AVX2 kernel, by 3 %) would have held at 5-7
rows where the line already favoured the AVX-512 one by a third (its 8-row forward 26 ms against 41 ms on an AMD
EPYC core). Above the largest timed size and below the smallest, a row count takes the choice at that size
(`expand`).

Then padding (`pad_trials`, `kept_pads`): with the plan on, a forward of a few rows can cost more than one of a
few more rows (a library's kernel choice: oneDNN's forward of 1 or 2 rows cost more than one of 4 rows, and
less again run as 4, zero rows added: models/few_rows.py; docs/speed.md, "Few-row products"). So each
timed size up to PADDED_ROWS_MAX is tried run as the cheapest larger timed size up to PAD_TO_MAX, where
that one was timed at most PAD_TRY dearer (a padded forward costs less than the larger size itself: attention
and the norms see the real rows only); the calibration times the tried forward against the unpadded one,
alternately, and keeps a padding only where it is PAD_MARGIN faster, then extends it to the untimed row
counts above it as `expand` does.
"""

from __future__ import annotations

from itertools import pairwise

from decoding.models.lean.few_rows import PLAN_ROWS_MAX, describe_plan
from decoding.run.costs import Curve

MARGIN = 0.10  # a method must beat stock by 10 % to be chosen
PAD_MARGIN = 0.05  # a row count is run as more rows only where that forward is timed 5 % faster
PAD_TRY = 0.10  # ... and tried only where the larger size was timed at most 10 % dearer
PADDED_ROWS_MAX = 4  # the row counts a padding is tried for (a tree a CPU chooses is small)
PAD_TO_MAX = 8  # the largest size they are run as (the largest every method was compared at)


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


def interpolate(forward_ms: dict[int, dict[str, float]]) -> dict[int, dict[str, float]]:
    """The timings with every row count between two timed sizes filled in: each method timed at both sizes, on
    the straight line between its two timings (a method timed at one of them only is left out there)."""
    sizes, out = sorted(forward_ms), dict(forward_ms)
    for a, b in pairwise(sizes):
        both = [m for m in forward_ms[a] if m in forward_ms[b]]
        for n in range(a + 1, b):
            f = (n - a) / (b - a)
            out[n] = {m: (1 - f) * forward_ms[a][m] + f * forward_ms[b][m] for m in both}
    return dict(sorted(out.items()))


def plan_from(forward_ms: dict[int, dict[str, float]], limits: dict[str, int], margin: float = MARGIN
              ) -> dict[int, str]:
    """The plan for every row count (choose over the interpolated timings, then expand), where a method is not
    run past its row limit
    (`limits`: method -> the most rows it is meant for; the native product re-reads every weight once per block
    of 6 rows): the row counts above the largest timed size take the fastest method there without a lower
    limit (stock when none beats it), as a default 3,2,2 tree's 22 rows would otherwise run 4 blocks."""
    filled = interpolate(forward_ms)
    plan = expand(choose(filled, margin), tuple(filled))
    top = max(forward_ms)
    wide = {m: ms for m, ms in forward_ms[top].items() if limits.get(m, PLAN_ROWS_MAX) >= PLAN_ROWS_MAX}
    beyond = choose({top: wide}, margin).get(top) if "stock" in wide else None
    for n in range(1, PLAN_ROWS_MAX + 1):
        if limits.get(plan.get(n, "stock"), PLAN_ROWS_MAX) < n:
            if beyond is None:
                del plan[n]
            else:
                plan[n] = beyond
    return plan


def pad_trials(curve: Curve, up_to: int = PADDED_ROWS_MAX, slack: float = PAD_TRY) -> dict[int, int]:
    """Timed size (up to `up_to`) -> the cheapest larger timed size up to PAD_TO_MAX, where that one was timed
    at most `slack` dearer: the paddings worth timing."""
    out = {}
    for n, ms in curve:
        larger = [(b_ms, b) for b, b_ms in curve if n < b <= PAD_TO_MAX]
        if n <= up_to and larger and min(larger)[0] <= (1 + slack) * ms:
            out[n] = min(larger)[1]
    return out


def kept_pads(tried: dict[int, int], timed: dict[int, tuple[float, float]], margin: float = PAD_MARGIN
              ) -> dict[int, int]:
    """The tried paddings whose forward was timed `margin` faster than the unpadded one (`timed`: size ->
    (unpadded ms, padded ms), timed alternately)."""
    return {n: b for n, b in tried.items() if n in timed and timed[n][1] < (1 - margin) * timed[n][0]}


def expand_pads(pad: dict[int, int], measured: tuple[int, ...], up_to: int = PLAN_ROWS_MAX) -> dict[int, int]:
    """The padding for every row count 1..up_to: each takes the padding of the largest measured size <= it,
    where it is still smaller than the size that one runs as."""
    sizes = sorted(measured)
    out = {}
    for n in range(1, up_to + 1):
        at = max((s for s in sizes if s <= n), default=sizes[0])
        if at in pad and n < pad[at]:
            out[n] = pad[at]
    return out


def describe(plan: dict[int, str], up_to: int = PLAN_ROWS_MAX, pad: dict[int, int] | None = None) -> str:
    """The plan in words, as row ranges: 'onednn for 1-64 rows', 'numpy for 1 row; stock for 2-64 rows', and
    its padding ('1-2 rows run as 4')."""
    return describe_plan(plan, up_to, pad)
