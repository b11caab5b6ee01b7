"""Recursive rejection sampling without replacement (MCSD, RSD, Sequoia), docs/verifiers.md §4.

Candidates are drawn sequentially without replacement: x_i ~ d_i, d_1 = q, d_{i+1} = q restricted to
the undrawn tokens. They must be tested in draw order:
    r <- p; d <- q; for each x_i: accept if u <= r(x_i)/d(x_i),
    else r <- norm((r - d)_+) with the CURRENT d (still holding x_i), then zero x_i in d;
    when d has no mass left, d <- uniform over the undrawn tokens (Sequoia's fallback); finally y ~ r.

Numerics: the draft law is rebuilt from q with an exact zero test, matching laws.sample, so k larger
than the support of q is fine (the uniform fallback takes over). A candidate with d(x) = 0 (a repeat,
or not drawable) is skipped with threshold 0. A residual with no mass falls back to p at the end.

Cost: r only shrinks (each update subtracts a non-negative law and clamps), so after the first update
it lives on S = {p > q} (about half the vocabulary for unrelated laws): every later update runs on S
only. The shown rows (a residual and a draft law per rejected test) are `LazyRow`s, built from
snapshots only when someone reads them (a recording run, a test): the fast path never writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from decoding.verify.rules.common import Event, Final, Test, Update, final_residual, restricted
from decoding.verify.sampling import EPS_MASS
from decoding.verify.verdict import LazyRow


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int], keep: bool = True) -> Iterator[Event]:
    """The residual target r = u / total (`_Residual`: u on a support, one working buffer) and the draft law
    d = base x scale (`_Undrawn`). keep=True yields an Update per rejected test whose rows are LazyRows over
    immutable snapshots; keep=False (how the entry's exact `conditional` runs it, entry._law_chain: it reads
    only the thresholds and the final law) yields none. The thresholds are read off u and d as scalars with
    the very multiplies the rows are built with: a row read later agrees with its test bit for bit, and both
    modes compute the same numbers."""
    r = _Residual(p)  # r = p until the first update
    d = _Undrawn(q)
    shown = None  # the last shown residual row (keep=True)
    for i, x in enumerate(xs):
        yield _test(i, x, r.at(x) * (1.0 / r.total), d.at(x))
        r.subtract(d)  # the law x_i was drawn from, before removing x_i from it
        d = d.without(xs[: i + 1])
        r.freeze(x)
        if keep:
            shown = LazyRow(r.snapshot())
            yield Update(shown, draft=LazyRow(d.row))
    last = shown.get() if shown is not None else r.snapshot()()  # [V] r after the last rejected test
    yield Final(final_residual(last, p))


def _test(i: int, x: int, r_x: float, d_x: float) -> Test:
    """Candidate i's accept test r(x)/d(x), skipped (threshold 0) when d(x) = 0: a token d could not have drawn."""
    note = "" if d_x > 0 else f"candidate {i} (token {x}) has d(x) = 0: skipped (threshold 0)"
    return Test(i, x, r_x, d_x, "r(x)/d(x)", note=note)


SAFE_MASS = 1e-6  # below this undrawn q-mass, rebuild the next law exactly (sum, zero test, uniform fallback)


@dataclass(frozen=True)
class _Undrawn:
    """The draft law d = base x scale: q restricted to the undrawn tokens (base = q with the drawn tokens
    zeroed, kept implicitly: `drawn` and the mass left, tracked by subtraction, exact to ~1e-16 relative
    while it stays far from 0), or below SAFE_MASS an explicit law from restricted() (`fallback`)."""

    q: torch.Tensor  # [V]
    drawn: tuple[int, ...] = ()
    mass: float | None = None  # q's mass on the undrawn tokens (None: not summed yet, nothing drawn)
    scale: float = 1.0
    fallback: torch.Tensor | None = None  # [V] explicit base (scale 1)

    def at(self, x: int) -> float:
        """d(x), as the row holds it."""
        if self.fallback is not None:
            return float(self.fallback[x]) * self.scale
        return (0.0 if x in self.drawn else float(self.q[x])) * self.scale

    def without(self, drawn: Sequence[int]) -> _Undrawn:
        """d once the tokens `drawn` (all drawn so far) are removed from it."""
        mass = float(self.q.sum()) if self.mass is None else self.mass
        if drawn[-1] not in self.drawn:
            mass -= float(self.q[drawn[-1]])
        if mass > SAFE_MASS:
            return _Undrawn(self.q, tuple(drawn), mass, 1.0 / mass)
        return _Undrawn(self.q, tuple(drawn), mass, 1.0, restricted(self.q, drawn))

    def row(self) -> torch.Tensor:
        """[V] d (a LazyRow's builder: q and the fallback are never written into)."""
        if self.fallback is not None:
            return torch.mul(self.fallback, self.scale)
        out = torch.mul(self.q, self.scale)  # zero x scale = 0: the drawn tokens may be zeroed afterwards
        out[list(self.drawn)] = 0.0
        return out


class _Residual:
    """u [V], the unnormalised residual target (r = u / total), as one chain updates it.

    After the first update u lives on S = {p > q} (`index`; u = 0 elsewhere) and, while d is q restricted
    to the undrawn tokens (scaled), u = (p - C q)_+ on S with C the running sum of the subtracted scales,
    except at the drawn tokens, frozen at their value when drawn (d is 0 there from then on): since
    ((a - b q)_+ - c q)_+ = (a - (b + c) q)_+ for q >= 0, every update recomputes u into ONE buffer from
    (p_on, q_on, C) and a snapshot is just (C, the frozen values, total). Once d falls back to an explicit
    law (restricted(): rare, q's undrawn mass below SAFE_MASS) each update writes a fresh [m] u instead.
    When an update leaves no more than EPS_MASS of r, r is all zeros for good (as sampling.residual makes
    it): S empty, total 1."""

    def __init__(self, p: torch.Tensor) -> None:
        self.p, self.total, self.c = p, 1.0, 0.0
        self.index: np.ndarray | None = None  # [m] sorted token ids of S (None before the first update)
        self.p_on = self.q_on = None  # [m] p and q on S (ours, never written)
        self.u = p  # [m] u on S: the working buffer (formula mode) or the latest fresh snapshot (explicit)
        self.explicit = False
        self.frozen: dict[int, float] = {}  # position in S -> u frozen there (drawn tokens, formula mode)

    def at(self, x: int) -> float:
        """u(x) (0 off S)."""
        if self.index is None:
            return float(self.u[x])
        pos = _position(self.index, x)
        return 0.0 if pos is None else float(self.u[pos])

    def subtract(self, d: _Undrawn) -> None:
        """u <- (u - d total)_+: with r = u / total, (r - d)_+ = (u - d total)_+ / total; then its total."""
        alpha = d.scale * self.total
        if self.index is None:
            self._restrict(d.q)
        if d.fallback is None and not self.explicit:
            self.c += alpha
            _clamped(self.p_on, self.q_on, self.c, self.frozen, out=self.u)
        else:
            self.explicit = True  # fresh memory from now on: the shown rows keep their own u
            self.u = torch.sub(self.u, d.fallback[_long(self.index)], alpha=alpha).clamp_(min=0.0)
        total = float(self.u.sum())
        if total / self.total > EPS_MASS:
            self.total = total
        else:
            self._vanish()

    def _restrict(self, q: torch.Tensor) -> None:
        """S = {p > q}, the support of (p - q)_+ (the first update: d = q, total 1); p and q gathered there."""
        p_np, q_np = self.p.numpy(), q.numpy()
        self.index = np.flatnonzero(p_np > q_np)  # [m]
        self.p_on, self.q_on = torch.from_numpy(p_np[self.index]), torch.from_numpy(q_np[self.index])
        self.u = torch.empty_like(self.p_on)

    def _vanish(self) -> None:
        self.index = np.empty(0, dtype=np.int64)
        self.u = self.p_on = self.q_on = self.p.new_zeros(0)
        self.frozen, self.total = {}, 1.0

    def freeze(self, x: int) -> None:
        """x was just drawn: d is 0 there from now on, so u(x) stays as it is (formula mode keeps it)."""
        pos = _position(self.index, x)
        if pos is not None and not self.explicit:
            self.frozen.setdefault(pos, float(self.u[pos]))

    def snapshot(self) -> Callable[[], torch.Tensor]:
        """A builder of today's [V] r from data nobody writes afterwards (for a LazyRow)."""
        if self.explicit:
            return partial(_spread, self.p, self.index, self.u, self.total)
        return partial(_formula_row, self.p, self.index, self.p_on, self.q_on, self.c, dict(self.frozen), self.total)


def _clamped(p_on: torch.Tensor, q_on: torch.Tensor, c: float, frozen: dict[int, float],
             out: torch.Tensor | None = None) -> torch.Tensor:
    """[m] (p - c q)_+ on S with the frozen values written back: u in formula mode."""
    u = torch.sub(p_on, q_on, alpha=c, out=out).clamp_(min=0.0)
    if frozen:
        u.numpy()[list(frozen)] = list(frozen.values())
    return u


def _formula_row(p, index, p_on, q_on, c: float, frozen: dict[int, float], total: float) -> torch.Tensor:
    """[V] r in formula mode: u rebuilt exactly as the chain computed it (same arrays, same operations)."""
    return _spread(p, index, _clamped(p_on, q_on, c, frozen), total)


def _spread(p: torch.Tensor, index: np.ndarray, u: torch.Tensor, total: float) -> torch.Tensor:
    """[V] u / total, zero off S."""
    out = torch.zeros_like(p)
    out.numpy()[index] = torch.mul(u, 1.0 / total).numpy()
    return out


def _position(index: np.ndarray, x: int) -> int | None:
    """x's position in the sorted ids `index` (None when absent)."""
    pos = int(np.searchsorted(index, x))
    return pos if pos < index.size and index[pos] == x else None


def _long(index: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(index)
