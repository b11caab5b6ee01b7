"""Projector mode and the dark theme: two buttons at the top of the page, handled in the page by
assets/present.js (no server call), and `?present=1` opening the page in projector mode (app.CSS lays it out:
controls folded away behind a "controls" button, large type, the story, the tree and the inspector at the
page's whole width). Element ids are contracts: #present-toggle, #theme-toggle, #controls-toggle."""

from __future__ import annotations

import gradio as gr

BUTTONS = ('<div id="present-bar" class="specscope-present-bar">'
           '<button type="button" id="present-toggle" aria-pressed="false" title="large type, the controls folded '
           'away, the story, the tree and the inspector filling the screen (or open the page with ?present=1)">'
           "projector mode</button>"
           '<button type="button" id="controls-toggle" aria-pressed="false">controls</button>'
           '<button type="button" id="theme-toggle" aria-pressed="false">dark theme</button>'
           '<span class="specscope-keys">keys: ← → events · space plays · n Step</span></div>')


def build() -> gr.HTML:
    return gr.HTML(BUTTONS, elem_id="present-html", padding=False)
