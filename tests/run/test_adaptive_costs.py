"""DecodeConfig.adaptive with calibrated costs (DecodeConfig.costs): the chain length follows the costs, the
costs travel in the config and the trace, and a run replayed from its trace's config is the same run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from decoding.models import pairs as models
from decoding.run import adaptive, engine
from decoding.run.config import DecodeConfig
from decoding.run.costs import StepCosts
from decoding.run.schema import trace_from_json, trace_to_json

PROMPT = "the cat"
CHEAP_DRAFT = StepCosts(target=((1, 20.0), (9, 21.0)), draft=((1, 0.5),), overhead=0.2)  # a GPU-like machine
DEAR_DRAFT = StepCosts(target=((1, 20.0), (2, 40.0), (9, 180.0)), draft=((1, 15.0),), overhead=0.2)  # a slow CPU
CHAIN = DecodeConfig(verifier="sd", branching=(1,) * 6, adaptive=True, chat=False, temperature=1.0,
                     max_new_tokens=40, seed=3)


@pytest.fixture(scope="module")
def pair():
    return models.load_pair("toy")


def depths(trace) -> list[int]:
    return [max(n.depth for n in s.nodes) for s in trace.steps]


def test_the_length_follows_the_costs():
    seen = adaptive.ChainStats(tested=100, accepted=80)
    assert adaptive.chain_length(seen, 6, CHEAP_DRAFT) == 6  # drafting is free: draft all the chain
    assert adaptive.chain_length(seen, 6, DEAR_DRAFT) == 0  # every drafted row costs a forward: the target alone
    assert adaptive.chain_length(adaptive.ChainStats(), 6) >= 1  # without costs: the fixed constants, 1..6


def test_the_costs_travel_in_the_config_and_the_trace(pair):
    config = CHAIN.with_(costs=CHEAP_DRAFT)
    assert DecodeConfig.from_dict(config.to_dict()) == config
    trace = trace_from_json(trace_to_json(engine.generate(pair, config, PROMPT)))
    assert DecodeConfig.from_dict(trace.config) == config
    assert "costs" not in CHAIN.to_dict() and "drafting" not in CHAIN.to_dict()  # old traces: no new keys


def test_a_run_replayed_from_its_trace_is_the_same_run(pair):
    first = engine.generate(pair, CHAIN.with_(costs=CHEAP_DRAFT), PROMPT)
    replay = engine.generate(pair, DecodeConfig.from_dict(trace_from_json(trace_to_json(first)).config), PROMPT)
    assert replay.generated_ids == first.generated_ids and depths(replay) == depths(first)
    assert max(depths(first)) > 1


def test_other_costs_make_another_run(pair):
    cheap = engine.generate(pair, CHAIN.with_(costs=CHEAP_DRAFT), PROMPT)
    dear = engine.generate(pair, CHAIN.with_(costs=DEAR_DRAFT), PROMPT)
    assert set(depths(dear)) == {0}  # the target alone every step: drafting never pays at these costs
    assert depths(cheap) != depths(dear)


def test_not_drafting_is_plain_decoding(pair):
    config = DecodeConfig(verifier="sd", branching=(1,), drafting=False, chat=False, temperature=0.0,
                          max_new_tokens=20)
    trace = engine.generate(pair, config, PROMPT)
    plain = engine.baseline(pair, pair.encode_prompt(PROMPT, False), 20, config)
    assert trace.generated_ids == plain.ids
    assert all(len(s.nodes) == 1 and s.draft_forwards == 0 for s in trace.steps)


def test_a_run_that_never_drafts_never_opens_the_pairs_draft(pair):
    """The pair's draft would prefill the prompt for nothing (the int8 self-draft's prefill cost a target-alone
    run 5 %): a drafting=False run follows the context without it, and emits plain decoding's tokens."""
    def refused(*args):
        raise AssertionError("the draft was opened")

    config = DecodeConfig(verifier="sd", branching=(1,), drafting=False, chat=False, temperature=0.8, seed=4,
                          max_new_tokens=12)
    trace = engine.generate(replace(pair, new_draft=refused), config, PROMPT)
    assert trace.generated_ids == engine.baseline(pair, pair.encode_prompt(PROMPT, False), 12, config).ids


def test_bad_costs_in_a_trace_are_one_message():
    with pytest.raises(ValueError, match="costs"):
        DecodeConfig.from_dict({**CHAIN.to_dict(), "costs": {"target": [[0, "x"]]}})
    with pytest.raises(ValueError, match="costs"):
        DecodeConfig.from_dict({**CHAIN.to_dict(), "costs": [1, 2]})
