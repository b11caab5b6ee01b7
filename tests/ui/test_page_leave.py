"""A page leave releases what the server kept for the page (ui/page_leave.py): its live run at once, and
Gradio's record of the page once Gradio has deleted its state; a closed page within its hour keeps both
its state and its record (a reconnecting page finds them). The app is served from this process on the toy
pair, with GRADIO_IS_E2E_TEST=1 (Gradio's own test setting: a 0.25 s heartbeat, so a closed client is seen
gone at once, and a closed page's state kept 1 s instead of an hour)."""

from __future__ import annotations

import gc
import time
import weakref

import gradio as gr
import pytest
from gradio.state_holder import StateHolder

import app
from tests.served import served_here
from tests.ui.app_session import AppSession
from ui.page_leave import forget_expired
from ui.run_cache import RunCache
from ui.session import Session

CONTROLS = dict(pair="toy", target=None, draft=None, prompt="the cat", verifier="rrs_wor", shape="branching per level",
                branching="2,2", sequences=4, depth=4, temperature=1.0, top_k=0, top_p=1.0, seed=3, max_new_tokens=32)


def wait_until(condition, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def gone(ref: weakref.ref) -> bool:
    gc.collect()
    return ref() is None


def test_a_left_page_loses_its_run_at_once_and_its_record_once_its_state_expired(monkeypatch):
    monkeypatch.setenv("GRADIO_IS_E2E_TEST", "1")
    runs = RunCache()
    demo, _ = app.build_page("toy", runs=runs)
    with served_here(demo) as server:
        first = AppSession(server.url)
        for n in (1, 2):
            assert f"Step {n} of {n}" in first.step(CONTROLS)
        page = first.client.session_hash
        records = demo.state_holder.session_data
        assert len(runs) == 1 and page in records
        run = weakref.ref(next(iter(runs._runs.values())))  # the live run: KV caches, kept rows
        session = weakref.ref(next(iter(records[page].state_data.values())))  # the page's gr.State
        assert isinstance(session(), Session)

        first.client.close()  # the heartbeat stream ends: Gradio runs the unload handler
        assert wait_until(lambda: len(runs) == 0), "the left page's run is still in the run cache"
        assert gone(run), "the left page's run is still referenced somewhere"

        second = AppSession(server.url)  # a later page, which leaves once the first page's state expired
        assert "Step 1 of 1" in second.step(CONTROLS)
        assert wait_until(lambda: gone(session)), "Gradio kept the left page's state past its time to live"
        second.client.close()
        assert wait_until(lambda: page not in records), "the expired page's record stayed in the state holder"
        assert wait_until(lambda: len(runs) == 0)


def holder_with_one_page(state_ttl_env: str | None, monkeypatch) -> tuple[StateHolder, str, gr.State]:
    """A real Gradio StateHolder for a Blocks with one gr.State, and a page that wrote its state once."""
    if state_ttl_env:
        monkeypatch.setenv("GRADIO_IS_E2E_TEST", state_ttl_env)
    else:
        monkeypatch.delenv("GRADIO_IS_E2E_TEST", raising=False)
    with gr.Blocks() as demo:
        state = gr.State()
    holder = StateHolder()
    holder.set_blocks(demo)
    holder["page"][state._id] = Session()  # what a handler's gr.State output does (it gets a time to live)
    return holder, "page", state


def test_a_closed_page_within_its_hour_keeps_its_record(monkeypatch):
    holder, page, state = holder_with_one_page(None, monkeypatch)
    assert forget_expired(holder) == 0 and page in holder  # open
    holder.session_data[page].is_closed = True
    holder.delete_all_expired_state()  # Gradio's own expiry: the hour has not passed
    assert forget_expired(holder) == 0 and page in holder
    assert isinstance(holder.session_data[page].state_data[state._id], Session)


def test_a_closed_page_whose_state_gradio_deleted_is_forgotten(monkeypatch):
    holder, page, _ = holder_with_one_page(None, monkeypatch)
    holder.session_data[page].is_closed = True
    holder.delete_state(page)  # what Gradio's expiry does an hour after the leave
    assert forget_expired(holder) == 1 and page not in holder and page not in holder.time_last_used


@pytest.mark.parametrize("holder", [None, object(), type("Holder", (), {"session_data": {"p": object()}})()])
def test_a_holder_of_another_shape_is_left_alone(holder):
    before = dict(getattr(holder, "session_data", {}))
    assert forget_expired(holder) == 0
    assert dict(getattr(holder, "session_data", {})) == before
