"""The compare view in headless Chromium (toy pair): open the tab, tick compare, pick four verifiers,
Step; the small multiples, the per-node table and the length laws are drawn. Screenshots go to
tests/output/compare-*.png."""

from __future__ import annotations

import pytest

from tests.browser.waits import wait_status, wait_step, wait_text
from tests.served import OUTPUT, open_tab, opened

pytestmark = pytest.mark.browser
FOUR = ["spectr", "pointmass", "hu_greedy", "rrs"]  # with the run verifier rrs_wor: five columns


@pytest.fixture(scope="module")
def page(browser, app_url):
    with opened(browser, app_url) as page:
        yield page


def pick(page, keys: list[str]) -> None:
    """Clear the multiselect, then type each key and press Enter (what a user does)."""
    box = page.locator("#compare-verifiers")
    while box.locator(".token-remove").count():
        box.locator(".token-remove").first.click()
    field = box.locator("input")
    for key in keys:
        field.click()
        field.fill(key)
        page.locator(f"li[role=option][aria-label={key!r}]").click()  # the list is not inside the box
    page.keyboard.press("Escape")


def test_four_verifiers_on_one_step_are_drawn(page):
    open_tab(page, "Compare verifiers")
    page.locator("#compare-on input[type=checkbox]").check()
    pick(page, FOUR)
    assert page.locator("#compare-verifiers .token").count() == 4
    page.click("#step-btn")
    wait_step(page, 1)
    page.wait_for_selector("#compare-multiples .scatterlayer .point", timeout=30_000)
    shown = page.locator("#compare-multiples .annotation-text").evaluate_all(  # each column's title: its key in bold
        "els => els.filter(e => e.textContent.includes('E[tokens]'))"
        ".map(e => e.querySelector(\"tspan[style*='bold']\").textContent)")
    assert shown == ["rrs_wor", *FOUR]
    assert "1 target forward" in page.inner_text("#compare-note")
    table = wait_text(page, "#compare-table", "hu_greedy", timeout_ms=30_000)
    assert all(key in table for key in ["rrs_wor", *FOUR]) and ("accepted draw" in table or "residual" in table)
    assert page.locator("#compare-laws .barlayer .point").count() > 0
    assert "Traceback" not in page.content()
    page.locator("#compare-tab").scroll_into_view_if_needed()
    page.screenshot(path=str(OUTPUT / "compare-step.png"), full_page=True)
    page.locator("#compare-multiples").screenshot(path=str(OUTPUT / "compare-multiples.png"))
    assert (OUTPUT / "compare-step.png").stat().st_size > 20_000


def test_a_disallowed_verifier_shows_a_warning(page):
    pick(page, ["spechub"])
    page.click("#step-btn")
    assert "spechub" in wait_status(page, "⚠️", timeout_ms=30_000)
