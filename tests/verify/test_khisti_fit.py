"""khisti_is's residual computed only above w* (khisti_fit.Fit.positive_part) against the straightforward one:
(p - r)_+ with r the full [V] induced law. Oracle: the same numbers at every token, on random laws at the
real vocabulary size and on adversarial ones (p = q, where every token sits exactly at w*; blocks of tied
weights; point masses; q with zeros, p with zeros, weights that overflow or vanish). The cut must also
really cut (else the comparison proves nothing about the fast path), and a cut a few bins too high must be
caught by the same comparison."""

from __future__ import annotations

import math

import pytest
import torch

from decoding.verify.rules.fast import khisti_fit, khisti_lazy

F64 = torch.float64
V_REAL = 49152  # SmolLM2's vocabulary


def _softmax_pair(seed: int, scale: float, V: int = V_REAL, top: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    logits_p = torch.randn(V, generator=g, dtype=F64) * scale
    logits_q = torch.randn(V, generator=g, dtype=F64) * scale
    if top:  # warped laws: zeros outside a top set, so q = 0 < p and p = 0 < q both occur
        logits_p[torch.argsort(logits_p)[:-top]] = -math.inf
        logits_q[torch.argsort(logits_q)[: -3 * top]] = -math.inf
    return torch.softmax(logits_p, 0), torch.softmax(logits_q, 0)


def _weight_blocks(V: int = 4000) -> tuple[torch.Tensor, torch.Tensor]:
    """Blocks of tokens sharing one weight each (w = 0.5, 1, 2 and 4): whole bins of ties, one of them live."""
    q = torch.full((V,), 1.0 / V, dtype=F64)
    w = torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=F64).repeat_interleave(V // 4)
    p = q * w
    return p / p.sum(), q


def _point_masses(V: int = 3000) -> tuple[torch.Tensor, torch.Tensor]:
    """p nearly a point mass on a token q barely drafts, q nearly a point mass elsewhere."""
    p = torch.full((V,), 1e-9, dtype=F64)
    q = torch.full((V,), 1e-9, dtype=F64)
    p[7], q[11] = 1.0, 1.0
    return p / p.sum(), q / q.sum()


def _extremes(V: int = 3000) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights 0 (p = 0), vanishing (< W_LO), huge (> W_HI) and q = 0 < p, among ordinary ones."""
    p, q = _softmax_pair(5, 1.0, V)
    p, q = p.clone(), q.clone()
    p[:3] = 0.0  # weight 0
    p[3], q[3] = 1e-20, 1e-3  # weight below W_LO: counts as 0
    p[4], q[4] = 1e-3, 1e-22  # weight above W_HI
    q[5] = 0.0  # p > 0 = q: weight 0, all residual
    return p / p.sum(), q / q.sum()


CASES = {
    "flat scale 1": lambda: _softmax_pair(1, 1.0),
    "peaked scale 3": lambda: _softmax_pair(2, 3.0),
    "warped top-200": lambda: _softmax_pair(3, 2.0, top=200),
    "weight blocks": _weight_blocks,
    "point masses": _point_masses,
    "extreme weights": _extremes,
    "p = q (every token at w*)": lambda: (_softmax_pair(4, 1.0, 2000)[0],) * 2,
}


def _straightforward(p: torch.Tensor, q: torch.Tensor, w: torch.Tensor, fit: khisti_fit.Fit) -> torch.Tensor:
    return torch.sub(p, fit.full_law(q, w)).clamp_(min=0.0)  # [V] (p - r)_+ from the full law


@pytest.mark.parametrize("k", [2, 8])
@pytest.mark.parametrize("case", list(CASES))
def test_residual_above_w_star_equals_the_full_computation(case, k):
    p, q = CASES[case]()
    w = khisti_lazy.sir_weights(p, q)
    fit = khisti_fit.Fit.of(q, w, k)
    fast = fit.positive_part(p, q, w)
    assert torch.equal(fast, _straightforward(p, q, w, fit))


@pytest.mark.parametrize("case", ["flat scale 1", "peaked scale 3", "extreme weights"])
def test_the_cut_leaves_out_most_tokens_and_a_higher_cut_is_caught(case, monkeypatch):
    """The fast path skips real work (else the test above compares the full computation with itself), and a
    broken cut three bins higher drops residual mass: the same comparison fails."""
    p, q = CASES[case]()
    w = khisti_lazy.sir_weights(p, q)
    fit = khisti_fit.Fit.of(q, w, 8)
    cut = fit._cut()
    assert cut > 0 and float((fit.placed.b >= cut).double().mean()) < 0.9
    full = _straightforward(p, q, w, fit)
    monkeypatch.setattr(khisti_fit.Fit, "_cut", lambda self: cut + 3)
    assert not torch.equal(fit.positive_part(p, q, w), full)


def test_verify_and_conditional_draw_from_the_fast_residual():
    """The rule's residual (verify's Final law and conditional's residual) is the normalised fast one, which
    equals norm((p - r)_+) from the full law."""
    p, q = _softmax_pair(6, 1.0)
    xs = [int(x) for x in torch.multinomial(q, 8, replacement=True, generator=torch.Generator().manual_seed(0))]
    law = khisti_lazy.InducedLaw(q, khisti_lazy.sir_weights(p, q), 8)
    expected = torch.sub(p, law.full()).clamp_(min=0.0)
    expected /= expected.sum()
    _, residual = khisti_lazy.conditional(p, q, xs)
    assert float((residual - expected).abs().max()) <= 1e-16 and abs(float(residual.sum()) - 1.0) < 1e-12
