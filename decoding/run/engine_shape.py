"""Where acceptance falls off: an engine record's per-position conditional acceptance with Wilson intervals, its
accepted-length histogram, the cliff, and the exact expectation of the same shape (docs/verifiers.md §22).

Position i (1-based: the i-th drafted token of a step) is *reached* by a step that drafted at least i tokens and
accepted the i - 1 before it, and *accepted* by a step that accepted at least i. A chain verifier stops at its
first rejection, so these counts are exact from per-step (drafted, accepted) pairs, and from a histogram when every
step drafted k. Their ratio is P(accept position i | position i reached), the factor a chain's expected length
multiplies; its 95 % Wilson score interval says how far the counts pin it down.

The cliff is the first position i >= 2 whose whole interval lies below the whole interval of position i - 1
(upper(i) < lower(i - 1)): the first drop the counts can tell from noise. A record whose rate only drifts, or
whose counts are too few to separate two positions, has no cliff (None), and says so.

Plain data and floats, no torch: viz draws it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from decoding.run.engine_traces import EngineRecord, position_counts_of_rates

Z95 = 1.959963984540054  # the 97.5 % normal quantile: a two-sided 95 % interval


@dataclass(frozen=True)
class Positions:
    """Per position i = 1..len: steps that reached it and steps that accepted it; `exact` False where the reached
    counts are upper bounds (llama.cpp's rates with ragged drafts), `note` says why."""

    reached: tuple[int, ...]
    accepted: tuple[int, ...]
    exact: bool = True
    note: str = ""


@dataclass(frozen=True)
class Rate:
    position: int
    accepted: int
    reached: int
    rate: float | None  # None where no step reached the position
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Expected:
    """Specscope's exact expectation for a chain of k with per-depth conditional acceptance `alphas`."""

    source: str
    alphas: tuple[float, ...]  # P(accept depth d | reached), d = 1..k
    histogram: tuple[float, ...]  # P(exactly j accepted), j = 0..k
    mean_length: float  # 1 + E[accepted]


@dataclass(frozen=True)
class Analysis:
    """One record analysed: what viz draws and the CLI prints."""

    record: EngineRecord
    rates: tuple[Rate, ...]  # empty when the record cannot give positions (`positions_note` says why)
    positions_note: str
    histogram: tuple[int, ...] | None
    cliff: int | None
    cliff_note: str
    expected: Expected | None = None


# ---- positions -----------------------------------------------------------------------------------------------


def positions_from_steps(per_step: Sequence[tuple[int, int]]) -> Positions:
    """Exact counts from per-step (drafted, accepted) pairs."""
    depth = max((d for d, _ in per_step), default=0)
    reached = tuple(sum(1 for d, a in per_step if d >= i and a >= i - 1) for i in range(1, depth + 1))
    accepted = tuple(sum(1 for _, a in per_step if a >= i) for i in range(1, depth + 1))
    return Positions(reached, accepted)


def positions_from_histogram(histogram: Sequence[int]) -> Positions:
    """Exact counts from a histogram when every step drafted k = len(histogram) - 1: position i is reached by the
    steps that accepted i - 1 or more, accepted by those that accepted i or more."""
    k = len(histogram) - 1
    at_least = [sum(histogram[j:]) for j in range(k + 1)]
    return Positions(tuple(at_least[i - 1] for i in range(1, k + 1)), tuple(at_least[i] for i in range(1, k + 1)))


def positions_from_rates(rates: Sequence[float], steps: int, every_step_full: bool) -> Positions:
    """llama.cpp's rates (accepted at i / steps): accepted counts, and reached = accepted at i - 1 (all steps at
    i = 1), exact only when every step drafted len(rates) tokens."""
    accepted = position_counts_of_rates(tuple(rates), steps)
    reached = (steps, *accepted[:-1]) if accepted else ()
    note = "" if every_step_full else (
        "some steps drafted fewer tokens than the deepest position: a reached count is then an upper bound (steps "
        "that accepted every earlier position, whether or not they drafted this one), so a rate is a lower bound")
    return Positions(reached, accepted, every_step_full, note)


def positions(record: EngineRecord) -> Positions | str:
    """The record's per-position counts, or the one-line reason it cannot give them."""
    if record.per_step is not None:
        return positions_from_steps(record.per_step)
    if record.histogram is not None and record.steps is not None and record.max_draft is not None:
        if record.drafted == record.steps * record.max_draft:
            return positions_from_histogram(record.histogram)
        return (f"{record.drafted} drafts over {record.steps} steps of up to {record.max_draft}: some steps drafted "
                "fewer, and a histogram cannot say which; per-position rates need the per-step lists (detailed mode)")
    if record.position_rates is not None and record.steps is not None:
        full = record.drafted == record.steps * len(record.position_rates)
        return positions_from_rates(record.position_rates, record.steps, full)
    if record.engine == "sglang":
        return "an SGLang summary carries no per-step lengths: per-position rates need --speculative-decoding-stats " \
               "detailed"
    return f"this {record.title} holds totals only ({record.accepted} of {record.drafted} drafts accepted): no " \
           "per-position counts"


# ---- rates, intervals, the cliff -----------------------------------------------------------------------------


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (trials > 0): never outside [0, 1], sensible at 0 and n
    successes, where the normal interval collapses to a point."""
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return max(0.0, centre - half), min(1.0, centre + half)


def rates(counts: Positions) -> tuple[Rate, ...]:
    out = []
    for i, (n, a) in enumerate(zip(counts.reached, counts.accepted, strict=True), 1):
        if n == 0:
            out.append(Rate(i, a, n, None, None, None))
        else:
            low, high = wilson(a, n)
            out.append(Rate(i, a, n, a / n, low, high))
    return tuple(out)


def cliff(per_position: Sequence[Rate]) -> int | None:
    """The first position i >= 2 whose interval lies wholly below position i - 1's (upper(i) < lower(i - 1))."""
    for before, here in zip(per_position, per_position[1:], strict=False):
        if before.rate is not None and here.rate is not None and here.high < before.low:
            return here.position
    return None


def cliff_words(per_position: Sequence[Rate], at: int | None) -> str:
    if not per_position:
        return "no positions to compare"
    if at is None:
        return ("no cliff: no position's 95 % interval lies wholly below the one before it (acceptance drifts, or "
                "the counts are too few to tell two positions apart)")
    before, here = per_position[at - 2], per_position[at - 1]
    return (f"cliff at position {at}: {here.rate:.3f} [{here.low:.3f}, {here.high:.3f}] after {before.rate:.3f} "
            f"[{before.low:.3f}, {before.high:.3f}] at position {at - 1}")


# ---- the exact expectation -----------------------------------------------------------------------------------


def expected(alphas: Sequence[float], k: int, source: str) -> Expected:
    """A chain of k with P(accept depth d | reached) = alphas[d - 1]: P(exactly j accepted) is the product of the
    first j alphas times (1 - alpha_{j+1}) (all k: the product of all), and the mean length 1 + sum of those
    products. Depths past the given alphas are not guessed: k is cut to len(alphas)."""
    k = min(k, len(alphas))
    survive = [1.0]
    for a in alphas[:k]:
        survive.append(survive[-1] * a)
    histogram = tuple(survive[j] - survive[j + 1] for j in range(k)) + (survive[k],)
    return Expected(source, tuple(alphas[:k]), histogram, 1.0 + sum(survive[1:]))


def analyse(record: EngineRecord, expectation: Expected | None = None) -> Analysis:
    counts = positions(record)
    if isinstance(counts, str):
        return Analysis(record, (), counts, record.histogram, None, "no positions to compare", expectation)
    per_position = rates(counts)
    at = cliff(per_position)
    return Analysis(record, per_position, counts.note, record.histogram or histogram_of_positions(counts), at,
                    cliff_words(per_position, at), expectation)


def histogram_of_positions(counts: Positions) -> tuple[int, ...] | None:
    """Steps that accepted exactly j drafts, from exact per-position counts: accepted at j minus accepted at j + 1
    (j = 0: the steps, i.e. position 1's reached, minus those accepting it)."""
    if not counts.exact or not counts.reached:
        return None
    at_least = (counts.reached[0], *counts.accepted)
    return tuple(at_least[j] - (at_least[j + 1] if j + 1 < len(at_least) else 0) for j in range(len(at_least)))
