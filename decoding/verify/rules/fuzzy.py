"""Fuzzy speculative decoding (Holsman, Huang, Dhingra 2025, arXiv 2502.20704), docs/verifiers.md §16.2. LOSSY.

FSD replaces SD's random test by a deterministic one on the whole node: the candidate is accepted iff a
divergence between the target and draft laws at that position is at most a threshold T,
    accept  <=>  JS(p, q) <= T,        JS(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m),  m = ½ (p + q)  (nats, 0 ≤ JS ≤ ln 2);
on rejection the token is drawn from p itself (not SD's residual (p - q)_+: the paper's "sample from the
target" step). JS is the paper's and its reference code's default divergence (`fsd_div_type="js_div"`).
Here the whole node shares one test: all candidates pass or fail together, so the first is accepted.

Exact law at one node (k = 1): the emitted token follows q when JS(p, q) <= T, else p; so
TV(output, p) = TV(p, q) · 1[JS(p, q) <= T]. T = 0 accepts only where q = p (lossless, SD-like speed
only there); T >= ln 2 accepts every candidate (the draft model's own sampling). DEFAULT_THRESHOLD is
the paper's reference-code example (`fsd_div_threshold=0.4` with JS); `--fuzzy-threshold` sets it.

Pitfall: the reference code computes its "js_div" with `kl_div(log p, m)`, i.e. ½ KL(m ‖ p) + ½ KL(m ‖ q),
the reversed arguments; this rule uses the textbook JS the paper defines (both are 0 iff p = q).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from decoding.verify.rules.common import Event, Final, Test

DEFAULT_THRESHOLD = 0.4  # nats of JS divergence (max ln 2 ≈ 0.693)


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> float:
    """JS(p, q) in nats (p, q [V] float64, normalised; 0 log 0 = 0)."""
    m = 0.5 * (p + q)  # [V]
    kl_pm = torch.special.xlogy(p, p).sum() - torch.special.xlogy(p, m).sum()
    kl_qm = torch.special.xlogy(q, q).sum() - torch.special.xlogy(q, m).sum()
    return max(0.0, float(0.5 * (kl_pm + kl_qm)))


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int], threshold: float = DEFAULT_THRESHOLD) -> Iterator[Event]:
    div = js_divergence(p, q)
    close = div <= threshold
    for i, x in enumerate(xs):  # one node-wide test: the first candidate passes, or every one fails
        yield Test(i, x, threshold, div, "T/JS(p,q): accept iff JS <= T", outcome=close)
    yield Final(p.clone())  # rejected: a fresh draw from the target


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int, threshold: float = DEFAULT_THRESHOLD) -> float:
    """Closed form: 1 when JS(p, q) <= T, else 0 (q's candidates are accepted whatever they are)."""
    return 1.0 if js_divergence(p, q) <= threshold else 0.0
