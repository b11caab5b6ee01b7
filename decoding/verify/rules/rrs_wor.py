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

from decoding.verify.rules.common import Event, Final, Rows, Test, Update, final_residual, restricted
from decoding.verify.sampling import EPS_MASS


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int], keep: bool = True) -> Iterator[Event]:
    """The residual target is kept as r = u / total with u unnormalised in ONE buffer updated in place (one
    subtraction, one clamp, one sum per rejected test), the draft law as d = base x scale (base: the undrawn q,
    or an explicit fallback law). keep=False (how the entry's exact `conditional` runs it, entry._law_chain: it
    reads only the thresholds and the final law) stops there: no [V] row per test. keep=True also writes the
    shown rows r and d, one multiply each into a fresh row (Rows: one block per node). The thresholds are read
    off u and base as scalars with the very multiplies the rows are written with: both modes agree bit for bit."""
    u, total = p, 1.0  # [V] residual target r = u / total (p itself until the first update)
    base, scale = q, 1.0  # [V] draft law d = base x scale, the law the current candidate was drawn from
    left = _Undrawn(q)
    rows = Rows(2 * len(xs), q) if keep else None  # one block: a shown residual and draft law per test
    shown = None  # [V] the last shown residual row (keep=True)
    for i, x in enumerate(xs):
        yield _test(i, x, float(u[x]) * (1.0 / total), float(base[x]) * scale)
        # subtract the law x_i was drawn from, before removing x_i from it
        u, total = _update(u if u is not p else torch.empty_like(p), u, total, base, scale)
        left.drop(x)
        base, scale = (left.rest, 1.0 / left.mass) if left.mass > SAFE_MASS else (restricted(q, xs[: i + 1]), 1.0)
        if keep:
            shown = torch.mul(u, 1.0 / total, out=rows.take())
            yield Update(shown, draft=torch.mul(base, scale, out=rows.take()))
    last = shown if shown is not None else torch.mul(u, 1.0 / total)  # [V] r after the last rejected test
    yield Final(final_residual(last, p))


def _test(i: int, x: int, r_x: float, d_x: float) -> Test:
    """Candidate i's accept test r(x)/d(x), skipped (threshold 0) when d(x) = 0: a token d could not have drawn."""
    note = "" if d_x > 0 else f"candidate {i} (token {x}) has d(x) = 0: skipped (threshold 0)"
    return Test(i, x, r_x, d_x, "r(x)/d(x)", note=note)


def _update(
    out: torch.Tensor, u: torch.Tensor, total: float, base: torch.Tensor, scale: float
) -> tuple[torch.Tensor, float]:
    """(u - base x scale x total)_+ [V] written into `out` (u itself, or a fresh buffer while u is the caller's p),
    and its total. With r = u / total and d = base x scale, (r - d)_+ = (u - d total)_+ / total, so the next r
    is the new u over its own total. When (r - d)_+ holds no more than EPS_MASS, r is all zeros (as
    sampling.residual makes it): u is zeroed and its total set to 1."""
    new = torch.sub(u, base, alpha=scale * total, out=out).clamp_(min=0.0)
    new_total = float(new.sum())
    if new_total / total > EPS_MASS:
        return new, new_total
    return new.zero_(), 1.0


SAFE_MASS = 1e-6  # below this undrawn q-mass, rebuild the next law exactly (sum, zero test, uniform fallback)


class _Undrawn:
    """q restricted to the tokens not drawn yet, kept incrementally: one write per drawn token instead of
    restricted()'s four [V] passes (clone, write, sum, divide). Copied from q (and summed) at the first draw,
    so a node whose first candidate passes pays nothing. Its mass is tracked by subtraction, exact to ~1e-16
    relative while it stays far from 0; near 0 the caller falls back to restricted()."""

    def __init__(self, q: torch.Tensor) -> None:
        self.q = q
        self.rest: torch.Tensor | None = None  # [V] q with the drawn tokens zeroed (our own copy)
        self.mass = 0.0

    def drop(self, x: int) -> None:
        if self.rest is None:
            self.rest, self.mass = self.q.clone(), float(self.q.sum())
        self.mass -= float(self.rest[x])  # 0 for a repeated token: already zeroed
        self.rest[x] = 0.0
