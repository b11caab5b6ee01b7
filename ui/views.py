"""`Views`: the panels drawn from a session, composed, so a handler returns one `{component: value}` dict.

A panel drawn from a session has `draw(session, position) -> dict`, `clear() -> dict` and
`named() -> {name: component}`. Handlers that redraw the page return `views.draw(...)` and are
wired with `views.outputs()`; a new panel is one more entry in `panels` and widens no handler.
Errors never reach the user as a traceback: `guarded` turns them into a warning and a status line.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Protocol

import gradio as gr
from gradio.components.plot import PlotData

from ui.caps import Caps
from ui.session import SHAPES, Configured, Controls, Session, configure
from viz.figure_json import drawn
from viz.tokens import shorten

log = logging.getLogger("specscope.app")
Out = dict[Any, Any]  # {component: value}, what a handler returns
MACHINE_DETAILS = "Machine details"  # the status line's closed <details>: dtype, products, padding (status_text)


class SessionPanel(Protocol):
    def draw(self, session: Session, position: int) -> Out: ...
    def clear(self) -> Out: ...
    def named(self) -> dict[str, Any]: ...


@dataclass
class Views:
    state: gr.State
    status: gr.Markdown
    panels: list[SessionPanel]
    controls: dict[str, Any] = field(default_factory=dict)  # the control widgets by Controls field name
    options: dict[str, Any] = field(default_factory=dict)  # other widgets Step and Run read (the compare view's)
    caps: Caps = field(default_factory=Caps)  # this server's limits, set at launch

    def read_controls(self, values: dict) -> Controls:
        """The control widgets' raw values in `values` (a set-input dict) -> Controls, via the boundary."""
        return Controls.from_raw(caps=self.caps, **{name: values.get(widget) for name, widget in self.controls.items()})

    def widgets_for(self, controls: Controls) -> Out:
        """The control widgets set to `controls`, the shape's and the custom pair's boxes shown or hidden as
        ui/controls.py's change handlers show them, so the page's next Step reads back `controls` (a link
        opened, a trace imported)."""
        w = self.controls
        out: Out = {w[name]: getattr(controls, name) for name in w}
        sequences = controls.shape == SHAPES[1]
        out[w["branching"]] = gr.update(value=controls.branching, visible=not sequences)
        out[w["sequences"]] = gr.update(value=controls.sequences, visible=sequences)
        out[w["depth"]] = gr.update(value=controls.depth, visible=sequences)
        custom = controls.pair == "custom"
        out[w["target"]] = gr.update(value=controls.target, visible=custom)
        out[w["draft"]] = gr.update(value=controls.draft, visible=custom)
        return out

    def configure(self, values: dict) -> Configured:
        """The control widgets' raw values in `values` -> Controls and DecodeConfig within this server's caps
        (ui.session.configure: the one boundary every handler that starts a run goes through)."""
        return configure(self.caps, {name: values.get(widget) for name, widget in self.controls.items()})

    def named_inputs(self) -> dict[str, Any]:
        """Step's and Run's inputs by name (Gradio's inputs_kwargs): the API lists them as `session`, every
        Controls field and every option (`compare`, `compare_keys`, `compare_mc`), so a script calls
        `predict(pair="toy", prompt="the cat", api_name="/step")` and a new input never shifts the others."""
        return {"session": self.state, **self.controls, **self.options}

    @staticmethod
    def values_of(inputs: dict[str, Any], named: dict[str, Any]) -> dict:
        """A keyword-input handler's values by name -> {component: value}, as a set-input handler reads them."""
        return {inputs[name]: value for name, value in named.items() if name in inputs}

    def read_options(self, values: dict) -> dict[str, Any]:
        """The option widgets' raw values in `values`, by name (None where a widget was not sent)."""
        return {name: values.get(widget) for name, widget in self.options.items()}

    def inputs(self, session: Session | None, **raw: Any) -> dict:
        """What Gradio hands a set-input handler: {component: raw value} (tests, benchmarks)."""
        widgets = {**self.controls, **self.options}
        return {self.state: session, **{widgets[name]: value for name, value in raw.items()}}

    def outputs(self) -> list[Any]:
        return [self.state, self.status] + [c for p in self.panels for c in p.named().values()]

    def draw(self, session: Session, position: int | None = None, status: str | None = None,
             before: Session | None = None) -> Out:
        """Every view for step `position` (1-based; default the last), drawn from records only.

        `before`: the session the page showed until now (Step and Run know it): a panel with an
        `unchanged(before, session)` method names there the components whose value the page already
        shows, sent as gr.skip() (nothing to redraw in the browser)."""
        steps = session.steps
        out: Out = {self.state: session}
        if not steps:
            out[self.status] = status or "Press **Step** to draft and verify one tree."
            for panel in self.panels:
                out.update(panel.clear())
            return out
        position = min(max(1, int(position or len(steps))), len(steps))
        out[self.status] = status if status is not None else status_text(session, position)
        for panel in self.panels:
            out.update(panel.draw(session, position))
        if before is not None and before.steps:  # the page shows a drawn session (not the first page)
            for panel in self.panels:
                out.update(getattr(panel, "unchanged", _nothing)(before, session))
        return out

    def named(self, out: Out) -> SimpleNamespace:
        """A handler's output by name (session, status, tree, ...): for tests and benchmarks."""
        names = {"session": self.state, "status": self.status}
        for panel in self.panels:
            names.update(panel.named())
        return SimpleNamespace(**{name: out[c] for name, c in names.items() if c in out})

    def problem(self, session: Session, message: str) -> Out:
        gr.Warning(html.escape(message))
        return self.draw(session, status=f"⚠️ {md(message)}")

    def guarded(self, session: Session, action: Callable[[], Out]) -> Out:
        """Run a handler's body; a ValueError (the user can fix it) or a crash becomes a status line."""
        try:
            return action()
        except ValueError as err:  # includes models.ModelLoadError
            return self.problem(session, str(err))
        except Exception as err:  # noqa: BLE001 - one user's failure must not take the app down
            log.exception("handler failed")
            return self.problem(session, internal_error(err))


def _nothing(before: Session, session: Session) -> Out:
    return {}


def plot(spec: dict) -> PlotData:
    """A figure spec as gr.Plot's value, sent as is: no go.Figure validation on the Step path."""
    return PlotData(type="plotly", plot=drawn(spec))


def internal_error(err: Exception) -> str:
    return f"internal error ({type(err).__name__}): {shorten(str(err), 200)}"


def status_text(session: Session, position: int) -> str:
    """The step line a room reads off a projector (the step, tokens, verifier, tree, temperature, run state and the
    models' short names), then the machine's details one click away: a closed <details> under it."""
    trace, n = session.trace, len(session.steps)
    cfg = trace.config
    shape = (f"{cfg.get('sequences')} sequences x depth {cfg.get('depth')}" if cfg.get("sequences")
             else ",".join(str(b) for b in cfg.get("branching", [])))
    state = ("imported trace: replay only" if session.run is None
             else f"finished ({session.run.stop_reason})" if session.run.stop_reason else "running")
    tokens = f"{len(trace.generated_ids)} token{'' if len(trace.generated_ids) == 1 else 's'}"
    names = "".join(f" · {law}: {md(short_name(trace.models[side]))}"
                    for law, side in (("p", "target"), ("q", "draft")) if trace.models.get(side))
    line = (f"**Step {position} of {n}** · {tokens} · {md(str(cfg.get('verifier')))} · "
            f"tree {md(shape)} · T = {md(str(cfg.get('temperature')))} · {state}{names}")
    details = machine_details(trace.models)
    return f"{line}\n\n{details}" if details else line


def short_name(name: str) -> str:
    """A model's name as the step line shows it: a hub id's or a folder's last part, without a closing parenthesis
    of details ('org/SmolLM2-135M' -> 'SmolLM2-135M', 'toy target (12 words)' -> 'toy target'); the whole name
    is in the machine details."""
    base = re.sub(r"\s*\([^()]*\)$", "", str(name).strip()).rstrip("/\\")
    return re.split(r"[/\\]", base)[-1] or str(name)


def machine_details(models: dict) -> str:
    """The pair as the trace describes it (kind, whole names, device, dtypes, vocabulary, this machine's product
    plan and padding: ModelPair.describe) in a closed HTML <details>, "" when there is none. Escaped as HTML, not
    Markdown: Markdown is not read inside an HTML block."""
    items = " · ".join(f"{html.escape(str(k).replace('_', ' '))} {html.escape(str(v))}"
                       for k, v in models.items() if v not in (None, ""))
    return f"<details><summary>{MACHINE_DETAILS}</summary>{items}</details>" if items else ""


def md(value: str) -> str:
    """Escape user-provided text for a Markdown status line (HTML and Markdown punctuation)."""
    return re.sub(r"([\\`*_{}\[\]()#+!|~>-])", r"\\\1", html.escape(value, quote=False))
