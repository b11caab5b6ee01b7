"""The lossy price frontier's chart: exact acceptance against the exact TV of the emitted law, one marker per rule
and setting (decoding/lab/frontier.py's plain points, read by attribute: no torch here), the frontier dashed,
each budgeted point's advertised budget beside the KL it really emits (hover)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from viz.lab import EXACT_OFF, EXACT_OK

COLOURS = {"cactus": "#CC79A7", "fuzzy": "#E69F00", "greedy": "#56B4E9", "typical": "#009E73"}


def kl_text(kl: float) -> str:
    return "∞ (emits tokens p never does)" if math.isinf(kl) else f"{kl:.4f} nats"


def hover(point: Any) -> str:
    budget = "" if point.budget is None else f"<br>advertised budget {point.budget:g}"
    return (f"{point.rule} {point.setting}<br>acceptance {point.acceptance:.4f}<br>TV {point.tv:.4f}"
            f"<br>KL(emitted ‖ p) {kl_text(point.kl)}{budget}")


def frontier_figure(points: Sequence[Any], frontier: Sequence[Any], title: str = "") -> go.Figure:
    fig = go.Figure()
    rules = list(dict.fromkeys(pt.rule for pt in points))
    for rule in rules:
        mine = [pt for pt in points if pt.rule == rule]
        lossless = all(pt.lossless for pt in mine)
        colour = EXACT_OK if lossless else COLOURS.get(rule, EXACT_OFF)
        fig.add_scatter(x=[pt.tv for pt in mine], y=[pt.acceptance for pt in mine], name=rule,
                        mode="lines+markers" if len(mine) > 1 else "markers",
                        marker=dict(size=10, color=colour, symbol="star" if lossless else "circle"),
                        line=dict(color=colour, width=1), text=[hover(pt) for pt in mine], hoverinfo="text")
    fig.add_scatter(x=[pt.tv for pt in frontier], y=[pt.acceptance for pt in frontier], name="frontier",
                    mode="lines", line=dict(color="#444444", dash="dash"), hoverinfo="skip")
    fig.update_layout(title=dict(text=title or "exact acceptance against the exact TV of what each rule emits",
                                 font=dict(size=13)), height=380, margin=dict(l=50, r=10, t=50, b=40),
                      xaxis=dict(title="TV(emitted, p)", rangemode="tozero"),
                      yaxis=dict(title="acceptance (one draft)", range=[-0.02, 1.05]))
    return fig


def budget_rows(points: Sequence[Any]) -> list[list[str]]:
    """[rule, setting, acceptance, TV, KL, advertised budget] per point, as the lab's table shows them."""
    return [[pt.rule, pt.setting, f"{pt.acceptance:.4f}", f"{pt.tv:.4f}", kl_text(pt.kl),
             "" if pt.budget is None else f"{pt.budget:g}"] for pt in points]


BUDGET_HEADERS = ["rule", "setting", "acceptance", "TV", "KL(emitted ‖ p)", "advertised budget"]
