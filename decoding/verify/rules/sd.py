"""Standard speculative sampling (Leviathan et al. 2023; Chen et al. 2023), docs/verifiers.md §2.

One candidate x ~ q: accept with probability min(1, p(x)/q(x)), otherwise emit y ~ norm((p - q)_+).
Acceptance is 1 - TV(p, q), the optimal single-draft value.

Numerics: a candidate with q(x) = 0 cannot have been drawn from q (a warp mismatch); it is skipped
(threshold 0). When (p - q)_+ holds no mass (p = q up to rounding) rejection has probability ~0 and
the residual falls back to p.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from decoding.verify.rules.common import Event, ratio_test, residual_tail


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    if len(xs) != 1:
        raise ValueError(f"speculative sampling (sd) verifies exactly one candidate, got {len(xs)}")
    yield ratio_test(0, xs[0], p, q)
    yield from residual_tail(p, p, q)  # norm((p - q)_+)


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form: alpha = sum min(p, q) = 1 - TV(p, q) (p, q float64, normalised)."""
    return float(torch.minimum(p, q).sum())
