"""The per-user cache of live runs (ui.run_cache): a hit and a miss give the same trace, a stale run is
never used, Reset and page leave evict, LRU bounds it, and a taken run is not shared."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

import app
from decoding.run import engine
from ui import controls as ui_controls
from ui import decode
from ui.run_cache import RunCache
from ui.session import Controls, Session

CONTROLS = replace(Controls(), pair="toy", prompt="the cat", verifier="rrs", branching="3,2",
                   temperature=1.0, seed=5, max_new_tokens=40)


@pytest.fixture
def resumes(monkeypatch):
    """Counts the runs rebuilt from plain state (a cache miss: decode.rebuilt replays them)."""
    calls = []
    real = decode.rebuilt

    def counting(pair, state):
        calls.append(len(state.steps))
        return real(pair, state)

    monkeypatch.setattr(decode, "rebuilt", counting)
    return calls


def untimed(trace):
    """The trace with its wall-clock timings zeroed: everything else must agree exactly."""
    def record(step):
        return replace(step, **{f.name: 0.0 for f in fields(step) if f.name.endswith("_ms")})
    return replace(trace, steps=tuple(record(s) for s in trace.steps), summary=None)


def step(views, session, runs):
    raw = {f.name: getattr(CONTROLS, f.name) for f in fields(Controls)}
    return ui_controls.step(views, views.inputs(session, **raw), progress=None, runs=runs)[views.state]


def steps(runs: RunCache, n: int, clear: bool) -> Session:
    _, views = app.build_page("toy", runs)
    session = Session()
    for _ in range(n):
        if clear:
            runs.clear()
        session = step(views, session, runs)
    return session


def test_a_cache_hit_and_a_miss_give_the_same_trace(resumes):
    hit = steps(RunCache(), 4, clear=False)
    assert resumes == []  # every later step took the live run: no rebuild
    miss = steps(RunCache(), 4, clear=True)
    assert resumes == [1, 2, 3]  # every later step rebuilt the run from its plain state
    assert len(hit.steps) == 4 and untimed(hit.trace) == untimed(miss.trace)
    assert (hit.run.generated_ids, hit.run.rng_state) == (miss.run.generated_ids, miss.run.rng_state)


def test_a_stale_cached_run_is_not_used(resumes):
    runs = RunCache()
    _, views = app.build_page("toy", runs)
    first = step(views, Session(), runs)
    live = runs.take(first.key, first.run, decode.load(CONTROLS))
    live.step()  # the cached run moved on (e.g. a click whose result the page never kept)
    runs.put(first.key, live)
    second = step(views, first, runs)
    assert resumes == [1]  # rebuilt, not the stale run
    assert untimed(second.trace) == untimed(steps(RunCache(), 2, clear=True).trace)


def test_a_run_stays_its_pairs_after_a_calibration_puts_a_product_plan_on():
    """The Speed tab calibrates the pair a live run uses, and a plan goes on under the run: the pair's
    description gains `products`. The run must still be found (it was not: the tab then read the calibration's
    acceptance, and the next Step rebuilt the run); another pair must still not match."""
    from types import SimpleNamespace

    from ui.run_cache import matches

    runs = RunCache()
    _, views = app.build_page("toy", runs)
    session = step(views, Session(), runs)
    live = runs.take(session.key, session.run)
    planned = SimpleNamespace(describe=lambda: {**session.run.pair, "products": "onednn for 1-64 rows"})
    assert matches(SimpleNamespace(pair=planned, state=live.state), session.run)
    other = SimpleNamespace(describe=lambda: {**session.run.pair, "vocab_size": 13})
    assert not matches(SimpleNamespace(pair=other, state=live.state), session.run)


def test_a_taken_run_is_not_shared():
    runs = RunCache()
    _, views = app.build_page("toy", runs)
    session = step(views, Session(), runs)
    pair = decode.load(CONTROLS)
    assert runs.take(session.key, session.run, pair) is not None
    assert runs.take(session.key, session.run, pair) is None  # a concurrent click rebuilds its own


def test_reset_evicts_the_sessions_run():
    runs = RunCache()
    _, views = app.build_page("toy", runs)
    session = step(views, Session(), runs)
    assert session.key in runs
    fresh = ui_controls.reset(views, session, runs=runs)[views.state]
    assert session.key not in runs and len(runs) == 0 and fresh.key != session.key


def test_leaving_the_page_evicts_and_lru_bounds_the_cache():
    pair = decode.load(CONTROLS)
    runs = RunCache(max_runs=2)
    made = [engine.start(pair, CONTROLS.config(), CONTROLS.prompt) for _ in range(3)]
    for i, run in enumerate(made):
        runs.put(f"k{i}", run, page=f"page{i}")
    assert "k0" not in runs and "k1" in runs and "k2" in runs and len(runs) == 2
    runs.leave("page2")
    assert "k2" not in runs and "k1" in runs
    runs.leave("unknown")  # a page that never stepped
    assert len(runs) == 1


def test_stop_finds_the_step_the_page_shows_when_the_run_had_offered_the_next_one():
    """Stop can land after a Run offered step N+1 but before the page got it: the page still shows step N, so the
    cache keeps the offer before the last too (a browser test failed on it: the stopped step had no theory)."""
    from ui.run_cache import Offer

    cache = RunCache()
    for index in range(4):
        cache.offer("a", Offer(index, [("rows of step", index)], None))
    cache.offer("b", Offer(0, [], None))
    offer = cache.claim("a", 2)  # the page shows step 2; the Run had offered step 3 already
    assert offer is not None and offer.rows == [("rows of step", 2)]
    assert cache.claim("a", 3) is None  # a claim takes the key's offers: Stop computes one step's theory once
    assert cache.claim("a", 1) is None and cache.claim("b", 0) is not None  # 2 kept per key, keys apart
