"""Deterministic tidy tree layout from a parent array: x = depth, y = slot, parents centred."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    x: tuple[float, ...]  # depth of each node
    y: tuple[float, ...]  # leaves take consecutive slots 0, 1, 2, ...; a parent sits mid-way
    children: tuple[tuple[int, ...], ...]


def children_of(parents: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """Children of each node in id order; checks there is exactly one root and no cycle."""
    n = len(parents)
    kids: list[list[int]] = [[] for _ in range(n)]
    roots = [i for i, par in enumerate(parents) if par < 0]
    if len(roots) != 1:
        raise ValueError(f"a tree needs exactly one root (parent -1), found {len(roots)}")
    for i, par in enumerate(parents):
        if par >= n:
            raise ValueError(f"node {i} has parent {par}, outside the tree")
        if par >= 0:
            kids[par].append(i)
    return tuple(tuple(k) for k in kids)


def tidy_layout(parents: Sequence[int]) -> Layout:
    """Leaves in depth-first order take slots 0..L-1; each parent sits halfway between its
    first and last child, so subtrees never overlap and the result depends only on `parents`."""
    if not parents:
        return Layout((), (), ())
    kids = children_of(parents)
    root = next(i for i, par in enumerate(parents) if par < 0)
    x = [0.0] * len(parents)
    y = [0.0] * len(parents)
    order = _preorder(root, kids, x)
    if len(order) != len(parents):
        raise ValueError("the parent array has a cycle or nodes not connected to the root")
    leaves = [node for node in order if not kids[node]]
    for slot, leaf in enumerate(leaves):  # depth-first order: the first drawn child on top
        y[leaf] = float(slot)
    for node in reversed(order):  # children before parents
        if kids[node]:
            y[node] = (y[kids[node][0]] + y[kids[node][-1]]) / 2
    return Layout(tuple(x), tuple(y), kids)


def _preorder(root: int, kids: tuple[tuple[int, ...], ...], depth: list[float]) -> list[int]:
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        for child in reversed(kids[node]):
            depth[child] = depth[node] + 1
            stack.append(child)
    return order

