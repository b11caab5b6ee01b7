"""Step bookkeeping: one target forward per step, at most depth-many draft forwards, emitted tokens that
add up to the generated ids, reproducibility from the seed, and resume-from-plain-state."""

from __future__ import annotations

from dataclasses import replace

import pytest

from decoding.models import pairs as models
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.run.schema import BONUS, DRAFT, RESIDUAL, RESIDUAL_HIT, step_from_dict, step_to_dict

CONFIGS = [
    DecodeConfig(verifier="rrs_wor", branching=(3, 2, 2), temperature=1.0, max_new_tokens=20, chat=False),
    DecodeConfig(verifier="spectr", sequences=4, depth=3, temperature=0.7, max_new_tokens=20, chat=False),
    DecodeConfig(verifier="spechub", branching=(2, 2), temperature=1.0, max_new_tokens=20, chat=False),
    DecodeConfig(verifier="hu_greedy", branching=(3, 1), temperature=1.0, max_new_tokens=20, chat=False),
    DecodeConfig(verifier="greedy", branching=(2, 2, 2), temperature=0.0, max_new_tokens=20, chat=False),
    DecodeConfig(verifier="sd", branching=(1, 1, 1), temperature=1.0, top_k=5, top_p=0.9, max_new_tokens=20,
                 chat=False),
]


@pytest.fixture(scope="module", params=["toy", "tiny-llama"])
def pair(request, tiny_matching_folders):
    if request.param == "toy":
        return models.load_pair("toy")
    target, draft = tiny_matching_folders
    return models.load_pair("custom", target=str(target), draft=str(draft), device="cpu")


def prompt_for(pair) -> str:
    return "the cat" if pair.describe()["kind"] == "toy" else "a b c"


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.verifier}-{c.shape_text()}")
def test_every_step_costs_one_target_forward(pair, config):
    trace = engine.generate(pair, config, prompt_for(pair))
    assert trace.steps
    for step in trace.steps:
        assert step.target_forwards == 1
        assert 1 <= step.draft_forwards <= config.tree_depth or pair.describe()["kind"] == "lookup"
        kinds = [e.kind for e in step.emitted]
        assert all(k in (DRAFT, RESIDUAL_HIT) for k in kinds[:-1])
        assert len(step.emitted) <= len(step.accepted_path)  # accepted drafts + 1 final token, maybe truncated
        if kinds[-1] in (RESIDUAL, BONUS):
            assert len(step.emitted) == len(step.accepted_path)
    emitted = [e.token for s in trace.steps for e in s.emitted]
    assert tuple(emitted) == trace.generated_ids
    assert trace.summary.target_forwards == len(trace.steps)


def test_same_seed_same_trace_and_records_round_trip(pair):
    config = CONFIGS[0]
    a = engine.generate(pair, config, prompt_for(pair))
    b = engine.generate(pair, config, prompt_for(pair))
    assert a.generated_ids == b.generated_ids
    for s in a.steps:
        assert step_from_dict(step_to_dict(s)) == s
    c = engine.generate(pair, replace(config, seed=config.seed + 1), prompt_for(pair))
    assert [s.nodes for s in c.steps] != [s.nodes for s in a.steps]


def test_resume_from_plain_state_continues_the_same_run(pair):
    """Step-by-step in the app rebuilds the run from plain state each time: same tokens as one run."""
    config = CONFIGS[1]
    whole = engine.generate(pair, config, prompt_for(pair))
    run = engine.start(pair, config, prompt_for(pair))
    run.step()
    state = run.state
    for _ in range(200):
        run = engine.resume(pair, state)
        if run.step() is None:
            break
        state = run.state
    assert state.generated_ids == whole.generated_ids
