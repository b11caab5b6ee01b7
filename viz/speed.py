"""The speed view's figure and table: why a draft shape is fast or slow on THIS machine (ui/speed.py).

Pure: plain numbers in (a `SpeedFacts`), a plotly figure and markdown out; no torch, no gradio. Three panels:
the cost of a target forward over N rows relative to one row (before and after this machine's product
plan) with the draft's cost per level; the expected tokens per step of each candidate shape (exact,
from this run's p and q); the predicted speed-up of each shape over the target alone, with the speed-up the
run measured for its own shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.palette import P_COLOR, Q_COLOR, RESIDUAL_COLOR

EXPLAIN = (
    "**Why the same algorithm gives 2-3x on a GPU and may lose on a CPU.** A speculative step drafts a few tokens "
    "cheaply, then checks all of them in ONE target forward over the tree's rows. It pays when that forward costs "
    "about what a one-token forward costs, so every accepted draft token is nearly free. On a GPU that holds: one "
    "token leaves the chip idle while the weights stream in, and 8 or 64 rows reuse the same weight reads (a flat "
    "curve on the left), so a deep tree wins, provided the draft is cheap and often accepted. A model as small as "
    "this 135M one barely loads a GPU: on an H100 its forward, replayed from CUDA graphs, takes 3.2 ms against "
    "transformers' 15 ms, 5x plain generate(), but the second row costs 1.35x the first and a draft level a "
    "quarter of a forward, while the trained head's acceptance stops near 1.4 tokens a step: no draft pays there, "
    "and the target alone is the fastest choice. On a CPU the few-row product is often dearer per row than "
    "it should be (MKL's BLAS re-packs the weights for each small product), so 3 rows can cost twice one row; then "
    "each drafted token must be accepted often enough to pay for its row and its draft forward, and when it is not,"
    " the fastest choice is no draft at all. So the calibration times each way of multiplying this torch build has "
    "(MKL, oneDNN on weights laid out once, numpy's BLAS) and keeps the fastest per row count: where one of them "
    "reads the weights once for a few rows, the CPU's curve turns flat like a GPU's. The chooser then does the "
    "arithmetic with this machine's measured costs and this run's exact acceptance."
)


@dataclass(frozen=True)
class ShapeRow:
    label: str  # e.g. "sd 1,1" or "target alone"
    tokens_per_step: float  # exact expectation from this run's p and q
    step_ms: float  # predicted from the calibrated costs
    speedup: float  # predicted tokens/s over the target alone's


@dataclass(frozen=True)
class SpeedFacts:
    machine: str  # CPU model (or GPU), threads, torch
    stock: tuple[tuple[int, float], ...]  # (rows, ms) of a target forward, stock products
    planned: tuple[tuple[int, float], ...]  # the same with the machine's product plan
    plan: str  # which few-row product was chosen, in words
    draft: tuple[tuple[int, float], ...]  # (parent rows, ms) of one draft level
    overhead_ms: float  # the rest of a step: overhead_ms + overhead_per_row_ms x the tree's rows
    shapes: tuple[ShapeRow, ...]  # fastest first (the chosen one first), then this run's own shape
    chosen: str  # the chooser's verdict, one sentence
    run_label: str | None = None  # this run's shape, when it has one
    run_predicted: float | None = None
    run_measured: float | None = None  # this run's tokens/s over the target alone (measured or calibrated)
    measured_how: str = ""
    nodes: int = 0  # p/q rows the acceptance was measured on
    overhead_per_row_ms: float = 0.0


def shown_shapes(facts: SpeedFacts, top: int) -> tuple[ShapeRow, ...]:
    """The `top` fastest shapes, and this run's own shape wherever it ranks."""
    return facts.shapes[:top] + tuple(s for s in facts.shapes[top:] if s.label.endswith("(this run)"))


def figure(facts: SpeedFacts, top: int = 10) -> go.Figure:
    fig = make_subplots(rows=1, cols=3, column_widths=[0.36, 0.32, 0.32], horizontal_spacing=0.09,
                        subplot_titles=("target forward of N rows (x 1 row, log)", "tokens per step (exact, this run)",
                                        "predicted speed-up over the target alone"))
    one = facts.planned[0][1] or 1.0
    rows = [str(n) for n, _ in facts.planned]
    fig.add_bar(x=[str(n) for n, _ in facts.stock], y=[ms / (facts.stock[0][1] or 1.0) for _, ms in facts.stock],
                name="stock products", marker_color=RESIDUAL_COLOR, row=1, col=1)  # timed at fewer sizes
    fig.add_bar(x=rows, y=[ms / one for _, ms in facts.planned], name="with this machine's plan",
                marker_color=P_COLOR, row=1, col=1)
    fig.add_bar(x=[f"draft {n}" for n, _ in facts.draft], y=[ms / one for _, ms in facts.draft],
                name="one draft level", marker_color=Q_COLOR, row=1, col=1)
    shown = shown_shapes(facts, top)
    labels = [s.label for s in shown]
    fig.add_bar(x=labels, y=[s.tokens_per_step for s in shown], marker_color=Q_COLOR, showlegend=False,
                row=1, col=2)
    fig.add_bar(x=labels, y=[s.speedup for s in shown], showlegend=False, row=1, col=3,
                marker_color=[P_COLOR if s.speedup > 1 else RESIDUAL_COLOR for s in shown])
    fig.add_hline(y=1.0, line_dash="dot", row=1, col=3)
    fig.update_yaxes(type="log", row=1, col=1)  # a GPU's flat curve and a CPU's steep one on one scale
    fig.update_xaxes(categoryorder="array", categoryarray=rows + [f"draft {n}" for n, _ in facts.draft], row=1, col=1)
    if facts.run_measured is not None and facts.run_label:
        fig.add_scatter(x=[f"{facts.run_label} (this run)"], y=[facts.run_measured], mode="markers",
                        name="this run, measured",
                        marker=dict(symbol="diamond", size=13, color="black"), row=1, col=3)
    fig.update_layout(height=420, margin=dict(l=40, r=20, t=60, b=90), barmode="group",
                      legend=dict(orientation="h", y=-0.28), title=dict(text=f"Speed on {facts.machine}", x=0.01))
    return fig


def summary_markdown(facts: SpeedFacts, top: int = 10) -> str:
    lines = [f"**On {facts.machine}.** {facts.chosen}", "",
             f"Products: {facts.plan}. Draft: "
             + ", ".join(f"{ms:.1f} ms a level over {n} row{'s' * (n > 1)}" for n, ms in facts.draft)
             + f"; the rest of a step {facts.overhead_ms:.1f} ms"
             + (f" + {facts.overhead_per_row_ms:.2f} ms a row. " if facts.overhead_per_row_ms else ". ")
             + (f"Acceptance from {facts.nodes} visited nodes of this run (exact, from their p and q)."
                if facts.nodes else "Acceptance from the calibration's own run (this run has none to read)."),
             ""]
    if facts.run_label and facts.run_predicted is not None:
        measured = (f"{facts.run_measured:.2f}x ({facts.measured_how})" if facts.run_measured is not None
                    else f"— ({facts.measured_how})" if facts.measured_how else "—")
        lines += [f"This run, {facts.run_label}: predicted {facts.run_predicted:.2f}x, measured {measured}.", ""]
    lines += ["| shape | tokens / step | step ms | predicted x target alone |", "|---|---|---|---|"]
    lines += [f"| {s.label} | {s.tokens_per_step:.2f} | {s.step_ms:.1f} | {s.speedup:.2f} |"
              for s in shown_shapes(facts, top)]
    return "\n".join(lines)
