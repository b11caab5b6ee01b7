"""(slow) The embedded-fast pair: loads offline from the embedded cache, its draft gives q = 0 beyond the
truncated head, and speculative greedy decoding with it reproduces the target's own greedy decoding.

Near-ties: the one-forward tree logits differ from step-by-step logits by ~1e-4 (docs/speed.md, "Tree attention"), so
a mismatch is tolerated only where the target's own top-1/top-2 logit gap is below NEAR_TIE.
"""

from __future__ import annotations

import pytest
import torch

from decoding.models import pairs as models
from decoding.models.target import score_tree
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.verify.tree import DraftTree

pytestmark = pytest.mark.slow

NEW_TOKENS = 40
NEAR_TIE = 1e-3
PROMPTS = ["What is the capital of France?", "def fibonacci(n):", "Give me a short recipe for pancakes."]


@pytest.fixture(scope="module")
def pair():
    return models.load_pair("embedded-fast", device="cpu")


def test_the_fast_draft_scores_only_its_head(pair):
    assert pair.kind == "embedded-fast" and pair.vocab_size == 49152
    ids = pair.encode_prompt(PROMPTS[0], chat=True)
    draft, target = pair.draft_session(), pair.target_session()
    draft.start(ids)
    target.start(ids)
    q_logits = score_tree(draft, DraftTree.root(ids[-1]))[0]  # [V]
    p_logits = score_tree(target, DraftTree.root(ids[-1]))[0]  # [V]
    head = models.FAST_HEAD_SIZE
    assert bool(torch.isneginf(q_logits[head:]).all()) and bool(torch.isfinite(q_logits[:head]).all())
    assert bool(torch.isfinite(p_logits).all())  # the target keeps the whole vocabulary
    assert int(q_logits.argmax()) == int(p_logits.argmax())


def greedy(pair, ids: list[int]) -> list[int]:
    with torch.no_grad():
        out = pair.target_model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                         do_sample=False, max_new_tokens=NEW_TOKENS, pad_token_id=min(pair.eos_ids))
    return out[0, len(ids):].tolist()


def gap_at(pair, ids: list[int]) -> float:
    with torch.no_grad():
        top = torch.topk(pair.target_model(torch.tensor([ids])).logits[0, -1].double(), 2).values
    return float(top[0] - top[1])


@pytest.mark.parametrize("prompt", PROMPTS)
def test_speculative_greedy_equals_plain_greedy(pair, prompt):
    config = DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), temperature=0.0, max_new_tokens=NEW_TOKENS,
                          record=False)
    ids = pair.encode_prompt(prompt, chat=True)
    assert_plain_greedy(pair, ids, list(engine.generate(pair, config, prompt).generated_ids))


def assert_plain_greedy(pair, ids: list[int], got: list[int]) -> None:
    """`got` is the target's own greedy continuation of `ids`, up to a first difference at a near-tie."""
    expected = greedy(pair, ids)
    first = next((i for i in range(min(len(got), len(expected))) if got[i] != expected[i]), None)
    if first is None:
        assert len(got) == len(expected)
        return
    gap = gap_at(pair, ids + expected[:first])
    assert gap < NEAR_TIE, f"token {first} differs ({got[first]} vs {expected[first]}) at a logit gap of {gap:.4f}"
