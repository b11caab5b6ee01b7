"""End to end: speculative sampling on the toy pair emits exactly the target's law.

For each lossless verifier, many seeded runs of 3 new tokens (recording off: the engine's fast
path); the empirical law of the 3-token outcome is compared with the toy target's exact joint law
(enumerated) by a chi-square test (cells with expected count < 5 pooled). A verifier passes at
p-value > 1e-4: with 6 verifiers the chance of a false alarm is below 1e-3. A deliberately broken
verifier (RRS without replacement applied to deterministic top-k candidates as if they had been
sampled, docs/verifiers.md §4 pitfall 4) must fail the same test.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
import torch

from decoding.models import pairs as models
from decoding.models import toy
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.verify.registry import VERIFIERS
from tests.engine_oracles import chi_square_pvalue, exact_joint, total_variation

RUNS = 3000
N_TOKENS = 3
PROMPT = "the cat"
SHAPES = {  # a shape each verifier allows, with duplicate-prone i.i.d. branching where it can
    "rrs": dict(branching=(3, 2)),
    "rrs_wor": dict(branching=(3, 2)),
    "spectr": dict(sequences=3, depth=2),
    "spechub": dict(branching=(2, 2)),
    "hu_greedy": dict(branching=(3, 2)),
    "pointmass": dict(branching=(3, 2)),
    "gls": dict(branching=(3, 2)),  # keyed exponentials per (seed, context): the sequence law is still p's
}


@pytest.fixture(scope="module")
def pair():
    return models.load_pair("toy")


def outcome_counts(pair, config: DecodeConfig, runs: int) -> Counter:
    counts: Counter = Counter()
    for seed in range(runs):
        trace = engine.generate(pair, replace(config, seed=seed), PROMPT)
        counts[tuple(trace.generated_ids[:N_TOKENS])] += 1
    return counts


def target_law(pair, temperature: float) -> dict:
    context = pair.encode_prompt(PROMPT, chat=False)
    return exact_joint(toy.toy_target_logits, context, N_TOKENS, temperature, pair.eos_ids)


@pytest.mark.parametrize("key", sorted(SHAPES))
def test_first_tokens_follow_the_target_law(pair, key):
    config = DecodeConfig(verifier=key, temperature=1.0, max_new_tokens=N_TOKENS, chat=False, record=False,
                          **SHAPES[key])
    counts = outcome_counts(pair, config, RUNS)
    law = target_law(pair, 1.0)
    pvalue = chi_square_pvalue(counts, law)
    assert pvalue > 1e-4, f"{key}: chi-square p={pvalue:.2e}, TV={total_variation(counts, law):.3f}"


def test_a_broken_verifier_fails_the_same_test(pair, monkeypatch):
    # The verification rule is untouched; only the drafting is the common bug: deterministic top-k
    # children, verified as if they had been sampled without replacement from q.
    broken = replace(VERIFIERS["rrs_wor"], name="broken_rrs", law="topk")
    monkeypatch.setitem(VERIFIERS, "broken_rrs", broken)
    config = DecodeConfig(verifier="broken_rrs", temperature=1.0, max_new_tokens=N_TOKENS, chat=False,
                          record=False, branching=(3, 2))
    counts = outcome_counts(pair, config, RUNS)
    law = target_law(pair, 1.0)
    pvalue = chi_square_pvalue(counts, law)
    assert pvalue < 1e-6, f"the broken verifier passed: p={pvalue:.2e}, TV={total_variation(counts, law):.3f}"


def test_the_toy_draft_differs_from_the_target(pair):
    """Otherwise every verifier would accept everything and the tests above would prove nothing."""
    context = pair.encode_prompt(PROMPT, chat=False)
    p = torch.softmax(toy.toy_target_logits(context).double(), -1)
    q = torch.softmax(toy.toy_draft_logits(context).double(), -1)
    tv = 0.5 * float((p - q).abs().sum())
    assert 0.1 < tv < 0.6


FLOORED = {  # trees that stop where the draft is unsure of its path (DecodeConfig.min_confidence)
    "sd": dict(branching=(1, 1, 1), min_confidence=0.2),
    "rrs_wor": dict(branching=(2, 2), min_confidence=0.15),
    "spectr": dict(sequences=3, depth=2, min_confidence=0.2),
}


@pytest.mark.parametrize("key", sorted(FLOORED))
def test_trees_that_stop_at_a_minimum_confidence_follow_the_target_law(pair, key):
    """The engine's own drafting with a floor (run/confidence.py; the rule's exact enumeration is in
    tests/lab/test_ragged_trees.py): the same chi-square test, and the floor really cut some trees."""
    config = DecodeConfig(verifier=key, temperature=1.0, max_new_tokens=N_TOKENS, chat=False, record=False,
                          **FLOORED[key])
    counts = outcome_counts(pair, config, RUNS)
    law = target_law(pair, 1.0)
    pvalue = chi_square_pvalue(counts, law)
    assert pvalue > 1e-4, f"{key}: chi-square p={pvalue:.2e}, TV={total_variation(counts, law):.3f}"
    sizes = {len(step.nodes) for seed in range(20)
             for step in engine.generate(pair, replace(config, seed=seed, record=True), PROMPT).steps}
    assert len(sizes) > 1  # trees of several sizes: the floor stopped some
