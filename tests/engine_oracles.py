"""Helpers for the engine tests: the exact law of a toy run's first tokens, and a goodness-of-fit test."""

from __future__ import annotations

import itertools
import math

import torch
from scipy import stats

from decoding.verify.sampling import warp


def exact_joint(
    next_logits, context: list[int], n: int, temperature: float, eos: frozenset[int] = frozenset()
) -> dict[tuple[int, ...], float]:
    """P(first n generated tokens = x) under the warped target, by enumeration (small V only).

    A sequence that reaches an EOS token stops there (it is an outcome of its own).
    """
    law: dict[tuple[int, ...], float] = {(): 1.0}
    for _ in range(n):
        nxt: dict[tuple[int, ...], float] = {}
        for prefix, prob in law.items():
            if prefix and prefix[-1] in eos:
                nxt[prefix] = prob
                continue
            p = warp(next_logits(context + list(prefix)), temperature)  # [V]
            for tok in torch.nonzero(p > 0).flatten().tolist():
                nxt[prefix + (tok,)] = prob * float(p[tok])
        law = nxt
    return law


def chi_square_pvalue(counts: dict[tuple, int], law: dict[tuple, float], min_expected: float = 5.0) -> float:
    """Pearson chi-square goodness of fit; cells expected below `min_expected` are pooled into one bin."""
    total = sum(counts.values())
    unexpected = [x for x in counts if law.get(x, 0.0) == 0.0]
    if unexpected:
        return 0.0  # an outcome the target can never produce
    big = [x for x in law if law[x] * total >= min_expected]
    observed = [counts.get(x, 0) for x in big]
    expected = [law[x] * total for x in big]
    rest_obs = total - sum(observed)
    rest_exp = total - sum(expected)
    if rest_exp >= 1e-9:
        observed.append(rest_obs)
        expected.append(rest_exp)
    stat = sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))
    return float(stats.chi2.sf(stat, df=len(observed) - 1))


def total_variation(counts: dict[tuple, int], law: dict[tuple, float]) -> float:
    total = sum(counts.values())
    keys = set(counts) | set(law)
    return 0.5 * sum(abs(counts.get(x, 0) / total - law.get(x, 0.0)) for x in keys)


def all_prefixes(vocab: int, n: int):
    return itertools.product(range(vocab), repeat=n)


def logit_gap(logits: torch.Tensor) -> float:
    top2 = torch.topk(logits.to(torch.float64), 2).values
    return float(top2[0] - top2[1]) if math.isfinite(float(top2[1])) else float("inf")
