"""The museum tab's views: pure functions of the museum's plain reports (`Report.to_json()` dicts from
decoding/lab/museum.py) -> an HTML table and a plotly figure. Plain dicts only, so viz stays free of torch."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from viz.lab import EXACT_OFF, EXACT_OK
from viz.palette import P_COLOR

COLUMNS = ("exhibit", "threads", "published", "specscope", "TV of the bug", "fix")


def table_html(rows: Sequence[dict[str, Any]]) -> str:
    """Every exhibit as one row; a row not yet computed (no "emitted" key) shows its published number only."""
    head = "".join(f"<th style='white-space:nowrap'>{c}</th>" for c in COLUMNS)  # a header on one line
    body = "".join(_row(r) for r in rows)
    return (f"<table class='museum-table' id='museum-table'><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>")


def _row(r: dict[str, Any]) -> str:
    links = "<br>".join(f"<a href='{html.escape(link['url'])}' target='_blank' rel='noopener'>"
                        f"{html.escape(link['label'])}</a>" for link in r["links"])
    cells = [f"<b>{html.escape(r['title'])}</b><br><code>{html.escape(r['key'])}</code><br>"
             f"{html.escape(r['project'])}", links, html.escape(r["published"]),
             html.escape(reproduction_text(r)), html.escape(tv_text(r)), html.escape(fix_text(r))]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def reproduction_text(r: dict[str, Any]) -> str:
    if "reproduces" not in r:
        return "not computed"
    if r["reproduces"] is None:
        return f"no number to recompute: {r['why_not']}"
    if r.get("refusal"):
        return f"reproduced: {r['refusal']}"
    values = ", ".join(f"{v:.4f}" for v in r["reproduced_value"])
    return f"{'reproduced' if r['reproduces'] else 'NOT reproduced'}: {values}"


def tv_text(r: dict[str, Any]) -> str:
    if "tv" not in r:
        return ""
    if r["tv"] is None:
        return "no law (NaN, refused)"
    return f"{r['tv']:.4f}" + ("" if r["acceptance"] is None else f" (acceptance {r['acceptance']:.4f})")


def fix_text(r: dict[str, Any]) -> str:
    if "fix_lossless" not in r:
        return ""
    return f"{r['fix']}: " + ("certified lossless" if r["fix_lossless"] else "NOT lossless")


def law_figure(r: dict[str, Any]) -> go.Figure:
    """The exhibit's toy node: the target p, the bug's exact emitted law, and the fix's (p: certified)."""
    tokens = [chr(ord("A") + i) for i in range(len(r["target"]))]
    fig = go.Figure()
    fig.add_bar(x=tokens, y=list(r["target"]), name="p (target)", marker_color=P_COLOR)
    if r.get("emitted"):
        bad = r["tv"] is not None and r["tv"] > 1e-12
        fig.add_bar(x=tokens, y=list(r["emitted"]), name="the bug's emitted law",
                    marker_color=EXACT_OFF if bad else EXACT_OK)
    if r.get("fix_lossless"):
        fig.add_bar(x=tokens, y=list(r["target"]), name=f"the fix ({r['fix']})", marker_color=EXACT_OK, opacity=0.5)
    title = f"{r['title']}: TV {tv_text(r) or 'not computed'}"
    fig.update_layout(title=dict(text=html.escape(title), font=dict(size=13)), barmode="group", height=300,
                      margin=dict(l=40, r=10, t=50, b=30), yaxis=dict(title="probability", range=[0, 1]),
                      legend=dict(orientation="h", y=-0.15))
    return fig
