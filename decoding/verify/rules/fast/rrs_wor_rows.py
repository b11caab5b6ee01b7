"""rrs_wor's fast twin (the registry's path): the chain of rules/rrs_wor.py with no [V] row it does not need.

The textbook chain (rules/rrs_wor.py, docs/verifiers.md §4) keeps a normalised residual and an explicit draft law
per rejected test. Here the residual target r = u / total lives in one working buffer updated in place, the draft
law is q times a scale (its drawn tokens zero implicitly) until q's undrawn mass runs low, and the thresholds are
read off u and d as scalars. Held equal to the textbook by tests/verify/test_fast_rules.py (same verdicts, tokens
and rows under the same seeds; same exact law).

Numerics: the draft law is rebuilt from q with an exact zero test, matching laws.sample, so k larger
than the support of q is fine (the uniform fallback takes over). A candidate with d(x) = 0 (a repeat,
or not drawable) is skipped with threshold 0. A residual with no mass falls back to p at the end.

Cost: per rejected test one update of the residual in place (subtract, clamp, sum: three [V] passes)
and nothing else. The shown rows (a residual and a draft law per rejected test) are `LazyRow`s, built
only when someone reads them (a recording run, a test), bit for bit the rows the chain tested with:
the fast path never writes them (16 fresh [V] rows per node were most of this rule's time).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

import torch

from decoding.verify.rules.common import Event, Final, Rows, Test, Update, restricted
from decoding.verify.sampling import EPS_MASS, final_residual
from decoding.verify.verdict import LazyRow


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int], keep: bool = True) -> Iterator[Event]:
    """The residual target r = u / total (`_Residual`: u in one working buffer, updated in place) and the
    draft law d = base x scale (`_Undrawn`). keep=True yields an Update per rejected test whose rows are
    LazyRows (`_Shown`): the draft law rebuilt from q and the drawn tokens, the residual replayed from the
    log of the chain's updates. keep=False (how the entry's exact `conditional` runs it, entry._law_chain:
    it reads only the thresholds and the final law) yields none. The thresholds are read off u and d as
    scalars with the very multiplies the rows are built with: a row read later agrees with its test."""
    r, d = _Residual(p), _Undrawn(q)  # r = p until the first update; d = q until the first draw
    shown = _Shown(p, Rows(2 * len(xs), p))
    for i, x in enumerate(xs):
        yield _test(i, x, r.at(x) * (1.0 / r.total), d.at(x))
        total = r.subtract(d.base, d.scale)  # the law x_i was drawn from, before removing x_i from it
        r.freeze(x)
        shown.log.append((d.base, d.scale, total, x))
        d.drop(xs[: i + 1])
        if keep and i + 1 < len(xs):
            yield Update(LazyRow(partial(shown.residual, i)), draft=LazyRow(partial(shown.draft, *d.now())))
    last = r.normalised_()  # [V] r after the last rejected test, over the working buffer (its last use)
    if keep:  # the last shown row is the final law itself: nothing to replay
        yield Update(LazyRow.built(last), draft=LazyRow(partial(shown.draft, *d.now())))
    yield Final(final_residual(last, p))


def _test(i: int, x: int, r_x: float, d_x: float) -> Test:
    """Candidate i's accept test r(x)/d(x), skipped (threshold 0) when d(x) = 0: a token d could not have drawn."""
    note = "" if d_x > 0 else f"candidate {i} (token {x}) has d(x) = 0: skipped (threshold 0)"
    return Test(i, x, r_x, d_x, "r(x)/d(x)", note=note)


SAFE_MASS = 1e-6  # below this undrawn q-mass, rebuild the next law exactly (sum, zero test, uniform fallback)


class _Undrawn:
    """The draft law d = base x scale. base is q itself while q keeps mass on the undrawn tokens (d is
    then q with the drawn tokens zeroed, over the mass left: the zeros are implicit, `drawn`, and the mass
    is tracked by subtraction, exact to ~1e-16 relative while it stays far from 0); below SAFE_MASS it is
    an explicit law from restricted() (zero at the drawn tokens, scale 1), rebuilt at every draw."""

    def __init__(self, q: torch.Tensor) -> None:
        self.q, self.base, self.scale = q, q, 1.0  # [V], [V]
        # scalar reads through a numpy view cost about a tenth of reads through torch (docs/speed.md,
        # "Measurements the code's comments cite")
        self.q_np = q.numpy()  # [V] a view
        self.drawn: set[int] = set()
        self.mass: float | None = None  # q's mass on the undrawn tokens (summed at the first draw)

    def at(self, x: int) -> float:
        """d(x), as the row holds it."""
        if self.base is not self.q:
            return float(self.base[x]) * self.scale
        return (0.0 if x in self.drawn else float(self.q_np[x])) * self.scale

    def drop(self, drawn: Sequence[int]) -> None:
        """Remove the last of the tokens `drawn` (all drawn so far) from d."""
        x = drawn[-1]
        if self.mass is None:
            self.mass = float(self.q.sum())
        if x not in self.drawn:
            self.mass -= float(self.q_np[x])
            self.drawn.add(x)
        if self.mass > SAFE_MASS:
            self.scale = 1.0 / self.mass
        else:
            self.base, self.scale = restricted(self.q, drawn), 1.0

    def now(self) -> tuple[torch.Tensor, float, tuple[int, ...]]:
        """(base, scale, drawn): what the current d's row is built from (none of it is written into later)."""
        return self.base, self.scale, tuple(self.drawn)


class _Residual:
    """u [V], the unnormalised residual target (r = u / total), updated in place in one working buffer.

    The subtracted base is q itself while d is q restricted to the undrawn tokens: the drawn tokens are
    written back afterwards (`frozen`: their value since drawn; d is 0 there, and u - 0 x alpha would have
    left them exactly so), so no [V] copy of q with zeros is made. When an update leaves no more than
    EPS_MASS of r, r is all zeros (as sampling.residual makes it) and total 1."""

    def __init__(self, p: torch.Tensor) -> None:
        self.p, self.u, self.total = p, p, 1.0  # [V] u = p until the first update (then our own buffer)
        self.u_np = p.numpy()  # [V] a view of u: scalar reads and writes ~10x cheaper than through torch
        self.frozen: dict[int, float] = {}  # drawn token -> u there since it was drawn

    def at(self, x: int) -> float:
        return float(self.u_np[x])

    def subtract(self, base: torch.Tensor, scale: float) -> float:
        """u <- (u - d total)_+ with d = base x scale: with r = u / total, (r - d)_+ = (u - d total)_+ / total;
        then its total. Returns the sum it settled on (a replay settles on it without summing again)."""
        self.update(base, scale)
        total = float(self.u.sum())
        self.settle(total)
        return total

    def update(self, base: torch.Tensor, scale: float) -> None:
        """u <- (u - base x scale x total)_+, the drawn tokens written back."""
        if self.u is self.p:  # the first update: our working buffer
            out = torch.empty_like(self.p)  # [V]
            self.u_np = out.numpy()
        else:
            out = self.u
        self.u = torch.sub(self.u, base, alpha=scale * self.total, out=out).clamp_(min=0.0)
        # scalar numpy writes: each a small fraction of one index_put (docs/speed.md, "Measurements the code's
        # comments cite")
        for x, value in self.frozen.items():
            self.u_np[x] = value

    def settle(self, total: float) -> None:
        """Take u's sum as the new total, or, when r kept no more than EPS_MASS, zeros from now on (nothing
        frozen either) and total 1."""
        if total / self.total > EPS_MASS:
            self.total = total
        else:
            self.u.zero_()
            self.total, self.frozen = 1.0, {}

    def freeze(self, x: int) -> None:
        """x was just drawn: d is 0 there from now on, so u(x) stays as it is."""
        self.frozen.setdefault(x, float(self.u_np[x]))

    def normalised_(self) -> torch.Tensor:
        """[V] the current r, written over the working buffer: the chain's last use of it."""
        return self.u.mul_(1.0 / self.total)


@dataclass
class _Shown:
    """The shown rows of one chain, built on demand into one `Rows` block (allocated at the first read).
    Residual row i replays the chain's updates 0..i (`log[j]` = (base, scale, total, x): the draft law
    subtracted at update j, the sum the chain settled on, the token drawn) on a private `_Residual`, so it
    is bit for bit the u the chain tested with; rows read in order cost one update each (the replay goes
    on from the last row built), an earlier row restarts it. The log only grows: entries 0..i, all that
    row i reads, never change (p, q and a fallback base are never written into)."""

    p: torch.Tensor  # [V]
    rows: Rows
    log: list[tuple[torch.Tensor, float, float, int]] = field(default_factory=list)
    _r: _Residual | None = None
    _done: int = 0  # updates replayed into _r

    def residual(self, i: int) -> torch.Tensor:
        """[V] r after the chain's update i."""
        if self._r is None or self._done > i + 1:
            self._r, self._done = _Residual(self.p), 0
        while self._done <= i:
            base, scale, total, x = self.log[self._done]
            self._r.update(base, scale)
            self._r.settle(total)
            self._r.freeze(x)
            self._done += 1
        return torch.mul(self._r.u, 1.0 / self._r.total, out=self.rows.take())

    def draft(self, base: torch.Tensor, scale: float, drawn: tuple[int, ...]) -> torch.Tensor:
        """[V] d = base x scale, zero at the drawn tokens (base = q: 0 x scale = 0, so zeroing after the
        multiply gives the same row; a fallback base is zero there already)."""
        out = torch.mul(base, scale, out=self.rows.take())
        out.numpy()[list(drawn)] = 0.0
        return out
