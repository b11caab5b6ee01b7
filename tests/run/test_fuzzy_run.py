"""fuzzy through the engine (toy pair): the run uses the DecodeConfig's threshold, in the walk, in each
step's exact expected tokens and in the recorded per-node acceptance (not the registry's default)."""

from __future__ import annotations

import math

import pytest

from decoding.models import pairs as models
from decoding.run import engine
from decoding.run.config import DecodeConfig

CHAIN = (1, 1, 1)


@pytest.fixture(scope="module")
def toy():
    return models.load_pair("toy")


def _trace(toy, threshold: float):
    config = DecodeConfig(verifier="fuzzy", branching=CHAIN, temperature=1.0, seed=5, max_new_tokens=16,
                          fuzzy_threshold=threshold)
    return engine.generate(toy, config, "the cat")


def test_threshold_ln2_accepts_every_draft_and_zero_none(toy):
    every, none = _trace(toy, math.log(2)), _trace(toy, 0.0)
    assert every.steps and none.steps
    assert all(s.expected_tokens == pytest.approx(len(CHAIN) + 1) for s in every.steps)
    assert all(v.alpha_exact == 1.0 for s in every.steps for v in s.visits)
    assert all(len(s.accepted_path) == len(CHAIN) + 1 for s in every.steps[:-1])  # the last may stop at <eos>
    assert all(s.expected_tokens == pytest.approx(1.0) for s in none.steps)
    assert all(v.alpha_exact == 0.0 for s in none.steps for v in s.visits)
    assert all(len(s.accepted_path) == 1 for s in none.steps)
    assert every.config["fuzzy_threshold"] == math.log(2) and none.config["fuzzy_threshold"] == 0.0  # in the trace
