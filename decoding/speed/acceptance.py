"""The acceptance the chooser predicts from: exact per node, from the p and q rows a run recorded.

A(1, d) = sum min(p, q) at each visited node whose candidates sit at depth d (sd's closed form), averaged
over the nodes (a deeper depth, seen on fewer nodes, shrunk toward the depth above: SHRINK). In a chain run
a depth-d node is visited only when depth d-1 accepted, so the mean is P(accept at d | d reached), the
factor expected_tokens() multiplies. A(k, d) for k > 1 candidates drawn
without replacement (rrs_wor) is exact per node too (theory.acceptance: an enumeration over draft
prefixes, milliseconds a node at V = 49152 on a 2-core VM, several times that for k = 3 and 4: docs/speed.md,
"Measurements the code's comments cite"; theory_wor sums the likeliest prefixes and samples the rest), so it is
computed on a sample of the nodes (SAMPLED) and carried to every depth as the sample's mean ratio A(k) / A(1),
capped at 1. The sample is 24 nodes, not fewer: on the embedded-head pair's calibration rows at T = 0.8, 6 nodes
gave A(2, 1) = 0.52 where 24 gave 0.44 and all 49 0.44, and the optimistic 0.52 made fastest() choose a tree that
ran at 0.91x the target alone.

At T = 0 (greedy) the chooser's trees are the draft's top-k (chooser.verifier_for), so A(k, d) is the rate at
which the target's argmax is among the draft's k best tokens: p(top-k(q)) with p one-hot (`top_k_rate`, the
pointmass closed form; cheap, so computed on every row whose q ranks more than one token). A q drawn at T = 0
by a sampling law is one-hot: its rows give A(1) (the same number as sd's) and `ratios` the rest.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import torch

from decoding.run.seen import misses, node_acceptance, ranks_runner_up, top_k_rate
from decoding.speed.chooser import AcceptanceTable

SHRINK = 3  # pseudo-nodes of the depth above in a deeper depth's mean (a deep depth is seen on few nodes)
SAMPLED = 24  # nodes whose A(k > 1) is computed exactly (spread over the run)
Row = tuple[int, torch.Tensor, torch.Tensor]  # (depth of the candidates, p [V], q [V]) at a visited node


def table_from_rows(rows: Iterable[Row], widths: tuple[int, ...] = (1, 2), known: Iterable[tuple[int, float]] = (),
                    ratios: dict[int, float] | None = None, greedy: bool = False) -> AcceptanceTable:
    """The table from p/q rows; `known`: (depth, A(1)) already computed exactly (a shown step's sd-family
    visits); `ratios`: A(k) / A(1) to use when no row is left to compute it on (e.g. the calibration's);
    greedy: T = 0, A(k) of the draft's top-k (top_k_rate) on every ranked row."""
    rows, known = list(rows), list(known)
    if not rows and not known:
        raise ValueError("no p/q rows to measure acceptance on: run a few drafted steps first")
    by_depth: dict[int, list[float]] = defaultdict(list)
    for depth, a in known:
        by_depth[depth].append(a)
    rule = top_k_rate if greedy else node_acceptance
    for depth, p, q in rows:
        by_depth[depth].append(rule(p, q, 1))
    deepest = max(by_depth)
    chain: list[float] = []
    for d in range(1, deepest + 1):  # a depth seen on few nodes leans on the one above it (SHRINK pseudo-nodes)
        seen = by_depth.get(d, [])
        prior = chain[-1] if chain else (sum(seen) / len(seen) if seen else 0.0)
        chain.append((sum(seen) + SHRINK * prior) / (len(seen) + SHRINK) if chain else prior)
    rates = {1: tuple(chain)}
    if greedy:  # cheap: every row whose q ranks a runner-up
        sample = [row for row in rows if ranks_runner_up(row[2])]
    else:
        sample = rows[:: max(1, len(rows) // SAMPLED)][:SAMPLED]
    for k in (w for w in widths if w > 1):
        if sample:
            pairs = [(rule(p, q, k), rule(p, q, 1)) for _, p, q in sample]
            base = sum(a1 for _, a1 in pairs)
            ratio = sum(ak for ak, _ in pairs) / base if base > 0 else 1.0
        elif ratios and k in ratios:
            ratio = ratios[k]
        else:
            continue
        rates[k] = tuple(min(1.0, a * ratio) for a in chain)
    return AcceptanceTable(rates, len(rows) + len(known))


SD_AT_ONE = ("sd", "rrs", "rrs_wor")  # verifiers whose acceptance of one candidate is sd's, sum min(p, q)


def known_from_records(records, depth: int = 0) -> list[tuple[int, float]]:
    """(depth of the candidates, exact A(1)) of every visit with one candidate whose exact acceptance a view
    already computed (alpha_exact), for the verifiers whose k = 1 acceptance is sd's; and a 0 where a step
    stopped above `depth` for want of a guess (seen.no_guess)."""
    found = [(r.nodes[v.node].depth + 1, v.alpha_exact) for r in records if r.verifier in SD_AT_ONE
             for v in r.visits if len(v.candidates) == 1 and v.alpha_exact is not None and not v.alpha_stderr]
    return found + misses([r for r in records if r.verifier in SD_AT_ONE], depth)


def rows_of_record(record, kept: list[tuple[int, torch.Tensor, torch.Tensor]]) -> list[Row]:
    """A step's kept (visit index, p, q) rows (`Run.kept_rows`) with the depth of each visit's candidates."""
    return [(record.nodes[record.visits[i].node].depth + 1, p, q) for i, p, q in kept]
