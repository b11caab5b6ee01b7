"""The induced law of SIR selection (khisti_is): the fast twin's 1-D integral (rules/fast/khisti_lazy.py) agrees with
exact enumeration and with the textbook's direct (unbinned) quadrature (rules/khisti_is.py, every e^{-t w}
evaluated), sums to 1, and keeps the verifier lossless when it is used."""

from __future__ import annotations

import math

import pytest
import torch

from decoding.verify.registry import VERIFIERS
from decoding.verify.rules import khisti_is
from decoding.verify.rules.fast import khisti_lazy
from tests.verifier_oracles import dirichlet_pair, mixed_law

F64 = torch.float64
V_REAL = 49152  # SmolLM2's vocabulary


def test_integral_matches_enumeration_on_small_vocabularies():
    g = torch.Generator().manual_seed(0)
    worst = 0.0
    for trial in range(60):
        V, k = 2 + trial % 5, 2 + trial % 3
        p, q = dirichlet_pair(g, V, [0.3, 1.0, 3.0][trial % 3], sparse=trial % 2 == 0)
        w = khisti_lazy.sir_weights(p, q)
        exact = khisti_lazy.induced_law(p, q, k, method="enumerate")
        worst = max(worst, float((khisti_lazy.integrated_law(q, w, k) - exact).abs().max()))
    assert worst < 1e-12  # measured ~1e-13


@pytest.mark.parametrize("k", [2, 4, 8])
def test_binned_integral_matches_direct_quadrature(k):
    g = torch.Generator().manual_seed(k)
    p = torch.softmax(torch.randn(2000, generator=g, dtype=F64) * 2, 0)
    q = torch.softmax(torch.randn(2000, generator=g, dtype=F64) * 2, 0)
    w = khisti_lazy.sir_weights(p, q)
    assert float((khisti_lazy.integrated_law(q, w, k) - khisti_is.integrated_law(q, w, k)).abs().sum()) < 1e-12


@pytest.mark.parametrize("scale,top", [(1.0, 0), (3.0, 0), (2.0, 200)])
def test_raw_integral_sums_to_one_at_full_vocabulary(scale, top):
    """sum_y r(y) = 1 holds for the exact law: the raw total measures the quadrature error."""
    g = torch.Generator().manual_seed(int(scale * 10) + top)
    logits_p = torch.randn(49152, generator=g, dtype=F64) * scale
    logits_q = torch.randn(49152, generator=g, dtype=F64) * scale
    if top:  # warped laws: zeros outside a top set, so zero-weight tokens and q = 0 both occur
        logits_p[torch.argsort(logits_p)[:-top]] = -math.inf
        logits_q[torch.argsort(logits_q)[: -3 * top]] = -math.inf
    p, q = torch.softmax(logits_p, 0), torch.softmax(logits_q, 0)
    r = khisti_lazy.integrated_law(q, khisti_lazy.sir_weights(p, q), 8)
    assert bool((r >= 0).all()) and abs(float(r.sum()) - 1.0) < 1e-12


def test_law_at_one_token_agrees_with_the_full_law():
    """The accept test (and the rejection-drawn residual token) evaluate r at one token from its bin's directly
    summed column, the full law from every column at once by FFT: the same r up to rounding, |difference| <=
    2e-14 q(y) (g = r / (k q) to 2e-15; the quadrature itself is good to ~1e-13), for every token, special
    weights included; and at() gives the very same number whether or not the full law was built before."""
    g = torch.Generator().manual_seed(9)
    p = torch.softmax(torch.randn(V_REAL, generator=g, dtype=F64) * 3, 0)
    q = torch.softmax(torch.randn(V_REAL, generator=g, dtype=F64) * 3, 0)
    q[:3] = torch.tensor([0.0, 1e-22, 1e-3])  # weight 0, a huge weight, p(0) > 0 with q(0) = 0
    p[2] = 0.0  # weight 0 with q > 0
    law = khisti_lazy.InducedLaw(q, khisti_lazy.sir_weights(p, q), 8)
    singles = [law.at(y) for y in range(V_REAL)]  # before full(): the FFT columns are not even computed
    assert law._fit._coeff is None
    full = law.full()  # [V]
    assert bool(((torch.tensor(singles, dtype=F64) - full).abs() <= 2e-14 * q).all())
    assert [law.at(y) for y in range(V_REAL)] == singles


def test_extreme_weights_match_enumeration():
    """Tiny and huge importance weights (q(x) ~ 1e-20 with p(x) large, p(x) ~ 1e-12 with q(x) large)."""
    p = torch.tensor([0.4, 1e-12, 0.3, 0.3 - 1e-12, 0.0], dtype=F64)
    q = torch.tensor([1e-20, 0.5, 0.2, 0.1, 0.2 - 1e-20], dtype=F64)
    for k in (2, 3, 4):
        w = khisti_lazy.sir_weights(p, q)
        exact = khisti_lazy.induced_law(p, q, k, method="enumerate")
        assert float((khisti_lazy.integrated_law(q, w, k) - exact).abs().max()) < 1e-12


def test_lossless_through_the_integral_path(monkeypatch):
    monkeypatch.setattr(khisti_is, "ENUMERATION_LIMIT", 0)  # small vocabularies take the integral too
    g = torch.Generator().manual_seed(3)
    for V, k in [(3, 2), (4, 3), (5, 2), (4, 4)]:
        p, q = dirichlet_pair(g, V, 0.7, sparse=V % 2 == 0)
        assert float((mixed_law(VERIFIERS["khisti_is"].conditional, p, q, k, "iid") - p).abs().max()) < 1e-11
