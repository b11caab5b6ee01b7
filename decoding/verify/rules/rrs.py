"""Recursive rejection sampling with replacement (SpecInfer "MSS", MCSD), docs/verifiers.md §3.

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

from decoding.verify.rules.common import Event, Final, Rows, Update, ratio_test
from decoding.verify.sampling import final_residual, residual_into


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int], keep: bool = True) -> Iterator[Event]:
    """keep=False (how the entry's exact `conditional` runs it, entry._law_chain: it reads only the
    thresholds and the final law): each Update residual is overwritten two tests later, two [V] rows of
    memory instead of k."""
    r = p  # [V] running residual target
    rows = Rows(len(xs), p) if keep else Rows.recycled(2, p)  # one block for the k residuals the verdict keeps
    for i, x in enumerate(xs):
        yield ratio_test(i, x, r, q, "r/q")
        r = residual_into(r, q, out=rows.take())  # [V] the update does not depend on which token was rejected
        yield Update(r)
    yield Final(final_residual(r, p))


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form: 1 - alpha = prod_i sum (r_i - q)_+ with r_1 = p, r_{i+1} = norm((r_i - q)_+).

    The residual chain does not depend on which token was rejected, so no sum over tuples is needed.
    """
    r, stay = p, 1.0
    for _ in range(k):
        stay *= float((r - q).clamp(min=0.0).sum())  # P(draw i rejected | every earlier one rejected)
        if stay <= 0.0:
            break
        r = residual_into(r, q)  # [V]
    return 1.0 - stay
