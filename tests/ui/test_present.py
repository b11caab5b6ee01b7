"""Projector mode's page parts outside the browser: ?present=1 and Gradio's ?__theme=dark are how the page
looks, not the demo, so a link carrying them gets no notice (an unknown key still does); the page's <head>
carries assets/present.js and the buttons keep their contract ids."""

from __future__ import annotations

import app
from ui import present
from ui.caps import Caps
from ui.link_query import read_link
from ui.session import Controls


def test_page_keys_are_not_demo_keys_and_bring_no_notice():
    _, notices = read_link({"pair": "toy", "present": "1", "__theme": "dark"}, Controls(), Caps())
    assert notices == []
    _, notices = read_link({"pair": "toy", "presnt": "1"}, Controls(), Caps())
    assert len(notices) == 1 and "'presnt'" in notices[0]


def test_the_head_loads_present_js_and_the_buttons_have_their_ids():
    head = app.head()
    assert app.PRESENT_JS.read_text(encoding="utf-8") in head
    for element in ("present-toggle", "theme-toggle", "controls-toggle"):
        assert f'id="{element}"' in present.BUTTONS
    assert 'aria-pressed="false"' in present.BUTTONS
