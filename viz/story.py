"""The story of a step: its events in the order the verifier made them, each told in words (pure, no torch).

Derived from the StepRecord alone (so an imported trace replays it): draft -> score -> each test ->
each residual update -> the residual sample or bonus token -> the emitted tokens. A tree-level verifier
(block, traversal, typical_medusa, or any later one) contributes its `tree_events` in their order instead
of per-node tests. Every event names the node the inspector should follow and the tree points to
highlight (node ids; the residual/bonus marker is id len(step.nodes), as in viz/tree_figure.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from decoding.run.schema import StepRecord, TestRecord, TreeEventRecord, UpdateRecord, VisitRecord
from viz import narrate
from viz.lookup import final_emitted
from viz.narrate import About


@dataclass(frozen=True)
class StoryEvent:
    kind: str  # draft, score, test, update, residual, bonus, emitted, or a tree-level event's own kind
    node: int  # the node the inspector follows for this event
    focus: tuple[int, ...]  # tree points highlighted (the rest dimmed)
    text: str  # one or two plain sentences with the event's numbers


def story_events(step: StepRecord, about: About | None = None) -> list[StoryEvent]:
    """Every event of the step, in order (`about`: what the record does not say, e.g. why a verifier is lossy)."""
    about = about or About()
    events = [_draft(step, about), _score(step)]
    if step.tree_events:
        events += [_tree_event(step, e) for e in step.tree_events]
    else:
        for visit in step.visits:
            events += _visit_events(step, visit)
        extra = final_emitted(step)
        if extra is not None:
            kind = "residual" if extra.kind == "residual" else "bonus"
            events.append(StoryEvent(kind, extra.node, (extra.node, len(step.nodes)),
                                     narrate.final_token(step, extra)))
    events.append(StoryEvent("emitted", step.accepted_path[-1] if step.accepted_path else 0,
                             _emitted_focus(step), narrate.emitted(step, about)))
    return events


def decisions(events: list[StoryEvent]) -> list[StoryEvent]:
    """The events that are tests (node-level tests, or a tree-level verifier's own events but its emission)."""
    return [e for e in events if e.kind not in ("draft", "score", "update", "residual", "bonus", "emitted", "emit")]


def _draft(step: StepRecord, about: About) -> StoryEvent:
    return StoryEvent("draft", 0, tuple(n.id for n in step.nodes), narrate.draft(step, about))


def _score(step: StepRecord) -> StoryEvent:
    return StoryEvent("score", 0, tuple(n.id for n in step.nodes), narrate.score(step))


def _visit_events(step: StepRecord, visit: VisitRecord) -> list[StoryEvent]:
    """Each test at the node, each followed by the residual update it caused (as the node's table)."""
    updates = {u.after_test: u for u in visit.updates}
    events = []
    for i, test in enumerate(visit.tests):
        events.append(_test(step, visit, test))
        if i in updates:
            events.append(_update(step, visit, updates[i]))
    return events


def _child(step: StepRecord, visit: VisitRecord, candidate: int) -> int | None:
    draws = step.nodes[visit.node].draws
    return draws[candidate] if 0 <= candidate < len(draws) else None


def _test(step: StepRecord, visit: VisitRecord, test: TestRecord) -> StoryEvent:
    child = _child(step, visit, test.candidate)
    focus = (visit.node,) if child is None else (visit.node, child)
    return StoryEvent("test", visit.node, focus, narrate.test(step, visit, test))


def _update(step: StepRecord, visit: VisitRecord, update: UpdateRecord) -> StoryEvent:
    tested = visit.tests[update.after_test] if 0 <= update.after_test < len(visit.tests) else None
    child = _child(step, visit, tested.candidate) if tested is not None else None
    focus = (visit.node,) if child is None else (visit.node, child)
    return StoryEvent("update", visit.node, focus, narrate.update(update))


def _tree_event(step: StepRecord, event: TreeEventRecord) -> StoryEvent:
    node = event.node if 0 <= event.node < len(step.nodes) else 0
    path = _path_to(step, node)
    focus = (*path, len(step.nodes)) if event.kind == "emit" and final_emitted(step) is not None else path
    return StoryEvent(event.kind, node, focus, narrate.tree_event(event))


def _path_to(step: StepRecord, node: int) -> tuple[int, ...]:
    path = [node]
    while step.nodes[path[-1]].parent >= 0:
        path.append(step.nodes[path[-1]].parent)
    return tuple(reversed(path))


def _emitted_focus(step: StepRecord) -> tuple[int, ...]:
    extra = (len(step.nodes),) if final_emitted(step) is not None else ()
    return (*step.accepted_path, *extra)
