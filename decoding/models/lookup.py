"""A model-free drafter: prompt lookup (trailing n-gram match in the context), as a TreeLM.

q(. | context) is the empirical law of the tokens that followed the EARLIER occurrences of the
context's longest trailing n-gram, trying n = 3, then 2 (context = prompt + generated + the tree
path). Without such a match the drafter has no guess: its row is -inf everywhere and the node stays
a leaf (treelm.proposes), so a step with nothing to look up is a plain one-row target step instead of
a two-row verify of a guess that almost never holds. Measured on the 12 prompts of
assets/bench_prompts.json (60 tokens each, the embedded target): the target's next token is the
lookup's top guess at 60-79 % of the positions with a 3- or 2-gram match, at 6-26 % with only a
1-gram match and never without one (so unigram matches are not used).
Logits are log-frequencies (-inf where the count is 0), so the shared warp turns them into q; it
costs no model forward.
"""

from __future__ import annotations

import torch

from decoding.models.treelm import ContextTreeLM

NGRAM_SIZES = (3, 2)  # longest first; a 1-gram match guesses right too rarely to pay a verify row


def next_counts(context_ids: list[int], vocab_size: int) -> torch.Tensor:
    """[V] counts of the tokens that followed earlier occurrences of the longest matching trailing n-gram
    (all zero without a match)."""
    ids = torch.tensor(context_ids, dtype=torch.long)
    for n in NGRAM_SIZES:
        if len(ids) <= n:
            continue
        windows = ids[:-1].unfold(0, n, 1)  # [L - n, n]: the window starting at i is followed by ids[i + n]
        hits = (windows == ids[-n:]).all(dim=1)  # [L - n]
        if bool(hits.any()):
            return torch.bincount(ids[n:][hits], minlength=vocab_size)[:vocab_size].to(torch.float32)
    return torch.zeros(vocab_size)  # no match: no guess


def lookup_logits(context_ids: list[int], vocab_size: int) -> torch.Tensor:
    """[V] float32 log-frequencies of the prompt-lookup law (-inf for tokens never seen after the match;
    -inf everywhere without a match: no guess)."""
    return torch.log(next_counts(context_ids, vocab_size))


def lookup_session(vocab_size: int) -> ContextTreeLM:
    """A fresh prompt-lookup drafter; its `forwards` stays 0."""
    return ContextTreeLM(lambda ids: lookup_logits(ids, vocab_size), vocab_size, counts_forwards=False)
