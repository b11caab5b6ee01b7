"""The verifier lab's figures: pure functions of the lab's plain reports (decoding/lab/node.py) -> plotly.

A report is read by attribute only (never imported), so viz stays free of torch. A verifier whose exact
output law misses p is drawn in the "off" colour, with its TV in the subplot title; a verify whose
samples miss its own exact law shows as diamonds away from the bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.palette import P_COLOR

EXACT_OK = "#009E73"  # exact output law equals p
EXACT_OFF = "#D55E00"  # it does not: lossy or wrong
SAMPLED = "#000000"
BOUND = "#9A9A9A"
TOLERANCE = 1e-9
FLOAT_ROUNDING = 1e-12  # a TV this small is float64 rounding of an exact 0 (sums of ~1e-16 errors): shown as such
DIGITS = 4  # every probability and acceptance in the lab's titles and table


def tv_text(tv: float) -> str:
    """A TV as the lab shows it: "< 1e-12" at float rounding (the law IS p), else DIGITS decimals, or two
    significant digits when that would read 0.0000 (a tiny but real gap, e.g. 3.2e-07)."""
    if tv <= FLOAT_ROUNDING:
        return "< 1e-12"
    return f"{tv:.{DIGITS}f}" if tv >= 10**-DIGITS else f"{tv:.1e}"


def num(x: float) -> str:
    return f"{x:.{DIGITS}f}"


def _badge(report: Any) -> str:
    tags = []
    if getattr(report, "custom", False):
        tags.append("custom")
    if not report.claims_lossless:
        tags.append("lossy")
    return f" [{', '.join(tags)}]" if tags else ""


def node_title(report: Any) -> str:
    off = "OFF p" if report.tv > TOLERANCE else "= p"
    return (f"{report.verifier}{_badge(report)}: output {off}, TV {tv_text(report.tv)} | accept "
            f"{num(report.acceptance)} vs alpha* {num(report.alpha_star)}, membership {num(report.membership)} | "
            f"sampled vs exact TV {num(report.sampled_tv)}")


def node_figure(reports: Sequence[Any], vocab: Sequence[str]) -> go.Figure:
    """One row per verifier: target p, the exact output law, and the Monte-Carlo frequencies of verify."""
    if not reports:
        return message_figure("choose at least one verifier")
    fig = make_subplots(rows=len(reports), cols=1, shared_xaxes=True, vertical_spacing=0.12 / len(reports),
                        subplot_titles=[node_title(r) for r in reports])
    labels = list(vocab)
    for row, r in enumerate(reports, start=1):
        first = row == 1
        fig.add_bar(x=labels, y=list(r.p), name="target p", marker_color=P_COLOR, opacity=0.45,
                    legendgroup="p", showlegend=first, row=row, col=1)
        color = EXACT_OFF if r.tv > TOLERANCE else EXACT_OK
        fig.add_bar(x=labels, y=list(r.output), name="exact output law", marker_color=color,
                    legendgroup="out", showlegend=first, row=row, col=1)
        fig.add_scatter(x=labels, y=list(r.sampled), mode="markers", name=f"verify, {r.samples} runs",
                        marker=dict(symbol="diamond", size=11, color=SAMPLED), legendgroup="mc",
                        showlegend=first, row=row, col=1)
        fig.update_yaxes(range=[0, 1.05 * max(max(r.p), max(r.output), max(r.sampled), 1e-9)], row=row, col=1)
    height = 220 + 230 * len(reports)
    fig.update_layout(barmode="group", height=height, margin=dict(l=40, r=20, t=90, b=40), template="plotly_white",
                      legend=dict(orientation="h", y=1.0 + 45 / height, yanchor="bottom", x=0))
    fig.update_annotations(font_size=12)
    return fig


def acceptance_figure(reports: Sequence[Any]) -> go.Figure:
    """Exact acceptance of each verifier against alpha* and the membership bound of its candidate law."""
    if not reports:
        return message_figure("choose at least one verifier")
    names = [f"{r.verifier}{_badge(r)}" for r in reports]
    fig = go.Figure()
    fig.add_bar(y=names, x=[r.acceptance for r in reports], orientation="h", name="exact acceptance",
                marker_color=[EXACT_OFF if r.tv > TOLERANCE else EXACT_OK for r in reports])
    fig.add_scatter(y=names, x=[r.alpha_star for r in reports], mode="markers", name="alpha* (optimal)",
                    marker=dict(symbol="line-ns-open", size=26, line=dict(width=3, color=SAMPLED)))
    fig.add_scatter(y=names, x=[r.membership for r in reports], mode="markers", name="membership bound",
                    marker=dict(symbol="x", size=10, color=BOUND))
    fig.update_layout(height=140 + 40 * len(reports), xaxis=dict(range=[0, 1.05], title="P(accept) at the node"),
                      yaxis=dict(autorange="reversed"),  # the verifiers in the order of the other views
                      margin=dict(l=40, r=20, t=30, b=40), template="plotly_white",
                      legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0))
    return fig


def sequence_figure(report: Any) -> go.Figure:
    """The padded emitted-sequence law of a tree shape against the target's joint law."""
    color = EXACT_OFF if report.tv > TOLERANCE else EXACT_OK
    fig = go.Figure()
    fig.add_bar(x=list(report.sequences), y=list(report.want), name="target joint law", marker_color=P_COLOR,
                opacity=0.45)
    fig.add_bar(x=list(report.sequences), y=list(report.got), name=f"{report.verifier}: emitted, padded",
                marker_color=color)
    shape = ",".join(map(str, report.shape))
    verdict = "lossless (certified)" if report.lossless else "NOT lossless"
    fig.update_layout(
        barmode="group", template="plotly_white", height=360, margin=dict(l=40, r=20, t=50, b=60),
        title=dict(text=f"{report.verifier}, tree {shape}: {verdict}, TV {tv_text(report.tv)} | E[tokens/step] "
                        f"{num(report.expected_tokens)} | root accept {num(report.root_acceptance)} vs alpha* "
                        f"{num(report.alpha_star)}", font_size=12),
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0, font=dict(size=11)),
    )
    return fig


def tradeoff_figure(points: Sequence[Any], title: str = "") -> go.Figure:
    """Exact tokens per step (y) against the exact TV of the output from the target (x): fuzzy's points as its
    threshold moves (one marker per distinct result, joined in threshold order; hover gives its range of T),
    every other verifier one point. Lossless ones sit on the TV = 0 line, where their labels would collide, so
    each is its own legend entry; the lossy ones are labelled beside their point. Points are
    decoding/lab/tradeoff.py's plain TradeoffPoints."""
    if not points:
        return message_figure("nothing to draw: no verifier could run this shape")
    fig = go.Figure()
    curve = fuzzy_markers(points)
    if curve:
        fig.add_scatter(x=[m[0].tv for m in curve], y=[m[0].expected_tokens for m in curve], mode="lines+markers",
                        line=dict(color=EXACT_OFF, dash="dot"), marker=dict(size=9), name=FUZZY_CURVE,
                        text=[_threshold_range(m) for m in curve],
                        hovertemplate="fuzzy %{text}<br>TV %{x:.4f}<br>tokens/step %{y:.4f}<extra></extra>")
    others = sorted((p for p in points if p.threshold is None), key=lambda p: -p.expected_tokens)
    on_zero = [p for p in others if p.tv <= TOLERANCE]
    for i, p in enumerate(on_zero):
        fig.add_scatter(x=[p.tv], y=[p.expected_tokens], mode="markers", name=f"{p.verifier}: {p.expected_tokens:.3f}",
                        legendgroup="lossless", legendgrouptitle_text="lossless (TV = 0), tokens/step",
                        marker=dict(size=11, color=ON_ZERO[i % len(ON_ZERO)], line=dict(width=1, color=SAMPLED)),
                        hovertemplate=f"{p.verifier}<br>TV {tv_text(p.tv)}<br>tokens/step %{{y:.4f}}<extra></extra>")
    lossy = [p for p in others if p.tv > TOLERANCE]
    if lossy:
        fig.add_scatter(x=[p.tv for p in lossy], y=[p.expected_tokens for p in lossy], mode="markers+text",
                        text=[p.verifier for p in lossy], textposition="top center", name="lossy",
                        legendgroup="lossy", marker=dict(size=10, color=SAMPLED, symbol="square"),
                        hovertemplate="%{text}<br>TV %{x:.4f}<br>tokens/step %{y:.4f}<extra></extra>")
    top = max(p.expected_tokens for p in points)
    fig.update_layout(
        template="plotly_white", height=480, margin=dict(l=50, r=20, t=50, b=50),
        title=dict(text=title or "tokens per step against TV(output, target), exact", font_size=13),
        xaxis=dict(title="exact TV of the emitted sequences from the target", range=[-0.1, 1.0], zeroline=True,
                   zerolinecolor=EXACT_OK, zerolinewidth=2),
        yaxis=dict(title="exact E[tokens per step]", range=[0.9, top + 0.2]),
        legend=dict(x=1.02, y=1, font=dict(size=11)),
    )
    return fig


FUZZY_CURVE = "fuzzy, threshold T moving"


def fuzzy_markers(points: Sequence[Any]) -> list[list[Any]]:
    """fuzzy's points in threshold order, neighbours with the same result (TV and tokens/step equal up to float
    rounding) merged into one marker: a list of runs, each the points one marker stands for."""
    runs: list[list[Any]] = []
    for p in sorted((p for p in points if p.threshold is not None), key=lambda p: p.threshold):
        last = runs[-1][-1] if runs else None
        same = last is not None and abs(last.tv - p.tv) <= FLOAT_ROUNDING and abs(
            last.expected_tokens - p.expected_tokens) <= FLOAT_ROUNDING
        if same:
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


def _threshold_range(run: Sequence[Any]) -> str:
    low, high = run[0].threshold, run[-1].threshold
    return f"T = {low:.4g}" if low == high else f"T from {low:.4g} to {high:.4g}"
ON_ZERO = ("#009E73", "#56B4E9", "#0072B2", "#CC79A7", "#E69F00", "#F0E442", "#7FC97F", "#BEAED4", "#386CB0",
           "#A6761D")  # the lossless points, told apart by colour


def summary_rows(reports: Sequence[Any]) -> list[list[Any]]:
    """Table rows: verifier, verdict, TV, acceptance, alpha*, membership, sampled-vs-exact TV; the numbers as
    text with DIGITS decimals each (a number cell would drop trailing zeros: 0.76 beside 0.8036)."""
    rows = []
    for r in reports:
        verdict = "exact = p" if r.tv <= TOLERANCE else "OFF p"
        rows.append([f"{r.verifier}{_badge(r)}", verdict, tv_text(r.tv), num(r.acceptance), num(r.alpha_star),
                     num(r.membership), num(r.sampled_tv)])
    return rows


SUMMARY_HEADERS = ["verifier", "output law", "TV(output, p)", "acceptance", "alpha*", "membership bound",
                   "sampled vs exact TV"]


def message_figure(message: str) -> go.Figure:
    """An empty plot that says why there is nothing to draw."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(template="plotly_white", height=200, xaxis_visible=False, yaxis_visible=False)
    return fig
