"""Tree verification: walk from the root, one token-level verifier call per visited node.

Pure: (tree, p rows, q rows, verifier, generator) -> Walk. No model, no KV cache, so the same
walk serves the engine, tests, and a compare view that judges one tree with several verifiers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from decoding.verify.node_keys import NodeKeys
from decoding.verify.origins import BONUS, DRAFT, RESIDUAL, RESIDUAL_HIT
from decoding.verify.sampling import draw
from decoding.verify.tree import DraftTree
from decoding.verify.verdict import NodeVerdict

if TYPE_CHECKING:  # the entry's judge calls walk; walk only needs the entry's duck type
    from decoding.verify.entry import Verifier


@dataclass(frozen=True)
class Walk:
    path: tuple[int, ...]  # accepted node ids, root first
    visits: tuple[tuple[int, NodeVerdict], ...]  # (node, verdict) for every internal node visited
    tokens: tuple[int, ...]  # every token the step emits, in order
    kinds: tuple[str, ...]  # DRAFT / RESIDUAL_HIT per accepted node, then RESIDUAL or BONUS


def bonus_token(entry: Verifier, p_leaf: torch.Tensor, generator: torch.Generator) -> int:
    """At a leaf: the rule's own `bonus` where it has one (gls); else a lossless verifier samples p and the
    lossy ones (greedy, typical) take argmax p, unless they draw it from p (`bonus_from_p`: cactus)."""
    if getattr(entry, "bonus", None) is not None:
        return entry.bonus(p_leaf, generator)
    if entry.lossless or getattr(entry, "bonus_from_p", False):
        return draw(p_leaf, generator)
    return int(torch.argmax(p_leaf))


def walk(
    tree: DraftTree,
    p: torch.Tensor,  # [N, V] warped target law at every node
    q: torch.Tensor,  # [N, V] law the node's candidates were drawn from (rows of leaves unused)
    entry: Verifier,
    generator: torch.Generator,
    keys: NodeKeys | None = None,  # a keyed law's per-node generators (gumbel): read instead of `generator`
) -> Walk:
    node, path, visits, tokens, kinds = 0, [0], [], [], []

    def at(n: int) -> torch.Generator:
        return keys.generator(tree, n) if keys is not None else generator

    while not tree.is_leaf(node):
        verdict = entry.verify(p[node], q[node], tree.candidates(node), at(node))
        visits.append((node, verdict))
        if verdict.accepted is None:
            tokens.append(verdict.token)
            kinds.append(RESIDUAL)
            return Walk(tuple(path), tuple(visits), tuple(tokens), tuple(kinds))
        node = tree.draws[node][verdict.accepted]
        path.append(node)
        tokens.append(tree.tokens[node])
        kinds.append(RESIDUAL_HIT if verdict.via_residual else DRAFT)
    tokens.append(bonus_token(entry, p[node], at(node)))
    kinds.append(BONUS)
    return Walk(tuple(path), tuple(visits), tuple(tokens), tuple(kinds))


def reach_probabilities(tree: DraftTree, p: torch.Tensor, q: torch.Tensor, entry: Verifier) -> list[float]:
    """Exact P(node is on the accepted path) for every node, given this drafted tree.

    P(child) = P(parent) * sum of conditional accept[i] over the draws i that name the child.
    """
    reach = [0.0] * len(tree)
    reach[0] = 1.0
    for node in range(len(tree)):  # topological order: parents first
        if tree.is_leaf(node) or reach[node] == 0.0:
            continue
        accept, _ = entry.conditional(p[node], q[node], tree.candidates(node))  # [k], [V]
        for i, child in enumerate(tree.draws[node]):
            reach[child] += reach[node] * float(accept[i])
    return reach


def expected_tokens(tree: DraftTree, p: torch.Tensor, q: torch.Tensor, entry: Verifier) -> float:
    """Exact E[tokens emitted this step | tree] = 1 + sum over non-root nodes of P(on the path)."""
    return 1.0 + sum(reach_probabilities(tree, p, q, entry)[1:])
