"""End to end: speculative sampling on the toy pair emits exactly the target's law.

For each lossless verifier, many seeded runs of 3 new tokens; the empirical law of the 3-token
outcome is compared with the toy target's exact joint law (enumerated) by a chi-square test
(cells with expected count < 5 pooled). A verifier passes at p-value > 1e-4: with 6 verifiers the
chance of a false alarm is below 1e-3. A deliberately broken verifier (RRS that skips the residual
update of a duplicate candidate, VERIFIERS.md §3 pitfall 1) must fail the same test.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
import torch

from decoding import engine, models, toy
from decoding.config import DecodeConfig
from decoding.sampling import draw, normalise, positive_part, uniform
from decoding.verdict import AcceptTest, NodeVerdict
from decoding.verifiers import VERIFIERS
from tests.engine_oracles import chi_square_pvalue, exact_joint, total_variation

RUNS = 2500
N_TOKENS = 3
PROMPT = "the cat"
SHAPES = {  # a shape each verifier allows, with duplicate-prone i.i.d. branching where it can
    "rrs": dict(branching=(3, 2)),
    "rrs_wor": dict(branching=(3, 2)),
    "spectr": dict(sequences=3, depth=2),
    "spechub": dict(branching=(2, 2)),
    "hu_greedy": dict(branching=(3, 2)),
    "pointmass": dict(branching=(3, 2)),
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
    config = DecodeConfig(verifier=key, temperature=1.0, max_new_tokens=N_TOKENS, chat=False, **SHAPES[key])
    counts = outcome_counts(pair, config, RUNS)
    law = target_law(pair, 1.0)
    pvalue = chi_square_pvalue(counts, law)
    assert pvalue > 1e-4, f"{key}: chi-square p={pvalue:.2e}, TV={total_variation(counts, law):.3f}"


def skip_duplicates_verify(p, q, candidates, generator) -> NodeVerdict:
    """BROKEN on purpose: RRS that skips a candidate token it has already tested (no residual update)."""
    r, seen, tests = p.to(torch.float64), set(), []
    for i, x in enumerate(candidates):
        if x in seen:
            continue
        seen.add(x)
        u = uniform(generator)
        threshold = min(1.0, float(r[x] / q[x])) if q[x] > 0 else 0.0
        tests.append(AcceptTest(i, x, float(r[x]), float(q[x]), threshold, u, u <= threshold))
        if u <= threshold:
            return NodeVerdict(accepted=i, token=x, tests=tuple(tests))
        r = normalise(positive_part(r - q), fallback=r)
    return NodeVerdict(accepted=None, token=draw(r, generator), tests=tuple(tests), residual=r)


def test_a_broken_verifier_fails_the_same_test(pair, monkeypatch):
    broken = replace(VERIFIERS["rrs"], name="broken_rrs", verify=skip_duplicates_verify)
    monkeypatch.setitem(VERIFIERS, "broken_rrs", broken)
    config = DecodeConfig(verifier="broken_rrs", temperature=1.0, max_new_tokens=N_TOKENS, chat=False,
                          branching=(3, 2))
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
