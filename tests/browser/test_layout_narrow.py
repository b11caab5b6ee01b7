"""The main view's layout in headless Chromium (toy pair): at 800 px the controls and the step's views stack,
so the tree, the node chart and the tests table each get the page's whole width (two columns left them
~380 px: titles cut, one letter per table line); at 1440 px the two columns stay side by side. An empty
plot takes no room (no placeholder icon) before a Step, a run or a lab check; the story's controls read
as disabled until a step has a story; a dropdown's long chosen label is shown whole (app.CSS,
assets/story.js, assets/select_label.js)."""

from __future__ import annotations

import pytest

from tests.browser.waits import wait_step, wait_text
from tests.served import open_tab, opened

pytestmark = pytest.mark.browser

DISPLAY = "(s) => getComputedStyle(document.querySelector(s)).display"
WIDTH = "(s) => document.querySelector(s).getBoundingClientRect().width"
POSITION = "document.querySelector('#story-position').innerText"
# headers whose words stick out of their column (cut by the next one)
CLIPPED_HEADERS = """Array.from(document.querySelectorAll('#tests-table th')).filter(th => {
  const span = th.querySelector('span.header'); if (!span) return false;
  const r = document.createRange(); r.selectNodeContents(span);
  return Array.from(r.getClientRects()).some(b => b.right > th.getBoundingClientRect().right + 0.5);
}).map(th => th.innerText)"""
STORY_CONTROLS = ("Array.from(document.querySelectorAll('#story .story-bar button, #story-pace'))"
                  ".map(c => [c.disabled, Number(getComputedStyle(c.closest('button, label')).opacity)])")


def step(page) -> str:
    """Step once, until the step's views are drawn; the status line as the wait for it saw it."""
    page.click("#step-btn")
    status = wait_step(page, 1)
    page.wait_for_selector("#tree-plot .scatterlayer .point", timeout=30_000)
    page.wait_for_selector("#node-plot .js-plotly-plot", timeout=30_000)
    page.wait_for_function("document.querySelectorAll('#tests-table .virtual-row').length > 0", timeout=30_000)
    return status


def test_at_800_px_each_view_of_the_step_takes_the_pages_width(browser, app_url):
    with opened(browser, app_url, width=800, height=1000) as page:
        for plot in ("#tree-plot", "#generated-text", "#node-plot"):
            page.wait_for_selector(plot, state="attached", timeout=30_000)  # the page may still be building it
            assert page.evaluate(DISPLAY, plot) == "none", f"{plot} shows a placeholder before the first Step"
        controls = page.evaluate(STORY_CONTROLS)
        assert len(controls) == 4 and all(disabled and opacity < 0.6 for disabled, opacity in controls)
        assert page.evaluate(POSITION) == "event 0 of 0"

        step(page)
        content = page.evaluate(WIDTH, "#main-row")  # the page's content width
        for view in ("#tree-plot", "#node-plot", "#tests-table"):
            assert page.evaluate(WIDTH, view) >= 0.9 * content, f"{view} is narrower than the page"
        assert page.evaluate(CLIPPED_HEADERS) == []  # every header whole in its column (the table scrolls)

        page.wait_for_function(f"{STORY_CONTROLS}.every(([disabled, opacity]) => !disabled && opacity === 1)",
                               timeout=5_000)  # enabled, at full opacity once any transition is over
        first, told = page.evaluate(POSITION), page.inner_text("#story-text")
        assert first.startswith("event 1 of ")
        page.click("#story-next")
        assert page.evaluate(POSITION) == first.replace("event 1", "event 2")
        assert page.inner_text("#story-text") != told


def test_at_1440_px_the_columns_stay_side_by_side_and_the_verifier_reads_whole(browser, app_url):
    with opened(browser, app_url, width=1440, height=1000) as page:
        step(page)
        left, right = page.evaluate("Array.from(document.querySelectorAll('#main-row > .column'))"
                                    ".map(c => { const b = c.getBoundingClientRect(); return [b.x, b.y, b.width]; })")
        assert right[0] >= left[0] + left[2] and abs(right[1] - left[1]) < 1  # beside it, not below
        assert left[2] < 0.4 * page.evaluate(WIDTH, "#main-row")
        tree = page.locator("#tree-plot").bounding_box()
        assert tree["x"] >= right[0] and tree["width"] >= 0.9 * right[2]

        chosen = page.locator('input[aria-label="verifier"]').first
        page.wait_for_function("document.querySelector('.specscope-long > .specscope-label')", timeout=5_000)
        label = chosen.locator("xpath=following-sibling::div[contains(@class, 'specscope-label')]")
        title = "Recursive rejection sampling without replacement (rrs_wor)"  # wider than the column at 1440 px
        assert label.inner_text() == chosen.input_value() == title
        assert label.evaluate("l => getComputedStyle(l).display") == "block"
        assert label.evaluate("l => l.scrollWidth <= l.clientWidth && l.getBoundingClientRect().height > 30")


def test_no_empty_plot_shows_a_placeholder_in_the_tabs_before_use(browser, app_url):
    with opened(browser, app_url, width=1440, height=1000) as page:
        open_tab(page, "Run statistics")
        page.wait_for_selector("#stats-plot", state="attached", timeout=30_000)
        assert page.evaluate(DISPLAY, "#stats-plot") == "none"
        open_tab(page, "Verifier lab")
        page.wait_for_selector("#lab-tradeoff-plot", state="attached", timeout=30_000)
        assert [page.evaluate(DISPLAY, s) for s in ("#lab-seq-plot", "#lab-tradeoff-plot")] == ["none", "none"]
        open_tab(page, "Speed")
        page.click("#speed-show")
        wait_text(page, "#speed-summary", "⚠️", timeout_ms=30_000)
        assert page.evaluate(DISPLAY, "#speed-plot") == "none"  # the "press Step" warning, and no empty chart
