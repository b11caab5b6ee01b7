"""The Run statistics tab as the page draws it (ui/run_stats.py, viz/stats.py): what it says before any Step,
what each chart's legend and title say before and after "Compare with the target alone", and the table's words."""

from __future__ import annotations

import pytest

from tests.ui.live_toy import live_toy_run
from ui import run_stats
from ui.session import Session
from viz import stats


@pytest.fixture(scope="module")
def page():
    """(views, the run cache, the session after 3 Steps): the live toy run as the page makes it."""
    return live_toy_run(3)


def test_before_any_step_the_tab_says_what_to_press(page):
    """It showed the button and an empty box: the tab opened on a fresh page now says what to press."""
    views, runs, _ = page
    panel = run_stats._panel(views)
    opened = run_stats.tab_selected(panel, Session(), run_stats.LABEL, runs)
    assert opened[panel.plot] is None
    assert opened[panel.summary].startswith("Press **Step** or **Run** first")
    assert "Compare with the target alone" in opened[panel.summary]


def _legends(fig) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for trace in fig.data:
        out.setdefault(trace.legend or "legend", set()).add(trace.name)
    return out


def test_each_chart_has_its_own_legend_and_readable_texts(page):
    """One combined legend read as if it covered all four charts; the speed bars' texts ran vertical and tiny
    ("decoding: 8 tokens, 3 target forwards"); the counts "3/3" sat on the α markers."""
    views, runs, session = page
    panel = run_stats._panel(views)
    fig = run_stats.tab_selected(panel, session, run_stats.LABEL, runs)[panel.plot]
    legends = _legends(fig)
    assert legends == {
        "legend": {"tokens per target forward", "expected (exact, this tree)"},
        "legend2": {"observed: accepted / visited", "exact α (mean)", "optimal α for the law"},
        "legend3": {"observed, running mean", "expected, running mean"},
        "legend4": {"speculative, wall time incl. the app's recording", "decoding time only (grey: target alone)"}}
    layout = fig.layout
    for name in ("legend", "legend2"):  # under the top charts' axes, above the bottom charts
        assert layout.yaxis3.domain[1] < layout[name].y < layout.yaxis.domain[0]
    speed_bars = [t for t in fig.data if t.legend == "legend4"]
    assert all(t.textangle == 0 and all(len(x) <= 6 for x in t.text) for t in speed_bars)  # numbers only
    assert all(t.hovertext for t in speed_bars)  # the counts moved to the hover
    depth = next(t for t in fig.data if t.name == "observed: accepted / visited")
    assert depth.text is None and all("/" in tick for tick in layout.xaxis2.ticktext)  # counts under the ticks


def test_the_speed_chart_says_what_it_compares_before_and_after_the_baseline(page):
    """Before the baseline the chart was titled "vs plain decoding" with no plain-decoding bar."""
    views, runs, session = page
    panel = run_stats._panel(views)
    before = run_stats.tab_selected(panel, session, run_stats.LABEL, runs)
    titles = [a.text for a in before[panel.plot].layout.annotations]
    assert "speed of this run" in titles and stats.PRESS_BASELINE in titles
    bars = [y for t in before[panel.plot].data if t.legend == "legend4" for y in t.y]
    assert before[panel.plot].layout.yaxis4.range[1] >= 1.6 * max(bars)  # the note above the bars, not on them
    assert "| target alone (plain decoding) | press **Compare with the target alone** to run it |" in \
        before[panel.summary]
    after = run_stats.baseline(views, session, progress=None)
    titles = [a.text for a in after[panel.plot].layout.annotations]
    assert "speed vs plain decoding<br>(the target alone)" in titles and stats.PRESS_BASELINE not in titles
    assert list(after[panel.plot].layout.xaxis4.ticktext) == ["speculative<br>(this run)",
                                                              "target alone<br>(plain decoding)"]


def test_the_table_names_its_columns_and_explains_its_rows(page):
    """An empty header cell, and "steps (target forwards) 3 (3)" with no explanation."""
    views, runs, session = page
    panel = run_stats._panel(views)
    table = run_stats.tab_selected(panel, session, run_stats.LABEL, runs)[panel.summary]
    assert table.startswith("| this run | value |\n|---|---|\n| steps | 3 |\n")
    assert "| target forwards | 3 (one per step: the whole tree in one forward) |" in table
    assert "| tokens / s, decoding time only (draft + target + verify) |" in table
    assert "| tokens / s, wall time incl. the app's recording |" in table
