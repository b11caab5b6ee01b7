"""A run evicted from the run cache (ui/run_cache.py), or whose server restarted (a new, empty cache), continues
through the Step handler with exactly the tokens of the uninterrupted run, on the embedded pair (whose int8
self-draft made a re-prefilled run continue differently: decoding/run/replay.py says why)."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

import app
from decoding.run import replay
from ui import controls as ui_controls
from ui import decode
from ui.run_cache import RunCache
from ui.session import Controls, Session

CONTROLS = replace(Controls(), pair="embedded", prompt="Write a short poem about the sea.", verifier="rrs_wor",
                   branching="2,1", temperature=1.0, seed=4, max_new_tokens=40)
OTHER = replace(CONTROLS, prompt="Name three colours.", seed=9)


def step(views, session: Session, runs: RunCache, controls: Controls = CONTROLS) -> Session:
    raw = {f.name: getattr(controls, f.name) for f in fields(Controls)}
    return ui_controls.step(views, views.inputs(session, **raw), progress=None, runs=runs)[views.state]


@pytest.fixture
def rebuilds(monkeypatch):
    """Why each cache miss was not an exact replay (None: it was)."""
    whys = []
    real = replay.rebuild

    def spying(pair, state, **options):
        run, why = real(pair, state, **options)
        whys.append(why)
        return run, why

    monkeypatch.setattr(decode.replay, "rebuild", spying)
    return whys


@pytest.mark.slow
def test_an_evicted_or_restarted_run_continues_with_the_uninterrupted_tokens(rebuilds) -> None:
    runs = RunCache(max_runs=1)
    _, views = app.build_page("embedded", runs)
    whole, own = Session(), RunCache()
    for _ in range(4):
        whole = step(views, whole, own)  # its own cache: never evicted
    assert rebuilds == []

    mine = step(views, step(views, Session(), runs), runs)
    step(views, Session(), runs, OTHER)  # another user's run evicts mine (one run fits)
    assert mine.key not in runs
    mine = step(views, mine, runs)  # rebuilt after eviction
    mine = step(views, mine, RunCache())  # the server restarted: an empty cache, the page's plain state
    assert rebuilds == [None, None]  # both were exact replays, not re-prefilled approximations
    assert mine.run.generated_ids == whole.run.generated_ids
    assert mine.run.rng_state == whole.run.rng_state
