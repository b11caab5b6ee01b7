"""Build a draft tree level by level, drawing each node's candidates with the law its verifier needs.

All nodes of one depth are drafted in ONE draft call (`draft.logits(tree, level)`), so a tree of
depth D costs D draft forwards; leaves get no q. The q rows are the warped draft laws the
candidates were actually drawn from (the same `warp` as the target, docs/verifiers.md §13.1). A node
whose draft row has no guess (all -inf: prompt lookup without a match) stays a leaf, so the tree can
be smaller than its shape, down to the root alone (a plain target step).

Two shapes:
- Branching (config.shape.levels, e.g. (3, 2, 2)): a node at depth d draws branching[d] candidates
  with `entry.sample` (iid, without replacement, hub, top-k plus random, or deterministic top-k);
  each draw is its own child (duplicates included);
- Sequences (config.shape.k = K, config.shape.depth = L): K independent draft sequences merged into a
  trie. The root draws K i.i.d. tokens; a node reached by m draws draws m i.i.d. tokens (the next
  tokens of the m sequences through it, i.i.d. given the shared prefix); draws of one token share
  a child, and every draw is kept in the node's draw list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from decoding.models.treelm import TreeLM, with_guess
from decoding.run.confidence import PathConfidence, confidence_temperature
from decoding.run.config import DecodeConfig, Sequences
from decoding.verify import laws, sampling
from decoding.verify.entry import Verifier
from decoding.verify.node_keys import NodeKeys
from decoding.verify.tree import DraftTree

Warp = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class Drafted:
    """A drafted tree and the draft laws it was drawn from.

    q: node -> [V] float64 warped draft law at that node, for every non-leaf node (leaves have none).
    forwards: draft forwards this tree cost (0 for a model-free drafter).
    """

    tree: DraftTree
    q: dict[int, torch.Tensor]
    forwards: int

    def q_rows(self, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """q as [N, V] float64 (zero rows at leaves) and has_q [N] bool."""
        n = len(self.tree)
        rows = torch.zeros(n, vocab_size, dtype=torch.float64)
        has_q = torch.zeros(n, dtype=torch.bool)
        for node, q in self.q.items():
            rows[node] = q
            has_q[node] = True
        return rows, has_q


def draft_tree(draft: TreeLM, root_token: int, config: DecodeConfig, entry: Verifier,
               generator: torch.Generator, *, warp: Warp = sampling.warp, keys: NodeKeys | None = None) -> Drafted:
    """Draft a tree rooted at `root_token` (the draft's current root) with config's shape and entry's law.
    keys: for a keyed law (gumbel), each node draws from its own keyed generator, the one verify reads again.
    config.min_confidence: a node below it stays a leaf (run/confidence.py)."""
    tree = DraftTree.root(root_token)
    q: dict[int, torch.Tensor] = {}
    sure = PathConfidence(config.min_confidence)
    forwards_before = draft.forwards
    for depth in range(config.tree_depth if config.drafting else 0):  # not drafting: the root alone
        level = sure.expanding(tree, tree.nodes_at_depth(depth))
        if not level:  # every node of the last level had no guess, or was too unsure to go on
            break
        guessing, logits = with_guess(level, draft.logits(tree, level))  # [n, V]: the others stay leaves
        temperature = laws.draft_temperature(entry.law, config.temperature)  # 1.0 for top-k at T = 0
        probs = warp(logits, temperature, config.top_k, config.top_p)  # [n, V] float64
        if sure.on:
            sure_t = confidence_temperature(config.temperature)
            sure.learn(tree, guessing, probs if sure_t == temperature else
                       warp(logits, sure_t, config.top_k, config.top_p))
        for node, q_node in zip(guessing, probs, strict=True):
            q[node] = q_node
            node_generator = keys.generator(tree, node) if keys is not None and entry.law.keyed else generator
            tree = _draw_at(tree, node, q_node, depth, config, entry, node_generator)
    draft.logits(tree, [])  # no forward: the draft learns the leaves' tokens, for commit
    return Drafted(tree=tree, q=q, forwards=draft.forwards - forwards_before)


def _draw_at(tree: DraftTree, node: int, q_node: torch.Tensor, depth: int, config: DecodeConfig,
             entry: Verifier, generator: torch.Generator) -> DraftTree:
    if isinstance(config.shape, Sequences):
        m = config.shape.k if node == 0 else tree.draws[tree.parents[node]].count(node)
        return tree.add_draws(node, laws.IID_LAW.sample(q_node, m, generator), merge=True)
    tokens = entry.sample(q_node, entry.law.width(q_node, config.shape.levels[depth]), generator)
    return tree.add_draws(node, tokens, merge=False)
