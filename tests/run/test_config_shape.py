"""DecodeConfig's draft shape is a type (Branching or Sequences); old keywords and old trace dicts still load."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from decoding.run.config import Branching, DecodeConfig, Sequences

CONFIGS = (  # one of each shape and kind of verifier, for the round trip
    DecodeConfig(verifier="sd", shape=Branching((1, 1, 1, 1))),
    DecodeConfig(verifier="rrs_wor", shape=Branching((3, 2, 2))),
    DecodeConfig(verifier="spectr", shape=Sequences(4, 4)),
    DecodeConfig(verifier="greedy", temperature=0.0),
    DecodeConfig(verifier="block", shape=Branching((1, 1, 1))),
)


def test_shapes_describe_the_tree():
    tree = DecodeConfig(verifier="rrs_wor", shape=Branching((3, 2, 2)))
    seqs = DecodeConfig(verifier="spectr", shape=Sequences(4, 3))
    assert tree.level_widths == (3, 2, 2) and tree.tree_depth == 3 and tree.max_tree_nodes == 3 + 6 + 12
    assert seqs.level_widths == (4, 4, 4) and seqs.tree_depth == 3 and seqs.max_tree_nodes == 12
    assert tree.shape_text() == "3,2,2" and seqs.shape_text() == "4 sequences x depth 3"


def test_old_keywords_build_the_same_shape():
    new = DecodeConfig(verifier="spectr", shape=Sequences(4, 3))
    assert DecodeConfig(verifier="spectr", sequences=4, depth=3) == new
    assert DecodeConfig(verifier="spectr", branching=(1,), sequences=4, depth=3).shape == Sequences(4, 3)
    assert DecodeConfig(branching=(2, 2)).shape == Branching((2, 2))
    assert replace(DecodeConfig(branching=(2, 2)), seed=3).shape == Branching((2, 2))  # replace keeps the shape


def test_old_trace_dicts_load_and_new_dicts_round_trip():
    old_tree = {"verifier": "rrs", "branching": [3, 2], "sequences": 0, "depth": 0, "temperature": 1.0, "top_k": 0,
                "top_p": 1.0, "seed": 7, "max_new_tokens": 12, "chat": False, "top_n": 8, "record": True}
    old_seqs = {**old_tree, "verifier": "spectr", "branching": [1], "sequences": 4, "depth": 2}
    assert DecodeConfig.from_dict(old_tree).shape == Branching((3, 2))
    assert DecodeConfig.from_dict(old_seqs).shape == Sequences(4, 2)
    assert DecodeConfig.from_dict({"verifier": "sd", "branching": [1, 1]}).seed == 0  # missing keys: defaults
    for config in [*CONFIGS, DecodeConfig.from_dict(old_seqs)]:
        d = json.loads(json.dumps(config.to_dict()))
        assert set(d) >= {"branching", "sequences", "depth"}  # the JSON keeps its flat keys
        assert DecodeConfig.from_dict(d) == config


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(shape=Branching(())), "at least one level"),
        (dict(shape=Branching((3, 0))), "between 1 and"),
        (dict(verifier="spectr", shape=Sequences(4, 0)), "--depth >= 1"),
        (dict(verifier="rrs_wor", shape=Sequences(4, 2)), "i.i.d."),
        (dict(shape=(3, 2, 2)), "Branching(levels) or Sequences(k, depth)"),
        (dict(shape=Branching((2,)), branching=(2,)), "give the draft shape once"),
    ],
)
def test_bad_shapes_give_one_clear_message(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        DecodeConfig(**kwargs)
