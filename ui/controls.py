"""The controls (pair, prompt, verifier, tree shape, sampling), the Step/Run/Stop/Reset buttons and the
status line; Step and Run read the controls through `Controls.from_raw`, the one boundary."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr

from decoding.run import engine, engine_presets
from decoding.run.config import Sequences
from decoding.verify.registry import VERIFIERS
from ui import compare, decode
from ui.caps import Caps
from ui.endpoints import public
from ui.run_cache import RunCache
from ui.session import PAIRS, SHAPES, Configured, Controls, Session, field_spec
from ui.views import Out, Views, internal_error, md

ASSETS = Path(__file__).resolve().parents[1] / "assets"
PROGRESS = gr.Progress()  # Gradio gives each event its own tracker; this default holds no state


@dataclass
class ControlsPanel:
    widgets: dict[str, Any]  # one widget per Controls field, by field name
    verifier_info: gr.Markdown
    step: gr.Button
    run: gr.Button
    stop: gr.Button
    reset: gr.Button
    status: gr.Markdown
    limits: gr.Markdown
    engine: gr.Dropdown | None = None  # the engine-preset menu: sets verifier and shape (not a Controls field)
    engine_info: gr.Markdown | None = None

    @classmethod
    def build(cls, default: Controls, caps: Caps | None = None) -> ControlsPanel:
        caps = caps or Caps()
        widgets, info, presets = _widgets(default, caps)
        with gr.Row():
            buttons = [gr.Button("Step", variant="primary", elem_id="step-btn"), gr.Button("Run", elem_id="run-btn"),
                       gr.Button("Stop", variant="stop", elem_id="stop-btn"), gr.Button("Reset", elem_id="reset-btn")]
        status = gr.Markdown("Press **Step** to draft and verify one tree.", elem_classes="specscope-status",
                             elem_id="status")
        limits = gr.Markdown(caps.text(), elem_id="caps")
        return cls(widgets, info, *buttons, status, limits, *presets)


def _widgets(default: Controls, caps: Caps) -> tuple[dict[str, Any], gr.Markdown, tuple[gr.Dropdown, gr.Markdown]]:
    w: dict[str, Any] = {"pair": gr.Radio(PAIRS, value=default.pair, label="model pair (target p, draft q)")}
    with gr.Row():
        # value "": the API lists them as optional (a script on a built-in pair leaves them out)
        w["target"] = gr.Textbox("", label="target model", placeholder="hub id or local folder", visible=False)
        w["draft"] = gr.Textbox("", label="draft model", placeholder="hub id or local folder", visible=False)
    w["prompt"] = gr.Textbox(default.prompt, label="prompt", lines=3, max_length=caps.max_prompt_chars)
    examples = example_prompts()
    gr.Examples([[p] for p in examples["text"] + examples["toy"]], inputs=[w["prompt"]], label="example prompts")
    presets = (gr.Dropdown(engine_choices(), value="", label="engine preset (sets verifier and tree shape)",
                           elem_id="engine-preset"), gr.Markdown("", elem_id="engine-info"))
    w["verifier"] = gr.Dropdown(verifier_choices(), value=default.verifier, label="verifier")
    info = gr.Markdown(verifier_info(default.verifier))
    w["shape"] = gr.Radio(list(SHAPES), value=default.shape, label="tree shape")
    w["branching"] = gr.Textbox(default.branching, label="children per node at each depth", info="e.g. 3,2,2")
    with gr.Row():
        w["sequences"] = gr.Number(default.sequences, label="K sequences", precision=0, minimum=1,
                                   maximum=caps.max_branch, visible=False)
        w["depth"] = gr.Number(default.depth, label="depth", precision=0, minimum=1, maximum=caps.max_depth,
                               visible=False)
    with gr.Accordion("sampling", open=False):
        w["temperature"] = _slider("temperature", default, caps, 0.05, "temperature (0 = greedy)")
        w["top_k"] = gr.Number(default.top_k, label="top-k (0 = off)", precision=0, minimum=0)
        w["top_p"] = _slider("top_p", default, caps, 0.01, "top-p (1 = off)")
        w["seed"] = gr.Number(default.seed, label="seed", precision=0, minimum=0)
        w["max_new_tokens"] = _slider("max_new_tokens", default, caps, 1, "max new tokens")
    return {f.name: w[f.name] for f in fields(Controls)}, info, presets


def _slider(name: str, default: Controls, caps: Caps, step: float, label: str) -> gr.Slider:
    """A slider whose range is the boundary's (FIELDS and the caps), so the widget and the check agree."""
    spec = field_spec(name, caps)
    return gr.Slider(spec.minimum, spec.maximum, getattr(default, name), step=step, label=label,
                     elem_id=f"{name.replace('_', '-')}-slider")


def example_prompts() -> dict[str, list[str]]:
    data = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
    return {"text": list(data["text"]), "toy": list(data["toy"])}


def verifier_choices() -> list[tuple[str, str]]:
    def badge(e) -> str:
        return " — custom" if getattr(e, "custom", False) else ("" if e.lossless else " — lossy")

    return [(f"{e.title} ({key})" + badge(e), key) for key, e in VERIFIERS.items()]


def verifier_info(key: str | None) -> str:
    entry = VERIFIERS.get(key or "")
    if entry is None:
        return ""
    loss = "lossless" if entry.lossless else "**lossy**: its output law differs from the target's"
    most = f", at most {entry.max_candidates} candidates per node" if entry.max_candidates else ""
    return f"{md(entry.description)}  \ncandidate law `{entry.law}`{most} · {loss}"


def engine_choices() -> list[tuple[str, str]]:
    return [("none: choose the verifier and tree shape below", "")] + [
        (preset.label, key) for key, preset in engine_presets.PRESETS.items()]


def engine_chosen(key: str | None) -> tuple[dict, dict, dict, dict, dict, str]:
    """An engine preset picked: the verifier, tree-shape radio, branching / K / depth set as that engine runs
    (engine_presets.py), and a line naming the specscope rule and its source. None or "" (no preset, or the
    page's null) changes nothing; an unknown name says so in the line."""
    keep = (gr.update(),) * 5
    if not key:
        return (*keep, "")
    if key not in engine_presets.PRESETS:
        return (*keep, f"⚠️ unknown engine preset {md(key)}")
    preset = engine_presets.PRESETS[key]
    sequences = isinstance(preset.shape, Sequences)
    shape = (gr.update(value=SHAPES[1]), gr.update(), gr.update(value=preset.shape.k),
             gr.update(value=preset.shape.depth)) if sequences else (
             gr.update(value=SHAPES[0]), gr.update(value=preset.shape.text()), gr.update(), gr.update())
    info = (f"{md(preset.same_as)}; acceptance at one node {md(preset.formula)}, candidate law `{preset.law}`  \n"
            f"source: [{md(preset.version)}]({preset.source}) ({md(preset.checked)})")
    return (gr.update(value=preset.verifier), *shape, info)


def pair_changed(pair: str | None, prompt: str | None) -> tuple[dict, dict, dict]:
    """Show the custom model boxes only for a custom pair; swap an example prompt to one that fits."""
    examples = example_prompts()
    custom = gr.update(visible=pair == "custom")
    wanted = examples["toy"] if pair == "toy" else examples["text"]
    other = examples["text"] if pair == "toy" else examples["toy"]
    prompt = prompt or ""
    new_prompt = gr.update(value=wanted[0]) if prompt in other or not prompt.strip() else gr.update()
    return custom, custom, new_prompt


def shape_changed(shape: str | None) -> tuple[dict, dict, dict]:
    sequences = shape == SHAPES[1]
    return gr.update(visible=not sequences), gr.update(visible=sequences), gr.update(visible=sequences)


# ---- Step, Run, Reset: the handlers read every control through the boundary --------------------------
def step(views: Views, values: dict, progress: gr.Progress = PROGRESS, request: gr.Request = None, *,
         runs: RunCache | None = None) -> Out:
    """One speculative step: the live run from `runs` (or resumed from its plain state), step once, redraw."""
    session = values.get(views.state) or Session()
    return views.guarded(session, lambda: _step_once(views, session, views.configure(values), progress, runs,
                                                     request, compare.selected(views, values)))


def _step_once(views: Views, session: Session, configured: Configured, progress: gr.Progress | None,
               runs: RunCache | None, request: gr.Request | None, compared: tuple[list[str], int] = ([], 0)) -> Out:
    controls = configured.controls
    note = decode.finished_note(session, controls)
    if note:
        return views.draw(session, status=note)
    run, fresh = decode.open_run(session, configured, progress, *compared, runs=runs)
    decode.advance(run)
    decode.fill_shown(run)  # the page shows the new step: its theory now (lazy run), not at every step
    after = decode.commit(session, controls, run, fresh)
    decode.keep(runs, after, run, request)
    return views.draw(after, before=session)


def run(views: Views, values: dict, progress: gr.Progress = PROGRESS, request: gr.Request = None, *,
        runs: RunCache | None = None) -> Iterator[Out]:
    """Step until the run finishes, redrawing after every step (Stop cancels this event)."""
    current = values.get(views.state) or Session()
    try:
        configured = views.configure(values)
        controls = configured.controls
        note = decode.finished_note(current, controls)
        if note:
            yield views.draw(current, status=note)
            return
        live, fresh = decode.open_run(current, configured, progress, *compare.selected(views, values), runs=runs)
        try:
            for latest in _stream(current, controls, live, fresh):
                shown, current = current, latest
                decode.offer_shown(runs, current, live)  # for Stop: this step's rows, without the live run
                yield views.draw(current, before=shown)
        finally:  # also when Stop cancels: the next Step checks that the run still matches
            decode.keep(runs, current, live, request)
    except ValueError as err:
        yield views.problem(current, str(err))
    except Exception as err:  # noqa: BLE001 - one user's failure must not take the app down
        decode.log.exception("run failed")
        yield views.problem(current, internal_error(err))


def _stream(session: Session, controls: Controls, live: engine.Run, fresh: bool) -> Iterator[Session]:
    """A session per step; only the last step gets its theory (the steps passed on the way are drawn with
    "not computed"; Stop's `shown` computes the step it leaves on the page)."""
    while True:
        record = decode.advance(live)
        if record is None or live.done:
            decode.fill_shown(live)
        session = decode.commit(session, controls, live, fresh)
        fresh = False
        yield session
        if record is None or live.done:
            return


def stopped(views: Views, session: Session | None, request: gr.Request = None, *,
            runs: RunCache | None = None) -> Out:
    """After Stop: the step the Run left on the page (its last) with its theory, from the rows the Run
    offered for it (the cancelled Run keeps its live run); drawn as it is when there is none."""
    session = session or Session()
    if session.steps and decode.lacks_theory(session.steps[-1]):
        session = decode.with_theory(session, [len(session.steps) - 1], runs, request)
        if decode.lacks_theory(session.steps[-1]):
            session = decode.with_offered_theory(session, runs)
    return views.guarded(session, lambda: views.draw(session))


def reset(views: Views, session: Session | None = None, *, runs: RunCache | None = None) -> Out:
    """A new, empty session (a new key); the old session's live run leaves the cache."""
    if runs is not None and session is not None:
        runs.evict(session.key)
    return views.draw(Session(), status="Reset. Press **Step** to start a new run.")


def wire(views: Views, panel: ControlsPanel, decode_queue: dict, runs: RunCache | None = None) -> list:
    """Wire the controls; returns the events that change the session (for run_stats' lazy charts)."""
    inputs = views.named_inputs()  # by name: the API's parameters are pair, prompt, ..., compare_keys
    # preprocess=False: the raw values a client sends reach Controls.from_raw, the one boundary, so a
    # hostile API call gets the same ⚠️ status line as the page (not Gradio's own range errors).
    # The progress overlay (model loading, the running step) only on the status line: redrawing an overlay
    # on every output twice per click was a measurable part of a Step's click-to-render time.
    raw = dict(preprocess=False, show_progress_on=[views.status], **decode_queue)

    # Closures, not partials: Gradio finds the gr.Request parameter by a plain function's type hints.
    def on_step(request: gr.Request, progress: gr.Progress = PROGRESS, **named: Any) -> Out:
        return step(views, views.values_of(inputs, named), progress, request, runs=runs)

    def on_run(request: gr.Request, progress: gr.Progress = PROGRESS, **named: Any) -> Iterator[Out]:
        yield from run(views, views.values_of(inputs, named), progress, request, runs=runs)

    def on_stop(session: Session | None, request: gr.Request) -> Out:
        return stopped(views, session, request, runs=runs)

    stepping = panel.step.click(on_step, None, views.outputs(), inputs_kwargs=inputs, **public("step"), **raw)
    running = panel.run.click(on_run, None, views.outputs(), inputs_kwargs=inputs, **public("run"), **raw)
    stopping = panel.stop.click(None, None, None, cancels=[running]).then(
        on_stop, [views.state], views.outputs(), show_progress="hidden", **public("stop"))
    resetting = panel.reset.click(partial(reset, views, runs=runs), [views.state], views.outputs(), cancels=[running],
                                  **public("reset"))
    w = panel.widgets
    w["verifier"].change(verifier_info, [w["verifier"]], [panel.verifier_info], show_progress="hidden")
    if panel.engine is not None:
        panel.engine.change(engine_chosen, [panel.engine], [w["verifier"], w["shape"], w["branching"], w["sequences"],
                                                            w["depth"], panel.engine_info], show_progress="hidden")
    # Unqueued, so a Step sent right after a pair change cannot overtake the prompt swap.
    w["pair"].change(pair_changed, [w["pair"], w["prompt"]], [w["target"], w["draft"], w["prompt"]], queue=False)
    w["shape"].change(shape_changed, [w["shape"]], [w["branching"], w["sequences"], w["depth"]])
    return [stepping, running, stopping, resetting]
