"""The tab bar in the real page: after selecting any tab, every tab's label is in the bar exactly once and
visible (none pushed into Gradio's "More tabs" overflow menu).

Seen before the fix: after selecting a lower tab ("Speed", "Trace: export / import"), the bar drew that tab's
name twice and the last tab ("How to read this") disappeared into the overflow menu."""

from __future__ import annotations

import pytest

from tests.browser.waits import wait_step
from tests.served import opened
from ui.links import TAB_LABELS

pytestmark = pytest.mark.browser

# What the user sees in the tab bar: the text of every visible button in it (the tabs, the measuring copies
# Gradio keeps visually hidden, the "More tabs" menu and its items) and whether that menu is shown.
SHOWN = """() => {
  const seen = (el) => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
    return r.width > 1 && r.height > 1 && s.visibility !== 'hidden' && s.display !== 'none'
      && s.opacity !== '0' && getComputedStyle(el.parentElement).opacity !== '0'; };
  const wrapper = document.querySelector('.tab-wrapper');
  const buttons = [...wrapper.querySelectorAll('button')].filter(seen);
  return {bar: buttons.filter((b) => !b.matches('[aria-label="More tabs"]')).map((b) => b.innerText.trim()),
          more: buttons.some((b) => b.matches('[aria-label="More tabs"]'))};
}"""


@pytest.fixture(scope="module")
def page(browser, app_url):
    with opened(browser, app_url) as page:
        yield page


def shown(page) -> dict:
    return page.evaluate(SHOWN)


def select(page, label: str) -> None:
    """Click the tab `label` wherever Gradio put it (the bar, else the overflow menu)."""
    in_bar = page.locator("[role=tablist] button[role=tab]", has_text=label)
    if in_bar.count() and in_bar.first.is_visible():
        in_bar.first.click()
    else:
        page.locator(".overflow-menu button[aria-label='More tabs']").first.click()
        page.locator(".overflow-dropdown button", has_text=label).first.click()
    page.wait_for_function("(label) => [...document.querySelectorAll('[role=tablist] button[role=tab]')]"
                           ".some((b) => b.innerText.trim() === label && b.getAttribute('aria-selected') === 'true')",
                           arg=label, timeout=10_000)
    page.wait_for_timeout(300)  # the bar re-measures its tabs after a selection (a frame or two)


def test_every_tab_is_in_the_bar_once_after_each_selection(page):
    labels = list(TAB_LABELS)
    assert sorted(shown(page)["bar"]) == sorted(labels)  # the page as loaded
    for label in [*labels[1:], labels[0]]:
        select(page, label)
        now = shown(page)
        assert sorted(now["bar"]) == sorted(labels), f"after selecting {label!r}: {now}"  # each once, all there
        assert not now["more"], f"after selecting {label!r}: some tab went into the overflow menu: {now}"


STATS_STEPS = "() => document.querySelector('#stats-plot .js-plotly-plot')?.data?.[0]?.x?.length ?? 0"


def test_the_run_statistics_tab_draws_when_opened_and_follows_the_steps(page):
    """Its `shown` gr.State now lives inside its tab (the cause of the doubled label): opening the tab still
    draws the charts, and while it is open each Step redraws them."""
    select(page, "Compare verifiers")
    page.click("#step-btn")
    wait_step(page, 1)
    select(page, "Run statistics")
    page.wait_for_function(f"() => ({STATS_STEPS})() === 1", timeout=30_000)
    page.click("#step-btn")
    wait_step(page, 2)
    page.wait_for_function(f"() => ({STATS_STEPS})() === 2", timeout=30_000)
