"""A figure spec (a plain {"data", "layout"} dict) -> the JSON plotly.js draws, without go.Figure.

`go.Figure(spec).to_json()` validates every property in Python; for the two figures the app redraws
on every Step that was a visible part of the handler (docs/speed.md, "Measurements the code's comments
cite"). `drawn(spec)` gives the same JSON (tests compare the parsed results): the spec as it is, plus the
default template go.Figure would have attached.
"""

from __future__ import annotations

import json
from functools import cache

import plotly.io as pio


def drawn(spec: dict) -> str:
    layout = {**spec["layout"], "template": default_template()}
    return pio.to_json({"data": spec["data"], "layout": layout}, validate=False)


@cache
def _template(name: str) -> str:
    return json.dumps(pio.templates[name].to_plotly_json())


def default_template() -> dict:
    """plotly's current default template as plain JSON (cached per template name; a fresh copy each call)."""
    return json.loads(_template(pio.templates.default))
