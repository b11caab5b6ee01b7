"""specscope's Gradio app: layout and event wiring; the handlers are short adapters.

Per-user data lives only in gr.State, as a plain, deep-copyable `Session` (the run's RunState, the
trace it shows, a baseline's numbers). The only process-wide objects are the read-only models
behind `models.load_pair`'s cache. Every view is drawn by `viz` from StepRecords, so an imported
trace replays with no model loaded. Handlers never raise to the user: a bad input or a model
that fails to load becomes a warning and a status line, and the app stays up.
"""

from __future__ import annotations

import argparse
import html
import json
import logging
import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr
import plotly.graph_objects as go

from decoding.models import pairs as models
from decoding.run import engine
from decoding.run.config import DecodeConfig, parse_branching
from decoding.run.schema import Trace, trace_from_json, trace_to_json
from decoding.verify.registry import VERIFIERS
from viz import checks, node_figure, stats, text, tree_figure
from viz.tokens import shorten, visible

log = logging.getLogger("specscope.app")
ASSETS = Path(__file__).resolve().parent / "assets"
PAIRS = (("embedded: SmolLM2-135M + its int8 self-draft", "embedded"),
         ("lookup: SmolLM2-135M + prompt-lookup draft", "lookup"),
         ("toy: a 12-word language (instant)", "toy"),
         ("custom: two hub ids or local folders", "custom"))
SHAPES = ("branching per level", "K sequences x depth")
MAX_TRACE_BYTES = 50 * 1024 * 1024
HELP_HEADING = "## The app: what each panel shows and how to read it"
# Gradio finds a progress tracker by a parameter whose default is a gr.Progress; it hands each event
# its own tracker, so one shared default instance holds no per-user state.
PROGRESS = gr.Progress()
CSS = ".specscope-status p { margin: 0.2em 0; } #tree-plot { min-height: 320px; }"


# ---- plain per-user data -------------------------------------------------------------------------
@dataclass(frozen=True)
class Controls:
    """The control values, in the order of the app's inputs (astuple(controls) feeds a handler)."""

    pair: str = "embedded"
    target: str = ""
    draft: str = ""
    prompt: str = "Why is the sky blue?"
    verifier: str = "rrs_wor"
    shape: str = SHAPES[0]
    branching: str = "3,2,2"
    sequences: int = 4
    depth: int = 4
    temperature: float = 0.8
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    max_new_tokens: int = 48

    def config(self) -> DecodeConfig:
        """A validated DecodeConfig; ValueError with a readable message otherwise."""
        common = dict(verifier=str(self.verifier), temperature=_number(self.temperature, "temperature"),
                      top_k=_integer(self.top_k, "top-k"), top_p=_number(self.top_p, "top-p"),
                      seed=_integer(self.seed, "seed"), max_new_tokens=_integer(self.max_new_tokens, "max new tokens"))
        if self.verifier not in VERIFIERS:
            raise ValueError(f"unknown verifier {self.verifier!r}; choose one of: {', '.join(VERIFIERS)}")
        if self.shape == SHAPES[1]:
            return DecodeConfig(branching=(1,), sequences=_integer(self.sequences, "K sequences"),
                                depth=_integer(self.depth, "depth"), **common)
        return DecodeConfig(branching=parse_branching(self.branching), **common)


@dataclass(frozen=True)
class Session:
    run: engine.RunState | None = None  # a live run that Step/Run can continue
    trace: Trace | None = None  # what the views show: the live run's trace, or an imported one
    controls: Controls | None = None  # the controls the live run was started with
    baseline: stats.BaselineNumbers | None = None

    @property
    def steps(self) -> tuple:
        return self.trace.steps if self.trace is not None else ()


def _number(value: Any, name: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(number):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return number


def _integer(value: Any, name: str) -> int:
    number = _number(value, name)
    if not math.isfinite(number) or number != int(number):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return int(number)


class Views(NamedTuple):
    """Every output of a handler that redraws the page, in the order of `outputs` in build_app."""

    session: Session
    status: str
    slider: dict
    tree: go.Figure | None
    nodes: dict
    node_plot: go.Figure | None
    tests: dict
    text: list
    stats_plot: go.Figure | None
    stats_md: str


# ---- drawing a session -----------------------------------------------------------------------------
def render(session: Session, position: int | None = None, status: str | None = None) -> Views:
    """All views for step `position` (1-based; default the last), drawn from records only."""
    steps = session.steps
    if not steps:
        return _empty_views(session, status or "Press **Step** to draft and verify one tree.")
    position = min(max(1, int(position or len(steps))), len(steps))
    step = steps[position - 1]
    node = _default_node(step)
    seconds = session.trace.summary.seconds if session.trace.summary else None
    return Views(
        session=session,
        status=status if status is not None else status_text(session, position),
        slider=gr.update(minimum=1, maximum=max(2, len(steps)), value=position, interactive=len(steps) > 1),
        tree=tree_figure.tree_figure(step),
        nodes=gr.update(choices=node_choices(step), value=node),
        node_plot=node_figure.node_figure(step, node),
        tests=_table(step, node),
        text=text.highlighted(steps[:position]),
        stats_plot=stats.run_figure(steps, session.baseline, seconds),
        stats_md=stats.summary_markdown(steps, session.baseline, seconds),
    )


def _empty_views(session: Session, status: str) -> Views:
    return Views(session, status, gr.update(minimum=1, maximum=2, value=1, interactive=False), None,
                 gr.update(choices=[], value=None), None, _table(None, 0), [], None, "")


def _table(step, node: int) -> dict:
    rows = node_figure.tests_table(step, node) if step is not None else []
    return {"data": rows or [[""] * len(node_figure.TEST_HEADERS)], "headers": list(node_figure.TEST_HEADERS)}


def _default_node(step) -> int:
    """The last verified node: where this step's story ends (a rejection, or a leaf's bonus)."""
    return step.visits[-1].node if step.visits else 0


def node_choices(step) -> list[tuple[str, int]]:
    return [(f"{n.id}: {shorten(visible(n.text), 20)} ({n.status}{', verified' if _verified(step, n.id) else ''})",
             n.id) for n in step.nodes]


def _verified(step, node: int) -> bool:
    return any(v.node == node for v in step.visits)


def status_text(session: Session, position: int) -> str:
    trace, n = session.trace, len(session.steps)
    cfg = trace.config
    shape = (f"{cfg.get('sequences')} sequences x depth {cfg.get('depth')}" if cfg.get("sequences")
             else ",".join(str(b) for b in cfg.get("branching", [])))
    state = ("imported trace: replay only" if session.run is None
             else f"finished ({session.run.stop_reason})" if session.run.stop_reason else "running")
    models_line = " · ".join(f"{k} {v}" for k, v in trace.models.items() if v not in (None, ""))
    return (f"**Step {position} of {n}** · {len(trace.generated_ids)} tokens · {_md(str(cfg.get('verifier')))} · "
            f"tree {_md(shape)} · T = {_md(str(cfg.get('temperature')))} · {state}  \n{_md(models_line)}")


def _md(value: str) -> str:
    """Escape user-provided text for a Markdown status line (HTML and Markdown punctuation)."""
    return re.sub(r"([\\`*_{}\[\]()#+!|~>-])", r"\\\1", html.escape(value, quote=False))


# ---- errors: a warning and a status line, never a traceback ------------------------------------------
def _problem(session: Session, message: str, position: int | None = None) -> Views:
    gr.Warning(html.escape(message))
    return render(session, position, status=f"⚠️ {_md(message)}")


def _guarded(session: Session, action: Callable[[], Views]) -> Views:
    try:
        return action()
    except ValueError as err:  # includes models.ModelLoadError: the user can fix these
        return _problem(session, str(err))
    except Exception as err:  # noqa: BLE001 - one user's failure must not take the app down
        log.exception("handler failed")
        return _problem(session, f"internal error ({type(err).__name__}): {shorten(str(err), 200)}")


# ---- decoding: load, start or resume, step ------------------------------------------------------------
def load(controls: Controls, progress: gr.Progress | None = None):
    """The (cached, read-only) model pair the controls name; ModelLoadError with a readable message."""
    kinds = [value for _, value in PAIRS]
    if controls.pair not in kinds:
        raise ValueError(f"unknown model pair {controls.pair!r}; choose one of: {', '.join(kinds)}")
    if controls.pair == "custom" and not (str(controls.target).strip() and str(controls.draft).strip()):
        raise ValueError("a custom pair needs both a target and a draft model: hub ids or local folders")
    report = _reporter(progress)
    report(0.0, f"loading the {controls.pair} model pair ...")
    return models.load_pair(controls.pair, target=str(controls.target).strip() or None,
                            draft=str(controls.draft).strip() or None, device=_device(), progress=report)


def _device() -> str:
    return os.environ.get("SPECSCOPE_DEVICE", "auto")


def _reporter(progress: gr.Progress | None) -> Callable[..., None]:
    """Adapt the loader's progress calls (a fraction and/or a message) to gr.Progress and the log."""
    def report(*args: Any, **kwargs: Any) -> None:
        desc = next((a for a in (*args, *kwargs.values()) if isinstance(a, str)), None)
        frac = next((a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)), None)
        if desc:
            log.info("%s", desc)
        if progress is not None:
            progress(None if frac is None else min(max(float(frac), 0.0), 1.0), desc=desc)
    return report


def open_run(session: Session, controls: Controls, progress: gr.Progress | None) -> tuple[engine.Run, bool]:
    """Resume the session's run when the controls are unchanged, else start a new one (fresh=True)."""
    config = controls.config()  # validate before loading anything
    pair = load(controls, progress)
    if session.run is not None and session.controls == controls:
        return engine.resume(pair, session.run), False
    return engine.start(pair, config, str(controls.prompt)), True


def _commit(session: Session, controls: Controls, run: engine.Run, fresh: bool) -> Session:
    baseline = None if fresh else session.baseline
    return Session(run=run.state, trace=run.trace(), controls=controls, baseline=baseline)


def _finished_note(session: Session, controls: Controls) -> str | None:
    run = session.run
    if run is not None and run.stop_reason and session.controls == controls:
        return (f"This run has finished ({run.stop_reason}). Press **Reset** or change a control to "
                "start a new one; the slider replays its steps.")
    return None


# ---- handlers (module level, so tests can call them directly) -----------------------------------------
def step_handler(session: Session | None, pair: str, target: str, draft: str, prompt: str, verifier: str,
                 shape: str, branching: str, sequences: float, depth: float, temperature: float, top_k: float,
                 top_p: float, seed: float, max_new_tokens: float, progress: gr.Progress = PROGRESS) -> Views:
    """One speculative step: resume the run from its plain state, step once, redraw."""
    session = session or Session()
    controls = Controls(pair, target, draft, prompt, verifier, shape, branching, sequences, depth, temperature,
                        top_k, top_p, seed, max_new_tokens)
    return _guarded(session, lambda: _step_once(session, controls, progress))


def _step_once(session: Session, controls: Controls, progress: gr.Progress | None) -> Views:
    note = _finished_note(session, controls)
    if note:
        return render(session, status=note)
    run, fresh = open_run(session, controls, progress)
    run.step()
    return render(_commit(session, controls, run, fresh))


def run_handler(session: Session | None, pair: str, target: str, draft: str, prompt: str, verifier: str,
                shape: str, branching: str, sequences: float, depth: float, temperature: float, top_k: float,
                top_p: float, seed: float, max_new_tokens: float,
                progress: gr.Progress = PROGRESS) -> Iterator[Views]:
    """Step until the run finishes, redrawing after every step (Stop cancels this event)."""
    current = session or Session()
    controls = Controls(pair, target, draft, prompt, verifier, shape, branching, sequences, depth, temperature,
                        top_k, top_p, seed, max_new_tokens)
    try:
        note = _finished_note(current, controls)
        if note:
            yield render(current, status=note)
            return
        run, fresh = open_run(current, controls, progress)
        for latest in _stream(current, controls, run, fresh):
            current = latest
            yield render(current)
    except ValueError as err:
        yield _problem(current, str(err))
    except Exception as err:  # noqa: BLE001 - one user's failure must not take the app down
        log.exception("run failed")
        yield _problem(current, f"internal error ({type(err).__name__}): {shorten(str(err), 200)}")


def _stream(session: Session, controls: Controls, run: engine.Run, fresh: bool) -> Iterator[Session]:
    while True:
        record = run.step()
        session = _commit(session, controls, run, fresh)
        fresh = False
        yield session
        if record is None or run.done:
            return


def scrub_handler(session: Session | None, position: float) -> Views:
    """Replay a past step from the records in the session: no model, no recomputation."""
    session = session or Session()
    return _guarded(session, lambda: render(session, int(position or 1)))


def node_handler(session: Session | None, position: float, node: Any) -> tuple[go.Figure | None, dict]:
    steps = (session or Session()).steps
    if not steps or node is None:
        return None, _table(None, 0)
    step = steps[min(max(1, int(position or 1)), len(steps)) - 1]
    node = int(node)
    if not 0 <= node < len(step.nodes):
        return None, _table(None, 0)
    return node_figure.node_figure(step, node), _table(step, node)


def reset_handler(session: Session | None = None) -> Views:
    return render(Session(), status="Reset. Press **Step** to start a new run.")


def verifier_info(key: str) -> str:
    entry = VERIFIERS.get(key)
    if entry is None:
        return ""
    loss = "lossless" if entry.lossless else "**lossy**: its output law differs from the target's"
    most = f", at most {entry.max_candidates} candidates per node" if entry.max_candidates else ""
    return f"{_md(entry.description)}  \ncandidate law `{entry.law}`{most} · {loss}"


def pair_changed(pair: str, prompt: str) -> tuple[dict, dict, dict]:
    """Show the custom model boxes only for a custom pair; swap an example prompt to one that fits."""
    examples = example_prompts()
    custom = gr.update(visible=pair == "custom")
    wanted = examples["toy"] if pair == "toy" else examples["text"]
    other = examples["text"] if pair == "toy" else examples["toy"]
    new_prompt = gr.update(value=wanted[0]) if prompt in other or not str(prompt).strip() else gr.update()
    return custom, custom, new_prompt


def shape_changed(shape: str) -> tuple[dict, dict, dict]:
    sequences = shape == SHAPES[1]
    return gr.update(visible=not sequences), gr.update(visible=sequences), gr.update(visible=sequences)


# ---- trace export / import, baseline ----------------------------------------------------------------
def export_handler(session: Session | None) -> tuple[str | None, str]:
    """Write the shown trace to a fresh file for download; returns (path, status)."""
    session = session or Session()
    if not session.steps:
        gr.Warning("Nothing to export yet: run a few steps first.")
        return None, "Nothing to export yet: run a few steps first."
    path = _export_dir() / f"specscope-trace-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}.json"
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


def import_handler(session: Session | None, path: str | None) -> Views:
    """Replay an uploaded trace: every view is drawn from its records, with no model loaded."""
    session = session or Session()
    if not path:
        return render(session)
    return _guarded(session, lambda: _replay(read_trace(path)))


def read_trace(path: str) -> Trace:
    size = os.path.getsize(path)
    if size > MAX_TRACE_BYTES:
        raise ValueError(f"this file is {size / 1e6:.0f} MB; a trace is at most {MAX_TRACE_BYTES // 10**6} MB")
    try:
        body = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError("this file is not a specscope trace (not UTF-8 text)") from None
    try:
        return trace_from_json(body)
    except ValueError as err:
        raise ValueError(f"could not import this file: {err}") from None
    except (TypeError, KeyError, IndexError, AttributeError, RecursionError) as err:
        raise ValueError(f"could not import this file: malformed trace ({type(err).__name__})") from None


def _replay(trace: Trace) -> Views:
    problems = [msg for step in trace.steps for msg in checks.step_problems(step)]
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise ValueError(f"this trace's records are inconsistent and cannot be drawn: {problems[0]}{more}")
    session = Session(trace=trace)
    try:
        views = render(session)
    except (TypeError, KeyError, IndexError, AttributeError, ValueError) as err:
        raise ValueError(f"this trace's records are inconsistent and cannot be drawn ({type(err).__name__}: "
                         f"{shorten(str(err), 80)})") from None
    note = (f"Imported a trace of {len(trace.steps)} steps (replay only, no model loaded). "
            f"Prompt: {_md(shorten(trace.prompt, 120))}")
    return views._replace(status=note + "  \n" + views.status)


def baseline_handler(session: Session | None, progress: gr.Progress = PROGRESS) -> Views:
    """Decode the same number of tokens with the target alone, for the speed comparison."""
    session = session or Session()
    return _guarded(session, lambda: _baseline(session, progress))


def _baseline(session: Session, progress: gr.Progress | None) -> Views:
    if session.run is None or session.controls is None or not session.run.generated_ids:
        raise ValueError("the baseline needs a live run with some tokens: press Step or Run first")
    pair = load(session.controls, progress)
    config = DecodeConfig.from_dict(session.run.config)
    base = engine.baseline(pair, list(session.run.prompt_ids), len(session.run.generated_ids), config)
    numbers = stats.BaselineNumbers(tokens=len(base.ids), seconds=base.seconds, forwards=base.forwards)
    return render(replace(session, baseline=numbers))


# ---- layout ------------------------------------------------------------------------------------------
def example_prompts() -> dict[str, list[str]]:
    data = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
    return {"text": list(data["text"]), "toy": list(data["toy"])}


def verifier_choices() -> list[tuple[str, str]]:
    def badge(e) -> str:
        return " — custom" if getattr(e, "custom", False) else ("" if e.lossless else " — lossy")

    return [(f"{e.title} ({key})" + badge(e), key) for key, e in VERIFIERS.items()]


def _controls_panel(default: Controls) -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["pair"] = gr.Radio(PAIRS, value=default.pair, label="model pair (target p, draft q)")
    with gr.Row():
        c["target"] = gr.Textbox(label="target model", placeholder="hub id or local folder", visible=False)
        c["draft"] = gr.Textbox(label="draft model", placeholder="hub id or local folder", visible=False)
    c["prompt"] = gr.Textbox(default.prompt, label="prompt", lines=3, max_length=4000)
    examples = example_prompts()
    gr.Examples([[p] for p in examples["text"] + examples["toy"]], inputs=[c["prompt"]], label="example prompts")
    c["verifier"] = gr.Dropdown(verifier_choices(), value=default.verifier, label="verifier")
    c["verifier_info"] = gr.Markdown(verifier_info(default.verifier))
    c["shape"] = gr.Radio(list(SHAPES), value=default.shape, label="tree shape")
    c["branching"] = gr.Textbox(default.branching, label="children per node at each depth", info="e.g. 3,2,2")
    with gr.Row():
        c["sequences"] = gr.Number(default.sequences, label="K sequences", precision=0, minimum=1, visible=False)
        c["depth"] = gr.Number(default.depth, label="depth", precision=0, minimum=1, visible=False)
    with gr.Accordion("sampling", open=False):
        c["temperature"] = gr.Slider(0, 2, default.temperature, step=0.05, label="temperature (0 = greedy)")
        c["top_k"] = gr.Number(default.top_k, label="top-k (0 = off)", precision=0, minimum=0)
        c["top_p"] = gr.Slider(0.05, 1, default.top_p, step=0.01, label="top-p (1 = off)")
        c["seed"] = gr.Number(default.seed, label="seed", precision=0, minimum=0)
        c["max_new_tokens"] = gr.Slider(1, 256, default.max_new_tokens, step=1, label="max new tokens")
    return c


def _buttons_panel() -> dict[str, Any]:
    b: dict[str, Any] = {}
    with gr.Row():
        b["step"] = gr.Button("Step", variant="primary", elem_id="step-btn")
        b["run"] = gr.Button("Run", elem_id="run-btn")
        b["stop"] = gr.Button("Stop", variant="stop", elem_id="stop-btn")
        b["reset"] = gr.Button("Reset", elem_id="reset-btn")
    b["status"] = gr.Markdown("Press **Step** to draft and verify one tree.", elem_classes="specscope-status",
                              elem_id="status")
    return b


def _views_panel() -> dict[str, Any]:
    v: dict[str, Any] = {}
    v["slider"] = gr.Slider(1, 2, 1, step=1, label="replay step", interactive=False, elem_id="step-slider")
    v["tree"] = gr.Plot(label="draft tree of this step", show_label=False, elem_id="tree-plot")
    v["text"] = gr.HighlightedText(label="generated text, coloured by origin", color_map=text.color_map(),
                                   show_legend=True, show_inline_category=False, elem_id="generated-text")
    with gr.Column(variant="panel"):
        v["node"] = gr.Dropdown([], label="inspect a node of this step", elem_id="node-select")
        v["node_plot"] = gr.Plot(label="p, q and the residual at this node", show_label=False, elem_id="node-plot")
        v["tests"] = gr.Dataframe(headers=list(node_figure.TEST_HEADERS), label="tests at this node, in order",
                                  datatype="str", interactive=False, wrap=True, elem_id="tests-table")
    return v


def _extras_panel() -> dict[str, Any]:
    e: dict[str, Any] = {}
    with gr.Tabs():
        with gr.Tab("Run statistics"):
            e["baseline"] = gr.Button("Compare with the target alone (plain decoding)", size="sm")
            e["stats_md"] = gr.Markdown()
            e["stats_plot"] = gr.Plot(label="run statistics", show_label=False, elem_id="stats-plot")
        with gr.Tab("Trace: export / import"):
            gr.Markdown("A trace holds every step's records; an imported one replays every view "
                        "with no model loaded.")
            with gr.Row():
                e["export"] = gr.Button("Export the trace (JSON)", size="sm", elem_id="export-btn")
                e["import"] = gr.UploadButton("Import a trace", file_types=[".json"], size="sm", elem_id="import-btn")
            e["file"] = gr.File(label="trace file", interactive=False, elem_id="trace-file")
        with gr.Tab("Verifier lab"):
            from ui import lab

            lab.build(VERIFIERS)
        with gr.Tab("How to read this"):
            gr.Markdown(_help_text())
    return e


def _help_text() -> str:
    """The README's panel guide (one source for the docs and the app), without its screenshot."""
    path = ASSETS.parent / "README.md"
    body = path.read_text(encoding="utf-8") if path.exists() else ""
    start = body.find(HELP_HEADING)
    if start < 0:
        return ""
    end = body.find("\n## ", start + len(HELP_HEADING))
    section = body[start: end if end > 0 else None]
    return "\n".join(line for line in section.splitlines() if not line.startswith("!["))


def build_app(default_pair: str = "embedded", notices: tuple[str, ...] = ()) -> gr.Blocks:
    default = replace(Controls(), pair=default_pair,
                      prompt=example_prompts()["toy" if default_pair == "toy" else "text"][0])
    with gr.Blocks(title="specscope", analytics_enabled=False) as demo:
        gr.Markdown("# specscope\nLive multi-candidate speculative decoding: a draft model (q) proposes a "
                    "tree of tokens, the target (p) scores it in one forward, a verifier accepts a path.")
        if notices:  # launch-time problems, e.g. a refused --verifier-file
            gr.Markdown("\n".join(f"⚠️ {n}" for n in notices), elem_id="launch-notices")
        state = gr.State(Session())
        with gr.Row():
            with gr.Column(scale=2, min_width=320):
                controls = _controls_panel(default)
                buttons = _buttons_panel()
            with gr.Column(scale=5):
                views = _views_panel()
        extras = _extras_panel()
        _wire(state, controls, buttons, views, extras)
    return demo


def _wire(state, c: dict, b: dict, v: dict, e: dict) -> None:
    inputs = [state] + [c[f.name] for f in fields(Controls)]
    outputs = [state, b["status"], v["slider"], v["tree"], v["node"], v["node_plot"], v["tests"], v["text"],
               e["stats_plot"], e["stats_md"]]
    decode = dict(concurrency_limit=_concurrency(), concurrency_id="decode")
    b["step"].click(step_handler, inputs, outputs, **decode)
    running = b["run"].click(run_handler, inputs, outputs, **decode)
    b["stop"].click(None, None, None, cancels=[running])
    b["reset"].click(reset_handler, [state], outputs, cancels=[running])
    e["baseline"].click(baseline_handler, [state], outputs, **decode)
    v["slider"].input(scrub_handler, [state, v["slider"]], outputs, trigger_mode="always_last",
                      show_progress="hidden")
    v["node"].input(node_handler, [state, v["slider"], v["node"]], [v["node_plot"], v["tests"]],
                    show_progress="hidden")
    e["export"].click(export_handler, [state], [e["file"], b["status"]])
    e["import"].upload(import_handler, [state, e["import"]], outputs)
    c["verifier"].change(verifier_info, [c["verifier"]], [c["verifier_info"]], show_progress="hidden")
    c["pair"].change(pair_changed, [c["pair"], c["prompt"]], [c["target"], c["draft"], c["prompt"]])
    c["shape"].change(shape_changed, [c["shape"]], [c["branching"], c["sequences"], c["depth"]])


def _concurrency() -> int:
    return max(1, int(os.environ.get("SPECSCOPE_CONCURRENCY", "2")))


# ---- command line -------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="specscope: the Gradio app")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="interface to listen on (env GRADIO_SERVER_NAME)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                        help="port (env GRADIO_SERVER_PORT)")
    parser.add_argument("--pair", default="embedded", choices=[v for _, v in PAIRS if v != "custom"],
                        help="model pair preselected in the app")
    parser.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps")
    parser.add_argument("--no-preload", action="store_true",
                        help="do not load the preselected pair in the background at start")
    parser.add_argument("--bench-step", type=int, default=0, metavar="N",
                        help="benchmark instead of serving: N Step clicks (3,2,2 tree) on --pair, timed")
    parser.add_argument("--verifier-file", action="append", default=[], metavar="PATH",
                        help="a local Python file with your own verifier (README); repeatable; registered at launch")
    return parser.parse_args(argv)


def bench_step(kind: str, clicks: int, repeats: int = 3) -> None:
    """Time whole Step clicks (resume + one step + every view redrawn), as the server runs them."""
    import statistics
    from dataclasses import astuple

    load(replace(Controls(), pair=kind))  # model loading is not part of a click
    prompt = "the cat" if kind == "toy" else Controls().prompt
    times = []
    for seed in range(repeats):
        controls = replace(Controls(), pair=kind, prompt=prompt, seed=seed, max_new_tokens=1024)
        session = Session()
        for _ in range(clicks):
            t0 = time.perf_counter()
            views = step_handler(session, *astuple(controls), progress=None)
            times.append(time.perf_counter() - t0)
            session = views.session
    print(f"{kind} pair, 3,2,2 tree, {len(times)} Step clicks ({repeats} runs x {clicks}): "
          f"median {1e3 * statistics.median(times):.0f} ms, p90 {1e3 * sorted(times)[int(0.9 * len(times))]:.0f} ms, "
          f"max {1e3 * max(times):.0f} ms per click (all views redrawn)")


def preload(kind: str) -> None:
    """Load the preselected pair once at start (models are cached per process), so the first
    click does not wait for it; a failure is only logged: the user sees it on Step."""
    try:
        load(replace(Controls(), pair=kind))
    except Exception:  # noqa: BLE001 - a background warm-up must never stop the app
        log.exception("preloading the %s pair failed", kind)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.bench_step:
        bench_step(args.pair, args.bench_step)
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.device:
        os.environ["SPECSCOPE_DEVICE"] = args.device
    from decoding.lab.custom import register_files

    _, notices = register_files(args.verifier_file, VERIFIERS)  # explicit, once, before serving anyone
    for notice in notices:
        log.warning(notice)
    demo = build_app(default_pair=args.pair, notices=tuple(notices))
    if not args.no_preload:
        threading.Thread(target=preload, args=(args.pair,), daemon=True, name="specscope-preload").start()
    demo.queue(max_size=64).launch(server_name=args.host, server_port=args.port, css=CSS, max_file_size="50mb",
                                   show_error=False)


if __name__ == "__main__":
    main()
