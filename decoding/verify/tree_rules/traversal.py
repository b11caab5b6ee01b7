"""Traversal verification (Weng, Hu et al.; NeurIPS 2025, arXiv 2505.12398, Alg. 3), docs/verifiers.md §14.2.

A tree drafted WITHOUT replacement at every node, verified from the leaves up. Every node u has a
weight w(u) = min(1, w(parent) t_parent(u) / d_parent(u)) with its parent's CURRENT target row t and
draft row d (initially p and q), w(root) = 1. Nodes are tried in post-order (children in draw order):
a node tried as a leaf accepts the whole root-to-node path with probability w(node), and the step
emits a token from that node's current target row (p at an original leaf: the bonus). On rejection
the node is deleted and its parent m updated:
    S = sum (w(m) t_m - d_m)_+,  t_m <- (w(m) t_m - d_m)_+ / S,  w(m) <- S / (S + 1 - w(m)),
    d_m <- q_m without every deleted child's token, renormalised (the law the next sibling was drawn from);
the surviving siblings' weights (and their subtrees') follow from the new rows; a node whose children
are all deleted is tried next as a leaf; the root (w = 1) accepts, emitting its residual.

Readings where the outline leaves a detail open, each proved lossless by exact enumeration in
tests/verify/test_tree_level.py: siblings are tried in draw order (the without-replacement law
requires it, as for rrs_wor); the residual S uses d_m BEFORE the deleted token is removed; d_m is
rebuilt from q with rules.common.restricted (uniform over the undrawn tokens when q has no mass
left, exactly the drafting law); w(m) = 1 stays 1 (S/(S + 1 - w) with w = 1); and a target row with
no mass (probability 0) falls back to the node's p row. At the root the updates are exactly rrs_wor,
and on a chain the procedure is block verification (tau = the deepest accepted node).
"""

from __future__ import annotations

import torch

from decoding.verify.origins import BONUS, DRAFT, RESIDUAL
from decoding.verify.rules.common import restricted
from decoding.verify.sampling import draw, uniform
from decoding.verify.step_law import Outcome
from decoding.verify.tree import DraftTree
from decoding.verify.tree_entry import TreeEvent, TreeWalk
from decoding.verify.tree_rules.chains import residual_law, updated_weight, weight_step, weighted_residual


def shape(tree: DraftTree) -> str | None:
    for node in range(len(tree)):
        tokens = tree.candidates(node)
        if len(set(tokens)) != len(tokens) or len(set(tree.draws[node])) != len(tree.draws[node]):
            return (f"traversal verification needs children drawn without replacement at every node; "
                    f"node {node} has repeated candidates {tokens}")
    return None


def post_order(tree: DraftTree, node: int = 0) -> list[int]:
    """Children (in draw order) before their parent: the order leaves are tried in."""
    out: list[int] = []
    for child in tree.draws[node]:
        out += post_order(tree, child)
    return [*out, node]


class Traversal:
    """The mutable state of one traversal: current target/draft rows and the weights set by deletions."""

    def __init__(self, tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> None:
        self.tree, self.p, self.q = tree, p, q  # [N, V] rows
        self.target: dict[int, torch.Tensor] = {}  # node -> current target row [V] (p row until updated)
        self.deleted: dict[int, list[int]] = {}  # node -> tokens of its deleted children
        self.draft: dict[int, torch.Tensor] = {}  # node -> current draft row [V] (q row until a child is deleted)
        self.w_set: dict[int, float] = {0: 1.0}  # weights fixed by a deletion (and the root's)

    def target_row(self, node: int) -> torch.Tensor:
        return self.target.get(node, self.p[node])

    def draft_row(self, node: int) -> torch.Tensor:
        """q without the deleted children's tokens, renormalised: built once per deletion (weights read it often)."""
        return self.draft.get(node, self.q[node])

    def ratio(self, node: int) -> tuple[float, float]:
        """(w(parent) t_parent(x), d_parent(x)) of the node's token x."""
        parent, x = self.tree.parents[node], self.tree.tokens[node]
        return self.weight(parent) * float(self.target_row(parent)[x]), float(self.draft_row(parent)[x])

    def weight(self, node: int) -> float:
        if node in self.w_set:
            return self.w_set[node]
        num, den = self.ratio(node)
        return weight_step(1.0, num, den)

    def delete(self, node: int) -> TreeEvent:
        """Remove a rejected node; update its parent's target row, weight and draft row."""
        parent, x = self.tree.parents[node], self.tree.tokens[node]
        w = self.weight(parent)
        r, mass = weighted_residual(w, self.target_row(parent), self.draft_row(parent))  # [V], before removing x
        self.target[parent] = residual_law(r, mass, self.p[parent])
        self.w_set[parent] = updated_weight(w, mass)
        self.deleted.setdefault(parent, []).append(x)
        self.draft[parent] = restricted(self.q[parent].to(torch.float64), self.deleted[parent])  # [V]
        left = len(self.tree.draws[parent]) - len(self.deleted[parent])
        note = (f"node {node} deleted; node {parent}: target <- norm((w p - q)_+), w {w:.4g} -> "
                f"{self.w_set[parent]:.4g}, draft row loses the deleted token; "
                + (f"{left} sibling(s) left" if left else f"node {parent} is now a leaf"))
        return TreeEvent("delete", node, x, mass, mass + 1.0 - w, self.w_set[parent], None, None,
                         "w(parent) <- S / (S + 1 - w)", note, self.target[parent], self.draft_row(parent))

    def try_event(self, node: int, u: float | None, passed: bool | None) -> TreeEvent:
        w = self.weight(node)
        if node in self.w_set:
            label = "root: w = 1" if node == 0 else "w set when its last child was deleted"
            num = den = None
        else:
            label, (num, den) = "w = min(1, w(parent) p(x) / q(x))", self.ratio(node)
        verdict = "accepts the path to it" if passed else "rejected" if passed is False else "tried"
        return TreeEvent("try", node, self.tree.tokens[node], num, den, w, u, passed, label,
                         f"node {node} tried as a leaf: {verdict}")


def step_law(tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> list[Outcome]:
    """Every try in post-order happens when all earlier ones failed: P(stop at n) = w(n) prod (1 - w)."""
    state, stay, out = Traversal(tree, p, q), 1.0, []
    for node in post_order(tree):
        w = state.weight(node)
        if stay * w > 0:
            out.append(Outcome(tuple(tree.path(node)), stay * w, state.target_row(node).to(torch.float64)))
        stay *= 1.0 - w
        if stay <= 0.0 or node == 0:
            break
        state.delete(node)
    return out


def judge(tree: DraftTree, p: torch.Tensor, q: torch.Tensor, generator: torch.Generator) -> TreeWalk:
    state, events, rejected = Traversal(tree, p, q), [], []
    for node in post_order(tree):
        w = state.weight(node)
        u = uniform(generator)
        passed = w > 0 and u <= w
        events.append(state.try_event(node, u, passed))
        if passed:
            break
        rejected.append(node)
        events.append(state.delete(node))
    law = state.target_row(node).to(torch.float64)  # [V]
    token = draw(law, generator)
    kind = BONUS if tree.is_leaf(node) else RESIDUAL
    note = "bonus from p at an original leaf" if kind == BONUS else f"sample of node {node}'s current target row"
    events.append(TreeEvent("emit", node, token, label=kind, note=note, target=law))
    path = tuple(tree.path(node))
    tokens = tuple(tree.tokens[n] for n in path[1:]) + (token,)
    return TreeWalk(path, (), tokens, (DRAFT,) * (len(path) - 1) + (kind,), events=tuple(events),
                    rejected=tuple(rejected))
