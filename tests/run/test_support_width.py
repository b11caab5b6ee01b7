"""A node whose q gives fewer tokens positive probability than its width asks for draws only those (laws.width):
a law that draws distinct tokens would otherwise draw tokens q calls impossible. Prompt lookup's one-hot guess
drew <|endoftext|> and <|im_start|> as a top-3's runners-up, and a without-replacement draw a token uniform over
the vocabulary. Checked on the toy pair with top-k filtering (q's support is top_k tokens at every node), in a
run's drafting and in the compare forest; and the run still emits the target's law."""

from __future__ import annotations

from dataclasses import replace

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
from tests.engine_oracles import chi_square_pvalue, exact_joint, total_variation
from tests.run.test_drafting import CONTEXT, toy_draft

DISTINCT = {"rrs_wor": (3, 2), "pointmass": (3, 2), "hu_greedy": (3, 2), "spechub": (2, 2)}  # verifier: shape


def test_a_law_of_distinct_draws_asks_for_at_most_qs_support():
    one_hot, two = torch.zeros(8, dtype=torch.float64), torch.zeros(8, dtype=torch.float64)
    one_hot[5], two[[1, 6]] = 1.0, 0.5
    full = torch.full((8,), 1 / 8, dtype=torch.float64)
    for name in ("without_replacement", "hub", "topk_plus_random", "topk", "any"):
        law = laws.get(name)
        assert (law.width(one_hot, 2), law.width(two, 2), law.width(two, 1), law.width(full, 2)) == (1, 2, 1, 2), name
        assert law.width(two, 4) == 2 and law.width(full, 4) == 4, name
    for name in ("iid", "gumbel"):  # repeats allowed: never a token of q = 0
        assert laws.get(name).width(one_hot, 3) == 3


@pytest.mark.parametrize("key", sorted(DISTINCT))
def test_a_runs_node_draws_only_tokens_its_q_allows(key):
    top_k = 1 if key == "spechub" else 2
    config = DecodeConfig(verifier=key, temperature=1.0, top_k=top_k, branching=DISTINCT[key])
    for seed in range(5):
        drafted = draft_tree(toy_draft(), CONTEXT[-1], config, VERIFIERS[key], make_generator(seed))
        tree = drafted.tree
        for node, q in drafted.q.items():
            width = DISTINCT[key][tree.depths[node]]
            assert len(tree.draws[node]) == min(width, top_k), (key, node)
            assert all(q[tree.tokens[child]] > 0 for child in tree.draws[node]), (key, node)


def test_iid_draws_keep_their_width_within_qs_support():
    config = DecodeConfig(verifier="rrs", temperature=1.0, top_k=1, branching=(3, 2))
    drafted = draft_tree(toy_draft(), CONTEXT[-1], config, VERIFIERS["rrs"], make_generator(0))
    root_q = drafted.q[0]
    assert len(drafted.tree.draws[0]) == 3 and all(root_q[drafted.tree.tokens[c]] == 1.0 for c in drafted.tree.draws[0])


def test_the_compare_forest_draws_only_tokens_each_q_allows():
    config = DecodeConfig(verifier="rrs_wor", temperature=1.0, top_k=2, branching=(3, 2))
    groups = ["without_replacement", "any", "topk_plus_random", "iid"]
    forest = draft_forest(toy_draft(), CONTEXT[-1], config, groups, make_generator(3), warp=warp)
    q = forest.q[1.0]
    for group, tree, to_forest in zip(forest.groups, forest.trees, forest.forest.maps, strict=True):
        for node in range(len(tree)):
            if tree.depths[node] >= 2:
                continue
            width = (3, 2)[tree.depths[node]]
            assert len(tree.draws[node]) == (width if group == "iid" else min(width, 2)), (group, node)
            assert all(q[to_forest[node]][tree.tokens[c]] > 0 for c in tree.draws[node]), (group, node)


RUNS, N_TOKENS, PROMPT = 2000, 3, "the cat"


def top_k_logits(k: int):
    """The toy target's logits with all but the k largest at -inf: warp of these is top-k filtering."""
    def logits(context):
        out = toy.toy_target_logits(context).to(torch.float64)
        keep = torch.topk(out, k).indices
        masked = torch.full_like(out, float("-inf"))
        masked[keep] = out[keep]
        return masked
    return logits


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(DISTINCT))
def test_trees_narrowed_to_qs_support_still_emit_the_targets_law(key):
    pair = models.load_pair("toy")
    top_k = 1 if key == "spechub" else 2
    config = DecodeConfig(verifier=key, temperature=1.0, top_k=top_k, max_new_tokens=N_TOKENS, chat=False,
                          record=False, branching=DISTINCT[key])
    counts: dict = {}
    for seed in range(RUNS):
        out = tuple(engine.generate(pair, replace(config, seed=seed), PROMPT).generated_ids[:N_TOKENS])
        counts[out] = counts.get(out, 0) + 1
    law = exact_joint(top_k_logits(top_k), pair.encode_prompt(PROMPT, chat=False), N_TOKENS, 1.0, pair.eos_ids)
    if len(law) == 1:  # top-1 filtering: the target is deterministic, and so must the run be
        assert counts == {next(iter(law)): RUNS}
        return
    pvalue = chi_square_pvalue(counts, law)
    assert pvalue > 1e-4, f"{key}: chi-square p={pvalue:.2e}, TV={total_variation(counts, law):.3f}"
