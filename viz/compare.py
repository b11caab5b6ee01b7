"""The compare view: several verifiers on one step, and whole runs side by side (pure: records -> figures).

Small multiples share one x axis (depth) and sit in one column per verifier so the accepted paths
line up; under each tree, the tokens that verifier would emit. The per-node table lists every
verifier's visited nodes with exact acceptance, alpha* and the membership bound. The law figure
puts each verifier's exact accepted-length law next to the Monte-Carlo histogram of its real judge.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from decoding.run.compare_schema import CompareRecord, CompareVerdict, CompareVisit
from viz.layout import tidy_layout
from viz.palette import STATUS_COLORS
from viz.tokens import label, plotly_escape, shorten, visible

ON_PATH, OFF_PATH, ROOT_COLOR = STATUS_COLORS["accepted"], STATUS_COLORS["unreached"], STATUS_COLORS["root"]
TABLE_HEADERS = ["verifier", "law", "node", "token", "k", "exact acceptance", "given these drafts",
                 "alpha* (law)", "membership bound", "outcome"]

# Sizes for the narrowest page the app is laid out for (800 px: a small multiple's column is ~155 px wide).
NODE_LABEL = 8  # characters of a token beside its node (viz.tokens.label shortens with "…", as the main tree)
LABEL_FONT = 10
LABEL_ROOM = 1.8  # x units right of the deepest nodes: room for a NODE_LABEL-character label at 800 px
TITLE_FONT = 12  # a title line of about 22 characters is 150 px at this size
EMITS_LINE = 24  # characters per line of the "emits" note under a tree
PANEL_PX, GAP_PX, TOP_PX, BOTTOM_PX = 300, 150, 140, 80  # a tree, the room between rows (note + titles), margins


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
                   text=[label(t, NODE_LABEL) for t in v.texts], textposition="middle right",
                   textfont=dict(size=LABEL_FONT), hovertext=[f"node {n}: {label(t)}" for n, t in enumerate(v.texts)],
                   hoverinfo="text"),
    ]


def _title(v: CompareVerdict, run_verifier: str, first_of_tree: str) -> str:
    """Key, law, which column's tree it judges (the first column of its tree group names it) and its numbers:
    one short line each, so a title fits its column at 800 px (a longer line ran over its neighbour's)."""
    lines = [f"<b>{v.key}</b>" + (" (emits)" if v.key == run_verifier else ""), v.law]
    if first_of_tree != v.key:
        lines.append(f"same tree as {first_of_tree}")
    return "<br>".join([*lines, f"L={len(v.accepted_path) - 1}, E[tokens]={v.expected_tokens:.2f}"])


def _emits(v: CompareVerdict) -> str:
    """The tokens this verifier would emit, labelled as in the tree, at most EMITS_LINE characters to a line."""
    lines = _wrap(["emits:", *(shorten(visible(t), NODE_LABEL) for t in v.emitted_texts)], EMITS_LINE)
    return "<br>".join(plotly_escape(line) for line in lines).replace("emits: ", "emits: <b>", 1) + "</b>"


def _wrap(words: list[str], width: int) -> list[str]:
    """Words joined by spaces into lines of at most `width` characters (a longer word alone on its line)."""
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) > width:
            lines.append(word)
        else:
            lines[-1] += f" {word}"
    return lines


MAX_COLUMNS = 4  # more trees per row and their titles overlap (7 verifiers did)


def grid(n: int, most: int = MAX_COLUMNS) -> tuple[int, int]:
    """(rows, columns) of n panels: at most `most` side by side."""
    cols = min(n, most)
    return -(-n // cols), cols


def small_multiples(record: CompareRecord) -> go.Figure:
    """One tree per verifier, MAX_COLUMNS to a row, accepted path in green; emitted tokens under each tree."""
    n = len(record.verdicts)
    rows, cols = grid(n)
    first: dict[str, str] = {}
    for v in record.verdicts:
        first.setdefault(v.tree_group, v.key)
    titles = [_title(v, record.run_verifier, first[v.tree_group]) for v in record.verdicts]
    plots_px = rows * PANEL_PX + (rows - 1) * GAP_PX
    fig = make_subplots(rows=rows, cols=cols, shared_yaxes=True, horizontal_spacing=0.03,
                        vertical_spacing=GAP_PX / plots_px if rows > 1 else 0.3, subplot_titles=titles)
    fig.update_annotations(font_size=TITLE_FONT)  # the titles only: the notes below come after
    depth = max(max(tidy_layout(v.parents).x) for v in record.verdicts)
    for i, v in enumerate(record.verdicts):
        row, col = divmod(i, cols)
        for trace in _tree_traces(v):
            fig.add_trace(trace, row=row + 1, col=col + 1)
        axis = "" if i == 0 else str(i + 1)
        fig.add_annotation(text=_emits(v), xref=f"x{axis} domain", yref=f"y{axis} domain", x=0.5, y=0,
                           yanchor="top", yshift=-24, showarrow=False, font=dict(size=LABEL_FONT + 1))
    fig.update_xaxes(range=[-0.3, max(1, depth) + LABEL_ROOM], tickvals=list(range(int(depth) + 1)))
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    fig.update_layout(showlegend=False, height=TOP_PX + plots_px + BOTTOM_PX,
                      margin=dict(l=10, r=10, t=TOP_PX, b=BOTTOM_PX),
                      title=dict(text=f"One step, {n} verifiers, one target forward<br>over {record.forest_nodes} "
                                      "forest nodes (x: depth)", yref="container", y=1, yanchor="top",
                                 pad=dict(t=22), font=dict(size=14)))  # t: a two-line title rose 12 px above
    return fig


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def _exact(x: CompareVisit) -> str:
    """Exact acceptance, with the standard error where theory had to sample it (0: exact, nothing added);
    a spread below the last digit shown reads '± <0.0001', not '± 0.0000'."""
    if not x.exact_stderr or x.exact_acceptance is None:
        return _fmt(x.exact_acceptance)
    spread = "<0.0001" if x.exact_stderr < 0.00005 else f"{x.exact_stderr:.4f}"
    return f"{_fmt(x.exact_acceptance)} ± {spread}"


def outcome(accepted: int | None) -> str:
    """A visit's outcome in the inspector's words (viz.node_figure.node_title): candidates count from 1.
    `accepted` is the 0-based index into the node's draws the records (and `compare --json`) keep."""
    return "residual sample" if accepted is None else f"candidate {accepted + 1} accepted"


def node_table(record: CompareRecord) -> list[list]:
    """One row per (verifier, visited node): exact acceptance, alpha*, membership bound, outcome; tokens written
    as the inspector's tests table writes them."""
    rows = []
    for v in record.verdicts:
        for x in v.visits:
            rows.append([v.key, v.law, x.node, shorten(visible(v.texts[x.node]), 24), x.k, _exact(x),
                         _fmt(x.conditional_acceptance), _fmt(x.optimal_acceptance), _fmt(x.membership_bound),
                         outcome(x.accepted)])
    return rows


LAW_COLUMNS = 7  # laws side by side: at 800 px each is ~80 px wide, room for a key and "χ² p=0.60"


def length_law_figure(record: CompareRecord) -> go.Figure:
    """Exact P(L = l) bars with the Monte-Carlo histogram of the real judge beside them, per verifier."""
    n = len(record.verdicts)
    rows, cols = grid(n, LAW_COLUMNS)
    fig = make_subplots(rows=rows, cols=cols, shared_yaxes=True, vertical_spacing=0.5 / rows if rows > 1 else 0.3,
                        subplot_titles=[_law_title(v) for v in record.verdicts])
    fig.update_annotations(font_size=TITLE_FONT)
    for i, v in enumerate(record.verdicts):
        row, col = i // cols + 1, i % cols + 1
        ls = list(range(len(v.accepted_length_law)))
        fig.add_trace(go.Bar(x=ls, y=list(v.accepted_length_law), name="exact", marker_color="#0072B2",
                             showlegend=i == 0), row=row, col=col)
        if v.mc_draws:
            fig.add_trace(go.Bar(x=ls, y=list(v.mc_histogram), name=f"Monte Carlo ({v.mc_draws} walks)",
                                 marker_color="#E69F00", showlegend=i == 0), row=row, col=col)
        fig.update_xaxes(title_text="accepted L", dtick=1, row=row, col=col)
    fig.update_layout(barmode="group", height=300 + 280 * (rows - 1), margin=dict(l=10, r=10, t=70, b=40),
                      legend=dict(orientation="h", y=-0.25 / rows))
    return fig


def _law_title(v: CompareVerdict) -> str:
    """Key over its χ² p-value: two short lines (on one line, seven titles ran together at 800 px)."""
    return v.key if v.mc_pvalue is None else f"{v.key}<br>χ² p={v.mc_pvalue:.2f}"


RUNS_HEADERS = ["verifier", "tokens / target forward", "95% CI", "E[tokens] per step", "acceptance by depth"]
ONE_SEED = "— (one seed)"  # an interval over seeds needs two of them (decoding.compare.runs.mean_ci: NaN)


def has_interval(r: dict) -> bool:
    return len(r["per_seed"]) >= 2


def runs_table(runs: dict) -> list[list]:
    """`runs` as written by decoding.compare.runs.runs_json: one row per verifier."""
    return [[key, f"{r['block_efficiency']:.3f}",
             f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]" if has_interval(r) else ONE_SEED,
             f"{r['expected_tokens_per_step']:.3f}", " ".join(f"{a:.2f}" for a in r["acceptance_by_depth"])]
            for key, r in runs.items()]


def runs_figure(runs: dict) -> go.Figure:
    """Block efficiency with its CI per verifier (left; none from one seed), acceptance by depth (right)."""
    keys = list(runs)
    interval = all(has_interval(runs[k]) for k in keys)
    left = ("tokens per target forward<br>(95% CI over seeds)" if interval
            else "tokens per target forward<br>(one seed: an interval needs 2+ seeds)")
    fig = make_subplots(rows=1, cols=2, subplot_titles=[left, "P(accepted path reaches depth d)"])
    fig.update_annotations(font_size=TITLE_FONT)
    means = [runs[k]["block_efficiency"] for k in keys]
    err = [runs[k]["ci95"][1] - runs[k]["block_efficiency"] for k in keys]
    fig.add_trace(go.Bar(x=keys, y=means, error_y=dict(type="data", array=err) if interval else None,
                         marker_color="#0072B2", showlegend=False), row=1, col=1)
    for k in keys:
        depth = runs[k]["acceptance_by_depth"]
        fig.add_trace(go.Scatter(x=list(range(1, len(depth) + 1)), y=depth, mode="lines+markers", name=k),
                      row=1, col=2)
    fig.update_xaxes(title_text="depth d", dtick=1, row=1, col=2)
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=60, b=40))
    return fig


