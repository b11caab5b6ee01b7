"""Exact losslessness of every lossless verifier (docs/verifiers.md §11.1), the registry contract, and the
reference numbers and step traces of docs/verifiers.md §12 and §9.2."""

from __future__ import annotations

import math

import pytest
import torch

from decoding.verify import laws
from decoding.verify.registry import VERIFIERS, lossless_keys, node_level_keys
from decoding.verify.rules import spectr, typical
from tests.verifier_oracles import adversarial_pairs, allowed_ks, dirichlet_pair, mixed_law, tuple_laws

F64 = torch.float64
P12 = torch.tensor([0.50, 0.30, 0.15, 0.05], dtype=F64)  # docs/verifiers.md §12: V = {A, B, C, D}
Q12 = torch.tensor([0.20, 0.50, 0.20, 0.10], dtype=F64)
A, B, C, D = 0, 1, 2, 3
KEYS = ["sd", "rrs", "rrs_wor", "spectr", "spechub", "khisti_is", "hu_greedy", "pointmass", "greedy", "typical",
        "gls", "ot_optimal", "fuzzy", "cactus"]
LOSSY = ("greedy", "typical", "fuzzy", "cactus")


def test_registry_keys_laws_and_badges():
    assert node_level_keys() == KEYS  # tree-level entries: tests/verify/test_tree_level*.py
    expected_law = {
        "sd": "iid",
        "rrs": "iid",
        "rrs_wor": "without_replacement",
        "spectr": "iid",
        "spechub": "hub",
        "khisti_is": "iid",
        "hu_greedy": "topk_plus_random",
        "pointmass": "any",
        "greedy": "any",
        "typical": "any",
        "gls": "gumbel",
        "ot_optimal": "iid",
        "fuzzy": "iid",
        "cactus": "iid",
    }
    for key in KEYS:
        entry = VERIFIERS[key]
        assert entry.name == key
        assert str(entry.law) == expected_law[key] and entry.law is laws.get(expected_law[key])
        assert entry.lossless == (key not in LOSSY)
        assert entry.title and entry.paper and entry.description and "\n" not in entry.description
    assert VERIFIERS["sd"].max_candidates == 1 and VERIFIERS["spechub"].max_candidates == 2
    assert VERIFIERS["cactus"].max_candidates == 1
    assert [k for k in lossless_keys() if k in KEYS] == [k for k in KEYS if k not in LOSSY]


def _cases(V: int, seed: int):
    """Random Dirichlet pairs (peaked, flat, sparse) plus the adversarial cases of §11.1 item 6."""
    g = torch.Generator().manual_seed(seed)
    randoms = [
        (f"dirichlet({c}, sparse={s})", *dirichlet_pair(g, V, c, s))
        for c, s in [(0.3, False), (1.0, False), (3.0, False), (0.7, True), (1.0, True)]
    ]
    return randoms + adversarial_pairs(V)


def _ks(entry, law: str, V: int) -> list[int]:
    # every k from 1 to 4, except i.i.d. (and gumbel, i.i.d. in law) k = 4 at V = 6 (1296 tuples per case: runtime)
    return [k for k in allowed_ks(entry, law, V) if not (law in ("iid", "gumbel") and V == 6 and k == 4)]


@pytest.mark.parametrize("key", [k for k in lossless_keys() if k in node_level_keys()])
def test_mixing_conditional_over_every_tuple_gives_p(key):
    entry = VERIFIERS[key]
    worst = 0.0
    for V in (3, 4, 5, 6):
        for name, p, q in _cases(V, seed=V):
            for law in tuple_laws(entry):
                for k in _ks(entry, law, V):
                    err = float((mixed_law(entry.conditional, p, q, k, law) - p).abs().max())
                    assert err < 1e-9, f"{key} {name} V={V} law={law} k={k}: max |mix - p| = {err:.3g}"
                    worst = max(worst, err)
    assert worst < 1e-12  # typically ~1e-15


def _alpha(key: str, p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Exact acceptance: sum over tuples of Q(tuple) * P(some candidate accepted | tuple)."""
    entry = VERIFIERS[key]
    law = "topk" if entry.law is laws.ANY else entry.law
    return sum(
        prob * float(entry.conditional(p, q, list(xs))[0].sum()) for xs, prob in laws.enumerate_tuples(law, q, k)
    )


@pytest.mark.parametrize(
    "key,k,alpha",
    [
        ("sd", 1, 0.7),
        ("rrs", 2, 0.76),
        ("rrs", 3, 0.808),
        ("rrs_wor", 2, 0.803611),
        ("rrs_wor", 3, 0.916627),
        ("spectr", 2, 0.791355),
        ("spectr", 3, 0.858519),
        ("khisti_is", 2, 0.796162),
        ("khisti_is", 3, 0.849576),
        ("spechub", 2, 0.9),
        ("hu_greedy", 2, 0.9),
        ("hu_greedy", 3, 1.0),
        ("pointmass", 2, 0.8),
        ("pointmass", 3, 0.95),
    ],
)
def test_acceptance_matches_reference_table(key, k, alpha):
    assert _alpha(key, P12, Q12, k) == pytest.approx(alpha, abs=5e-7)


def test_rrs_acceptance_closed_form():
    g = torch.Generator().manual_seed(7)
    for _ in range(5):
        p, q = dirichlet_pair(g, 5, 0.8, False)
        r, reject = p, 1.0
        for _ in range(3):
            reject *= 1.0 - float(torch.minimum(r, q).sum())
            r = torch.clamp(r - q, min=0) / torch.clamp(r - q, min=0).sum()
        assert _alpha("rrs", p, q, 3) == pytest.approx(1.0 - reject, abs=1e-12)


def test_rrs_without_replacement_step_trace_b_then_c():
    """§12: candidates (B, C): test B at .6; on reject r = [1,0,0,0], d = [.4,0,.4,.2]; C at 0; emit A."""
    accept, residual = VERIFIERS["rrs_wor"].conditional(P12, Q12, [B, C])
    assert accept.tolist() == pytest.approx([0.6, 0.0], abs=1e-15)
    assert residual.tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0], abs=1e-15)  # output: B .6, A .4
    rejected = [
        v
        for v in (VERIFIERS["rrs_wor"].verify(P12, Q12, [B, C], torch.Generator().manual_seed(s)) for s in range(20))
        if not v.tests[0].passed
    ]
    assert rejected, "some seed rejects B (probability .4 each)"
    v = rejected[0]
    assert [t.token for t in v.tests] == [B, C] and v.accepted is None and v.token == A
    assert v.tests[0].threshold == pytest.approx(0.6) and v.tests[1].threshold == 0.0
    assert v.updates[0].residual.tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0])
    assert v.updates[0].draft.tolist() == pytest.approx([0.4, 0.0, 0.4, 0.2])
    assert v.residual.tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0])


def test_kseq_division_factor_and_thresholds():
    """§12: rho* = 1.4568 (k=2), 1.7926 (k=3); thresholds p/(rho q): A 1, B .4119, C .5148, D .3432."""
    rho2 = spectr.division_factor(P12, Q12, 2)
    assert rho2 == pytest.approx(1.4568, abs=1e-4)
    assert spectr.division_factor(P12, Q12, 3) == pytest.approx(1.7926, abs=1e-4)
    f = 1 - (1 - spectr.beta(P12, Q12, rho2)) ** 2 - rho2 * spectr.beta(P12, Q12, rho2)
    assert -1e-10 < f <= 0.0  # at (or a hair above) the root: a valid rho
    thresholds = [min(1.0, float(P12[x] / (rho2 * Q12[x]))) for x in (A, B, C, D)]
    assert thresholds == pytest.approx([1.0, 0.4119, 0.5148, 0.3432], abs=1e-4)
    accept, residual = VERIFIERS["spectr"].conditional(P12, Q12, [B, C])
    assert accept.tolist() == pytest.approx([0.4119, 0.3028], abs=1e-4)
    assert 1 - float(accept.sum()) == pytest.approx(0.2853, abs=1e-4)
    assert residual.tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0], abs=1e-10)  # ~norm((p - rho* q)_+)


def test_typical_worked_example():
    """§9.2: H = 1.142 nats, exp(-H) = .319, tau = min(.09, .0957) = .09; A, B, C typical, D not."""
    entropy = -sum(x * math.log(x) for x in P12.tolist())
    assert entropy == pytest.approx(1.142, abs=1e-3)
    assert typical.typical_threshold(P12) == pytest.approx(0.09)
    for x, typical_x in [(A, 1.0), (B, 1.0), (C, 1.0), (D, 0.0)]:
        assert float(VERIFIERS["typical"].conditional(P12, Q12, [x])[0][0]) == typical_x
