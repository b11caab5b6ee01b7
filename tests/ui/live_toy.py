"""A live toy run as the page makes it: the app's Blocks and views, its run cache, and the session after N Steps
through the real Step handler (the Speed and Run statistics tabs' tests read it)."""

from __future__ import annotations

from dataclasses import fields, replace

import app
from ui import controls as ui_controls
from ui.run_cache import RunCache
from ui.session import Controls, Session
from ui.views import Views

CONTROLS = replace(Controls(), pair="toy", prompt="the cat", verifier="sd", branching="1,1,1",
                   temperature=1.0, seed=2, max_new_tokens=30)


def live_toy_run(steps: int, **changed) -> tuple[Views, RunCache, Session]:
    """(views, run cache, session) after `steps` Steps of CONTROLS with `changed` fields (raw values)."""
    runs = RunCache()
    _, views = app.build_page("toy", runs)
    raw = {f.name: getattr(CONTROLS, f.name) for f in fields(Controls)} | changed
    session = None
    for _ in range(steps):
        session = ui_controls.step(views, views.inputs(session, **raw), progress=None, runs=runs)[views.state]
    return views, runs, session
