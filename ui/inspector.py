"""The node inspector: p, q and the residual at one node of the step, and its tests in order."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import gradio as gr

from ui.endpoints import public
from ui.session import Session
from ui.views import Out, Views, plot
from viz import node_figure
from viz.tokens import shorten, visible

# event, candidate, token, numerator, denominator, threshold, u, passed, note: narrow number columns, a wide note
# (the headers' font is smaller (app.CSS) so "candidate" and "denominator" fit whole in their columns)
TEST_WIDTHS = ["12%", "10%", "9%", "10%", "11%", "10%", "9%", "8%", "21%"]
# what the symbols in the tests' notes (each rule's test label: "r/q", "r(x)/d(x)", "p/q'", ...) stand for
SYMBOLS = ("<small>*note*: p = the target's probability, q = the draft's; **r** = the residual, the target's mass "
           "left after the rejections so far; **d** = the law the candidate was drawn from (q without the earlier "
           "candidates, for draws without replacement); **q'** = q without the rejected candidates. A test passes "
           "when u ≤ threshold = min(1, numerator / denominator). Other symbols follow the verifier's paper; the "
           "repository's docs/verifiers.md gives each rule's formulas.</small>")


@dataclass
class Inspector:
    node: gr.Dropdown
    plot: gr.Plot
    tests: gr.Dataframe

    @classmethod
    def build(cls) -> Inspector:
        with gr.Column(variant="panel"):
            node = gr.Dropdown([], label="inspect a node of this step", elem_id="node-select")
            plot = gr.Plot(label="p, q and the residual at this node", show_label=False, elem_id="node-plot")
            tests = gr.Dataframe(headers=list(node_figure.TEST_HEADERS), label="tests at this node, in order",
                                 datatype="str", interactive=False, wrap=True, elem_id="tests-table",
                                 column_widths=TEST_WIDTHS)
            gr.Markdown(SYMBOLS, elem_id="tests-legend")  # under the table: its notes' symbols in words
        return cls(node=node, plot=plot, tests=tests)

    def named(self) -> dict[str, Any]:
        return {"nodes": self.node, "node_plot": self.plot, "tests": self.tests}

    def draw(self, session: Session, position: int) -> Out:
        step = session.steps[position - 1]
        node = default_node(step)
        return {self.node: gr.update(choices=node_choices(step), value=node),
                self.plot: plot(node_figure.node_spec(step, node)), self.tests: table(step, node)}

    def clear(self) -> Out:
        return {self.node: gr.update(choices=[], value=None), self.plot: None, self.tests: table(None, 0)}


def table(step, node: int) -> dict:
    rows = node_figure.tests_table(step, node) if step is not None else []
    return {"data": rows or [[""] * len(node_figure.TEST_HEADERS)], "headers": list(node_figure.TEST_HEADERS)}


def default_node(step) -> int:
    """The last verified node: where this step's story ends (a rejection, or a leaf's bonus)."""
    return step.visits[-1].node if step.visits else 0


def node_choices(step) -> list[tuple[str, int]]:
    return [(f"{n.id}: {shorten(visible(n.text), 20)} ({n.status}{', verified' if _verified(step, n.id) else ''})",
             n.id) for n in step.nodes]


def _verified(step, node: int) -> bool:
    return any(v.node == node for v in step.visits)


def inspect(panel: Inspector, session: Session | None, position: Any, node: Any) -> Out:
    """Draw the chosen node of the shown step; anything unreadable clears the inspector."""
    steps = (session or Session()).steps
    try:
        position, node = int(float(position or 1)), int(float(node))
    except (TypeError, ValueError):
        return {panel.plot: None, panel.tests: table(None, 0)}
    if not steps:
        return {panel.plot: None, panel.tests: table(None, 0)}
    step = steps[min(max(1, position), len(steps)) - 1]
    if not 0 <= node < len(step.nodes):
        return {panel.plot: None, panel.tests: table(None, 0)}
    return {panel.plot: plot(node_figure.node_spec(step, node)), panel.tests: table(step, node)}


def wire(views: Views, panel: Inspector, slider: gr.Slider) -> None:
    panel.node.input(partial(inspect, panel), [views.state, slider, panel.node], [panel.plot, panel.tests],
                     show_progress="hidden", **public("inspect_node"))
