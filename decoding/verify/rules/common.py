"""The loop every chain verifier shares: ordered accept tests, residual updates, one final residual draw.

A rule describes one node as a lazy *chain* of events (a generator):
    Test    an accept test of one candidate, passed with probability min(1, numerator / denominator);
    Update  the residual (and draft law) after that test was rejected;
    Final   the law of the emitted token when every test was rejected.
The thresholds never depend on the uniforms, only on which tests came before, so the same chain
gives both the random run (`run_chain`, which stops at the first passed test and so never computes
the later updates) and the exact conditional law (`chain_law`, no randomness).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch

from decoding.verify.sampling import draw, final_residual, normalise, residual_into, uniform
from decoding.verify.verdict import (
    AcceptTest,
    Lazy,
    NodeVerdict,
    Number,
    ResidualUpdate,
    Row,
    read_number,
    read_row,
    threshold_of,
)

NO_UNIFORM = 1.0  # shown as the "uniform" of a deterministic test (no draw)


@dataclass(frozen=True)
class Test:
    """A planned accept test. A denominator <= 0 (e.g. q(x) = 0) means the test is skipped: threshold 0.

    A costly denominator may be a `Lazy` with a `bracket` (lo, hi), 0 < lo <= denominator <= hi: the run then
    decides from the bracket whenever the uniform is clear of both ends (the exact number's decision, since the
    threshold is monotone in the denominator, rounding included), and builds the number only otherwise."""

    __test__ = False  # not a pytest test class

    candidate: int
    token: int
    numerator: float
    denominator: Number
    label: str
    outcome: bool | None = None  # lossy rules decide deterministically: no uniform drawn
    note: str = ""
    bracket: tuple[float, float] | None = None  # bounds on a lazy denominator

    @property
    def threshold(self) -> float:
        return threshold_of(self.numerator, read_number(self.denominator))

    def passes(self, u: float) -> bool:
        """Whether uniform u passes: threshold > 0 and u <= threshold, from the bracket when it settles it."""
        if self.bracket is not None:
            lo, hi = self.bracket
            surely, at_most = threshold_of(self.numerator, hi), threshold_of(self.numerator, lo)
            if 0 < surely and u <= surely:
                return True
            if lo > 0 and u > at_most:
                return False
        threshold = self.threshold
        return threshold > 0 and u <= threshold

    @property
    def probability(self) -> float:
        """Exact probability that this test passes once reached."""
        if self.outcome is not None:
            return 1.0 if self.outcome else 0.0
        return self.threshold


@dataclass(frozen=True)
class Update:
    residual: Row  # [V] normalised residual after the rejected test (zeros if it holds no mass); maybe lazy
    draft: Row | None = None  # [V] current draft law d (without-replacement rules); maybe lazy
    note: str = ""


@dataclass(frozen=True)
class Final:
    residual: Row  # [V] law of the emitted token when all tests failed; must hold mass; maybe lazy
    hits: tuple[int, ...] = ()  # candidates that a residual sample equal to them accepts (hu_greedy)
    token: int | None = None  # the emission when already decided (lossy rules) or drawn (khisti_is): no draw


Event = Test | Update | Final


def ratio_test(i: int, x: int, target: torch.Tensor, draft: torch.Tensor, names: str = "p/q") -> Test:
    """Candidate i's accept test target(x)/draft(x) (names: "target/draft" as the label shows them), noted
    as skipped when draft(x) = 0: a token that law could not have drawn (a warp mismatch; threshold 0)."""
    t_name, d_name = names.split("/")
    note = skip_note(i, x, draft, d_name)
    return Test(i, x, float(target[x]), float(draft[x]), f"{t_name}(x)/{d_name}(x)", note=note)


def skip_note(i: int, x: int, draft: torch.Tensor, name: str = "q") -> str:
    """The note of a candidate the draft law could not have produced ("" when it could)."""
    return "" if float(draft[x]) > 0 else f"candidate {i} (token {x}) has {name}(x) = 0: skipped (threshold 0)"


def residual_tail(
    p: torch.Tensor, target: torch.Tensor, draft: torch.Tensor, note: str = "", hits: tuple[int, ...] = ()
) -> Iterator[Event]:
    """The events after a single-draft rule's rejected test: the residual norm((target - draft)_+) [V],
    then the law to draw from (p when that residual holds no mass)."""
    r = residual_into(target, draft)  # [V]
    yield Update(r, note=note)
    yield Final(final_residual(r, p), hits=hits)


def prepare(
    p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """p and q [V] as float64 (renormalised unless they sum to 1 within 1e-12: float32 softmax sums drift;
    the input itself when nothing changes, so never write into them) and the candidates as ints.

    Raises ValueError on shapes that do not match, no candidates, an out-of-range token, or a law with no mass.
    """
    if p.dim() != 1 or p.shape != q.shape:
        raise ValueError(f"p and q must be 1-D over the same vocabulary, got {tuple(p.shape)} and {tuple(q.shape)}")
    xs = [int(x) for x in candidates]
    if not xs:
        raise ValueError("a verifier needs at least one candidate")
    if min(xs) < 0 or max(xs) >= p.shape[0]:
        raise ValueError(f"candidate tokens {xs} fall outside the vocabulary of size {p.shape[0]}")
    return _law(p, "p"), _law(q, "q"), xs


def _law(v: torch.Tensor, name: str) -> torch.Tensor:
    v = v.detach().to(device="cpu", dtype=torch.float64)  # no copy when already float64 (never mutated)
    total = float(v.sum())
    if not (total > 0 and math.isfinite(total)):
        raise ValueError(f"{name} must be a finite distribution with positive mass, got total {total}")
    return v if abs(total - 1.0) <= 1e-12 else v / total  # skip a [V] pass when already normalised


class Rows:
    """Fresh [V] rows for one node, carved from ONE [count, V] block allocated at the first request.

    Why: a chain keeps a residual (and a draft law) per rejected test, because its verdict shows them,
    so every row must be new memory. Allocated one by one, each [V] float64 row (393 kB at V = 49152)
    is a separate large allocation; where the allocator hands freed memory back to the system (a fresh
    process such as `bench verifiers`), its pages fault in afresh per node, which cost several times the
    arithmetic (docs/speed.md, "Measurements the code's comments cite"). One block per node is one
    allocation (large enough for huge pages); untouched rows cost nothing. Where freed memory is kept
    (a warm process) both ways cost the same. Rows beyond `count` fall back to separate tensors. A row
    is a view: it keeps the whole block alive while any row lives.
    """

    def __init__(self, count: int, like: torch.Tensor, ring: bool = False) -> None:
        self.count, self.like, self.ring = count, like, ring
        self._block: torch.Tensor | None = None  # [count, V]
        self._used = 0

    @classmethod
    def recycled(cls, count: int, like: torch.Tensor) -> Rows:
        """Rows that cycle through `count` slots: row n reuses row n - count's memory. Only for a caller that
        keeps no row past the next `count - 1` requests (an exact law that discards the shown updates)."""
        return cls(count, like, ring=True)

    def take(self) -> torch.Tensor:
        """A fresh (or, recycled, the oldest) uninitialised [V] row (the caller writes every entry)."""
        if self._used >= self.count and not self.ring:
            return torch.empty_like(self.like)
        if self._block is None:
            self._block = self.like.new_empty((self.count, self.like.shape[0]))
        self._used += 1
        return self._block[(self._used - 1) % self.count]


def restricted(q: torch.Tensor, excluded: Iterable[int]) -> torch.Tensor:
    """q [V] restricted to the tokens not `excluded`, renormalised; uniform on them when q has no mass
    there. This is exactly laws._draw_excluding's law (an exact zero test, no epsilon)."""
    d = without(q, excluded)  # [V]
    total = float(d.sum())
    if total > 0:
        return d.div_(total)
    rest = without(torch.ones_like(q), excluded)
    count = float(rest.sum())
    return rest.div_(count) if count > 0 else rest


def without(v: torch.Tensor, tokens: Iterable[int]) -> torch.Tensor:
    """A copy of v [V] with the given tokens set to 0 (index writes: cheaper than a [V] mask)."""
    out = v.clone()
    out[list(tokens)] = 0.0
    return out


def one_hot(token: int, size: int) -> torch.Tensor:
    v = torch.zeros(size, dtype=torch.float64)
    v[token] = 1.0
    return v


def run_chain(events: Iterable[Event], xs: Sequence[int], generator: torch.Generator) -> NodeVerdict:
    """Run a chain with the generator's uniforms: the first passed test accepts its candidate."""
    tests: list[AcceptTest] = []
    updates: list[ResidualUpdate] = []
    notes: list[str] = []
    for event in events:
        if isinstance(event, Test):
            tests.append(_decide(event, generator))
            if event.note:
                notes.append(event.note)
            if tests[-1].passed:
                return NodeVerdict(event.candidate, event.token, tuple(tests), tuple(updates), notes=tuple(notes))
        elif isinstance(event, Update):
            updates.append(ResidualUpdate(len(tests) - 1, event.residual, event.draft, event.note))
        else:
            return _emit(event, xs, tests, updates, notes, generator)
    raise RuntimeError("a verifier chain ended without a Final event")


def _decide(test: Test, generator: torch.Generator) -> AcceptTest:
    if test.outcome is not None:
        u, passed = NO_UNIFORM, test.outcome
    else:
        u = uniform(generator)
        passed = test.passes(u)  # threshold 0 (skipped test) never passes
    return AcceptTest(test.candidate, test.token, test.numerator, test.denominator, u, passed, test.label)


def _emit(final: Final, xs, tests, updates, notes, generator) -> NodeVerdict:
    if final.token is not None:  # decided or already drawn: a lazy law stays unbuilt (the verdict then has none)
        token, residual = final.token, None if isinstance(final.residual, Lazy) else final.residual
    else:
        residual = read_row(final.residual)  # [V]
        token = draw(residual, generator)
    hit = next((i for i in final.hits if xs[i] == token), None)
    return NodeVerdict(
        accepted=hit,
        token=token,
        tests=tuple(tests),
        updates=tuple(updates),
        residual=residual,
        via_residual=hit is not None,
        notes=tuple(notes),
    )


def chain_law(events: Iterable[Event], xs: Sequence[int], size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact (accept [k], residual [V]) of a chain: accept[i] = P(candidate i accepted), residual =
    law of the emitted token when no candidate is accepted (zeros when that never happens).
    size is the vocabulary size V."""
    accept = torch.zeros(len(xs), dtype=torch.float64)  # [k]
    stay = 1.0  # probability that every test so far was rejected
    for event in events:
        if isinstance(event, Test):
            a = event.probability
            accept[event.candidate] += stay * a
            stay *= 1.0 - a
            if stay == 0.0:  # acceptance is certain: later updates are never needed
                return accept, torch.zeros(size, dtype=torch.float64)
        elif isinstance(event, Final):
            return _final_law(event, xs, accept, stay)
    raise RuntimeError("a verifier chain ended without a Final event")


def _final_law(final: Final, xs, accept: torch.Tensor, stay: float) -> tuple[torch.Tensor, torch.Tensor]:
    residual = read_row(final.residual)  # [V]
    if not final.hits:
        return accept, residual
    first = {}  # token -> first hit-eligible candidate index with that token
    for i in final.hits:
        first.setdefault(xs[i], i)
    for token, i in first.items():
        accept[i] += stay * float(residual[token])
    return accept, normalise(without(residual, first))


ChainFn = Callable[[torch.Tensor, torch.Tensor, list[int]], Iterable[Event]]


def verify_chain(
    chain: ChainFn, p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int], generator: torch.Generator
) -> NodeVerdict:
    """A chain rule's `verify`: prepare the inputs once, then run the chain with the generator's uniforms."""
    p, q, xs = prepare(p, q, candidates)
    return run_chain(chain(p, q, xs), xs, generator)


def conditional_chain(
    chain: ChainFn, p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """A chain rule's `conditional`: the exact (accept [k], residual [V]) of the same chain."""
    p, q, xs = prepare(p, q, candidates)
    return chain_law(chain(p, q, xs), xs, p.shape[0])
