"""A step's costs besides the target forward, from short engine runs: the draft's level by its parent count and
the extra of a step's first level, the rest of a step as a line in the tree's rows; with the pair's acceptance
(pair_acceptance.py), measured here when it is not known yet (its runs then serve the costs too).

Every step after a run's first is used (the first pays the prompt's prefill). The draft's levels: a chain of 1
(a step's first level, which pays a separate draft's catching up on the tokens the last step committed), chains
of 4 (the later levels, net of the first), trees (2, 1) and (4, 1) (a level over 2 and 4 parents, each timed:
the embedded head's level over 2 parents costs what 4 cost). The rest: each step's wall time less its draft and
target forwards and its record's building, a line fitted through the median rest at each row count.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from decoding.run.config import Branching, DecodeConfig
from decoding.speed import pair_acceptance
from decoding.speed.chooser import AcceptanceTable
from decoding.speed.pair_acceptance import run_steps

COST_TOKENS = 16  # the chain that times the draft's levels and the rests when the acceptance is known


def steps_and_acceptance(pair, pair_kind: str, prompts: tuple[str, ...], root: Path | None = None,
                         fresh: bool = False
                         ) -> tuple[DraftCosts, tuple[float, float], dict[float, AcceptanceTable], str]:
    """(the draft's costs, the rest's line (ms, ms per row), temperature -> acceptance, where the acceptance came
    from) from short engine runs. The acceptance is the pair's (pair_acceptance.py): shipped or cached, else measured
    now from chains over the prompts at each temperature, whose steps then also give the draft's cost of one
    parent's level and the rests; when it is known, one chain of COST_TOKENS at T = 0 gives those. Then a chain of
    1 (a step's first level: first_level), trees for wider draft levels (draft_curve) and the target alone (the
    rest of a one-row step)."""
    key, measured_on = pair_acceptance.key_and_prompts(pair, pair_kind, prompts)
    tables, source = (None, "") if fresh else pair_acceptance.known(key, root)
    if tables is None:
        tables, runs = pair_acceptance.measure(pair, measured_on)
        pair_acceptance.save(key, tables, root)
        source = (f"measured now ({len(measured_on)} prompts x {pair_acceptance.NEW_TOKENS} tokens at each "
                  "temperature; kept for this pair)")
    else:
        runs = [run_steps(pair, pair_acceptance.chain(0.0, COST_TOKENS), prompts[0])[0]]
    first, first_rests = first_level(pair, prompts[0])
    one = later_level(runs, first)
    rests = [rest for steps in runs for rest in _rests(steps)] + first_rests
    draft, wide_rests = draft_curve(pair, prompts, one, one if first is None else first)
    alone = DecodeConfig(verifier="sd", shape=Branching((1,)), drafting=False, max_new_tokens=6, seed=0)
    steps, _ = run_steps(pair, alone, prompts[0])
    costs = DraftCosts(draft, max(0.0, (first or one) - one))
    return costs, rest_line(rests + wide_rests + _rests(steps)), tables, source


@dataclass(frozen=True)
class DraftCosts:
    curve: tuple[tuple[int, float], ...]  # StepCosts.draft: a level over N parents, the first level's extra aside
    first_extra: float  # StepCosts.draft_first


def first_level(pair, prompt: str, new_tokens: int = 12) -> tuple[float | None, list[tuple[int, float]]]:
    """(median ms of a chain of 1's draft forward, None when no step drafted; its steps' rests): a step's first
    level, which pays the draft's catching up on the tokens the last step committed."""
    steps, _ = run_steps(pair, pair_acceptance.chain(0.0, new_tokens, depth=1), prompt)
    firsts = [r.draft_ms for _, r in steps[1:] if r.draft_forwards == 1]
    return (statistics.median(firsts) if firsts else None), _rests(steps)


def later_level(runs: list[list], first: float | None) -> float:
    """The median ms of a draft level after the first in the chains' steps ((draft ms - first) / (levels - 1));
    without a first level's time, a level's mean ((draft ms) / levels); 0 when nothing was drafted."""
    if first is None:
        levels = [r.draft_ms / r.draft_forwards for steps in runs for _, r in steps[1:] if r.draft_forwards]
    else:
        levels = [(r.draft_ms - first) / (r.draft_forwards - 1) for steps in runs for _, r in steps[1:]
                  if r.draft_forwards >= 2]
    return max(0.0, statistics.median(levels)) if levels else (first or 0.0)


def _rests(steps: list) -> list[tuple[int, float]]:
    """(rows, ms) of each step's rest after the first (which pays the prompt's prefill): its wall time less the
    draft and target forwards and the record's building (a record=False run builds none)."""
    return [(len(r.nodes), max(0.0, wall - r.draft_ms - r.target_ms - r.record_ms)) for wall, r in steps[1:]]


def rest_line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(ms, ms per row) of a line through the steps' rests, both kept non-negative: the Theil-Sen line, the median
    of the slopes between every two steps of different sizes and the median of what each step leaves over it, so
    that a few disturbed steps, or a size timed on three steps only, cannot tilt it (a least-squares line through
    each size's median let the 9-row trees' three steps set the slope: 0.0 + 1.47 ms a row one calibration,
    0.7 + 0.24 a later one; docs/speed.md, "The head trained on again"). One size: its median, flat."""
    if not points:
        return 0.0, 0.0
    slopes = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(points) for x2, y2 in points[i + 1:] if x2 != x1]
    slope = max(0.0, statistics.median(slopes)) if slopes else 0.0
    return max(0.0, statistics.median(y - slope * x for x, y in points)), slope


def draft_curve(pair, prompts: tuple[str, ...], one: float, first: float, widths: tuple[int, ...] = (2, 4)
                ) -> tuple[tuple[tuple[int, float], ...], list[tuple[int, float]]]:
    """The draft's cost of one level by its parent count: `one` (1 parent, a level after the first), then for
    each width w short runs of trees (w, 1), whose second level drafts over w parents (a step's draft ms less
    `first`, its first level's; the last prompt first; the next only when a run ended before a step after the
    first drafted both levels); and those steps' rests.
    Each size is timed, not interpolated: the embedded head's level of 2 parents costs what 4 cost, twice
    one's."""
    curve, rests = [(1, one)], []
    for width in widths:
        wide = DecodeConfig(verifier="rrs_wor", shape=Branching((width, 1)), max_new_tokens=8, temperature=0.8,
                            seed=0)
        level: list[float] = []
        for prompt in reversed(prompts):
            steps, _ = run_steps(pair, wide, prompt)
            level += [r.draft_ms - first for _, r in steps[1:] if r.draft_forwards == 2]
            rests += _rests(steps)
            if level:
                curve.append((width, max(one, statistics.median(level))))
                break
    return tuple(curve), rests
