"""Oracle: the target's own greedy decoding (transformers' generate), and a check that a speculative greedy
output equals it.

Near-ties: the one-forward tree logits differ from step-by-step logits by ~1e-4 (docs/speed.md, "Tree attention"),
so a mismatch is tolerated only where the target's own top-1/top-2 logit gap is below NEAR_TIE.
"""

from __future__ import annotations

import torch

NEW_TOKENS = 40
NEAR_TIE = 1e-3
PROMPTS = ["What is the capital of France?", "def fibonacci(n):", "Give me a short recipe for pancakes."]


def greedy(pair, ids: list[int]) -> list[int]:
    with torch.no_grad():
        out = pair.target_model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                         do_sample=False, max_new_tokens=NEW_TOKENS, pad_token_id=min(pair.eos_ids))
    return out[0, len(ids):].tolist()


def gap_at(pair, ids: list[int]) -> float:
    with torch.no_grad():
        top = torch.topk(pair.target_model(torch.tensor([ids])).logits[0, -1].double(), 2).values
    return float(top[0] - top[1])


def assert_plain_greedy(pair, ids: list[int], got: list[int]) -> None:
    """`got` is the target's own greedy continuation of `ids`, up to a first difference at a near-tie."""
    expected = greedy(pair, ids)
    first = next((i for i in range(min(len(got), len(expected))) if got[i] != expected[i]), None)
    if first is None:
        assert len(got) == len(expected)
        return
    gap = gap_at(pair, ids + expected[:first])
    assert gap < NEAR_TIE, f"token {first} differs ({got[first]} vs {expected[first]}) at a logit gap of {gap:.4f}"
