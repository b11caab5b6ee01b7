"""Medusa typical acceptance (Cai et al. 2024, Medusa evaluate_posterior), docs/verifiers.md §9.2. LOSSY.

A candidate x is typical iff p(x) > min(eps, delta exp(-H(p))), H the entropy of p in nats, with
Medusa's medusa_generate defaults eps = 0.09 (posterior_threshold), delta = 0.3 (posterior_alpha).
Acceptance ignores q, so the output law is not p.

Node-level simplification: Medusa picks, over whole candidate paths, the longest run of typical
tokens; here one node accepts its first typical candidate in order and, when none is typical, emits
argmax p (Medusa's "fast" mode next token). Deterministic: no uniform drawn (shown as u = 1; on an
exact tie p(x) = tau the recorded threshold is 1 but the strict test fails, as in Medusa).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import torch

from decoding.verify import laws
from decoding.verify.rules.common import Event, Final, Test, one_hot

POSTERIOR_THRESHOLD = 0.09  # eps
POSTERIOR_ALPHA = 0.3  # delta


def typical_threshold(p: torch.Tensor, eps: float = POSTERIOR_THRESHOLD, delta: float = POSTERIOR_ALPHA) -> float:
    """tau = min(eps, delta exp(-H(p))), H in nats (0 log 0 = 0)."""
    entropy = float(torch.special.entr(p).sum())
    return min(eps, delta * math.exp(-entropy))


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    tau = typical_threshold(p)
    for i, x in enumerate(xs):
        px = float(p[x])
        yield Test(i, x, px, tau, "p(x)/min(eps, delta exp(-H))", outcome=px > tau)
    best = int(torch.argmax(p))
    yield Final(one_hot(best, p.shape[0]), token=best)


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form on the top-k(q) set: 1 if some candidate x has p(x) > tau, else 0."""
    return 1.0 if bool((p[laws.top_order(q, k)] > typical_threshold(p)).any()) else 0.0
