"""A browser-less user of a served app: a `gradio_client` session that calls the Step and Run endpoints with
Controls field names. The endpoint's parameters come from the app's own API info, each control found by its
widget's label; every other parameter (an option widget, e.g. the compare view's) gets the default the API
info gives, as a page that never touched it sends, so a new option widget does not break the callers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gradio_client import Client
from gradio_client.client import Job

import app
from decoding.run.schema import trace_to_json
from ui import controls as ui_controls
from ui.run_cache import RunCache

_, _VIEWS = app.build_page("toy")
LABELS = {name: widget.label for name, widget in _VIEWS.controls.items()}  # Controls field -> widget label
DECODING = ("/step", "/run")  # the endpoints that read every control


class AppSession:
    """One user: a Client (its own session and gr.State on the server)."""

    def __init__(self, url: str) -> None:
        self.client = Client(url, verbose=False, download_files=False)
        named = self.client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        self.parameters = {endpoint: named[endpoint]["parameters"] for endpoint in DECODING}
        for endpoint, parameters in self.parameters.items():
            labels = [p["label"] for p in parameters]
            missing = [label for label in LABELS.values() if labels.count(label) != 1]
            assert not missing, f"{endpoint} does not take each control once: {missing} in {labels}"

    def arguments(self, endpoint: str, controls: dict[str, Any]) -> list[Any]:
        return arguments(self.parameters[endpoint], controls)

    def call(self, endpoint: str, controls: dict[str, Any]) -> tuple:
        """Step or Run with these raw control values (by Controls field name); the endpoint's outputs."""
        result = self.client.predict(*self.arguments(endpoint, controls), api_name=endpoint)
        return result if isinstance(result, tuple) else (result,)

    def submit(self, endpoint: str, controls: dict[str, Any]) -> Job:
        """Start Step or Run without waiting (a Run streams one output per step)."""
        return self.client.submit(*self.arguments(endpoint, controls), api_name=endpoint)

    def step(self, controls: dict[str, Any]) -> str:
        """The status line after one Step (the endpoint's first output)."""
        return self.call("/step", controls)[0]

    def exported(self) -> dict | None:
        """The session's trace as the Export button writes it (timings stripped: `comparable`); None when
        the session holds no trace."""
        file, _ = self.client.predict(api_name="/export_trace")
        if file is None:
            return None
        path = file["path"] if isinstance(file, dict) else file
        return comparable(Path(path).read_text(encoding="utf-8"))


def arguments(parameters: list[dict], controls: dict[str, Any]) -> list[Any]:
    """An endpoint's positional arguments (`parameters`: its view_api entries): these raw control values by
    Controls field name, each other parameter's default from the API info."""
    by_label = {LABELS[name]: value for name, value in controls.items()}
    return [by_label[p["label"]] if p["label"] in by_label else p.get("parameter_default") for p in parameters]


def comparable(trace_json: str) -> dict:
    """The trace without its wall-clock times (the only fields that may differ between two runs)."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not (k.endswith("_ms") or k == "seconds")}
        return [strip(v) for v in value] if isinstance(value, list) else value
    return strip(json.loads(trace_json))


def stepped_alone(pair: str, controls: dict[str, Any], steps: int) -> tuple[str, dict]:
    """`controls` stepped `steps` times through the handlers in this process, alone, with a run cache of its
    own as the server has (a cached and a rebuilt embedded run agree only to rounding): (last status, trace)."""
    _, views = app.build_page(pair)
    runs, session, status = RunCache(), None, ""
    for _ in range(steps):
        out = views.named(ui_controls.step(views, views.inputs(session, **controls), progress=None, runs=runs))
        session, status = out.session, out.status
    return status, comparable(trace_to_json(session.trace))


def stepped_remotely(url: str, controls: dict[str, Any], steps: int) -> tuple[str, dict]:
    """One remote user: `steps` Steps with `controls`, then Export: (last status, the exported trace)."""
    session = AppSession(url)
    status = ""
    for _ in range(steps):
        status = session.step(controls)
    return status, session.exported()
