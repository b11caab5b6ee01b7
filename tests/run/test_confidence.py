"""DecodeConfig.min_confidence (run/confidence.py): a drafted node gets children only where the draft's own
T = 1 probability of its path reaches the floor; the others stay leaves and cost no draft forward. The trees
are checked node by node against q1 recomputed here, a run against the same run without a floor, and the
config's JSON against old traces. (Exactness on every lossless verifier: tests/lab/test_ragged_trees.py.)"""

from __future__ import annotations

import math

import pytest
import torch

from decoding.models import pairs, toy
from decoding.models.target import score_tree
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.run.drafting import draft_tree
from decoding.run.seen import fixed_depth
from decoding.verify.registry import VERIFIERS
from decoding.verify.sampling import make_generator

CONTEXT = [1, 2]  # " the cat"


def _confidence(tree, node: int, temperature: float = 0.8) -> float:
    """q of each token along the node's path at the run's temperature (1 at T = 0), recomputed from a fresh toy
    draft (no floor involved)."""
    draft = toy.draft_session()
    draft.start(list(CONTEXT))
    q = torch.softmax(score_tree(draft, tree).double() / (temperature or 1.0), dim=-1)  # [N, V]
    path = tree.path(node)
    return math.prod(float(q[parent, tree.tokens[child]]) for parent, child in zip(path, path[1:], strict=False))


@pytest.mark.parametrize(("verifier", "levels", "temperature"),
                         [("sd", (1, 1, 1, 1), 0.8), ("rrs_wor", (2, 2, 1), 0.8), ("sd", (1, 1, 1, 1), 0.0),
                          ("pointmass", (2, 1, 1), 0.0)])
@pytest.mark.parametrize("floor", [0.2, 0.3])
def test_a_node_gets_children_exactly_where_its_path_is_sure_enough(verifier, levels, temperature, floor):
    """At T = 0.8 the confidence multiplies the drafted q; at T = 0, where sd's q is one-hot, the draft's law at
    temperature 1 (a ranked law's q there already)."""
    config = DecodeConfig(verifier=verifier, branching=levels, temperature=temperature, min_confidence=floor)
    went_deep = stopped = 0
    for seed in range(12):
        draft = toy.draft_session()
        draft.start(list(CONTEXT))
        drafted = draft_tree(draft, CONTEXT[-1], config, VERIFIERS[verifier], make_generator(seed))
        tree = drafted.tree
        for node in range(1, len(tree)):
            if tree.depths[node] == len(levels):
                continue  # the shape's last level: leaves whatever their confidence
            sure = _confidence(tree, node, temperature) >= floor
            assert sure == (not tree.is_leaf(node)), (seed, node, _confidence(tree, node, temperature))
            went_deep, stopped = went_deep + sure, stopped + (not sure)
        assert drafted.forwards == draft.forwards == len({tree.depths[n] for n in drafted.q})  # a level a forward
        assert set(drafted.q) == {n for n in range(len(tree)) if not tree.is_leaf(n)}  # leaves cost no q row
    assert went_deep and stopped  # the floor really splits these trees


def test_no_floor_drafts_the_whole_shape_and_a_floor_of_one_stops_below_the_root():
    for floor, nodes in [(0.0, 4), (1.0, 1)]:
        config = DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), temperature=0.8, min_confidence=floor)
        draft = toy.draft_session()
        draft.start(list(CONTEXT))
        tree = draft_tree(draft, CONTEXT[-1], config, VERIFIERS["sd"], make_generator(3)).tree
        assert len(tree) - 1 == nodes


def test_a_run_with_a_floor_replays_and_keeps_its_floor_in_the_trace():
    pair = pairs.load_pair("toy")
    config = DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), temperature=0.8, seed=5, max_new_tokens=12,
                          min_confidence=0.2)
    first, again = (engine.generate(pair, config, "the cat") for _ in range(2))
    assert first.generated_ids == again.generated_ids  # seeded: the same run
    sizes = {len(step.nodes) for step in first.steps}
    assert len(sizes) > 1  # the depth varies from step to step
    assert DecodeConfig.from_dict(config.to_dict()) == config and config.to_dict()["min_confidence"] == 0.2
    assert "min_confidence" not in config.with_(min_confidence=0.0).to_dict()  # old readers see no new key
    assert DecodeConfig.from_dict({"verifier": "sd", "branching": [1, 1]}).min_confidence == 0.0  # an old trace
    assert fixed_depth(config) == 0 and fixed_depth(config.with_(min_confidence=0.0)) == 4


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True, "0.3"])
def test_a_floor_that_is_not_a_probability_is_refused_in_one_line(bad):
    with pytest.raises(ValueError, match="minimum confidence is a probability"):
        DecodeConfig(verifier="sd", branching=(1, 1), min_confidence=bad)


def test_the_compare_view_stops_every_law_s_tree_at_the_same_floor():
    """compare/drafting.py drafts one tree per candidate law in one forest: each tree's nodes get children
    exactly where their path is sure enough, as in a run."""
    from decoding.compare.drafting import draft_forest

    floor = 0.1
    config = DecodeConfig(verifier="rrs_wor", branching=(2, 2, 1), temperature=0.8, min_confidence=floor)
    stopped = 0
    for seed in range(8):
        draft = toy.draft_session()
        draft.start(list(CONTEXT))
        drafted = draft_forest(draft, CONTEXT[-1], config, ["iid", "without_replacement"], make_generator(seed))
        assert drafted.forwards == draft.forwards <= 3
        for tree in drafted.trees:
            for node in range(1, len(tree)):
                if tree.depths[node] < 3:
                    assert (_confidence(tree, node) >= floor) == (not tree.is_leaf(node))
                    stopped += tree.is_leaf(node)
    assert stopped
