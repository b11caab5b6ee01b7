"""Run statistics: tokens per target forward, acceptance by depth, and the speed against the target alone."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import gradio as gr

from decoding.run.config import DecodeConfig
from ui import decode
from ui.session import Session
from ui.views import Out, Views
from viz import stats

PROGRESS = gr.Progress()  # Gradio gives each event its own tracker; this default holds no state


@dataclass
class RunStats:
    tab: gr.Tab
    baseline: gr.Button
    summary: gr.Markdown
    plot: gr.Plot

    @classmethod
    def build(cls) -> RunStats:
        with gr.Tab("Run statistics") as tab:
            baseline = gr.Button("Compare with the target alone (plain decoding)", size="sm")
            summary = gr.Markdown()
            plot = gr.Plot(label="run statistics", show_label=False, elem_id="stats-plot")
        return cls(tab, baseline, summary, plot)

    def named(self) -> dict[str, Any]:
        return {"stats_plot": self.plot, "stats_md": self.summary}

    def draw(self, session: Session, position: int) -> Out:
        steps = session.steps
        seconds = session.trace.summary.seconds if session.trace.summary else None
        return {self.plot: stats.run_figure(steps, session.baseline, seconds),
                self.summary: stats.summary_markdown(steps, session.baseline, seconds)}

    def clear(self) -> Out:
        return {self.plot: None, self.summary: ""}


def baseline(views: Views, session: Session | None, progress: gr.Progress = PROGRESS) -> Out:
    """Decode the same number of tokens with the target alone, for the speed comparison."""
    session = session or Session()
    return views.guarded(session, lambda: _baseline(views, session, progress))


def _baseline(views: Views, session: Session, progress: gr.Progress | None) -> Out:
    if session.run is None or session.controls is None or not session.run.generated_ids:
        raise ValueError("the baseline needs a live run with some tokens: press Step or Run first")
    pair = decode.load(session.controls, progress)
    config = DecodeConfig.from_dict(session.run.config)
    base = decode.baseline(pair, list(session.run.prompt_ids), len(session.run.generated_ids), config)
    numbers = stats.BaselineNumbers(tokens=len(base.ids), seconds=base.seconds, forwards=base.forwards)
    return views.draw(replace(session, baseline=numbers))


def wire(views: Views, panel: RunStats, decode_queue: dict) -> None:
    panel.baseline.click(partial(baseline, views), [views.state], views.outputs(), **decode_queue)
