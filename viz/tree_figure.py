"""StepRecord -> plotly figure of the draft tree: status colours, accepted path, emitted token.

Every marker carries customdata [node id, category, token id]; category is a node status
(root / accepted / rejected / unreached) or, for the one extra node that is not a draft,
the emitted kind (residual / bonus). Tests read the statuses back from there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import plotly.graph_objects as go

from decoding.run.schema import ACCEPTED, BONUS, REJECTED, RESIDUAL, ROOT, UNREACHED, StepRecord
from viz import hover
from viz.layout import tidy_layout
from viz.lookup import final_emitted
from viz.palette import (
    EDGE_COLOR,
    EDGE_WIDTH,
    ORIGIN_COLORS,
    ORIGIN_NAMES,
    PATH_WIDTH,
    STATUS_COLORS,
    STATUS_NAMES,
)
from viz.tokens import label, plotly_escape

CATEGORIES = (ROOT, ACCEPTED, REJECTED, UNREACHED, RESIDUAL, BONUS)
SYMBOLS = {ROOT: "square", ACCEPTED: "circle", REJECTED: "x", UNREACHED: "circle-open",
           RESIDUAL: "diamond", BONUS: "star"}
COLORS = {**STATUS_COLORS, RESIDUAL: ORIGIN_COLORS[RESIDUAL], BONUS: ORIGIN_COLORS[BONUS]}
NAMES = {**STATUS_NAMES, RESIDUAL: ORIGIN_NAMES[RESIDUAL], BONUS: ORIGIN_NAMES[BONUS]}


@dataclass(frozen=True)
class Point:
    id: int  # node id; the emitted extra node takes id len(step.nodes)
    parent: int
    category: str
    token: int
    text: str  # escaped, visible label
    hover: str
    x: float = 0.0
    y: float = 0.0


def tree_points(step: StepRecord) -> list[Point]:
    """One point per drafted node, plus one for a residual or bonus token, placed by tidy_layout."""
    points = [Point(n.id, n.parent, n.status, n.token, label(n.text), hover.node_hover(step, n))
              for n in step.nodes]
    extra = final_emitted(step)
    if extra is not None:
        points.append(Point(len(step.nodes), extra.node, extra.kind, extra.token, label(extra.text),
                            hover.emitted_hover(step, extra)))
    layout = tidy_layout([p.parent for p in points])
    return [replace(p, x=layout.x[i], y=layout.y[i]) for i, p in enumerate(points)]


def tree_figure(step: StepRecord, title: str | None = None) -> go.Figure:
    return go.Figure(tree_spec(step, title))


def tree_spec(step: StepRecord, title: str | None = None) -> dict:
    """The figure as plain dicts ({"data", "layout"}): the app sends it as is (viz.figure_json),
    go.Figure validates it for everyone else."""
    points = tree_points(step)
    traces = _edge_traces(step, points)
    for category in CATEGORIES:
        members = [p for p in points if p.category == category]
        if members:
            traces.append(_node_trace(category, members))
    return {"data": traces, "layout": _layout(step, points, title)}


def _node_trace(category: str, members: list[Point]) -> dict:
    return dict(
        type="scatter", x=[p.x for p in members], y=[p.y for p in members], mode="markers+text",
        name=f"{NAMES[category]} ({len(members)})", legendgroup=category,
        text=[p.text for p in members], textposition="top center", textfont={"size": 13},
        marker={"size": 18 if category in (RESIDUAL, BONUS) else 15, "color": COLORS[category],
                "symbol": SYMBOLS[category], "line": {"width": 1.5, "color": "#333333"}},
        customdata=[[p.id, p.category, p.token] for p in members],
        hovertext=[p.hover for p in members], hoverinfo="text",
    )


def _edge_traces(step: StepRecord, points: list[Point]) -> list[dict]:
    on_path = set(zip(step.accepted_path, step.accepted_path[1:], strict=False))
    extra = points[-1] if points and points[-1].category in (RESIDUAL, BONUS) else None
    plain = [p for p in points if p.parent >= 0 and (p.parent, p.id) not in on_path and p is not extra]
    path = [p for p in points if (p.parent, p.id) in on_path]
    traces = [_edge_trace(points, plain, "tree edge", EDGE_COLOR, EDGE_WIDTH, "solid", False)]
    if path:
        traces.append(_edge_trace(points, path, "accepted path", STATUS_COLORS[ACCEPTED], PATH_WIDTH, "solid", True))
    if extra is not None:
        traces.append(_edge_trace(points, [extra], f"emitted {extra.category}", COLORS[extra.category],
                                  PATH_WIDTH, "dot", True))
    return traces


def _edge_trace(points: list[Point], children: list[Point], name: str, color: str, width: float,
                dash: str, legend: bool) -> dict:
    by_id = {p.id: p for p in points}
    xs: list[float | None] = []
    ys: list[float | None] = []
    for child in children:
        parent = by_id[child.parent]
        xs += [parent.x, child.x, None]
        ys += [parent.y, child.y, None]
    return dict(type="scatter", x=xs, y=ys, mode="lines", name=name, showlegend=legend, hoverinfo="skip",
                line={"color": color, "width": width, "dash": dash})


def _layout(step: StepRecord, points: list[Point], title: str | None) -> dict:
    depth = max((p.x for p in points), default=0.0)
    slots = max((p.y for p in points), default=0.0) + 1
    return dict(
        title={"text": title if title is not None else default_title(step), "x": 0.01, "xanchor": "left",
               "y": 1.0, "yref": "container", "yanchor": "top", "pad": {"t": 12}},
        height=int(max(320, 46 * slots + 160)), margin={"l": 20, "r": 20, "t": 110, "b": 20},
        plot_bgcolor="white", hovermode="closest", dragmode="pan",
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0, "font": {"size": 12}},
        hoverlabel={"align": "left"},
        xaxis={"visible": False, "range": [-0.4, depth + 0.6]},
        yaxis={"visible": False, "range": [slots - 0.4, -0.9]},  # reversed: slot 0 on top, room for its label
    )


def default_title(step: StepRecord) -> str:
    expected = "" if step.expected_tokens is None else f" (expected {step.expected_tokens:.2f})"
    return (f"step {step.index + 1} · {plotly_escape(step.verifier)} · {len(step.nodes) - 1} drafted nodes · "
            f"{step.n_emitted} token{'' if step.n_emitted == 1 else 's'} emitted{expected}")


def figure_categories(fig: go.Figure | dict) -> dict[str, int]:
    """Count markers per category from the figure itself (customdata), for tests and checks; `fig` is a
    go.Figure or its JSON as a dict."""
    data = fig["data"] if isinstance(fig, dict) else fig.to_plotly_json()["data"]
    counts = {c: 0 for c in CATEGORIES}
    for trace in data:
        for row in trace.get("customdata") if trace.get("customdata") is not None else ():
            counts[str(row[1])] += 1
    return counts
