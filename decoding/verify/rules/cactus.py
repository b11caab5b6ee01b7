"""Cactus: constrained acceptance speculative sampling (Hao & Mou, ICLR 2026, arXiv 2604.04987), docs/verifiers.md
§18. LOSSY.

Transcribed from the authors' code, github.com/MANGA-UOFA/Cactus `cactus/cactus.py` (`solve_constraint`, and the
`_get_accepted` / `_get_recovered_probs` overrides of vLLM's rejection sampler; commit 3b01b81, "Release"). Their
names are swapped against ours: their `target_probs` is our p, their `draft_probs` our q.

For the one drafted token n ~ q the verifier's law p is replaced by a law h⁽ⁿ⁾ that lifts n and scales every
other token down in proportion:
    h_n = min(1, p_n + sqrt(2 δ p_n (1 - p_n))),      h_i = p_i (1 - h_n) / (1 - p_n)   (i ≠ n),
then SD runs against h⁽ⁿ⁾: accept n with min(1, h_n / q_n), else emit y ~ norm((h⁽ⁿ⁾ - q)_+).

Why h_n has that form: for this proportional family ½ χ²(h⁽ⁿ⁾ ‖ p) = (h_n - p_n)² / (2 p_n (1 - p_n)), the
second-order expansion of KL(h⁽ⁿ⁾ ‖ p); h_n is the largest lift that keeps it at δ (before the cap at 1). So δ
budgets each candidate's own modified verifier law h⁽ⁿ⁾, to second order. It is not a bound on the emitted
token's law: h⁽ⁿ⁾ changes with the candidate, so the step emits a mixture of SD runs against different targets,
and on docs §12's toy (p = [.5, .3, .15, .05], q = [.2, .5, .2, .1]) at δ = 0.01 that mixture is 0.0457 nats
(KL(out ‖ p); TV 0.146) from p, 4.6 times δ. Only the exact law shows it (tests/verify/test_cactus.py).

δ = 0 is SD exactly (h = p). The authors' degenerate cases, kept: p_n = 1 gives h = p (their 0/0 -> 1 factor
on tokens of mass 0); a residual with no mass (probability 0 of being reached) falls back to p here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import torch

from decoding.verify.rules.common import Event, Test, residual_tail, skip_note

DEFAULT_DELTA = 0.01  # the per-candidate divergence budget (nats, second order); the authors' runs use 0.5-1.0


def lifted(p_n: float, delta: float) -> float:
    """h_n = min(1, p_n + sqrt(2 δ p_n (1 - p_n))): the drafted token's mass under the modified verifier law."""
    return min(1.0, max(0.0, p_n + math.sqrt(max(0.0, 2.0 * delta * p_n * (1.0 - p_n)))))


def modified_target(p: torch.Tensor, n: int, delta: float) -> torch.Tensor:
    """h⁽ⁿ⁾ [V]: token n lifted to h_n, every other token scaled by (1 - h_n) / (1 - p_n) (by 1 when p_n = 1,
    the authors' nan_to_num(nan=1.0); those tokens have mass 0 then)."""
    p_n = float(p[n])
    h_n = lifted(p_n, delta)
    scale = (1.0 - h_n) / (1.0 - p_n) if p_n < 1.0 else 1.0
    h = p * scale  # [V]
    h[n] = h_n
    return h.clamp_(0.0, 1.0)


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int], delta: float = DEFAULT_DELTA) -> Iterator[Event]:
    if len(xs) != 1:
        raise ValueError(f"cactus verifies exactly one candidate, got {len(xs)}")
    x = xs[0]
    h = modified_target(p, x, delta)  # [V]
    yield Test(0, x, float(h[x]), float(q[x]), f"h(x)/q(x), h(x) = p(x) + sqrt(2δp(1-p)), δ = {delta:g}",
                note=skip_note(0, x, q))
    yield from residual_tail(p, h, q)  # norm((h - q)_+)


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int, delta: float = DEFAULT_DELTA) -> float:
    """Closed form: sum_n q_n min(1, h_n / q_n) = sum_n min(q_n, h_n) (h_n depends on p_n only)."""
    h = (p + torch.sqrt((2.0 * delta * p * (1.0 - p)).clamp(min=0.0))).clamp(max=1.0)  # [V]
    return float(torch.minimum(q, h).sum())
