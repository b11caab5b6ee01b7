"""Point-mass ("naive") verification for deterministic candidate sets (EAGLE-2/3, MCSD MCNS), docs/verifiers.md §8.

RRS with q = delta_x for each candidate: r <- p; for each distinct candidate x in the given order,
accept if u <= r(x), else zero x in r and renormalise; finally y ~ r. Equivalent in law to drawing
y ~ p and accepting it if it is a candidate, so alpha = p(candidate set) and the output is exactly p
for ANY candidate set chosen independently of the verifier's coins (top-k, re-ranked trees, samples).

A repeated token is skipped without a test: after its first test r(x) = 0. The residual is rebuilt
from p (p restricted to the untested tokens) to keep it exact; when it holds no mass (the candidates
cover the support of p) acceptance is certain and the fallback p is never used.

Speed: the untested p-mass is tracked by subtraction, so each update is one [V] pass (p / mass, then
index writes) instead of four (clone, writes, sum, divide); below SAFE_MASS the mass is summed exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from decoding.verify import laws
from decoding.verify.rules.common import (
    Event,
    Final,
    Test,
    Update,
    final_residual,
    normalised_,
    without,
)

SAFE_MASS = 1e-3  # below this untested p-mass, renormalise by an exact sum (subtraction loses digits)


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    r = p  # [V]
    tested: list[int] = []
    left = float(p.sum())  # p-mass of the untested tokens
    for i, x in enumerate(xs):
        if x in tested:
            continue  # a repeat: r(x) = 0 already
        yield Test(i, x, float(r[x]), 1.0, "r(x)/1")
        tested.append(x)
        left -= float(p[x])
        r = _untested(p, tested, left)  # [V] p restricted to the untested tokens, normalised
        yield Update(r)
    yield Final(final_residual(r, p))


def _untested(p: torch.Tensor, tested: list[int], left: float) -> torch.Tensor:
    """[V] p without the tested tokens, normalised: one pass while the mass left is safely above 0."""
    if left <= SAFE_MASS:
        return normalised_(without(p, tested))
    r = p / left  # [V] a fresh tensor
    r[tested] = 0.0
    return r


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form for the "any" law's deterministic set C = top-k(q): alpha = p(C)."""
    return float(p[laws.top_order(q, k)].sum())
