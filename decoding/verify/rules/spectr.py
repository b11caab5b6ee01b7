"""SpecTr K-SEQ (Sun et al., NeurIPS 2023), docs/verifiers.md §5.2.

k i.i.d. candidates, each tested with a damped SD test u <= p(x)/(rho q(x)); if all fail, emit
    y ~ norm(p - min(q, p/rho) (1 - (1 - beta)^k) / beta),   beta(rho) = sum_x min(q(x), p(x)/rho).
It is lossless for every rho >= rho*, the root of f(rho) = 1 - (1 - beta(rho))^k - rho beta(rho) on [1, k]
(f is non-increasing). We use the upper bracket of the root, so rho is never below rho*; the residual
uses the general formula (its simplification norm((p - rho q)_+) holds only at rho* exactly).

rho* exactly, in a few passes over V: beta(rho) = Q(w >= rho) + P(w < rho)/rho with w = p/q, so f at
the edges of a 1024-bucket grid on [1, k] follows from per-bucket sums of q and p; inside the bucket that
holds the root, the bucket's own tokens give the breakpoints of the piecewise closed form, and a scalar
bisection on the last segment brackets the root to a few ulps. (Equivalent to bisecting f on [1, k],
without 50 passes over the vocabulary.)

Numerics: beta = 0 (disjoint supports) gives acceptance 0 and residual p; p = q gives rho* = 1 (plain
SD per candidate); a candidate with q(x) = 0 is skipped (threshold 0).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from decoding.verify.rules.common import Event, Final, Test, skip_note
from decoding.verify.sampling import normalised_residual_

BUCKETS = 1024


def beta(p: torch.Tensor, q: torch.Tensor, rho: float) -> float:
    """beta(rho) = sum_x min(q(x), p(x)/rho)."""
    return float(torch.minimum(q, p / rho).sum())


def division_factor(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """rho at (or a few ulps above) rho*, the smallest valid division factor in [1, k]."""
    return _root(p, q, k)[0]


def _damped(
    p: torch.Tensor, q: torch.Tensor, rho: float, out: torch.Tensor | None = None
) -> tuple[torch.Tensor, float]:
    """[V] min(q, p/rho) and its sum beta(rho): computed once, shared by the root check and the residual.
    out: a [V] buffer of ours to write it into (fresh memory costs page faults, more than the arithmetic)."""
    damped = torch.div(p, rho, out=out)  # [V]
    torch.minimum(q, damped, out=damped)
    return damped, float(damped.sum())


def _root(p: torch.Tensor, q: torch.Tensor, k: int) -> tuple[float, tuple[torch.Tensor, float] | None]:
    """(rho, min(q, p/rho) with its sum, or None when not computed on the way).

    One fresh [V] buffer: w = p/q, then (same memory) the bucket index, then min(q, p/rho) and the residual
    (fresh memory costs page faults, more than the arithmetic). Everything of bucket or breakpoint size
    runs in numpy (a torch op has a fixed cost here whatever its size, and torch.nonzero on a [V] mask costs
    about ten times np.flatnonzero: docs/speed.md, "Measurements the code's comments cite")."""
    if k == 1:
        return 1.0, None  # f <= 0 on [1, k]
    w = q.clamp(min=1e-300)  # [V] our buffer
    bucket = _buckets(p, w, k)  # [V] int64, in w's memory
    edges, above_q, below_p = _edge_sums(p, q, bucket, k)  # [B+1] each
    positive = np.flatnonzero(_f(edges, above_q, below_p, k) > 0)
    if positive.size == 0:
        return 1.0, None  # f(1) = 0 (p = q, or disjoint supports where f = 0 everywhere): rho* = 1
    j = int(positive[-1])
    if j == BUCKETS:
        return float(k), None
    inside = np.flatnonzero(bucket.numpy() == j + 1)  # the breakpoints in (edges[j], edges[j+1])
    p_in, q_in = p.numpy()[inside], q.numpy()[inside]
    rho = _solve_in_bucket(
        p_in / np.maximum(q_in, 1e-300), p_in, q_in,
        float(edges[j]), float(edges[j + 1]), float(above_q[j]), float(below_p[j]), k,
    )
    return _at_or_above_root(p, q, rho, k, out=w)  # w's memory is free again: the bucket index is read


def _edge_sums(p: torch.Tensor, q: torch.Tensor, bucket: torch.Tensor, k: int) -> tuple[np.ndarray, ...]:
    """(edges, above_q, below_p) [B+1]: the grid on [1, k], the q-mass of tokens with w >= edges[j] and the
    p-mass of tokens with w < edges[j], from per-bucket sums (summed in token order, like the cumsums)."""
    p_sum = torch.zeros(BUCKETS + 2, dtype=torch.float64).scatter_add_(0, bucket, p)  # [B+2] per-bucket mass
    q_sum = torch.zeros(BUCKETS + 2, dtype=torch.float64).scatter_add_(0, bucket, q)
    edges = torch.linspace(1.0, float(k), BUCKETS + 1, dtype=torch.float64).numpy()  # [B+1]
    below_p = np.cumsum(p_sum.numpy())[:-1]
    above_q = float(q_sum.sum()) - np.cumsum(q_sum.numpy())[:-1]
    return edges, above_q, below_p


def _buckets(p: torch.Tensor, w: torch.Tensor, k: int) -> torch.Tensor:
    """[V] int64 bucket of w = p/q, written over `w` (q clamped at 1e-300, ours): bucket 0: w < 1; bucket j in
    1..B: edges[j-1] <= w < edges[j] (up to rounding); B+1: w >= k. q = 0 gives a huge finite w (bucket
    B+1, where its q = 0 counts nowhere) and p = 0 gives w = 0 (bucket 0, where its p = 0 counts nowhere):
    no masks needed."""
    torch.div(p, w, out=w)
    scale = BUCKETS / (k - 1)
    # no floor_: after the clamp to >= 0 the int64 cast's truncation is the floor (one pass fewer)
    w.mul_(scale).sub_(scale - 1.0).clamp_(0, BUCKETS + 1)
    bucket = w.view(torch.int64)  # same memory, same element size: the cast reads each entry before writing it
    return bucket.copy_(w)


def _at_or_above_root(
    p: torch.Tensor, q: torch.Tensor, rho: float, k: int, out: torch.Tensor | None = None
) -> tuple[float, tuple]:
    """rho nudged up until f(rho) <= 0 with beta summed directly (bucket sums round differently), with
    min(q, p/rho) and beta at that rho.

    The first step (1e-14 relative) usually suffices; the acceptance lost is of that order."""
    step = 1e-14
    for _ in range(30):
        rho = min(rho * (1.0 + step), float(k))
        damped = _damped(p, q, rho, out)
        b = damped[1]
        if rho >= k or 1.0 - (1.0 - b) ** k - rho * b <= 0.0:
            break
        step *= 10.0
    return rho, damped


def _f(rho, above_q, below_p, k):
    """f(rho) = 1 - (1 - beta)^k - rho beta with beta = above_q + below_p / rho (numpy arrays or floats:
    both take the power from the C library's pow)."""
    b = above_q + below_p / rho
    return 1.0 - (1.0 - b) ** k - rho * b


def _solve_in_bucket(w, pw, qw, lo: float, hi: float, above_q: float, below_p: float, k: int) -> float:
    """Root of f in (lo, hi] where f(lo) > 0 >= f(hi); the bucket's tokens (w, pw, qw: [m] numpy) are
    the breakpoints."""
    order = np.argsort(w, kind="stable")
    w, pw, qw = w[order], pw[order], qw[order]  # [m]
    above = above_q - np.cumsum(qw)  # [m] segment constants just after each breakpoint
    below = below_p + np.cumsum(pw)
    f_at = _f(w, above + qw, below - pw, k)  # [m] f at each breakpoint (continuous there)
    crossed = np.flatnonzero((f_at <= 0) & (w > lo))
    if crossed.size:
        i = int(crossed[0])
        hi = float(w[i])
    else:
        i = w.size
    if i > 0 and float(w[i - 1]) > lo:
        lo = float(w[i - 1])
    seg_above = above_q if i == 0 else float(above[i - 1])
    seg_below = below_p if i == 0 else float(below[i - 1])
    return _bisect(lo, hi, seg_above, seg_below, k)


def _bisect(lo: float, hi: float, above_q: float, below_p: float, k: int) -> float:
    """Upper bracket of the root of the closed-form f on one segment, to a few ulps."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if _f(mid, above_q, below_p, k) > 0:
            lo = mid
        else:
            hi = mid
    return hi


def kseq_residual(p: torch.Tensor, q: torch.Tensor, rho: float, k: int, damped: tuple | None = None) -> torch.Tensor:
    """[V] norm(p - min(q, p/rho) (1 - (1 - beta)^k)/beta), clamped at 0; p when beta = 0.
    `damped`: min(q, p/rho) with its sum when the caller has them already; the residual is then written
    over it (the caller's buffer, not needed afterwards)."""
    damped, b = _damped(p, q, rho) if damped is None else damped
    if not b > 0:
        return p.clone()  # no overlap: nothing is ever accepted (a copy: verdicts never alias inputs)
    accepted = torch.add(p, damped, alpha=-(1.0 - (1.0 - b) ** k) / b, out=damped)  # [V] p - P(y emitted by acceptance)
    return normalised_residual_(accepted.clamp_(min=0.0), p)


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int], rho: float | None = None) -> Iterator[Event]:
    """K-SEQ at rho (default: rho*). rho < rho* is NOT lossless; the broken-variant tests pass one."""
    k = len(xs)
    rho, damped = _root(p, q, k) if rho is None else (rho, None)
    label, p_np, q_np = f"p(x)/(rho q(x)), rho={rho:.6g}", p.numpy(), q.numpy()  # numpy: ~10x cheaper reads
    for i, x in enumerate(xs):
        q_x = float(q_np[x])
        yield Test(i, x, float(p_np[x]), rho * q_x, label, note="" if q_x > 0 else skip_note(i, x, q))
    yield Final(kseq_residual(p, q, rho, k, damped))


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int, rho: float | None = None) -> float:
    """Closed form at rho (default: the rho this rule uses): alpha = 1 - (1 - beta(rho))^k."""
    rho = division_factor(p, q, k) if rho is None else rho
    return 1.0 - (1.0 - beta(p, q, rho)) ** k
