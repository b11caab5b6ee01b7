"""The control-value boundary fed exactly what the front end sends: null for hidden or cleared boxes,
floats from gr.Number and sliders, numbers as strings (API callers), NaN; and every handler fed the same."""

from __future__ import annotations

import math
from dataclasses import fields

import pytest

import app
from ui import controls as ui_controls
from ui import inspector, run_stats, trace_io, tree_view
from ui.session import FIELDS, SHAPES, Controls, Session

_, VIEWS = app.build_page("toy")

# What the page sends on a first click of a toy pair: hidden textboxes as null, gr.Number as floats.
BROWSER_TOY = dict(pair="toy", target=None, draft=None, prompt="the cat", verifier="rrs", shape=SHAPES[0],
                   branching="3,2", sequences=4.0, depth=4.0, temperature=0.8, top_k=0.0, top_p=1.0, seed=2.0,
                   max_new_tokens=6.0)


def test_hidden_model_boxes_arrive_as_null_and_become_empty_not_the_name_none():
    controls = Controls.from_raw(**BROWSER_TOY)
    assert controls.target == "" and controls.draft == ""
    numbers = (controls.sequences, controls.depth, controls.top_k, controls.seed, controls.max_new_tokens)
    assert numbers == (4, 4, 0, 2, 6)
    assert all(type(getattr(controls, n)) is FIELDS[n].kind for n in FIELDS)


def test_positional_values_in_field_order_read_the_same_as_named_ones():
    ordered = [BROWSER_TOY[f.name] for f in fields(Controls)]
    assert Controls.from_raw(*ordered) == Controls.from_raw(**BROWSER_TOY)


@pytest.mark.parametrize("name, value, expected", [
    ("pair", None, "embedded"), ("verifier", None, "rrs_wor"), ("shape", None, SHAPES[0]),
    ("prompt", None, ""), ("branching", None, ""), ("seed", None, 0), ("seed", "", 0), ("seed", " 7 ", 7),
    ("temperature", "0.5", 0.5), ("top_k", 3.0, 3), ("max_new_tokens", 256.0, 256), ("temperature", 0, 0.0),
])
def test_missing_and_string_values_are_read_by_the_documented_rules(name, value, expected):
    got = getattr(Controls.from_raw(**{**BROWSER_TOY, name: value}), name)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("name, value, message", [
    ("temperature", math.nan, "temperature must be a finite number"),
    ("top_p", math.inf, "top-p must be a finite number"),
    ("seed", "twelve", "seed must be a number"),
    ("depth", 2.5, "depth must be a whole number"),
    ("sequences", True, "K sequences must be a number"),
    ("temperature", 5.0, "temperature must be between 0 and 2, got 5"),
    ("top_p", 0.0, "top-p must be between 0.05 and 1"),
    ("max_new_tokens", 2000, "max new tokens must be between 1 and 1024"),
    ("seed", -1, "seed must be at least 0"),
    ("top_k", -3.0, "top-k must be between 0 and 1000000, got -3$"),
    ("top_k", 1e12, "top-k must be between 0 and 1000000, got 1000000000000$"),  # too large, not "must be >= 0"
])
def test_unreadable_or_out_of_range_values_are_refused_with_one_line(name, value, message):
    with pytest.raises(ValueError, match=message):
        Controls.from_raw(**{**BROWSER_TOY, name: value})


def _step(session, **raw):
    return VIEWS.named(ui_controls.step(VIEWS, VIEWS.inputs(session, **raw), progress=None))


def test_step_and_run_with_browser_values_work_and_bad_ones_give_a_status_line():
    first = _step(None, **BROWSER_TOY)
    assert "⚠️" not in first.status and "Step 1 of 1" in first.status
    again = _step(first.session, **{**BROWSER_TOY, "seed": "2"})  # the same controls, sent as text
    assert "Step 2 of 2" in again.status
    bad = _step(first.session, **{**BROWSER_TOY, "temperature": math.nan})
    assert bad.status.startswith("⚠️") and "finite number" in bad.status and bad.session is first.session
    frames = [VIEWS.named(o) for o in ui_controls.run(VIEWS, VIEWS.inputs(None, **BROWSER_TOY), progress=None)]
    assert "finished (" in frames[-1].status and "⚠️" not in frames[-1].status
    bad_run = list(ui_controls.run(VIEWS, VIEWS.inputs(None, **{**BROWSER_TOY, "depth": 1.5}), progress=None))
    assert len(bad_run) == 1 and VIEWS.named(bad_run[0]).status.startswith("⚠️")


def test_every_other_handler_takes_null_floats_and_nan():
    session = _step(None, **BROWSER_TOY).session
    session = _step(session, **BROWSER_TOY).session
    for position in (2.0, "1", None, math.nan, "x"):
        shown = VIEWS.named(tree_view.scrub(VIEWS, session, position))
        assert "⚠️" not in shown.status and shown.tree is not None
    assert "Step 1 of 2" in VIEWS.named(tree_view.scrub(VIEWS, session, 1.0)).status
    panel = VIEWS.panels[1]
    assert inspector.inspect(panel, session, 2.0, 0.0)[panel.plot] is not None
    for node in (None, math.nan, "x", 999):
        assert inspector.inspect(panel, session, 2.0, node)[panel.plot] is None
    assert inspector.inspect(panel, None, None, None)[panel.plot] is None
    assert VIEWS.named(trace_io.import_trace(VIEWS, session, None)).session is session
    assert trace_io.export(None)[0] is None
    assert VIEWS.named(run_stats.baseline(VIEWS, None, progress=None)).status.startswith("⚠️")
    assert VIEWS.named(ui_controls.reset(VIEWS, None)).session == Session()
    assert ui_controls.verifier_info(None) == "" and ui_controls.shape_changed(None)[0]["visible"] is True
    target, _, prompt = ui_controls.pair_changed(None, None)
    assert target["visible"] is False and prompt["value"] == ui_controls.example_prompts()["text"][0]
