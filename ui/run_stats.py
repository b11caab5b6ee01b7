"""Run statistics: tokens per target forward, acceptance by depth, and the speed against the target alone.

The four charts are drawn only while their tab is open: a Step or Run leaves them alone (no figure
built, none sent), the tab's select event draws them, and while it is open `refresh` (chained after
every event that changes the session) redraws them once the event is done. Whether the tab is open
is per page, in the `shown` gr.State (False at start: the compare tab comes first).

The app's runs leave a step's exact theory to the view that shows it (ui/decode.py); the charts show the
exact α of every step, so drawing them computes it for each step whose p/q rows the live run still keeps,
and the summary says over how many steps the mean was taken when some have none.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import gradio as gr

from decoding.run import engine
from decoding.run.config import DecodeConfig
from ui import decode
from ui.endpoints import public
from ui.run_cache import RunCache
from ui.session import Session
from ui.views import Out, Views
from viz import stats

LABEL = "Run statistics"
PROGRESS = gr.Progress()  # Gradio gives each event its own tracker; this default holds no state
GUIDE = ("Press **Step** or **Run** first: these charts read the run's steps. Then **Compare with the target "
         "alone** times plain decoding of the same tokens, for the speed-up.")


@dataclass
class RunStats:
    tab: gr.Tab
    baseline: gr.Button
    summary: gr.Markdown
    plot: gr.Plot
    shown: gr.State  # whether this page has the tab open

    @classmethod
    def build(cls) -> RunStats:
        with gr.Tab(LABEL, id="stats") as tab:
            baseline = gr.Button("Compare with the target alone (plain decoding)", size="sm")
            summary = gr.Markdown(GUIDE, elem_id="stats-summary")
            plot = gr.Plot(label="run statistics", show_label=False, elem_id="stats-plot")
            # Inside the tab: a gr.Tabs' children must all be tabs. Gradio numbers each tab by its index among
            # them, so a State between two tabs shifted every later tab's number by one, and selecting one of
            # those drew its label twice in the bar, in place of its neighbour's (tests/ui/test_tab_bar.py).
            shown = gr.State(False)  # not the first tab: closed at start
        return cls(tab, baseline, summary, plot, shown)

    def named(self) -> dict[str, Any]:
        return {"stats_plot": self.plot, "stats_md": self.summary}

    def draw(self, session: Session, position: int) -> Out:
        """Nothing: the charts are drawn by `charts` only while their tab is open (see the module doc)."""
        return {self.plot: gr.skip(), self.summary: gr.skip()}

    def charts(self, session: Session, runs: RunCache | None = None) -> Out:
        """The four charts and the summary of the session's run (the one-line guide when it has no steps); the steps'
        theory computed first where the live run in `runs` keeps their rows."""
        if not session.steps:
            return self.clear()
        session = decode.with_theory(session, range(len(session.steps)), runs)
        steps = session.steps
        seconds = session.trace.summary.seconds if session.trace.summary else None
        return {self.plot: stats.run_figure(steps, session.baseline, seconds),
                self.summary: stats.summary_markdown(steps, session.baseline, seconds) + theory_note(steps)}

    def clear(self) -> Out:
        """No run (a fresh page, after Reset): no charts, and one line saying what to press."""
        return {self.plot: None, self.summary: GUIDE}


def theory_note(steps) -> str:
    """A line under the summary when some steps have no exact theory (their rows were gone), else nothing."""
    missing = sum(decode.lacks_theory(s) for s in steps)
    if not missing:
        return ""
    return (f"\n\nExact α by depth: the mean over the {len(steps) - missing} of {len(steps)} steps whose theory "
            f"was computed (a live run keeps the p/q rows of its last {engine.LAZY_THEORY_STEPS} steps).")


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
    session = replace(session, baseline=numbers)
    return {**views.draw(session), **_panel(views).charts(session)}  # its button is in the open tab


def _panel(views: Views) -> RunStats:
    return next(p for p in views.panels if isinstance(p, RunStats))


def refresh(panel: RunStats, session: Session | None, shown: bool, runs: RunCache | None = None) -> Out:
    """After an event that changed the session: the charts if the tab is open, else nothing sent."""
    if not shown:
        return {panel.plot: gr.skip(), panel.summary: gr.skip()}
    return panel.charts(session or Session(), runs)


def tab_selected(panel: RunStats, session: Session | None, label: str | None, runs: RunCache | None = None) -> Out:
    """A tab was selected: draw the charts when it is this one, and remember whether it is."""
    shown = label == LABEL
    return {panel.shown: shown, **refresh(panel, session, shown, runs)}


def wire(views: Views, panel: RunStats, decode_queue: dict) -> None:
    panel.baseline.click(partial(baseline, views), [views.state], views.outputs(), **public("baseline"), **decode_queue)


def wire_lazy(views: Views, panel: RunStats, tabs: gr.Tabs, changes: list, runs: RunCache | None = None) -> None:
    """Draw on tab select, and after each event in `changes` (those that change the session)."""
    def selected(session: Session | None, event: gr.SelectData) -> Out:
        return tab_selected(panel, session, event.value, runs)

    tabs.select(selected, [views.state], [panel.shown, panel.plot, panel.summary], show_progress="hidden")
    for change in changes:
        change.then(partial(refresh, panel, runs=runs), [views.state, panel.shown], [panel.plot, panel.summary],
                    show_progress="hidden", queue=False)  # no model work: skip the queue's round trips
