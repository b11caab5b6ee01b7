"""Small queries on a StepRecord that several views share."""

from __future__ import annotations

from decoding.run.schema import BONUS, RESIDUAL, EmittedRecord, NodeRecord, StepRecord, TestRecord, VisitRecord


def visit_at(step: StepRecord, node: int) -> VisitRecord | None:
    """The verification made at `node` (only nodes on the accepted path have one)."""
    return next((v for v in step.visits if v.node == node), None)


def tests_of_child(step: StepRecord, child: NodeRecord) -> tuple[TestRecord, ...]:
    """Tests made at the child's parent on any candidate drawn as this child."""
    if child.parent < 0:
        return ()
    visit = visit_at(step, child.parent)
    if visit is None:
        return ()
    parent = step.nodes[child.parent]
    return tuple(t for t in visit.tests if 0 <= t.candidate < len(parent.draws)
                 and parent.draws[t.candidate] == child.id)


def final_emitted(step: StepRecord) -> EmittedRecord | None:
    """The token that is not a drafted node: a residual sample or a bonus token."""
    last = step.emitted[-1] if step.emitted else None
    return last if last is not None and last.kind in (RESIDUAL, BONUS) else None


def token_p(node: NodeRecord, token: int) -> tuple[float | None, float | None]:
    """(p, q) of `token` in the node's recorded top-N, when it is there."""
    hit = next((t for t in node.top if t.token == token), None)
    return (hit.p, hit.q) if hit is not None else (None, None)


def ratio(p: float | None, q: float | None) -> float | None:
    if p is None or q is None or q <= 0:
        return None
    return p / q
