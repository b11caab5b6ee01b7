"""`bench verifiers`: every registry entry gets a row (node-level ones in the first table, tree-level ones in the
second, timed on a tree of a shape they accept), with positive times. No timing asserts: numbers only exist."""

from __future__ import annotations

import argparse

import torch

from bench import verifiers as bench_verifiers
from decoding.verify.registry import VERIFIERS, node_level_keys


def test_every_verifier_has_a_row(capsys):
    assert bench_verifiers.main(["--vocab", "300", "--nodes", "4", "--threads", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    split = next(i for i, line in enumerate(lines) if line.startswith("tree-level entries"))
    node_rows = {line.split()[0]: line.split()[1:] for line in lines[3:split]}
    tree_rows = {line.split()[0]: line.split()[1:] for line in lines[split + 2:]}
    assert list(node_rows) == node_level_keys()
    assert list(tree_rows) == [key for key, entry in VERIFIERS.items() if entry.level == "tree"]
    assert all(float(v) > 0 for row in node_rows.values() for v in row[1:])
    assert all(float(v) > 0 for row in tree_rows.values() for v in row[2:])


def test_the_timed_trees_have_the_named_shape_and_are_accepted():
    args = argparse.Namespace(vocab=50, scale=1.0)
    g = torch.Generator().manual_seed(0)
    for key in ("block", "traversal", "typical_medusa", "hsd", "hsd_lossless"):
        entry = VERIFIERS[key]
        tree, p, q = bench_verifiers._tree(entry, args, g)
        shape = bench_verifiers.TREE_SHAPES.get(key, bench_verifiers.DEFAULT_TREE)
        sizes, width = [1], 1
        for branching in shape:
            width *= branching
            sizes.append(width)
        assert len(tree) == sum(sizes) and p.shape == q.shape == (len(tree), 50)
        assert entry.shape(tree) is None  # the entry judges this tree (no refusal)
        leaves = [n for n in range(len(tree)) if tree.is_leaf(n)]
        assert len(leaves) == sizes[-1] and float(q[leaves].abs().sum()) == 0.0
        drafted = q[[n for n in range(len(tree)) if n not in leaves]]  # [n, V]
        assert torch.allclose(drafted.sum(1), torch.ones(len(drafted), dtype=torch.float64))
