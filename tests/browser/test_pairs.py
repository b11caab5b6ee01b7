"""Every pair a user can pick without a hub, driven as a person does, each from a fresh page load:
the default (embedded) with no control touched, embedded-head, lookup, toy, and custom with two local folders typed
into the boxes (tiny llama folders with no EOS token: random weights would often end the run at step 1).
Step three times ("Step 3 of 3", no ⚠️, the tree drawn), Run to the end (a small
max-new-tokens set on the slider), then the slider replays step 1."""

from __future__ import annotations

import re
import time

import pytest
from playwright import sync_api

from tests.browser import waits
from tests.conftest import save_tiny_llama
from tests.served import opened, served

pytestmark = pytest.mark.browser
ALPHA_HOVER = re.compile(r"(exact α = |α ≈ )\d.* optimal for this law = \d")
LOAD_EVENT_S = 8.0  # how long a fresh page's load event is watched for a traceback
ALPHA_TITLE = re.compile(r"(exact α = |α ≈ )\d.*\(optimal \d")


@pytest.fixture(scope="module")
def default_app():
    """The app as `./specscope app` starts it: the embedded pair preselected (one process for all pairs)."""
    with served(log_name="app-pairs.log", timeout_s=120) as server:
        yield server


@pytest.fixture(scope="module")
def default_app_url(default_app) -> str:
    return default_app.url


@pytest.fixture
def page(browser, default_app_url):
    """A fresh page load: a new context, so no state survives from another test."""
    with opened(browser, default_app_url) as page:
        yield page


def test_a_fresh_page_load_leaves_no_traceback_in_the_log(default_app, page):
    """Every plain page load ran the link handler, which answered `{}`: one value for 35 outputs to gradio,
    a traceback in the server's log at each load while the page looked fine."""
    page.wait_for_function("() => document.querySelector('#link-notice') !== null")
    deadline = time.monotonic() + LOAD_EVENT_S  # the load event runs after the page is up (it took ~1 s)
    while time.monotonic() < deadline:
        assert "Traceback" not in default_app.log.read_text(encoding="utf-8", errors="replace")
        time.sleep(0.25)


def wait_status(page, text: str, timeout_ms: int = 180_000) -> str:
    """Wait for `text` in the status; a warning or an early end of the run fails at once, with the status. The
    status checked is the one the wait saw (a Run goes on: read again, it may show a later step)."""
    status = waits.wait_status(page, text, "⚠️", "has finished", timeout_ms=timeout_ms)
    assert "⚠️" not in status and text in status, status
    return status


def alpha_shown(page) -> None:
    """The shown step's exact theory is on the page (the app computes it lazily, for the step it shows): the
    tree's hover texts (plotly's data for the markers) and the node panel's title carry exact α numbers."""
    hovers = page.evaluate("() => document.querySelector('#tree-plot .js-plotly-plot').data"
                           ".flatMap(t => t.hovertext || []).filter(h => h.includes('acceptance here'))")
    tree_title = page.locator("#tree-plot .gtitle").first.text_content()
    if "· 0 drafted nodes" in tree_title:  # a root-only step (lookup without a match): no test to show
        assert hovers == [], hovers
        return
    assert hovers and all(ALPHA_HOVER.search(h) for h in hovers), (tree_title, hovers)
    title = page.locator("#node-plot .gtitle").first.text_content()
    assert ALPHA_TITLE.search(title), title


def step_three_times_run_and_replay(page) -> None:
    for n in (1, 2, 3):
        page.click("#step-btn")
        wait_status(page, f"Step {n} of {n}")
    page.wait_for_selector("#tree-plot .scatterlayer .point", timeout=30_000)
    assert page.locator("#tree-plot .scatterlayer .point").count() >= 2  # at least the root and one token
    alpha_shown(page)
    page.get_by_text("sampling", exact=True).click()  # open the accordion, then a short run
    assert waits.set_number(page, "#max-new-tokens-slider input[type=number]", "6") == "6"
    page.click("#run-btn")
    status = wait_status(page, "finished (", timeout_ms=300_000)
    assert "Traceback" not in page.content(), status
    alpha_shown(page)  # the Run's last step: the one step of the Run whose theory was computed
    slider = page.locator("#step-slider input[type=number]")
    slider.fill("1")
    slider.press("Enter")
    wait_status(page, "Step 1 of ", timeout_ms=30_000)
    page.wait_for_selector("#tree-plot .scatterlayer .point", timeout=30_000)
    alpha_shown(page)  # a step the Run passed: computed when the slider showed it


def pick(page, label: str, swaps_prompt: bool = False) -> None:
    """Choose a pair; where the app swaps the example prompt (toy), wait to see it swapped, as a person would:
    a Step sent before that round trip lands carries the old prompt."""
    prompt = page.get_by_role("textbox", name="prompt", exact=True)
    before = prompt.input_value()
    page.get_by_label(label).check()
    if swaps_prompt:
        sync_api.expect(prompt).not_to_have_value(before, timeout=30_000)


@pytest.mark.slow
def test_the_default_embedded_pair_with_no_control_touched(page):
    step_three_times_run_and_replay(page)


@pytest.mark.slow
def test_the_lookup_pair(page):
    pick(page, "lookup: SmolLM2-135M + prompt-lookup draft")
    step_three_times_run_and_replay(page)


@pytest.mark.slow
def test_the_draft_head_pair(page):
    pick(page, "embedded-head: SmolLM2-135M + a trained draft head (fastest model draft)")
    step_three_times_run_and_replay(page)


def test_the_toy_pair(page):
    pick(page, "toy: a 12-word language (instant)", swaps_prompt=True)
    step_three_times_run_and_replay(page)


@pytest.fixture(scope="module")
def open_ended_folders(tmp_path_factory):
    """Two tiny llama folders over one vocabulary and no EOS: Step 3 and Run stop only at max-new-tokens."""
    root = tmp_path_factory.mktemp("open-ended-pair")
    words = ["a", "b", "c", "d", "e", "f"]
    return (save_tiny_llama(root / "target", words, seed=0, eos=False),
            save_tiny_llama(root / "draft", words, seed=1, eos=False))


@pytest.mark.slow
def test_a_custom_pair_of_two_local_folders(page, open_ended_folders):
    target, draft = open_ended_folders
    pick(page, "custom: two hub ids or local folders")
    page.get_by_label("target model").fill(str(target))
    page.get_by_label("draft model").fill(str(draft))
    page.get_by_role("textbox", name="prompt", exact=True).fill("a b c d")
    step_three_times_run_and_replay(page)


# The node panel's title once it carries the exact α (Stop computed the shown step's theory), and the status then
STOPPED = """() => { const title = document.querySelector('#node-plot .gtitle')?.textContent;
  return /(exact α = |α ≈ )\\d/.test(title) ? [title, document.querySelector('#status').innerText] : null; }"""


@pytest.mark.slow
def test_stop_leaves_the_shown_step_with_its_theory(page):
    """A Run computes no theory for the steps it passes; Stop computes it for the step it leaves on the page
    (Stop's cancel and that event race: the app waits for the cancelled Run to hand its live run back). The Run is
    made long (512 tokens) so that Stop lands in it on any machine: with the page's 48 a fast CPU finished all 13
    steps between 'Step 3' and the click, and the test read a finished run."""
    page.get_by_text("sampling", exact=True).click()
    budget = waits.set_number(page, "#max-new-tokens-slider input[type=number]", "512")
    assert budget == "512"  # the budget took: a finished 48-token run is not what Stop is tested on
    page.click("#run-btn")
    wait_status(page, "Step 3 of ", timeout_ms=180_000)
    page.click("#stop-btn")
    title, status = waits.wait_value(page, STOPPED, timeout_ms=30_000)
    assert "running" in status and "⚠️" not in status, (title, status)
    alpha_shown(page)
