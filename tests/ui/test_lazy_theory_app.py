"""The app runs lazy theory (ui/decode.py): a step's exact and optimal acceptance is computed only for a step
the page shows, and then the page shows exactly what the eager path shows. Oracle: the same run decoded
eagerly (engine.start without lazy_theory) step by step; its records and the figures drawn from them.

Covered: Step (every shown step equals the eager one), Run (only its last step pays the theory), the slider
(a replayed step gets its theory from the live run's kept rows), Stop (the step the cancelled Run left on the
page), and the honest fallbacks: a step whose rows are gone, or a session without a live run, shows
"not computed" instead of a number or a crash."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest
from gradio.components.plot import PlotData

import app
from decoding.run import engine
from decoding.run import recorder as recording
from ui import controls as ui_controls
from ui import decode, tree_view
from ui.run_cache import RunCache
from ui.session import Controls, Session
from viz.hover import NOT_COMPUTED

CONTROLS = replace(Controls(), pair="toy", prompt="the cat", verifier="rrs_wor", branching="3,2",
                   temperature=1.0, seed=1, max_new_tokens=24)
RAW = {f.name: getattr(CONTROLS, f.name) for f in fields(Controls)}


@pytest.fixture(scope="module")
def built():
    """A toy page with its own run cache, as the server builds it (once: building a page takes a while)."""
    runs = RunCache()
    _, views = app.build_page("toy", runs)
    return views, runs


@pytest.fixture
def page(built):
    """(views, runs), the cache emptied: no live run survives from another test."""
    built[1].clear()
    return built


@pytest.fixture(scope="module")
def eager():
    """The oracle: the same run with the theory computed in every step (the eager path)."""
    run = engine.start(decode.load(CONTROLS), CONTROLS.config(), CONTROLS.prompt)
    return list(run)


def untimed(step):
    return replace(step, **{f.name: 0.0 for f in fields(step) if f.name.endswith("_ms")})


def shown(views, out):
    """What the page shows of the drawn step: the tree's hover texts and the node panel's figure."""
    named = views.named(out)
    tree = json.loads(named.tree.plot if isinstance(named.tree, PlotData) else named.tree.to_json())
    node = json.loads(named.node_plot.plot)
    hovers = [h for trace in tree["data"] for h in (trace.get("hovertext") or []) if "acceptance here" in h]
    return hovers, node["layout"]["title"], named.tests


def step(views, runs, session):
    return ui_controls.step(views, views.inputs(session, **RAW), progress=None, runs=runs)


def run_all(views, runs, session=None):
    return list(ui_controls.run(views, views.inputs(session, **RAW), progress=None, runs=runs))


def eager_page(views, eager, position):
    """The eager records drawn as the page would draw them (an imported trace of the eager run)."""
    trace = replace(engine.trace_of(engine.start(decode.load(CONTROLS), CONTROLS.config(), CONTROLS.prompt).state,
                                    decode.load(CONTROLS).decode), steps=tuple(eager))
    return views.draw(Session(trace=trace), position)


def test_every_step_shown_after_step_equals_the_eager_step(page, eager):
    views, runs = page
    session = None
    for i in range(4):
        out = step(views, runs, session)
        session = out[views.state]
        assert untimed(session.steps[i]) == untimed(eager[i])  # alpha, stderr, alpha* as the eager path
        assert shown(views, out) == shown(views, eager_page(views, eager, i + 1))
    hovers, title, _ = shown(views, out)
    assert hovers and all("exact α = " in h for h in hovers) and "exact α " in title["text"]


def test_a_run_pays_the_theory_of_its_last_step_only(page, eager, monkeypatch):
    views, runs = page
    computed = []
    real = recording.visit_theory
    monkeypatch.setattr(recording, "visit_theory", lambda *a: computed.append(1) or real(*a))
    frames = run_all(views, runs)
    final = frames[-1][views.state]
    steps = final.steps
    assert len(steps) == len(eager) > 3 and final.run.stop_reason is not None
    assert untimed(steps[-1]) == untimed(eager[-1])
    assert len(computed) == len(steps[-1].visits)  # no theory for the steps the Run passed
    assert all(decode.lacks_theory(s) for s in steps[:-1])
    assert shown(views, frames[-1]) == shown(views, eager_page(views, eager, len(eager)))


def test_the_slider_computes_a_replayed_steps_theory_from_the_live_run(page, eager):
    views, runs = page
    session = run_all(views, runs)[-1][views.state]
    for position in (2, 1):
        out = tree_view.scrub(views, session, float(position), runs=runs)  # the slider sends a float
        session = out[views.state]
        assert untimed(session.steps[position - 1]) == untimed(eager[position - 1])
        assert shown(views, out) == shown(views, eager_page(views, eager, position))
    assert decode.lacks_theory(session.steps[2])  # a step nobody looked at is still not computed
    again = tree_view.scrub(views, session, 1.0, runs=runs)[views.state]
    assert again.steps == session.steps  # a filled step stays filled (the rows were used once)


def test_a_step_whose_rows_are_gone_says_not_computed(page, eager, monkeypatch):
    views, runs = page
    monkeypatch.setattr(engine, "LAZY_THEORY_STEPS", 2)  # the live run keeps the rows of its last 2 steps
    session = run_all(views, runs)[-1][views.state]
    out = tree_view.scrub(views, session, 1.0, runs=runs)
    hovers, title, _ = shown(views, out)
    assert decode.lacks_theory(out[views.state].steps[0])
    assert hovers and all(NOT_COMPUTED in h for h in hovers) and "exact α not computed" in title["text"]
    kept = tree_view.scrub(views, out[views.state], float(len(eager) - 1), runs=runs)[views.state]
    assert untimed(kept.steps[-2]) == untimed(eager[-2])  # within the last 2 steps: computed


def test_without_the_live_run_a_replayed_step_is_not_computed_and_nothing_crashes(page, eager):
    views, runs = page
    session = run_all(views, runs)[-1][views.state]
    runs.clear()  # evicted (LRU, another worker): the rows went with the run
    out = tree_view.scrub(views, session, 1.0, runs=runs)
    assert decode.lacks_theory(out[views.state].steps[0]) and "Step 1 of" in views.named(out).status
    for position in (None, "", "x"):  # what the front end may send
        assert "Step" in views.named(tree_view.scrub(views, session, position, runs=runs)).status
    assert "Press **Step**" in views.named(ui_controls.stopped(views, None, runs=runs)).status


def test_a_rebuilt_run_computes_each_shown_step(page, eager):
    views, runs = page
    session = None
    for i in range(3):
        runs.clear()  # every Step rebuilds the run from its plain state (no kept rows of earlier steps)
        session = step(views, runs, session)[views.state]
        assert untimed(session.steps[i]) == untimed(eager[i])


@pytest.mark.parametrize("closed", [False, True])
def test_stop_computes_the_step_the_run_left_on_the_page(page, eager, closed):
    """Gradio cancels a Run without closing its generator: the live run never comes back to the cache (and
    may even take one more step), so Stop computes the shown step from the rows the Run offered for it.
    Closed (its `finally` hands the live run back), the same step comes from the live run."""
    views, runs = page
    running = ui_controls.run(views, views.inputs(None, **RAW), progress=None, runs=runs)
    frames = [next(running) for _ in range(3)]
    if closed:
        running.close()
    session = frames[-1][views.state]
    assert (session.key in runs) is closed
    assert decode.lacks_theory(session.steps[-1])  # the Run drew it without theory
    out = ui_controls.stopped(views, session, runs=runs)
    assert untimed(out[views.state].steps[-1]) == untimed(eager[len(session.steps) - 1])
    assert shown(views, out) == shown(views, eager_page(views, eager, len(session.steps)))


def alpha_by_depth(figure) -> dict:
    """The run statistics' acceptance-by-depth lines: {trace name: y values}."""
    data = json.loads(figure.to_json())["data"] if hasattr(figure, "to_json") else figure["data"]
    return {t["name"]: t["y"] for t in data if t.get("name", "").startswith(("exact α", "optimal α"))}


def test_the_run_statistics_compute_every_kept_steps_theory(page, eager):
    views, runs = page
    session = run_all(views, runs)[-1][views.state]
    panel = next(p for p in views.panels if hasattr(p, "charts"))
    out = panel.charts(session, runs)
    want = panel.charts(Session(trace=replace(session.trace, steps=tuple(eager))))
    assert alpha_by_depth(out[panel.plot]) == alpha_by_depth(want[panel.plot])
    assert alpha_by_depth(out[panel.plot])["exact α (mean)"]
    assert "whose theory was computed" not in out[panel.summary]


def test_the_run_statistics_say_over_how_many_steps_when_rows_are_gone(page, eager, monkeypatch):
    views, runs = page
    monkeypatch.setattr(engine, "LAZY_THEORY_STEPS", 2)
    session = run_all(views, runs)[-1][views.state]
    panel = next(p for p in views.panels if hasattr(p, "charts"))
    assert f"the mean over the 2 of {len(eager)} steps" in panel.charts(session, runs)[panel.summary]


def test_export_writes_every_kept_steps_theory(page, eager):
    from pathlib import Path

    from decoding.run.schema import trace_from_json
    from ui import trace_io

    views, runs = page
    session = run_all(views, runs)[-1][views.state]
    path, _ = trace_io.export(session, runs=runs)
    written = trace_from_json(Path(path).read_text(encoding="utf-8"))
    assert [untimed(s) for s in written.steps] == [untimed(s) for s in eager]
