"""The exact law of what one step emits, given the drafted tree and its p and q rows.

The contract every verifier meets, node-level or tree-level: `entry.step_law(tree, p, q)` returns
a list of `Outcome`s, one per accepted path that can happen, each with its exact probability and
the law of the single token emitted after that path (the residual where the path stopped, or p at
a leaf for the bonus). That is enough for every exact view without enumerating the vocabulary:
the accepted-length law, the expected tokens per step, and, on a tiny vocabulary, the law of the
emitted token sequence (what `certify` compares with the target's joint law).

For a node-level verifier the walk is a Markov chain over the nodes: at node n the verifier's
`conditional` gives the probability of descending into each drawn child and the residual law of
the token emitted when it stops there. `node_level_law` composes them; a tree-level verifier
(block, traversal) provides its own `step_law`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from decoding.verify.tree import DraftTree

if TYPE_CHECKING:
    from decoding.verify.entry import Verifier

MIN_PROB = 0.0  # outcomes of probability exactly 0 are dropped; nothing else is


@dataclass(frozen=True)
class Outcome:
    path: tuple[int, ...]  # accepted node ids, root first (the root alone: nothing accepted)
    prob: float  # exact probability of this path given the tree
    last: torch.Tensor  # [V] float64 law of the one token emitted after the path

    @property
    def accepted(self) -> int:
        """Accepted draft tokens on this path (L in the compare view)."""
        return len(self.path) - 1


def node_level_law(entry: Verifier, tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> list[Outcome]:
    """Exact outcomes of walking `tree` with a node-level verifier (p, q: [N, V] rows)."""
    outcomes: list[Outcome] = []
    stack: list[tuple[tuple[int, ...], float]] = [((0,), 1.0)]
    while stack:
        path, prob = stack.pop()
        node = path[-1]
        if tree.is_leaf(node):
            outcomes.append(Outcome(path, prob, leaf_law(entry, p[node])))
            continue
        accept, residual = entry.conditional(p[node], q[node], tree.candidates(node))  # [k], [V]
        into: dict[int, float] = {}
        for i, child in enumerate(tree.draws[node]):
            into[child] = into.get(child, 0.0) + float(accept[i])
        stop = max(0.0, 1.0 - sum(into.values()))
        if stop > MIN_PROB:
            outcomes.append(Outcome(path, prob * stop, residual.to(torch.float64)))
        for child, a in into.items():
            if a > MIN_PROB:
                stack.append(((*path, child), prob * a))
    return sorted(outcomes, key=lambda o: o.path)


def leaf_law(entry: Verifier, p_leaf: torch.Tensor) -> torch.Tensor:
    """[V] law of the bonus token at a leaf: p for a lossless verifier (and a lossy one that draws it from p,
    `bonus_from_p`), argmax p for the other lossy ones."""
    if entry.lossless or getattr(entry, "bonus_from_p", False):
        return p_leaf.to(torch.float64)
    return torch.nn.functional.one_hot(torch.argmax(p_leaf), p_leaf.numel()).to(torch.float64)


def accepted_length_law(outcomes: Sequence[Outcome], depth: int) -> list[float]:
    """[P(L = 0), ..., P(L = depth)]: L counts accepted draft tokens."""
    law = [0.0] * (depth + 1)
    for o in outcomes:
        law[o.accepted] += o.prob
    return law


def expected_tokens(outcomes: Sequence[Outcome]) -> float:
    """Exact E[tokens emitted this step] = E[L] + 1 (every step emits one token past its path)."""
    return sum(o.prob * (o.accepted + 1) for o in outcomes)


def emitted_law(outcomes: Sequence[Outcome], tree: DraftTree) -> dict[tuple[int, ...], float]:
    """Exact law of the emitted token sequence (enumerates the last token: tiny vocabularies only)."""
    law: dict[tuple[int, ...], float] = {}
    for o in outcomes:
        prefix = tuple(tree.tokens[n] for n in o.path[1:])
        for token in torch.nonzero(o.last > 0).flatten().tolist():
            key = (*prefix, token)
            law[key] = law.get(key, 0.0) + o.prob * float(o.last[token])
    return law
