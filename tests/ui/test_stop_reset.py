"""Stop and Reset on a running generation, through the served app's API (embedded pair, served from this
process so the test can look into the server's run cache).

Stop is pressed as the page presses it: the page's Stop button has no handler of its own; Gradio's front
end posts /cancel, for each event the button's `cancels` names, with that event's id. So the test reads
the button's dependencies from the app's config and posts the same requests for the running Run; an app
whose Stop does not cancel Run leaves the run going, and the step count keeps growing."""

from __future__ import annotations

import time

import httpx
import pytest

import app
from decoding.run.schema import trace_to_json
from tests.served import served_here
from tests.ui.app_session import AppSession, comparable
from ui import controls as ui_controls
from ui.run_cache import RunCache

pytestmark = pytest.mark.slow  # loads the embedded model; a Run of a few seconds is stopped
SETTINGS = dict(pair="embedded", target=None, draft=None, prompt="Tell me a long story about a lighthouse.",
                verifier="rrs_wor", shape="branching per level", branching="2,2", sequences=4, depth=4,
                temperature=1.0, top_k=0, top_p=1.0, seed=11, max_new_tokens=96)


@pytest.fixture(scope="module")
def served_app():
    """(url, the server's run cache): a page built with a run cache the test can look into."""
    runs = RunCache()
    demo, _ = app.build_page("embedded", runs=runs)
    with served_here(demo) as server:
        yield server.url, runs


def press_stop(session: AppSession, running) -> int:
    """What the page does on a Stop click: /cancel each event the Stop button cancels; the number posted."""
    config = session.client.config
    stop_id = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "stop-btn")
    cancelled = [i for dep in config["dependencies"] if [stop_id, "click"] in dep["targets"]
                 for i in dep.get("cancels") or []]
    for fn_index in cancelled:
        body = {"fn_index": fn_index, "session_hash": session.client.session_hash,
                "event_id": running.communicator.event_id}
        reply = httpx.post(f"{session.client.src_prefixed}cancel", json=body, timeout=30)
        assert reply.status_code == 200 and reply.json() == {"success": True}, reply.text
    return len(cancelled)


def steps_of(session: AppSession) -> int:
    trace = session.exported()
    return 0 if trace is None else len(trace["steps"])


def wait_for_outputs(job, n: int, timeout_s: float = 300) -> float:
    """Block until the job has streamed `n` outputs; the seconds the last of them took."""
    deadline, last, seen, took = time.monotonic() + timeout_s, time.monotonic(), 0, 0.0
    while len(job.outputs()) < n:
        assert time.monotonic() < deadline and not job.done(), f"{len(job.outputs())} outputs, wanted {n}"
        if len(job.outputs()) > seen:
            seen, now = len(job.outputs()), time.monotonic()
            took, last = now - last, now
        time.sleep(0.02)
    return max(took, time.monotonic() - last)


def passed_untheorised(trace: dict) -> dict:
    """The trace without the exact theory of all steps but the last: the app computes it only for a step it
    shows (ui/decode.py), so the steps a stopped Run passed have none, while Steps show (and fill) each."""
    theory = ("alpha_exact", "alpha_stderr", "alpha_optimal")
    steps = [{**s, "visits": [{k: v for k, v in visit.items() if k not in theory} for visit in s["visits"]]}
             for s in trace["steps"][:-1]]
    return {**trace, "steps": steps + trace["steps"][-1:]}


def next_steps(n: int) -> tuple[dict, dict]:
    """The traces of step n+1 after n uninterrupted Steps of the same settings in this process: (taken from
    the live run kept in a run cache, rebuilt from the plain state after n steps).

    Both are the run's next step: the server takes the first when the stopped Run put a live run matching
    the session back in its cache, else the second. They can differ: the embedded int8 draft quantizes
    activations per forward, so a draft re-prefilled in one forward gives a slightly different q."""
    _, views = app.build_page("embedded")

    def step(session, runs):
        return ui_controls.step(views, views.inputs(session, **SETTINGS), progress=None, runs=runs)[views.state]

    runs, session = RunCache(), None
    for _ in range(n):
        session = step(session, runs)
    return tuple(comparable(trace_to_json(step(session, cache).trace)) for cache in (runs, None))


def test_stop_halts_the_run_within_a_step_the_next_step_continues_it_and_reset_frees_it(served_app):
    url, runs = served_app
    session = AppSession(url)
    running = session.submit("/run", SETTINGS)
    step_s = wait_for_outputs(running, 2)  # the run is under way
    assert press_stop(session, running) >= 1, "the Stop button cancels nothing"
    at_cancel = steps_of(session)
    time.sleep(4 * step_s + 1.0)  # an uncancelled run would take several more steps meanwhile
    stopped = steps_of(session)
    assert 2 <= at_cancel <= stopped <= at_cancel + 1, (at_cancel, stopped)
    assert len(runs) <= 1  # at most this session's run

    status = session.step(SETTINGS)  # the same controls: the stopped run goes on
    assert "⚠️" not in status and f"Step {stopped + 1} of {stopped + 1}" in status, status
    continued = session.exported()
    assert all(v["alpha_exact"] is not None for v in continued["steps"][-1]["visits"])  # the step Step showed
    assert passed_untheorised(continued) in [passed_untheorised(t) for t in next_steps(stopped)], \
        "the Step after Stop is not the stopped run's next step"
    assert len(runs) == 1  # kept warm for the next Step

    assert session.client.predict(api_name="/reset")[0].startswith("Reset.")
    assert len(runs) == 0, "Reset left the run in the server's run cache"
    assert session.exported() is None
