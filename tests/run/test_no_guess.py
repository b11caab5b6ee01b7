"""A drafter with no guess at a node (a draft row of -inf: prompt lookup without a match) leaves that
node a leaf: the tree is drafted smaller, q rows exist only where candidates were drawn, and runs stay
lossless end to end (plain greedy at T = 0, the target law at T = 1) on the toy pair. The exact
per-step proof for every verifier is tests/lab/test_ragged_trees.py."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from decoding.models import pairs as models
from decoding.models import toy
from decoding.models.treelm import ContextTreeLM
from decoding.run import drafting, engine
from decoding.run.config import DecodeConfig
from decoding.verify.registry import VERIFIERS
from decoding.verify.sampling import make_generator
from tests.engine_oracles import chi_square_pvalue, total_variation
from tests.run.test_engine_lossless import N_TOKENS, PROMPT, RUNS, outcome_counts, target_law

NO_GUESS_AFTER = 11  # the toy draft has no guess after "."


def guessing_logits(context: list[int]) -> torch.Tensor:
    """The toy draft, except for no guess (all -inf) after token NO_GUESS_AFTER."""
    if context[-1] == NO_GUESS_AFTER:
        return torch.full((toy.V,), float("-inf"))
    return toy.toy_draft_logits(context)


@pytest.fixture(scope="module")
def pair():
    return replace(models.load_pair("toy"), new_draft=lambda: ContextTreeLM(guessing_logits, toy.V))


def _drafted(pair, root: int, branching=(2, 2), seed=0):
    draft = pair.draft_session()
    draft.start([1, root])
    config = DecodeConfig(verifier="rrs", branching=branching, temperature=1.0)
    return drafting.draft_tree(draft, root, config, VERIFIERS["rrs"], make_generator(seed)), draft


def assert_q_is_the_law_at(tree, node: int, q_row: torch.Tensor) -> None:
    """q_row [V] is the draft's law at `node` itself (not a neighbour's row shifted by a skipped node);
    the drafts here start from context [1, root]."""
    context = [1] + [tree.tokens[a] for a in tree.path(node)]
    assert torch.allclose(q_row, torch.softmax(toy.toy_draft_logits(context).double(), -1), atol=1e-12)


def test_no_guess_at_the_root_drafts_the_root_alone(pair):
    drafted, draft = _drafted(pair, NO_GUESS_AFTER)
    assert len(drafted.tree) == 1 and drafted.q == {} and drafted.forwards == 1 == draft.forwards


def test_nodes_without_a_guess_stay_leaves_and_have_no_q(pair):
    seen = 0
    for seed in range(40):
        drafted, _ = _drafted(pair, 4, seed=seed)  # after " sat": often "."
        tree = drafted.tree
        for node in range(1, len(tree)):
            token, depth = tree.tokens[node], tree.depths[node]
            if depth == 1:
                expected_children = 0 if token == NO_GUESS_AFTER else 2
                assert len(tree.draws[node]) == expected_children
                assert (node in drafted.q) == (token != NO_GUESS_AFTER)
                seen += token == NO_GUESS_AFTER
        q, _ = drafted.q_rows(toy.V)
        for node in drafted.q:
            assert_q_is_the_law_at(tree, node, q[node])
    assert seen > 0


def test_greedy_with_gaps_equals_plain_greedy(pair):
    config = DecodeConfig(verifier="sd", branching=(1, 1, 1), temperature=0.0, max_new_tokens=30, chat=False)
    trace = engine.generate(pair, config, PROMPT)
    plain = engine.baseline(pair, pair.encode_prompt(PROMPT, False), 30, config)
    assert trace.generated_ids == plain.ids
    assert {len(s.nodes) for s in trace.steps} != {4}, "some steps must have drafted less than the chain"


@pytest.mark.parametrize("key,shape", [("sd", dict(branching=(1, 1))), ("rrs", dict(branching=(3, 2)))])
def test_sampling_with_gaps_follows_the_target_law(pair, key, shape):
    config = DecodeConfig(verifier=key, temperature=1.0, max_new_tokens=N_TOKENS, chat=False, record=False, **shape)
    counts = outcome_counts(pair, config, RUNS)
    law = target_law(pair, 1.0)
    pvalue = chi_square_pvalue(counts, law)
    assert pvalue > 1e-4, f"{key}: chi-square p={pvalue:.2e}, TV={total_variation(counts, law):.3f}"


def test_the_compare_forest_leaves_the_same_nodes_without_a_guess(pair):
    """compare/drafting.draft_forest: every law's tree stops where the drafter has no guess, q rows only
    where candidates were drawn, each the law at its own node; a compare run stays plain greedy at T = 0."""
    from decoding.compare import session
    from decoding.compare.drafting import draft_forest

    config = DecodeConfig(verifier="rrs", branching=(2, 2), temperature=1.0)
    stopped = 0
    for seed in range(30):
        draft = pair.draft_session()
        draft.start([1, 4])  # after " sat": often "."
        drafted = draft_forest(draft, 4, config, ["iid", "without_replacement"], make_generator(seed))
        for t, tree in enumerate(drafted.trees):
            _, q, has_q = drafted.rows(t, torch.zeros(len(drafted.forest.tree), toy.V, dtype=torch.float64))
            for node in range(len(tree)):
                no_guess = tree.tokens[node] == NO_GUESS_AFTER
                assert not (no_guess and (tree.draws[node] or has_q[node])), (seed, t, node)
                stopped += no_guess and tree.depths[node] < 2
                if has_q[node]:
                    assert_q_is_the_law_at(tree, node, q[node])
    assert stopped > 0
    greedy = config.with_(temperature=0.0, max_new_tokens=20, chat=False)
    run = session.start(pair, greedy, PROMPT, ["rrs", "rrs_wor", "spectr"], mc_draws=0)
    for _ in run:
        pass
    plain = engine.baseline(pair, pair.encode_prompt(PROMPT, False), 20, greedy)
    assert run.state.generated_ids == plain.ids
