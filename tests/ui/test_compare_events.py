"""The compare view's handlers fed what the front end sends (None, floats, a lone string), toy pair:
a compared Step costs one target forward and records one verdict per selected verifier (the run
verifier first), the figures are drawn from that record, scrubbing redraws it with no model, and a
verifier the shape does not allow is refused with a message."""

from __future__ import annotations

import json
import time
from dataclasses import fields, replace

import pytest

import app
from decoding.compare.selection import allowed_keys
from decoding.models import pairs as models
from ui import compare, decode, tree_view
from ui import controls as ui_controls
from ui.session import Controls, Session
from viz import compare as vc
from viz.lookup import visit_at
from viz.node_figure import node_title
from viz.tree_figure import tree_points

_, VIEWS = app.build_page("toy")
PANEL = next(p for p in VIEWS.panels if isinstance(p, compare.ComparePanel))
CONTROLS = replace(Controls(), pair="toy", prompt="the cat", verifier="rrs", branching="3,2",
                   temperature=1.0, seed=2, max_new_tokens=40)
FOUR = ["rrs_wor", "spectr", "pointmass", "rrs"]


def raw(controls: Controls, **options) -> dict:
    return {**{f.name: getattr(controls, f.name) for f in fields(Controls)}, **options}


def step(session, controls=CONTROLS, **options):
    return VIEWS.named(ui_controls.step(VIEWS, VIEWS.inputs(session, **raw(controls, **options)), progress=None))


def compared_step(session, keys=FOUR, controls=CONTROLS):
    # the front end sends a float from the slider and the checkbox's bool
    return step(session, controls, compare=True, compare_keys=keys, compare_mc=80.0)


@pytest.fixture(scope="module")
def two_steps():
    first = compared_step(Session())
    second = step(first.session, compare=None, compare_keys=None, compare_mc=None)  # compare off: a plain step
    return first, second


def test_a_compared_step_is_one_forward_with_a_verdict_per_verifier(two_steps):
    views = two_steps[0]
    record = views.session.steps[-1]
    assert record.target_forwards == 1
    keys = [v.key for v in record.compare.verdicts]
    assert keys == ["rrs", "rrs_wor", "spectr", "pointmass"]  # the run verifier first, no duplicate
    assert record.compare.run_verifier == "rrs"
    rrs = record.compare.verdicts[0]
    assert list(rrs.accepted_path) == list(record.accepted_path)  # the run verifier's verdict is what ran
    assert all(v.mc_draws == 80 for v in record.compare.verdicts)
    assert "1 target forward" in views.compare_note and "⚠️" not in views.status


def test_the_figures_and_the_table_are_drawn_from_the_record(two_steps):
    views = two_steps[0]
    record = views.session.steps[-1].compare
    multiples = json.loads(views.compare_multiples.to_json())
    titles = [a["text"] for a in multiples["layout"]["annotations"] if a["text"].startswith("<b>")]
    assert [t.split("</b>")[0][3:] for t in titles] == [v.key for v in record.verdicts]
    markers = [t for t in multiples["data"] if t.get("mode") == "markers+text"]
    assert [len(t["x"]) for t in markers] == [len(v.tokens) for v in record.verdicts]
    rows = views.compare_table["data"]
    assert len(rows) == sum(len(v.visits) for v in record.verdicts)
    assert [r[0] for r in rows] == [v.key for v in record.verdicts for _ in v.visits]
    laws = json.loads(views.compare_laws.to_json())["data"]
    exact = [t["y"] for t in laws if t["name"] == "exact"]
    assert exact == [list(v.accepted_length_law) for v in record.verdicts]


def test_a_plain_step_shows_that_it_was_not_compared(two_steps):
    views = two_steps[1]
    assert views.session.steps[-1].compare is None and len(views.session.steps) == 2
    assert "was not compared" in views.compare_note and views.compare_multiples is None


def test_scrubbing_redraws_the_compare_view_of_that_step_with_no_model(two_steps, monkeypatch):
    session = two_steps[1].session
    monkeypatch.setattr(models, "load_pair", lambda *a, **k: pytest.fail("scrubbing must not load a model"))
    back = VIEWS.named(tree_view.scrub(VIEWS, session, 1.0))
    record = session.steps[0].compare
    assert back.compare_table["data"] == compare.table(vc.node_table(record))["data"]
    assert json.loads(back.compare_laws.to_json()) == json.loads(vc.length_law_figure(record).to_json())
    assert "was not compared" in VIEWS.named(tree_view.scrub(VIEWS, session, "2")).compare_note


def test_a_verifier_the_shape_does_not_allow_is_refused_with_a_message():
    views = compared_step(Session(), keys=["rrs", "spechub"])  # spechub: at most 2 candidates, the root has 3
    assert "⚠️" in views.status and "spechub" in views.status
    assert views.session.steps == ()


@pytest.mark.parametrize("keys, words", [(None, "no verifier is selected"), ([], "no verifier is selected"),
                                         (["nope"], "unknown verifier")])
def test_a_bad_selection_gives_a_message(keys, words):
    views = compared_step(Session(), keys=keys)
    assert "⚠️" in views.status and words in views.status and views.session.steps == ()


NINE = ["rrs", "rrs_wor", "spectr", "khisti_is", "hu_greedy", "pointmass", "gls", "ot_optimal", "traversal"]


@pytest.mark.parametrize("handler", [ui_controls.step, ui_controls.run], ids=["step", "run"])
def test_walks_over_the_servers_cap_are_refused_at_once(handler, monkeypatch):
    """Through the API, /step with compare on, nine verifiers and compare_mc=100000 held an embedded-pair server for
    140 s: the boundary read up to 100,000 walks and no launch cap covered them. Refused now, before any model
    work, with the one-line message of every cap (the default cap, 2,000, is the slider's top)."""
    def started(pair, config, state, keys, mc_draws):  # before the cap: minutes of walks, then a plain status
        pytest.fail(f"a compared run was started with {mc_draws} Monte-Carlo walks per verifier")

    monkeypatch.setattr(decode, "CompareRun", started)
    values = VIEWS.inputs(None, **raw(CONTROLS, compare=True, compare_keys=NINE, compare_mc=100000.0))
    start = time.perf_counter()
    out = handler(VIEWS, values, progress=None)
    status = VIEWS.named(out if isinstance(out, dict) else list(out)[-1]).status.replace("\\", "")  # Markdown
    assert time.perf_counter() - start < 2
    assert status.startswith("⚠️") and "100000 Monte-Carlo walks per compared verifier; this server's limit is " \
        "2000" in status, status


class Shown:
    """What gr.Progress puts on the status line: every (fraction, message) a handler reports, in order."""

    def __init__(self) -> None:
        self.messages: list[str | None] = []

    def __call__(self, progress=None, desc=None, **_) -> None:
        self.messages.append(desc)


def _compared_with(progress) -> str:
    values = VIEWS.inputs(Session(), **raw(CONTROLS, compare=True, compare_keys=FOUR, compare_mc=80.0))
    return VIEWS.named(ui_controls.step(VIEWS, values, progress=progress)).status


def test_a_compared_step_on_a_loaded_pair_says_nothing_about_loading():
    """A compared Step's status showed "loading the embedded model pair ... - 0.0%" with the pair long loaded: the
    message was sent before every load, cached or not, and Gradio shows the last one until the event ends."""
    _compared_with(None)  # the toy pair is loaded now
    shown = Shown()
    assert "Step 1 of 1" in _compared_with(shown)
    assert not [m for m in shown.messages if m and "load" in m], shown.messages


def test_a_load_under_way_is_announced_and_ends_saying_the_pair_is_loaded(monkeypatch):
    from decoding.speed import plan

    real = plan.load_planned

    def slow(*args, **kwargs):  # a load that takes a while (a first load, or a wait on the app's preload)
        time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(plan, "load_planned", slow)
    shown = Shown()
    assert "Step 1 of 1" in _compared_with(shown)
    assert shown.messages[0] == "loading the toy model pair ..." and shown.messages[-1] == "the toy model pair is " \
        "loaded", shown.messages  # not "loading ..." through the compared step that follows


def test_a_lone_string_selection_is_one_verifier():
    views = compared_step(Session(), keys="pointmass")
    assert [v.key for v in views.session.steps[-1].compare.verdicts] == ["rrs", "pointmass"]


def test_select_allowed_follows_the_shape():
    values = VIEWS.inputs(None, **raw(replace(CONTROLS, branching="2,2")))
    assert compare.select_allowed(VIEWS, values)["value"] == allowed_keys(replace(CONTROLS, branching="2,2").config())
    assert "spechub" in compare.select_allowed(VIEWS, values)["value"]
    bad = VIEWS.inputs(None, **raw(replace(CONTROLS, branching="3,banana")))
    assert "value" not in compare.select_allowed(VIEWS, bad)  # a bad shape keeps the selection


def test_run_level_comparison_draws_a_row_per_verifier():
    controls = replace(CONTROLS, max_new_tokens=6)
    values = {**VIEWS.inputs(None, **raw(controls)), PANEL.verifiers: ["rrs_wor"], PANEL.seeds: 2.0}
    out = compare.compare_runs(VIEWS, PANEL, values, progress=None)
    rows = out[PANEL.runs_table]["data"]
    assert [r[0] for r in rows] == ["rrs", "rrs_wor"] and out[PANEL.runs_plot] is not None
    bad = compare.compare_runs(VIEWS, PANEL, {**values, PANEL.seeds: 2.5}, progress=None)
    assert "⚠️" in bad[PANEL.runs_note] and bad[PANEL.runs_plot] is None


# ---- send only what changed: the page never shows a stale compare view --------------------------------
SHOWN = ("compare_note", "compare_multiples", "compare_table", "compare_laws")


def _value(v):
    return v.to_json() if hasattr(v, "to_json") else v


def _apply(page: dict, out) -> int:
    """What the browser does with a handler's output: a gr.skip() leaves the shown value. Returns the skips."""
    skips = 0
    for name in SHOWN:
        value = getattr(out, name)
        if value == {"__type__": "update"}:
            skips += 1
        else:
            page[name] = _value(value)
    return skips


def test_a_step_skips_only_compare_views_the_page_already_shows():
    """Oracle: after every Step the page (previous values where skipped) equals a full redraw."""
    plain = dict(compare=None, compare_keys=None, compare_mc=None)
    compared = dict(compare=True, compare_keys=FOUR, compare_mc=0.0)
    other = replace(CONTROLS, seed=5)  # changed controls: a new run, whose steps were never compared
    actions = [(CONTROLS, plain), (CONTROLS, plain), (CONTROLS, compared), (other, plain), (other, plain),
               "reset", (CONTROLS, plain), (CONTROLS, plain)]
    page: dict = {}
    session, skips = Session(), []
    for action in actions:
        if action == "reset":
            out = VIEWS.named(ui_controls.reset(VIEWS, session))
        else:
            out = step(session, action[0], **action[1])
        skips.append(_apply(page, out))
        session = out.session
        full = VIEWS.named(VIEWS.draw(session))
        assert page == {name: _value(getattr(full, name)) for name in SHOWN}
    # skipped: a plain step after plain steps only; drawn: a first step, a new run after a compared step, reset
    assert skips == [0, 3, 0, 0, 3, 0, 0, 3]


def test_run_skips_the_cleared_compare_views_after_its_first_step():
    controls = replace(CONTROLS, max_new_tokens=6)
    values = VIEWS.inputs(None, **raw(controls, compare=None, compare_keys=None, compare_mc=None))
    outs = [VIEWS.named(o) for o in ui_controls.run(VIEWS, values, progress=None)]
    assert len(outs) >= 2 and outs[0].compare_multiples is None
    assert all(o.compare_multiples == {"__type__": "update"} for o in outs[1:])


# ---- review 6: what the page shows, from what the handlers return ------------------------------------------
def test_one_seed_shows_no_interval_in_the_table_the_chart_or_the_note():
    controls = replace(CONTROLS, max_new_tokens=6)
    values = {**VIEWS.inputs(None, **raw(controls)), PANEL.verifiers: ["rrs_wor"], PANEL.seeds: 1.0}
    out = compare.compare_runs(VIEWS, PANEL, values, progress=None)
    ci = vc.RUNS_HEADERS.index("95% CI")
    assert [r[ci] for r in out[PANEL.runs_table]["data"]] == ["— (one seed)"] * 2
    assert "nan" not in json.dumps(out[PANEL.runs_table]["data"])
    figure = json.loads(out[PANEL.runs_plot].to_json())
    assert "95% CI" not in figure["layout"]["annotations"][0]["text"]
    assert "array" not in figure["data"][0].get("error_y", {})
    note = out[PANEL.runs_note]
    assert "1 seed " in note and "1 seeds" not in note and "2+ seeds" in note and "2 verifiers" in note


def test_two_seeds_show_an_interval():
    controls = replace(CONTROLS, max_new_tokens=6)
    values = {**VIEWS.inputs(None, **raw(controls)), PANEL.verifiers: ["rrs_wor"], PANEL.seeds: 2.0}
    out = compare.compare_runs(VIEWS, PANEL, values, progress=None)
    ci = vc.RUNS_HEADERS.index("95% CI")
    assert all(r[ci].startswith("[") and "nan" not in r[ci] for r in out[PANEL.runs_table]["data"])
    assert "2 seeds (2..3)" in out[PANEL.runs_note]
    assert "95% CI" in json.loads(out[PANEL.runs_plot].to_json())["layout"]["annotations"][0]["text"]


def test_the_table_numbers_candidates_as_the_inspector_does(two_steps):
    """The run verifier's verdict is the step the main view shows: its outcome cell is the inspector's words."""
    views = two_steps[0]
    step = views.session.steps[-1]
    outcome = vc.TABLE_HEADERS.index("outcome")
    rows = [r for r in views.compare_table["data"] if r[0] == step.compare.run_verifier]
    assert rows
    for r in rows:
        node = step.nodes[int(r[vc.TABLE_HEADERS.index("node")])]
        assert r[outcome] in node_title(step, node, visit_at(step, node.id)), r
    assert not any("draw" in r[outcome] or "candidate 0" in r[outcome] for r in views.compare_table["data"])


def test_the_compare_tab_writes_tokens_as_the_main_tree(two_steps):
    views = two_steps[0]
    step = views.session.steps[-1]
    main = {p.id: p.text for p in tree_points(step) if p.id < len(step.nodes)}  # the main tree's labels
    multiples = json.loads(views.compare_multiples.to_json())
    first = next(t for t in multiples["data"] if t.get("mode") == "markers+text")  # the run verifier: the step's tree
    assert first["text"] == [main[i] for i in range(len(step.nodes))]
    assert first["text"][0].startswith("·")  # the toy's words start with a space
    token = vc.TABLE_HEADERS.index("token")
    root = [r[token] for r in views.compare_table["data"] if r[vc.TABLE_HEADERS.index("node")] == "0"]
    assert set(root) == {main[0]}
