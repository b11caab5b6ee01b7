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

from decoding.verify.rules.common import (
    Event,
    Final,
    Test,
    Update,
    final_residual,
    residual,
)


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    if len(xs) != 1:
        raise ValueError(f"speculative sampling (sd) verifies exactly one candidate, got {len(xs)}")
    x = xs[0]
    yield Test(0, x, float(p[x]), float(q[x]), "p(x)/q(x)", note=skip_note(0, x, q))
    r = residual(p, q)  # [V] norm((p - q)_+)
    yield Update(r)
    yield Final(final_residual(r, p))


def skip_note(i: int, x: int, q: torch.Tensor) -> str:
    """A note for a candidate the draft law could not have produced."""
    return f"candidate {i} (token {x}) has q(x) = 0: skipped (threshold 0)" if not float(q[x]) > 0 else ""


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form: alpha = sum min(p, q) = 1 - TV(p, q) (p, q float64, normalised)."""
    return float(torch.minimum(p, q).sum())
