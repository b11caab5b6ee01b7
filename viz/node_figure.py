"""One node and its verification: p vs q bars for the top tokens, the residual after each
update, and the table of the tests made there in order."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from decoding.run.schema import NodeRecord, StepRecord, TokenProb, UpdateRecord, VisitRecord
from viz.hover import alpha_text, fmt
from viz.lookup import visit_at
from viz.palette import P_COLOR, Q_COLOR, RESIDUAL_COLOR
from viz.tokens import label, plotly_escape, shorten, unique_labels, visible
from viz.tree_story import story_rows

TEST_HEADERS = ("event", "candidate", "token", "numerator", "denominator", "threshold", "uniform u",
                "passed", "note")


def node_tokens(node: NodeRecord, visit: VisitRecord | None, top_n: int) -> list[TokenProb]:
    """The node's top-N tokens (by p, then q), then the candidates, the emitted token and the
    residuals' leaders when they are not among them (p, q = NaN where the record lacks them)."""
    chosen = list(node.top[:top_n])
    if visit is None:
        return chosen
    known = {t.token: t for t in node.top}
    residual = {t.token: t for u in visit.updates for t in u.residual_top}
    wanted = [*visit.candidates, visit.token, *(t.token for u in visit.updates for t in u.residual_top[:3])]
    seen = {t.token for t in chosen}
    for token in wanted:
        if token in seen:
            continue
        seen.add(token)
        if token in known:
            chosen.append(known[token])
        elif token in residual:
            chosen.append(TokenProb(token, residual[token].text, math.nan, math.nan))
    return chosen


def node_figure(step: StepRecord, node_id: int, top_n: int = 10) -> go.Figure:
    return go.Figure(node_spec(step, node_id, top_n))


def node_spec(step: StepRecord, node_id: int, top_n: int = 10) -> dict:
    """The figure as plain dicts (see `subplots`: about 8x faster than make_subplots + add_trace +
    update_layout, and this runs on every Step); the app sends it as is (viz.figure_json)."""
    node = step.nodes[node_id]
    visit = visit_at(step, node_id)
    tokens = node_tokens(node, visit, top_n)
    names = _axis_labels(tokens, visit)
    rows = 2 if visit is not None and visit.updates else 1
    traces = [dict(type="bar", x=names, y=[_bar(t.p) for t in tokens], name="p (target)", marker={"color": P_COLOR}),
              dict(type="bar", x=names, y=[_bar(t.q) for t in tokens], name="q (draft)", marker={"color": Q_COLOR})]
    traces = [{**t, "xaxis": "x", "yaxis": "y"} for t in traces]
    if rows == 2:
        traces += _residuals(visit, tokens, names)
    layout = subplots(_subtitles(rows))
    for axis in ("yaxis", "yaxis2")[:rows]:
        layout[axis].update(range=[0, 1], gridcolor="#EEEEEE", title={"text": "probability"})
    for axis in ("xaxis", "yaxis", "xaxis2", "yaxis2")[:2 * rows]:
        # Margins fixed, not grown to fit tick labels: automargin made the browser lay the figure
        # out twice, half of its draw on every Step (docs/speed.md, "Measurements the code's comments cite").
        layout[axis].update(automargin=False)
    layout.update(title={"text": node_title(step, node, visit), "x": 0.01}, barmode="group",
                  height=260 + 170 * rows, margin={"l": 40, "r": 20, "t": 110, "b": 40},
                  legend={"orientation": "h", "y": -0.15}, plot_bgcolor="white")
    return {"data": traces, "layout": layout}


def subplots(titles: tuple[str, ...], spacing: float = 0.12) -> dict:
    """The layout plotly's make_subplots(rows=len(titles), cols=1, shared_xaxes=True, vertical_spacing=
    spacing, subplot_titles=titles) builds (tests check they agree), as a plain dict: make_subplots
    alone took longer than building the whole figure this way."""
    rows = len(titles)
    height = (1.0 - spacing * (rows - 1)) / rows
    layout: dict = {"annotations": []}
    for row, title in enumerate(titles, start=1):
        bottom = (rows - row) * (height + spacing)  # plotly's arithmetic, bottom up, so the floats agree
        top = bottom + height
        x, y = ("x", "y") if row == 1 else (f"x{row}", f"y{row}")
        layout["xaxis" if row == 1 else f"xaxis{row}"] = {"anchor": y, "domain": [0.0, 1.0]}
        layout["yaxis" if row == 1 else f"yaxis{row}"] = {"anchor": x, "domain": [bottom, top]}
        layout["annotations"].append({"font": {"size": 16}, "showarrow": False, "text": title, "x": 0.5,
                                      "xanchor": "center", "xref": "paper", "y": top,
                                      "yanchor": "bottom", "yref": "paper"})
    for row in range(1, rows):  # shared x: every axis but the bottom one matches it and hides its labels
        layout["xaxis" if row == 1 else f"xaxis{row}"].update(matches=f"x{rows}", showticklabels=False)
    return layout


def _bar(x: float) -> float | None:
    return None if math.isnan(x) else x


def _subtitles(rows: int) -> tuple[str, ...]:
    first = "next-token laws at this node (★ drawn here as a candidate, ▶ emitted)"
    return (first, "residual after each rejected test") if rows == 2 else (first,)


def _axis_labels(tokens: list[TokenProb], visit: VisitRecord | None) -> list[str]:
    marks = []
    for t in tokens:
        mark = ""
        if visit is not None and t.token in visit.candidates:
            mark += "★"
        if visit is not None and t.token == visit.token:
            mark += "▶"
        marks.append(mark + label(t.text, 12))
    return unique_labels(marks, [t.token for t in tokens])


def _residuals(visit: VisitRecord, tokens: list[TokenProb], names: list[str]) -> list[dict]:
    n = len(visit.updates)
    traces = []
    for i, update in enumerate(visit.updates):
        mass = {t.token: t.p for t in update.residual_top}
        traces.append(dict(
            type="bar", x=names, y=[mass.get(t.token, 0.0) for t in tokens],
            name=f"residual after test {update.after_test + 1}",
            marker={"color": RESIDUAL_COLOR, "opacity": 0.35 + 0.65 * (i + 1) / n},
            hovertext=plotly_escape(update.note), xaxis="x2", yaxis="y2"))
    return traces


def node_title(step: StepRecord, node: NodeRecord, visit: VisitRecord | None) -> str:
    head = f"node {node.id} <b>{label(node.text, 30)}</b> (depth {node.depth}, {node.status})"
    if step.tree_events:
        return head + f"<br>{step.verifier} judges the whole tree: its tests, in order, are in the table (▶ this node)"
    if visit is None and len(step.nodes) == 1:
        return head + "<br>nothing was drafted at this step: the target's own next token was emitted (plain decoding)"
    if visit is None:
        return head + "<br>no verification here: this node was not on the accepted path"
    outcome = ("residual sample" if visit.accepted is None
               else f"candidate {visit.accepted + 1} accepted" + (" via the residual" if visit.via_residual else ""))
    alpha = ("exact α not computed" if visit.alpha_exact is None  # a lazy-theory step not shown live
             else f"{alpha_text(visit, 3)} (optimal {fmt(visit.alpha_optimal, 3)})")
    emits = _token_label(step, visit.token)
    return f"{head}<br>{len(visit.candidates)} candidates · {outcome} · emits {emits} · {alpha}"


def _token_label(step: StepRecord, token: int) -> str:
    texts = [t.text for n in step.nodes for t in n.top if t.token == token]
    texts += [e.text for e in step.emitted if e.token == token]
    return f"<b>{label(texts[0], 20)}</b>" if texts else f"token {token}"


def tests_table(step: StepRecord, node_id: int, digits: int | None = 4) -> list[list]:
    """Rows in the order they happened: each test, then the residual update that followed it."""
    if step.tree_events:  # a tree-level verifier: its tests are one story about the whole tree
        return story_rows(step, node_id, digits)
    visit = visit_at(step, node_id)
    if visit is None:
        return []
    updates = {u.after_test: u for u in visit.updates}
    rows: list[list] = []
    for i, t in enumerate(visit.tests):
        rows.append(["test", t.candidate + 1 if t.candidate >= 0 else "—", shorten(visible(t.text), 24),
                     _num(t.numerator, digits), _num(t.denominator, digits), _num(t.threshold, digits),
                     _num(t.uniform, digits), "yes" if t.passed else "no", t.label])
        if i in updates:
            rows.append(update_row(updates[i]))
    return rows


def update_row(update: UpdateRecord) -> list:
    top = ", ".join(f"{shorten(visible(t.text), 12)} {t.p:.3f}" for t in update.residual_top[:4])
    return ["residual update", "", "", "", "", "", "", "", f"{update.note} → top: {top}".strip()]


def _num(x: float, digits: int | None) -> float:
    return x if digits is None else round(x, digits)
