"""Consistency checks on a StepRecord from an untrusted source (an uploaded trace), so a bad file
is refused with a message instead of drawing something wrong."""

from __future__ import annotations

from decoding.run.schema import BONUS, DRAFT, RESIDUAL, RESIDUAL_HIT, STATUSES, StepRecord

KINDS = (DRAFT, RESIDUAL, BONUS, RESIDUAL_HIT)


def step_problems(step: StepRecord) -> list[str]:
    """Everything that would make the views wrong or fail; empty when the step is drawable."""
    where = f"step {step.index + 1}"
    n = len(step.nodes)
    problems = []
    if n == 0 or step.nodes[0].parent != -1:
        return [f"{where}: the tree has no root"]
    for i, node in enumerate(step.nodes):
        if node.id != i:
            problems.append(f"{where}: node {i} carries id {node.id}")
        if node.status not in STATUSES:
            problems.append(f"{where}: node {i} has an unknown status {node.status!r}")
        if i > 0 and not 0 <= node.parent < i:
            problems.append(f"{where}: node {i} has parent {node.parent} (parents come first)")
        if any(not 0 < d < n for d in node.draws):
            problems.append(f"{where}: node {i} draws a child outside the tree")
    problems += [f"{where}: a visit names node {v.node}, outside the tree" for v in step.visits if not 0 <= v.node < n]
    problems += [f"{where}: the accepted path leaves the tree" for a in step.accepted_path if not 0 <= a < n][:1]
    for e in step.emitted:
        if e.kind not in KINDS:
            problems.append(f"{where}: an emitted token has an unknown kind {e.kind!r}")
        if not 0 <= e.node < n:
            problems.append(f"{where}: an emitted token extends node {e.node}, outside the tree")
    return problems
