"""The Speed tab (ui/speed.py, viz/speed.py): from a live toy run, the calibrated costs and the run's own p/q
rows, it shows the chooser's verdict, every shape's exact tokens per step and the run's own shape; without a
run it says what to do in one line."""

from __future__ import annotations

from dataclasses import replace

import pytest

from decoding.speed import acceptance, calibrate, chooser
from tests.ui.live_toy import live_toy_run
from ui import run_stats, speed
from ui.run_cache import RunCache
from ui.session import Session
from viz import speed as speed_view
from viz import stats


@pytest.fixture
def page(tmp_path, monkeypatch):
    """(session after 4 Steps, the run cache, the page's views): the live toy run as the page makes it."""
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path))  # this test's own calibration cache
    views, runs, session = live_toy_run(4)
    return session, runs, views


@pytest.fixture
def session_and_runs(page):
    return page[:2]


def test_the_view_explains_a_live_run(session_and_runs):
    session, runs = session_and_runs
    text, figure = speed.explain(session, runs, progress=None)
    assert text.startswith("**On ") and "**This run, sd 1,1,1:**\n- predicted **" in text
    assert figure is not None and len(figure.data) >= 5
    assert "| sd 1,1,1 (this run) |" in text
    rows, seen, misses = speed.live_evidence(session, runs)
    known = seen.ones  # each Step showed its step: its theory was filled, and its acceptance logged
    recorded = acceptance.known_from_records(session.steps)  # what the shown records say: the same numbers
    assert len(known) == len(recorded) >= 4 and all(d >= 1 for d, _ in known)
    assert [d for d, _ in known] == [d for d, _ in recorded]
    assert [a for _, a in known] == pytest.approx([a for _, a in recorded])
    cal = calibrate.load_cached(calibrate.machine.machine_key("toy", "cpu"), None)
    assert cal is not None  # calibrated once, into this test's cache
    table = acceptance.table_from_rows(rows, (1, 2), known, {2: seen.ratio()})
    # with the calibration's chain steps: a floor's effect as they measured it (chooser.dynamic)
    table = replace(table, chain=cal.table(session.run.config["temperature"]).chain)
    assert f"Acceptance from {len(rows) + len(known)} visited nodes" in text
    best = chooser.choose(cal.costs, table)
    assert best.why() in text  # the verdict shown is the chooser's on this run's exact acceptance
    assert f"| sd 1,1,1 (this run) | {chooser.expected_tokens((1, 1, 1), table):.2f} |" in text  # exact E[tokens]


def test_without_a_run_the_view_says_what_to_do():
    text, figure = speed.explain(Session(), RunCache(), progress=None)
    assert text == "⚠️ press Step or Run first: the view predicts from this run's own p and q" and figure is None


def test_a_tree_run_of_width_three_is_explained_too(tmp_path, monkeypatch):
    """The app's default shape (rrs_wor 3,2,2): widths the calibration never measured are computed on the run."""
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path))
    _, runs, session = live_toy_run(2, verifier="rrs_wor", branching="3,2,2")
    text, figure = speed.explain(session, runs, progress=None)
    assert "**This run, rrs_wor 3,2,2:**\n- predicted **" in text and figure is not None
    # every shown step's rows were let go once its theory was filled; their numbers were kept (run/seen.py),
    # so the view reads this run's acceptance, never the calibration's (it did, on the app's default shape)
    _, seen, _ = speed.live_evidence(session, runs)
    assert len(seen.ones) >= 2 and 1 <= len(seen.wide) <= 2 * 2
    assert f"Acceptance from {len(seen.ones)} visited nodes of this run" in text


def test_the_measured_speed_up_is_the_steps_after_the_first_decoding_time(session_and_runs):
    """The first step pays the prompt's prefill and the app's records cost time a fast run never pays: the run's
    measured speed-up reads the draft + target + verify time of the steps after the first (it said 0.17x after one
    Step of the embedded pair, the prefill included)."""
    session, runs = session_and_runs
    speed.explain(session, runs, progress=None)  # calibrates the toy pair into this test's cache
    cal = calibrate.load_cached(calibrate.machine.machine_key("toy", "cpu"), None)
    later = session.trace.steps[1:]
    want = (sum(s.n_emitted for s in later) / sum(s.decode_ms for s in later) * 1000) * cal.costs.alone_ms() / 1000
    got, how = speed.measured_speedup(session, cal)
    assert got == pytest.approx(want) and f"its {len(later)} steps after the first" in how
    first_only = replace(session, trace=replace(session.trace, steps=session.trace.steps[:1]))
    assert speed.measured_speedup(first_only, cal) == (None, "measured from the steps after the first: Step again")


def test_a_run_begun_before_the_plan_is_measured_against_the_stock_target_alone(session_and_runs):
    """The Speed tab puts this machine's product plan on when it calibrates; a run begun before decoded with the
    stock products (its pair's describe() has no "products"), so its measured speed-up reads against the stock
    one-row forward, not the planned one (which made the app's default run read 0.18x); a run begun with the
    plan on, against the planned one."""
    from decoding.run.costs import StepCosts

    session, runs = session_and_runs
    speed.explain(session, runs, progress=None)
    cal = calibrate.load_cached(calibrate.machine.machine_key("toy", "cpu"), None)
    stock = StepCosts(((1, 3 * cal.costs.target_ms(1)),), cal.costs.draft, cal.costs.overhead)
    planned = replace(cal, plan={1: "onednn"}, stock_costs=stock)
    later = session.trace.steps[1:]
    speed_of_run = sum(s.n_emitted for s in later) / sum(s.decode_ms for s in later) * 1000
    assert "products" not in session.run.pair
    got, how = speed.measured_speedup(session, planned)
    assert got == pytest.approx(speed_of_run * stock.alone_ms() / 1000) and "stock products" in how
    began_planned = replace(session, run=replace(session.run, pair={**session.run.pair, "products": "onednn"}))
    got, how = speed.measured_speedup(began_planned, planned)
    assert got == pytest.approx(speed_of_run * cal.costs.alone_ms() / 1000) and "calibrated target alone (" in how
    assert how.endswith(" ms a token, not run)")


def test_both_tabs_show_the_same_speed_up_against_the_target_alone_you_ran(page):
    """Run statistics said 0.42x (decoding time) where the Speed tab said 0.18x "against the target alone you ran"
    (the wall time, recording included) for the same run: one definition now (viz/stats.against_baseline), both
    numbers in both tabs, each saying what it is."""
    session, runs, views = page
    out = run_stats.baseline(views, session, progress=None)  # the button in Run statistics, as the page calls it
    session = out[views.state]
    panel = run_stats._panel(views)
    table = out[panel.summary]
    text, _ = speed.explain(session, runs, progress=None)
    seconds = session.trace.summary.seconds
    run, base = stats.run_numbers(session.steps, seconds), session.baseline.tokens / session.baseline.seconds
    decoding, wall = run.tokens_per_second / base, run.all_in_tokens_per_second / base  # recording excluded, included
    assert wall < decoding  # the recording costs time: two different numbers
    assert f"| speed-up | {decoding:.2f}x (decoding time only) |" in table
    assert f"| speed-up, wall time incl. the app's recording | {wall:.2f}x |" in table
    assert (f"- measured **{decoding:.2f}x** against the target alone you ran, decoding time only (draft + "
            f"target + verify); {wall:.2f}x in wall time incl. the app's recording") in text
    assert stats.against_baseline(session.steps, session.baseline, seconds) == stats.Against(
        pytest.approx(decoding), pytest.approx(wall), pytest.approx(run.all_in_seconds - run.seconds))
    before, _ = speed.explain(page[0], runs, progress=None)  # no baseline yet: the tab says how to get one
    assert "- measured against the target alone you ran: press **Compare with the target alone**" in before


def test_the_figure_gives_each_chart_room_and_a_legend(session_and_runs):
    """At 800 px the three side-by-side titles overlapped and the legend (the cost curve's only) sat on the middle
    chart's labels: the curve now spans the top with its legend under its axis; the shapes are rows (labels
    read across) in two charts below, whose legend says what blue and pink are."""
    session, runs = session_and_runs
    _, fig = speed.explain(session, runs, progress=None)
    layout = fig.layout
    titles = {a.text: a.y for a in layout.annotations}
    curve, tokens, speedup = (titles[t] for t in ("cost of a target forward over N rows, x one row (log scale)",
                                                  "tokens per step<br>(exact, this run)",
                                                  "predicted speed-up<br>over the target alone"))
    assert tokens == speedup < layout.yaxis.domain[0] < curve  # the curve's title alone on its row
    assert layout.yaxis2.domain[1] < layout.legend.y < layout.yaxis.domain[0]  # between the rows, not on labels
    assert layout.legend2.y < 0  # under the bottom charts' axes
    by_legend = {}
    for trace in fig.data:
        by_legend.setdefault(trace.legend or "legend", set()).add(trace.name)
    assert by_legend["legend"] == {"stock products", "with this machine's plan", "one draft level over N parents"}
    assert by_legend["legend2"] >= {"tokens per step (exact)", speed_view.MEASURED}
    assert by_legend["legend2"] & {speed_view.FASTER, speed_view.SLOWER}  # what the speed-up bars' colours mean
    shapes = [t for t in fig.data if t.orientation == "h"]
    assert shapes[0].name == "tokens per step (exact)" and "sd 1,1,1 (this run)" in shapes[0].y
    assert all(len(t.x) == len(t.y) for t in shapes)  # shape names on the y axis: no rotated, clipped labels


def test_the_cost_curves_log_axis_is_labelled_1_2_5_over_the_bars(session_and_runs):
    """A draft head's level (0.07x a forward) and a verify (2x) span two decades: plotly alone labelled every
    digit of both (a column of small 2 3 4 5 6 7 8 9 between 0.1 and 1)."""
    from viz.speed import log_ticks

    assert log_ticks([0.07, 1.0, 1.9]) == [0.05, 0.1, 0.2, 0.5, 1, 2]
    assert log_ticks([1.0, 1.2]) == [1, 2] and log_ticks([1.0]) == [1]
    assert log_ticks([1.0, 815.0]) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]  # a busy machine's bar: the top
    assert log_ticks([0.003, 0.4]) == [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5]  # and the bottom covered
    session, runs = session_and_runs
    _, fig = speed.explain(session, runs, progress=None)
    ticks = list(fig.layout.yaxis.tickvals)
    bars = [y for t in fig.data if t.type == "bar" and t.orientation != "h" for y in t.y]  # the cost curve's
    assert ticks == log_ticks(bars) and ticks[0] <= min(bars) and ticks[-1] >= max(bars)
    assert list(fig.layout.yaxis.ticktext) == [f"{t:g}" for t in ticks]


def test_the_tab_explains_in_short_paragraphs():
    paragraphs = [p for p in speed_view.EXPLAIN.split("\n") if p.strip()]
    assert len(paragraphs) >= 5 and all(len(p) < 520 for p in paragraphs)  # one 1900-character block before
    assert sum(p.startswith("- ") for p in paragraphs) >= 4


def test_the_toy_runs_facts_have_the_acceptance_per_depth_the_chooser_used_and_no_card(session_and_runs):
    """The tab shows A(1, d) of the table the chooser predicted with (here this run's own p and q); the toy pair
    has no trained head, so no card."""
    from decoding.run.config import DecodeConfig
    from decoding.run.seen import fixed_depth
    from decoding.speed import pair_acceptance

    session, runs = session_and_runs
    facts = speed.facts_of(session, runs, False, None)
    depth = fixed_depth(DecodeConfig.from_dict(session.run.config))
    rows, seen, missed = speed.live_evidence(session, runs, depth)
    table = acceptance.table_from_rows(rows, pair_acceptance.WIDTHS, seen.ones + missed)
    assert depth == 3 and facts.nodes > 0 and facts.card is None
    assert facts.depth_rates == pytest.approx(table.rates[1]) and len(facts.depth_rates) == depth
    text = speed_view.summary_markdown(facts)
    assert "| A(1, d) | " + " | ".join(f"{a:.3f}" for a in facts.depth_rates) + " |" in text
    assert "from this run's own p and q" in text and "card" not in text


def shipped_card_json() -> dict:
    """The shipped head's card as head.json has it, read here without the code under test."""
    import json

    from decoding.models.head.weights import CONFIG, HEAD_DIR

    return json.loads((HEAD_DIR / CONFIG).read_text())["about"]["held_out"]


def test_the_card_reader_returns_the_shipped_heads_numbers():
    from decoding.models.head import weights

    want = shipped_card_json()
    assert weights.card() == want
    for temperature, near in ((0.0, "0.0"), (0.3, "0.0"), (0.5, "0.8"), (1.0, "0.8")):
        card = speed.head_card("embedded-head", temperature)
        assert card.temperature == float(near) and (card.prompts, card.new_tokens) == (want["count"],
                                                                                      want["new_tokens"])
        for row, side in zip(card.rows, ("shipped", "new"), strict=True):  # the head before, then this head
            at = want["acceptance"][side][near]
            assert row.by_depth == tuple(at["by_depth"])
            assert (row.chain, row.tree) == (at["expected"]["1,1,1"], at["expected"]["4,2,2,1"])
    assert speed.head_card("toy", 0.0) is None and speed.head_card("embedded", 0.0) is None


def test_the_shipped_card_is_rendered_with_the_jsons_numbers(session_and_runs):
    session, runs = session_and_runs
    facts = replace(speed.facts_of(session, runs, False, None), card=speed.head_card("embedded-head", 0.8))
    text = speed_view.summary_markdown(facts)
    want = shipped_card_json()
    assert f"on {want['count']} prompts x {want['new_tokens']} new tokens, T = 0.8 (the nearest" in text
    for name, side in (("the head before", "shipped"), ("this head", "new")):
        at = want["acceptance"][side]["0.8"]
        cells = [f"{a:.3f}" for a in at["by_depth"][:4]] + [f"{at['expected'][k]:.2f}" for k in ("1,1,1", "4,2,2,1")]
        assert f"| {name} | " + " | ".join(cells) + " |" in text
    assert text.index("| the head before |") < text.index("| this head |")


def test_a_head_without_a_card_shows_none(tmp_path):
    """An older head or a user's own (no "held_out" in head.json), no head.json, or a card missing a field: no
    card, never an error."""
    import json

    from decoding.models.head import weights

    assert weights.card(tmp_path) is None and speed.head_card("embedded-head", 0.0, tmp_path) is None
    about = json.loads((weights.HEAD_DIR / weights.CONFIG).read_text())
    del about["about"]["held_out"]
    (tmp_path / weights.CONFIG).write_text(json.dumps(about))
    assert weights.card(tmp_path) is None and speed.head_card("embedded-head", 0.0, tmp_path) is None
    (tmp_path / weights.CONFIG).write_text("{not json")
    assert weights.card(tmp_path) is None
    broken = shipped_card_json()
    del broken["acceptance"]["new"]["0.0"]["expected"]
    assert speed.card_at(broken, 0.0) is None
    assert speed.card_at(broken, 0.8) is not None  # the other temperature is whole
