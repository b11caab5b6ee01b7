"""Projector mode, the dark theme and the story's keys on the page and in the replay file, as a teacher uses
them: ?present=1 folds the controls away, enlarges the type and gives the story, the tree and the inspector the
whole width, the buttons switch it and the dark theme; ← → move the story, space plays it, n steps, and none of
those keys is taken from a text box."""

from __future__ import annotations

from dataclasses import replace

import pytest

from decoding.models.pairs import load_pair
from decoding.run import engine
from decoding.run.config import Branching, DecodeConfig
from tests.served import OUTPUT
from ui import replay_file
from ui.link_query import Link, link_query
from ui.session import Controls

pytestmark = pytest.mark.browser

TOY = replace(Controls(), pair="toy", prompt="the cat", verifier="rrs_wor", branching="3,2", seed=5, max_new_tokens=12)
STATUS = "document.querySelector('#status')?.innerText"
POSITION = "() => document.querySelector('#story-position').innerText"
VISIBLE = "(sel) => { const e = document.querySelector(sel); return !!e && e.getClientRects().length > 0; }"


def page_at(browser, url: str, width: int = 1440):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("#step-btn", state="attached", timeout=60_000)
    return context, page


def test_projector_mode_from_the_link_and_the_buttons(browser, app_url):
    context, page = page_at(browser, app_url + "?" + link_query(Link(TOY, 1)) + "&present=1")
    try:
        page.wait_for_function(f"{STATUS}?.includes('Step 1 of 1')", timeout=60_000)
        assert page.evaluate("document.documentElement.classList.contains('specscope-present')")
        assert not page.evaluate(VISIBLE, "#step-btn")  # the controls are folded away
        assert page.locator("#link-notice").inner_text().strip() == ""  # present=1 is no demo key: no notice
        width = page.evaluate("document.querySelector('#story').getBoundingClientRect().width")
        big = page.evaluate("parseFloat(getComputedStyle(document.querySelector('#story-text')).fontSize)")
        assert width > 0.8 * 1440 and big >= 20
        assert page.get_attribute("#present-toggle", "aria-pressed") == "true"
        page.screenshot(path=str(OUTPUT / "projector-toy.png"))

        page.click("#controls-toggle")  # the controls come back over projector mode
        assert page.evaluate(VISIBLE, "#step-btn")
        page.click("#controls-toggle")
        assert not page.evaluate(VISIBLE, "#step-btn")
        page.click("#present-toggle")  # projector mode off: the page as usual
        assert page.evaluate(VISIBLE, "#step-btn")
        assert page.evaluate("parseFloat(getComputedStyle(document.querySelector('#story-text')).fontSize)") < big
        assert page.get_attribute("#present-toggle", "aria-pressed") == "false"

        page.click("#theme-toggle")  # the dark theme: Gradio's own class, the figures inverted with it
        assert page.evaluate("document.body.classList.contains('dark')")
        assert page.evaluate("getComputedStyle(document.querySelector('#tree-plot .main-svg')).filter") != "none"
        page.click("#theme-toggle")
        assert not page.evaluate("document.body.classList.contains('dark')")
    finally:
        context.close()


def test_the_keys_move_the_story_play_it_and_step_but_never_while_typing(browser, app_url):
    context, page = page_at(browser, app_url + "?" + link_query(Link(TOY, 1)))
    try:
        page.wait_for_function(f"{STATUS}?.includes('Step 1 of 1')", timeout=60_000)
        n = int(page.evaluate(POSITION).split(" of ")[1])
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        assert page.evaluate(POSITION) == f"event 3 of {n}"
        page.keyboard.press("ArrowLeft")
        assert page.evaluate(POSITION) == f"event 2 of {n}"

        prompt = page.get_by_label("prompt", exact=True)  # typing: the keys are the text box's
        prompt.click()
        page.keyboard.press("End")
        page.keyboard.type(" n")
        page.keyboard.press("ArrowLeft")
        assert prompt.input_value() == "the cat n" and page.evaluate(POSITION) == f"event 2 of {n}"
        prompt.fill("the cat")

        page.locator("body").click(position={"x": 5, "y": 5})
        page.evaluate("() => { document.querySelector('#story-pace').value = '300'; }")
        page.keyboard.press("Space")  # plays to the end
        page.wait_for_function(f"({POSITION})() === 'event {n} of {n}'", timeout=n * 1_500 + 5_000)
        page.keyboard.press("n")  # n: the next Step
        page.wait_for_function(f"{STATUS}?.includes('Step 2 of 2')", timeout=60_000)
    finally:
        context.close()


def test_the_replay_file_opens_in_projector_mode_and_dark(browser, tmp_path):
    config = DecodeConfig(verifier="rrs_wor", shape=Branching((3, 2)), seed=5, max_new_tokens=12, chat=False)
    trace = engine.generate(load_pair("toy"), config, "the cat")
    path = tmp_path / "replay.html"
    path.write_text(replay_file.document(trace), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        page.goto(path.as_uri() + "?present=1&theme=dark#step-2")
        page.wait_for_selector("#story")
        classes = page.evaluate("document.documentElement.className")
        assert "present" in classes and "dark" in classes
        assert page.inner_text("#replay-step-position") == f"step 2 of {len(trace.steps)}"
        assert not page.evaluate(VISIBLE, ".replay-facts")
        assert page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)") >= 22
        page.screenshot(path=str(OUTPUT / "replay-projector-dark.png"))
        page.click("#present-toggle")
        page.click("#theme-toggle")
        assert page.evaluate("document.documentElement.className").strip() == ""
        assert page.evaluate(VISIBLE, ".replay-facts")
    finally:
        context.close()
