"""Hover text for the tree's nodes (HTML for plotly: every token text is escaped)."""

from __future__ import annotations

from decoding.run.schema import EmittedRecord, NodeRecord, StepRecord, TestRecord, VisitRecord
from viz.lookup import ratio, tests_of_child, token_p, visit_at
from viz.palette import ORIGIN_NAMES, STATUS_NAMES
from viz.tokens import label, plotly_escape


def fmt(x: float | None, digits: int = 4) -> str:
    return "—" if x is None else f"{x:.{digits}g}"


def node_hover(step: StepRecord, node: NodeRecord) -> str:
    head = f"<b>{label(node.text, 40)}</b>  token {node.token} · node {node.id} · depth {node.depth}"
    lines = [head, f"status: {STATUS_NAMES[node.status]}"]
    if node.parent >= 0:
        lines.append(f"p = {fmt(node.p_token)} · q = {fmt(node.q_token)} · "
                     f"p/q = {fmt(ratio(node.p_token, node.q_token))}")
        lines += [test_line(t) for t in tests_of_child(step, node)] or [untested_line(step, node)]
    visit = visit_at(step, node.id)
    if visit is not None:
        lines.append(visit_line(visit))
    return "<br>".join(lines)


def test_line(test: TestRecord) -> str:
    verdict = "passed" if test.passed else "failed"
    return (f"test #{test.candidate + 1} at parent: {plotly_escape(test.label)} = "
            f"{fmt(test.numerator)}/{fmt(test.denominator)}"
            f" → threshold {fmt(test.threshold)}, u = {fmt(test.uniform)}: {verdict}")


def untested_line(step: StepRecord, node: NodeRecord) -> str:
    parent_visit = visit_at(step, node.parent)
    if parent_visit is None:
        return "not tested: its parent was not reached"
    if parent_visit.accepted is not None:
        return "not tested: another candidate at the parent was accepted first"
    return "not tested"


NOT_COMPUTED = "not computed for this step (the app computes it for the steps it shows while their run is live)"


def visit_line(visit: VisitRecord) -> str:
    if visit.alpha_exact is None:  # a lazy-theory record (ui/decode.py) whose step was not shown live
        return f"acceptance here: exact α and the optimum {NOT_COMPUTED}"
    return f"acceptance here: {alpha_text(visit)} · optimal for this law = {fmt(visit.alpha_optimal)}"


def alpha_text(visit: VisitRecord, digits: int = 4) -> str:
    """"exact α = a", or, where no exact route exists at this size, "α ≈ a ± se (Monte Carlo)": an estimate,
    which may even land above the optimum by its noise, so it must not read as exact."""
    if not visit.alpha_stderr:
        return f"exact α = {fmt(visit.alpha_exact, digits)}"
    return f"α ≈ {fmt(visit.alpha_exact, digits)} ± {fmt(visit.alpha_stderr, 2)} (Monte Carlo)"


def emitted_hover(step: StepRecord, emitted: EmittedRecord) -> str:
    at = step.nodes[emitted.node]
    p, q = token_p(at, emitted.token)
    lines = [f"<b>{label(emitted.text, 40)}</b>  token {emitted.token}",
             f"{ORIGIN_NAMES[emitted.kind]} emitted after node {emitted.node}",
             f"p = {fmt(p)} · q = {fmt(q)} (this node's next-token laws)"]
    visit = visit_at(step, emitted.node)
    if visit is not None and visit.updates:
        r = next((t.p for t in visit.updates[-1].residual_top if t.token == emitted.token), None)
        lines.append(f"residual probability = {fmt(r)}")
    return "<br>".join(lines)
