"""The Trace tab's "Engine traces" panel: an engine's speculative-decoding record (vLLM, SGLang, llama.cpp) uploaded
or picked from the PRs' own examples, drawn beside specscope's exact expectation for the same chain (this run's
records, or a built-in pair's shipped acceptance), a bad record's one-line reason; and this run exported in an
engine's shape. docs/verifiers.md §22.

Handlers are plain functions of the component values; the page's null (None) for an empty file box or menu is
handled, and every bad input is one line, never a traceback."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from decoding.run import engine_export, engine_shape, engine_traces
from ui import decode
from ui.run_cache import RunCache
from ui.session import Session
from ui.views import md
from viz import engine_trace as viz_engine

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "assets" / "engine_traces"
AUTO = "auto"
NO_EXPECTATION, THIS_RUN = "none", "this run's records"
EXPORT_PREFIX = "specscope-engine-"
INTRO = ("### Engine traces: where an engine's acceptance falls off\n"
         "Upload what your engine reports for a request (vLLM `metrics.speculative_decoding`, SGLang "
         "`speculative_decoding_stats`, llama.cpp's `timings` or its `statistics` log line), or pick an example "
         "from the PRs that added them. Drawn: P(accept position i | reached) with 95 % Wilson intervals, the "
         "accepted-length histogram and the cliff (the first position whose interval lies wholly below the one "
         "before it), beside specscope's exact expectation for the same chain. The same: "
         "`python -m decoding engine-trace FILE`.")


@dataclass
class EngineTracePanel:
    upload: gr.File
    example: gr.Dropdown
    fmt: gr.Dropdown
    expect: gr.Dropdown
    draw: gr.Button
    plot: gr.Plot
    summary: gr.Markdown
    shape: gr.Dropdown
    export: gr.Button
    file: gr.File


def examples() -> list[tuple[str, str]]:
    """(label, file name) of each shipped example record."""
    return [(path.stem.replace("_", " "), path.name) for path in sorted(EXAMPLES_DIR.glob("*"))
            if path.suffix in (".json", ".txt")]


def expectation_choices() -> list[str]:
    from decoding.speed.chain_expectation import shipped_pairs

    pairs = [f"{kind} pair, T = {t:g} (shipped)" for kind, temps in shipped_pairs().items() for t in temps]
    return [NO_EXPECTATION, THIS_RUN, *pairs]


def build() -> EngineTracePanel:
    """Built inside the Trace tab (ui/trace_io.py)."""
    gr.Markdown(INTRO, elem_id="engine-trace-intro")
    with gr.Row():
        upload = gr.File(label="engine record (JSON or llama.cpp log)", file_types=[".json", ".txt", ".log"],
                         elem_id="engine-trace-upload")
        with gr.Column():
            example = gr.Dropdown([("(none)", ""), *examples()], value="vllm_pr48915_summary.json",
                                  label="or an example from the PRs", elem_id="engine-trace-example")
            fmt = gr.Dropdown([AUTO, *engine_traces.ENGINES], value=AUTO, label="format",
                              elem_id="engine-trace-format")
            expect = gr.Dropdown(expectation_choices(), value=NO_EXPECTATION, label="specscope's exact expectation",
                                 elem_id="engine-trace-expect")
            draw = gr.Button("Draw the engine record", elem_id="engine-trace-draw")
    plot = gr.Plot(elem_id="engine-trace-plot", show_label=False)
    summary = gr.Markdown("", elem_id="engine-trace-summary")
    with gr.Row():
        shape = gr.Dropdown(list(engine_export.SHAPES), value="vllm", label="export this run as",
                            elem_id="engine-trace-shape")
        export = gr.Button("Export this run as an engine record", size="sm", elem_id="engine-trace-export")
    file = gr.File(label="engine record of this run", interactive=False, elem_id="engine-trace-file")
    return EngineTracePanel(upload, example, fmt, expect, draw, plot, summary, shape, export, file)


def show(path: str | None, example: str | None, fmt: str | None, expect: str | None,
         session: Session | None = None, runs: RunCache | None = None) -> tuple[Any, str]:
    """(figure, words) of the uploaded record (else the picked example); a bad record: (None, its one-line reason)."""
    source = path or (str(EXAMPLES_DIR / Path(example).name) if example else None)
    if not source:
        return None, "Upload an engine record or pick an example."
    try:
        record = engine_traces.read_file(source, None if fmt in (None, "", AUTO) else fmt)
        analysis = engine_shape.analyse(record, expectation(expect, record, session, runs))
    except (ValueError, OSError) as err:
        return None, f"⚠️ {md(str(err))}"
    return viz_engine.figure(analysis), viz_engine.summary_markdown(analysis)


def expectation(choice: str | None, record: engine_traces.EngineRecord, session: Session | None,
                runs: RunCache | None) -> engine_shape.Expected | None:
    if not choice or choice == NO_EXPECTATION:
        return None
    if choice == THIS_RUN:
        return run_expectation(record, session, runs)
    kind, temperature = parse_pair_choice(choice)
    from decoding.speed.chain_expectation import chain_alphas

    alphas, source = chain_alphas(kind, temperature)
    return engine_shape.expected(alphas, record.max_draft or len(alphas), source)


def parse_pair_choice(choice: str) -> tuple[str, float]:
    """'embedded pair, T = 0.8 (shipped)' -> ('embedded', 0.8)."""
    try:
        kind, rest = choice.split(" pair, T = ")
        return kind, float(rest.split()[0])
    except ValueError:
        raise ValueError(f"unknown expectation {choice!r}") from None


def run_expectation(record: engine_traces.EngineRecord, session: Session | None,
                    runs: RunCache | None) -> engine_shape.Expected:
    session = session or Session()
    if not session.steps:
        raise ValueError("no run yet: Step a few times (a chain, e.g. tree 1,1,1) for this run's exact expectation")
    session = decode.with_theory(session, range(len(session.steps)), runs)
    alphas = engine_export.depth_alphas(session.steps)
    if isinstance(alphas, str):
        raise ValueError(alphas)
    return engine_shape.expected(alphas, record.max_draft or len(alphas),
                                 f"this run's exact per-node acceptance, {len(session.steps)} steps")


def export(session: Session | None, shape: str | None, runs: RunCache | None = None) -> tuple[str | None, str]:
    """This run in an engine's shape, written for download; (None, the one-line reason) when it cannot be."""
    session = session or Session()
    if not session.steps:
        return None, "Nothing to export yet: run a few steps first (a chain: tree 1,1,1)."
    try:
        text = engine_export.export_text(session.trace, shape or "vllm")
    except ValueError as err:
        return None, f"⚠️ {md(str(err))}"
    suffix = ".txt" if shape == "llamacpp" else ".json"
    path = _export_dir() / f"{EXPORT_PREFIX}{shape}-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}{suffix}"
    path.write_text(text, encoding="utf-8")
    name = engine_traces.ENGINE_NAMES[shape or "vllm"]
    return str(path), f"This run as a {name} record ({len(session.steps)} steps)."


def _export_dir(max_age_s: float = 3600.0) -> Path:
    folder = Path(tempfile.gettempdir()) / "specscope-exports"
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in folder.glob(f"{EXPORT_PREFIX}*"):
        if now - old.stat().st_mtime > max_age_s:
            old.unlink(missing_ok=True)
    return folder


def wire(panel: EngineTracePanel, state: gr.State, runs: RunCache | None = None) -> None:
    def drawing(path, example, fmt, expect, session):
        return show(path, example, fmt, expect, session, runs)

    def exporting(session, shape):
        return export(session, shape, runs)

    inputs = [panel.upload, panel.example, panel.fmt, panel.expect, state]
    panel.draw.click(drawing, inputs, [panel.plot, panel.summary])
    panel.upload.upload(drawing, inputs, [panel.plot, panel.summary])
    panel.export.click(exporting, [state, panel.shape], [panel.file, panel.summary])
