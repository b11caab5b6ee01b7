"""What a one-level verifier returns: the outcome and every test it made, in order.

These are the in-memory types of the token-level library (they may hold [V] tensors).
`records.py` turns them into plain, JSON-ready data for the viz.

A ResidualUpdate's rows may be built on first read (`LazyRow`): `update.residual` / `update.draft` read
as [V] tensors either way. Why: a chain shows a residual (and a draft law) per rejected test, but only a
recording run (or a test) ever looks at them; writing 16 fresh [V] rows per node cost rrs_wor most of its
time. A rule that defers a row must build it from data nobody mutates afterwards (its own snapshots, and
the node's p and q rows, which callers never write into once verified), so the row built later is
exactly the row it would have built at the time.

An AcceptTest's denominator may be deferred the same way (`Lazy`): khisti_is decides most tests from two
bounds on its induced law r(y), and computes the exact r(y) (its costliest number) only when the bounds
straddle the uniform or a view reads `test.denominator`. The decision is the one the exact number gives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import torch

from decoding.verify.earlier_accept_test import accept_test_fields

T = TypeVar("T")


class Lazy(Generic[T]):
    """A value (a [V] row, a test's denominator) built by `build()` on the first `get()`, then kept (later reads
    return the same object)."""

    __slots__ = ("_build", "_value")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build: Callable[[], T] | None = build
        self._value: T | None = None

    @classmethod
    def built(cls, value: T) -> Lazy[T]:
        """A value that is already there (e.g. a row shared with the verdict's final residual)."""
        lazy = cls(lambda: value)
        lazy._value, lazy._build = value, None
        return lazy

    def get(self) -> T:
        if self._build is not None:
            self._value, self._build = self._build(), None  # drop the builder: it may hold snapshots
        return self._value


LazyRow = Lazy  # a Lazy holding a [V] row
Row = torch.Tensor | Lazy  # [V]
Number = float | Lazy  # a float, maybe built on first read


def read_row(row: Row | None) -> torch.Tensor | None:
    """The [V] tensor of a row, building a lazy one now."""
    return row.get() if isinstance(row, Lazy) else row


def read_number(number: Number) -> float:
    """The float of a number, building a lazy one now."""
    return number.get() if isinstance(number, Lazy) else number


def threshold_of(numerator: float, denominator: float) -> float:
    """min(1, numerator / denominator) clipped at 0; 0 when the denominator is <= 0 (a skipped test)."""
    if not denominator > 0:
        return 0.0
    return min(1.0, max(0.0, numerator / denominator))


def current_fields(numerator: float, args: tuple, kwargs: dict) -> tuple[Number, float, bool, str]:
    """(denominator, uniform, passed, label) of an AcceptTest call after (candidate, token, numerator), in the
    current form or the earlier one (legacy_test.py)."""
    return accept_test_fields(numerator, args, kwargs, threshold_of)


@dataclass(frozen=True, init=False)
class AcceptTest:
    """One accept/reject test: passed iff uniform <= threshold = min(1, numerator / denominator).

    Read `denominator` and `threshold` as floats; the field holds a float or a `Lazy` (built on first read).

    A user's verifier file is an API, so the earlier form still builds one: `AcceptTest(candidate, token,
    numerator, denominator, threshold, uniform, passed[, label])` (positional, or `threshold=` by keyword;
    `denominator=` is read in both forms). The threshold is no longer stored (it is derived from numerator and
    denominator); a given one is checked against min(1, numerator / denominator) and a different one is
    refused with a one-line ValueError (legacy_test.py)."""

    candidate: int  # index into the candidate tuple (draw order); -1 for a test on no candidate
    token: int
    numerator: float
    denominator_value: Number
    uniform: float
    passed: bool
    label: str = ""  # what the numerator/denominator are, e.g. "r(x)/d(x)", "p(x)/(rho q(x))"

    def __init__(self, candidate: int, token: int, numerator: float, *args, **kwargs) -> None:
        if len(args) == 4 and not kwargs and isinstance(args[3], str):  # the library's own form: fast path
            fields = args
        else:
            fields = current_fields(numerator, args, kwargs)
        set_field = object.__setattr__  # frozen: what the generated __init__ does too
        set_field(self, "candidate", candidate)
        set_field(self, "token", token)
        set_field(self, "numerator", numerator)
        set_field(self, "denominator_value", fields[0])
        set_field(self, "uniform", fields[1])
        set_field(self, "passed", fields[2])
        set_field(self, "label", fields[3])

    @property
    def denominator(self) -> float:
        return read_number(self.denominator_value)

    @property
    def threshold(self) -> float:
        return threshold_of(self.numerator, self.denominator)


@dataclass(frozen=True, init=False)
class ResidualUpdate:
    """The residual (and, without replacement, the draft law) after a rejected test.

    Read them as `residual` / `draft` ([V] tensors); the fields hold a tensor or a `LazyRow`. The earlier
    keywords still build one: `ResidualUpdate(after_test=i, residual=r, draft=d, note=...)`."""

    after_test: int  # index into NodeVerdict.tests
    residual_row: Row  # [V] float64, normalised (all zero only if it holds no mass)
    draft_row: Row | None = None  # [V] float64: current d for without-replacement laws
    note: str = ""

    def __init__(self, after_test: int, residual_row: Row | None = None, draft_row: Row | None = None,
                 note: str = "", *, residual: Row | None = None, draft: Row | None = None) -> None:
        if residual_row is None and residual is None:
            raise TypeError("ResidualUpdate needs the residual row: ResidualUpdate(after_test, residual, draft, note)")
        if (residual_row is not None and residual is not None) or (draft_row is not None and draft is not None):
            raise TypeError("ResidualUpdate got a row twice (by position and by the earlier keyword)")
        object.__setattr__(self, "after_test", after_test)
        object.__setattr__(self, "residual_row", residual if residual_row is None else residual_row)
        object.__setattr__(self, "draft_row", draft if draft_row is None else draft_row)
        object.__setattr__(self, "note", note)

    @property
    def residual(self) -> torch.Tensor:
        return read_row(self.residual_row)

    @property
    def draft(self) -> torch.Tensor | None:
        return read_row(self.draft_row)


@dataclass(frozen=True)
class NodeVerdict:
    """Outcome at one node.

    accepted: index of the accepted candidate, or None when the token came from the residual.
    token: the emitted token (the accepted candidate's token, or the residual sample).
    via_residual: True when a residual sample equal to a candidate counts as accepting it
        (hu_greedy); then `accepted` is that candidate's index.
    residual: [V] the law the residual token was drawn from (None if a candidate was accepted by test, or when the
        rule drew the token without building that law: khisti_is draws it by rejection from p; its last update
        then holds the law as a LazyRow, built if read).
    """

    accepted: int | None
    token: int
    tests: tuple[AcceptTest, ...] = ()
    updates: tuple[ResidualUpdate, ...] = ()
    residual: torch.Tensor | None = None
    via_residual: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
