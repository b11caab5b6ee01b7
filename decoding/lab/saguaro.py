"""Saguaro sampling's exact cache-hit probability over whole chains on a tiny language (docs/verifiers.md §23).

A step of SSD ends at an accepted prefix of length i and emits one token y; the drafter had precomputed the next
speculation for F tokens at that position (verify/saguaro.cached: q's top F without the drafted x_{i+1}, or q's top F
after a fully accepted chain). Summing over every drafted chain (lab/trees.py, the Saguaro law's probabilities) and
every outcome of its exact step law (the entry's conditional: SD against q'), P(hit) = sum over chains and outcomes of
P(chain) P(outcome) last(cache at the outcome's end): exact, like certify's check, on context-dependent rows.
"""

from __future__ import annotations

from decoding.lab.exact import outcomes_of
from decoding.lab.language import TinyLanguage
from decoding.lab.trees import drafted_trees
from decoding.verify import saguaro


def chain_hit(language: TinyLanguage, depth: int, fan_out: int, scale: float) -> float:
    """P(the token a step emits is in the drafter's cache) for chains of `depth` drafted with Saguaro(F, C)."""
    entry = saguaro.entry(fan_out, scale)
    total = 0.0
    for drafted in drafted_trees(entry, language, (1,) * depth):
        tree = drafted.tree
        for outcome in outcomes_of(entry, drafted):
            end = outcome.path[-1]
            children = tree.children(end)
            rejected = tree.tokens[children[0]] if children else None
            cache = saguaro.cached(drafted.q[end], fan_out, rejected)
            total += drafted.prob * outcome.prob * float(outcome.last[cache].sum())
    return total
