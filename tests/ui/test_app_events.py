"""The app's handlers driven directly (as Gradio calls them) with the toy pair: step, scrub, export,
import, run, errors. Figures are checked against the records they draw."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import gradio as gr
import pytest
from gradio.components.plot import PlotData

import app
from decoding.models import pairs as models
from decoding.run.schema import STATUSES, trace_from_json
from ui import controls as ui_controls
from ui import decode, inspector, run_stats, trace_io, tree_view
from ui.session import SHAPES, Controls, Session
from viz import node_figure, text, tree_figure
from viz.lookup import visit_at

_, VIEWS = app.build_page("toy")
CONTROLS = replace(Controls(), pair="toy", prompt="the cat", verifier="rrs", branching="3,2",
                   temperature=1.0, seed=2, max_new_tokens=40)


def raw(controls) -> dict:
    """The controls as the front end hands them over, by field name (values are not converted)."""
    return {f.name: getattr(controls, f.name) for f in fields(Controls)}


def step(session, controls=CONTROLS):
    return VIEWS.named(ui_controls.step(VIEWS, VIEWS.inputs(session, **raw(controls)), progress=None))


def scrub(session, position):
    return VIEWS.named(tree_view.scrub(VIEWS, session, position))


def inspect_node(session, position, node_id):
    panel = VIEWS.panels[1]
    out = inspector.inspect(panel, session, position, node_id)
    return out[panel.plot], out[panel.tests]


def import_trace(session, path):
    return VIEWS.named(trace_io.import_trace(VIEWS, session, path))


def baseline(session):
    return VIEWS.named(run_stats.baseline(VIEWS, session, progress=None))


def figure_json(fig) -> dict:
    """A gr.Plot value as the page gets it: the app sends PlotData (JSON), other code go.Figure."""
    return json.loads(fig.plot if isinstance(fig, PlotData) else fig.to_json())


def tree_counts(views) -> dict[str, int]:
    counts = tree_figure.figure_categories(figure_json(views.tree))
    return {s: counts[s] for s in STATUSES}


@pytest.fixture(scope="module")
def three_steps():
    views, history = None, []
    session = Session()
    for _ in range(3):
        views = step(session)
        session = views.session
        history.append(views)
    return history


def test_each_step_draws_the_tree_of_its_record(three_steps):
    for i, views in enumerate(three_steps, start=1):
        steps = views.session.steps
        assert len(steps) == i and views.slider["value"] == i
        assert tree_counts(views) == steps[-1].status_counts()
        assert f"Step {i} of {i}" in views.status
        assert steps[-1].target_forwards == 1


def test_highlighted_text_is_the_generated_text(three_steps):
    views = three_steps[-1]
    trace = views.session.trace
    joined = "".join(span for span, _ in views.text)
    assert joined == "".join(models.load_pair("toy").token_text(t) for t in trace.generated_ids)
    if 0 not in trace.generated_ids:  # the toy's decode drops <eos>
        assert joined == trace.text
    assert [label for _, label in views.text] == [label for _, label in text.highlighted(trace.steps)]


def test_scrub_back_to_step_one_replays_it_without_recomputation(three_steps, monkeypatch):
    monkeypatch.setattr(models, "load_pair", _no_models)
    session = three_steps[-1].session
    views = scrub(session, 1)
    assert views.session is session
    assert figure_json(views.tree) == figure_json(three_steps[0].tree)
    assert views.slider["value"] == 1 and "Step 1 of 3" in views.status
    assert views.text == text.highlighted(session.steps[:1])


def test_node_inspector_shows_the_tests_of_the_chosen_node(three_steps):
    session = three_steps[-1].session
    step_record = session.steps[-1]
    plot, table = inspect_node(session, 3, 0)
    visit = visit_at(step_record, 0)
    tests = [row for row in table["data"] if row[0] == "test"]
    assert len(tests) == len(visit.tests)
    assert table["headers"] == list(node_figure.TEST_HEADERS)
    assert figure_json(plot)["data"][0]["name"] == "p (target)"


def test_export_then_import_replays_the_same_figures(three_steps, monkeypatch):
    live = three_steps[-1].session
    path, status = trace_io.export(live)
    assert "3 steps" in status
    assert trace_from_json(open(path, encoding="utf-8").read()) == live.trace
    monkeypatch.setattr(models, "load_pair", _unavailable)  # drawing the records needs no model
    imported = import_trace(Session(), path)
    assert imported.session.run is None and "Imported a trace of 3 steps" in imported.status
    assert "cannot be continued here: no model here" in imported.status  # Step starts a new run, and says why
    for position in (1, 2, 3):
        a, b = scrub(live, position), scrub(imported.session, position)
        assert figure_json(a.tree) == figure_json(b.tree)
        assert figure_json(a.node_plot) == figure_json(b.node_plot)
        assert a.tests == b.tests and a.text == b.text
    stats = VIEWS.panels[2]
    charts = [stats.charts(s)[stats.plot] for s in (imported.session, three_steps[-1].session)]
    assert figure_json(charts[0]) == figure_json(charts[1])


def _no_models(*args, **kwargs):
    raise AssertionError("a replay must not load a model")


def _unavailable(*args, **kwargs):
    raise models.ModelLoadError("no model here")


# ---- bad input: a clear message, the session unchanged, never an exception -------------------------------
@pytest.mark.parametrize("change, message", [
    (dict(branching="3,two"), "comma-separated positive integers"),
    (dict(verifier="nonsense"), "unknown verifier"),
    (dict(prompt="   "), "prompt is empty"),
    (dict(prompt="the zebra"), "no word 'zebra'"),
    (dict(temperature="hot"), "temperature must be a number"),
    (dict(pair="custom", target="", draft=""), "needs both a target and a draft"),
    (dict(pair="custom", target="/no/such/folder", draft="/no/such/draft"), "not found"),
    (dict(pair="martian"), "unknown model pair"),
    (dict(shape=SHAPES[1], sequences=4, depth=2, verifier="rrs_wor"), "i.i.d."),
])
def test_bad_input_gives_a_message_and_keeps_the_session(three_steps, change, message):
    session = three_steps[-1].session
    views = step(session, replace(CONTROLS, **change))
    assert views.status.startswith("⚠️") and message in views.status.replace("\\", "")
    assert views.session is session
    assert figure_json(views.tree) == figure_json(three_steps[-1].tree)


@pytest.mark.parametrize("body, message", [
    (b"not json at all", "not a JSON file"),
    (b'{"format": "something-else"}', "not a specscope trace"),
    (b'{"format": "specscope-trace", "version": 99}', "version 99"),
    (b'{"format": "specscope-trace", "version": 1, "steps": []}', "missing fields"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
])
def test_a_bad_trace_file_gives_a_clear_message(tmp_path, three_steps, body, message):
    path = tmp_path / "bad.json"
    path.write_bytes(body)
    session = three_steps[-1].session
    views = import_trace(session, str(path))
    assert views.status.startswith("⚠️") and message in views.status.replace("\\", "")
    assert views.session is session


def test_an_inconsistent_trace_is_refused_with_a_message(tmp_path, three_steps):
    path, _ = trace_io.export(three_steps[-1].session)
    body = json.loads(open(path, encoding="utf-8").read())
    body["steps"][0]["nodes"][1]["status"] = "bogus"
    bad = tmp_path / "inconsistent.json"
    bad.write_text(json.dumps(body), encoding="utf-8")
    views = import_trace(Session(), str(bad))
    assert views.status.startswith("⚠️") and "cannot be drawn" in views.status


def test_export_with_nothing_to_export_says_so():
    path, status = trace_io.export(Session())
    assert path is None and "Nothing to export" in status


# ---- runs, sessions, reset ---------------------------------------------------------------------------
def test_run_streams_every_step_until_the_budget_then_step_says_finished():
    controls = replace(CONTROLS, max_new_tokens=6, seed=4)
    inputs = VIEWS.inputs(Session(), **raw(controls))
    frames = [VIEWS.named(out) for out in ui_controls.run(VIEWS, inputs, progress=None)]
    final = frames[-1].session
    assert [len(f.session.steps) for f in frames] == list(range(1, len(final.steps) + 1))
    assert final.run.stop_reason in ("max_new_tokens", "eos") and "finished" in frames[-1].status
    assert len(final.run.generated_ids) <= 6
    again = step(final, controls)
    assert "has finished" in again.status and again.session is final


def test_changing_a_control_starts_a_new_run(three_steps):
    views = step(three_steps[-1].session, replace(CONTROLS, verifier="sd", branching="1,1,1"))
    assert len(views.session.steps) == 1 and views.session.steps[0].verifier == "sd"


def test_sessions_are_independent(three_steps):
    """Two users stepping at once: each one's records live only in its own session."""
    a = three_steps[1].session
    b = step(Session(), replace(CONTROLS, seed=99)).session
    a2 = step(a).session
    assert len(a.steps) == 2 and len(a2.steps) == 3 and len(b.steps) == 1
    assert a2.steps[:2] == a.steps
    same = three_steps[2].session.steps[2]  # the same seed and controls give the same third step
    assert (a2.steps[2].nodes, a2.steps[2].emitted) == (same.nodes, same.emitted)


def test_reset_clears_every_view(three_steps):
    views = VIEWS.named(ui_controls.reset(VIEWS, three_steps[-1].session))
    assert views.session == Session() and views.tree is None and views.text == []


def test_baseline_adds_the_target_alone_to_the_speed_chart(three_steps):
    views = baseline(three_steps[-1].session)
    base = views.session.baseline
    assert base is not None and 1 <= base.tokens <= len(three_steps[-1].session.run.generated_ids)
    assert base.forwards == base.tokens  # one target forward per token (it stops early at <eos>)
    assert list(views.stats_plot.data[-1].x) == ["speculative", "target alone"]
    assert "speed-up" in views.stats_md


def test_run_charts_are_drawn_only_while_their_tab_is_open(three_steps):
    stats, session = VIEWS.panels[2], three_steps[-1].session
    skip = {stats.plot: gr.skip(), stats.summary: gr.skip()}
    out = step_out(session)
    assert {c: out[c] for c in skip} == skip  # a Step builds and sends no chart
    assert run_stats.refresh(stats, session, False) == skip  # tab closed: nothing drawn after the event
    drawn = run_stats.refresh(stats, session, True)  # open: drawn from the session's records
    assert figure_json(drawn[stats.plot]) == figure_json(stats.charts(session)[stats.plot])
    assert drawn[stats.summary] == stats.charts(session)[stats.summary] and "per target forward" in drawn[stats.summary]
    opened = run_stats.tab_selected(stats, session, run_stats.LABEL)
    assert opened[stats.shown] is True and figure_json(opened[stats.plot]) == figure_json(drawn[stats.plot])
    left = run_stats.tab_selected(stats, session, "How to read this")
    assert left == {stats.shown: False, **skip}


def step_out(session):
    return ui_controls.step(VIEWS, VIEWS.inputs(session, **raw(CONTROLS)), progress=None)


def test_baseline_without_a_run_says_what_to_do():
    views = baseline(Session())
    assert views.status.startswith("⚠️") and "Step or Run first" in views.status


# ---- the controls and the page ------------------------------------------------------------------------
def test_verifier_dropdown_marks_the_lossy_ones():
    from decoding.verify.registry import VERIFIERS

    labels = dict((key, label) for label, key in ui_controls.verifier_choices())
    assert set(labels) == set(VERIFIERS)
    for key, entry in VERIFIERS.items():
        assert ("lossy" in labels[key]) == (not entry.lossless)


def test_pair_change_swaps_an_example_prompt_and_shows_custom_boxes():
    target, draft, prompt = ui_controls.pair_changed("toy", ui_controls.example_prompts()["text"][0])
    assert prompt["value"] == ui_controls.example_prompts()["toy"][0] and target["visible"] is False
    target, _, prompt = ui_controls.pair_changed("custom", "my own prompt")
    assert target["visible"] is True and "value" not in prompt


def test_build_app_and_command_line_defaults(monkeypatch):
    demo = app.build_app(default_pair="toy")
    assert demo.title == "specscope"
    monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    monkeypatch.delenv("GRADIO_SERVER_PORT", raising=False)
    args = app.parse_args([])
    assert (args.host, args.port, args.pair) == ("127.0.0.1", 7860, "embedded")
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    monkeypatch.setenv("GRADIO_SERVER_PORT", "8080")
    assert (app.parse_args([]).host, app.parse_args([]).port) == ("0.0.0.0", 8080)
    assert app.parse_args(["--host", "h", "--port", "1", "--pair", "toy"]).port == 1


@pytest.mark.slow
def test_embedded_pair_steps_a_322_tree():
    controls = replace(Controls(), pair="embedded", prompt="Why is the sky blue?", verifier="rrs_wor",
                       branching="3,2,2", seed=0)
    views = step(Session(), controls)
    views = step(views.session, controls)
    steps = views.session.steps
    assert len(steps) == 2 and "⚠️" not in views.status
    assert len(steps[-1].nodes) == 1 + 3 + 6 + 12
    assert tree_counts(views) == steps[-1].status_counts()
    assert "".join(span for span, _ in views.text) == views.session.trace.text


def _every_verifier():
    from decoding.verify.registry import VERIFIERS

    return sorted(VERIFIERS)


@pytest.mark.parametrize("key", _every_verifier())
def test_every_verifier_steps_and_draws_on_the_toy_pair(key):
    from decoding.verify.registry import VERIFIERS

    k = min(3, VERIFIERS[key].max_candidates or 3)
    controls = replace(CONTROLS, verifier=key, branching=f"{k},{k}", seed=5)
    views, session = None, Session()
    for _ in range(3):
        views = step(session, controls)
        assert "⚠️" not in views.status, views.status
        session = views.session
    for position in range(1, len(session.steps) + 1):
        shown = scrub(session, position)
        record = session.steps[position - 1]
        assert tree_counts(shown) == record.status_counts()
        for node in {v.node for v in record.visits}:
            plot, table = inspect_node(session, position, node)
            tests = [row for row in table["data"] if row[0] == "test"]
            assert len(tests) == len(visit_at(record, node).tests)


def test_preload_warms_the_cache_and_never_raises(caplog):
    decode.preload("toy")
    decode.preload("martian")  # a failure is logged, not raised: the user sees it on Step
    assert "preloading the martian pair failed" in caplog.text
    assert app.parse_args(["--no-preload"]).no_preload is True
