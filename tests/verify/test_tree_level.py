"""Block and traversal verification are lossless, exactly (docs/verifiers.md §14): every drafted tree of a
random context-dependent tiny language, mixed with the verifier's exact step law, padded by the
target, equals the target's joint law at 1e-9. The known bugs, built here, fail the same check."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import torch

from decoding.verify.registry import VERIFIERS
from decoding.verify.step_law import Outcome, expected_tokens
from decoding.verify.tree import DraftTree
from decoding.verify.tree_rules import block
from decoding.verify.tree_rules.chains import chain_nodes, residual_law, weighted_residual
from tests.verifier_oracles import draft_trees, random_prefix_laws
from tests.verify.tree_level_oracle import build, loss_gap

F64 = torch.float64
CHAINS = [(1,), (1, 1), (1, 1, 1)]


def language(seed: int, V: int, depth: int) -> tuple[dict, dict]:
    return random_prefix_laws(torch.Generator().manual_seed(seed), V, depth)


@pytest.mark.parametrize("V", [2, 3])
@pytest.mark.parametrize("widths", CHAINS, ids=str)
@pytest.mark.parametrize("key", ["block", "traversal"])
def test_lossless_on_chains(key, widths, V):
    law = VERIFIERS[key].law
    for seed in range(3):
        p_of, q_of = language(100 * seed + V, V, len(widths))
        assert loss_gap(VERIFIERS[key].step_law, law, widths, p_of, q_of) < 1e-9


@pytest.mark.parametrize("V", [2, 3])
@pytest.mark.parametrize("widths", [(2,), (2, 2), (2, 1, 1), (1, 2)], ids=str)
def test_traversal_lossless_on_trees_drawn_without_replacement(widths, V):
    for seed in range(3):
        p_of, q_of = language(7 + seed, V, len(widths))
        assert loss_gap(VERIFIERS["traversal"].step_law, "without_replacement", widths, p_of, q_of) < 1e-9


def test_traversal_on_a_chain_is_block_verification():
    p_of, q_of = language(3, 3, 3)
    for nested, _ in draft_trees("iid", (1, 1, 1), q_of):
        tree, p, q = build(nested, p_of, q_of)
        a, b = VERIFIERS["block"].step_law(tree, p, q), VERIFIERS["traversal"].step_law(tree, p, q)
        assert [o.path for o in a] == [o.path for o in b]
        for x, y in zip(a, b, strict=True):
            assert x.prob == pytest.approx(y.prob, abs=1e-12)
            assert torch.allclose(x.last, y.last, atol=1e-12)


def test_the_papers_example_10_9_for_sd_and_11_9_for_block():
    """Target (1/3, 2/3), draft (2/3, 1/3), context-free, a chain of 2 drafts (docs/verifiers.md §14.1)."""
    p, q = torch.tensor([1 / 3, 2 / 3], dtype=F64), torch.tensor([2 / 3, 1 / 3], dtype=F64)
    accepted = {}
    for key in ("sd", "block", "traversal"):
        total = 0.0
        for x1, x2 in itertools.product(range(2), repeat=2):
            tree = DraftTree.root(0).add_draws(0, [x1], merge=False).add_draws(1, [x2], merge=False)
            rows_q = torch.stack([q, q, torch.zeros(2, dtype=F64)])
            outcomes = VERIFIERS[key].step_law(tree, p.expand(3, -1), rows_q)
            total += float(q[x1] * q[x2]) * (expected_tokens(outcomes) - 1)
        accepted[key] = total
    assert Fraction(accepted["sd"]).limit_denominator(100) == Fraction(10, 9)
    assert Fraction(accepted["block"]).limit_denominator(100) == Fraction(11, 9)
    assert accepted["traversal"] == pytest.approx(11 / 9, abs=1e-12)
    assert abs(accepted["block"] - 11 / 9) < 1e-12 and abs(accepted["sd"] - 10 / 9) < 1e-12


# ---- broken variants (docs/verifiers.md §14.1 "bugs seen in the wild"): the same exact check must fail ----


def _broken_block(tau_law=block.tau_law, last=block.last_law, q_one=False):
    def law(tree, p, q):
        chain = chain_nodes(tree)
        q = torch.ones_like(q) if q_one else q
        w = block.weights(chain, tree, p, q)
        h = [v[0] for v in block.h_values(chain, w, p, q)]
        taus = enumerate(tau_law(h))
        return [Outcome(tuple(chain[: t + 1]), pr, last(chain, w, t, p, q)) for t, pr in taus if pr > 0]
    return law


def _token_wise_residual(chain, w, tau, p, q):
    if tau == len(chain) - 1:
        return p[chain[tau]]
    r, mass = weighted_residual(1.0, p[chain[tau]], q[chain[tau]])  # norm((p - q)_+): ignores w_tau
    return residual_law(r, mass, p[chain[tau]])


def _first_failure(h):
    """tau = the position before the first failed coin: P(tau = i) = h_1..h_i (1 - h_{i+1})."""
    law, passed = [0.0] * len(h), 1.0
    for i in range(len(h)):
        passed *= h[i]
        law[i] = passed * (1.0 - h[i + 1]) if i + 1 < len(h) else passed
    return law


BROKEN = {
    "token-wise residual": _broken_block(last=_token_wise_residual),
    "tau = first failure": _broken_block(tau_law=_first_failure),
    "q replaced by 1": _broken_block(q_one=True),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_known_block_bugs_fail_the_exact_check(name):
    """On V = 3 the weighted and token-wise residuals often share their one-token support, so the
    token-wise bug needs a depth-3 chain to show (gap 6e-3 here); the other two show at any depth."""
    p_of, q_of = language(1, 3, 3)
    assert loss_gap(block.step_law, "iid", (1, 1, 1), p_of, q_of) < 1e-9  # the correct one, same language
    assert loss_gap(BROKEN[name], "iid", (1, 1, 1), p_of, q_of) > 3e-3


def test_traversal_with_siblings_tried_out_of_draw_order_fails():
    """Trying the LAST drawn sibling first breaks the without-replacement draft-row update."""
    from decoding.verify.tree_rules import traversal

    def reversed_law(tree, p, q):
        flipped = DraftTree(tree.tokens, tree.parents, tuple(tuple(reversed(d)) for d in tree.draws))
        return traversal.step_law(flipped, p, q)

    p_of, q_of = language(7, 3, 2)
    assert loss_gap(reversed_law, "without_replacement", (2, 2), p_of, q_of) > 1e-3
