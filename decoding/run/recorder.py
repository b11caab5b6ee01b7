"""Turn one step's tensors (a ScoredTree and its Walk) into a plain StepRecord for the viz."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from decoding.run.schema import (
    ACCEPTED,
    REJECTED,
    ROOT,
    UNREACHED,
    EmittedRecord,
    NodeRecord,
    StepRecord,
    TestRecord,
    TokenProb,
    TreeEventRecord,
    UpdateRecord,
    VisitRecord,
)
from decoding.run.scored import ScoredTree
from decoding.verify.entry import Verifier
from decoding.verify.theory import routes as theory
from decoding.verify.tree import DraftTree
from decoding.verify.verdict import NodeVerdict
from decoding.verify.walk import Walk

TokenText = Callable[[int], str]


@dataclass(frozen=True)
class StepTimes:
    draft_ms: float
    target_ms: float
    verify_ms: float
    draft_forwards: int
    target_forwards: int


def top_tokens(p: torch.Tensor, q: torch.Tensor | None, n: int, text: TokenText) -> tuple[TokenProb, ...]:
    """Union of the n most probable tokens under p and under q, ordered by p then q; tokens both give 0 are left
    out (at T = 0 a one-hot p's "top 8" were its argmax and the 7 lowest token ids, <|endoftext|> first)."""
    ids = torch.topk(p, min(n, p.shape[0])).indices.tolist()
    if q is not None:
        ids += torch.topk(q, min(n, q.shape[0])).indices.tolist()
    qv = (lambda i: float(q[i])) if q is not None else (lambda i: 0.0)
    ids = [i for i in dict.fromkeys(int(i) for i in ids) if float(p[i]) > 0 or qv(i) > 0]
    ids.sort(key=lambda i: (-float(p[i]), -qv(i), i))
    return tuple(TokenProb(i, text(i), float(p[i]), qv(i)) for i in ids)


def node_statuses(tree: DraftTree, walk: Walk) -> list[str]:
    """root / accepted (on the path) / rejected / unreached.

    A candidate is rejected when a test on one of its draws failed, or when its node emitted a residual
    token (then every candidate there lost). A sibling never tested because another was accepted first
    is unreached, like everything below a node the walk did not take.
    """
    status = [UNREACHED] * len(tree)
    status[0] = ROOT
    for node, verdict in walk.visits:
        draws = tree.draws[node]
        if verdict.accepted is None:
            rejected = set(draws)
        else:
            rejected = {draws[t.candidate] for t in verdict.tests if not t.passed and 0 <= t.candidate < len(draws)}
        for child in rejected:
            status[child] = REJECTED
    for node in getattr(walk, "rejected", ()):  # tree-level verifiers name the nodes they rejected
        status[node] = REJECTED
    for node in walk.path[1:]:
        status[node] = ACCEPTED
    return status


def node_records(scored: ScoredTree, walk: Walk, top_n: int, text: TokenText) -> tuple[NodeRecord, ...]:
    tree, p, q, has_q = scored.tree, scored.p, scored.q, scored.has_q  # [N, V], [N, V], [N]
    status = node_statuses(tree, walk)
    out = []
    for n in range(len(tree)):
        parent = tree.parents[n]
        tok = tree.tokens[n]
        out.append(
            NodeRecord(
                id=n,
                parent=parent,
                token=tok,
                text=text(tok),
                depth=tree.depths[n],
                status=status[n],
                p_token=None if parent < 0 else float(p[parent, tok]),
                q_token=None if parent < 0 else float(q[parent, tok]),
                top=top_tokens(p[n], q[n] if has_q[n] else None, top_n, text),
                draws=tuple(tree.draws[n]),
            )
        )
    return tuple(out)


def test_records(verdict: NodeVerdict, text: TokenText) -> tuple[TestRecord, ...]:
    return tuple(
        TestRecord(t.candidate, t.token, text(t.token), t.numerator, t.denominator, t.threshold,
                   t.uniform, t.passed, t.label)
        for t in verdict.tests
    )


def update_records(verdict: NodeVerdict, top_n: int, text: TokenText) -> tuple[UpdateRecord, ...]:
    return tuple(
        UpdateRecord(u.after_test, u.note, top_tokens(u.residual, u.draft, top_n, text))
        for u in verdict.updates
    )


def visit_record(node: int, verdict: NodeVerdict, scored: ScoredTree, entry: Verifier, top_n: int,
                 text: TokenText, with_theory: bool) -> VisitRecord:
    p, q = scored.p, scored.q  # [N, V]
    cands = scored.tree.candidates(node)
    alpha, stderr, optimal = visit_theory(entry, p[node], q[node], len(cands)) if with_theory else (None, 0.0, None)
    return VisitRecord(
        node=node,
        candidates=tuple(cands),
        accepted=verdict.accepted,
        via_residual=verdict.via_residual,
        token=verdict.token,
        tests=test_records(verdict, text),
        updates=update_records(verdict, top_n, text),
        alpha_exact=alpha,
        alpha_stderr=stderr,
        alpha_optimal=optimal,
    )


def tree_event_records(walk: Walk, top_n: int, text: TokenText) -> tuple[TreeEventRecord, ...]:
    """A tree-level verifier's story as plain records (node-level walks have none)."""
    out = []
    for e in getattr(walk, "events", ()):
        law = e.target if e.target is not None else e.draft
        rows = top_tokens(law, e.draft if e.target is not None else None, top_n, text) if law is not None else ()
        out.append(TreeEventRecord(e.kind, e.node, e.token, text(e.token), e.numerator, e.denominator, e.threshold,
                                   e.uniform, e.passed, e.label, e.note, rows))
    return tuple(out)
def visit_theory(entry, p_node: torch.Tensor, q_node: torch.Tensor, k: int) -> tuple[float, float, float]:
    """(exact acceptance, its stderr, optimal acceptance for the law) of a node with k candidates: the
    heavy part of a record (Monte Carlo / sorted scans over V for without-replacement laws at k >= 3)."""
    acc = theory.acceptance(entry, p_node, q_node, k)  # the entry as configured (fuzzy's threshold)
    return acc.value, acc.stderr, theory.optimal_acceptance(p_node, q_node, k, entry.law)


def with_visit_theory(record: StepRecord, rows: list[tuple[int, torch.Tensor, torch.Tensor]], entry) -> StepRecord:
    """`record` with the theory of its visits filled in; rows: (visit index, p row [V], q row [V])."""
    visits = list(record.visits)
    for i, p_node, q_node in rows:
        alpha, stderr, optimal = visit_theory(entry, p_node, q_node, len(visits[i].candidates))
        visits[i] = replace(visits[i], alpha_exact=alpha, alpha_stderr=stderr, alpha_optimal=optimal)
    return replace(record, visits=tuple(visits))


def emitted_records(walk: Walk, text: TokenText) -> tuple[EmittedRecord, ...]:
    nodes = list(walk.path[1:]) + [walk.path[-1]]  # accepted nodes, then the final token extends the last
    triples = zip(walk.tokens, walk.kinds, nodes, strict=True)
    return tuple(EmittedRecord(t, text(t), kind, node) for t, kind, node in triples)


def step_record(scored: ScoredTree, walk: Walk, entry: Verifier, *, index: int, expected: float | None,
                times: StepTimes, top_n: int, text: TokenText, with_theory: bool = True) -> StepRecord:
    """Everything the viz shows about one step: the scored tree, how `entry` walked it, and the bookkeeping."""
    visits = tuple(
        visit_record(node, verdict, scored, entry, top_n, text, with_theory) for node, verdict in walk.visits
    )
    return StepRecord(
        index=index,
        verifier=entry.name,
        law=str(entry.law),
        nodes=node_records(scored, walk, top_n, text),
        visits=visits,
        accepted_path=walk.path,
        emitted=emitted_records(walk, text),
        expected_tokens=expected,
        target_forwards=times.target_forwards,
        draft_forwards=times.draft_forwards,
        draft_ms=times.draft_ms,
        target_ms=times.target_ms,
        verify_ms=times.verify_ms,
        tree_events=tree_event_records(walk, top_n, text),
    )


def bare_record(index, walk: Walk, entry, times: StepTimes, text: TokenText) -> StepRecord:
    """The fast path's record (config.record False): what the step emitted and what it cost, no per-node
    records and no theory, so a benchmark times decoding rather than bookkeeping."""
    return StepRecord(
        index=index, verifier=entry.name, law=str(entry.law), nodes=(), visits=(), accepted_path=walk.path,
        emitted=emitted_records(walk, text), expected_tokens=None, target_forwards=times.target_forwards,
        draft_forwards=times.draft_forwards, draft_ms=times.draft_ms, target_ms=times.target_ms,
        verify_ms=times.verify_ms,
    )
