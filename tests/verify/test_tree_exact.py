"""Tree-level exactness (docs/verifiers.md §11.2): a (2, 2) draft tree over V = 3.

Every prefix up to depth 2 has its own p and q. Every draft tree is enumerated with its probability
(children drawn per node with the verifier's law, each child's subtree drafted independently); the
walk from the root gives the law of the emitted sequence (accepted path + residual or bonus token);
ancestral target sampling extends it to 3 tokens; the result must equal prod_t p(x_t | x_<t).
hu_greedy descends into a child hit by a residual sample (its conditional counts the hit as acceptance).
"""

from __future__ import annotations

import pytest
import torch

from decoding.verify.registry import VERIFIERS
from tests.verifier_oracles import extend, max_gap, random_prefix_laws, target_joint, tree_law

V, DEPTH = 3, 2

CASES = [
    ("rrs", "iid", (2, 2)),
    ("rrs_wor", "without_replacement", (2, 2)),
    ("pointmass", "topk", (2, 2)),
    ("pointmass", "iid", (2, 2)),
    ("hu_greedy", "topk_plus_random", (2, 2)),
    ("spechub", "hub", (2, 2)),
    ("spectr", "iid", (2, 2)),
    ("khisti_is", "iid", (2, 2)),
    ("sd", "iid", (1, 1)),
    ("gls", "gumbel", (2, 2)),
    ("gls", "gumbel", (1, 1)),
]


@pytest.mark.parametrize("key,law,widths", CASES, ids=[f"{k}-{law}" for k, law, _ in CASES])
def test_tree_emits_the_target_joint(key, law, widths):
    p_of, q_of = random_prefix_laws(torch.Generator().manual_seed(5), V, DEPTH)
    emitted = tree_law(VERIFIERS[key].conditional, law, widths, p_of, q_of)
    assert sum(emitted.values()) == pytest.approx(1.0, abs=1e-12)
    assert max_gap(extend(emitted, p_of, DEPTH + 1), target_joint(p_of, V, DEPTH + 1)) < 1e-9
    tokens_per_step = sum(len(seq) * pr for seq, pr in emitted.items())
    assert 1.0 <= tokens_per_step <= DEPTH + 1


def test_tree_check_catches_a_lossy_verifier():
    """The same tree oracle fails greedy matching (T > 0): the check can fail."""
    p_of, q_of = random_prefix_laws(torch.Generator().manual_seed(5), V, DEPTH)
    emitted = tree_law(VERIFIERS["greedy"].conditional, "topk", (2, 2), p_of, q_of)
    assert max_gap(extend(emitted, p_of, DEPTH + 1), target_joint(p_of, V, DEPTH + 1)) > 0.05
