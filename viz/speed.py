"""The speed view's figure and table: why a draft shape is fast or slow on THIS machine (ui/speed.py).

Pure: plain numbers in (a `SpeedFacts`), a plotly figure and markdown out; no torch, no gradio. Three charts:
across the top, the cost of a target forward over N rows relative to one row (before and after this machine's
product plan) with the draft's cost per level; below, one row per shape, the expected tokens per step of each
candidate shape (exact, from this run's p and q) and its predicted speed-up over the target alone, with the
speed-ups the run measured for its own shape. Each measured number says what it is measured on; the one over
the target alone the user ran is viz/stats.py's, the Run statistics tab's number. The markdown also shows the
chain acceptance per depth the chooser used and, for the trained draft head, its card (the head before, this one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from decoding.run.schema import StepRecord
from viz.palette import P_COLOR, Q_COLOR, RESIDUAL_COLOR
from viz.stats import Against, slow_reasons

EXPLAIN = """**Why the same algorithm gives 2-3x on a GPU and may lose on a CPU.**

- A speculative step drafts a few tokens cheaply, then checks all of them in ONE target forward over the tree's \
rows. It pays when that forward costs about what a one-token forward costs: then every accepted draft token is \
nearly free.
- **On a GPU** that holds: one token leaves the chip idle while the weights stream in, and 8 or 64 rows reuse \
the same weight reads (a flat curve in the top chart). A deep tree wins, provided the draft is cheap and often \
accepted.
- **But a model as small as this 135M one** barely loads a GPU. Measured on one NVIDIA H100 (docs/speed.md, \
"Measured on a GPU with CUDA graphs"; not this machine): its forward, replayed from CUDA graphs, took 3.2 ms \
against transformers' 15 ms, yet the second row cost 1.35x the first and a draft level a quarter of a forward, \
so with the head's acceptance near 1.4 tokens a step no draft paid there.
- **The head trained on a GPU** accepts about 0.6-0.67 a level (a chain of 3: 2.4 tokens a step at T = 0), yet on \
an H200 it still lost: a draft level cost about 2 ms of Python and launches against a 3.3 ms forward (docs/speed.md, \
"The head trained on a GPU", "The head trained on again"). On a 2-core CPU, where a forward costs 13-21 ms and a \
level 1-2 ms, it pays: 1.2-1.5x the target alone on held-out prompts (docs/speed.md, "Rows made cheap").
- **On a CPU** the few-row product is often dearer per row than it should be (MKL's BLAS re-packs the weights \
for each small product), so 3 rows can cost twice one row. Each drafted token must then be accepted often \
enough to pay for its row and its draft forward; when it is not, the fastest choice is no draft at all.
- **So the calibration** times each way of multiplying at hand (MKL, oneDNN, numpy's BLAS, a small kernel \
compiled here, in AVX-512 where the CPU has it) and keeps the fastest per row count: where one reads the weights \
once for a few rows, the CPU's curve turns flat like a GPU's. Where a kernel for a few rows is slower than one \
for a few more, those rows run as more, zero rows added ("1-2 rows run as 4"). The chooser then does the \
arithmetic with this machine's measured costs and this run's exact acceptance.
"""


@dataclass(frozen=True)
class ShapeRow:
    label: str  # e.g. "sd 1,1" or "target alone"
    tokens_per_step: float  # exact expectation from this run's p and q
    step_ms: float  # predicted from the calibrated costs
    speedup: float  # predicted tokens/s over the target alone's


@dataclass(frozen=True)
class CardRow:
    """One head's line of the trained draft head's card, on its held-out prompts."""

    name: str  # "the head before" (the one this head replaced) or "this head"
    by_depth: tuple[float, ...]  # A(1, d), d = 1..: a chain's exact acceptance at depth d, given depth d reached
    chain: float  # E[tokens/step] of a chain of 3 (sd 1,1,1)
    tree: float  # E[tokens/step] of the (4,2,2,1) tree


@dataclass(frozen=True)
class HeadCard:
    """The embedded-head pair's card (assets/draft_head/head.json), at the temperature nearest the run's."""

    temperature: float
    prompts: int
    new_tokens: int
    rows: tuple[CardRow, ...]  # the head before, then this head


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
    run_against: Against | None = None  # over the target alone the user ran (viz/stats.py: Run statistics' too)
    run_below: tuple[str, ...] = ()  # why a measured number is far below the prediction, where the run can tell
    depth_rates: tuple[float, ...] = ()  # A(1, d), d = 1..: the chain acceptance the chooser predicted with
    card: HeadCard | None = None  # the trained draft head's card (embedded-head only)
    warning: str = ""  # said first: the calibration was timed while other processes took the cores


def shown_shapes(facts: SpeedFacts, top: int) -> tuple[ShapeRow, ...]:
    """The `top` fastest shapes, and this run's own shape wherever it ranks."""
    return facts.shapes[:top] + tuple(s for s in facts.shapes[top:] if s.label.endswith("(this run)"))


ROWS_PX = 250  # the cost curve's height
SHAPE_PX = 26  # a shape's row in the two bottom charts
GAP_PX = 160  # between the two rows: the curve's tick labels and axis title, its legend, the bottom titles
UNDER_AXIS_PX = 55  # an x axis's tick labels and title, above its legend
MARGIN = dict(l=40, r=40, t=70, b=130)  # the bottom legend (up to 3 lines at 800 px) in the bottom margin
TOKENS_TITLE, SPEEDUP_TITLE = "tokens per step<br>(exact, this run)", "predicted speed-up<br>over the target alone"
FAR_BELOW = 0.8  # a measured speed-up under this share of the prediction gets a line saying why
FASTER, SLOWER, ALONE = "predicted faster than the target alone", "predicted slower", "target alone"
MEASURED = "measured: its steps after the first vs the calibrated target alone"
MEASURED_RAN = "measured: vs the target alone you ran (decoding time only)"


def figure(facts: SpeedFacts, top: int = 10) -> go.Figure:
    """The cost curve across the top (its own legend under it); below, one row per shape, fastest first: its
    exact tokens per step and its predicted speed-up (the second legend says what the colours are). Stacked
    so the titles and labels have room at any width (three charts side by side overlapped at 800 px)."""
    shown = shown_shapes(facts, top)
    bottom_px = SHAPE_PX * len(shown) + 20
    plot_px = ROWS_PX + GAP_PX + bottom_px
    fig = make_subplots(rows=2, cols=2, specs=[[{"colspan": 2}, None], [{}, {}]], horizontal_spacing=0.06,
                        row_heights=[ROWS_PX, bottom_px], vertical_spacing=GAP_PX / plot_px,
                        subplot_titles=("cost of a target forward over N rows, x one row (log scale)",
                                        TOKENS_TITLE, SPEEDUP_TITLE))
    _cost_curve(fig, facts)
    _shapes(fig, facts, shown)
    under_curve = fig.layout.yaxis.domain[0] - UNDER_AXIS_PX / plot_px
    fig.update_layout(height=plot_px + MARGIN["t"] + MARGIN["b"], margin=MARGIN, barmode="group",
                      plot_bgcolor="white", title=dict(text=f"Speed on {facts.machine}", x=0.01),
                      legend=dict(orientation="h", x=0, xanchor="left", y=under_curve, yanchor="top",
                                  font=dict(size=11)),
                      legend2=dict(orientation="h", x=0, xanchor="left", y=-UNDER_AXIS_PX / plot_px,
                                   yanchor="top", font=dict(size=11)))
    fig.update_xaxes(gridcolor="#EEEEEE")
    fig.update_yaxes(gridcolor="#EEEEEE")
    return fig


def _cost_curve(fig: go.Figure, facts: SpeedFacts) -> None:
    one = facts.planned[0][1] or 1.0
    rows = [str(n) for n, _ in facts.planned]
    drafts = [f"draft {n}" for n, _ in facts.draft]
    stock = [ms / (facts.stock[0][1] or 1.0) for _, ms in facts.stock]
    planned, draft = [ms / one for _, ms in facts.planned], [ms / one for _, ms in facts.draft]
    fig.add_bar(x=[str(n) for n, _ in facts.stock], y=stock,
                name="stock products", marker_color=RESIDUAL_COLOR, legend="legend", row=1, col=1)
    fig.add_bar(x=rows, y=planned, name="with this machine's plan",
                marker_color=P_COLOR, legend="legend", row=1, col=1)
    fig.add_bar(x=drafts, y=draft, name="one draft level over N parents",
                marker_color=Q_COLOR, legend="legend", row=1, col=1)
    ticks = log_ticks(stock + planned + draft)  # a GPU's flat curve and a CPU's steep one on one scale, 1-2-5
    fig.update_yaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks], row=1, col=1)
    fig.update_xaxes(categoryorder="array", categoryarray=rows + drafts, title_text="rows in one forward",
                     row=1, col=1)


def log_ticks(values: list[float]) -> list[float]:
    """The 1-2-5 values from just under the smallest positive value to just over the largest, over as many decades
    as they span: a log axis labelled by plotly alone names every digit of each decade it spans (a draft level at
    0.07x of a forward and a verify at 2x span two; a busy machine's calibration once timed a bar at 815x)."""
    shown = [v for v in values if v > 0] or [1.0]
    lo, hi = min(shown), max(shown)
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = [m * 10.0 ** e for e in range(first, last + 1) for m in (1, 2, 5)]
    below = max(t for t in steps if t <= lo * (1 + 1e-12))  # 10 ** first <= lo (rounding aside)
    above = min(t for t in steps if t >= hi * (1 - 1e-12))  # 10 ** last >= hi
    return [t for t in steps if below <= t <= above]


def _shapes(fig: go.Figure, facts: SpeedFacts, shown: tuple[ShapeRow, ...]) -> None:
    labels = [s.label for s in shown]
    fig.add_bar(y=labels, x=[s.tokens_per_step for s in shown], orientation="h", marker_color=Q_COLOR,
                name="tokens per step (exact)", text=[f"{s.tokens_per_step:.2f}" for s in shown],
                textposition="outside", cliponaxis=False, legend="legend2", row=2, col=1)
    for name, color, part in _by_verdict(shown):
        fig.add_bar(y=[s.label for s in part], x=[s.speedup for s in part], orientation="h", marker_color=color,
                    name=name, text=[f"{s.speedup:.2f}x" for s in part], textposition="outside", cliponaxis=False,
                    legend="legend2", row=2, col=2)
    if facts.run_measured is not None and facts.run_label:
        fig.add_scatter(y=[f"{facts.run_label} (this run)"], x=[facts.run_measured], mode="markers", name=MEASURED,
                        marker=dict(symbol="diamond", size=13, color="black"), legend="legend2", row=2, col=2)
    if facts.run_against is not None and facts.run_label:
        fig.add_scatter(y=[f"{facts.run_label} (this run)"], x=[facts.run_against.decoding], mode="markers",
                        name=MEASURED_RAN, marker=dict(symbol="diamond-open", size=13, color="black",
                                                       line=dict(width=2)), legend="legend2", row=2, col=2)
    fig.add_vline(x=1.0, line_dash="dot", row=2, col=2)
    for col in (1, 2):  # both charts read the same shapes, top to bottom, fastest first
        fig.update_yaxes(categoryorder="array", categoryarray=labels, autorange="reversed", row=2, col=col)
    fig.update_yaxes(showticklabels=False, row=2, col=2)
    most = max([s.speedup for s in shown] + [facts.run_measured or 0, getattr(facts.run_against, "decoding", 0)])
    fig.update_xaxes(range=[0, 1.25 * max(s.tokens_per_step for s in shown)], title_text="tokens", row=2, col=1)
    fig.update_xaxes(range=[0, 1.25 * max(most, 1.0)], title_text="x the target alone", row=2, col=2)


def _by_verdict(shown: tuple[ShapeRow, ...]) -> list[tuple[str, str, list[ShapeRow]]]:
    """The speed-up bars in three colours, each named in the legend: faster, the target alone, slower."""
    alone = [s for s in shown if s.label == ALONE]
    return [(FASTER, P_COLOR, [s for s in shown if s.speedup > 1 and s.label != ALONE]),
            (ALONE, "#777777", alone),
            (SLOWER, RESIDUAL_COLOR, [s for s in shown if s.speedup <= 1 and s.label != ALONE])]


def below_prediction(steps: Sequence[StepRecord], predicted: float, predicted_step_ms: float,
                     measured: float | None, against: Against | None) -> tuple[str, ...]:
    """Why a measured speed-up is far below the prediction, where this run's records can tell; () when none is.
    The calibrated number leaves the first step out, the one against the target alone you ran keeps it."""
    low_calibrated = measured is not None and measured < FAR_BELOW * predicted
    low_ran = against is not None and against.decoding < FAR_BELOW * predicted
    if not (low_calibrated or low_ran):
        return ()
    reasons = slow_reasons(steps, first_included=low_ran)
    later = steps[1:]
    ms = sum(s.decode_ms for s in later) / len(later) if later else 0.0
    if ms > 1.25 * predicted_step_ms > 0:
        reasons.insert(0, f"its steps after the first took {ms:.0f} ms each where {predicted_step_ms:.0f} were "
                          "predicted (the machine busier than when it was calibrated)")
    if not reasons:
        reasons.append("the machine's speed drifts between the calibration and the run: calibrate again idle")
    return tuple(reasons)


def summary_markdown(facts: SpeedFacts, top: int = 10) -> str:
    lines = [f"⚠️ {facts.warning}", ""] if facts.warning else []
    lines += [f"**On {facts.machine}** — {facts.chosen}", "",
              f"Products: {facts.plan}. Draft: "
              + ", ".join(f"{ms:.1f} ms a level over {n} row{'s' * (n > 1)}" for n, ms in facts.draft)
              + f"; the rest of a step {facts.overhead_ms:.1f} ms"
              + (f" + {facts.overhead_per_row_ms:.2f} ms a row. " if facts.overhead_per_row_ms else ". ")
              + (f"Acceptance from {facts.nodes} visited nodes of this run (exact, from their p and q)."
                 if facts.nodes else "Acceptance from the calibration's own run (this run has none to read)."),
              ""]
    lines += depth_lines(facts) + (card_lines(facts.card) if facts.card is not None else [])
    if facts.run_label and facts.run_predicted is not None:
        lines += run_lines(facts) + [""]
    lines += md_table(["shape", "tokens / step", "step ms", "predicted x target alone"],
                      [[s.label, f"{s.tokens_per_step:.2f}", f"{s.step_ms:.1f}", f"{s.speedup:.2f}"]
                       for s in shown_shapes(facts, top)])
    return "\n".join(lines)


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table's lines: the header, its rule, one line per row."""
    return ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"] + ["| " + " | ".join(r) + " |" for r in rows]


def run_lines(facts: SpeedFacts) -> list[str]:
    """The run's predicted speed-up and each measured one, each saying what it is measured on."""
    if facts.run_measured is not None:
        measured = f"**{facts.run_measured:.2f}x**: {facts.measured_how}"
    else:
        measured = f"— ({facts.measured_how})" if facts.measured_how else "—"
    ran = (facts.run_against.words() if facts.run_against is not None else
           "against the target alone you ran: press **Compare with the target alone** in Run statistics")
    lines = [f"**This run, {facts.run_label}:**",
             f"- predicted **{facts.run_predicted:.2f}x** the target alone (this machine's calibrated costs, this "
             "run's exact acceptance; decoding steps only)",
             f"- measured {measured}",
             f"- measured {ran}"]
    if facts.run_below:
        lines.append(f"- why below the prediction: {'; '.join(facts.run_below)}.")
    return lines


def depth_lines(facts: SpeedFacts) -> list[str]:
    """The chain acceptance per depth the chooser predicted with, saying whose it is; [] without one."""
    if not facts.depth_rates:
        return []
    source = "this run's own p and q" if facts.nodes else "the calibration's run, not this run's"
    depths = range(1, len(facts.depth_rates) + 1)
    return [f"Acceptance per depth the chooser used (a chain's A(1, d), from {source}):", ""] + md_table(
        ["depth", *map(str, depths)], [["A(1, d)", *(f"{a:.3f}" for a in facts.depth_rates)]]) + [""]


CARD_DEPTHS = 4  # the card's columns: A(1, 1) .. A(1, 4)


def card_lines(card: HeadCard) -> list[str]:
    """The trained head's card: the head before and this head on the same held-out prompts, A(1, d) by depth
    and E[tokens/step] of a chain of 3 and of the (4,2,2,1) tree."""
    depths = range(1, CARD_DEPTHS + 1)
    lines = [f"The draft head's card: held-out acceptance on {card.prompts} prompts x {card.new_tokens} new tokens, "
             f"T = {card.temperature:g} (the nearest to this run's); E[tokens/step] of a chain of 3 and of the "
             "(4,2,2,1) tree:", ""]
    rows = [[row.name, *(f"{a:.3f}" for a in row.by_depth[:CARD_DEPTHS]), *["—"] * (CARD_DEPTHS - len(row.by_depth)),
             f"{row.chain:.2f}", f"{row.tree:.2f}"] for row in card.rows]
    return lines + md_table(["head", *(f"A(1, {d})" for d in depths), "chain 3", "4,2,2,1"], rows) + [""]
