"""Every drafted tree of a shape on a tiny language, under a verifier's candidate law, with its probability.

A shape gives the number of candidates drawn at every node of each depth: (2, 2) is a binary tree of
depth 2, (3,) one node with 3 candidates, (1, 1, 1) a chain. Children are kept one per draw (i.i.d.
duplicates stay separate nodes), each child's subtree drafted independently from q(. | its prefix),
exactly as the engine drafts (docs/verifiers.md §11.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from decoding.lab.language import Prefix, TinyLanguage
from decoding.verify import laws
from decoding.verify.entry import Verifier
from decoding.verify.tree import DraftTree

ROOT_TOKEN = 0  # the step's root (the last emitted token) is outside the language's prefixes
Guesses = Callable[[Prefix], bool] | None  # whether the drafter has a guess after a prefix (None: always)


@dataclass(frozen=True)
class DraftedTree:
    tree: DraftTree
    prob: float  # probability of drafting exactly this tree (draw order included)
    p: torch.Tensor  # [N, V] target row of every node
    q: torch.Tensor  # [N, V] draft row of every node


def candidate_tuples(entry: Verifier, q: torch.Tensor, k: int) -> Iterator[tuple[tuple[int, ...], float]]:
    """Every ordered candidate tuple of the entry's law with its probability.

    The one place the lab enumerates a candidate law (`laws.get` takes a law object or its name).
    """
    return laws.get(entry.law).enumerate(q, k)


def prefix_of(tree: DraftTree, node: int) -> Prefix:
    """Token ids after the root down to `node` (the key into the language)."""
    return tuple(tree.tokens[n] for n in tree.path(node)[1:])


def drafted_trees(entry: Verifier, language: TinyLanguage, shape: tuple[int, ...],
                  guesses: Guesses = None) -> Iterator[DraftedTree]:
    """Every tree the verifier's law can draft with `shape` on `language`; probabilities sum to 1.

    guesses(prefix) False: the drafter has no guess after that prefix and the node stays a leaf (the
    engine's rule for a draft row of -inf, treelm.proposes); None: a guess everywhere."""
    for k in set(shape):
        entry.check_k(k)
    for tree, prob in _expand(entry, language, shape, DraftTree.root(ROOT_TOKEN), [0], 1.0, guesses):
        rows = [prefix_of(tree, n) for n in range(len(tree))]
        p = torch.stack([language.p(r) for r in rows])  # [N, V]
        q = torch.stack([language.q(r) for r in rows])  # [N, V]
        yield DraftedTree(tree, prob, p, q)


def _expand(entry, language, shape, tree: DraftTree, queue: list[int], prob: float, guesses: Guesses = None):
    """Draw the candidates of the first queued node in every possible way, then the rest (parents first)."""
    if not queue:
        yield tree, prob
        return
    node, rest = queue[0], queue[1:]
    depth, prefix = tree.depths[node], prefix_of(tree, node)
    if guesses is not None and not guesses(prefix):
        yield from _expand(entry, language, shape, tree, rest, prob, guesses)
        return
    for xs, pr in candidate_tuples(entry, language.q(prefix), shape[depth]):
        grown = tree.add_draws(node, list(xs), merge=False)
        children = list(grown.draws[node]) if depth + 1 < len(shape) else []
        yield from _expand(entry, language, shape, grown, rest + children, prob * pr, guesses)


def nodes_per_tree(shape: tuple[int, ...]) -> int:
    """Nodes of a full tree of `shape`, root included: (2, 2) -> 1 + 2 + 4."""
    total = level = 1
    for k in shape:
        level *= k
        total += level
    return total


class PastLimit(Exception):
    """Counting stopped: the enumeration is larger than the limit asked about."""


def enumeration_size(entry: Verifier, language: TinyLanguage, shape: tuple[int, ...], limit: int) -> int:
    """The work of certifying `shape` (exact.check_case): drafted trees x nodes per tree, plus the padded
    sequences (at most V ** (depth + 1)), counted WITHOUT drafting a tree; PastLimit as soon as it exceeds
    `limit` (the count's own work, the candidate tuples walked, is held to `limit` too). ValueError, as
    drafted_trees raises it, when the entry cannot take a candidate count of the shape."""
    for k in set(shape):
        entry.check_k(k)
    nodes, padded = nodes_per_tree(shape), language.V ** (len(shape) + 1)
    if nodes + padded > limit:
        raise PastLimit
    return _tree_count(entry, language, shape, (limit - padded) // nodes, limit) * nodes + padded


def _tree_count(entry: Verifier, language: TinyLanguage, shape: tuple[int, ...], most: int, walk: int) -> int:
    """Drafted trees of `shape`: per node, the sum over its candidate tuples of the product of its children's
    counts (memoised by prefix). PastLimit when a count passes `most` or the tuples walked pass `walk`."""
    law, memo, walked = laws.get(entry.law), {}, [0]

    def below(prefix: Prefix, depth: int) -> int:
        if (prefix, depth) in memo:
            return memo[(prefix, depth)]
        walked[0] += _tuples_walked(law, language.V, shape[depth])
        if walked[0] > walk:
            raise PastLimit
        total = 0
        for xs, _ in candidate_tuples(entry, language.q(prefix), shape[depth]):
            trees = 1
            for x in xs if depth + 1 < len(shape) else ():
                trees *= below((*prefix, x), depth + 1)
                if trees > most:
                    raise PastLimit
            total += trees
            if total > most:
                raise PastLimit
        memo[(prefix, depth)] = total
        return total

    return below((), 0)


def _tuples_walked(law: laws.Law, V: int, k: int) -> int:
    """What one node's enumeration walks through (zero weights included); 1 for a law that does not say."""
    try:
        return max(1, law.count(V, k))
    except NotImplementedError:
        return 1


def describe(tree: DraftTree, language: TinyLanguage) -> dict[str, list[str]]:
    """{node: candidate tokens in draw order} for every internal node. A node is named by its prefix text
    ("<root>" for the root); siblings with the same token get their node id appended ("c #4")."""
    out: dict[str, list[str]] = {}
    for node in range(len(tree)):
        if not tree.is_leaf(node):
            name = language.text(prefix_of(tree, node)) or "<root>"
            name = f"{name} #{node}" if name in out else name
            out[name] = [language.vocab[t] for t in tree.candidates(node)]
    return out
