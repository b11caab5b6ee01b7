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

    @property
    def recording_seconds(self) -> float:
        """The part of the wall time that was the app's recording (plain decoding never pays it)."""
        return max(0.0, self.all_in_seconds - self.seconds)


def run_numbers(steps: Sequence[StepRecord], seconds: float | None = None) -> RunNumbers:
    """Counts and times of a run. `seconds` (wall time, recording included) only sets the all-in speed:
    the speed compared with plain decoding is always the decoding time, so like is compared with like."""
    decode = run_seconds(steps)
    all_in = decode + record_seconds(steps) if seconds is None else seconds
    return RunNumbers(len(steps), sum(s.n_emitted for s in steps), sum(s.target_forwards for s in steps),
                      sum(s.draft_forwards for s in steps), decode, all_in)


DECODING_ONLY = "decoding time only (draft + target + verify)"
WALL = "wall time incl. the app's recording"
YOU_RAN = "against the target alone you ran"


@dataclass(frozen=True)
class Against:
    """The run's speed over the target alone the user ran ("Compare with the target alone"), the one definition
    both the Run statistics and the Speed tab show: `decoding` compares like with like (neither side's time
    has the app's recording; neither has the prompt's prefill, done before either is timed), `wall` is the
    speculative run's wall time, recording included, over the same target alone."""

    decoding: float
    wall: float
    recording_s: float  # of the speculative run's wall time

    def words(self) -> str:
        """The two numbers with what each is, for a teacher."""
        return (f"**{self.decoding:.2f}x** {YOU_RAN}, {DECODING_ONLY}; {self.wall:.2f}x in {WALL} "
                f"({self.recording_s:.2f} s of it, which plain decoding never pays)")


def against_baseline(steps: Sequence[StepRecord], baseline: BaselineNumbers | None,
                     seconds: float | None = None) -> Against | None:
    """This run's tokens per second over the target alone's, or None without a timed baseline."""
    run = run_numbers(steps, seconds)
    if baseline is None or baseline.seconds <= 0 or baseline.tokens <= 0 or run.seconds <= 0:
        return None
    base = baseline.tokens / baseline.seconds
    return Against(run.tokens_per_second / base, run.all_in_tokens_per_second / base, run.recording_seconds)


FIRST_SLOW = 1.5  # the first step's time a token over the later steps' that is worth a word
FEW_STEPS = 8


def slow_reasons(steps: Sequence[StepRecord], first_included: bool = True) -> list[str]:
    """Why a run's measured speed-up is low, where its records can tell: the first step's one-time costs
    (when the number includes it), fewer tokens a step than the exact expectation, too few steps."""
    reasons = []
    ratio = first_step_ratio(steps)
    if first_included and ratio is not None and ratio >= FIRST_SLOW:
        reasons.append(f"its first step took {ratio:.1f}x as long a token as the later ones (a run's first "
                       "forwards pay one-time costs)")
    expected = [s.expected_tokens for s in steps if s.expected_tokens is not None]
    got = sum(s.n_emitted for s in steps) / len(steps) if steps else 0.0
    if expected and got < 0.85 * sum(expected) / len(expected):
        reasons.append(f"its steps emitted {got:.2f} tokens each where {sum(expected) / len(expected):.2f} were "
                       "expected (chance)")
    if steps and len(steps) < FEW_STEPS:
        reasons.append(f"only {len(steps)} step{'s' * (len(steps) > 1)}: Run more for a steadier number")
    return reasons


def first_step_ratio(steps: Sequence[StepRecord]) -> float | None:
    """The first step's decoding ms a token over the later steps' (None with fewer than two steps)."""
    later = steps[1:]
    later_tokens = sum(s.n_emitted for s in later)
    if not later or not later_tokens or not steps[0].n_emitted:
        return None
    later_ms = sum(s.decode_ms for s in later) / later_tokens
    return steps[0].decode_ms / steps[0].n_emitted / later_ms if later_ms > 0 else None


def run_figure(steps: Sequence[StepRecord], baseline: BaselineNumbers | None = None,
               seconds: float | None = None) -> go.Figure:
    """Four charts, each with its own legend under it (one shared legend read as if it covered all four)."""
    fig = make_subplots(rows=2, cols=2, vertical_spacing=0.3, horizontal_spacing=0.12, subplot_titles=(
        "tokens per target forward, by step", "acceptance by depth",
        "block efficiency so far<br>vs its exact expectation", speed_title(baseline)))
    _per_step(fig, steps)
    _by_depth(fig, steps)
    _running(fig, steps)
    _speed(fig, run_numbers(steps, seconds), baseline)
    bottoms = {1: fig.layout.yaxis.domain[0], 2: fig.layout.yaxis3.domain[0]}
    legends = {name: _legend_under(bottoms[row], col) for name, (row, col) in LEGENDS.items()}
    fig.update_layout(height=HEIGHT, margin=MARGIN, plot_bgcolor="white", barmode="group", **legends)
    fig.update_yaxes(gridcolor="#EEEEEE", rangemode="tozero")
    return fig


LEGENDS = {"legend": (1, 1), "legend2": (1, 2), "legend3": (2, 1), "legend4": (2, 2)}  # each chart's own legend
_LEGEND_OF = {cell: name for name, cell in LEGENDS.items()}
HEIGHT, MARGIN = 860, {"l": 50, "r": 20, "t": 60, "b": 120}
UNDER_AXIS_PX = 80  # an x axis's tick labels (two lines under "acceptance by depth") and its title


def _legend_under(bottom: float, col: int) -> dict:
    """A legend under one chart's x-axis title, at the chart's left edge, one entry a line (side by side, two
    charts' legends ran into each other at 800 px)."""
    plot_px = HEIGHT - MARGIN["t"] - MARGIN["b"]
    return {"orientation": "v", "x": 0.0 if col == 1 else 0.55, "xanchor": "left", "yanchor": "top",
            "y": bottom - UNDER_AXIS_PX / plot_px, "font": {"size": 11}}


def _add(fig: go.Figure, trace, row: int, col: int) -> None:
    fig.add_trace(trace.update(legend=_LEGEND_OF[(row, col)]), row, col)


def speed_title(baseline: BaselineNumbers | None) -> str:
    """The speed chart's title: plain decoding is in it only once the user has run it."""
    return "speed vs plain decoding<br>(the target alone)" if baseline is not None else "speed of this run"


def _per_step(fig: go.Figure, steps: Sequence[StepRecord]) -> None:
    x = [s.index + 1 for s in steps]
    _add(fig, go.Bar(x=x, y=tokens_per_forward(steps), name="tokens per target forward",
                     marker_color=STATUS_COLORS["accepted"]), 1, 1)
    _add(fig, go.Scatter(x=x, y=[s.expected_tokens for s in steps], name="expected (exact, this tree)",
                         mode="markers", marker={"color": "#222222", "symbol": "line-ew-open", "size": 18,
                                                 "line": {"width": 2}}), 1, 1)
    fig.update_xaxes(title_text="step", tick0=1, dtick=_step_tick(len(steps)), row=1, col=1)


def _step_tick(n: int) -> int:
    return max(1, n // 8)


def _by_depth(fig: go.Figure, steps: Sequence[StepRecord]) -> None:
    """The accepted/visited counts go under each depth's tick (on the bar they sat on the α markers)."""
    stats = acceptance_by_depth(steps)
    x = [d.depth for d in stats]
    counts = [f"{d.accepted}/{d.visits} accepted" for d in stats]
    _add(fig, go.Bar(x=x, y=[d.rate for d in stats], name="observed: accepted / visited", marker_color=P_COLOR,
                     hovertext=counts), 1, 2)
    _add(fig, go.Scatter(x=x, y=[d.alpha_exact for d in stats], name="exact α (mean)",
                         mode="lines+markers", line={"color": Q_COLOR}), 1, 2)
    _add(fig, go.Scatter(x=x, y=[d.alpha_optimal for d in stats], name="optimal α for the law",
                         mode="lines+markers", line={"color": RESIDUAL_COLOR, "dash": "dash"}), 1, 2)
    fig.update_xaxes(title_text="depth of the verifying node (0 = root)", tickvals=x,
                     ticktext=[f"{d.depth}<br>{d.accepted}/{d.visits}" for d in stats], row=1, col=2)
    fig.update_yaxes(range=[0, 1.05], row=1, col=2)


def _running(fig: go.Figure, steps: Sequence[StepRecord]) -> None:
    x = [s.index + 1 for s in steps]
    _add(fig, go.Scatter(x=x, y=running_mean(tokens_per_forward(steps)), name="observed, running mean",
                         mode="lines+markers", line={"color": STATUS_COLORS["accepted"]}), 2, 1)
    _add(fig, go.Scatter(x=x, y=running_mean([s.expected_tokens for s in steps]),
                         name="expected, running mean", mode="lines", line={"color": "#222222", "dash": "dot"}),
         2, 1)
    fig.update_xaxes(title_text="step", tick0=1, dtick=_step_tick(len(steps)), row=2, col=1)


def _speed(fig: go.Figure, run: RunNumbers, baseline: BaselineNumbers | None) -> None:
    """Decoding speed (draft + target + verify) next to the target alone, like with like; the all-in speed
    (recording and theory included, which plain decoding never pays) is a separate, paler bar. Bar texts are
    the numbers only (horizontal); the counts are in the hover."""
    _add(fig, go.Bar(x=["speculative"], y=[run.all_in_tokens_per_second], name=f"speculative, {WALL}",
                     text=[f"{run.all_in_tokens_per_second:.1f}"], textposition="outside", textangle=0,
                     hovertext=[f"{run.tokens} tokens in {run.all_in_seconds:.2f} s ({_recording(run)})"],
                     cliponaxis=False,
                     marker_color="#B7D7B0"), 2, 2)
    names = ["speculative"]
    speed = [run.tokens_per_second]
    notes = [f"{run.tokens} tokens, {run.target_forwards} target forwards, {run.seconds:.2f} s"]
    if baseline is not None:
        names.append("target alone")
        speed.append(baseline.tokens / baseline.seconds if baseline.seconds > 0 else 0.0)
        notes.append(f"{baseline.tokens} tokens, {baseline.forwards} target forwards, {baseline.seconds:.2f} s")
    _add(fig, go.Bar(x=names, y=speed, text=[f"{v:.1f}" for v in speed], textposition="outside", textangle=0,
                     hovertext=notes, cliponaxis=False, name="decoding time only (grey: target alone)",
                     marker_color=[STATUS_COLORS["accepted"], "#777777"][: len(names)]), 2, 2)
    fig.update_xaxes(tickvals=names, ticktext=[TICKS[n] for n in names], row=2, col=2)
    headroom = 1.2 if baseline is not None else 1.7  # room above the bars for the note that says what to press
    fig.update_yaxes(title_text="tokens / s", row=2, col=2,
                     range=[0, headroom * max(speed + [run.all_in_tokens_per_second, 1e-9])])
    if baseline is None:
        fig.add_annotation(text=PRESS_BASELINE, showarrow=False, xref="x4 domain", yref="y4 domain", x=0.98,
                           y=0.97, xanchor="right", yanchor="top", font={"size": 11, "color": "#555555"})


TICKS = {"speculative": "speculative<br>(this run)", "target alone": "target alone<br>(plain decoding)"}
PRESS_BASELINE = "press “Compare with the target alone”<br>to add plain decoding"


def _recording(run: RunNumbers) -> str:
    return f"{run.recording_seconds:.2f} s of recording"


def summary_markdown(steps: Sequence[StepRecord], baseline: BaselineNumbers | None = None,
                     seconds: float | None = None) -> str:
    run = run_numbers(steps, seconds)
    expected = [s.expected_tokens for s in steps if s.expected_tokens is not None]
    forwards = (f"{run.target_forwards} (one per step: the whole tree in one forward)"
                if run.target_forwards == run.steps else f"{run.target_forwards} over {run.steps} steps")
    rows = [("steps", str(run.steps)),
            ("target forwards", forwards),
            ("tokens emitted", str(run.tokens)),
            ("tokens per target forward", f"{run.tokens_per_forward:.2f}"),
            ("expected tokens per forward (exact)", f"{sum(expected) / len(expected):.2f}" if expected else "—"),
            ("draft forwards (one per tree level)", str(run.draft_forwards)),
            (f"tokens / s, {DECODING_ONLY}", f"{run.tokens_per_second:.1f}"),
            (f"tokens / s, {WALL}", f"{run.all_in_tokens_per_second:.1f} ({_recording(run)})")]
    against = against_baseline(steps, baseline, seconds)
    if baseline is not None and against is not None:
        rows += [("target alone you ran: tokens / s", f"{baseline.tokens / baseline.seconds:.1f} "
                  f"({baseline.forwards} forwards for {baseline.tokens} tokens)"),
                 ("speed-up", f"{against.decoding:.2f}x (decoding time only)"),
                 (f"speed-up, {WALL}", f"{against.wall:.2f}x")]
    else:
        rows.append(("target alone (plain decoding)", "press **Compare with the target alone** to run it"))
    table = "| this run | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
    reasons = slow_reasons(steps) if against is not None and against.decoding < 1 else []
    return table + (f"\n\nBelow 1x here: {'; '.join(reasons)}." if reasons else "")
