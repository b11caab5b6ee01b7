"""The story block of one step for one verifier, as the page shows it and the replay file holds it: the
paragraph, then the events of the verifier that emitted (viz/story.py) or of another verifier compared on the
step (viz/story_compare.py), with a note saying whose story it is.

One function for both (ui/story.py and viz/replay_html.py), so a replay file tells every step in the very
words of the live page. `about_of(key)` supplies what a record does not say (ui/story_about.py reads the
registry for it; viz reads no registry).
"""

from __future__ import annotations

from collections.abc import Callable

from decoding.run.schema import StepRecord
from viz.narrate import About
from viz.paragraph import step_paragraph
from viz.story import story_events
from viz.story_compare import verdict_events
from viz.story_html import story_html


def story_block(step: StepRecord, position: int, verifier: str | None = None,
                about_of: Callable[[str], About] | None = None) -> str:
    """The story block of step `position` (1-based) for `verifier` (None: the verifier that emitted)."""
    about_of = about_of or (lambda key: About())
    record = step.compare
    verdict = next((v for v in record.verdicts if v.key == verifier), None) if record is not None else None
    paragraph = step_paragraph(step, about_of(step.verifier))
    if verdict is None or verdict.key == step.verifier:
        return story_html(paragraph, story_events(step, about_of(step.verifier)), f"{position}:{step.verifier}")
    note = f"The story below is {verdict.key}'s, one of the verifiers compared on this step ({step.verifier} emitted)."
    return story_html(paragraph, verdict_events(verdict, step), f"{position}:{verdict.key}", note)
