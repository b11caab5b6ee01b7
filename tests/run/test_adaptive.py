"""Adaptive chain length (DecodeConfig.adaptive): the policy follows past acceptance, the run really varies
its chain, and it stays lossless (target law at T = 1, plain greedy output at T = 0) on the toy pair."""

from __future__ import annotations

import pytest

from decoding.models import pairs as models
from decoding.run import adaptive, engine
from decoding.run.config import DecodeConfig
from tests.engine_oracles import chi_square_pvalue, total_variation
from tests.run.test_engine_lossless import N_TOKENS, PROMPT, RUNS, outcome_counts, target_law

CHAIN = DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), adaptive=True, chat=False)


@pytest.fixture(scope="module")
def pair():
    return models.load_pair("toy")


def test_the_length_grows_with_past_acceptance():
    lengths = [adaptive.chain_length(adaptive.ChainStats(tested=100, accepted=a), 8) for a in (10, 60, 85, 95, 99)]
    assert lengths == sorted(lengths) and lengths[0] == 1 and lengths[-1] == 8
    assert adaptive.chain_length(adaptive.ChainStats(), 1) == 1


def test_a_run_changes_its_chain_length_from_step_to_step(pair):
    trace = engine.generate(pair, CHAIN.with_(temperature=1.0, max_new_tokens=60, seed=0), PROMPT)
    depths = {max(n.depth for n in s.nodes) for s in trace.steps}
    assert len(depths) > 1 and depths <= {1, 2, 3, 4}


def test_adaptive_greedy_equals_plain_greedy(pair):
    config = CHAIN.with_(temperature=0.0, max_new_tokens=30)
    trace = engine.generate(pair, config, PROMPT)
    plain = engine.baseline(pair, pair.encode_prompt(PROMPT, False), 30, config)
    assert trace.generated_ids == plain.ids


def test_adaptive_sampling_follows_the_target_law(pair):
    config = CHAIN.with_(temperature=1.0, max_new_tokens=N_TOKENS, record=False)
    counts = outcome_counts(pair, config, RUNS)
    law = target_law(pair, 1.0)
    pvalue = chi_square_pvalue(counts, law)
    assert pvalue > 1e-4, f"chi-square p={pvalue:.2e}, TV={total_variation(counts, law):.3f}"


def test_adaptive_needs_a_chain():
    with pytest.raises(ValueError, match="needs a chain"):
        DecodeConfig(verifier="rrs", branching=(2, 1), adaptive=True)
