"""Recursive rejection sampling without replacement (MCSD, RSD, Sequoia), docs/verifiers.md §4.

Candidates are drawn sequentially without replacement: x_i ~ d_i, d_1 = q, d_{i+1} = q restricted to
the undrawn tokens. They must be tested in draw order:
    r <- p; d <- q; for each x_i: accept if u <= r(x_i)/d(x_i),
    else r <- norm((r - d)_+) with the CURRENT d (still holding x_i), then zero x_i in d;
    when d has no mass left, d <- uniform over the undrawn tokens (Sequoia's fallback); finally y ~ r.

This file is the recurrence as written above, one fresh [V] row per step. The registry runs its fast twin,
rules/fast/rrs_wor_rows.py (`FAST`: one working buffer, rows built only when a view reads them), which
tests/verify/test_fast_rules.py holds to the same verdicts, tokens, rows and exact law.

Numerics: d is rebuilt from q with an exact zero test (rules.common.restricted), matching laws.sample, so k
larger than q's support is fine (the uniform fallback takes over). A candidate with d(x) = 0 (a repeat, or
not drawable) is skipped with threshold 0. A residual left with no more than EPS_MASS is all zeros from then
on (later tests have threshold 0), and the final draw falls back to p: reaching that has probability ~0.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from decoding.verify.rules.common import Event, Final, Test, Update, restricted
from decoding.verify.rules.fast import rrs_wor_rows
from decoding.verify.sampling import EPS_MASS, final_residual

FAST = rrs_wor_rows  # what the registry runs (Verifier.from_rule)


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    """The chain of docs/verifiers.md §4: test x_i against r/d, update r with the d x_i was drawn from, drop x_i."""
    r, d = p, q  # [V] residual target, [V] the law the next candidate is drawn from
    for i, x in enumerate(xs):
        yield _test(i, x, r, d)
        r = _residual(r, d)  # [V] with the d that still holds x_i
        d = restricted(q, xs[: i + 1])  # [V] q without the drawn tokens (uniform on the rest when q has none)
        yield Update(r, draft=d)
    yield Final(final_residual(r, p))


def _test(i: int, x: int, r: torch.Tensor, d: torch.Tensor) -> Test:
    """Candidate i's accept test r(x)/d(x), skipped (threshold 0) when d(x) = 0: a token d could not have drawn."""
    d_x = float(d[x])
    note = "" if d_x > 0 else f"candidate {i} (token {x}) has d(x) = 0: skipped (threshold 0)"
    return Test(i, x, float(r[x]), d_x, "r(x)/d(x)", note=note)


def _residual(r: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """norm((r - d)_+) [V]; all zeros when it keeps no more than EPS_MASS of r's mass."""
    left = (r - d).clamp(min=0.0)  # [V]
    total = float(left.sum())
    return left / total if total > EPS_MASS * float(r.sum()) else torch.zeros_like(r)
