"""An engine record drawn (decoding/run/engine_shape.py's plain `Analysis`, read by attribute: no torch here):
per-position conditional acceptance with its 95 % Wilson intervals and the cliff marked, beside specscope's exact
expectation for the same chain; the accepted-length histogram (share of steps) beside the expected one; and the numbers
in words."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.palette import P_COLOR, Q_COLOR

ENGINE_COLOUR = Q_COLOR  # what the engine measured
EXPECTED_COLOUR = P_COLOR  # what specscope computes exactly
CLIFF_COLOUR = "#B91C1C"


def figure(analysis: Any) -> go.Figure:
    record = analysis.record
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        "P(accept position i | reached), 95 % Wilson", "accepted drafts per step (share of steps)"))
    _rates(fig, analysis)
    _histogram(fig, analysis)
    fig.update_layout(title=dict(text=title(analysis), font=dict(size=13)), height=400, bargap=0.25,
                      margin=dict(l=50, r=10, t=80, b=70), legend=dict(orientation="h", y=-0.22, x=0))
    fig.update_xaxes(title_text="position i (i-th draft of a step)", dtick=1, row=1, col=1)
    fig.update_yaxes(range=[-0.02, 1.05], title_text="conditional acceptance", row=1, col=1)
    fig.update_xaxes(title_text="drafts accepted in a step", dtick=1, row=1, col=2)
    fig.update_yaxes(range=[0, 1.02], title_text="share of steps", row=1, col=2)
    if not analysis.rates:
        fig.add_annotation(text=analysis.positions_note[:90] + ("..." if len(analysis.positions_note) > 90 else ""),
                           xref="x domain", yref="y domain", x=0.5, y=0.5, showarrow=False, font=dict(size=11))
    if record.histogram is None and analysis.histogram is None:
        fig.add_annotation(text="no histogram in this record", xref="x2 domain", yref="y2 domain", x=0.5, y=0.5,
                           showarrow=False, font=dict(size=11))
    return fig


def title(analysis: Any) -> str:
    record = analysis.record
    parts = [record.title, f"{record.accepted} of {record.drafted} drafts accepted"]
    if record.steps:
        parts.append(f"{record.steps} steps, mean length {record.mean_acceptance_length:.3f}")
    if analysis.cliff is not None:
        parts.append(f"cliff at position {analysis.cliff}")
    return " · ".join(parts)


def _rates(fig: go.Figure, analysis: Any) -> None:
    shown = [r for r in analysis.rates if r.rate is not None]
    if shown:
        fig.add_scatter(x=[r.position for r in shown], y=[r.rate for r in shown], mode="markers+lines",
                        name="engine: accepted / reached", marker=dict(size=9, color=ENGINE_COLOUR),
                        line=dict(color=ENGINE_COLOUR, width=1),
                        error_y=dict(type="data", symmetric=False, array=[r.high - r.rate for r in shown],
                                     arrayminus=[r.rate - r.low for r in shown], color=ENGINE_COLOUR),
                        text=[rate_hover(r) for r in shown], hoverinfo="text", row=1, col=1)
    if analysis.expected is not None:
        alphas = analysis.expected.alphas
        fig.add_scatter(x=list(range(1, len(alphas) + 1)), y=list(alphas), mode="markers+lines",
                        name="specscope: exact", marker=dict(size=8, symbol="diamond", color=EXPECTED_COLOUR),
                        line=dict(color=EXPECTED_COLOUR, dash="dash"),
                        text=[f"depth {d}: exact {a:.4f}<br>{analysis.expected.source}" for d, a in
                              enumerate(alphas, 1)], hoverinfo="text", row=1, col=1)
    if analysis.cliff is not None:
        fig.add_vline(x=analysis.cliff - 0.5, line=dict(color=CLIFF_COLOUR, dash="dot"), row=1, col=1)
        fig.add_annotation(text=f"cliff: position {analysis.cliff}", x=analysis.cliff - 0.5, y=1.03, xref="x",
                           yref="y", showarrow=False, font=dict(color=CLIFF_COLOUR, size=11), xanchor="left")


def rate_hover(rate: Any) -> str:
    return (f"position {rate.position}: {rate.accepted} accepted of {rate.reached} reached = {rate.rate:.4f}"
            f"<br>95 % Wilson [{rate.low:.4f}, {rate.high:.4f}]")


def _histogram(fig: go.Figure, analysis: Any) -> None:
    histogram = analysis.histogram
    if histogram:
        steps = sum(histogram)
        fig.add_bar(x=list(range(len(histogram))), y=[h / steps if steps else 0 for h in histogram],
                    name="engine: steps", marker=dict(color=ENGINE_COLOUR),
                    text=[f"{h}" for h in histogram], textposition="outside",
                    hovertext=[f"{h} of {steps} steps accepted exactly {j}" for j, h in enumerate(histogram)],
                    hoverinfo="text", row=1, col=2)
    if analysis.expected is not None:
        probs = analysis.expected.histogram
        fig.add_scatter(x=list(range(len(probs))), y=list(probs), mode="markers", name="specscope: exact P(j)",
                        marker=dict(size=11, symbol="diamond", color=EXPECTED_COLOUR),
                        text=[f"exactly {j}: {pr:.4f}" for j, pr in enumerate(probs)], hoverinfo="text",
                        row=1, col=2)


def summary_markdown(analysis: Any) -> str:
    """The record's numbers, the per-position table and the cliff in words (markdown)."""
    record = analysis.record
    lines = [f"**{record.title}**: {record.accepted} of {record.drafted} drafts accepted"
             + (f" ({record.acceptance_rate:.4f})" if record.acceptance_rate is not None else "")
             + (f", {record.steps} verification steps, mean acceptance length {record.mean_acceptance_length:.4f} "
                "(bonus included)" if record.steps else ", no step count in this record") + "."]
    if record.reported:
        lines.append("As reported: " + ", ".join(f"`{name}` = {value:.6g}" for name, value in record.reported) + ".")
    if analysis.rates:
        lines.append("\n| position | reached | accepted | rate | 95 % Wilson | specscope exact |\n"
                     "|---|---|---|---|---|---|")
        alphas = analysis.expected.alphas if analysis.expected is not None else ()
        for r in analysis.rates:
            exact = f"{alphas[r.position - 1]:.4f}" if r.position <= len(alphas) else ""
            rate = "" if r.rate is None else f"{r.rate:.4f}"
            ci = "" if r.rate is None else f"[{r.low:.3f}, {r.high:.3f}]"
            lines.append(f"| {r.position} | {r.reached} | {r.accepted} | {rate} | {ci} | {exact} |")
        lines.append("")
    if analysis.positions_note:
        lines.append(f"Positions: {analysis.positions_note}.")
    if analysis.rates:
        lines.append(f"**{analysis.cliff_note[0].upper() + analysis.cliff_note[1:]}.**")
    if analysis.expected is not None:
        lines.append(f"Expected (exact, {analysis.expected.source}): mean acceptance length "
                     f"{analysis.expected.mean_length:.4f} for a chain of {len(analysis.expected.alphas)}.")
    return "\n".join(lines)
