"""A tree-level verifier's tests as a story (block, traversal, typical_medusa, hsd): one row per event, in
the order it happened, with the same columns as the node-level tests table."""

from __future__ import annotations

from decoding.run.schema import StepRecord, TreeEventRecord
from viz.tokens import shorten, visible

EVENT_NAMES = {
    "coin": "coin (position)",
    "tau": "tau = last pass",
    "try": "try leaf",
    "delete": "delete leaf, update parent",
    "typical": "typical test",
    "choose": "choose path",
    "ratio": "prefix ratio r_k = P/Q",
    "stepback": "step-back coin (position)",
    "final": "whole-draft coin",
    "emit": "emit",
}


def story_rows(step: StepRecord, node_id: int | None = None, digits: int | None = 4) -> list[list]:
    """Rows of the step's tree-level story; rows about `node_id` are marked with ▶."""
    return [_row(e, node_id, digits) for e in step.tree_events]


def _row(e: TreeEventRecord, node_id: int | None, digits: int | None) -> list:
    mark = "▶ " if node_id is not None and e.node == node_id else ""
    passed = "" if e.passed is None else "yes" if e.passed else "no"
    note = e.note
    if e.rows:
        note += " → rows: " + ", ".join(f"{shorten(visible(t.text), 12)} {t.p:.3f}" for t in e.rows[:4])
    return [mark + EVENT_NAMES.get(e.kind, e.kind), f"node {e.node}", shorten(visible(e.text), 24),
            _num(e.numerator, digits), _num(e.denominator, digits), _num(e.threshold, digits),
            _num(e.uniform, digits), passed, f"{e.label}: {note}" if e.label else note]


def _num(x: float | None, digits: int | None) -> float | str:
    if x is None:
        return ""
    return x if digits is None else round(x, digits)
