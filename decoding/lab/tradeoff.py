"""The lossy trade-off on a tiny language: exact tokens per step against the exact TV of the output from the
target, as fuzzy's threshold moves, with every other verifier as a point (lossless ones on TV = 0).

Both numbers are certify's (exact.check_case: E[tokens/step] and the sequence-level TV of the padded emitted
law), so no point is sampled. fuzzy's output depends on its threshold T only through which nodes pass
JS(p, q) <= T, so its curve is a staircase whose steps sit at the language's own JS values: those values
(plus T = 0 and T = ln 2) are the thresholds evaluated, and the curve between them is exact, not interpolated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from decoding.lab.exact import check_case
from decoding.lab.language import TinyLanguage
from decoding.lab.trees import PastLimit, enumeration_size
from decoding.verify.rules.fuzzy import js_divergence

FUZZY = "fuzzy"
MAX_STEPS = 16  # thresholds evaluated at most (the language's distinct JS values, thinned evenly beyond this)
STEP_ABOVE = 1e-9  # relative: each step is evaluated this far above its JS value


@dataclass(frozen=True)
class TradeoffPoint:
    verifier: str
    lossless: bool  # what the entry claims
    threshold: float | None  # fuzzy's T; None for the other verifiers
    tv: float  # exact TV(padded emitted law, target joint law)
    expected_tokens: float  # exact E[tokens emitted per step]


def thresholds(language: TinyLanguage) -> list[float]:
    """0, each distinct JS(p, q) of the language's drafted contexts taken just above (ABOVE: a node whose JS
    equals the step passes there, whatever the last rounding of its JS), and ln 2."""
    values = {js_divergence(language.p(prefix), language.q(prefix)) * (1 + STEP_ABOVE) for prefix in language.draft}
    steps = sorted(v for v in values if 0.0 < v < math.log(2))
    if len(steps) > MAX_STEPS - 2:
        stride = len(steps) / (MAX_STEPS - 2)
        steps = [steps[int(i * stride)] for i in range(MAX_STEPS - 2)]
    return [0.0, *steps, math.log(2)]


def fuzzy_curve(entry, language: TinyLanguage, shape: tuple[int, ...]) -> list[TradeoffPoint]:
    """fuzzy at each threshold of `thresholds(language)`, exact."""
    points = []
    for t in thresholds(language):
        case = check_case(entry.with_params(threshold=t), language, shape)
        points.append(TradeoffPoint(entry.name, entry.lossless, t, case.tv, case.expected_tokens))
    return points


def tradeoff(registry: Mapping, language: TinyLanguage, shape: tuple[int, ...],
             keys: Sequence[str] | None = None) -> tuple[list[TradeoffPoint], list[str]]:
    """(points, notes): fuzzy's curve plus one point per other verifier in `keys` (default: every entry; fuzzy,
    when listed, is its curve); a verifier that cannot run this shape or language is left out with a note."""
    points: list[TradeoffPoint] = []
    notes: list[str] = []
    for key in keys if keys is not None else list(registry):
        entry = registry[key]
        try:
            if key == FUZZY:
                points += fuzzy_curve(entry, language, shape)
                continue
            for k in shape:
                entry.check_k(k)
            case = check_case(entry, language, shape)
        except ValueError as err:
            notes.append(f"{key}: {err}")
            continue
        points.append(TradeoffPoint(key, entry.lossless, None, case.tv, case.expected_tokens))
    return points, notes


def tradeoff_size(registry: Mapping, language: TinyLanguage, shape: tuple[int, ...], keys: Sequence[str],
                  limit: int) -> int:
    """The work `tradeoff` would do (trees.enumeration_size summed; fuzzy once per threshold), counted without
    drafting a tree; PastLimit past `limit`. A verifier that cannot run the shape adds nothing: tradeoff
    leaves it out with its note."""
    total = 0
    for key in keys:
        runs = len(thresholds(language)) if key == FUZZY else 1
        try:
            total += runs * enumeration_size(registry[key], language, shape, (limit - total) // runs)
        except ValueError:
            continue
        if total > limit:
            raise PastLimit
    return total
