"""decoding.verify.theory.routes / optimal / wor and races.without_replacement against independent oracles.

Oracles: the reference numbers of docs/verifiers.md §12 and §7.2, exact enumeration through the
registry's `conditional` (which also checks the verifier library), the 2^V min-cut, the LP of
§5.1 and plain enumeration of the candidate laws.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.optimize import linprog

from decoding.verify import laws, optimal
from decoding.verify.races.without_replacement import wor_inclusion, wor_miss_prefixes
from decoding.verify.registry import VERIFIERS, node_level_keys
from decoding.verify.theory import routes as theory
from decoding.verify.theory.wor import rrs_wor_acceptance


def t64(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


P12 = t64([0.50, 0.30, 0.15, 0.05])  # docs/verifiers.md §12
Q12 = t64([0.20, 0.50, 0.20, 0.10])


def random_law(V: int, generator: torch.Generator, concentration: float = 0.6) -> torch.Tensor:
    """A Dirichlet-like draw in float64 (gamma via -log U is Exp(1): concentration 1 is uniform on the simplex)."""
    u = torch.rand(V, generator=generator, dtype=torch.float64)
    w = (-torch.log(u)) ** (1.0 / concentration)  # heavier tails for small concentration
    return w / w.sum()


def one_hot(V: int, i: int) -> torch.Tensor:
    v = torch.zeros(V, dtype=torch.float64)
    v[i] = 1.0
    return v


def instances(n: int, seed: int, v_min: int = 2, v_max: int = 5):
    """Random (p, q) plus the adversarial cases of §11.1 (zeros, one-hots, disjoint, p = q)."""
    g = torch.Generator().manual_seed(seed)
    for i in range(n):
        V = int(torch.randint(v_min, v_max + 1, (1,), generator=g))
        p, q = random_law(V, g), random_law(V, g)
        kind = i % 8
        if kind == 1:
            p = one_hot(V, V - 1)  # T = 0 target
        elif kind == 2:
            q = one_hot(V, 0)  # greedy drafter
        elif kind == 3:
            p, q = one_hot(V, 0), torch.cat([t64([0.0]), torch.full((V - 1,), 1.0 / (V - 1), dtype=torch.float64)])
        elif kind == 4:
            p = q.clone()
        elif kind == 5:
            q[: V // 2] = 0.0  # q(x) = 0 < p(x), and k > |supp q| for the distinct-token laws
            q = q / q.sum()
        elif kind == 6:
            p[-1] = 0.0
            p = p / p.sum()
        yield p, q


def ks(key: str, V: int) -> range:
    entry = VERIFIERS[key]
    top = entry.max_candidates or 4
    if entry.law.distinct:
        top = min(top, V)
    return range(1, min(top, 4) + 1)


# ---------------------------------------------------------------------------------------------
# Reference numbers
# ---------------------------------------------------------------------------------------------

ACCEPTANCE_ROWS = [
    ("sd", 1, 0.700000),
    ("rrs", 2, 0.760000),
    ("rrs", 3, 0.808000),
    ("rrs_wor", 2, 0.803611),
    ("rrs_wor", 3, 0.916627),
    ("spectr", 2, 0.791355),
    ("spectr", 3, 0.858519),
    ("khisti_is", 2, 0.796162),
    ("khisti_is", 3, 0.849576),
    ("spechub", 2, 0.900000),
    ("hu_greedy", 2, 0.900000),
    ("hu_greedy", 3, 1.000000),
    ("pointmass", 2, 0.800000),
    ("pointmass", 3, 0.950000),
]


@pytest.mark.parametrize("key,k,expected", ACCEPTANCE_ROWS)
def test_section_12_acceptance(key, k, expected):
    got = theory.acceptance(key, P12, Q12, k)
    assert got.stderr == 0.0 and got.method in ("closed_form", "enumeration")
    assert got.value == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    "law,k,optimum,membership",
    [
        ("iid", 2, 0.860000, 0.860000),
        ("iid", 3, 0.988000, 0.988000),
        ("without_replacement", 2, 0.972222, None),
        ("without_replacement", 3, 1.000000, None),
        ("hub", 2, 0.900000, 0.900000),
        ("topk_plus_random", 2, 0.900000, 0.900000),
        ("topk_plus_random", 3, 1.000000, 1.000000),
        ("any", 2, 0.800000, 0.800000),
        ("any", 3, 0.950000, 0.950000),
    ],
)
def test_section_12_bounds(law, k, optimum, membership):
    assert theory.optimal_acceptance(P12, Q12, k, law) == pytest.approx(optimum, abs=1e-6)
    if membership is not None:
        assert theory.membership_bound(P12, Q12, k, law) == pytest.approx(membership, abs=1e-6)


def test_section_12_without_replacement_bound_also_by_the_large_vocabulary_scan():
    assert optimal._scan_wor(P12, Q12, 2) == pytest.approx(0.972222, abs=1e-6)
    assert optimal._scan_wor(P12, Q12, 3) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("k,rho", [(2, 1.4568), (3, 1.7926)])
def test_section_12_spectr_rho(k, rho):
    from decoding.verify.rules.spectr import acceptance, division_factor
    from tests.verifier_oracles import rho_by_bisection

    assert rho_by_bisection(P12, Q12, k) == pytest.approx(rho, abs=1e-4)
    assert rho_by_bisection(P12, Q12, k) == pytest.approx(division_factor(P12, Q12, k), abs=1e-12)
    # at rho*, 1 − (1 − β)^k = Σ min(p, ρ* q) (§5.2)
    rho_star = rho_by_bisection(P12, Q12, k)
    assert acceptance(P12, Q12, k) == pytest.approx(float(torch.minimum(P12, rho_star * Q12).sum()))


FIG2 = [  # t, opt, K-SEQ, RRS, RRS-w/o (docs/verifiers.md §7.2, Khisti et al. Fig. 2 toy)
    (0.0, 0.8889, 0.8114, 0.7778, 0.8333),
    (0.1, 0.9889, 0.8814, 0.8444, 0.8833),
    (0.2, 1.0, 0.9449, 0.9111, 0.9333),
    (1 / 3, 1.0, 1.0, 1.0, 1.0),
    (0.5, 1.0, 0.9248, 0.8889, 0.9167),
]


@pytest.mark.parametrize("t,opt,kseq,rrs,rrs_wor", FIG2)
def test_fig2_toy_table(t, opt, kseq, rrs, rrs_wor):
    p, q = t64([1 / 3, t, 2 / 3 - t]), torch.full((3,), 1 / 3, dtype=torch.float64)
    assert theory.optimal_acceptance(p, q, 2, "iid") == pytest.approx(opt, abs=1e-4)
    assert theory.acceptance("spectr", p, q, 2).value == pytest.approx(kseq, abs=1e-4)
    assert theory.acceptance("rrs", p, q, 2).value == pytest.approx(rrs, abs=1e-4)
    assert theory.acceptance("rrs_wor", p, q, 2).value == pytest.approx(rrs_wor, abs=1e-4)


# ---------------------------------------------------------------------------------------------
# Closed forms against exact enumeration of the registry (cross-checks both libraries)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", node_level_keys())
def test_acceptance_matches_registry_enumeration(key):
    for p, q in instances(24, seed=list(VERIFIERS).index(key)):
        for k in ks(key, p.shape[0]):
            got = theory.acceptance(key, p, q, k)
            assert got.stderr == 0.0
            assert got.value == pytest.approx(theory.enumerated_acceptance(key, p, q, k), abs=1e-9), (key, k, p, q)


def test_rrs_wor_exact_sum_with_uniform_fallback_and_larger_k():
    g = torch.Generator().manual_seed(11)
    for V in (5, 6):
        for support in (1, 2, V):
            q = random_law(V, g)
            q[support:] = 0.0
            q = q / q.sum()
            p = random_law(V, g)
            for k in range(1, V + 1):
                if math.perm(V, k) > 2000:
                    continue
                got = rrs_wor_acceptance(p, q, k, generator=g)
                assert got.method == ("closed_form" if k == 1 else "enumeration") and got.stderr == 0.0
                assert got.value == pytest.approx(theory.enumerated_acceptance("rrs_wor", p, q, k), abs=1e-12)


def test_rrs_wor_sampled_tail_is_unbiased():
    g = torch.Generator().manual_seed(2)
    p, q = random_law(7, g, 1.0), random_law(7, g, 1.0)
    exact = theory.enumerated_acceptance("rrs_wor", p, q, 3)
    est = rrs_wor_acceptance(p, q, 3, generator=torch.Generator().manual_seed(0), samples=20_000, budget=6)
    assert est.method == "monte_carlo" and 0 < est.stderr < 0.01
    assert abs(est.value - exact) < 5 * est.stderr
    wrong = rrs_wor_acceptance(p, 0.5 * q + 0.5 / 7, 3, generator=torch.Generator().manual_seed(0), budget=6)
    assert abs(wrong.value - exact) > 5 * max(wrong.stderr, est.stderr)  # the check can fail


@pytest.mark.parametrize("k", [3, 4])
def test_rrs_wor_stratified_estimate_matches_exact_sum_at_moderate_vocabulary(k):
    p, q = llm_like(40, seed=k, temperature=1.0)
    exact = rrs_wor_acceptance(p, q.double(), k, generator=torch.Generator().manual_seed(0))
    assert exact.method == "enumeration"
    est = rrs_wor_acceptance(p, q.double(), k, generator=torch.Generator().manual_seed(1), budget=120)
    assert est.method == "monte_carlo" and est.stderr > 0
    assert abs(est.value - exact.value) < 5 * est.stderr


def test_registry_monte_carlo_route_is_unbiased():
    g = torch.Generator().manual_seed(4)
    p, q = random_law(5, g), random_law(5, g)
    exact = theory.enumerated_acceptance("rrs", p, q, 3)
    est = theory.monte_carlo_acceptance("rrs", p, q, 3, torch.Generator().manual_seed(1), 3000)
    assert est.method == "monte_carlo" and est.stderr > 0
    assert abs(est.value - exact) < 5 * est.stderr


def test_output_law_of_lossless_verifiers_is_p():
    g = torch.Generator().manual_seed(8)
    p, q = random_law(4, g), random_law(4, g)
    for key, entry in ((k, VERIFIERS[k]) for k in node_level_keys()):
        k = min(2, entry.max_candidates or 2)
        out = theory.output_law(key, p, q, k)
        assert torch.allclose(out.sum(), torch.tensor(1.0, dtype=torch.float64))
        if entry.lossless:
            assert torch.allclose(out, p, atol=1e-12), key
    assert not torch.allclose(theory.output_law("greedy", p, q, 2), p, atol=1e-3)  # the check can fail


# ---------------------------------------------------------------------------------------------
# The optimal-transport bound: sorted scan = 2^V min-cut = LP, and the ordering of the bounds
# ---------------------------------------------------------------------------------------------


def lp_optimum(p: torch.Tensor, q: torch.Tensor, k: int, law: str) -> float:
    """§5.1: max Σ_{x̄, y∈x̄} π(x̄, y) s.t. Σ_y π(x̄, ·) ≤ Q(x̄), Σ_x̄ π(·, y) ≤ p(y) (HiGHS)."""
    tuples = list(laws.enumerate_tuples(law, q, k))
    pairs = [(t, y) for t, (cands, _) in enumerate(tuples) for y in sorted(set(cands))]
    A = np.zeros((len(tuples) + p.shape[0], len(pairs)))
    for j, (t, y) in enumerate(pairs):
        A[t, j] = 1.0
        A[len(tuples) + y, j] = 1.0
    b = np.concatenate([[prob for _, prob in tuples], p.numpy()])
    res = linprog(-np.ones(len(pairs)), A_ub=A, b_ub=b, bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun


def test_iid_and_wor_scans_equal_subset_min_cut():
    g = torch.Generator().manual_seed(21)
    for _ in range(120):
        V = int(torch.randint(2, 8, (1,), generator=g))
        k = int(torch.randint(1, min(V, 4) + 1, (1,), generator=g))
        p, q = random_law(V, g, 0.5), random_law(V, g, 0.5)
        if bool(torch.rand(1, generator=g) < 0.3):
            q[0] = 0.0
            q = q / q.sum()
        for law, scan in (("iid", optimal._scan_iid), ("without_replacement", optimal._scan_wor)):
            assert scan(p, q, k) == pytest.approx(optimal.min_cut_by_subsets(p, q, k, law), abs=1e-10), (law, k)


@pytest.mark.parametrize("law", ["iid", "without_replacement", "hub", "topk_plus_random", "any"])
def test_optimal_equals_lp(law):
    g = torch.Generator().manual_seed(5)
    for _ in range(4):
        V = int(torch.randint(3, 6, (1,), generator=g))
        p, q = random_law(V, g), random_law(V, g)
        for k in (1, 2, 3):
            if law == "hub" and k > 2:
                continue
            assert theory.optimal_acceptance(p, q, k, law) == pytest.approx(lp_optimum(p, q, k, law), abs=1e-7)


def test_optimal_k1_is_one_minus_tv_and_bounds_are_ordered():
    for p, q in instances(40, seed=9, v_max=6):
        V = p.shape[0]
        tv = 0.5 * float((p - q).abs().sum())
        assert theory.optimal_acceptance(p, q, 1, "iid") == pytest.approx(1 - tv, abs=1e-12)
        for law in laws.LAWS:
            for k in range(1, (2 if law == "hub" else min(V, 4)) + 1):
                alpha = theory.optimal_acceptance(p, q, k, law)
                assert 0.0 <= alpha <= theory.membership_bound(p, q, k, law) + 1e-9, (law, k)


def test_lossless_verifiers_stay_below_the_optimum_of_their_law():
    for p, q in instances(40, seed=13, v_max=6):
        for key, entry in ((k, VERIFIERS[k]) for k in node_level_keys()):
            for k in ks(key, p.shape[0]):
                alpha = theory.acceptance(key, p, q, k).value
                if entry.lossless:
                    assert alpha <= theory.optimal_acceptance(p, q, k, entry.law) + 1e-9, (key, k)


def test_the_bound_checks_can_fail():
    # greedy is lossy: with a one-hot target it accepts with certainty, above the OT optimum
    p, q = one_hot(3, 2), t64([0.5, 0.3, 0.2])
    assert theory.acceptance("greedy", p, q, 3).value == 1.0
    assert theory.optimal_acceptance(p, q, 2, "iid") < 1.0
    # and the membership bound is not always attained (F3): .76 < .78 here
    p, q = t64([0.4, 0.3, 0.3]), t64([0.8, 0.1, 0.1])
    assert theory.optimal_acceptance(p, q, 2, "iid") == pytest.approx(0.76, abs=1e-12)
    assert theory.membership_bound(p, q, 2, "iid") == pytest.approx(0.78, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Inclusion probabilities and the exponential race (without replacement, any V)
# ---------------------------------------------------------------------------------------------


def enumerated_inclusion(q: torch.Tensor, k: int, law: str) -> torch.Tensor:
    pi = torch.zeros_like(q)
    for cands, prob in laws.enumerate_tuples(law, q, k):
        for x in set(cands):
            pi[x] += prob
    return pi


def test_inclusion_probabilities_match_enumeration_for_every_law():
    for _p, q in instances(24, seed=17, v_max=6):
        V = q.shape[0]
        for law in laws.LAWS:
            for k in range(1, (2 if law == "hub" else min(V, 4)) + 1):
                got = theory.inclusion_probabilities(q, k, law)
                assert torch.allclose(got, enumerated_inclusion(q, k, law), atol=1e-11), (law, k, q)


@pytest.mark.parametrize("k", [3, 4])
@pytest.mark.parametrize("shape", ["soft", "peaked", "near_one_hot", "two_heavy"])
def test_race_quadrature_matches_enumeration(k, shape):
    g = torch.Generator().manual_seed(k)
    V = 14
    q = torch.softmax(torch.randn(V, generator=g, dtype=torch.float64) * (1.0 if shape == "soft" else 4.0), 0)
    if shape == "near_one_hot":
        q = torch.full((V,), 1e-9 / (V - 1), dtype=torch.float64)
        q[3] = 1 - 1e-9
    if shape == "two_heavy":
        q = torch.full((V,), 2e-9 / (V - 2), dtype=torch.float64)
        q[0] = q[5] = 0.5 - 1e-9
    assert torch.allclose(wor_inclusion(q, k), enumerated_inclusion(q, k, "without_replacement"), atol=1e-10)
    order = torch.randperm(V, generator=g)
    assert torch.allclose(wor_miss_prefixes(q[order], k), enumerated_miss(q, k, order), atol=1e-10)


def enumerated_miss(q: torch.Tensor, k: int, order: torch.Tensor) -> torch.Tensor:
    """1 − Q(x̄ ⊆ first j tokens of `order`) [V+1], j = 0..V, by enumerating the without-replacement law."""
    V = q.shape[0]
    pos = torch.empty(V, dtype=torch.long)
    pos[order] = torch.arange(V)
    miss = torch.zeros(V + 1, dtype=torch.float64)
    for cands, prob in laws.enumerate_tuples("without_replacement", q, k):
        miss[: max(int(pos[x]) for x in cands) + 1] += prob
    return miss


# ---------------------------------------------------------------------------------------------
# Degenerate inputs, purity, and the large vocabulary
# ---------------------------------------------------------------------------------------------


def test_degenerate_inputs_give_finite_values_and_inputs_are_untouched():
    V = 6
    cases = [
        (one_hot(V, 0), one_hot(V, 0)),
        (one_hot(V, 0), one_hot(V, 1)),
        (one_hot(V, 2), torch.full((V,), 1 / V, dtype=torch.float64)),
        (torch.full((V,), 1 / V, dtype=torch.float64), one_hot(V, 4)),
        (t64([0.5, 0.5, 0, 0, 0, 0]), t64([0, 0, 0, 0, 0.5, 0.5])),
    ]
    for p, q in cases:
        p0, q0 = p.clone(), q.clone()
        for key in node_level_keys():
            for k in ks(key, V):
                a = theory.acceptance(key, p, q, k)
                assert math.isfinite(a.value) and 0.0 <= a.value <= 1.0
        for law in laws.LAWS:
            for k in range(1, 3 if law == "hub" else 4):
                for value in (theory.optimal_acceptance(p, q, k, law), theory.membership_bound(p, q, k, law)):
                    assert math.isfinite(value) and 0.0 <= value <= 1.0
        assert torch.equal(p, p0) and torch.equal(q, q0)
    assert theory.acceptance("rrs_wor", *cases[1], 1).value == 0.0  # disjoint supports
    assert theory.acceptance("spectr", *cases[4], 2).value == 0.0
    assert theory.optimal_acceptance(*cases[0], 2, "without_replacement") == 1.0


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="at most 1"):
        theory.acceptance("sd", P12, Q12, 2)
    with pytest.raises(ValueError, match="at most 2"):
        theory.acceptance("spechub", P12, Q12, 3)
    with pytest.raises(ValueError, match="unknown verifier"):
        theory.acceptance("nope", P12, Q12, 2)
    with pytest.raises(ValueError, match="exceeds the vocabulary"):
        theory.optimal_acceptance(P12, Q12, 5, "without_replacement")
    with pytest.raises(ValueError, match="unknown candidate law"):
        theory.membership_bound(P12, Q12, 2, "nope")


def llm_like(V: int, seed: int, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(V, generator=g, dtype=torch.float64) * 3
    draft = logits + torch.randn(V, generator=g, dtype=torch.float64)
    return torch.softmax(logits / temperature, 0), torch.softmax(draft / temperature, 0).to(torch.float32)


def test_large_vocabulary_every_key_and_law():
    p, q = llm_like(49152, seed=0, temperature=0.8)
    for key, entry in ((k, VERIFIERS[k]) for k in node_level_keys()):
        for k in (1, 2, 3):
            if entry.max_candidates is not None and k > entry.max_candidates:
                continue
            a = theory.acceptance(key, p, q, k)
            assert 0.0 <= a.value <= 1.0 and a.stderr < 0.02, (key, k, a)
            if entry.lossless:
                bound = theory.optimal_acceptance(p, q, k, entry.law)
                assert a.value <= bound + 4 * a.stderr + 1e-9, (key, k, a, bound)
    for law in laws.LAWS:
        for k in (2, 3):
            if law == "hub" and k > 2:
                continue
            alpha = theory.optimal_acceptance(p, q, k, law)
            assert 0.0 < alpha <= theory.membership_bound(p, q, k, law) + 1e-9, law
    assert theory.optimal_acceptance(p, q, 3, "without_replacement") > theory.optimal_acceptance(p, q, 3, "iid")


def test_large_vocabulary_rrs_wor_is_exact_for_two_candidates_and_a_small_support():
    p, q = llm_like(49152, seed=1, temperature=0.8)
    assert theory.acceptance("rrs_wor", p, q, 2).method == "enumeration"
    q_top = torch.where(q >= torch.topk(q, 40).values[-1], q, torch.zeros_like(q))  # a top-40 draft
    got = theory.acceptance("rrs_wor", p, q_top, 3)
    assert got.method == "enumeration" and got.stderr == 0.0
    small = torch.topk(q_top, 40).indices
    rest = torch.ones(49152, dtype=torch.bool)
    rest[small] = False
    # the same node with the zero-q tokens merged into one: identical acceptance (they are never drafted)
    p_small = torch.cat([p[small], p[rest].sum()[None]])
    q_small = torch.cat([q_top[small].double(), torch.zeros(1, dtype=torch.float64)])
    assert got.value == pytest.approx(theory.acceptance("rrs_wor", p_small, q_small, 3).value, abs=1e-12)


def test_large_vocabulary_wor_bound_matches_small_vocabulary_oracle():
    # tokens with q = 0 and p = 0 change nothing: pad a small instance to 49152 tokens
    g = torch.Generator().manual_seed(3)
    p, q = random_law(7, g), random_law(7, g)
    pad = torch.zeros(49152 - 7, dtype=torch.float64)
    P, Q = torch.cat([p, pad]), torch.cat([q, pad])
    for k in (2, 3):
        assert theory.optimal_acceptance(P, Q, k, "without_replacement") == pytest.approx(
            optimal.min_cut_by_subsets(p, q, k, "without_replacement"), abs=1e-10
        )
        assert theory.membership_bound(P, Q, k, "without_replacement") == pytest.approx(
            theory.membership_bound(p, q, k, "without_replacement"), abs=1e-10
        )


def test_methods_are_labelled():
    assert theory.acceptance("rrs", P12, Q12, 2).method == "closed_form"
    assert theory.acceptance("rrs_wor", P12, Q12, 3).method == "enumeration"
    with pytest.raises(ValueError):
        theory.Acceptance(0.5, 0.0, "guess")
    with pytest.raises(ValueError, match="at most 2 candidates"):
        theory.acceptance("spechub", P12, Q12, 3)


def test_small_support_without_replacement_bound_uses_the_uniform_fallback():
    # k > |supp q|: every tuple holds supp q, then uniform draws among the rest (laws.py)
    for V, support, k in itertools.product((4, 5), (1, 2), (2, 3)):
        if k <= support:
            continue
        g = torch.Generator().manual_seed(V * 10 + support)
        p, q = random_law(V, g), random_law(V, g)
        q[support:] = 0.0
        q = q / q.sum()
        assert optimal._scan_wor(p, q, k) == pytest.approx(
            optimal.min_cut_by_subsets(p, q, k, "without_replacement"), abs=1e-12
        )
