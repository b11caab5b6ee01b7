"""Point-mass ("naive") verification for deterministic candidate sets (EAGLE-2/3, MCSD MCNS), docs/verifiers.md §8.

RRS with q = delta_x for each candidate: r <- p; for each distinct candidate x in the given order,
accept if u <= r(x), else zero x in r and renormalise; finally y ~ r. Equivalent in law to drawing
y ~ p and accepting it if it is a candidate, so alpha = p(candidate set) and the output is exactly p
for ANY candidate set chosen independently of the verifier's coins (top-k, re-ranked trees, samples).

A repeated token is skipped without a test: after its first test r(x) = 0. The residual is rebuilt
from p (p restricted to the untested tokens) to keep it exact; when it holds no mass (the candidates
cover the support of p) acceptance is certain and the fallback p is never used.

Speed: the untested p-mass is tracked by subtraction, so each update is one [V] pass (p x 1/mass, then
index writes) instead of four (clone, writes, sum, divide); below SAFE_MASS the mass is summed exactly.
The rows come from one block per node (rules/common.Rows), recycled in the entry's `conditional` (entry._law_chain).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from decoding.verify import laws
from decoding.verify.rules.common import Event, Final, Rows, Test, Update
from decoding.verify.sampling import final_residual, normalised_

SAFE_MASS = 1e-3  # below this untested p-mass, renormalise by an exact sum (subtraction loses digits)


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int], keep: bool = True) -> Iterator[Event]:
    """keep=False (how the entry's exact `conditional` runs it, entry._law_chain: it reads only the
    thresholds and the final law): each Update row is overwritten two tests later, two [V] rows of memory
    instead of one per distinct candidate."""
    r = p  # [V]
    tested: list[int] = []
    left = float(p.sum())  # p-mass of the untested tokens
    rows = Rows(len(xs), p) if keep else Rows.recycled(2, p)  # one block for the rows the verdict keeps
    for i, x in enumerate(xs):
        if x in tested:
            continue  # a repeat: r(x) = 0 already
        yield Test(i, x, float(r[x]), 1.0, "r(x)/1")
        tested.append(x)
        left -= float(p[x])
        r = _untested(p, tested, left, rows.take())  # [V] p restricted to the untested tokens, normalised
        yield Update(r)
    yield Final(final_residual(r, p))


def _untested(p: torch.Tensor, tested: list[int], left: float, out: torch.Tensor) -> torch.Tensor:
    """[V] p without the tested tokens, normalised, written into `out` (a fresh row): one pass (a multiply by
    1/mass) while the mass left is safely above 0, an exact sum below SAFE_MASS."""
    if left <= SAFE_MASS:
        out.copy_(p)[tested] = 0.0
        return normalised_(out)
    r = torch.mul(p, 1.0 / left, out=out)  # [V]
    r[tested] = 0.0
    return r


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form for the "any" law's deterministic set C = top-k(q): alpha = p(C)."""
    return float(p[laws.top_order(q, k)].sum())
