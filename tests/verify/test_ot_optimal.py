"""ot_optimal (docs/verifiers.md §16.1): its acceptance IS alpha*, it is lossless by exact enumeration, and a
plan with one constraint dropped is caught; where it stops, it refuses in one line."""

from __future__ import annotations

import pytest
import torch

from decoding.verify import laws
from decoding.verify.optimal import min_cut_by_subsets, optimal_acceptance
from decoding.verify.registry import VERIFIERS
from decoding.verify.rules import ot_optimal
from tests.verifier_oracles import adversarial_pairs, dirichlet_pair, mixed_law, tv

F64 = torch.float64
ENTRY = VERIFIERS["ot_optimal"]


def _cases(V: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    randoms = [(f"dirichlet({c}, sparse={s})", *dirichlet_pair(g, V, c, s))
               for c, s in [(0.3, False), (1.0, False), (3.0, False), (0.7, True)]]
    return randoms + adversarial_pairs(V)


def _acceptance(conditional, p, q, k) -> float:
    """Σ over every i.i.d. tuple of Q(tuple) · P(some candidate accepted | tuple)."""
    return sum(prob * float(conditional(p, q, list(xs))[0].sum()) for xs, prob in laws.enumerate_tuples("iid", q, k))


@pytest.fixture(autouse=True)
def _fresh_plans():
    ot_optimal._plan.cache_clear()  # a broken variant must never leave its plans behind
    yield
    ot_optimal._plan.cache_clear()


@pytest.mark.parametrize("V", [3, 4, 5])
def test_acceptance_equals_alpha_star_by_min_cut_and_by_subsets(V):
    worst = 0.0
    for name, p, q in _cases(V, seed=10 + V):
        for k in (1, 2, 3, 4):
            got = _acceptance(ENTRY.conditional, p, q, k)
            scan, subsets = optimal_acceptance(p, q, k, "iid"), min_cut_by_subsets(p, q, k, "iid")
            assert abs(got - scan) < 1e-9 and abs(got - subsets) < 1e-9, f"{name} V={V} k={k}: {got} vs {scan}"
            assert abs(ENTRY.acceptance(p, q, k) - got) < 1e-9  # the closed form the recorder reads
            worst = max(worst, abs(got - scan))
    assert worst < 1e-9


@pytest.mark.parametrize("V", [3, 4, 6])
def test_lossless_by_exact_enumeration(V):
    for name, p, q in _cases(V, seed=V):
        for k in (1, 2, 3):
            err = float((mixed_law(ENTRY.conditional, p, q, k, "iid") - p).abs().max())
            assert err < 1e-12, f"{name} V={V} k={k}: max |mix - p| = {err:.3g}"


def test_beats_every_other_iid_verifier_where_they_fall_short():
    """On the §12 worked example the LP's coupling reaches alpha* while RRS and SpecTr stay below it."""
    p = torch.tensor([0.50, 0.30, 0.15, 0.05], dtype=F64)
    q = torch.tensor([0.20, 0.50, 0.20, 0.10], dtype=F64)
    star = optimal_acceptance(p, q, 2, "iid")
    assert abs(_acceptance(ENTRY.conditional, p, q, 2) - star) < 1e-12
    for key in ("rrs", "spectr"):
        assert _acceptance(VERIFIERS[key].conditional, p, q, 2) < star - 1e-3


def test_dropping_one_constraint_is_caught(monkeypatch):
    """Broken variant: the LP without one token's constraint Σ_m a(m, y) <= p(y) over-accepts that token;
    the exact mixture then misses p (measured: TV 0.70 here), while the real plan is exact to 1e-12."""
    p = torch.tensor([0.10, 0.45, 0.30, 0.15], dtype=F64)
    q = torch.tensor([0.55, 0.15, 0.20, 0.10], dtype=F64)
    assert tv(mixed_law(ENTRY.conditional, p, q, 2, "iid"), p) < 1e-12
    real = ot_optimal.constraints

    def without_token0_row(cells, mass, p_np, n_sets):
        a_ub, b_ub = real(cells, mass, p_np, n_sets)
        token0 = n_sets  # the first token row: token 0, q heavy, p light
        keep = [r for r in range(a_ub.shape[0]) if r != token0]
        return a_ub[keep], b_ub[keep]

    ot_optimal._plan.cache_clear()
    monkeypatch.setattr(ot_optimal, "constraints", without_token0_row)
    broken = tv(mixed_law(ENTRY.conditional, p, q, 2, "iid"), p)
    assert broken > 0.05, f"dropping a constraint went unnoticed (TV {broken:.3g})"


def test_real_vocabulary_with_a_narrow_draft_support():
    """V = 49152 with top-k-like supports (40 tokens): the plan still reaches alpha* for k = 2 and 3."""
    g = torch.Generator().manual_seed(3)
    V = 49152
    p, q = torch.zeros(V, dtype=F64), torch.zeros(V, dtype=F64)
    ids = torch.randperm(V, generator=g)[:60]
    p[ids[:40]] = torch.rand(40, generator=g, dtype=F64) ** 2
    q[ids[20:60]] = torch.rand(40, generator=g, dtype=F64) ** 2
    p, q = p / p.sum(), q / q.sum()
    for k in (2, 3):
        plan = ot_optimal.node_plan(p, q, k)
        assert abs(plan.value - optimal_acceptance(p, q, k, "iid")) < 1e-9
    xs = [int(ids[30]), int(ids[50])]
    accept, residual = ENTRY.conditional(p, q, xs)
    assert float(accept.sum()) <= 1.0 + 1e-12 and abs(float(residual.sum()) - 1.0) < 1e-12


def test_k1_is_sd_at_any_vocabulary_and_a_wide_support_is_refused_in_one_line():
    g = torch.Generator().manual_seed(4)
    p = torch.rand(49152, generator=g, dtype=F64)
    q = torch.rand(49152, generator=g, dtype=F64)
    p, q = p / p.sum(), q / q.sum()
    accept, residual = ENTRY.conditional(p, q, [7])
    sd_accept, sd_residual = VERIFIERS["sd"].conditional(p, q, [7])
    assert torch.equal(accept, sd_accept) and torch.equal(residual, sd_residual)
    with pytest.raises(ValueError) as err:
        ENTRY.conditional(p, q, [7, 9])
    message = str(err.value)
    assert "\n" not in message and "ot_optimal" in message and "60,000" in message and "k=1" in message
