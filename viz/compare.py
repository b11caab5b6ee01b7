"""The compare view: several verifiers on one step, and whole runs side by side (pure: records -> figures).

Small multiples share one x axis (depth) and sit in one column per verifier so the accepted paths
line up; under each tree, the tokens that verifier would emit. The per-node table lists every
verifier's visited nodes with exact acceptance, alpha* and the membership bound. The law figure
puts each verifier's exact accepted-length law next to the Monte-Carlo histogram of its real judge.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from decoding.run.compare_schema import CompareRecord, CompareVerdict
from viz.layout import tidy_layout
from viz.palette import STATUS_COLORS
from viz.tokens import plotly_escape

ON_PATH, OFF_PATH, ROOT_COLOR = STATUS_COLORS["accepted"], STATUS_COLORS["unreached"], STATUS_COLORS["root"]
TABLE_HEADERS = ["verifier", "law", "node", "token", "k", "exact acceptance", "given these drafts",
                 "alpha* (law)", "membership bound", "outcome"]


def _label(text: str) -> str:
    return repr(text)[1:-1][:10] or "·"


def _tree_traces(v: CompareVerdict) -> list[go.Scatter]:
    layout = tidy_layout(v.parents)
    on_path = set(v.accepted_path)
    ex, ey = [], []
    for n, parent in enumerate(v.parents):
        if parent >= 0:
            ex += [layout.x[parent], layout.x[n], None]
            ey += [layout.y[parent], layout.y[n], None]
    px = [c for n in v.accepted_path[1:] for c in (layout.x[v.parents[n]], layout.x[n], None)]
    py = [c for n in v.accepted_path[1:] for c in (layout.y[v.parents[n]], layout.y[n], None)]
    colors = [ROOT_COLOR if n == 0 else ON_PATH if n in on_path else OFF_PATH for n in range(len(v.tokens))]
    return [
        go.Scatter(x=ex, y=ey, mode="lines", line=dict(color="#cccccc", width=1), hoverinfo="skip"),
        go.Scatter(x=px, y=py, mode="lines", line=dict(color=ON_PATH, width=3), hoverinfo="skip"),
        go.Scatter(x=list(layout.x), y=list(layout.y), mode="markers+text", marker=dict(size=9, color=colors),
                   text=[plotly_escape(_label(t)) for t in v.texts], textposition="middle right",
                   textfont=dict(size=10), hovertext=[plotly_escape(f"node {n}: {t!r}") for n, t in enumerate(v.texts)],
                   hoverinfo="text"),
    ]


def _title(v: CompareVerdict, run_verifier: str, first_of_tree: str) -> str:
    """Key, law and which column's tree it judges (the first column of its tree group names it)."""
    mark = " (emits)" if v.key == run_verifier else ""  # one short line each: long titles overlap their neighbours
    tree = "" if first_of_tree == v.key else f" · same tree as {first_of_tree}"
    return (f"<b>{v.key}</b>{mark}<br>{v.law}{tree}<br>"
            f"L={len(v.accepted_path) - 1}, E[tokens]={v.expected_tokens:.2f}")


MAX_COLUMNS = 4  # more trees per row and their three-line titles overlap (7 verifiers did)


def grid(n: int) -> tuple[int, int]:
    """(rows, columns) of the small multiples: at most MAX_COLUMNS trees side by side."""
    cols = min(n, MAX_COLUMNS)
    return -(-n // cols), cols


def small_multiples(record: CompareRecord) -> go.Figure:
    """One tree per verifier, MAX_COLUMNS to a row, accepted path in green; emitted tokens under each tree."""
    n = len(record.verdicts)
    rows, cols = grid(n)
    first: dict[str, str] = {}
    for v in record.verdicts:
        first.setdefault(v.tree_group, v.key)
    titles = [_title(v, record.run_verifier, first[v.tree_group]) for v in record.verdicts]
    fig = make_subplots(rows=rows, cols=cols, shared_yaxes=True, horizontal_spacing=0.03,
                        vertical_spacing=0.3 / rows if rows > 1 else 0.3, subplot_titles=titles)
    for i, v in enumerate(record.verdicts):
        row, col = divmod(i, cols)
        for trace in _tree_traces(v):
            fig.add_trace(trace, row=row + 1, col=col + 1)
        emitted = " ".join(plotly_escape(_label(t)) for t in v.emitted_texts)  # inside plotly's pseudo-HTML
        axis = "" if i == 0 else str(i + 1)
        fig.add_annotation(text=f"emits: <b>{emitted}</b>", xref=f"x{axis} domain", yref=f"y{axis} domain",
                           x=0.5, y=-0.1, showarrow=False, font=dict(size=11))
        fig.update_xaxes(range=[-0.3, max(1, max(tidy_layout(v.parents).x)) + 0.9], dtick=1, row=row + 1, col=col + 1)
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    fig.update_layout(showlegend=False, height=60 + 420 * rows, margin=dict(l=10, r=10, t=120, b=60),
                      title=dict(text=f"One step, {n} verifiers, one target forward over {record.forest_nodes} "
                                      "forest nodes (x: depth)", y=0.995, yanchor="top"))
    return fig


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def node_table(record: CompareRecord) -> list[list]:
    """One row per (verifier, visited node): exact acceptance, alpha*, membership bound, outcome."""
    rows = []
    for v in record.verdicts:
        for x in v.visits:
            exact = _fmt(x.exact_acceptance) + (f" ± {x.exact_stderr:.4f}" if x.exact_stderr else "")
            outcome = "residual" if x.accepted is None else f"accepted draw {x.accepted}"
            rows.append([v.key, v.law, x.node, _label(v.texts[x.node]), x.k, exact, _fmt(x.conditional_acceptance),
                         _fmt(x.optimal_acceptance), _fmt(x.membership_bound), outcome])
    return rows


def length_law_figure(record: CompareRecord) -> go.Figure:
    """Exact P(L = l) bars with the Monte-Carlo histogram of the real judge beside them, per verifier."""
    n = len(record.verdicts)
    fig = make_subplots(rows=1, cols=n, shared_yaxes=True, subplot_titles=[_law_title(v) for v in record.verdicts])
    for col, v in enumerate(record.verdicts, start=1):
        ls = list(range(len(v.accepted_length_law)))
        fig.add_trace(go.Bar(x=ls, y=list(v.accepted_length_law), name="exact", marker_color="#0072B2",
                             showlegend=col == 1), row=1, col=col)
        if v.mc_draws:
            fig.add_trace(go.Bar(x=ls, y=list(v.mc_histogram), name=f"Monte Carlo ({v.mc_draws} walks)",
                                 marker_color="#E69F00", showlegend=col == 1), row=1, col=col)
        fig.update_xaxes(title_text="accepted L", dtick=1, row=1, col=col)
    fig.update_layout(barmode="group", height=300, margin=dict(l=10, r=10, t=60, b=40),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def _law_title(v: CompareVerdict) -> str:
    p = "" if v.mc_pvalue is None else f", χ² p={v.mc_pvalue:.2f}"
    return f"{v.key}{p}"


RUNS_HEADERS = ["verifier", "tokens / target forward", "95% CI", "E[tokens] per step", "acceptance by depth"]


def runs_table(runs: dict) -> list[list]:
    """`runs` as written by decoding.compare.runs.runs_json: one row per verifier."""
    return [[key, f"{r['block_efficiency']:.3f}", f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]",
             f"{r['expected_tokens_per_step']:.3f}", " ".join(f"{a:.2f}" for a in r["acceptance_by_depth"])]
            for key, r in runs.items()]


def runs_figure(runs: dict) -> go.Figure:
    """Block efficiency with its CI per verifier (left), acceptance by depth (right)."""
    keys = list(runs)
    fig = make_subplots(rows=1, cols=2, subplot_titles=["tokens per target forward (95% CI over seeds)",
                                                        "P(accepted path reaches depth d)"])
    means = [runs[k]["block_efficiency"] for k in keys]
    err = [runs[k]["ci95"][1] - runs[k]["block_efficiency"] for k in keys]
    fig.add_trace(go.Bar(x=keys, y=means, error_y=dict(type="data", array=err), marker_color="#0072B2",
                         showlegend=False), row=1, col=1)
    for k in keys:
        depth = runs[k]["acceptance_by_depth"]
        fig.add_trace(go.Scatter(x=list(range(1, len(depth) + 1)), y=depth, mode="lines+markers", name=k),
                      row=1, col=2)
    fig.update_xaxes(title_text="depth d", dtick=1, row=1, col=2)
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=50, b=40))
    return fig


def verdict_keys(records: Sequence[CompareRecord]) -> list[str]:
    return list(dict.fromkeys(v.key for r in records for v in r.verdicts))
