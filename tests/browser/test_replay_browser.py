"""The replay page with no server (viz/replay_html.py), as a teacher uses it: a link's run on the page, the
Trace tab's "Export a replay page" button, then the downloaded file opened from file:// in a fresh browser
context whose every non-file request is aborted. Every event of every step is played to its end (keys and
buttons), the narration is the live page's for the same records (each step shown on the page by the replay
slider), the tree highlight and the inspector follow each event, and the console stays clean.

The toy pair runs in the default loop; the default (embedded) pair's 3-step run, the issue's own check, is
`slow` (it launches the app on the embedded pair)."""

from __future__ import annotations

import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from tests.served import OUTPUT, open_tab, opened, served
from ui.link_query import Link, link_query
from ui.session import Controls

pytestmark = pytest.mark.browser

TOY = replace(Controls(), pair="toy", prompt="the cat", verifier="rrs_wor", branching="3,2", seed=5, max_new_tokens=12)
STATUS = "document.querySelector('#status')?.innerText"
EVENTS = "() => Array.from(document.querySelectorAll('#story-events > li')).map(li => li.textContent)"
POSITION = "() => document.querySelector('#story-position').innerText"
SHOWN_POINTS = """() => Array.from(document.querySelectorAll('#tree-plot svg g.point[data-node]'))
  .filter(g => g.style.opacity !== '0.15').map(g => Number(g.dataset.node)).sort((a, b) => a - b)"""
SHOWN_PANEL = """() => Array.from(document.querySelectorAll('#replay-stage .node-panel'))
  .filter(p => !p.hidden).map(p => p.dataset.node)"""
CURRENT = "() => document.querySelector('#story-events > li:nth-child(' + (Number(document.querySelector('#story')" \
          ".dataset.at) + 1) + ')')"


def page_stories(page, n_steps: int) -> list[list[str]]:
    """Each step's events as the live page tells them: the replay slider shows step i, then its story is read."""
    told = []
    for i in range(1, n_steps + 1):
        box = page.locator("#step-slider input[type=number]")
        box.fill(str(i))
        box.press("Enter")
        page.wait_for_function(f"document.querySelector('#story')?.dataset.key?.startsWith('{i}:')", timeout=30_000)
        told.append(page.evaluate(EVENTS))
    return told


def exported_replay(page, folder: Path) -> Path:
    open_tab(page, "Trace: export / import")
    page.evaluate("() => document.querySelector('#trace-file a[href]')?.remove()")  # wait for THIS export's link
    page.click("#export-html-btn")
    href = page.wait_for_selector("#trace-file a[href]", timeout=60_000).get_attribute("href")
    assert "specscope-replay-" in href and href.endswith(".html")
    url = href if href.startswith("http") else page.url.split("?")[0].rstrip("/") + "/" + href.lstrip("/")
    path = folder / "replay.html"
    path.write_bytes(urllib.request.urlopen(url, timeout=30).read())
    return path


def offline_context(browser, width: int = 1440, height: int = 1000):
    """A browser context where only file:// loads; every other request is recorded and aborted."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.blocked = []

    def route(request_route):
        if request_route.request.url.startswith("file:"):
            request_route.continue_()
        else:
            context.blocked.append(request_route.request.url)
            request_route.abort()
    context.route("**/*", route)
    return context


def play_every_step(page, expected: list[list[str]]) -> None:
    """Every step in turn (n, the next step), every event of it with →: its text, position, highlight, inspector."""
    assert page.inner_text("#replay-step-position") == f"step 1 of {len(expected)}"
    for s, events in enumerate(expected, start=1):
        if s > 1:
            page.keyboard.press("n")
        page.wait_for_function(f"document.querySelector('#story')?.dataset.key?.startsWith('{s}:')", timeout=5_000)
        assert page.inner_text("#replay-step-position") == f"step {s} of {len(expected)}"
        assert page.evaluate(EVENTS) == events, f"step {s}: the file's events differ from the live page's"
        n = len(events)
        for i in range(1, n + 1):
            if i > 1:
                page.keyboard.press("ArrowRight")
            assert page.evaluate(POSITION) == f"event {i} of {n}"
            assert page.inner_text("#story-text") == events[i - 1]
            li = page.evaluate_handle(CURRENT)
            focus = sorted(int(x) for x in (li.evaluate("e => e.dataset.focus") or "").split(",") if x)
            if i == 1:  # as on the page: the step opens undimmed, the inspector at the last verified node
                continue
            assert page.evaluate(SHOWN_POINTS) == focus, f"step {s} event {i}: the highlight is not the event's"
            assert page.evaluate(SHOWN_PANEL) == [li.evaluate("e => e.dataset.node")], \
                f"step {s} event {i}: the inspector does not show the event's node"
        page.keyboard.press("ArrowRight")  # past the end: stays at the last event
        assert page.evaluate(POSITION) == f"event {n} of {n}"
        page.keyboard.press("ArrowLeft")
        assert page.evaluate(POSITION) == f"event {max(1, n - 1)} of {n}"


def replays_offline(browser, path: Path, expected: list[list[str]], shot: str) -> None:
    context = offline_context(browser)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        page.wait_for_selector("#story")
        play_every_step(page, expected)
        # ▶▶ (space) plays the last step's story from its start to its end at the quickest pace
        page.evaluate("() => { document.querySelector('#story-pace').value = '300'; }")
        page.keyboard.press("Space")
        n = len(expected[-1])
        page.wait_for_function(f"({POSITION})() === 'event {n} of {n}' && "
                               "document.querySelector('#story-play').textContent === '▶▶'", timeout=n * 1_500 + 5_000)
        page.keyboard.press("p")  # the previous step
        assert page.inner_text("#replay-step-position") == f"step {len(expected) - 1} of {len(expected)}" \
            if len(expected) > 1 else True
        page.screenshot(path=str(OUTPUT / shot), full_page=True)
        assert errors == [], errors
        assert context.blocked == [], f"the file asked the network for {context.blocked}"
    finally:
        context.close()


def test_the_replay_page_of_a_links_run_plays_offline_with_the_pages_words(browser, app_url, tmp_path):
    steps = 3
    with opened(browser, app_url + "?" + link_query(Link(TOY, steps))) as page:
        page.wait_for_function(f"{STATUS}?.includes('Step {steps} of {steps}')", timeout=60_000)
        live = page_stories(page, steps)
        path = exported_replay(page, tmp_path)
    assert all(len(events) >= 4 for events in live)
    replays_offline(browser, path, live, "replay-toy.png")


@pytest.mark.slow
def test_the_default_pairs_three_step_run_replays_offline(browser, tmp_path):
    """The issue's check: the default (embedded) pair, no control touched but the steps, 3 Steps."""
    with served(log_name="app-replay.log", timeout_s=180) as server, opened(browser, server.url) as page:
        for n in range(1, 4):
            page.click("#step-btn")
            page.wait_for_function(f"{STATUS}?.includes('Step {n} of {n}')", timeout=180_000)
        live = page_stories(page, 3)
        path = exported_replay(page, tmp_path)
    assert path.stat().st_size < 5 * 1024 * 1024
    replays_offline(browser, path, live, "replay-embedded.png")
