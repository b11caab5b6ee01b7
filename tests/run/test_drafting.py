"""Drafting: depth-many draft forwards, the tree shape of each mode, trie merging that keeps every draw,
q rows that are the warped draft logits, and candidates at the root that follow the entry's law exactly."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from scipy import stats

from decoding.models import toy
from decoding.models.hf_treelm import HFTreeLM
from decoding.run.config import DecodeConfig
from decoding.run.drafting import draft_tree
from decoding.verify import laws
from decoding.verify.registry import VERIFIERS
from decoding.verify.sampling import make_generator, warp
from decoding.verify.tree import DraftTree

CONTEXT = [1, 2]  # " the cat"


def entry_for(law: str, k: int = 2):
    """A registry entry with this candidate law that takes k candidates (the tests are about laws)."""
    for key, entry in VERIFIERS.items():
        if str(entry.law) == law and (entry.max_candidates is None or entry.max_candidates >= k):
            return key, entry
    pytest.skip(f"no verifier with law {law!r} in the registry")


def toy_draft(context=CONTEXT):
    draft = toy.draft_session()
    draft.start(list(context))
    return draft


def draft_with(law: str, seed: int = 0, draft=None, **shape):
    key, entry = entry_for(law, max(shape.get("branching", ())))
    config = DecodeConfig(verifier=key, temperature=1.0, **shape)
    draft = draft or toy_draft()
    return draft_tree(draft, CONTEXT[-1], config, entry, make_generator(seed)), draft


@pytest.mark.parametrize("law", ["iid", "without_replacement", "any"])
def test_branching_tree_shape_forwards_and_q(law):
    drafted, draft = draft_with(law, branching=(3, 2, 2))
    tree = drafted.tree
    assert len(tree) == 1 + 3 + 6 + 12 and tree.max_depth == 3
    assert drafted.forwards == 3 == draft.forwards
    for node in range(len(tree)):
        depth = tree.depths[node]
        assert len(tree.draws[node]) == ((3, 2, 2)[depth] if depth < 3 else 0)
        assert (node in drafted.q) == (depth < 3)
    q, has_q = drafted.q_rows(toy.V)
    assert q.shape == (len(tree), toy.V) and q.dtype == torch.float64
    assert has_q.tolist() == [tree.depths[n] < 3 for n in range(len(tree))]
    assert torch.all(q[~has_q] == 0)


def test_sequences_make_a_trie_that_keeps_each_draw():
    """K sequences: every level holds K draws in all; a node reached by m draws draws m; duplicates merge."""
    key, entry = entry_for("iid", 6)
    config = DecodeConfig(verifier=key, sequences=6, depth=3, temperature=0.5)
    draft = toy_draft()
    drafted = draft_tree(draft, CONTEXT[-1], config, entry, make_generator(1))
    tree = drafted.tree
    assert drafted.forwards == 3 and tree.max_depth <= 3
    assert len(tree.draws[0]) == 6
    for depth in range(3):
        level = tree.nodes_at_depth(depth)
        assert sum(len(tree.draws[n]) for n in level) == 6
        for n in level:
            reached_by = 6 if n == 0 else tree.draws[tree.parents[n]].count(n)
            assert len(tree.draws[n]) == reached_by
            assert len(set(tree.candidates(n))) == len(tree.children(n))  # one child per distinct token
    assert any(len(tree.children(n)) < len(tree.draws[n]) for n in range(len(tree)) if tree.draws[n])


def test_q_rows_are_the_warped_draft_logits():
    key, entry = entry_for("iid")
    config = DecodeConfig(verifier=key, branching=(2, 2), temperature=0.7, top_k=5, top_p=0.9)
    draft = toy_draft()
    drafted = draft_tree(draft, CONTEXT[-1], config, entry, make_generator(3))
    for node, q in drafted.q.items():
        context = draft.context + [drafted.tree.tokens[n] for n in drafted.tree.path(node)[1:]]
        expected = warp(toy.toy_draft_logits(context), 0.7, 5, 0.9)
        assert torch.equal(q, expected)
        assert all(float(q[t]) > 0 for t in drafted.tree.candidates(node))


def test_one_draft_forward_per_level_on_a_real_model_and_leaf_commit():
    """An HF draft: 3 levels = 3 forwards; committing a path to a leaf leaves that leaf pending."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=toy.V, hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1))
    draft = HFTreeLM(model.eval())
    draft.start(CONTEXT)
    drafted, _ = draft_with("without_replacement", draft=draft, branching=(3, 2, 2))
    assert drafted.forwards == 3 and draft.prefills == 1
    leaf = drafted.tree.leaves()[0]
    draft.commit(drafted.tree.path(leaf), 4)  # no tree passed: the draft saw the leaves at the end of drafting
    assert draft.pending == [drafted.tree.tokens[leaf]]


def root_tuples(law: str, k: int, runs: int) -> Counter:
    counts: Counter = Counter()
    for seed in range(runs):
        drafted, _ = draft_with(law, seed=seed, branching=(k,))
        counts[tuple(drafted.tree.candidates(0))] += 1
    return counts


def chi_square_pvalue(counts: Counter, law: dict, runs: int) -> float:
    """Goodness of fit, cells expected below 5 pooled into one."""
    if any(x not in law for x in counts):
        return 0.0
    big = [x for x in law if law[x] * runs >= 5]
    observed = [counts.get(x, 0) for x in big] + [runs - sum(counts.get(x, 0) for x in big)]
    expected = [law[x] * runs for x in big] + [runs - sum(law[x] * runs for x in big)]
    if expected[-1] < 1e-9:
        observed, expected = observed[:-1], expected[:-1]
    stat = sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))
    return float(stats.chi2.sf(stat, df=len(observed) - 1))


@pytest.mark.parametrize("law", ["iid", "without_replacement", "hub"])
def test_root_candidates_follow_the_entry_law(law):
    runs = 3000
    q = warp(toy.toy_draft_logits(CONTEXT), 1.0)
    exact = dict(laws.enumerate_tuples(law, q, 2))
    counts = root_tuples(law, 2, runs)
    assert chi_square_pvalue(counts, exact, runs) > 1e-4


def test_root_law_test_can_fail():
    """Without-replacement draws are not i.i.d.: the same test must reject them."""
    runs = 3000
    q = warp(toy.toy_draft_logits(CONTEXT), 1.0)
    counts = root_tuples("without_replacement", 2, runs)
    assert chi_square_pvalue(counts, dict(laws.enumerate_tuples("iid", q, 2)), runs) < 1e-6


def test_deterministic_top_k_for_any_law():
    q = warp(toy.toy_draft_logits(CONTEXT), 1.0)
    drafted, _ = draft_with("any", branching=(3,))
    assert drafted.tree.candidates(0) == laws.top_order(q)[:3]


def test_a_lone_root_costs_nothing():
    draft = toy_draft()
    tree = DraftTree.root(CONTEXT[-1])
    assert draft.logits(tree, []).shape == (0, toy.V) and draft.forwards == 0
