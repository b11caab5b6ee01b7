"""Time per node of every registered verifier at a realistic vocabulary size.

    python -m bench verifiers [--vocab 49152] [--k 8] [--nodes 40] [--threads N]
    python -m bench.verifiers ...

p and q are softmaxes of random N(0, scale^2) logits; each entry gets k candidates (sd 1, spechub 2)
drawn with its own law; ot_optimal (an exact LP per node) gets k = 2 over a draft narrowed to its 40 most
likely tokens, the size its LP solves (rules/ot_optimal.py). Each node is verified once after a warm-up;
the table shows the median (and the 90th percentile) over nodes of verify() and the median of
conditional(), in wall-clock and in process CPU time (use --threads 1 on a shared machine: CPU time then
equals uncontended wall time).

Tree-level entries (block, traversal, typical_medusa, hsd, ...) have no node-level verify: a second table
times judge() on whole trees (the chain-only ones, block and hsd: the chain 1,1,1,1; the others: the tree
3,2,2, candidates drawn with the entry's law, p and q random as above), per tree and per drafted node
(the tree's nodes that have q).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from decoding.verify.registry import VERIFIERS, node_level_keys
from decoding.verify.tree import DraftTree

CHAIN = (1, 1, 1, 1)
# a tree-level entry's timed shape: the chain for those that take one draw per node (block, hsd, ...);
# the rest take DEFAULT_TREE
TREE_SHAPES = {key: CHAIN for key, entry in VERIFIERS.items() if entry.level == "tree" and entry.max_candidates == 1}
DEFAULT_TREE = (3, 2, 2)
NARROWED = {"ot_optimal": (2, 40)}  # (k, draft support) where the full draft is beyond the entry's reach


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench verifiers", description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--k", type=int, default=8, help="candidates per node (capped per entry)")
    ap.add_argument("--nodes", type=int, default=40, help="distinct (p, q, candidates) nodes timed per entry")
    ap.add_argument("--scale", type=float, default=1.0, help="std of the random logits")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave torch's default)")
    ap.add_argument("--seed", type=int, default=0)
    return ap


def _nodes(entry, args, generator: torch.Generator) -> list[tuple]:
    k = min(args.k, entry.max_candidates or args.k)
    k, support = NARROWED.get(entry.name, (k, None))
    nodes = []
    for _ in range(args.nodes):
        p = torch.softmax(torch.randn(args.vocab, generator=generator, dtype=torch.float64) * args.scale, 0)
        q = torch.softmax(torch.randn(args.vocab, generator=generator, dtype=torch.float64) * args.scale, 0)
        if support is not None:
            q = _narrowed(q, support)
        nodes.append((p, q, entry.sample(q, k, generator)))
    return nodes


def _narrowed(q: torch.Tensor, support: int) -> torch.Tensor:
    """q [V] kept on its `support` most likely tokens, renormalised (what a top-k warp does)."""
    top = torch.topk(q, min(support, q.shape[0])).indices
    out = torch.zeros_like(q)
    out[top] = q[top]
    return out / out.sum()


def _times_ms(fn, nodes: list[tuple]) -> tuple[list[float], list[float]]:
    """Wall-clock and process CPU milliseconds per node (CPU time is robust to a shared, busy machine)."""
    fn(*nodes[0])  # warm-up
    wall, cpu = [], []
    for node in nodes:
        start, start_cpu = time.perf_counter(), time.process_time()
        fn(*node)
        wall.append(1e3 * (time.perf_counter() - start))
        cpu.append(1e3 * (time.process_time() - start_cpu))
    return wall, cpu


def bench_entry(key: str, args) -> dict:
    entry = VERIFIERS[key]
    generator = torch.Generator().manual_seed(args.seed)
    nodes = _nodes(entry, args, generator)
    verify_ms, verify_cpu = _times_ms(lambda p, q, xs: entry.verify(p, q, xs, generator), nodes)
    conditional_ms, conditional_cpu = _times_ms(entry.conditional, nodes)
    return {
        "k": len(nodes[0][2]),
        "verify": statistics.median(verify_ms),
        "verify_p90": statistics.quantiles(verify_ms, n=10)[-1] if len(verify_ms) > 1 else verify_ms[0],
        "verify_cpu": statistics.median(verify_cpu),
        "conditional": statistics.median(conditional_ms),
        "conditional_cpu": statistics.median(conditional_cpu),
    }


def _tree(entry, args, generator: torch.Generator) -> tuple[DraftTree, torch.Tensor, torch.Tensor]:
    """A random tree of the entry's timed shape and its p, q rows [N, V] (zero q rows at the leaves)."""
    tree, q_rows, level = DraftTree.root(0), {}, [0]
    for branching in TREE_SHAPES.get(entry.name, DEFAULT_TREE):
        children = []
        for node in level:
            q_rows[node] = _law(args, generator)  # [V]
            before = len(tree)
            tree = tree.add_draws(node, entry.sample(q_rows[node], branching, generator), merge=False)
            children += range(before, len(tree))
        level = children
    p = torch.stack([_law(args, generator) for _ in range(len(tree))])  # [N, V]
    q = torch.zeros_like(p)
    for node, row in q_rows.items():
        q[node] = row
    return tree, p, q


def _law(args, generator: torch.Generator) -> torch.Tensor:
    return torch.softmax(torch.randn(args.vocab, generator=generator, dtype=torch.float64) * args.scale, 0)


def bench_tree_entry(key: str, args) -> dict:
    """judge() milliseconds per tree (median over --nodes trees) and per drafted node."""
    entry = VERIFIERS[key]
    generator = torch.Generator().manual_seed(args.seed)
    trees = [_tree(entry, args, generator) for _ in range(max(args.nodes // 4, 3))]
    wall, cpu = _times_ms(lambda tree, p, q: entry.judge(tree, p, q, generator), trees)
    drafted = sum(1 for node in range(len(trees[0][0])) if not trees[0][0].is_leaf(node))
    shape = ",".join(map(str, TREE_SHAPES.get(key, DEFAULT_TREE)))
    return {"shape": shape, "judge": statistics.median(wall), "judge_cpu": statistics.median(cpu),
            "per_node": statistics.median(wall) / drafted, "drafted": drafted}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"verifier benchmark: V={args.vocab}, k={args.k} (sd 1, spechub 2), {args.nodes} nodes per entry, "
        f"float64, {torch.get_num_threads()} torch threads"
    )
    print("milliseconds per node, median over nodes (p90 for verify wall); cpu = process CPU time")
    columns = ("verify", "verify_p90", "verify_cpu", "conditional", "conditional_cpu")
    print(f"{'verifier':<11}{'k':>3}" + "".join(f"{c:>17}" for c in columns))
    for key in node_level_keys():  # tree-level entries have no node-level verify/conditional
        r = bench_entry(key, args)
        print(f"{key:<11}{r['k']:>3}" + "".join(f"{r[c]:>17.3f}" for c in columns))
    print("tree-level entries: judge() milliseconds per tree (median) and per drafted node")
    print(f"{'verifier':<16}{'tree':>9}{'drafted':>9}{'judge':>11}{'judge_cpu':>11}{'per_node':>11}")
    for key in (key for key, entry in VERIFIERS.items() if entry.level == "tree"):
        r = bench_tree_entry(key, args)
        print(f"{key:<16}{r['shape']:>9}{r['drafted']:>9}" + "".join(f"{r[c]:>11.3f}" for c in
                                                                   ("judge", "judge_cpu", "per_node")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
