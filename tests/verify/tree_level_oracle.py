"""Exact oracle for tree-level verifiers (docs/verifiers.md §14.3), independent of the lab's `certify`.

Enumerate every drafted tree under the law the verifier assumes (tests/verifier_oracles.draft_trees),
build its DraftTree with the p and q rows of its prefixes, mix the verifier's exact `step_law` (via
`emitted_law`), pad each emitted sequence by continuing from p, and compare with p's joint law.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import torch

from decoding.verify.step_law import Outcome, emitted_law
from decoding.verify.tree import DraftTree
from tests.verifier_oracles import draft_trees, extend, max_gap, target_joint

LawFn = Callable[[DraftTree, torch.Tensor, torch.Tensor], list[Outcome]]


def build(nested, p_of: dict, q_of: dict) -> tuple[DraftTree, torch.Tensor, torch.Tensor]:
    """(DraftTree, p [N, V], q [N, V]) of a nested draft (tokens, subtrees); the root token is 0."""
    tree, prefixes, frontier = DraftTree.root(0), [()], [(0, nested)]
    while frontier:
        node, sub = frontier.pop(0)
        if sub is None:
            continue
        xs, subtrees = sub
        first = len(tree)
        tree = tree.add_draws(node, list(xs), merge=False)
        for i, x in enumerate(xs):
            prefixes.append(prefixes[node] + (x,))
            frontier.append((first + i, subtrees[i]))
    V = next(iter(p_of.values())).shape[0]
    p = torch.stack([p_of[pre] for pre in prefixes])  # [N, V]
    q = torch.stack([q_of.get(pre, torch.zeros(V, dtype=torch.float64)) for pre in prefixes])  # [N, V]
    return tree, p, q


def sequence_law(law_fn: LawFn, law: str, widths: tuple[int, ...], p_of: dict, q_of: dict) -> dict:
    """{emitted sequence: probability} averaged over every drafted tree."""
    total: dict = defaultdict(float)
    for nested, prob in draft_trees(law, widths, q_of):
        tree, p, q = build(nested, p_of, q_of)
        for seq, pr in emitted_law(law_fn(tree, p, q), tree).items():
            total[seq] += prob * pr
    return total


def loss_gap(law_fn: LawFn, law: str, widths: tuple[int, ...], p_of: dict, q_of: dict) -> float:
    """max |emitted-then-padded law - target joint| over sequences of len(widths) + 1 tokens."""
    depth = len(widths)
    emitted = sequence_law(law_fn, law, widths, p_of, q_of)
    V = next(iter(p_of.values())).shape[0]
    return max_gap(extend(emitted, p_of, depth + 1), target_joint(p_of, V, depth + 1))
