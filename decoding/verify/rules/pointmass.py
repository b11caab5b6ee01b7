"""Point-mass ("naive") verification for deterministic candidate sets (EAGLE-2/3, MCSD MCNS), docs/verifiers.md §8.

RRS with q = delta_x for each candidate: r <- p; for each distinct candidate x in the given order,
accept if u <= r(x), else zero x in r and renormalise; finally y ~ r. Equivalent in law to drawing
y ~ p and accepting it if it is a candidate, so alpha = p(candidate set) and the output is exactly p
for ANY candidate set chosen independently of the verifier's coins (top-k, re-ranked trees, samples).

A repeated token is skipped without a test: after its first test r(x) = 0. The residual is rebuilt
from p (p restricted to the untested tokens) to keep it exact; when it holds no mass (the candidates
cover the support of p) acceptance is certain and the fallback p is never used.
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


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    r = p  # [V]
    tested: list[int] = []
    for i, x in enumerate(xs):
        if x in tested:
            continue  # a repeat: r(x) = 0 already
        yield Test(i, x, float(r[x]), 1.0, "r(x)/1")
        tested.append(x)
        r = normalised_(without(p, tested))  # [V] p restricted to the untested tokens
        yield Update(r)
    yield Final(final_residual(r, p))


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form for the "any" law's deterministic set C = top-k(q): alpha = p(C)."""
    return float(p[laws.top_order(q, k)].sum())
