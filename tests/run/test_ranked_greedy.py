"""At temperature 0 a ranked law (top-k: "any", "topk_plus_random"; no registered verifier draws plain "topk")
drafts from the draft's untempered law: the warped q would be one-hot, and its top-k would add the lowest
token ids, all of q = 0 (the "greedy (T = 0), 3,2,2" preset drafted <|endoftext|> and <|im_start|> under every
node). Sampling laws keep the one-hot q (their one candidate is the draft's argmax). Both the run's drafting
and the compare forest; and a ranked tree at T = 0 still decodes the target's greedy tokens."""

from __future__ import annotations

import pytest
import torch

from decoding.compare.drafting import draft_forest
from decoding.models import pairs as models
from decoding.models import toy
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.run.drafting import draft_tree
from decoding.verify import laws
from decoding.verify.registry import VERIFIERS
from decoding.verify.sampling import make_generator, warp
from tests.run.test_drafting import CONTEXT, entry_for, toy_draft


def _context(draft, tree, node: int) -> list[int]:
    return draft.context + [tree.tokens[n] for n in tree.path(node)[1:]]


def _top(logits: torch.Tensor, k: int) -> list[int]:
    return laws.top_order(torch.softmax(logits.double(), -1), k)


@pytest.mark.parametrize("law", ["any", "topk_plus_random"])
def test_a_ranked_law_at_t0_draws_the_drafts_top_tokens(law):
    key, entry = entry_for(law, 3)
    config = DecodeConfig(verifier=key, branching=(3, 2), temperature=0.0)
    draft = toy_draft()
    drafted = draft_tree(draft, CONTEXT[-1], config, entry, make_generator(0))
    for node, q in drafted.q.items():
        logits = toy.toy_draft_logits(_context(draft, drafted.tree, node))
        assert torch.allclose(q, warp(logits, 1.0), atol=1e-12)  # the untempered law, not one-hot
        k = len(drafted.tree.draws[node])
        want = _top(logits, k if law == "any" else k - 1)  # Hu et al.: top-(k-1), then one draw without them
        assert drafted.tree.candidates(node)[:len(want)] == want
        assert all(float(q[t]) > 0 for t in drafted.tree.candidates(node))


@pytest.mark.parametrize("law", ["iid", "without_replacement"])
def test_a_sampling_law_at_t0_keeps_the_one_hot_q(law):
    key, entry = entry_for(law, 2)
    config = DecodeConfig(verifier=key, branching=(2,), temperature=0.0)
    draft = toy_draft()
    drafted = draft_tree(draft, CONTEXT[-1], config, entry, make_generator(0))
    q = drafted.q[0]
    assert float(q.max()) == 1.0 and int((q > 0).sum()) == 1
    assert drafted.tree.candidates(0)[0] == _top(toy.toy_draft_logits(draft.context), 1)[0]


def test_the_compare_forest_draws_each_law_from_its_own_q_at_t0():
    config = DecodeConfig(verifier="pointmass", branching=(3, 1), temperature=0.0)
    draft = toy_draft()
    fd = draft_forest(draft, CONTEXT[-1], config, ["any", "without_replacement"], make_generator(0))
    p_forest = torch.zeros(len(fd.forest.tree), toy.V, dtype=torch.float64)
    root_logits = toy.toy_draft_logits(draft.context)
    _, q_ranked, _ = fd.rows(0, p_forest)
    _, q_sampled, _ = fd.rows(1, p_forest)
    assert fd.trees[0].candidates(0) == _top(root_logits, 3)
    assert torch.allclose(q_ranked[0], warp(root_logits, 1.0), atol=1e-12)
    assert torch.equal(q_sampled[0], warp(root_logits, 0.0))
    assert fd.trees[1].candidates(0)[0] == fd.trees[0].candidates(0)[0]  # both start from the draft's argmax


@pytest.mark.parametrize("verifier,branching", [("pointmass", (3, 1)), ("greedy", (3, 2, 2)), ("hu_greedy", (3,))])
def test_ranked_trees_at_t0_decode_the_targets_greedy_tokens(verifier, branching):
    pair = models.load_pair("toy")
    plain = engine.generate(pair, DecodeConfig(verifier="sd", branching=(1,), temperature=0.0, drafting=False,
                                               max_new_tokens=12, seed=0), "the cat")
    config = DecodeConfig(verifier=verifier, branching=branching, temperature=0.0, max_new_tokens=12, seed=0)
    got = engine.generate(pair, config, "the cat")
    assert got.generated_ids == plain.generated_ids
    assert any(len(set(n.draws)) > 1 for s in got.steps for n in s.nodes)  # really a tree of distinct tokens
    assert VERIFIERS[verifier].law.ranked


def test_a_nodes_top_tokens_leave_out_what_p_and_q_both_give_zero():
    """At T = 0 p is one-hot: the node's top list (the bars of the node figure, the residual's top in the story)
    was its argmax and the lowest token ids at 0.000 (<|endoftext|>, <|im_start|>, ...)."""
    from decoding.run.recorder import top_tokens

    p = torch.zeros(10, dtype=torch.float64)
    p[7] = 1.0
    q = torch.zeros(10, dtype=torch.float64)
    q[[3, 7]] = torch.tensor([0.75, 0.25], dtype=torch.float64)
    assert [t.token for t in top_tokens(p, None, 4, str)] == [7]
    assert [t.token for t in top_tokens(p, q, 4, str)] == [7, 3]
    trace = engine.generate(models.load_pair("toy"), DecodeConfig(verifier="rrs_wor", branching=(2,), temperature=0.0,
                                                                  max_new_tokens=6, seed=0), "the cat")
    assert all(t.p > 0 or t.q > 0 for s in trace.steps for n in s.nodes for t in n.top)
