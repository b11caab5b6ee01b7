"""The step's draft tree, the generated text coloured by origin, and the replay slider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import plotly.graph_objects as go

from ui import decode
from ui.endpoints import public
from ui.run_cache import RunCache
from ui.session import Session
from ui.views import Out, Views, plot
from viz import node_figure, text, tree_figure


@dataclass
class TreeView:
    slider: gr.Slider
    tree: gr.Plot
    text: gr.HighlightedText

    @classmethod
    def build(cls) -> TreeView:
        return cls(
            slider=gr.Slider(1, 2, 1, step=1, label="replay step", interactive=False, elem_id="step-slider"),
            tree=gr.Plot(label="draft tree of this step", show_label=False, elem_id="tree-plot"),
            text=gr.HighlightedText(label="generated text, coloured by origin", color_map=text.color_map(),
                                    show_legend=True, show_inline_category=False, elem_id="generated-text"),
        )

    def named(self) -> dict[str, Any]:
        return {"slider": self.slider, "tree": self.tree, "text": self.text}

    def draw(self, session: Session, position: int) -> Out:
        steps = session.steps
        return {
            self.slider: gr.update(minimum=1, maximum=max(2, len(steps)), value=position,
                                   interactive=len(steps) > 1),
            self.tree: plot(tree_figure.tree_spec(steps[position - 1])),
            self.text: text.highlighted(steps[:position]),
        }

    def clear(self) -> Out:
        return {self.slider: gr.update(minimum=1, maximum=2, value=1, interactive=False), self.tree: None,
                self.text: []}


def plotly_warmup() -> gr.Plot:
    """A plot drawn off-screen at page load, so the browser loads plotly.js (4.6 MB) and compiles its
    drawing code (scatter markers and text, lines, grouped bars, legend, subplot titles) then.

    Gradio imports plotly.js only when a page first shows a figure, and draws it a tick after the
    update: without this, the first Step's figures (download, parse, first draw) land inside the
    second Step, several times the rest of that click (docs/speed.md, "Measurements the code's comments
    cite"). Off-screen, not display:none (visible="hidden"): a plot in a box of no size skips the text
    measuring a real draw does.
    """
    return gr.Plot(warmup_figure(), show_label=False, elem_id="plotly-warmup", elem_classes="specscope-offscreen")


def warmup_figure() -> go.Figure:
    """Every kind of drawing the step's figures use, in one small figure (never seen)."""
    points = dict(x=[0, 1, 1], y=[0, 0, 1], xaxis="x", yaxis="y")
    bars = dict(x=["a", "b"], y=[0.5, 0.2], xaxis="x2", yaxis="y2")
    data = [dict(type="scatter", mode="lines", line={"dash": "dot"}, **points),
            dict(type="scatter", mode="markers+text", text=["a", "b", "c"], textposition="top center",
                 marker={"symbol": ["square", "x", "star"], "line": {"width": 1}}, hovertext=["a", "b", "c"],
                 hoverinfo="text", **points),
            dict(type="bar", name="p", **bars), dict(type="bar", name="q", marker={"opacity": 0.5}, **bars)]
    layout = {**node_figure.subplots(("warm", "up")), "title": {"text": "<b>warm-up</b>"}, "barmode": "group",
              "legend": {"orientation": "h"}, "height": 300}
    return go.Figure({"data": data, "layout": layout})


def scrub(views: Views, session: Session | None, position: Any, request: gr.Request = None, *,
          runs: RunCache | None = None) -> Out:
    """Replay step `position` from its records (no model): its exact theory is computed now if the live
    run in `runs` still keeps the step's rows (ui/decode.py: lazy theory), else it shows "not computed"."""
    session = session or Session()
    try:
        step = int(float(position)) if position not in (None, "") else None
    except (TypeError, ValueError):
        step = None
    if step is not None and session.steps:
        index = min(max(1, step), len(session.steps)) - 1
        session = decode.with_theory(session, [index], runs, request)
    return views.guarded(session, lambda: views.draw(session, step))


def wire(views: Views, panel: TreeView, runs: RunCache | None = None) -> None:
    def on_scrub(session: Session | None, position: Any, request: gr.Request) -> Out:
        return scrub(views, session, position, request, runs=runs)

    panel.slider.input(on_scrub, [views.state, panel.slider], views.outputs(),
                       trigger_mode="always_last", show_progress="hidden", **public("scrub"))
