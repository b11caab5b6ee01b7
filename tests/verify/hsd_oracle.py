"""HSD transcribed literally from the authors' code, every coin branched: the oracle of tests/verify/test_hsd.py.

The authors' `simulation.py` HSD (and the one-draft `backward` branch of their transformers patch) works in
joint probabilities: q_next[k] = Q(X_<=k) q_k, p_next[k] = (P(X_<=k) / max(1, max_{j<=k} ratio_j)) p_k,
p_primes = (p_next - q_next)_+ / max(sum +, sum -), step_back_probs = 1 - sum p_primes (NaN: never steps
back), the whole draft accepted when u <= prod p_i / q_i, else stop at the last position that did not
step back (0 if all did) and resample from p_primes there. Here nothing is scaled or reused from
decoding/verify/tree_rules/hsd.py: the 2^g step-back patterns and the final coin are enumerated.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import torch

Cap = Callable[[list[float], list[float]], list[float]]  # (joint P, joint Q) per prefix -> capped joint P


def running_max_cap(P: list[float], Q: list[float]) -> list[float]:
    """simulation.py: previous_max starts at 1 and rises with every larger prefix ratio."""
    out, previous_max = [], 1.0
    for p_k, q_k in zip(P, Q, strict=True):
        previous_max = max(previous_max, p_k / q_k)
        out.append(p_k / previous_max)
    return out


def authors_law(p_rows: torch.Tensor, q_rows: torch.Tensor, xs: list[int], cap: Cap = running_max_cap,
                whole_capped: bool = False) -> dict[tuple[int, int], float]:
    """{(n_matches, next token): probability} for the chain xs (p_rows [g+1, V], q_rows [g, V], float64).

    whole_capped: accept the whole draft with min(1, capped P_g / Q_g) instead of the published
    min(1, P_g / Q_g) (the lossless fix)."""
    g = len(xs)
    p_i = [float(p_rows[k, x]) for k, x in enumerate(xs)]
    q_i = [float(q_rows[k, x]) for k, x in enumerate(xs)]
    P = [math.prod(p_i[:k]) for k in range(g + 1)]  # joint_p_previous, and P_g
    Q = [math.prod(q_i[:k]) for k in range(g + 1)]
    capped = cap(P, Q)
    primes, back = [], []
    for k in range(g):
        diff = capped[k] * p_rows[k] - Q[k] * q_rows[k]  # [V]
        plus, minus = float(diff.clamp(min=0).sum()), float((-diff).clamp(min=0).sum())
        denominator = max(plus, minus)
        primes.append(diff.clamp(min=0) / denominator if denominator > 0 else torch.zeros_like(diff))
        back.append(1.0 - plus / denominator if denominator > 0 else 0.0)  # NaN < u is False: no step back
    whole = min(1.0, capped[g] / Q[g]) if whole_capped else min(1.0, P[g] / Q[g])
    law: dict[tuple[int, int], float] = {}

    def add(n: int, row: torch.Tensor, prob: float) -> None:
        row = row / row.sum()
        for y in range(row.numel()):
            if float(row[y]) > 0:
                law[(n, y)] = law.get((n, y), 0.0) + prob * float(row[y])

    add(g, p_rows[g], whole)
    for pattern in itertools.product((False, True), repeat=g):  # True: that position steps back
        prob = (1.0 - whole) * math.prod(b if s else 1.0 - b for s, b in zip(pattern, back, strict=True))
        if prob <= 0:
            continue
        stop = max((k for k, s in enumerate(pattern) if not s), default=0)
        add(stop, primes[stop], prob)
    return law
