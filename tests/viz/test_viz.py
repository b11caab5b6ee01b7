"""viz from hand-made records (tests/fixtures_records.py): no model, no engine."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from decoding.run.schema import BONUS, RESIDUAL, STATUSES, trace_from_json, trace_to_json
from tests import fixtures_records as fx
from viz import figure_json, node_figure, stats, text, tree_figure
from viz.layout import tidy_layout
from viz.lookup import visit_at
from viz.palette import ORIGIN_NAMES
from viz.tokens import label, plotly_escape, visible

STEPS = (fx.step_residual(), fx.step_bonus())


# ---- tree figure ---------------------------------------------------------------------------------
@pytest.mark.parametrize("step", STEPS, ids=["residual", "bonus"])
def test_tree_figure_counts_each_status_like_the_record(step):
    counts = tree_figure.figure_categories(tree_figure.tree_figure(step))
    assert {s: counts[s] for s in STATUSES} == step.status_counts()


def test_tree_figure_adds_one_node_for_the_residual_or_bonus_token():
    residual = tree_figure.figure_categories(tree_figure.tree_figure(fx.step_residual()))
    bonus = tree_figure.figure_categories(tree_figure.tree_figure(fx.step_bonus()))
    assert (residual[RESIDUAL], residual[BONUS]) == (1, 0)
    assert (bonus[RESIDUAL], bonus[BONUS]) == (0, 1)


def test_tree_figure_colours_each_status_with_its_own_colour():
    fig = tree_figure.tree_figure(fx.step_residual())
    markers = [t for t in fig.data if t.customdata is not None]
    for trace in markers:
        categories = {row[1] for row in trace.customdata}
        assert len(categories) == 1
        assert trace.marker.color == tree_figure.COLORS[categories.pop()]
    assert len({t.marker.color for t in markers}) == len(markers)


def test_tree_figure_highlights_the_accepted_path():
    fig = tree_figure.tree_figure(fx.step_bonus())
    path = next(t for t in fig.data if t.name == "accepted path")
    assert path.line.width > next(t for t in fig.data if t.name == "tree edge").line.width
    assert sum(x is None for x in path.x) == len(fx.step_bonus().accepted_path) - 1


def test_tree_hover_shows_p_q_threshold_and_uniform_of_the_parents_test():
    fig = tree_figure.tree_figure(fx.step_residual())
    hover = {row[0]: h for t in fig.data if t.customdata is not None
             for row, h in zip(t.customdata, t.hovertext, strict=True)}
    assert "p = 0.1 · q = 0.5 · p/q = 0.2" in hover[1]
    assert "threshold 0.2, u = 0.7: failed" in hover[1]
    assert "exact α = 0.62" in hover[0] and "optimal for this law = 0.71" in hover[0]
    assert "not tested: another candidate at the parent was accepted first" in hover[3]
    assert "not tested: its parent was not reached" in hover[4]


def test_a_monte_carlo_alpha_reads_as_an_estimate_not_as_exact():
    """Where no exact route exists (rrs_wor, k >= 3, large V) alpha is a Monte Carlo mean that may land above the
    optimum by its noise: the hover and the node title must say "≈ ... (Monte Carlo)", never "exact"."""
    step = fx.step_residual()
    estimated = replace(step.visits[0], alpha_exact=0.0279, alpha_stderr=0.0011, alpha_optimal=0.0269)
    step = replace(step, visits=(estimated, *step.visits[1:]))
    fig = tree_figure.tree_figure(step)
    hover = {row[0]: h for t in fig.data if t.customdata is not None
             for row, h in zip(t.customdata, t.hovertext, strict=True)}
    assert "α ≈ 0.0279 ± 0.0011 (Monte Carlo)" in hover[0] and "exact α" not in hover[0]
    title = node_figure.node_figure(step, step.visits[0].node).layout.title.text
    assert "α ≈ 0.0279 ± 0.0011 (Monte Carlo) (optimal 0.0269)" in title and "exact α" not in title


# ---- text: whitespace and escaping ---------------------------------------------------------------
def test_whitespace_and_control_characters_are_made_visible():
    assert visible(" world\n\tx\r") == "·world⏎→x␍"
    assert visible("") == "∅"
    assert visible("a\x00b") == "a\\u0000b"


def test_tree_labels_are_visible_and_html_escaped():
    fig = tree_figure.tree_figure(fx.step_residual())
    texts = [x for t in fig.data if t.text is not None for x in t.text]
    assert "&lt;b&gt;" in texts and "·&amp;" in texts and "⏎" in texts and "·world" in texts
    assert not any("<b>" in x or "\n" in x for x in texts)
    hovers = " ".join(h for t in fig.data if t.hovertext is not None for h in t.hovertext)
    assert "&lt;b&gt;" in hovers and "<b>&lt;b&gt;</b>" in hovers


def test_text_html_escapes_every_token_and_the_prompt():
    html = text.text_html(STEPS, prompt="<script>alert(1)</script>")
    assert "<script>" not in html and "&#60;script&#62;alert&#40;1&#41;&#60;/script&#62;" in html


def test_highlighted_text_joins_to_the_generated_text_with_origin_labels():
    spans = text.highlighted(STEPS)
    assert "".join(s for s, _ in spans) == text.generated_text(STEPS) == fx.trace().text
    assert [lab for _, lab in spans] == [ORIGIN_NAMES[e.kind] for s in STEPS for e in s.emitted]
    assert text.highlighted(STEPS, prompt="Hi")[0] == ("Hi", None)
    assert set(text.color_map()) == set(ORIGIN_NAMES.values())


def test_label_shortens_long_tokens():
    assert label("x" * 40).endswith("…") and len(label("x" * 40)) == 16


# ---- layout --------------------------------------------------------------------------------------
def random_parents(rng: random.Random, n: int) -> list[int]:
    return [-1] + [rng.randrange(i) for i in range(1, n)]


@pytest.mark.parametrize("seed", range(20))
def test_layout_centres_parents_over_children_and_never_overlaps(seed):
    parents = random_parents(random.Random(seed), 1 + seed * 3)
    lay = tidy_layout(parents)
    assert lay == tidy_layout(list(parents))  # deterministic
    for node, kids in enumerate(lay.children):
        if kids:
            assert lay.y[node] == (lay.y[kids[0]] + lay.y[kids[-1]]) / 2
            assert all(lay.x[k] == lay.x[node] + 1 for k in kids)
            assert [lay.y[k] for k in kids] == sorted(lay.y[k] for k in kids)
    leaves = sorted(lay.y[i] for i, kids in enumerate(lay.children) if not kids)
    assert leaves == [float(i) for i in range(len(leaves))]
    assert len(set(zip(lay.x, lay.y, strict=True))) == len(parents)


def test_layout_refuses_a_forest_or_a_cycle():
    with pytest.raises(ValueError, match="exactly one root"):
        tidy_layout([-1, -1])
    with pytest.raises(ValueError, match="cycle"):
        tidy_layout([-1, 2, 1])


# ---- node inspector -----------------------------------------------------------------------------
@pytest.mark.parametrize("node", [0, 2])
def test_tests_table_rows_equal_the_visits_tests_in_order(node):
    step = fx.step_residual()
    visit = visit_at(step, node)
    rows = node_figure.tests_table(step, node, digits=None)
    tests = [r for r in rows if r[0] == "test"]
    want = [[t.candidate + 1, visible(t.text), t.numerator, t.denominator, t.threshold, t.uniform,
             "yes" if t.passed else "no"] for t in visit.tests]
    assert [r[1:8] for r in tests] == want
    # each residual update follows the test it comes after
    for update in visit.updates:
        at = [i for i, r in enumerate(rows) if r[0] == "test"][update.after_test]
        assert rows[at + 1][0] == "residual update" and update.note in rows[at + 1][-1]
    assert len(rows[0]) == len(node_figure.TEST_HEADERS)


def test_tests_table_is_empty_for_a_node_that_was_not_verified():
    assert node_figure.tests_table(fx.step_residual(), 3) == []


def test_node_figure_bars_are_the_nodes_p_and_q_and_one_residual_per_update():
    step = fx.step_residual()
    fig = node_figure.node_figure(step, 2)
    p, q = fig.data[0], fig.data[1]
    top = step.nodes[2].top
    assert list(p.y[: len(top)]) == [t.p for t in top] and list(q.y[: len(top)]) == [t.q for t in top]
    residuals = [t for t in fig.data if t.name.startswith("residual")]
    assert len(residuals) == len(visit_at(step, 2).updates)
    assert "★" in "".join(p.x)  # candidates are marked
    assert list(residuals[-1].y)[0] == 1.0  # the residual sample's token holds all the mass at the end


def test_node_figure_of_an_unverified_node_has_only_p_and_q():
    fig = node_figure.node_figure(fx.step_residual(), 5)
    assert [t.name for t in fig.data] == ["p (target)", "q (draft)"]
    assert "not on the accepted path" in fig.layout.title.text


@pytest.mark.parametrize("titles", [("a",), ("a", "b"), ("a", "b", "c")])
@pytest.mark.parametrize("spacing", [0.12, 0.3])
def test_subplots_is_the_layout_make_subplots_builds(titles, spacing):
    made = make_subplots(rows=len(titles), cols=1, shared_xaxes=True, vertical_spacing=spacing, subplot_titles=titles)
    assert go.Figure({"layout": node_figure.subplots(titles, spacing)}).to_dict() == made.to_dict()


def _slow_node_figure(step, node_id: int) -> go.Figure:
    """node_figure as it was built before the one-dict build (make_subplots, add_trace, update_*): the oracle."""
    node, visit = step.nodes[node_id], visit_at(step, node_id)
    tokens = node_figure.node_tokens(node, visit, 10)
    names = node_figure._axis_labels(tokens, visit)
    rows = 2 if visit is not None and visit.updates else 1
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=node_figure._subtitles(rows))
    fig.add_trace(go.Bar(x=names, y=[node_figure._bar(t.p) for t in tokens], name="p (target)",
                         marker_color=node_figure.P_COLOR), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[node_figure._bar(t.q) for t in tokens], name="q (draft)",
                         marker_color=node_figure.Q_COLOR), 1, 1)
    for i, update in enumerate(visit.updates if rows == 2 else ()):
        mass = {t.token: t.p for t in update.residual_top}
        fig.add_trace(go.Bar(x=names, y=[mass.get(t.token, 0.0) for t in tokens],
                             name=f"residual after test {update.after_test + 1}",
                             marker_color=node_figure.RESIDUAL_COLOR,
                             marker_opacity=0.35 + 0.65 * (i + 1) / len(visit.updates),
                             hovertext=plotly_escape(update.note)), 2, 1)
    fig.update_layout(title={"text": node_figure.node_title(step, node, visit), "x": 0.01}, barmode="group",
                      height=260 + 170 * rows, margin={"l": 40, "r": 20, "t": 110, "b": 40},
                      legend={"orientation": "h", "y": -0.15}, plot_bgcolor="white")
    fig.update_yaxes(range=[0, 1], gridcolor="#EEEEEE", title_text="probability")
    fig.update_xaxes(automargin=False)
    fig.update_yaxes(automargin=False)
    return fig


@pytest.mark.parametrize("step", STEPS)
def test_node_figure_is_the_figure_make_subplots_and_add_trace_build(step):
    rows = set()
    for node in step.nodes:
        fig = node_figure.node_figure(step, node.id)
        assert fig.to_dict() == _slow_node_figure(step, node.id).to_dict()
        rows.add("yaxis2" in fig.layout.to_plotly_json())
    assert True in rows or step is STEPS[1]  # the residual step has a two-row node (its residual updates)


@pytest.mark.parametrize("step", STEPS, ids=["residual", "bonus"])
def test_the_json_the_app_sends_is_the_json_go_figure_makes(step):
    """The app sends tree_spec/node_spec through figure_json.drawn (no validation); plotly.js must get
    exactly what go.Figure(spec).to_json() gives, template included."""
    specs = [tree_figure.tree_spec(step)] + [node_figure.node_spec(step, n.id) for n in step.nodes]
    for spec in specs:
        assert json.loads(figure_json.drawn(spec)) == json.loads(go.Figure(spec).to_json())


# ---- stats ---------------------------------------------------------------------------------------
def test_stats_numbers():
    assert stats.tokens_per_forward(STEPS) == [2.0, 3.0]
    assert stats.running_mean([1.0, None, 3.0]) == [1.0, 1.0, 2.0]
    by_depth = {d.depth: d for d in stats.acceptance_by_depth(STEPS)}
    assert (by_depth[0].visits, by_depth[0].accepted) == (2, 2)
    assert (by_depth[1].visits, by_depth[1].accepted) == (2, 1)
    assert by_depth[1].alpha_exact == pytest.approx((0.3 + 0.8) / 2)
    numbers = stats.run_numbers(STEPS)
    assert (numbers.tokens, numbers.target_forwards, numbers.draft_forwards) == (5, 2, 4)


def test_run_figure_with_and_without_a_baseline():
    plain = stats.run_figure(STEPS)
    compared = stats.run_figure(STEPS, stats.BaselineNumbers(tokens=5, seconds=0.5, forwards=5), seconds=0.25)
    decoding = sum(s.draft_ms + s.target_ms + s.verify_ms for s in STEPS) / 1000  # like the baseline: no recording
    speed, all_in = compared.data[-1], compared.data[-2]
    assert list(speed.x) == ["speculative", "target alone"] and list(speed.y) == pytest.approx([5 / decoding, 10.0])
    assert list(all_in.x) == ["speculative"] and list(all_in.y) == [20.0]  # the run's wall time, recording included
    assert list(plain.data[-1].x) == ["speculative"]
    speed_up = 5 / decoding / 10.0
    summary = stats.summary_markdown(STEPS, stats.BaselineNumbers(5, 0.5, 5), seconds=0.25)
    assert f"speed-up | {speed_up:.2f}x" in summary


def test_the_speed_compared_with_plain_decoding_leaves_recording_out():
    recorded = [replace(s, record_ms=1000.0) for s in STEPS]
    assert stats.run_numbers(recorded).seconds == stats.run_numbers(STEPS).seconds
    assert stats.run_numbers(recorded).all_in_seconds == pytest.approx(stats.run_numbers(STEPS).seconds + 2.0)


# ---- replay -------------------------------------------------------------------------------------
def test_a_trace_round_trip_replays_identical_figures():
    trace = fx.trace()
    again = trace_from_json(trace_to_json(trace))
    for a, b in zip(trace.steps, again.steps, strict=True):
        assert json.loads(tree_figure.tree_figure(a).to_json()) == json.loads(tree_figure.tree_figure(b).to_json())
        assert node_figure.tests_table(a, 0) == node_figure.tests_table(b, 0)
    assert text.highlighted(again.steps) == text.highlighted(trace.steps)


# ---- checks on untrusted records -------------------------------------------------------------------
def test_hand_made_steps_have_no_problems_and_broken_ones_do():
    from dataclasses import replace

    from viz.checks import step_problems

    assert all(step_problems(s) == [] for s in STEPS)
    step = fx.step_residual()
    bad_status = replace(step, nodes=(step.nodes[0], replace(step.nodes[1], status="bogus"), *step.nodes[2:]))
    assert "unknown status 'bogus'" in step_problems(bad_status)[0]
    bad_parent = replace(step, nodes=(step.nodes[0], replace(step.nodes[1], parent=7), *step.nodes[2:]))
    assert "parents come first" in step_problems(bad_parent)[0]
    assert step_problems(replace(step, nodes=())) == ["step 1: the tree has no root"]


def test_strings_from_an_untrusted_trace_are_escaped_in_titles_and_hovers():
    from dataclasses import replace

    step = fx.step_residual()
    visit = replace(step.visits[0], tests=tuple(replace(t, label="<img src=x>") for t in step.visits[0].tests))
    evil = replace(step, verifier="<i>v</i>", visits=(visit, *step.visits[1:]))
    fig = tree_figure.tree_figure(evil)
    assert "&lt;i&gt;v&lt;/i&gt;" in fig.layout.title.text
    hovers = " ".join(h for t in fig.data if t.hovertext is not None for h in t.hovertext)
    assert "<img" not in hovers and "&lt;img src=x&gt;" in hovers
