"""The story's draft event says when a node drew fewer candidates than its level's width because its q allows
no more tokens (laws.width: a prompt-lookup guess is one token); a tree drawn at full width says nothing."""

from __future__ import annotations

import pytest

from decoding.models.pairs import load_pair
from decoding.run import engine
from decoding.run.config import DecodeConfig
from ui import story
from viz.story import story_events

WHY = "only the tokens q allows"


@pytest.mark.parametrize("top_k,told", [(2, True), (0, False)])
def test_the_draft_event_says_when_q_narrowed_a_node(top_k, told):
    config = DecodeConfig(verifier="rrs_wor", branching=(3, 2), temperature=1.0, top_k=top_k, max_new_tokens=6,
                          seed=0)
    trace = engine.generate(load_pair("toy"), config, "the cat")
    about = story.about("rrs_wor", trace)
    assert about.widths == (3, 2)
    step = trace.steps[0]
    draft = story_events(step, about)[0]
    assert draft.kind == "draft" and (WHY in draft.text) == told
    assert (len(step.nodes[0].draws) == 2) == told  # the root drew 2 of 3: top-2 filtering leaves 2 tokens


def test_a_sequences_tree_has_no_widths_to_compare():
    config = DecodeConfig(verifier="spectr", sequences=3, depth=2, temperature=1.0, top_k=2, max_new_tokens=4, seed=0)
    trace = engine.generate(load_pair("toy"), config, "the cat")
    assert story.about("spectr", trace).widths == ()
