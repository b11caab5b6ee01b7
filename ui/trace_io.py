"""Trace export and import: a trace holds every step's records, so an imported one replays every view
from them; the import also makes it the session's live run where this server can re-run it (ui/trace_run.py),
so Step and Run continue it with the tokens the uninterrupted run would have emitted."""

from __future__ import annotations

import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from decoding.run.schema import Trace, read_trace_file, trace_to_json
from ui import decode, engine_trace, replay_file, trace_run
from ui.endpoints import public
from ui.run_cache import RunCache
from ui.session import Controls, Session
from ui.views import Out, Views, internal_error, md
from viz import checks
from viz.tokens import shorten

log = logging.getLogger("specscope.app")
PROGRESS = gr.Progress()  # Gradio gives each event its own tracker; this default holds no state


@dataclass
class TraceIO:
    export: gr.Button
    upload: gr.UploadButton
    file: gr.File
    legacy_export: gr.Button  # never shown: carries the old endpoint name /export (ui.endpoints.LEGACY)
    export_html: gr.Button | None = None  # the run as one HTML replay file that needs no server (ui/replay_file.py)
    engine: engine_trace.EngineTracePanel | None = None  # engine records in, this run out (ui/engine_trace.py)

    @classmethod
    def build(cls) -> TraceIO:
        with gr.Tab("Trace: export / import", id="trace"):
            gr.Markdown("A trace holds every step's records; an imported one replays every view, "
                        "and **Step** continues its run where this server can re-run it (same pair, "
                        "verifier and limits): the same tokens the uninterrupted run would have emitted.")
            with gr.Row():
                export = gr.Button("Export the trace (JSON)", size="sm", elem_id="export-btn")
                upload = gr.UploadButton("Import a trace", file_types=[".json"], size="sm", elem_id="import-btn")
                html_button = gr.Button("Export a replay page (HTML, no server)", size="sm", elem_id="export-html-btn")
            gr.Markdown("The replay page is one HTML file: open it from disk, put it on a course page or a static "
                        "Space, send it by email. It plays every step's story with the tree and the inspector, "
                        "from the run's records, with no server and no network.", elem_id="export-html-note")
            file = gr.File(label="trace file", interactive=False, elem_id="trace-file")
            legacy = gr.Button(visible=False)
            engine = engine_trace.build()
        return cls(export, upload, file, legacy, html_button, engine)


def export(session: Session | None, runs: RunCache | None = None) -> tuple[str | None, str]:
    """Write the shown trace to a fresh file for download; returns (path, status). Every step's exact
    theory is computed first where the live run in `runs` keeps its rows (ui/decode.py: lazy theory)."""
    session = session or Session()
    if not session.steps:
        gr.Warning("Nothing to export yet: run a few steps first.")
        return None, "Nothing to export yet: run a few steps first."
    path = _export_dir() / f"specscope-trace-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}.json"
    session = decode.with_theory(session, range(len(session.steps)), runs)
    path.write_text(trace_to_json(session.trace), encoding="utf-8")
    return str(path), f"Trace of {len(session.steps)} steps ready to download."


def export_html(session: Session | None, runs: RunCache | None = None) -> tuple[str | None, str]:
    """Write the shown run as one self-contained HTML replay file (ui/replay_file.py) for download; returns
    (path, status). The steps' exact theory is filled first, as for the trace export."""
    session = session or Session()
    if not session.steps:
        gr.Warning("Nothing to export yet: run a few steps first.")
        return None, "Nothing to export yet: run a few steps first."
    session = decode.with_theory(session, range(len(session.steps)), runs)
    path = _export_dir() / f"specscope-replay-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}.html"
    try:
        path.write_text(replay_file.document(session.trace), encoding="utf-8")
    except ValueError as err:
        return None, f"⚠️ {md(str(err))}"
    size = path.stat().st_size / 1e6
    return str(path), (f"Replay page of {len(session.steps)} steps ready to download ({size:.1f} MB): open it from "
                       "disk, no server needed.")


def _export_dir(max_age_s: float = 3600.0) -> Path:
    """One folder for every user's exports (names are unique); files older than an hour go."""
    folder = Path(tempfile.gettempdir()) / "specscope-exports"
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in [*folder.glob("specscope-trace-*.json"), *folder.glob("specscope-replay-*.html")]:
        if now - old.stat().st_mtime > max_age_s:
            old.unlink(missing_ok=True)
    return folder


def import_trace(views: Views, session: Session | None, path: str | None, progress: gr.Progress | None = None,
                 request: gr.Request | None = None, *, runs: RunCache | None = None,
                 default: Controls | None = None) -> Out:
    """Replay an uploaded trace: every view is drawn from its records; where this server can re-run the trace
    (ui/trace_run.py) it becomes the session's live run and the control widgets show its settings, so Step
    continues it; otherwise the status says why Step starts a new run."""
    session = session or Session()
    if not path:
        return views.draw(session)
    return views.guarded(session, lambda: _import(views, session, read_trace(path), progress, request, runs,
                                                  default or Controls().within(views.caps)))


def read_trace(path: str) -> Trace:
    """The hardened reader (size cap, UTF-8, nesting cap, strict schema), its messages prefixed for the user."""
    try:
        return read_trace_file(path)
    except ValueError as err:
        raise ValueError(f"could not import this file: {err}") from None
    except (TypeError, KeyError, IndexError, AttributeError, RecursionError) as err:
        raise ValueError(f"could not import this file: malformed trace ({type(err).__name__})") from None


def _import(views: Views, before: Session, trace: Trace, progress: gr.Progress | None,
            request: gr.Request | None, runs: RunCache | None, default: Controls) -> Out:
    _check_drawable(trace)
    try:
        live = trace_run.continued(trace, views.caps, default, progress)
    except ValueError as err:  # NotContinued, a pair that does not load here, a prompt that does not fit
        return _replay_only(views, trace, str(err))
    except Exception as err:  # noqa: BLE001 - the records still draw; Step starts a new run
        log.exception("continuing an imported trace failed")
        return _replay_only(views, trace, internal_error(err))
    controls = live.configured.controls
    session = Session(run=live.run.state, trace=live.run.trace(), controls=controls)
    out = _drawn(views, session)
    if runs is not None:
        runs.evict(before.key)  # the page's earlier run is no longer its run
    decode.keep(runs, session, live.run, request)
    out.update(views.widgets_for(controls))
    note = (f"Imported a trace of {len(trace.steps)} steps and re-ran them here: **Step** continues its run. "
            f"Prompt: {md(shorten(trace.prompt, 120))}")
    out[views.status] = note + "  \n" + out[views.status]
    return out


def _check_drawable(trace: Trace) -> None:
    problems = checks.trace_problems(trace)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise ValueError(f"this trace's records are inconsistent and cannot be drawn: {problems[0]}{more}")


def _drawn(views: Views, session: Session) -> Out:
    try:
        return views.draw(session)
    except (TypeError, KeyError, IndexError, AttributeError, ValueError) as err:
        raise ValueError(f"this trace's records are inconsistent and cannot be drawn ({type(err).__name__}: "
                         f"{shorten(str(err), 80)})") from None


def _replay_only(views: Views, trace: Trace, why: str) -> Out:
    """The trace's steps drawn with no live run: Step starts a new run, and the status says why."""
    out = _drawn(views, Session(trace=trace))
    note = (f"Imported a trace of {len(trace.steps)} steps (replay only). **Step** starts a new run: this trace "
            f"cannot be continued here: {md(shorten(why, 200))}. Prompt: {md(shorten(trace.prompt, 120))}")
    out[views.status] = note + "  \n" + out[views.status]
    return out


def wire(views: Views, panel: TraceIO, runs: RunCache | None = None, default: Controls | None = None,
         decode_queue: dict | None = None) -> list:
    """Wire export and import; returns the events that change the session (import). The import may load the
    trace's pair and re-run its steps: it queues with Step and Run (`decode_queue`)."""
    def exporting(session: Session | None) -> tuple[str | None, str]:
        return export(session, runs)

    # Closure, not a partial: Gradio finds the gr.Request parameter by a plain function's type hints.
    def importing(session: Session | None, path: str | None, request: gr.Request,
                  progress: gr.Progress = PROGRESS) -> Out:
        return import_trace(views, session, path, progress, request, runs=runs, default=default)

    panel.export.click(exporting, [views.state], [panel.file, views.status], **public("export_trace"))
    panel.legacy_export.click(exporting, [views.state], [panel.file, views.status], api_name="export")

    def exporting_html(session: Session | None) -> tuple[str | None, str]:
        return export_html(session, runs)

    if panel.export_html is not None:
        panel.export_html.click(exporting_html, [views.state], [panel.file, views.status], **public("export_html"))
    outputs = [*views.outputs(), *views.controls.values()]  # widgets last: the API's first outputs stay
    return [panel.upload.upload(importing, [views.state, panel.upload], outputs, show_progress_on=[views.status],
                                **public("import_trace"), **(decode_queue or {}))]
