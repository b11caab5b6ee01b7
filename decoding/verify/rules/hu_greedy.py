"""Hu et al. (ICLR 2025) greedy draft sampler and its verifier, docs/verifiers.md §7.3.

Candidates: the top-(k-1) tokens T of q (deterministic), then one y ~ q' = q restricted to V \\ T
(uniform there when q has no mass left, as laws.sample draws it). Verification is SD of y against q':
    accept y if u <= p(y)/q'(y); else z ~ norm((p - q')_+)  (= p on T, since q' = 0 there).
A residual sample z in T IS an acceptance of that candidate (accepted = its index, via_residual=True):
its subtree was drafted independently of the coins, so descending into it stays lossless.
alpha = p(T) + sum_{x not in T} min(p(x), q'(x)). With k = 1 this is plain SD.

The verifier reads T as candidates[:-1] and y as the last candidate. Numerics: y with q'(y) = 0 is
skipped (threshold 0); a residual with no mass falls back to p.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from decoding.verify import laws
from decoding.verify.rules.common import Event, ratio_test, residual_tail, restricted


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    i, y = len(xs) - 1, xs[-1]
    q_rest = restricted(q, xs[:-1])  # [V] law of the random candidate
    yield ratio_test(i, y, p, q_rest, "p/q'")
    note = "a residual sample in the top set accepts that candidate"
    yield from residual_tail(p, p, q_rest, note, hits=tuple(range(i)))  # p on T, (p - q')_+ elsewhere; only T descends


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form (attains the membership bound): p(T) + sum_{x not in T} min(p(x), q(x)/(1 - q(T)))."""
    return float(torch.minimum(p, laws.TOPK_PLUS_RANDOM.inclusion(q, k)).sum())
