"""judge agrees with step_law (seeded Monte Carlo), the stories are complete, shapes are refused,
and Medusa's typical acceptance over paths is what Medusa does (and lossy)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from decoding.verify.registry import VERIFIERS, node_level_keys
from decoding.verify.tree import DraftTree
from decoding.verify.tree_rules import typical_medusa
from tests.verifier_oracles import draft_trees, random_prefix_laws
from tests.verify.tree_level_oracle import build, loss_gap

N = 2000


def _tree(key: str, widths: tuple[int, ...], seed: int):
    p_of, q_of = random_prefix_laws(torch.Generator().manual_seed(seed), 3, len(widths))
    built = [build(nested, p_of, q_of) for nested, _ in draft_trees(VERIFIERS[key].law, widths, q_of)]
    return max(built, key=lambda t: len(VERIFIERS[key].step_law(*t)))  # the tree with the most outcomes


def _exact(outcomes) -> dict:
    law: dict = {}
    for o in outcomes:
        for y in range(o.last.numel()):
            law[(o.path, y)] = law.get((o.path, y), 0.0) + o.prob * float(o.last[y])
    return law


def _counts(key: str, tree, p, q) -> Counter:
    g, counts = torch.Generator().manual_seed(0), Counter()
    for _ in range(N):
        walk = VERIFIERS[key].judge(tree, p, q, g)
        counts[(walk.path, walk.tokens[-1])] += 1
        assert walk.tokens[:-1] == tuple(tree.tokens[n] for n in walk.path[1:])
        assert walk.events[-1].kind == "emit" and walk.events[-1].token == walk.tokens[-1]
    return counts


def _max_z(counts: Counter, exact: dict) -> float:
    """Largest |frequency - probability| in binomial standard errors (impossible outcomes: inf)."""
    if any(exact.get(k, 0.0) == 0.0 for k in counts):
        return math.inf
    return max(abs(counts[k] / N - pr) / math.sqrt(max(pr * (1 - pr), 1e-6) / N) for k, pr in exact.items())


@pytest.mark.parametrize("key,widths", [("block", (1, 1, 1)), ("traversal", (2, 2)), ("traversal", (2, 1, 1))])
def test_judge_frequencies_match_the_exact_law(key, widths):
    tree, p, q = _tree(key, widths, seed=4)
    exact = _exact(VERIFIERS[key].step_law(tree, p, q))
    assert len({path for path, _ in exact}) >= 3  # several accepted paths: a law worth testing
    assert _max_z(_counts(key, tree, p, q), exact) < 5


def test_judge_check_can_fail():
    """traversal's draws judged against rrs_wor's exact law of the same tree: the check fails."""
    tree, p, q = _tree("traversal", (2, 2), seed=4)
    assert _max_z(_counts("traversal", tree, p, q), _exact(VERIFIERS["rrs_wor"].step_law(tree, p, q))) > 5


def test_block_story_says_why_tau_is_the_last_pass():
    tree, p, q = _tree("block", (1, 1, 1), seed=4)
    g = torch.Generator().manual_seed(3)
    for _ in range(50):
        walk = VERIFIERS["block"].judge(tree, p, q, g)
        coins = [e for e in walk.events if e.kind == "coin"]
        assert len(coins) == 3 and all(e.uniform is not None and e.threshold is not None for e in coins)
        tau = max([i for i, e in enumerate(coins, 1) if e.passed], default=0)
        assert len(walk.path) - 1 == tau
        assert any(e.kind == "tau" and "LAST" in e.note for e in walk.events)


def test_traversal_story_has_a_deletion_after_every_rejected_try():
    tree, p, q = _tree("traversal", (2, 2), seed=4)
    g = torch.Generator().manual_seed(1)
    for _ in range(50):
        walk = VERIFIERS["traversal"].judge(tree, p, q, g)
        kinds = [e.kind for e in walk.events]
        tries = [e for e in walk.events if e.kind == "try"]
        assert kinds.count("delete") == len(tries) - 1 == len(walk.rejected)
        assert tries[-1].passed and not any(e.passed for e in tries[:-1])
        assert all(e.target is not None and e.draft is not None for e in walk.events if e.kind == "delete")


def test_shapes_are_refused_with_a_clear_message():
    tree, p, q = _tree("traversal", (2, 2), seed=4)
    with pytest.raises(ValueError, match="one draft chain"):
        VERIFIERS["block"].judge(tree, p, q, torch.Generator())
    with pytest.raises(ValueError, match="one draft chain"):
        VERIFIERS["block"].check_k(2)
    dup = DraftTree.root(0).add_draws(0, [1, 1], merge=False)
    with pytest.raises(ValueError, match="without replacement"):
        VERIFIERS["traversal"].step_law(dup, p[:3], q[:3])


def test_registry_levels():
    tree_level = {"block", "traversal", "typical_medusa", "hsd", "hsd_lossless"}
    assert {k for k, e in VERIFIERS.items() if e.level == "tree"} == tree_level
    assert "block" not in node_level_keys() and "typical" in node_level_keys()
    assert VERIFIERS["block"].lossless and VERIFIERS["traversal"].lossless and not VERIFIERS["typical_medusa"].lossless


# ---- Medusa's typical acceptance over paths ----------------------------------------------------------


def _rows(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def test_typical_medusa_keeps_the_longest_typical_path_not_the_first_typical_child():
    # root draws tokens 0 then 1 (both typical); only the child 1 has a typical grandchild
    tree = DraftTree.root(0).add_draws(0, [0, 1], merge=False)
    tree = tree.add_draws(1, [2], merge=False).add_draws(2, [0], merge=False)
    p = _rows([[0.5, 0.4, 0.1], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    q = torch.full((5, 3), 1 / 3, dtype=torch.float64)
    walk = VERIFIERS["typical_medusa"].judge(tree, p, q, torch.Generator())
    assert walk.path == (0, 2, 4) and walk.tokens == (1, 0, 2)  # argmax p at node 4
    node_level = VERIFIERS["typical"].judge(tree, p, q, torch.Generator())
    assert node_level.path[:2] == (0, 1)  # the node-level rule takes the first typical child
    (outcome,) = VERIFIERS["typical_medusa"].step_law(tree, p, q)
    assert outcome.path == walk.path and outcome.prob == 1.0


def test_typical_medusa_ties_go_to_the_likelier_prefix():
    tree = DraftTree.root(0).add_draws(0, [0, 1], merge=False)
    p = _rows([[0.3, 0.6, 0.1], [1, 0, 0], [0, 1, 0]])
    walk = VERIFIERS["typical_medusa"].judge(tree, p, torch.zeros(3, 3, dtype=torch.float64), torch.Generator())
    assert walk.path == (0, 2)


def test_medusa_entropy_has_the_plus_1e5():
    p = torch.tensor([0.5, 0.5 - 1e-3] + [1e-3 / 998] * 998, dtype=torch.float64)
    exact = -float(torch.special.entr(p).sum().neg())
    medusa = -float((p * torch.log(p + 1e-5)).sum())
    assert typical_medusa.medusa_threshold(p) == pytest.approx(min(0.09, 0.3 * math.exp(-medusa)), rel=1e-12)
    assert abs(medusa - exact) > 1e-3


def test_typical_medusa_is_lossy_by_the_exact_check():
    p_of, q_of = random_prefix_laws(torch.Generator().manual_seed(5), 3, 2)
    assert loss_gap(VERIFIERS["typical_medusa"].step_law, "topk", (2, 2), p_of, q_of) > 0.05
