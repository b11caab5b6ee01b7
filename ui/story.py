"""The story panel: the shown step in one paragraph and its events, played in the page (assets/story.js).

Drawn from the StepRecord only (viz/story.py), so an imported trace tells its story with no model. On a
compared step a menu picks whose story is told. The inspector follows the event's node: story.js writes
"<story key>:<node>" into the hidden #story-node box, whose input event redraws the inspector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from decoding.run.schema import StepRecord, Trace
from ui import inspector
from ui.session import Session
from ui.story_about import LOSSY_WHY, about  # noqa: F401 - LOSSY_WHY: the module's name, kept
from ui.views import Out, Views
from viz.story_block import story_block
from viz.story_html import empty_html


def render(step: StepRecord, trace: Trace | None, position: int, verifier: str | None = None) -> str:
    """The story block of step `position` for `verifier` (None: the verifier that emitted); the replay file
    holds the same blocks (viz/story_block.py)."""
    return story_block(step, position, verifier, lambda key: about(key, trace))


@dataclass
class StoryPanel:
    html: gr.HTML
    verifier: gr.Dropdown
    node: gr.Textbox

    @classmethod
    def build(cls) -> StoryPanel:
        with gr.Column(variant="panel", elem_id="story-panel"):
            html = gr.HTML(empty_html(), js_on_load=None, elem_id="story-html")
            verifier = gr.Dropdown([], label="whose story (this step was compared)", visible=False,
                                   elem_id="story-verifier")
            node = gr.Textbox("", show_label=False, container=False, elem_id="story-node",
                              elem_classes="specscope-offscreen")
        return cls(html, verifier, node)

    def named(self) -> dict[str, Any]:
        return {"story": self.html, "story_verifier": self.verifier}

    def draw(self, session: Session, position: int) -> Out:
        step = session.steps[position - 1]
        keys = [v.key for v in step.compare.verdicts] if step.compare is not None else []
        return {self.html: render(step, session.trace, position),
                self.verifier: gr.update(choices=keys, value=step.verifier if keys else None, visible=bool(keys))}

    def clear(self) -> Out:
        return {self.html: empty_html(), self.verifier: gr.update(choices=[], value=None, visible=False)}


def pick(session: Session | None, position: Any, verifier: Any) -> str | Any:
    """Another compared verifier's story for the shown step (anything unreadable: the page as it is)."""
    steps = (session or Session()).steps
    try:
        index = min(max(1, int(float(position or 1))), len(steps))
    except (TypeError, ValueError):
        return gr.skip()
    if not steps:
        return gr.skip()
    return render(steps[index - 1], session.trace, index, str(verifier) if verifier else None)


def follow(panel: inspector.Inspector, session: Session | None, position: Any, value: Any) -> Out:
    """The inspector at the node the story is at ("<key>:<node>"; a node not in the step clears it)."""
    node = str(value or "").rsplit(":", 1)[-1]
    out = inspector.inspect(panel, session, position, node)
    try:
        out[panel.node] = gr.update(value=int(node))
    except ValueError:
        pass
    return out


def wire(views: Views, panel: StoryPanel, nodes: inspector.Inspector, slider: gr.Slider) -> None:
    panel.verifier.input(pick, [views.state, slider, panel.verifier], [panel.html], show_progress="hidden",
                         api_name="story_verifier")
    panel.node.change(lambda s, p, v: follow(nodes, s, p, v), [views.state, slider, panel.node],
                     [nodes.node, nodes.plot, nodes.tests], show_progress="hidden", trigger_mode="always_last",
                     api_name="story_node")
