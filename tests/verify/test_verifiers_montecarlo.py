"""verify() follows conditional(): seeded Monte Carlo per entry and fixed candidate tuple, plus the
internal consistency of every NodeVerdict (thresholds, uniforms, accepted index, residual).

Outcome categories: "candidate i accepted" (hu_greedy: a residual hit counts) and "residual token y".
Tolerance per category: 5 binomial standard errors + 0.003 absolute, N = 3000 draws: a wrong law of
the size the broken variants produce (>= 0.04) fails; a correct one fails with probability < 1e-5.
"""

from __future__ import annotations

import math

import pytest
import torch

from decoding.verify.registry import VERIFIERS, node_level_keys
from decoding.verify.rules.common import NO_UNIFORM

F64 = torch.float64
N = 3000
P = torch.tensor([0.30, 0.25, 0.20, 0.15, 0.10], dtype=F64)
Q = torch.tensor([0.10, 0.35, 0.05, 0.20, 0.30], dtype=F64)

# Fixed tuples per entry, chosen to exercise every branch: duplicates, both SpecHub cases, hits.
TUPLES = {
    "sd": [(1,), (0,)],
    "rrs": [(4, 4, 1), (1, 3, 0)],
    "rrs_wor": [(4, 1, 3), (1, 4, 0)],
    "spectr": [(4, 1, 1), (0, 3, 2)],
    "spechub": [(4, 1), (1, 4)],  # hub = argmax q = token 1
    "khisti_is": [(4, 1, 3), (0, 0, 2)],
    "hu_greedy": [(1, 4, 3), (1, 4, 0)],  # top-2 of q = (1, 4), then a random one
    "pointmass": [(1, 4, 3), (2, 2, 0)],
    "greedy": [(1, 0), (3, 2)],
    "typical": [(4, 1), (2, 0)],
    "gls": [(4, 4, 1), (1, 3)],  # drafts not from verify's exponentials: Y drawn from its law given them
    "ot_optimal": [(4, 4, 1), (1, 3, 0)],  # a repeat: its share goes to the first copy
    "fuzzy": [(4, 1), (2, 0)],
    "cactus": [(1,), (4,)],
}


def _law(key: str, xs: list[int]) -> dict:
    accept, residual = VERIFIERS[key].conditional(P, Q, xs)
    law = {("accept", i): float(a) for i, a in enumerate(accept)}
    rest = 1.0 - float(accept.sum())
    law.update({("residual", y): rest * float(r) for y, r in enumerate(residual)})
    return law


def _outcome(verdict) -> tuple:
    return ("accept", verdict.accepted) if verdict.accepted is not None else ("residual", verdict.token)


def check_verdict(verdict, xs: list[int]) -> None:
    """Invariants every NodeVerdict satisfies, whatever the verifier."""
    for n, t in enumerate(verdict.tests):
        expected = 0.0 if not t.denominator > 0 else min(1.0, max(0.0, t.numerator / t.denominator))
        assert t.threshold == pytest.approx(expected, abs=1e-15)
        assert xs[t.candidate] == t.token
        if t.uniform != NO_UNIFORM:
            assert 0.0 <= t.uniform < 1.0 and t.passed == (t.threshold > 0 and t.uniform <= t.threshold)
        assert not t.passed or n == len(verdict.tests) - 1, "only the last test can pass"
    assert all(0 <= u.after_test < len(verdict.tests) for u in verdict.updates)
    if verdict.accepted is not None:
        assert xs[verdict.accepted] == verdict.token
    if verdict.accepted is not None and not verdict.via_residual:
        assert verdict.tests[-1].passed and verdict.tests[-1].candidate == verdict.accepted
    else:
        assert not any(t.passed for t in verdict.tests)
        law = verdict.residual if verdict.residual is not None else verdict.updates[-1].residual  # khisti_is: lazy
        assert float(law[verdict.token]) > 0


@pytest.mark.parametrize("key", node_level_keys())
def test_verify_frequencies_match_conditional(key):
    entry = VERIFIERS[key]
    for t, xs in enumerate(TUPLES[key]):
        xs = list(xs)
        law = _law(key, xs)
        generator = torch.Generator().manual_seed(1000 + t)
        counts: dict = {}
        for _ in range(N):
            verdict = entry.verify(P, Q, xs, generator)
            check_verdict(verdict, xs)
            counts[_outcome(verdict)] = counts.get(_outcome(verdict), 0) + 1
        assert set(counts) <= {o for o, pr in law.items() if pr > 0}, f"{key} {xs}: impossible outcome"
        for outcome, prob in law.items():
            freq = counts.get(outcome, 0) / N
            tol = 5 * math.sqrt(prob * (1 - prob) / N) + 0.003
            assert abs(freq - prob) <= tol, f"{key} {xs} {outcome}: freq {freq:.4f} vs exact {prob:.4f}"


def test_hu_greedy_residual_hits_are_reported_as_acceptances():
    xs = [1, 4, 3]  # q'(3) = .2/.35 > p(3): the random candidate is often rejected
    generator = torch.Generator().manual_seed(3)
    hits = [v for v in (VERIFIERS["hu_greedy"].verify(P, Q, xs, generator) for _ in range(300)) if v.via_residual]
    assert hits and all(v.accepted in (0, 1) and v.token == xs[v.accepted] for v in hits)


def test_verify_uses_only_the_given_generator():
    """Same seed, same verdicts; the global RNG is neither used nor needed."""
    xs = [4, 1, 3]
    for key in ("rrs", "rrs_wor", "spectr", "khisti_is", "pointmass"):
        runs = []
        for _ in range(2):
            torch.manual_seed(torch.seed())  # scramble the global RNG between runs
            g = torch.Generator().manual_seed(11)
            runs.append([(v.accepted, v.token) for v in (VERIFIERS[key].verify(P, Q, xs, g) for _ in range(50))])
        assert runs[0] == runs[1], key
