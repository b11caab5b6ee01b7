"""Consistency checks on records from an untrusted source (an uploaded trace), so a bad file is
refused with a message instead of drawing something wrong, or stalling a worker on a huge tree.

Nothing here evaluates anything: a record is plain data (ints, floats, strs) checked field by field.
"""

from __future__ import annotations

from decoding.run.schema import BONUS, DRAFT, RESIDUAL, RESIDUAL_HIT, STATUSES, StepRecord, Trace

KINDS = (DRAFT, RESIDUAL, BONUS, RESIDUAL_HIT)
# Far above what the app and the CLI record (a tree of at most a few hundred nodes, top-N of 10-20,
# tokens of a few characters), low enough that drawing one step stays instant.
MAX_STEPS = 20_000
MAX_NODES = 4_096
MAX_TOP = 256
MAX_TEXT = 1_000
MAX_PROMPT = 200_000


def trace_problems(trace: Trace) -> list[str]:
    """Every problem of a whole trace (sizes first, then each step's consistency)."""
    if len(trace.steps) > MAX_STEPS:
        return [f"the trace has {len(trace.steps)} steps; at most {MAX_STEPS} are drawn"]
    if len(trace.prompt) > MAX_PROMPT:
        return [f"the trace's prompt has {len(trace.prompt)} characters; at most {MAX_PROMPT}"]
    return [msg for step in trace.steps for msg in step_problems(step)]


def step_problems(step: StepRecord) -> list[str]:
    """Everything that would make the views wrong or fail; empty when the step is drawable."""
    where = f"step {step.index + 1}"
    n = len(step.nodes)
    if n == 0 or step.nodes[0].parent != -1:
        return [f"{where}: the tree has no root"]
    if n > MAX_NODES:
        return [f"{where}: the tree has {n} nodes; at most {MAX_NODES} are drawn"]
    problems = size_problems(step, where)
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


def size_problems(step: StepRecord, where: str) -> list[str]:
    """Token texts and top-N lists larger than any real record: refused, not drawn."""
    texts = [n.text for n in step.nodes] + [e.text for e in step.emitted]
    texts += [t.text for n in step.nodes for t in n.top]
    texts += [t.text for v in step.visits for t in v.tests] + [t.label for v in step.visits for t in v.tests]
    texts += [u.note for v in step.visits for u in v.updates]
    texts += [t.text for v in step.visits for u in v.updates for t in u.residual_top]
    problems = [f"{where}: a token text has {len(t)} characters (at most {MAX_TEXT})" for t in texts
                if len(t) > MAX_TEXT][:1]
    tops = [len(n.top) for n in step.nodes] + [len(u.residual_top) for v in step.visits for u in v.updates]
    problems += [f"{where}: a top-N list has {k} entries (at most {MAX_TOP})" for k in tops if k > MAX_TOP][:1]
    return problems
