"""Recursive rejection sampling with replacement (SpecInfer "MSS", MCSD), VERIFIERS.md §3.

Candidates are k i.i.d. draws from q, tested in draw order against the running residual r:
    r <- p; for each x_i: accept if u <= r(x_i)/q(x_i), else r <- norm((r - q)_+); finally y ~ r.
Every draw triggers its residual update, duplicates included: a repeated token is rejected with
probability 1 (F2) but skipping its update biases the output (§3 pitfall 1).

Numerics: a candidate with q(x) = 0 is skipped (threshold 0) and its update still applied, as for
any draw. A residual with no mass stays all-zero (later tests have threshold 0) and the final draw
falls back to p: reaching that state has probability ~0.
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
    residual,
    verify_chain,
)
from decoding.verify.rules.sd import skip_note
from decoding.verify.verdict import NodeVerdict


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    r = p  # [V] running residual target
    for i, x in enumerate(xs):
        yield Test(i, x, float(r[x]), float(q[x]), "r(x)/q(x)", note=skip_note(i, x, q))
        r = residual(r, q)  # [V] the update does not depend on which token was rejected
        yield Update(r)
    yield Final(final_residual(r, p))


def verify(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int], generator: torch.Generator) -> NodeVerdict:
    """Recursive rejection sampling over i.i.d. candidates, in draw order."""
    return verify_chain(chain, p, q, candidates, generator)


def conditional(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact accept [k] and residual [V] given the candidates (the residual chain r_1 = p, r_{i+1})."""
    return conditional_chain(chain, p, q, candidates)
