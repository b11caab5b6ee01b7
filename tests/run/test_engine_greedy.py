"""At temperature 0, speculative decoding on the embedded pair reproduces the target's own greedy
decoding (`generate(do_sample=False)`) token for token.

Near-ties: the one-forward tree logits differ from step-by-step logits by ~1e-4 (docs/speed.md, "Tree attention"),
so a top-1/top-2 gap below NEAR_TIE could legitimately flip a token. On a mismatch the test measures
the target's own logit gap at that position (plain forward): the run is accepted up to that point only
if the gap is a near-tie, and at most one such prompt is tolerated; any other mismatch fails.
"""

from __future__ import annotations

import pytest
import torch

from decoding.fastest import FASTEST
from decoding.models import pairs as models
from decoding.run import engine
from decoding.run.config import Branching, DecodeConfig

pytestmark = pytest.mark.slow

NEW_TOKENS = 64
NEAR_TIE = 1e-3
PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about autumn leaves.",
    "Explain photosynthesis to a ten-year-old.",
    "List three prime numbers and say why they are prime.",
    "Translate 'good morning' into Spanish and German.",
    "def fibonacci(n):",
    "Give me a short recipe for pancakes.",
    "Why is the sky blue?",
]
CONFIGS = {
    "chain/sd": DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), temperature=0.0, max_new_tokens=NEW_TOKENS),
    "3,2,2/rrs_wor": DecodeConfig(verifier="rrs_wor", branching=(3, 2, 2), temperature=0.0,
                                  max_new_tokens=NEW_TOKENS),
    "3,2,2/greedy": DecodeConfig(verifier="greedy", branching=(3, 2, 2), temperature=0.0,
                                 max_new_tokens=NEW_TOKENS),
    "4x4 seqs/spectr": DecodeConfig(verifier="spectr", sequences=4, depth=4, temperature=0.0,
                                    max_new_tokens=NEW_TOKENS),
}


@pytest.fixture(scope="module")
def pair():
    return models.load_pair("embedded")


@pytest.fixture(scope="module")
def reference(pair):
    """The target's own greedy continuation of every prompt."""
    out = {}
    model = pair.target_model
    for prompt in PROMPTS:
        ids = pair.encode_prompt(prompt, chat=True)
        with torch.no_grad():
            gen = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                 do_sample=False, max_new_tokens=NEW_TOKENS, pad_token_id=min(pair.eos_ids))
        out[prompt] = (ids, gen[0, len(ids):].tolist())
    return out


def gap_at(pair, ids: list[int]) -> float:
    """Top-1 minus top-2 logit of the target after `ids`, by a plain forward."""
    with torch.no_grad():
        logits = pair.target_model(torch.tensor([ids])).logits[0, -1].double()
    top = torch.topk(logits, 2).values
    return float(top[0] - top[1])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_speculative_greedy_equals_plain_greedy(pair, reference, name):
    assert_greedy_matches(pair, CONFIGS[name], reference, name)


def test_the_fastest_configuration_is_plain_greedy_too(pair, reference):
    """FASTEST (the embedded-head pair: the trained draft head on the target's features, a chain of two)."""
    kind, config = FASTEST
    fastest = models.load_pair(kind)
    assert fastest.target_model is pair.target_model  # the same target: the same reference
    assert_greedy_matches(fastest, config.with_(max_new_tokens=NEW_TOKENS), reference, "FASTEST")


def test_fastest_with_every_few_row_product_is_plain_greedy_too(pair, reference):
    """The product plan (models/few_rows.py) on every product of the lean target, non-stock methods on
    alternate row counts and small row counts run as larger ones (zero rows added): still the target's greedy
    output (p is the same product up to rounding). numpy's
    products are checked on a tiny model (tests/models/test_few_rows.py): on the real one its spinning
    threads make a forward several times slower on a 2-core machine."""
    from decoding.models.lean.few_rows import PlannedProjection, apply_plan, available_products
    from decoding.speed.calibrate import lean_target_of

    kind, config = FASTEST
    fastest = models.load_pair(kind)
    lean = lean_target_of(fastest)
    methods = [m for m in available_products() if m not in ("stock", "numpy")]
    apply_plan(lean, {n: methods[n % len(methods)] for n in range(1, 10)}, pad={1: 4, 2: 4, 3: 6, 5: 8})
    try:
        assert isinstance(lean.head, PlannedProjection) and lean.head.pad == {1: 4, 2: 4, 3: 6, 5: 8}
        assert_greedy_matches(fastest, config.with_(max_new_tokens=NEW_TOKENS), reference, "FASTEST, planned")
    finally:
        apply_plan(lean, {})


def test_the_native_product_is_plain_greedy_too(pair, reference):
    """The compiled product (models/native_rows.py) on every product of the lean target, as a calibration on
    one thread chooses it (1-7 rows; 7 rows are a block of 6 and one row): the target's greedy output."""
    from decoding.models.lean import native_rows
    from decoding.models.lean.few_rows import apply_plan
    from decoding.speed.calibrate import lean_target_of

    if not native_rows.available():
        pytest.skip(f"no native product here: {native_rows.why_unavailable()}")
    kind, config = FASTEST
    fastest = models.load_pair(kind)
    lean = lean_target_of(fastest)
    apply_plan(lean, {n: "native" for n in range(1, 10)})
    try:
        assert_greedy_matches(fastest, config.with_(max_new_tokens=NEW_TOKENS), reference, "FASTEST, native")
        chain = config.with_(max_new_tokens=NEW_TOKENS, shape=Branching((1,) * 6))  # 7 rows a verify
        assert_greedy_matches(fastest, chain, reference, "a chain of 6, native")
    finally:
        apply_plan(lean, {})


def assert_greedy_matches(pair, config: DecodeConfig, reference: dict, name: str) -> None:
    near_ties = []
    for prompt in PROMPTS:
        ids, expected = reference[prompt]
        got = list(engine.generate(pair, config, prompt).generated_ids)
        n = min(len(got), len(expected))
        first = next((i for i in range(n) if got[i] != expected[i]), None)
        if first is None:
            assert len(got) == len(expected), f"{name} / {prompt!r}: length {len(got)} vs {len(expected)}"
            continue
        gap = gap_at(pair, ids + expected[:first])
        assert gap < NEAR_TIE, f"{name} / {prompt!r}: token {first} differs with a clear logit gap {gap:.4f}"
        near_ties.append((prompt, first, gap))
    assert len(near_ties) <= 1, f"{name}: too many near-ties {near_ties}"
