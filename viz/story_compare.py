"""The story of one verifier of a compared step (decoding/compare): its record holds its tree, each visited
node's outcome and exact numbers, and what it emitted (not each test), so its story tells those."""

from __future__ import annotations

from decoding.run.compare_schema import CompareVerdict
from decoding.run.schema import StepRecord
from viz.narrate import num, plural, tok
from viz.story import StoryEvent


def verdict_events(verdict: CompareVerdict, step: StepRecord) -> list[StoryEvent]:
    """Draft, each visited node, the emitted tokens; highlights only where it judged the step's own tree."""
    same = _same_tree(verdict, step)
    n = len(verdict.tokens)

    def focus(*ids: int) -> tuple[int, ...]:
        return tuple(ids) if same else ()

    events = [StoryEvent("draft", 0, focus(*range(n)),
                         f"{verdict.key} judges a tree of {plural(n - 1, 'drafted token')} drawn with the "
                         f"{verdict.law} law" + ("; it is the step's own tree." if same else
                                                 "; its own tree (drawn in the Compare tab)."))]
    for visit in verdict.visits:
        children = [i for i, parent in enumerate(verdict.parents) if parent == visit.node]
        exact = "not computed" if visit.exact_acceptance is None else num(visit.exact_acceptance)
        if visit.accepted is None:
            what = "every candidate was rejected, so a residual token is emitted"
        else:
            child = children[visit.accepted] if visit.accepted < len(children) else visit.node
            what = f"candidate {visit.accepted + 1}, {tok(verdict.texts[child])}, is accepted"
        events.append(StoryEvent("visit", visit.node, focus(visit.node, *children),
                                 f"At node {visit.node} ({tok(verdict.texts[visit.node])}), "
                                 f"{plural(visit.k, 'candidate')}: "
                                 f"{what}. Given these very drafts it accepts with probability "
                                 f"{num(visit.conditional_acceptance)}; its exact acceptance here is {exact}."))
    words = ", ".join(tok(t) for t in verdict.emitted_texts)
    events.append(StoryEvent("emitted", verdict.accepted_path[-1] if verdict.accepted_path else 0,
                             focus(*verdict.accepted_path),
                             f"{verdict.key} would emit {plural(len(verdict.emitted), 'token')}: {words}. "
                             f"Its exact expected number for this tree is {verdict.expected_tokens:.2f}."))
    return events


def _same_tree(verdict: CompareVerdict, step: StepRecord) -> bool:
    return (verdict.tokens == tuple(n.token for n in step.nodes)
            and verdict.parents == tuple(n.parent for n in step.nodes))
