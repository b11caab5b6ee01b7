"""Tree-level verifiers run through the engine like any verifier (toy pair): one target forward per
step, exact expected tokens from their step law, their story recorded and shown, JSON round trip."""

from __future__ import annotations

import json

import pytest

from decoding.models import pairs as models
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.run.schema import REJECTED, step_from_dict, step_to_dict, trace_from_json, trace_to_json
from viz import node_figure as inspector

SHAPES = {"block": (1, 1, 1), "traversal": (2, 2), "typical_medusa": (2, 2), "hsd": (1, 1, 1),
          "hsd_lossless": (1, 1, 1)}


@pytest.fixture(scope="module")
def toy():
    return models.load_pair("toy")


@pytest.mark.parametrize("key", list(SHAPES))
def test_tree_level_verifier_runs_and_records_its_story(toy, key):
    config = DecodeConfig(verifier=key, branching=SHAPES[key], temperature=1.0, seed=3, max_new_tokens=12)
    trace = engine.generate(toy, config, "the cat")
    assert trace.steps and all(s.target_forwards == 1 for s in trace.steps)
    for step in trace.steps:
        assert step.tree_events and step.tree_events[-1].kind == "emit"
        if len(step.emitted) == len(step.accepted_path):  # not cut at <eos> or the token budget
            assert step.tree_events[-1].token == step.emitted[-1].token
        assert 1.0 <= step.expected_tokens <= len(SHAPES[key]) + 1
        assert step_from_dict(json.loads(json.dumps(step_to_dict(step)))) == step
        rows = inspector.tests_table(step, step.accepted_path[-1])
        assert len(rows) == len(step.tree_events) and any(str(r[0]).startswith("▶") for r in rows)
        inspector.node_figure(step, step.accepted_path[-1])
        if key == "traversal":
            deleted = {e.node for e in step.tree_events if e.kind == "delete"}
            assert deleted == {n.id for n in step.nodes if n.status == REJECTED}
    assert trace_from_json(trace_to_json(trace)) == trace


def test_hsd_story_rows_name_each_ratio_coin_and_the_whole_draft_test(toy):
    from viz.tree_story import story_rows

    trace = engine.generate(toy, DecodeConfig(verifier="hsd", branching=(1, 1, 1), seed=5, max_new_tokens=12),
                            "the cat")
    full = [s for s in trace.steps if len(s.nodes) == 4]  # whole chains (not cut by a missing guess)
    assert full
    for step in full:
        names = [row[0].lstrip("▶ ") for row in story_rows(step)]
        assert names == ["prefix ratio r_k = P/Q"] * 3 + ["step-back coin (position)"] * 3 + [
            "whole-draft coin", "tau = last pass", "emit"]


def test_block_on_a_tree_is_refused_by_the_config():
    with pytest.raises(ValueError, match="one draft chain"):
        DecodeConfig(verifier="block", branching=(2, 2))
    with pytest.raises(ValueError, match="without_replacement"):
        DecodeConfig(verifier="traversal", sequences=2, depth=2)


def test_a_trace_written_before_tree_events_still_loads(toy):
    trace = engine.generate(toy, DecodeConfig(verifier="sd", branching=(1, 1), max_new_tokens=4), "the cat")
    body = json.loads(trace_to_json(trace))
    for step in body["steps"]:
        del step["tree_events"]
    old = trace_from_json(json.dumps(body))
    assert old == trace and all(s.tree_events == () for s in old.steps)
