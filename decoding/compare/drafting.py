"""Draft one tree per candidate law with common random numbers, feeding the draft model one forest.

Level by level: the forest of all trees so far is fed to the draft (ONE draft forward per depth,
whatever the number of laws); each law's tree then draws its candidates at each node from that
node's q, driven by the uniforms of the node's SLOT (its position in the tree shape: draw indices
from the root). Every law reads the same uniforms at the same slot, so the trees differ only where
the laws force it (crn.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from decoding.compare import crn
from decoding.compare.forest import Forest, build_forest
from decoding.models.treelm import TreeLM, with_guess
from decoding.run.confidence import PathConfidence, confidence_temperature
from decoding.run.config import DecodeConfig
from decoding.verify import laws, sampling
from decoding.verify.tree import DraftTree

Warp = Callable[..., torch.Tensor]
SEQUENCES = "sequences"


@dataclass(frozen=True)
class ForestDraft:
    groups: tuple[str, ...]  # tree group (candidate law, or "sequences") of each tree, forest order
    trees: tuple[DraftTree, ...]
    forest: Forest
    q: dict[float, dict[int, torch.Tensor]]  # draft temperature -> forest node -> [V] float64 law (internal nodes)
    forwards: int
    temperature: float  # the target's; a group's draft temperature is laws.draft_temperature's

    def q_of(self, t: int) -> dict[int, torch.Tensor]:
        """The draft laws tree t's candidates were drawn from (at T = 0 a top-k law's are untempered)."""
        return self.q[_draft_temperature(self.groups[t], self.temperature)]

    def rows(self, t: int, p_forest: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Tree t's p [N, V], q [N, V] (zero rows at leaves) and has_q [N] from the forest's rows."""
        ids = torch.tensor(self.forest.maps[t], dtype=torch.long)
        p = p_forest.index_select(0, ids)  # [N, V]
        q = torch.zeros_like(p)
        has_q = torch.zeros(len(ids), dtype=torch.bool)
        drawn_from = self.q_of(t)
        for node, f in enumerate(self.forest.maps[t]):
            if f in drawn_from and not self.trees[t].is_leaf(node):
                q[node], has_q[node] = drawn_from[f], True
        return p, q, has_q


def _law(group: str) -> str:
    return "iid" if group == SEQUENCES else group


def _draft_temperature(group: str, temperature: float) -> float:
    return laws.draft_temperature(_law(group), temperature)


class _Uniforms:
    """Lazily drawn uniforms per slot: the same slot gets the same uniforms in every law's tree."""

    def __init__(self, generator: torch.Generator) -> None:
        self.generator, self.by_slot = generator, {}

    def at(self, slot: tuple[int, ...], k: int) -> list[float]:
        have = self.by_slot.setdefault(slot, [])
        while len(have) < k:
            have.append(sampling.uniform(self.generator))
        return have[:k]


def draft_forest(draft: TreeLM, root_token: int, config: DecodeConfig, groups: list[str],
                 generator: torch.Generator, *, warp: Warp = sampling.warp) -> ForestDraft:
    """Draft every group's tree (depth = config.tree_depth) in config.tree_depth draft forwards."""
    trees = [DraftTree.root(root_token) for _ in groups]
    slots: list[dict[int, tuple[int, ...]]] = [{0: ()} for _ in groups]
    uniforms, f0 = _Uniforms(generator), draft.forwards
    temperature_of = {g: _draft_temperature(g, config.temperature) for g in groups}
    q: dict[float, dict[int, torch.Tensor]] = {t: {} for t in set(temperature_of.values())}
    sure = PathConfidence(config.min_confidence)  # a node below it stays a leaf in every tree (run/confidence.py)
    for depth in range(config.tree_depth):
        forest = build_forest(trees)
        level = sure.expanding(forest.tree, forest.tree.nodes_at_depth(depth))
        if not level:  # every node of the last level had no guess, or was too unsure to go on
            break
        guessing, logits = with_guess(level, draft.logits(forest.tree, level))  # [n, V]: the rest stay leaves
        for temperature, laws_at in q.items():  # at T = 0 a top-k law ranks by the untempered law
            laws_at.update(zip(guessing, warp(logits, temperature, config.top_k, config.top_p), strict=True))
        if sure.on:
            sure.learn(forest.tree, guessing, warp(logits, confidence_temperature(config.temperature), config.top_k,
                                                   config.top_p))
        for t, group in enumerate(groups):
            drawn_from = q[temperature_of[group]]
            for node in trees[t].nodes_at_depth(depth):
                if forest.maps[t][node] not in drawn_from:
                    continue
                q_node = drawn_from[forest.maps[t][node]]
                u = uniforms.at(slots[t][node], _width(trees[t], node, depth, config, q_node, group))
                trees[t] = _draw(trees[t], node, q_node, group, u, slots[t])
    forest = build_forest(trees)
    draft.logits(forest.tree, [])  # no forward: the draft learns the leaves, for commit
    return ForestDraft(tuple(groups), tuple(trees), forest, q, draft.forwards - f0, config.temperature)


def _width(tree: DraftTree, node: int, depth: int, config: DecodeConfig, q_node: torch.Tensor, group: str) -> int:
    if config.sequences:
        return config.sequences if node == 0 else tree.draws[tree.parents[node]].count(node)
    return laws.get(_law(group)).width(q_node, config.branching[depth])  # a distinct law: within q's support


def _draw(tree: DraftTree, node: int, q_node: torch.Tensor, group: str, u: list[float],
          slots: dict[int, tuple[int, ...]]) -> DraftTree:
    """Draw len(u) candidates at `node` with the group's law; new children get slot = parent's + (draw index,)."""
    k = len(u)
    tokens = crn.sample(_law(group), q_node, k, u)
    before = len(tree)
    tree = tree.add_draws(node, tokens, merge=group == SEQUENCES)
    for i, child in enumerate(tree.draws[node]):
        if child >= before:
            slots.setdefault(child, slots[node] + (i,))
    return tree
