"""The real page in headless Chromium: launch the app (toy pair) on a free port, click Step, wait
for the tree, take a screenshot (tests/output/screenshot.png; with SPECSCOPE_UPDATE_SCREENSHOT=1
also assets/screenshot.png, the README's picture)."""

from __future__ import annotations

import os
import shutil
import urllib.request

import pytest

from tests.browser.waits import wait_status, wait_step
from tests.served import OUTPUT, ROOT, open_tab, opened

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(browser, app_url):
    with opened(browser, app_url) as page:
        yield page


def test_plotly_is_loaded_and_has_drawn_off_screen_before_the_first_step(page):
    """Else plotly.js loads, parses and first draws inside the second Step (issue 8: a 1.3 s click)."""
    page.wait_for_function("() => window.Plotly && document.querySelector('#plotly-warmup .scatterlayer .point')"
                           " && document.querySelector('#plotly-warmup .barlayer .point')", timeout=30_000)
    box = page.locator("#plotly-warmup").bounding_box()
    assert box["width"] > 0 and box["x"] + box["width"] < 0  # drawn at a real size, never seen


# Every plotly layout pass (supplyDefaults) assigns a new gd._fullLayout: count those assignments per plot.
COUNT_LAYOUTS = """() => {
  window.__layouts = {};
  const count = (gd) => {
    const host = gd.closest && gd.closest('[id]');
    const key = host ? host.id : '?';
    window.__layouts[key] = (window.__layouts[key] || 0) + 1;
  };
  Object.defineProperty(HTMLDivElement.prototype, '_fullLayout', {configurable: true, get() { return undefined; },
    set(value) {
      let current = value;
      count(this);
      Object.defineProperty(this, '_fullLayout', {configurable: true, get() { return current; },
        set(next) { current = next; count(this); }});
    }});
}"""


def test_a_step_lays_each_figure_out_once(page):
    """Gradio's Plot drew every new figure twice (its outgoing component, then the new one: a {#key}
    remount), and the node figure's automargin laid it out a second time: 4-6 plotly layouts per Step,
    most of a toy Step's click-to-render time. assets/plotly_once.js and fixed margins make it one each."""
    page.wait_for_function("() => window.Plotly", timeout=30_000)
    page.evaluate(COUNT_LAYOUTS)
    page.click("#step-btn")
    wait_step(page, 1)
    page.wait_for_timeout(500)  # a resize relayout comes 100 ms after a draw
    page.evaluate("() => { window.__layouts = {}; }")  # the first Step also draws the page's first figures
    page.click("#step-btn")
    wait_step(page, 2)
    page.wait_for_timeout(500)
    assert page.evaluate("() => window.__layouts") == {"tree-plot": 1, "node-plot": 1}


def test_steps_are_not_kept_in_the_browsers_storage(page):
    """gradio 6's run history kept every event's inputs and outputs (each Step's figures) in localStorage,
    parsed and rewritten on every click, so a Step got slower the longer a session ran."""
    page.click("#step-btn")
    wait_status(page, "Step")
    keys = page.evaluate("() => Object.keys(window.localStorage).filter(k => k.startsWith('gradio:run-history'))")
    assert keys == []


def test_step_draws_the_tree_and_the_screenshot_is_saved(page):
    page.click("#reset-btn")
    wait_status(page, "Reset", timeout_ms=30_000)
    for n in (1, 2, 3):
        page.click("#step-btn")
        status = wait_step(page, n)
    assert status.splitlines()[-1] == "Machine details"  # closed: the dtype and products stay one click away
    page.wait_for_selector("#tree-plot .scatterlayer .point", timeout=30_000)
    assert page.locator("#tree-plot .scatterlayer .point").count() >= 4  # root, drafts, emitted token
    assert page.locator("#node-plot .barlayer .point").count() > 0
    # plotly's drag layer covers the markers, so hover by moving the mouse onto one: the lowest
    # marker in the left half, whose label then covers little of the tree in the screenshot
    page.locator("#tree-plot").scroll_into_view_if_needed()
    plot = page.locator("#tree-plot").bounding_box()
    points = page.locator("#tree-plot .scatterlayer .point")
    boxes = [points.nth(i).bounding_box() for i in range(points.count())]
    box = max((b for b in boxes if b["x"] < plot["x"] + 0.45 * plot["width"]), key=lambda b: b["y"])
    page.mouse.move(box["x"] - 40, box["y"] - 40)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=5)
    page.wait_for_selector("#tree-plot .hoverlayer .hovertext", state="attached", timeout=10_000)
    hover = page.locator("#tree-plot .hoverlayer").text_content()
    assert "token" in hover and "status" in hover
    assert "Traceback" not in page.content()
    shot = OUTPUT / "screenshot.png"  # with the hover label showing: the README explains it
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    if os.environ.get("SPECSCOPE_UPDATE_SCREENSHOT"):  # refresh the README's picture on request only
        shutil.copyfile(shot, ROOT / "assets" / "screenshot.png")


def test_the_slider_replays_an_earlier_step(page):
    box = page.locator("#step-slider input[type=number]")
    box.fill("1")
    box.press("Enter")
    wait_status(page, "Step 1 of 3", timeout_ms=30_000)
    page.wait_for_selector("#tree-plot .scatterlayer .point", timeout=30_000)


def test_a_bad_tree_shape_shows_a_message_and_the_page_stays_up(page):
    box = page.get_by_label("children per node at each depth")
    box.fill("3,banana")
    page.click("#step-btn")
    assert "comma-separated positive integers" in wait_status(page, "⚠️", timeout_ms=30_000)
    box.fill("3,2")
    page.click("#step-btn")
    wait_step(page, 1)


def test_run_streams_to_the_end_and_the_slider_replays(page):
    page.click("#reset-btn")
    wait_status(page, "Reset", timeout_ms=30_000)
    page.click("#run-btn")
    status = wait_status(page, "finished (", timeout_ms=120_000)
    assert "Step " in status and "Traceback" not in page.content()


def test_export_then_import_through_the_page(page, tmp_path):
    page.click("#reset-btn")
    page.click("#step-btn")
    wait_step(page, 1)
    open_tab(page, "Trace: export / import")
    page.click("#export-btn")
    link = page.wait_for_selector("#trace-file a[href]", timeout=30_000)
    href = link.get_attribute("href")
    url = href if href.startswith("http") else page.url.rstrip("/") + "/" + href.lstrip("/")
    body = urllib.request.urlopen(url, timeout=10).read()
    assert b'"format": "specscope-trace"' in body
    saved = tmp_path / "trace.json"
    saved.write_bytes(body)
    page.click("#reset-btn")
    wait_status(page, "Reset", timeout_ms=30_000)
    page.set_input_files("input[type=file][accept='.json']", str(saved))  # the UploadButton's input
    wait_status(page, "Imported a trace of 1 steps", timeout_ms=30_000)
    assert page.locator("#tree-plot .scatterlayer .point").count() >= 2
