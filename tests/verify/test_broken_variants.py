"""Deliberately broken verifiers (docs/verifiers.md §11.3) fail the same exactness check the real ones pass.

Each case mixes the variant's exact conditional law over every candidate tuple of its law and measures
TV(mixture, p); the correct verifier on the same case is exact to 1e-12, the broken one misses p by
a clear margin (values measured here are quoted in the comments, asserted with a 0.05 floor).
"""

from __future__ import annotations

import pytest
import torch

from decoding.verify.registry import VERIFIERS
from decoding.verify.rules import spectr
from decoding.verify.rules.common import Final, Test, Update, chain_law
from decoding.verify.sampling import final_residual, residual
from tests.verifier_oracles import mixed_law, tv

F64 = torch.float64
P12 = torch.tensor([0.50, 0.30, 0.15, 0.05], dtype=F64)
Q12 = torch.tensor([0.20, 0.50, 0.20, 0.10], dtype=F64)
MARGIN = 0.05


def _rrs_skipping_duplicates(p, q, xs):
    """RRS that dedupes siblings by token value: a repeat is neither tested nor used to update r."""
    seen: set[int] = set()

    def chain():
        r = p
        for i, x in enumerate(xs):
            if x in seen:
                continue
            seen.add(x)
            yield Test(i, x, float(r[x]), float(q[x]), "r(x)/q(x)")
            r = residual(r, q)
            yield Update(r)
        yield Final(final_residual(r, p))

    return chain_law(chain(), list(xs), p.shape[0])


def _rrs_wor_sorted_by_q(p, q, xs):
    """RRS without replacement that verifies the candidates by decreasing q instead of draw order."""
    order = sorted(range(len(xs)), key=lambda i: -float(q[xs[i]]))
    accept_sorted, res = VERIFIERS["rrs_wor"].conditional(p, q, [xs[i] for i in order])
    accept = torch.zeros(len(xs), dtype=F64)
    accept[order] = accept_sorted
    return accept, res


def _kseq_at(scale: float):
    """K-SEQ with the division factor scale * rho* (scale < 1: below the valid range)."""

    def conditional(p, q, xs):
        rho = max(1.0, scale * spectr.division_factor(p, q, len(xs)))
        return chain_law(spectr.chain(p, q, list(xs), rho=rho), list(xs), p.shape[0])

    return conditional


def test_rrs_skipping_duplicate_updates_is_biased():
    p = torch.tensor([0.05, 0.60, 0.35], dtype=F64)
    q = torch.tensor([0.55, 0.40, 0.05], dtype=F64)
    assert tv(mixed_law(VERIFIERS["rrs"].conditional, p, q, 2, "iid"), p) < 1e-12
    broken = tv(mixed_law(_rrs_skipping_duplicates, p, q, 2, "iid"), p)
    assert broken > MARGIN  # measured 0.110


def test_rrs_without_replacement_sorted_by_q_is_biased():
    for k, measured in [(2, 0.1833), (3, 0.2738)]:
        assert tv(mixed_law(VERIFIERS["rrs_wor"].conditional, P12, Q12, k, "without_replacement"), P12) < 1e-12
        broken = tv(mixed_law(_rrs_wor_sorted_by_q, P12, Q12, k, "without_replacement"), P12)
        assert broken > MARGIN and broken == pytest.approx(measured, abs=1e-4)


def test_rrs_on_deterministic_top_k_is_biased():
    """§4 pitfall 4: p = [.3, .3, .4], top-2 of q = [.6, .4, 0] gives output [.5, 0, .5] (TV .3)."""
    p = torch.tensor([0.3, 0.3, 0.4], dtype=F64)
    q = torch.tensor([0.6, 0.4, 0.0], dtype=F64)
    for conditional in (VERIFIERS["rrs"].conditional, VERIFIERS["rrs_wor"].conditional):
        out = mixed_law(conditional, p, q, 2, "topk")
        assert out.tolist() == pytest.approx([0.5, 0.0, 0.5], abs=1e-12)
        assert tv(out, p) == pytest.approx(0.3, abs=1e-12) and tv(out, p) > MARGIN
    assert tv(mixed_law(VERIFIERS["rrs"].conditional, p, q, 2, "iid"), p) < 1e-12  # i.i.d. draws: exact


def test_kseq_below_rho_star_is_biased():
    for k in (2, 3):
        assert tv(mixed_law(_kseq_at(1.0), P12, Q12, k, "iid"), P12) < 1e-12
        assert tv(mixed_law(_kseq_at(1.1), P12, Q12, k, "iid"), P12) < 1e-12  # any rho >= rho* is valid
        broken = tv(mixed_law(_kseq_at(0.8), P12, Q12, k, "iid"), P12)
        assert broken > MARGIN  # measured 0.0882 (k=2), 0.0770 (k=3)
