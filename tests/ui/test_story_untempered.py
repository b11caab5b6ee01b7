"""The story of a top-k tree at temperature 0 says why its q is not one-hot: the draft ranks by its untempered
law there (laws.draft_temperature). Only then: a sampling law at T = 0, or a top-k law above it, says nothing."""

from __future__ import annotations

import pytest

from decoding.models.pairs import load_pair
from decoding.run import engine
from decoding.run.config import DecodeConfig
from ui import story
from viz.story import story_events

WHY = "q here is its untempered law"


@pytest.mark.parametrize("verifier,temperature,told", [("pointmass", 0.0, True), ("greedy", 0.0, True),
                                                       ("rrs_wor", 0.0, False), ("pointmass", 0.8, False)])
def test_the_draft_event_says_when_q_is_the_untempered_law(verifier, temperature, told):
    config = DecodeConfig(verifier=verifier, branching=(3, 1), temperature=temperature, max_new_tokens=8, seed=0)
    trace = engine.generate(load_pair("toy"), config, "the cat")
    about = story.about(verifier, trace)
    assert about.untempered == told
    draft = story_events(trace.steps[0], about)[0]
    assert draft.kind == "draft" and (WHY in draft.text) == told
