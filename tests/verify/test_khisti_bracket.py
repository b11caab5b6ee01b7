"""khisti_is decides its tests from two bounds on r (rules/fast/khisti_bracket.py); r is fitted only when needed.

Oracles: (1) the bounds hold both the fit's own number (`InducedLaw.at`, the exact test's denominator) and an
unbinned quadrature of r (every e^{-t w} evaluated), at every token, special weights included; (2) seeded
verdicts are the very verdicts the exact denominators give (same tokens, uniforms, decisions, shown numbers);
(3) `Test.passes` with a bracket equals the exact decision for any uniform; (4) a selected token the target
cannot emit (p = 0) is settled by r's closed form, without the fit. Broken variants, each failing: bounds without
the bin's spread (LAMBDA = 1), the spread applied the wrong way round, a pass decided from the wrong end of the
bracket, a residual proposal kept from the wrong end, r at a weight-0 token taken through the fit (26 of 30
nodes then fit r).
"""

from __future__ import annotations

import pytest
import torch

from decoding.verify.rules import common, khisti_is
from decoding.verify.rules.common import Test
from decoding.verify.rules.fast import khisti_bracket, khisti_lazy
from decoding.verify.verdict import Lazy, threshold_of

F64 = torch.float64


def _laws(seed: int, V: int, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.softmax(torch.randn(V, generator=g, dtype=F64) * scale, 0),
            torch.softmax(torch.randn(V, generator=g, dtype=F64) * scale, 0))


def _law(p: torch.Tensor, q: torch.Tensor, k: int) -> khisti_lazy.InducedLaw:
    w, extremes = khisti_lazy.weights_and_range(p, q)
    return khisti_lazy.InducedLaw(q, w, k, extremes=extremes)


def _bounds_hold(seed: int, scale: float, k: int) -> tuple[bool, float]:
    """Whether every token's bounds hold the fit's r and the unbinned r; and the median width hi / lo - 1."""
    p, q = _laws(seed, 2000, scale)
    q[:3] = torch.tensor([0.0, 1e-30, 1e-3])  # weight 0 (q = 0), a huge weight (> W_HI), and (p[2] = 0) weight 0
    p[2] = 0.0
    p, q = p / p.sum(), q / q.sum()
    law = _law(p, q, k)
    bounds = torch.tensor([law.bounds(y) for y in range(2000)], dtype=F64)  # [V, 2]
    assert law._fit is None  # every bound came from the bins alone
    exact = torch.tensor([law.at(y) for y in range(2000)], dtype=F64)  # [V]
    w = khisti_lazy.sir_weights(p, q)
    oracle = khisti_is.integrated_law(q, w, k)  # [V] the unbinned r (the textbook quadrature)
    slack = 1e-12 * k * q  # the quadrature's own error (r = k q E[a/(a+S)])
    lo, hi = bounds[:, 0], bounds[:, 1]
    hold = all(bool(((lo <= r + s) & (r - s <= hi)).all()) for r, s in ((exact, 0), (oracle, slack)))
    assert float(w[0]) == float(w[2]) == 0 and float(w[1]) > khisti_lazy.W_HI  # the three special tokens
    specials = bool((bounds[:3, 0] == exact[:3]).all() and (bounds[:3, 1] == exact[:3]).all())
    width = (bounds[3:, 1] / bounds[3:, 0] - 1).median()
    return hold and specials, float(width)


@pytest.mark.parametrize("scale,k", [(1.0, 2), (1.0, 8), (3.0, 4), (3.0, 8)])
def test_bounds_hold_the_fit_and_an_unbinned_quadrature(scale, k):
    hold, width = _bounds_hold(seed=k, scale=scale, k=k)
    assert hold
    assert width < 0.05  # ~LAMBDA^2 - 1: narrow enough to settle most tests


@pytest.mark.parametrize("lam", [1.0, "swapped"])
def test_broken_bounds_fail(monkeypatch, lam):
    if lam == "swapped":  # a / LAMBDA for the upper bound, a LAMBDA for the lower one
        monkeypatch.setattr(khisti_bracket, "LAMBDA", 1.0 / khisti_bracket.LAMBDA)
    else:
        monkeypatch.setattr(khisti_bracket, "LAMBDA", lam)
    assert not _bounds_hold(seed=8, scale=3.0, k=8)[0]


def _verdicts(seed: int, nodes: int, V: int, scale: float) -> tuple[list[tuple], int]:
    """Seeded verdicts of khisti_is on `nodes` random nodes (shown numbers read after the run), and how many
    nodes never fitted r."""
    g = torch.Generator().manual_seed(seed)
    out, unfitted = [], 0
    for _ in range(nodes):
        p, q = _laws(int(torch.randint(0, 10**6, (), generator=g)), V, scale)
        xs = torch.multinomial(q, 8, replacement=True, generator=g).tolist()
        node = khisti_lazy._Node(p, q, 8)
        verdict = khisti_lazy.verify(p, q, xs, g, cache=_One(node))
        unfitted += node.law._fit is None
        tests = [(t.token, t.uniform, t.passed, t.denominator, t.threshold) for t in verdict.tests]
        out.append((verdict.accepted, verdict.token, tests))
    return out, unfitted


class _One:
    """A NodeCache stand-in that hands verify the given node (so the test can look at its law afterwards)."""

    def __init__(self, node: khisti_lazy._Node) -> None:
        self.node = node

    def get(self, p, q, k, make):
        return self.node


def _exact_bounds(self, token):
    r = self.at(token)
    return r, r


@pytest.mark.parametrize("widen", [None, 0.5])
def test_verdicts_are_the_exact_denominators_verdicts(monkeypatch, widen):
    """widen: bounds made wider (still bounds) so that many tests and proposals fall between them and are
    settled by the exact number: that route is checked too, not only the bracket's."""
    if widen is not None:
        monkeypatch.setattr(khisti_bracket, "REL", widen)
    for scale in (1.0, 3.0):
        bracketed, unfitted = _verdicts(seed=int(scale), nodes=300, V=2048, scale=scale)
        with monkeypatch.context() as m:
            m.setattr(khisti_lazy.InducedLaw, "bounds", _exact_bounds)
            exact, none = _verdicts(seed=int(scale), nodes=300, V=2048, scale=scale)
        assert bracketed == exact
        assert none == 0
        assert unfitted >= 150 if widen is None else 0 < unfitted < 300  # mostly the bracket; with widen, both
        assert sum(accepted is None for accepted, _, _ in bracketed) >= 30  # rejections: the residual draw


def _broken_passes(self, u):
    """Decides a pass from the LOW end of the bracket (the largest threshold): passes some the exact one fails."""
    if self.bracket is not None and u <= threshold_of(self.numerator, self.bracket[0]):
        return True
    return self.threshold > 0 and u <= self.threshold


def _broken_kept(p_x, keep, law, x):
    """Keeps a proposal when the LOW bound would keep it."""
    lo, _ = law.bounds(x)
    return keep * p_x < p_x - lo


BROKEN = [(common.Test, ("passes", _broken_passes)), (khisti_lazy, ("_kept", _broken_kept))]


@pytest.mark.parametrize("where,broken", BROKEN)
def test_broken_decisions_fail(monkeypatch, where, broken):
    monkeypatch.setattr(khisti_bracket, "REL", 0.5)  # wide bounds: many decisions between them
    exact = _verdicts(seed=3, nodes=300, V=2048, scale=3.0)[0]
    monkeypatch.setattr(where, *broken)
    assert _verdicts(seed=3, nodes=300, V=2048, scale=3.0)[0] != exact


def _passes_agree(passes) -> bool:
    """Whether `passes` equals the exact decision on random tests with random brackets around the denominator."""
    g = torch.Generator().manual_seed(0)
    for _ in range(20000):
        n, d, below, above, u = torch.rand(5, generator=g, dtype=F64).tolist()
        lo, hi = d * (1 - 0.1 * below), d * (1 + 0.1 * above)
        test = Test(0, 0, n, Lazy(lambda d=d: d), "p/r", bracket=(lo, hi))
        if passes(test, u) != (threshold_of(n, d) > 0 and u <= threshold_of(n, d)):
            return False
    return True


def test_a_bracketed_test_decides_as_its_exact_number():
    assert _passes_agree(Test.passes)
    assert not _passes_agree(_broken_passes)


def test_a_lazy_denominator_is_built_only_when_read():
    built = []
    test = Test(0, 5, 0.3, Lazy(lambda: built.append(1) or 0.6), "p/r", bracket=(0.5, 0.7))
    assert test.passes(0.2) and not test.passes(0.9) and built == []  # 0.2 <= 0.3/0.7; 0.9 > 0.3/0.5
    assert test.passes(0.5) and built == [1]  # 0.3/0.7 < 0.5 <= 0.3/0.6: only the number settles it
    assert test.threshold == 0.5 and built == [1]


def test_a_weight_zero_selection_needs_no_fit(monkeypatch):
    """A warped target (top-50: p = 0 elsewhere) often gives every candidate weight 0: the first is selected and
    rejected (threshold 0) by r's closed form at a weight-0 token, and the residual token comes from the bracket
    of the tokens p can emit; the fit is never made. The verdicts are the exact denominators' verdicts."""
    def run() -> tuple[list, int]:
        g = torch.Generator().manual_seed(5)
        out, fitted = [], 0
        for _ in range(30):
            p, q = _laws(int(torch.randint(0, 10**6, (), generator=g)), 2048, 1.0)
            p[torch.argsort(p)[:-50]] = 0.0
            p = p / p.sum()
            xs = torch.multinomial(q, 8, replacement=True, generator=g).tolist()
            node = khisti_lazy._Node(p, q, 8)
            verdict = khisti_lazy.verify(p, q, xs, g, cache=_One(node))
            fitted += node.law._fit is not None
            tests = [(t.token, t.numerator, t.passed, t.denominator) for t in verdict.tests]
            out.append((verdict.accepted, verdict.token, tests))
        return out, fitted

    bracketed, fitted = run()
    assert sum(tests[0][1] == 0 for _, _, tests in bracketed) >= 10  # selected candidates with p(y) = 0
    assert fitted == 0
    monkeypatch.setattr(khisti_lazy.InducedLaw, "bounds", _exact_bounds)
    assert run()[0] == bracketed
