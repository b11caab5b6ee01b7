"""Per-run charts from a list of StepRecords (and, optionally, a plain baseline's numbers)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from decoding.run.schema import StepRecord
from viz.palette import P_COLOR, Q_COLOR, RESIDUAL_COLOR, STATUS_COLORS


@dataclass(frozen=True)
class BaselineNumbers:
    """Plain autoregressive decoding with the target alone, as plain numbers."""

    tokens: int
    seconds: float
    forwards: int


@dataclass(frozen=True)
class DepthStat:
    depth: int
    visits: int
    accepted: int
    alpha_exact: float | None  # mean over visits that recorded it
    alpha_optimal: float | None

    @property
    def rate(self) -> float:
        return self.accepted / self.visits if self.visits else 0.0


def tokens_per_forward(steps: Sequence[StepRecord]) -> list[float]:
    return [s.n_emitted / max(1, s.target_forwards) for s in steps]


def running_mean(values: Sequence[float | None]) -> list[float | None]:
    """Mean of the values so far (None entries skipped; None until the first value)."""
    out: list[float | None] = []
    total, count = 0.0, 0
    for v in values:
        if v is not None:
            total, count = total + v, count + 1
        out.append(total / count if count else None)
    return out


def acceptance_by_depth(steps: Sequence[StepRecord]) -> list[DepthStat]:
    """At each depth: how often a visited node accepted one of its candidates, and the mean exact
    and optimal acceptance of those visits."""
    rows: dict[int, list] = {}
    for s in steps:
        for v in s.visits:
            if v.candidates:
                rows.setdefault(s.nodes[v.node].depth, []).append(v)
    return [DepthStat(d, len(vs), sum(v.accepted is not None for v in vs), _mean([v.alpha_exact for v in vs]),
                      _mean([v.alpha_optimal for v in vs])) for d, vs in sorted(rows.items())]


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def run_seconds(steps: Sequence[StepRecord]) -> float:
    """Decoding seconds (draft + target + verify): what plain decoding with the target is compared with."""
    return sum(s.draft_ms + s.target_ms + s.verify_ms for s in steps) / 1000.0


def record_seconds(steps: Sequence[StepRecord]) -> float:
    """Seconds spent building the records (node records, exact theory): the app's cost, not decoding's."""
    return sum(s.record_ms for s in steps) / 1000.0


@dataclass(frozen=True)
class RunNumbers:
    steps: int
    tokens: int
    target_forwards: int
    draft_forwards: int
    seconds: float  # decoding only (draft + target + verify), like the baseline
    all_in_seconds: float = 0.0  # the run's wall time including recording (seconds given, else decode + record)

    @property
    def tokens_per_forward(self) -> float:
        return self.tokens / self.target_forwards if self.target_forwards else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def all_in_tokens_per_second(self) -> float:
        return self.tokens / self.all_in_seconds if self.all_in_seconds > 0 else 0.0


def run_numbers(steps: Sequence[StepRecord], seconds: float | None = None) -> RunNumbers:
    """Counts and times of a run. `seconds` (wall time, recording included) only sets the all-in speed:
    the speed compared with plain decoding is always the decoding time, so like is compared with like."""
    decode = run_seconds(steps)
    all_in = decode + record_seconds(steps) if seconds is None else seconds
    return RunNumbers(len(steps), sum(s.n_emitted for s in steps), sum(s.target_forwards for s in steps),
                      sum(s.draft_forwards for s in steps), decode, all_in)


def run_figure(steps: Sequence[StepRecord], baseline: BaselineNumbers | None = None,
               seconds: float | None = None) -> go.Figure:
    fig = make_subplots(rows=2, cols=2, vertical_spacing=0.2, horizontal_spacing=0.1, subplot_titles=(
        "tokens per target forward, by step", "acceptance by depth",
        "block efficiency so far vs its exact expectation", "speed vs plain decoding with the target"))
    _per_step(fig, steps)
    _by_depth(fig, steps)
    _running(fig, steps)
    _speed(fig, run_numbers(steps, seconds), baseline)
    fig.update_layout(height=640, margin={"l": 40, "r": 20, "t": 60, "b": 40}, plot_bgcolor="white",
                      legend={"orientation": "h", "y": -0.08}, barmode="group")
    fig.update_yaxes(gridcolor="#EEEEEE", rangemode="tozero")
    return fig


def _per_step(fig: go.Figure, steps: Sequence[StepRecord]) -> None:
    x = [s.index + 1 for s in steps]
    fig.add_trace(go.Bar(x=x, y=tokens_per_forward(steps), name="tokens / target forward",
                         marker_color=STATUS_COLORS["accepted"]), 1, 1)
    fig.add_trace(go.Scatter(x=x, y=[s.expected_tokens for s in steps], name="expected (exact, this tree)",
                             mode="markers", marker={"color": "#222222", "symbol": "line-ew-open", "size": 18,
                                                     "line": {"width": 2}}), 1, 1)
    fig.update_xaxes(title_text="step", tick0=1, dtick=_step_tick(len(steps)), row=1, col=1)


def _step_tick(n: int) -> int:
    return max(1, n // 8)


def _by_depth(fig: go.Figure, steps: Sequence[StepRecord]) -> None:
    stats = acceptance_by_depth(steps)
    x = [d.depth for d in stats]
    fig.add_trace(go.Bar(x=x, y=[d.rate for d in stats], name="observed acceptance",
                         marker_color=P_COLOR, text=[f"{d.accepted}/{d.visits}" for d in stats]), 1, 2)
    fig.add_trace(go.Scatter(x=x, y=[d.alpha_exact for d in stats], name="exact α (mean)",
                             mode="lines+markers", line={"color": Q_COLOR}), 1, 2)
    fig.add_trace(go.Scatter(x=x, y=[d.alpha_optimal for d in stats], name="optimal α for the law (mean)",
                             mode="lines+markers", line={"color": RESIDUAL_COLOR, "dash": "dash"}), 1, 2)
    fig.update_xaxes(title_text="depth of the verifying node (0 = root)", dtick=1, row=1, col=2)
    fig.update_yaxes(range=[0, 1.05], row=1, col=2)


def _running(fig: go.Figure, steps: Sequence[StepRecord]) -> None:
    x = [s.index + 1 for s in steps]
    fig.add_trace(go.Scatter(x=x, y=running_mean(tokens_per_forward(steps)), name="observed, running mean",
                             mode="lines+markers", line={"color": STATUS_COLORS["accepted"]}), 2, 1)
    fig.add_trace(go.Scatter(x=x, y=running_mean([s.expected_tokens for s in steps]),
                             name="expected, running mean", mode="lines", line={"color": "#222222", "dash": "dot"}),
                  2, 1)
    fig.update_xaxes(title_text="step", tick0=1, dtick=_step_tick(len(steps)), row=2, col=1)


def _speed(fig: go.Figure, run: RunNumbers, baseline: BaselineNumbers | None) -> None:
    """Decoding speed (draft + target + verify) next to the target alone, like with like; the all-in speed
    (recording and theory included, which plain decoding never pays) is a separate, paler bar."""
    fig.add_trace(go.Bar(x=["speculative"], y=[run.all_in_tokens_per_second], name="with recording",
                         text=[f"with recording ({max(0.0, run.all_in_seconds - run.seconds):.2f} s of it)"],
                         textposition="auto", marker_color="#B7D7B0", showlegend=False), 2, 2)
    names = ["speculative"]
    speed = [run.tokens_per_second]
    notes = [f"decoding: {run.tokens} tokens, {run.target_forwards} target forwards"]
    if baseline is not None:
        names.append("target alone")
        speed.append(baseline.tokens / baseline.seconds if baseline.seconds > 0 else 0.0)
        notes.append(f"{baseline.tokens} tokens, {baseline.forwards} target forwards")
    fig.add_trace(go.Bar(x=names, y=speed, text=notes, textposition="auto", name="tokens / s",
                         marker_color=[STATUS_COLORS["accepted"], "#777777"][: len(names)], showlegend=False),
                  2, 2)
    fig.update_yaxes(title_text="tokens / s", row=2, col=2)


def summary_markdown(steps: Sequence[StepRecord], baseline: BaselineNumbers | None = None,
                     seconds: float | None = None) -> str:
    run = run_numbers(steps, seconds)
    expected = [s.expected_tokens for s in steps if s.expected_tokens is not None]
    rows = [("steps (target forwards)", f"{run.steps} ({run.target_forwards})"),
            ("tokens emitted", str(run.tokens)),
            ("tokens per target forward", f"{run.tokens_per_forward:.2f}"),
            ("expected tokens per forward (exact)", f"{sum(expected) / len(expected):.2f}" if expected else "—"),
            ("draft forwards", str(run.draft_forwards)),
            ("tokens / s (decoding: draft + target + verify)", f"{run.tokens_per_second:.1f}"),
            ("tokens / s with recording", f"{run.all_in_tokens_per_second:.1f}")]
    if baseline is not None and baseline.seconds > 0:
        base = baseline.tokens / baseline.seconds
        rows += [("target alone: tokens / s", f"{base:.1f} ({baseline.forwards} forwards for {baseline.tokens})"),
                 ("speed-up", f"{run.tokens_per_second / base:.2f}x" if base > 0 else "—")]
    return "| run | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
