"""Greedy token matching (SpecInfer VerifyGreedy; Medusa/EAGLE at temperature 0), docs/verifiers.md §9.1. LOSSY.

Node level: accept the first candidate equal to a* = argmax p (lowest id on ties); if none matches,
emit a*. The output is always a*, i.e. greedy decoding of the target: lossless only when p is one-hot,
otherwise TV(output, p) = 1 - p(a*). The tests are deterministic (no uniform drawn; shown as u = 1).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from decoding.verify import laws
from decoding.verify.rules.common import Event, Final, Test, one_hot


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    best = int(torch.argmax(p))  # first maximum
    for i, x in enumerate(xs):
        yield Test(i, x, 1.0 if x == best else 0.0, 1.0, "[x = argmax p]", outcome=x == best)
    yield Final(one_hot(best, p.shape[0]), token=best)


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form on the top-k(q) set: 1 if argmax p is a candidate, else 0."""
    return 1.0 if int(torch.argmax(p)) in laws.top_order(q, k) else 0.0
