"""Trace export and import: a trace holds every step's records, so an imported one replays every view
with no model loaded."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import gradio as gr

from decoding.run.schema import Trace, read_trace_file, trace_to_json
from ui import decode
from ui.endpoints import public
from ui.run_cache import RunCache
from ui.session import Session
from ui.views import Out, Views, md
from viz import checks
from viz.tokens import shorten


@dataclass
class TraceIO:
    export: gr.Button
    upload: gr.UploadButton
    file: gr.File
    legacy_export: gr.Button  # never shown: carries the old endpoint name /export (ui.endpoints.LEGACY)

    @classmethod
    def build(cls) -> TraceIO:
        with gr.Tab("Trace: export / import"):
            gr.Markdown("A trace holds every step's records; an imported one replays every view "
                        "with no model loaded.")
            with gr.Row():
                export = gr.Button("Export the trace (JSON)", size="sm", elem_id="export-btn")
                upload = gr.UploadButton("Import a trace", file_types=[".json"], size="sm", elem_id="import-btn")
            file = gr.File(label="trace file", interactive=False, elem_id="trace-file")
            legacy = gr.Button(visible=False)
        return cls(export, upload, file, legacy)


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


def _export_dir(max_age_s: float = 3600.0) -> Path:
    """One folder for every user's exports (names are unique); files older than an hour go."""
    folder = Path(tempfile.gettempdir()) / "specscope-exports"
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in folder.glob("specscope-trace-*.json"):
        if now - old.stat().st_mtime > max_age_s:
            old.unlink(missing_ok=True)
    return folder


def import_trace(views: Views, session: Session | None, path: str | None) -> Out:
    """Replay an uploaded trace: every view is drawn from its records, with no model loaded."""
    session = session or Session()
    if not path:
        return views.draw(session)
    return views.guarded(session, lambda: _replay(views, read_trace(path)))


def read_trace(path: str) -> Trace:
    """The hardened reader (size cap, UTF-8, nesting cap, strict schema), its messages prefixed for the user."""
    try:
        return read_trace_file(path)
    except ValueError as err:
        raise ValueError(f"could not import this file: {err}") from None
    except (TypeError, KeyError, IndexError, AttributeError, RecursionError) as err:
        raise ValueError(f"could not import this file: malformed trace ({type(err).__name__})") from None


def _replay(views: Views, trace: Trace) -> Out:
    problems = checks.trace_problems(trace)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise ValueError(f"this trace's records are inconsistent and cannot be drawn: {problems[0]}{more}")
    session = Session(trace=trace)
    try:
        out = views.draw(session)
    except (TypeError, KeyError, IndexError, AttributeError, ValueError) as err:
        raise ValueError(f"this trace's records are inconsistent and cannot be drawn ({type(err).__name__}: "
                         f"{shorten(str(err), 80)})") from None
    note = (f"Imported a trace of {len(trace.steps)} steps (replay only, no model loaded). "
            f"Prompt: {md(shorten(trace.prompt, 120))}")
    out[views.status] = note + "  \n" + out[views.status]
    return out


def wire(views: Views, panel: TraceIO, runs: RunCache | None = None) -> list:
    """Wire export and import; returns the events that change the session (import)."""
    exporting = partial(export, runs=runs)
    panel.export.click(exporting, [views.state], [panel.file, views.status], **public("export_trace"))
    panel.legacy_export.click(exporting, [views.state], [panel.file, views.status], api_name="export")
    return [panel.upload.upload(partial(import_trace, views), [views.state, panel.upload], views.outputs(),
                                **public("import_trace"))]
