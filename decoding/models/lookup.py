"""A model-free drafter: prompt lookup (trailing n-gram match in the context), as a TreeLM.

q(. | context) is the empirical law of the tokens that followed the EARLIER occurrences of the
context's longest trailing n-gram, trying n = 3, then 2, then 1 (context = prompt + generated +
the tree path). With no earlier occurrence at all, q is a one-hot on the most recent token
(repeating it is the cheapest guess, and it keeps q a proper law). Logits are log-frequencies
(-inf where the count is 0), so the shared warp turns them into q; it costs no model forward.
"""

from __future__ import annotations

import torch

from decoding.models.treelm import ContextTreeLM

NGRAM_SIZES = (3, 2, 1)


def next_counts(context_ids: list[int], vocab_size: int) -> torch.Tensor:
    """[V] counts of the tokens that followed earlier occurrences of the longest matching trailing n-gram."""
    ids = torch.tensor(context_ids, dtype=torch.long)
    for n in NGRAM_SIZES:
        if len(ids) <= n:
            continue
        windows = ids[:-1].unfold(0, n, 1)  # [L - n, n]: the window starting at i is followed by ids[i + n]
        hits = (windows == ids[-n:]).all(dim=1)  # [L - n]
        if bool(hits.any()):
            return torch.bincount(ids[n:][hits], minlength=vocab_size)[:vocab_size].to(torch.float32)
    counts = torch.zeros(vocab_size)
    counts[int(ids[-1])] = 1.0
    return counts


def lookup_logits(context_ids: list[int], vocab_size: int) -> torch.Tensor:
    """[V] float32 log-frequencies of the prompt-lookup law (-inf for tokens never seen after the match)."""
    return torch.log(next_counts(context_ids, vocab_size))


def lookup_session(vocab_size: int) -> ContextTreeLM:
    """A fresh prompt-lookup drafter; its `forwards` stays 0."""
    return ContextTreeLM(lambda ids: lookup_logits(ids, vocab_size), vocab_size, counts_forwards=False)
