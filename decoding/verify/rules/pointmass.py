"""Point-mass ("naive") verification for deterministic candidate sets (EAGLE-2/3, MCSD MCNS), VERIFIERS.md §8.

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

from decoding.verify.rules.common import (
    Event,
    Final,
    Test,
    Update,
    conditional_chain,
    final_residual,
    normalised_,
    verify_chain,
    without,
)
from decoding.verify.verdict import NodeVerdict


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


def verify(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int], generator: torch.Generator) -> NodeVerdict:
    """Sequential point-mass tests u <= r(x); q is not used (the candidates need not be samples of q)."""
    return verify_chain(chain, p, q, candidates, generator)


def conditional(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """accept[i] = p(x_i) for the first occurrence of each token (0 for repeats); residual = p off the set."""
    return conditional_chain(chain, p, q, candidates)
