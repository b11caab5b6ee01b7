"""certify: every lossless built-in passes exactly, lossy and broken verifiers are flagged with their TV
and a worst case; the lab's machinery agrees with the independent oracles of tests/verifier_oracles.py."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from decoding.lab import exact
from decoding.lab.certify import TOLERANCE, certify, default_shape, random_languages
from decoding.lab.language import load, presets, random_language
from decoding.lab.trees import drafted_trees
from decoding.verify import walk
from decoding.verify.registry import VERIFIERS, lossless_keys
from decoding.verify.rules import spectr
from decoding.verify.rules.common import chain_law
from tests.verifier_oracles import count_trees, draft_trees, extend, max_gap, target_joint, tree_law

LOSSLESS = lossless_keys()
PRESETS = {name: load(path) for name, path in presets().items()}
CONTEXT_FREE = {"worked_example", "uniform_draft"}  # one row: a single node says it all (k = 2 and 3)


def _shapes(key: str, preset: str) -> list[tuple[int, ...]]:
    entry = VERIFIERS[key]
    if preset in CONTEXT_FREE:
        return [(k,) for k in (2, 3) if k <= (entry.max_candidates or 3)] or [(1,)]
    return [default_shape(entry)]


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("key", LOSSLESS)
def test_every_lossless_builtin_is_certified_on_every_preset(key, preset):
    for shape in _shapes(key, preset):
        cert = certify(VERIFIERS[key], [PRESETS[preset]], shape, mc_trees=0)
        assert cert.lossless and cert.max_tv <= TOLERANCE, (shape, cert.worst_case)
        assert sum(d.prob for d in drafted_trees(VERIFIERS[key], PRESETS[preset], shape)) == pytest.approx(1.0)


@pytest.mark.parametrize("key", LOSSLESS)
def test_every_lossless_builtin_is_certified_on_random_languages(key):
    """Context-dependent, V = 2..4: the (2, 2) tree (narrowed for sd) on V = 2, 3; depth-3 chains on V = 2..4."""
    entry = VERIFIERS[key]
    law = str(entry.law)
    trees = random_languages(2, seed=11, shape=default_shape(entry), law=law)
    trees = [lang for lang in trees if lang.V <= 3] or trees[:1]
    chains = [random_language(20 + V, V, 3) for V in (2, 3, 4)]
    cert = certify(entry, trees, default_shape(entry), mc_trees=0)
    assert cert.lossless, cert.worst_case
    cert = certify(entry, chains, (1, 1, 1), mc_trees=0)
    assert cert.lossless, cert.worst_case
    assert {c.trees for c in cert.cases} == {count_trees(entry, lang, (1, 1, 1)) for lang in chains}


@pytest.mark.parametrize("key,floor", [("greedy", 0.05), ("typical", 0.05)])
def test_lossy_builtins_are_flagged_with_their_tv(key, floor):
    cert = certify(VERIFIERS[key], [PRESETS["context3"]], (2, 2), mc_trees=0)
    assert not cert.lossless and cert.max_tv > floor
    worst = cert.worst_case
    assert worst["tv"] == cert.max_tv and worst["tree"] and worst["got"] != pytest.approx(worst["want"])
    assert cert.to_json()["lossless"] is False


# --- the lab's machinery against the independent oracles -----------------------------------------


@pytest.mark.parametrize("key", ["rrs", "rrs_wor", "spechub", "greedy"])
def test_mixture_equals_the_oracle_tree_law(key):
    """exact.check_case (step_law + lab tree enumeration) == tests/verifier_oracles.tree_law (own recursion)."""
    entry = VERIFIERS[key]
    language = random_language(5, 3, 2)
    case = exact.check_case(entry, language, (2, 2))
    law = "topk" if str(entry.law) == "any" else str(entry.law)
    oracle = tree_law(entry.conditional, law, (2, 2), language.target, language.draft)
    assert max_gap(case.got, extend(oracle, language.target, 3)) < 1e-12
    assert max_gap(case.want, target_joint(language.target, 3, 3)) < 1e-12
    assert case.trees == sum(1 for _ in draft_trees(law, (2, 2), language.draft))


def test_expected_tokens_equal_the_walks_reach_probabilities():
    entry, language = VERIFIERS["rrs_wor"], PRESETS["context3"]
    case = exact.check_case(entry, language, (2, 2))
    trees = drafted_trees(entry, language, (2, 2))
    by_reach = sum(d.prob * walk.expected_tokens(d.tree, d.p, d.q, entry) for d in trees)
    assert case.expected_tokens == pytest.approx(by_reach, abs=1e-12)
    assert case.expected_accepted == pytest.approx(by_reach - 1.0, abs=1e-12)


@pytest.mark.parametrize("key,k,alpha", [
    ("sd", 1, 0.700000), ("rrs", 2, 0.760000), ("rrs", 3, 0.808000), ("rrs_wor", 2, 0.803611),
    ("rrs_wor", 3, 0.916627), ("spectr", 2, 0.791355), ("khisti_is", 2, 0.796162), ("spechub", 2, 0.900000),
    ("hu_greedy", 2, 0.900000), ("pointmass", 2, 0.800000), ("pointmass", 3, 0.950000),
])
def test_root_acceptance_matches_the_reference_numbers(key, k, alpha):
    """docs/verifiers.md §12 (exact [N]), and alpha* .86 / .972222 for k = 2 i.i.d. / without replacement."""
    case = exact.check_case(VERIFIERS[key], PRESETS["worked_example"], (k,))
    assert case.root_acceptance == pytest.approx(alpha, abs=5e-7)
    assert case.root_acceptance <= case.alpha_star + 1e-12 <= case.membership + 2e-12
    assert case.expected_tokens == pytest.approx(1.0 + alpha, abs=5e-7)
    if key == "rrs" and k == 2:
        assert case.alpha_star == pytest.approx(0.86, abs=1e-9)
    if key == "rrs_wor" and k == 2:
        assert case.alpha_star == pytest.approx(0.972222, abs=5e-7)


# --- broken variants (docs/verifiers.md §11.3) -----------------------------------------------------------


def _sorted_by_q(p, q, xs):
    """rrs_wor verified by decreasing q instead of draw order."""
    order = sorted(range(len(xs)), key=lambda i: -float(q[xs[i]]))
    accept_sorted, res = VERIFIERS["rrs_wor"].conditional(p, q, [xs[i] for i in order])
    accept = torch.zeros(len(xs), dtype=torch.float64)
    accept[order] = accept_sorted
    return accept, res


def _kseq_below_rho_star(p, q, xs):
    rho = max(1.0, 0.7 * spectr.division_factor(p, q, len(xs)))
    return chain_law(spectr.chain(p, q, list(xs), rho=rho), list(xs), p.shape[0])


BROKEN = {
    "sort candidates": dataclasses.replace(VERIFIERS["rrs_wor"], name="rrs_wor_sorted", conditional=_sorted_by_q),
    "top-k candidates with RRS": dataclasses.replace(VERIFIERS["rrs"], name="rrs_on_topk", law="topk"),
    "rho < rho*": dataclasses.replace(VERIFIERS["spectr"], name="kseq_low_rho", conditional=_kseq_below_rho_star),
}


@pytest.mark.parametrize("label", sorted(BROKEN))
def test_broken_variants_are_flagged_with_a_worst_case(label):
    entry = BROKEN[label]
    cert = certify(entry, [PRESETS["worked_example"], PRESETS["context3"]], (2,), mc_trees=0)
    assert not cert.lossless and cert.max_tv > 0.01, label
    worst = cert.worst_case
    assert worst["kind"] == "exact" and worst["tv"] == cert.max_tv and worst["tree"]
    assert worst["tree_contribution"] > 0
    fixed = VERIFIERS[{"rrs_wor_sorted": "rrs_wor", "rrs_on_topk": "pointmass", "kseq_low_rho": "spectr"}[entry.name]]
    law_fixed = fixed if entry.name != "rrs_on_topk" else dataclasses.replace(fixed, law="topk")
    assert certify(law_fixed, [PRESETS["worked_example"], PRESETS["context3"]], (2,), mc_trees=0).lossless
