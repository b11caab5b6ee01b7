"""The Museum tab's handlers (ui/museum.py), fed what the page sends (None for an empty pick): the table lists every
exhibit with its threads and exact numbers from the start, a pick draws the toy node, and "Open on a live
step" sets the controls to the exhibit's rule when the app registered it (--museum), else says how."""

from __future__ import annotations

import pytest

from decoding.lab import museum as lab_museum
from decoding.lab.custom import load_custom
from ui import museum
from ui.caps import Caps
from ui.session import Controls, configure


def test_the_static_table_lists_every_exhibit_and_its_threads():
    html = museum.viz_museum.table_html(museum.static_rows())
    for exhibit in lab_museum.EXHIBITS:
        assert exhibit.key in html and all(url in html for _, url in exhibit.links)
    assert "not computed" in html


def test_a_fresh_tab_shows_every_reproduction_and_a_drawn_node():
    """A newcomer's first look: the numbers are there and the plot is drawn (it was an empty-plot icon until a
    button was pressed)."""
    import gradio as gr

    with gr.Blocks():
        panel = museum.build()
    assert panel.table.value.count("certified lossless") == len(lab_museum.EXHIBITS)
    assert "not computed" not in panel.table.value
    assert panel.plot.value is not None and panel.detail.value.startswith("**")


def test_reproduce_fills_in_every_number():
    html = museum.reproduce_all()
    assert html.count("certified lossless") == len(lab_museum.EXHIBITS)
    assert "reproduced: 0.4600" in html and "0.0600" in html  # SSD: P(argmax) and its TV


@pytest.mark.parametrize("value", [None, ""])
def test_an_empty_pick_draws_nothing(value):
    assert museum.show(value) == (None, "")
    *updates, line = museum.open_live(value)
    assert all("value" not in u for u in updates) and line == "Pick an exhibit first."


def test_a_pick_draws_the_toy_node():
    figure, text = museum.show("hf-32867-greedy-assistant")
    bars = {trace.name: list(trace.y) for trace in figure.data}
    assert bars["the bug's emitted law"] == pytest.approx([0.75, 0.25], abs=1e-12)
    assert bars["p (target)"] == pytest.approx([0.6, 0.4])
    assert "0.1500" in text and "certified lossless" in text
    assert museum.show("nope")[1].startswith("⚠️ unknown museum exhibit")


def test_open_without_registration_says_how():
    *updates, line = museum.open_live("ssd-sync-greedy")
    assert all("value" not in u for u in updates)
    assert "./specscope app --museum" in line


def test_open_sets_the_controls_to_the_registered_rule(monkeypatch):
    name = museum.live_key("ssd-sync-greedy")
    monkeypatch.setitem(museum.VERIFIERS, name, load_custom(lab_museum.get("ssd-sync-greedy").path))
    *updates, line = museum.open_live("ssd-sync-greedy")
    fields = ("pair", "prompt", "verifier", "shape", "branching", "temperature")
    values = {**{f: getattr(Controls(), f) for f in fields}, **{f: u["value"] for f, u in zip(fields, updates,
                                                                                            strict=True)}}
    configured = configure(Caps(), values)
    assert configured.config.verifier == name and configured.config.shape_text() == "1,1,1"
    assert configured.config.temperature == 1.0 and configured.controls.pair == "toy" and "Press **Step**" in line
