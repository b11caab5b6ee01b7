"""Numerics (docs/verifiers.md §13): no NaN and no exception on the degenerate cases, for every entry;
inputs are never mutated; float32 input is accepted; bad input gets a clear ValueError."""

from __future__ import annotations

import math

import pytest
import torch

from decoding.verify.registry import VERIFIERS, node_level_keys
from tests.verifier_oracles import adversarial_pairs
from tests.verify.test_verifiers_montecarlo import check_verdict

F64 = torch.float64


LP_K = {"ot_optimal": 2}  # the candidates an exact-LP entry gets where the draft support is wide (rules/ot_optimal.py)


def _k_values(key: str) -> list[int]:
    return list(range(1, (VERIFIERS[key].max_candidates or 4) + 1))  # sd, cactus: 1; spechub: 1, 2; else 1..4


def check_conditional(accept: torch.Tensor, residual: torch.Tensor, k: int, V: int) -> None:
    assert accept.shape == (k,) and residual.shape == (V,)
    assert accept.dtype == F64 and residual.dtype == F64
    assert bool(torch.isfinite(accept).all()) and bool(torch.isfinite(residual).all())
    assert bool((accept >= 0).all()) and float(accept.sum()) <= 1.0 + 1e-12
    assert bool((residual >= 0).all())
    total = float(residual.sum())
    assert total == pytest.approx(1.0, abs=1e-12) or (total == 0.0 and float(accept.sum()) > 1 - 1e-12)


def _check_verdict_finite(verdict) -> None:
    for t in verdict.tests:
        assert all(math.isfinite(x) for x in (t.numerator, t.denominator, t.threshold, t.uniform))
    for u in verdict.updates:
        assert bool(torch.isfinite(u.residual).all())
        assert u.draft is None or bool(torch.isfinite(u.draft).all())
    assert verdict.residual is None or bool(torch.isfinite(verdict.residual).all())


def _run(key: str, p: torch.Tensor, q: torch.Tensor, xs: list[int], seed: int = 0) -> None:
    entry = VERIFIERS[key]
    p0, q0 = p.clone(), q.clone()
    check_conditional(*entry.conditional(p, q, xs), len(xs), p.shape[0])
    g = torch.Generator().manual_seed(seed)
    for _ in range(20):
        verdict = entry.verify(p, q, xs, g)
        _check_verdict_finite(verdict)
        check_verdict(verdict, xs)
    assert torch.equal(p, p0) and torch.equal(q, q0), "inputs must not be mutated"


@pytest.mark.parametrize("key", node_level_keys())
def test_adversarial_cases_sampled_with_the_entry_law(key):
    entry = VERIFIERS[key]
    g = torch.Generator().manual_seed(1)
    for _name, p, q in adversarial_pairs(5):
        for k in _k_values(key):
            xs = entry.sample(q, k, g)
            _run(key, p, q, xs)


@pytest.mark.parametrize("key", [k for k in node_level_keys() if k != "spechub"])
def test_a_candidate_with_zero_draft_probability_is_skipped(key):
    p = torch.tensor([0.25, 0.25, 0.5], dtype=F64)
    q = torch.tensor([0.5, 0.5, 0.0], dtype=F64)  # token 2 cannot have been drafted
    xs = [2] if VERIFIERS[key].max_candidates == 1 else [1, 2]
    _run(key, p, q, xs)
    if key in ("sd", "cactus", "rrs", "rrs_wor", "spectr", "khisti_is", "hu_greedy", "gls"):
        accept, _ = VERIFIERS[key].conditional(p, q, xs)
        assert float(accept[xs.index(2)]) == 0.0  # skipped: threshold 0, never accepted


def test_spechub_non_hub_partner_with_zero_draft_probability():
    p = torch.tensor([0.25, 0.25, 0.5], dtype=F64)
    q = torch.tensor([0.5, 0.5, 0.0], dtype=F64)  # hub = 0 (first maximum)
    for xs in ([2, 0], [0, 2]):
        _run("spechub", p, q, xs)


def test_all_zero_residual_when_p_equals_q():
    p = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=F64)
    for key in ("sd", "rrs", "rrs_wor", "spectr", "khisti_is"):
        xs = [3] if key == "sd" else [3, 1]
        accept, residual = VERIFIERS[key].conditional(p, p.clone(), xs)
        assert float(accept.sum()) == pytest.approx(1.0, abs=1e-12)
        _run(key, p, p.clone(), xs)


def test_k_larger_than_the_support_of_q():
    p = torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=F64)
    q = torch.tensor([0.7, 0.3, 0.0, 0.0], dtype=F64)
    g = torch.Generator().manual_seed(2)
    for key in ("rrs", "rrs_wor", "spectr", "khisti_is", "hu_greedy", "pointmass", "greedy", "typical"):
        _run(key, p, q, VERIFIERS[key].sample(q, 4, g))


def test_float32_input_is_accepted_and_computed_in_float64():
    g = torch.Generator().manual_seed(4)
    p = torch.softmax(torch.randn(50, generator=g), 0)  # float32
    q = torch.softmax(torch.randn(50, generator=g), 0)
    for key, entry in ((k, VERIFIERS[k]) for k in node_level_keys()):
        k = min(_k_values(key)[-1], LP_K.get(key, 8))
        xs = entry.sample(q, k, g)
        accept, residual = entry.conditional(p, q, xs)
        assert accept.dtype == F64 and residual.dtype == F64
        _run(key, p, q, xs)


@pytest.mark.parametrize("key", node_level_keys())
def test_large_vocabulary_node(key):
    """V = 49152, k = 8 (spechub 2, sd 1): the shape the engine sees; laws stay valid."""
    g = torch.Generator().manual_seed(5)
    p = torch.softmax(torch.randn(49152, generator=g, dtype=F64) * 2, 0)
    q = torch.softmax(torch.randn(49152, generator=g, dtype=F64) * 2, 0)
    entry = VERIFIERS[key]
    if key in LP_K:  # an exact LP per node: k = 2 over a top-40 draft (a full-support node is refused, test_ot_optimal)
        q = torch.where(q >= torch.topk(q, 40).values[-1], q, torch.zeros_like(q))
        q = q / q.sum()
    xs = entry.sample(q, {"sd": 1, "cactus": 1, "spechub": 2, **LP_K}.get(key, 8), g)
    check_conditional(*entry.conditional(p, q, xs), len(xs), 49152)
    verdict = entry.verify(p, q, xs, g)
    _check_verdict_finite(verdict)
    check_verdict(verdict, xs)


def test_bad_inputs_raise_value_errors():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=F64)
    q = torch.tensor([0.2, 0.5, 0.3], dtype=F64)
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="same vocabulary"):
        VERIFIERS["rrs"].verify(p, q[:2], [0], g)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        VERIFIERS["rrs"].conditional(p, q, [3])
    with pytest.raises(ValueError, match="at least one candidate"):
        VERIFIERS["pointmass"].conditional(p, q, [])
    with pytest.raises(ValueError, match="exactly one candidate"):
        VERIFIERS["sd"].verify(p, q, [0, 1], g)
    with pytest.raises(ValueError, match="hub pair"):
        VERIFIERS["spechub"].conditional(p, q, [0, 2])  # hub is token 1; neither candidate is it
    with pytest.raises(ValueError, match="hub pair"):
        VERIFIERS["spechub"].verify(p, q, [1, 1], g)
    with pytest.raises(ValueError, match="one or two candidates"):
        VERIFIERS["spechub"].conditional(p, q, [1, 0, 2])
    with pytest.raises(ValueError, match="positive mass"):
        VERIFIERS["rrs"].conditional(p, torch.zeros(3, dtype=F64), [0])
