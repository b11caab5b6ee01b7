"""Recursive rejection sampling without replacement (MCSD, RSD, Sequoia), docs/verifiers.md §4.

Candidates are drawn sequentially without replacement: x_i ~ d_i, d_1 = q, d_{i+1} = q restricted to
the undrawn tokens. They must be tested in draw order:
    r <- p; d <- q; for each x_i: accept if u <= r(x_i)/d(x_i),
    else r <- norm((r - d)_+) with the CURRENT d (still holding x_i), then zero x_i in d;
    when d has no mass left, d <- uniform over the undrawn tokens (Sequoia's fallback); finally y ~ r.

Numerics: the draft law is rebuilt from q with an exact zero test, matching laws.sample, so k larger
than the support of q is fine (the uniform fallback takes over). A candidate with d(x) = 0 (a repeat,
or not drawable) is skipped with threshold 0. A residual with no mass falls back to p at the end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from decoding.verify.rules.common import (
    Event,
    Final,
    Rows,
    Update,
    final_residual,
    ratio_test,
    residual,
    restricted,
)


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int], keep: bool = True) -> Iterator[Event]:
    """keep=False (how the entry's exact `conditional` runs it, entry._law_chain: it reads only the
    thresholds and the final law): each Update row is overwritten two tests later, four [V] rows of memory
    instead of 2k."""
    r, d = p, q  # [V] residual target, [V] law the current candidate was drawn from
    left = _Undrawn(q, torch.empty_like(q))
    rows = Rows(2 * len(xs), q) if keep else Rows.recycled(4, q)  # one block: a residual and a draft law per test
    for i, x in enumerate(xs):
        yield ratio_test(i, x, r, d, "r/d")
        r = residual(r, d, out=rows.take())  # subtract the law x_i was drawn from, before removing x_i from it
        left.drop(x)
        d = left.law(rows.take()) if left.mass > SAFE_MASS else restricted(q, xs[: i + 1])  # [V] next draw's law
        yield Update(r, draft=d)
    yield Final(final_residual(r, p))


SAFE_MASS = 1e-6  # below this undrawn q-mass, rebuild the next law exactly (sum, zero test, uniform fallback)


class _Undrawn:
    """q restricted to the tokens not drawn yet, kept incrementally: one [V] pass per candidate instead of
    restricted()'s four (clone, write, sum, divide). Its mass is tracked by subtraction, exact to ~1e-16
    relative while it stays far from 0; near 0 the caller falls back to restricted()."""

    def __init__(self, q: torch.Tensor, out: torch.Tensor) -> None:
        self.rest = out.copy_(q)  # [V] q with the drawn tokens zeroed (out: a fresh row)
        self.mass = float(q.sum())

    def drop(self, x: int) -> None:
        self.mass -= float(self.rest[x])  # 0 for a repeated token: already zeroed
        self.rest[x] = 0.0

    def law(self, out: torch.Tensor) -> torch.Tensor:
        """[V] normalised law of the next draw, written into `out` (a fresh row: the update that shows it keeps it)."""
        return torch.mul(self.rest, 1.0 / self.mass, out=out)  # a multiply: half a division's cost

